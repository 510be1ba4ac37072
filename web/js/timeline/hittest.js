// hittest.js -- what is where on the canvas, from a state, its layout and
// the cached tiles: the row under a y, the y of an event's lane, the slice
// or counter sample under a point.  Reads only; never fetches.

import { AXIS_H } from './layout.js';
import { LANE_H, GROUP_H, rowIndexAt, rowForBase } from './tracktree.js';
import { joinSeries } from './render.js';
import { timeAt } from './viewport.js';
import { repeatsBefore } from './tiles.js';

/** The row under canvas y: {row, top, pinned} or null. */
export function rowAt(L, y) {
  if (y < AXIS_H) return null;
  if (y < L.bodyTop) {
    for (const r of L.pinRows) if (y >= AXIS_H + r.y && y < AXIS_H + r.y + r.h) return { row: r, top: AXIS_H + r.y, pinned: true };
    return null;
  }
  const k = Math.floor((y - L.bodyTop) / GROUP_H);
  if (k < L.sticky.length) return { row: L.sticky[k], top: L.bodyTop + k * GROUP_H, pinned: false, sticky: true };
  const cy = y - L.bodyTop + L.scrollTop;
  const r = L.rows[rowIndexAt(L.rows, cy)];
  return r && cy >= r.y ? { row: r, top: L.bodyTop + r.y - L.scrollTop, pinned: false } : null;
}

/** Canvas y of the middle of (base, lane) in the scrolling area: {y, row, exact} or null. */
export function laneY(s, L, base, lane) {
  const hit = rowForBase(s.tree, L.rowOf, base);
  if (!hit) return null;
  const top = L.bodyTop + hit.row.y - L.scrollTop;
  const off = hit.exact ? hit.laneOffset + lane : 0;
  return { y: top + 2 + off * LANE_H + LANE_H / 2, row: hit.row, exact: hit.exact };
}

/** Canvas position {x, y} of an event at rel time ts, or null. */
export function locate(s, L, base, lane, ts) {
  const p = laneY(s, L, base, lane);
  return p ? { x: s.labelW + (ts - s.start) / L.nspp, y: p.y } : null;
}

/** The scrollTop that shows the row of base track `base` (the current one if it is in view). */
export function scrollFor(s, L, base) {
  const hit = rowForBase(s.tree, L.rowOf, base);
  if (!hit) return L.scrollTop;
  const r = hit.row, view = s.H - L.bodyTop, st = L.scrollTop;
  return r.y < st || r.y + r.h > st + view ? Math.max(0, r.y - view / 3) : st;
}

function lastAtOrBefore(ts, t) {
  let lo = 0, hi = ts.length - 1, r = -1;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (ts[m] <= t) { r = m; lo = m + 1; } else hi = m - 1;
  }
  return r;
}

/** The counter samples of track t at rel time `time`: [{idx, name, ts, min, max, last, count}]. */
export function counterAt(t, entries, time, nspp) {
  const n = t.source === 'neuron_hbm_usage' ? (t.series?.length || 23) : (t.series?.length || 1);
  const series = [];
  for (let i = 0; i < n; i++) {
    const pts = joinSeries(entries, i, time - nspp * 2, time);
    const j = lastAtOrBefore(pts.ts, time);
    if (j >= 0) series.push({ idx: i, name: t.series?.[i] ?? `series ${i}`, ts: pts.ts[j], min: pts.min[j], max: pts.max[j], last: pts.last[j], count: pts.count[j] });
  }
  return series;
}

/**
 * The whole merged box a merged row belongs to, as render.js draws it: the
 * rows of the lane (from every tile) in time order, joined while they are
 * merged rows of the hit's colour closer than half a pixel.  Returns {ts,
 * dur, count, busy}: busy is the sum of the rows' LOD busy column (ns their
 * events cover), the data the box was drawn from.
 */
function mergedRun(entries, lane, hit, nspp) {
  const rows = [];
  for (let j = 0; j < entries.length; j++) {
    const Ld = entries[j].lanes[lane], from = repeatsBefore(entries, j);
    if (!Ld) continue;
    for (let i = 0; i < Ld.ts.length; i++) {
      if (Ld.ts[i] >= from) rows.push([Ld.ts[i], Ld.ts[i] + Math.max(Ld.dur[i], nspp), Ld.count[i], Ld.busy[i], Ld.count[i] > 1 && Ld.col[i] === hit.col]);
    }
  }
  rows.sort((a, b) => a[0] - b[0]);
  let run = null;
  for (const [s, e, n, b, same] of rows) {
    if (run && same && s <= run.end + nspp / 2) {
      if (e > run.end) run.end = e;
      run.count += n;
      run.busy += b;
      continue;
    }
    if (run && run.start <= hit.ts && hit.ts < run.end) break;
    run = same ? { start: s, end: e, count: n, busy: b } : null;
  }
  return run && run.start <= hit.ts && hit.ts <= run.end ? { ts: run.start, dur: run.end - run.start, count: run.count, busy: run.busy } : {};
}

/** The slice or counter sample under canvas (x, y), or null.  absOf(rel) gives the absolute ns string. */
export function hitTest(s, L, tiles, x, y, absOf) {
  if (x < s.labelW || x > s.labelW + L.tw) return null;
  const at = rowAt(L, y);
  if (!at || !at.row.node.track) return null;
  const t = at.row.node.track, nspp = L.nspp;
  const time = timeAt(s, x);
  const { r, k0, k1 } = L.res;
  if (t.kind === 'counter') {
    const b = t.base?.[0];
    if (!b) return null;
    const series = counterAt(t, tiles.cover('counters', String(b.id), r, k0, k1), time, nspp);
    return series.length ? { kind: 'counter', track: t, time, series, y: at.top, h: at.row.h } : null;
  }
  let laneIdx = Math.floor((y - at.top - 2) / LANE_H);
  for (const b of t.base || []) {
    const n = b.lanes || 1;
    if (laneIdx >= n) { laneIdx -= n; continue; }
    const entries = tiles.cover('slices', String(b.id), r, k0, k1);
    const tol = nspp * 2;
    let best = null, bestD = Infinity;
    for (const e of entries) {
      const Ld = e.lanes[laneIdx];
      if (!Ld) continue;
      for (let i = 0; i < Ld.ts.length; i++) {
        const st = Ld.ts[i];
        if (st > time + tol) break;
        const en = st + Math.max(Ld.dur[i], nspp);
        if (en < time - tol) continue;
        const d = time < st ? st - time : time > en ? time - en : 0;
        if (d < bestD || (d === bestD && best && Ld.dur[i] < best.dur)) {
          bestD = d;
          best = { kind: 'slice', base: String(b.id), lane: laneIdx, ts: st, dur: Ld.dur[i], name: tiles.names.get(Ld.name[i]) ?? '', grp: Ld.grp[i] ? tiles.names.get(Ld.grp[i]) : '', count: Ld.count[i], busy: Ld.busy[i], col: Ld.col[i], prec: Ld.count[i] > 1 ? nspp : 1, track: t, source: b.source || t.source, baseInfo: b };
        }
      }
    }
    if (best?.count > 1) Object.assign(best, mergedRun(entries, laneIdx, best, nspp));
    if (best) best.key = `${best.base}:${best.lane}:${absOf(best.ts)}`;
    return best;
  }
  return null;
}
