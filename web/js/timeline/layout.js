// layout.js -- the layout step: from a store state to what a frame shows
// and needs (pinned rows, the scrolling rows in view, the tile resolution,
// the tiles to fetch).  Pure: the same state gives the same layout; results
// are memoized on the state objects they depend on, so a frame that only
// pans reuses the row layout of the last one.

import { TILE_PX } from './tiles.js';
import { layoutRows, rowIndexAt, GROUP_H } from './tracktree.js';
import { timeWidth, nsPerPx, resolutionFor } from './viewport.js';

export const AXIS_H = 40;
const SUMMARY_TRACKS = 200; // event tracks a collapsed group draws, at most

const descMemo = new WeakMap(); // group node -> its descendant event tracks

/** The event (slices) tracks under group node n, in tree order. */
export function descendants(n) {
  let out = descMemo.get(n);
  if (!out) {
    out = [];
    const walk = (x) => { for (const c of x.children) { if (c.track?.kind === 'slices') out.push(c.track); walk(c); } };
    walk(n);
    descMemo.set(n, out);
  }
  return out;
}

let rowsMemo = { tree: null, collapsed: null, showHidden: null, filter: null, out: null, gen: 0 };
let pinMemo = { rows: null, pins: null, H: 0, out: null };
let last = { s: null, out: null };

/** Whether track t matches the filter box of state s (false when it is empty). */
export function trackMatches(s, t) { return !!s.filter.re && s.filter.re.test(t.name); }

/** Whether track t is shown in state s. */
export function trackVisible(s, t) {
  return (!t.hidden_by_default || s.showHidden) && (!s.filter.re || !s.filter.only || trackMatches(s, t));
}

function treeRows(s) {
  const m = rowsMemo;
  if (m.tree !== s.tree || m.collapsed !== s.collapsed || m.showHidden !== s.showHidden || m.filter !== s.filter) {
    const out = layoutRows(s.tree, s.collapsed, (t) => trackVisible(s, t));
    rowsMemo = { tree: s.tree, collapsed: s.collapsed, showHidden: s.showHidden, filter: s.filter, out: { ...out, gen: m.gen + 1 }, gen: m.gen + 1 };
  }
  return rowsMemo.out;
}

/** Pinned tracks first, listed even when their group is collapsed. */
function pinRows(s, tr) {
  const m = pinMemo;
  if (m.rows === tr && m.pins === s.pins && m.H === s.H) return m.out;
  const rows = [];
  let y = 0;
  for (const r of tr.rows) {
    if (r.node.track && s.pins.has(r.node.track.name)) {
      rows.push({ ...r, y, depth: 0 });
      y += r.h;
    }
  }
  for (const name of s.pins) {
    const n = s.tree.byPath.get(name);
    if (n?.track && trackVisible(s, n.track) && !rows.some((r) => r.node === n)) {
      const h = tr.rowOf.get(n)?.h ?? 38;
      rows.push({ node: n, y, h, depth: 0, count: 1, group: false });
      y += h;
    }
  }
  const out = { rows, h: Math.min(y, Math.round(s.H * 0.4)) };
  pinMemo = { rows: tr, pins: s.pins, H: s.H, out };
  return out;
}

/**
 * The group headers kept at the top of the scrolling area: the expanded
 * groups of the row at the top that have scrolled away, outermost first
 * (computed twice: the headers cover rows, the row under them counts).
 */
function stickyRows(rows, rowOf, st) {
  let out = [];
  for (let pass = 0; pass < 2; pass++) {
    const r = rows[rowIndexAt(rows, st + out.length * GROUP_H)];
    if (!r) break;
    const anc = [];
    for (let n = r.node.parent; n && n.depth >= 0; n = n.parent) { const a = rowOf.get(n); if (a) anc.unshift(a); }
    let k = 0;
    while (k < anc.length && anc[k].y < st + k * GROUP_H) k++;
    out = anc.slice(0, k);
  }
  return out;
}

/**
 * The layout of state s: { rows, rowOf, height (all rows), pinRows, pinH,
 * bodyTop, scrollTop (clamped), maxScroll, bodyRows, sticky (group rows
 * drawn GROUP_H apart at the top of the body), summary (Map: collapsed
 * group node in view -> the event tracks it summarizes), tw, nspp, res {r, k0,
 * k1}, fetch {start, end, r, want, sig, min, max} }.
 */
export function layout(s) {
  if (last.s === s) return last.out;
  const tr = treeRows(s);
  const pins = pinRows(s, tr);
  const bodyTop = AXIS_H + pins.h;
  const viewH = s.H - bodyTop;
  const maxScroll = Math.max(0, tr.height - viewH);
  const st = Math.min(s.scrollTop, maxScroll);
  const body = [];
  const i0 = rowIndexAt(tr.rows, st);
  for (let i = i0; i < tr.rows.length; i++) {
    const row = tr.rows[i];
    if (row.y >= st + viewH) break;
    body.push(row);
  }
  const tw = timeWidth(s), nspp = nsPerPx(s);
  const r = resolutionFor(s.end - s.start, tw);
  const span = r * TILE_PX;
  const want = [];
  const wantTrack = (t) => {
    for (const b of t.base || []) want.push({ kind: t.kind === 'counter' ? 'counters' : 'slices', id: String(b.id), source: b.source || t.source });
  };
  for (const row of pins.rows) if (row.node.track) wantTrack(row.node.track);
  const summary = new Map();
  for (const row of body) {
    if (row.node.track) wantTrack(row.node.track);
    else if (row.group && s.collapsed.get(row.node.path) === true) {
      const list = descendants(row.node).filter((t) => trackVisible(s, t)).slice(0, SUMMARY_TRACKS);
      summary.set(row.node, list);
      list.forEach(wantTrack);
    }
  }
  const out = {
    rows: tr.rows, rowOf: tr.rowOf, height: tr.height,
    pinRows: pins.rows, pinH: pins.h, bodyTop, scrollTop: st, maxScroll, bodyRows: body,
    sticky: st > 0 ? stickyRows(tr.rows, tr.rowOf, st) : [],
    summary,
    tw, nspp,
    res: { r, k0: Math.floor(s.start / span), k1: Math.floor((s.end - 1) / span) },
    fetch: { start: s.start, end: s.end, r, want, sig: `${tr.gen}|${pins.rows.length}|${i0}|${body.length}`, min: s.min, max: s.max },
  };
  last = { s, out };
  return out;
}
