// viewport.js -- the visible time window.  Times inside the UI are Numbers of
// ns relative to `origin` (a BigInt of absolute ns: the profile start), so
// they stay exact far below 2^53; absolute times only exist as BigInt or
// digit strings at the API boundary.
//
// The window lives in the timeline's store (start, end, min, max); the
// functions here are the pure arithmetic of it, and Viewport is the handle
// the views hold: it reads the store and changes it only by dispatching.

const MIN_WINDOW_NS = 20;
const FOCUS_MIN = 0.02; // an event narrower than this part of the window is zoomed to
export const SCROLL_W = 12;

/** The window [start, end) clamped to the extent {min, max}: {start, end}. */
export function clampWindow(ext, start, end) {
  const span = ext.max - ext.min;
  let d = Math.min(Math.max(end - start, MIN_WINDOW_NS), span * 1.5);
  // Keep at least part of the profile in view.
  const pad = span * 0.25;
  let s = Math.min(Math.max(start, ext.min - pad), ext.max + pad - d);
  if (d >= span + 2 * pad) { s = ext.min - pad; d = span + 2 * pad; }
  return { start: s, end: s + d };
}

/** The window zoomed by `factor` (< 1 zooms in) keeping rel time `at` fixed. */
export function zoomWindow(w, factor, at = (w.start + w.end) / 2) {
  const s = at - (at - w.start) * factor;
  return { start: s, end: s + (w.end - w.start) * factor };
}

/** A window of width d centred on [rel, rel+dur], inside the extent when it fits in it. */
function centred(ext, rel, dur, d) {
  let s = rel + dur / 2 - d / 2;
  if (d <= ext.max - ext.min) s = Math.min(Math.max(s, ext.min), ext.max - d);
  return { start: s, end: s + d };
}

/** The window centred on `rel` at the same zoom, or zoomed out so [rel, rel+dur] fits. */
export function revealWindow(w, ext, rel, dur = 0) {
  const d = w.end - w.start;
  return centred(ext, rel, dur, dur > d * 0.8 ? dur / 0.6 : d);
}

/**
 * The window centred on the event [rel, rel+dur] showing it whole with a
 * margin: the same zoom when the event spans FOCUS_MIN to 80% of the window
 * (or has no duration), else zoomed in or out so it spans 60% of it.
 */
export function focusWindow(w, ext, rel, dur = 0) {
  const d = w.end - w.start;
  const fits = !(dur > 0) || (dur <= d * 0.8 && dur >= d * FOCUS_MIN);
  return centred(ext, rel, dur, fits ? d : dur / 0.6);
}

/** Width in px of the time area of state `s`. */
export function timeWidth(s) { return Math.max(50, s.W - s.labelW - SCROLL_W); }

/** ns per px of state `s`. */
export function nsPerPx(s) { return (s.end - s.start) / timeWidth(s); }

/** Rel time under canvas x. */
export function timeAt(s, x) { return s.start + (x - s.labelW) * nsPerPx(s); }

/** ns per px rounded down to a power of two (stable cache keys), >= 1. */
export function resolutionFor(windowNs, widthPx) {
  const r = windowNs / Math.max(widthPx, 1);
  return r < 2 ? 1 : 2 ** Math.floor(Math.log2(r));
}

export class Viewport {
  /** store: the timeline's store; origin: BigInt absolute ns of relative 0. */
  constructor(store, origin) {
    this.store = store;
    this.origin = origin;
  }

  get start() { return this.store.state.start; }
  get end() { return this.store.state.end; }
  get min() { return this.store.state.min; }
  get max() { return this.store.state.max; }
  get dur() { return this.end - this.start; }

  /** Relative ns of an absolute time (digit string or BigInt). */
  rel(abs) { return Number(BigInt(abs) - this.origin); }

  /** Absolute ns (digit string) of a relative time, floored to 1 ns. */
  abs(rel) { return (this.origin + BigInt(Math.floor(rel))).toString(); }

  set(start, end) { this.store.dispatch({ type: 'window', start, end }); }
  fit() { this.store.dispatch({ type: 'fit' }); }
  zoom(factor, at) { this.store.dispatch({ type: 'zoom', factor, at }); }
  pan(dns) { this.store.dispatch({ type: 'pan', dns }); }
  reveal(rel, dur = 0) { this.store.dispatch({ type: 'reveal', rel, dur }); }
  focus(rel, dur = 0) { this.store.dispatch({ type: 'focus', rel, dur }); }
}
