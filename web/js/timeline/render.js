// render.js -- Canvas2D drawing of one frame's content: slice lanes (batched
// by colour, sub-pixel gaps merged, labels only where they fit; merged LOD
// rows as a faint box with a bar as high as their busy fraction, so idle
// time shows), counters (step area with a min/max band), stacked HBM areas,
// the time axis.

import { colorFill, colorIdle, colorText, seriesColor } from './colors.js';
import { fmtTime } from '../format.js';
import { LANE_H } from './tracktree.js';
import { repeatsBefore } from './tiles.js';

const SLICE_H = LANE_H - 3;
const CHAR_W = 6.4; // average width of an 11px label character

/**
 * The height in px (0..SLICE_H) of the busy bar of a row busy `busy` ns
 * over [x0, x1) px at nsPerPx: its busy fraction of at least one pixel.
 */
function busyHeight(busy, x0, x1, nsPerPx) {
  if (!(busy > 0)) return 0;
  const f = busy / (Math.max(x1 - x0, 1) * nsPerPx);
  return Math.max(1, Math.round(Math.min(f, 1) * SLICE_H));
}

/** Collects rectangles per colour during a frame, then fills them in one pass per colour. */
export class SliceBatch {
  constructor() {
    this.plain = new Map(); // colour -> [x, y, w, ...]
    this.merged = new Map();
    this.bars = new Map(); // colour -> [x, y, w, h, ...]: busy bars of merged rows
    this.labels = [];
    this.n = 0;
  }

  reset() {
    for (const a of this.plain.values()) a.length = 0;
    for (const a of this.merged.values()) a.length = 0;
    for (const a of this.bars.values()) a.length = 0;
    this.labels.length = 0;
    this.n = 0;
  }

  push(map, c, x, y, w) {
    let a = map.get(c);
    if (!a) { a = []; map.set(c, a); }
    a.push(x, y, w);
    this.n++;
  }

  /**
   * Adds the slices of lane l of the tile entries `entries` (successive
   * tiles, see tiles.js) that overlap [t0, t1): x = (t - t0) / nsPerPx,
   * lane top y.  Touching rectangles of one colour closer than half a pixel
   * merge, across tile edges too (a merged run is one box whose label
   * counts every event of it); every slice is at least 1 px wide.  Each
   * merged row also gets a bar as high as its busy fraction (adjacent bars
   * of one colour and height join).
   */
  lane(entries, l, t0, nsPerPx, width, y, names) {
    const t1 = t0 + width * nsPerPx;
    let rc = -1, rm = false, rx0 = 0, rx1 = 0, rL = null, ri = -1, rn = 0, rows = 0;
    let bc = -1, bh = 0, bx0 = 0, bx1 = 0;
    for (let j = 0; j < entries.length; j++) {
      const L = entries[j].lanes[l];
      if (!L) continue;
      const ts = L.ts, dur = L.dur, col = L.col, count = L.count, busy = L.busy, n = ts.length;
      const from = repeatsBefore(entries, j);
      for (let i = 0; i < n; i++) {
        const s = ts[i];
        if (s >= t1) break;
        const e = s + dur[i];
        if (e < t0 || s < from) continue;
        let x0 = (s - t0) / nsPerPx, x1 = (e - t0) / nsPerPx;
        const h = count[i] > 1 ? busyHeight(busy[i], x0, x1, nsPerPx) : 0;
        if (x0 < -2) x0 = -2;
        if (x1 > width + 2) x1 = width + 2;
        if (x1 - x0 < 1) x1 = x0 + 1;
        const c = col[i], m = count[i] > 1;
        if (h) {
          if (c === bc && h === bh && x0 <= bx1 + 0.5) {
            if (x1 > bx1) bx1 = x1;
          } else {
            if (bh) this.bar(bc, bx0, bx1, y, bh);
            bc = c; bh = h; bx0 = x0; bx1 = x1;
          }
        }
        if (c === rc && m === rm && x0 <= rx1 + 0.5 && x1 >= rx0) {
          if (x1 > rx1) rx1 = x1;
          rn += count[i];
          rows++;
          continue;
        }
        if (rc >= 0) this.flush(rc, rm, rx0, rx1, y, rows === 1 || rm ? ri : -1, rL, rn, names);
        rc = c; rm = m; rx0 = x0; rx1 = x1; rL = L; ri = i; rn = count[i]; rows = 1;
      }
    }
    if (rc >= 0) this.flush(rc, rm, rx0, rx1, y, rows === 1 || rm ? ri : -1, rL, rn, names);
    if (bh) this.bar(bc, bx0, bx1, y, bh);
  }

  flush(c, m, x0, x1, y, i, L, count, names) {
    this.push(m ? this.merged : this.plain, c, x0, y, x1 - x0);
    if (i >= 0 && x1 - x0 >= 3 * CHAR_W + 6) {
      const name = names.get(L.name[i]) ?? '';
      this.labels.push(x0, x1, y, m ? -1 : c, m ? `${name} ×${count}` : name);
    }
  }

  /** A busy bar h px high, bottom-aligned in the lane at y. */
  bar(c, x0, x1, y, h) {
    let a = this.bars.get(c);
    if (!a) { a = []; this.bars.set(c, a); }
    a.push(x0, y + SLICE_H - h, x1 - x0, h);
    this.n++;
  }

  /**
   * Fills everything collected; `fg` is the text colour of merged rows'
   * labels, `dark` whether the background is dark (their faint boxes).
   */
  fill(ctx, width, fg, dark) {
    for (const [c, a] of this.plain) {
      if (!a.length) continue;
      ctx.fillStyle = colorFill(c);
      for (let j = 0; j < a.length; j += 3) ctx.fillRect(a[j], a[j + 1], a[j + 2], SLICE_H);
    }
    for (const [c, a] of this.merged) {
      if (!a.length) continue;
      ctx.fillStyle = colorIdle(c, dark);
      for (let j = 0; j < a.length; j += 3) ctx.fillRect(a[j], a[j + 1], a[j + 2], SLICE_H);
    }
    for (const [c, a] of this.bars) {
      if (!a.length) continue;
      ctx.fillStyle = colorFill(c);
      for (let j = 0; j < a.length; j += 4) ctx.fillRect(a[j], a[j + 1], a[j + 2], a[j + 3]);
    }
    const lb = this.labels;
    if (!lb.length) return;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (let j = 0; j < lb.length; j += 5) {
      const x0 = Math.max(lb[j], 0), x1 = Math.min(lb[j + 1], width);
      const room = Math.floor((x1 - x0 - 6) / CHAR_W);
      if (room < 3) continue;
      let s = lb[j + 4];
      if (s.length > room) s = s.slice(0, room - 1) + '…';
      ctx.fillStyle = lb[j + 3] < 0 ? fg : colorText(lb[j + 3]);
      ctx.fillText(s, x0 + 3, lb[j + 2] + SLICE_H / 2 + 0.5);
    }
  }
}

/**
 * Joins the points of counter entries (sorted by tile) into one series of
 * the visible range.  Returns { ts, min, max, last, count } plain arrays.
 */
export function joinSeries(entries, sIdx, t0, t1) {
  const out = { ts: [], min: [], max: [], last: [], count: [] };
  let prev = -Infinity;
  const sorted = entries.length > 1 ? [...entries].sort((a, b) => a.k * a.r - b.k * b.r) : entries;
  for (const e of sorted) {
    const s = e.series.find((x) => x.series === sIdx) || e.series[sIdx];
    if (!s) continue;
    const n = s.ts.length;
    for (let i = 0; i < n; i++) {
      const t = s.ts[i];
      if (t <= prev) continue;
      if (t > t1) break;
      if (t < t0 && i + 1 < n && s.ts[i + 1] <= t0) continue;
      out.ts.push(t); out.min.push(s.min[i]); out.max.push(s.max[i]); out.last.push(s.last[i]); out.count.push(s.count[i]);
      prev = t;
    }
  }
  return out;
}

/** Draws a counter as a step area of `last` with a min/max band. */
export function drawCounter(ctx, pts, t0, nsPerPx, width, xEnd, top, h, vmax, color) {
  const n = pts.ts.length;
  if (!n || !(vmax > 0)) return;
  const yb = top + h - 2, sc = (h - 6) / vmax;
  const X = (t) => Math.max(-2, Math.min(width + 2, (t - t0) / nsPerPx));
  const end = Math.min(X(xEnd), width + 2);
  ctx.fillStyle = color.band;
  for (let i = 0; i < n; i++) {
    if (pts.count[i] <= 1 || pts.max[i] === pts.min[i]) continue;
    const x = X(pts.ts[i]), xn = i + 1 < n ? X(pts.ts[i + 1]) : end;
    ctx.fillRect(x, yb - pts.max[i] * sc, Math.max(xn - x, 1), (pts.max[i] - pts.min[i]) * sc);
  }
  ctx.beginPath();
  let x = X(pts.ts[0]);
  ctx.moveTo(x, yb);
  let y = yb - pts.last[0] * sc;
  ctx.lineTo(x, y);
  for (let i = 1; i < n; i++) {
    x = X(pts.ts[i]);
    ctx.lineTo(x, y);
    y = yb - pts.last[i] * sc;
    ctx.lineTo(x, y);
  }
  ctx.lineTo(end, y);
  ctx.lineTo(end, yb);
  ctx.closePath();
  ctx.fillStyle = color.fill;
  ctx.fill();
  ctx.strokeStyle = color.line;
  ctx.lineWidth = 1;
  ctx.stroke();
}

/** Draws stacked areas: cats = [{idx, pts}] sharing timestamps, bottom first. */
export function drawStacked(ctx, cats, t0, nsPerPx, width, xEnd, top, h, vmax) {
  if (!cats.length || !(vmax > 0)) return;
  const ts = cats[0].pts.ts, n = ts.length;
  const yb = top + h - 2, sc = (h - 6) / vmax;
  const X = (t) => Math.max(-2, Math.min(width + 2, (t - t0) / nsPerPx));
  const xs = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) xs[i] = X(ts[i]);
  xs[n] = Math.min(X(xEnd), width + 2);
  let below = new Float64Array(n);
  for (const c of cats) {
    const v = c.pts.last;
    const above = new Float64Array(n);
    for (let i = 0; i < n; i++) above[i] = below[i] + (v[i] || 0);
    ctx.beginPath();
    ctx.moveTo(xs[0], yb - below[0] * sc);
    for (let i = 0; i < n; i++) { ctx.lineTo(xs[i], yb - above[i] * sc); ctx.lineTo(xs[i + 1], yb - above[i] * sc); }
    for (let i = n - 1; i >= 0; i--) { ctx.lineTo(xs[i + 1], yb - below[i] * sc); ctx.lineTo(xs[i], yb - below[i] * sc); }
    ctx.closePath();
    ctx.fillStyle = seriesColor(c.idx, 0.85);
    ctx.fill();
    below = above;
  }
}

const STEPS = [1, 2, 5];
const AXIS_FONT = '11px system-ui, sans-serif';

/** Tick step (ns) for about `px` pixels between labelled ticks. */
export function tickStep(nsPerPx, px = 110) {
  const raw = nsPerPx * px;
  if (!(raw < Infinity)) return Infinity; // NaN or no end: one tick at most
  let p = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (;;) {
    for (const s of STEPS) if (s * p >= raw) return Math.max(s * p, 1);
    p *= 10;
  }
}

/**
 * The labelled ticks of the time axis over [t0, t0 + width * nsPerPx) (ns
 * from the origin): { step, ticks: [{t, x, label}] }, spaced so that
 * labels exact to the step never overlap.
 */
export function axisTicks(ctx, t0, nsPerPx, width) {
  const t1 = t0 + width * nsPerPx;
  const ref = Math.max(Math.abs(t0), Math.abs(t1));
  ctx.font = AXIS_FONT;
  let step = tickStep(nsPerPx);
  for (let i = 0; i < 3; i++) {
    const w = ctx.measureText(fmtTime(-ref, step, ref)).width + 18;
    if (w <= step / nsPerPx) break;
    step = tickStep(nsPerPx, w);
  }
  const ticks = [];
  for (let k = Math.ceil(t0 / step); k * step < t1; k++) {
    const t = k * step;
    ticks.push({ t, x: (t - t0) / nsPerPx, label: fmtTime(t, step, ref) });
  }
  return { step, ticks };
}

/** Draws the time axis in [0, width) x [0, h): minor ticks, the labelled ticks of axisTicks. */
export function drawAxis(ctx, t0, nsPerPx, width, h, theme, axis) {
  const minor = axis.step / 5;
  ctx.fillStyle = theme.axisBg;
  ctx.fillRect(0, 0, width, h);
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  const t1 = t0 + width * nsPerPx;
  for (let k = Math.ceil(t0 / minor); k * minor < t1; k++) {
    const x = Math.round((k * minor - t0) / nsPerPx) + 0.5;
    ctx.moveTo(x, k % 5 === 0 ? h - 14 : h - 5);
    ctx.lineTo(x, h);
  }
  ctx.stroke();
  ctx.fillStyle = theme.fg;
  ctx.font = AXIS_FONT;
  ctx.textBaseline = 'alphabetic';
  for (const { x, label } of axis.ticks) ctx.fillText(label, x + 3, h - 17);
  ctx.fillStyle = theme.border;
  ctx.fillRect(0, h - 1, width, 1);
}

/** Vertical grid lines at the labelled ticks of `axis` over [top, bottom). */
export function drawGrid(ctx, axis, top, bottom, color) {
  ctx.strokeStyle = color;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const { x } of axis.ticks) {
    ctx.moveTo(Math.round(x) + 0.5, top);
    ctx.lineTo(Math.round(x) + 0.5, bottom);
  }
  ctx.stroke();
}
