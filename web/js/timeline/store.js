// store.js -- the timeline's state and the only way to change it: a plain
// object replaced (never mutated) by reduce(state, action).  Everything
// else is computed from it: layout.js (rows in view, tiles to fetch),
// paint.js (pixels), hittest.js (what is under the pointer).
//
// State fields: the window (start, end) inside the extent (min, max), all
// rel ns; the canvas size (W, H, dpr) and label column width (labelW);
// scrollTop of the track list; tree (TrackTree), collapsed (Map path ->
// bool), pins (Set of track names), showHidden (tracks hidden by default
// shown), filter ({text, only, re}: the track filter box), sharedScales
// (counters of one kind on one scale); sel, flows, links (arrows between
// visible events: [{from, to}], each end {base, lane, ts, dur, key}), marks
// and markCur (search hits in the window and the current one), density
// (search hits per track and bucket when there are too many to mark:
// {start, w (rel ns), tracks: Map base id -> counts, total, max}),
// hitCounts (Map base id -> search hits), hover ({hit, x, y}), hoverRow
// (node), area ({start, end, y0, y1} while dragging, plus nodes and bases
// once done), drag (the pointer gesture in progress), keys (held
// navigation keys), mouse ({x, y} on the canvas), cursor (CSS), open (the
// event last asked to be opened), timeOrigin (rel ns shown as time 0 on
// the axis and in tooltips: the profile start unless the user moves it),
// annots (flags, notes and named areas drawn: [{id, kind, ts, end, text,
// color, base, lane}], rel ns), axisClick ({t, tol}: the last single click
// on the time axis), dataGen and themeGen (bumped when tiles
// arrive or colours change: a repaint, nothing else).
//
// Actions ({type, ...}): window {start, end}, zoom {factor, at}, pan {dns},
// fit, reveal {rel, dur}, focus {rel, dur}, keyStep {dt}, extent {min, max}, size {W, H,
// dpr}, labelW {w}, scroll {top}, tracks {tracks}, collapse {path, value},
// collapseAll {value}, pin {name}, showHidden {value}, filter {text, only},
// sharedScales {value}, select {sel}, flows
// {list}, links {list}, marks {list, cur}, density {density}, hitCounts
// {counts}, hover {hit, x, y}, hoverRow {node}, area
// {area}, drag {drag}, keys {keys}, mouse {pos}, cursor {cursor}, open
// {hit}, origin {t}, annots {list}, axisClick {t, tol}, data, theme.

import { clampWindow, zoomWindow, revealWindow, focusWindow, timeAt } from './viewport.js';
import { TrackTree } from './tracktree.js';

const NO_FILTER = { text: '', only: true, re: null };

/**
 * The track filter of text `text`: "/re/" is a regular expression, anything
 * else a case-insensitive substring of the track name.  `only`: hide the
 * tracks that do not match (else they are shown, the matches marked).
 */
function makeFilter(text, only) {
  const t = (text || '').trim();
  if (!t) return { ...NO_FILTER, only };
  const m = /^\/(.+)\/([a-z]*)$/.exec(t);
  let re = null;
  if (m) { try { re = new RegExp(m[1], m[2].includes('i') ? 'i' : ''); } catch { re = null; } }
  re ||= new RegExp(t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
  return { text: t, only, re };
}

/** The state of an empty timeline over the extent [min, max] (rel ns). */
export function initialState(min, max, labelW) {
  const ext = { min, max: Math.max(max, min + 20) };
  return {
    ...ext, start: ext.min, end: ext.max,
    W: 200, H: 120, dpr: 1, labelW, scrollTop: 0,
    tree: new TrackTree([]), collapsed: new Map(), pins: new Set(), showHidden: false, filter: NO_FILTER, sharedScales: true,
    sel: null, flows: [], links: [], marks: [], markCur: null, density: null, hitCounts: null, hover: null, hoverRow: null,
    area: null, drag: null, keys: [], mouse: null, cursor: 'default', open: null,
    timeOrigin: 0, annots: [], axisClick: null, dataGen: 0, themeGen: 0,
  };
}

const ZOOM_KEYS = { w: -1, ArrowUp: -1, s: 1, ArrowDown: 1 };
const PAN_KEYS = { d: 1, ArrowRight: 1, a: -1, ArrowLeft: -1 };

/** Keys the timeline navigates with. */
export const NAV_KEYS = [...Object.keys(ZOOM_KEYS), ...Object.keys(PAN_KEYS)];

/** s with the window [start, end) clamped to the extent (s itself if unchanged). */
function withWindow(s, start, end) {
  const w = clampWindow(s, start, end);
  return w.start === s.start && w.end === s.end ? s : { ...s, ...w };
}

/** The held keys moving the window for dt seconds. */
function keyStep(s, dt) {
  let zoom = 0, pan = 0;
  for (const k of new Set(s.keys)) { zoom += ZOOM_KEYS[k] || 0; pan += PAN_KEYS[k] || 0; }
  zoom = Math.sign(zoom); pan = Math.sign(pan);
  let out = s;
  if (zoom) {
    const at = s.mouse && s.mouse.x > s.labelW ? timeAt(s, s.mouse.x) : undefined;
    const w = zoomWindow(out, Math.exp(zoom * 2.8 * dt), at);
    out = withWindow(out, w.start, w.end);
  }
  if (pan) {
    const d = pan * (out.end - out.start) * 1.2 * dt;
    out = withWindow(out, out.start + d, out.end + d);
  }
  return out;
}

/** s with field k set to v (s itself if it already is v). */
function set(s, k, v) { return s[k] === v ? s : { ...s, [k]: v }; }

/** The next state: s after action a.  Pure; returns s when nothing changes. */
export function reduce(s, a) {
  switch (a.type) {
    case 'window': return withWindow(s, a.start, a.end);
    case 'fit': return withWindow(s, s.min, s.max);
    case 'zoom': { const w = zoomWindow(s, a.factor, a.at); return withWindow(s, w.start, w.end); }
    case 'pan': return withWindow(s, s.start + a.dns, s.end + a.dns);
    case 'reveal': { const w = revealWindow(s, s, a.rel, a.dur); return withWindow(s, w.start, w.end); }
    case 'focus': { const w = focusWindow(s, s, a.rel, a.dur); return withWindow(s, w.start, w.end); }
    case 'keyStep': return keyStep(s, a.dt);
    case 'extent': return { ...s, min: a.min, max: Math.max(a.max, a.min + 20), dataGen: s.dataGen + 1 };
    case 'size': return s.W === a.W && s.H === a.H && s.dpr === a.dpr ? s : { ...s, W: a.W, H: a.H, dpr: a.dpr };
    case 'labelW': return set(s, 'labelW', a.w);
    case 'scroll': return set(s, 'scrollTop', Math.max(0, Math.round(a.top)));
    case 'tracks': return { ...s, tree: new TrackTree(a.tracks), hoverRow: null };
    case 'collapse': {
      const c = new Map(s.collapsed);
      c.set(a.path, a.value ?? c.get(a.path) !== true);
      return { ...s, collapsed: c };
    }
    case 'collapseAll': return { ...s, collapsed: new Map(s.tree.groupPaths().map((p) => [p, a.value])) };
    case 'pin': {
      const p = new Set(s.pins);
      if (p.has(a.name)) p.delete(a.name); else p.add(a.name);
      return { ...s, pins: p };
    }
    case 'showHidden': return set(s, 'showHidden', !!a.value);
    case 'sharedScales': return set(s, 'sharedScales', !!a.value);
    case 'filter': {
      const only = a.only ?? s.filter.only, text = a.text ?? s.filter.text;
      return text === s.filter.text && only === s.filter.only ? s : { ...s, filter: makeFilter(text, only) };
    }
    case 'select': return { ...s, sel: a.sel, flows: [] };
    case 'flows': return { ...s, flows: a.list };
    case 'links': return { ...s, links: a.list };
    case 'marks': return { ...s, marks: a.list, markCur: a.cur ?? null };
    case 'density': return set(s, 'density', a.density);
    case 'hitCounts': return set(s, 'hitCounts', a.counts);
    case 'hover': return !a.hit && !s.hover ? s : { ...s, hover: a.hit ? { hit: a.hit, x: a.x, y: a.y } : null };
    case 'hoverRow': return set(s, 'hoverRow', a.node);
    case 'area': return set(s, 'area', a.area);
    case 'drag': return set(s, 'drag', a.drag);
    case 'keys': return { ...s, keys: a.keys };
    case 'mouse': return set(s, 'mouse', a.pos);
    case 'cursor': return set(s, 'cursor', a.cursor);
    case 'open': return { ...s, open: a.hit };
    case 'origin': return set(s, 'timeOrigin', Math.round(a.t));
    case 'annots': return { ...s, annots: a.list };
    case 'axisClick': return { ...s, axisClick: { t: a.t, tol: a.tol } };
    case 'data': return { ...s, dataGen: s.dataGen + 1 };
    case 'theme': return { ...s, themeGen: s.themeGen + 1 };
    default: throw new Error(`unknown timeline action ${a.type}`);
  }
}

/** Holds the state; dispatch() replaces it and tells the subscribers (next, prev, action). */
export class Store {
  constructor(state) {
    this.state = state;
    this.subs = [];
  }

  dispatch(a) {
    const prev = this.state;
    const next = reduce(prev, a);
    if (next === prev) return;
    this.state = next;
    for (const f of this.subs) f(next, prev, a);
  }

  subscribe(f) { this.subs.push(f); }
}
