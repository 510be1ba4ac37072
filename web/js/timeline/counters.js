// counters.js -- painting of counter tracks: the data of the rows in view
// (a step area with a min/max band, HBM as stacked categories), their
// scales, a y-axis label per row and the value under the pointer.
//
// Scales only grow as larger values come into view (so panning does not
// make the curves jump).  With shared scales on, the tracks of one kind
// share one: HBM usage against the HBM capacity when the profile says it,
// transfer bandwidth across NeuronCores and directions, CPU utilization at
// 100 %; off, every track has its own.

import { joinSeries, drawCounter, drawStacked } from './render.js';
import { colorIndex, colorFill } from './colors.js';
import { fmtValue } from '../format.js';

const HBM = 'neuron_hbm_usage';

/** The scale a counter track shares with others of its kind. */
function kindOf(t) {
  if (t.source === HBM) return 'hbm';
  if (/bandwidth|throughput/.test(t.source)) return 'bandwidth';
  return `${t.source}|${t.unit || ''}`;
}

export class Counters {
  /** hbmCapacity: bytes of one HBM (the shared HBM scale), or 0 if unknown. */
  constructor(hbmCapacity) {
    this.hbmCapacity = hbmCapacity || 0;
    this.max = new Map(); // scale key -> largest value seen
    this.colors = new Map();
    this.rows = []; // this frame's counter rows: {t, top, h, scale, total | cats | pts}
    this.scaleOf = new Map(); // track id -> scale drawn this frame
  }

  reset() { this.max.clear(); }

  scaleKey(s, t) { return s.sharedScales ? kindOf(t) : t.id; }

  grow(key, v) {
    const m = Math.max(this.max.get(key) || 0, v);
    this.max.set(key, m);
    return m;
  }

  /** Reads the data of the counter rows in view ([{t, top, h}]) and settles their scales. */
  prepare(s, L, tiles, rows) {
    const { r, k0, k1 } = L.res;
    this.rows = [];
    this.scaleOf.clear();
    for (const row of rows) {
      const t = row.t, b = t.base?.[0];
      if (!b) continue;
      const entries = tiles.cover('counters', String(b.id), r, k0, k1);
      if (!entries.length) continue;
      const out = { ...row, pts: joinSeries(entries, 0, s.start, s.end), cats: [] };
      let vmax = 0;
      for (const v of out.pts.max) vmax = Math.max(vmax, v);
      if (t.source === HBM) {
        const n = out.pts.ts.length;
        for (let i = 1; i < (t.series?.length || 23); i++) {
          const pts = joinSeries(entries, i, s.start, s.end);
          if (pts.ts.length === n && pts.last.some((v) => v > 0)) out.cats.push({ idx: i, pts });
        }
      }
      out.vmax = vmax;
      this.grow(this.scaleKey(s, t), vmax * (t.source === HBM ? 1.05 : 1.1));
      this.rows.push(out);
    }
    for (const row of this.rows) {
      const t = row.t;
      let m = this.max.get(this.scaleKey(s, t));
      if (t.unit === '%') m = Math.max(100, row.vmax);
      else if (t.source === HBM && s.sharedScales && this.hbmCapacity) m = this.hbmCapacity;
      row.scale = m;
      this.scaleOf.set(t.id, m);
    }
  }

  /** Draws the prepared rows and their y-axis labels; theme: the timeline colours. */
  draw(ctx, s, L, theme) {
    for (const row of this.rows) {
      const { t, top, h, scale } = row;
      if (row.cats.length) drawStacked(ctx, row.cats, s.start, L.nspp, L.tw, s.max, top, h, scale);
      else drawCounter(ctx, row.pts, s.start, L.nspp, L.tw, s.max, top, h, scale, this.color(t));
    }
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (const { t, top, scale } of this.rows) {
      if (!(scale > 0)) continue;
      const text = `${fmtValue(scale, t.unit)}${s.sharedScales && kindOf(t) !== `${t.source}|${t.unit || ''}` ? ' (shared)' : ''}`;
      const w = ctx.measureText(text).width;
      ctx.fillStyle = theme.axisBg;
      ctx.fillRect(2, top + 2, w + 6, 13);
      ctx.fillStyle = theme.dim;
      ctx.fillText(text, 5, top + 4);
      ctx.fillRect(0, top + 3, 2, 1);
    }
  }

  /** The value under the pointer on a counter row: a line, a dot and the value. */
  cursor(ctx, s, L, theme, top, h) {
    const hit = s.hover?.hit;
    if (hit?.kind !== 'counter' || !hit.series.length) return;
    const scale = this.scaleOf.get(hit.track.id);
    if (!(scale > 0)) return;
    const v = hit.series[0].last, x = (hit.time - s.start) / L.nspp;
    const y = top + h - 2 - (v * (h - 6)) / scale;
    ctx.fillStyle = theme.fg;
    ctx.fillRect(Math.round(x), top, 1, h);
    ctx.beginPath();
    ctx.arc(x, y, 3, 0, Math.PI * 2);
    ctx.fill();
    const text = fmtValue(v, hit.track.unit);
    ctx.font = '600 11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const w = ctx.measureText(text).width;
    const tx = x + 8 + w > L.tw ? x - 8 - w : x + 8;
    ctx.fillStyle = theme.axisBg;
    ctx.fillRect(tx - 3, y - 8, w + 6, 16);
    ctx.fillStyle = theme.fg;
    ctx.fillText(text, tx, y);
  }

  color(t) {
    let c = this.colors.get(t.source);
    if (c) return c;
    const base = colorFill(colorIndex('counter', t.source, ''));
    c = { line: base, fill: base.replace(')', ' / 0.35)'), band: base.replace(')', ' / 0.25)') };
    this.colors.set(t.source, c);
    return c;
  }
}
