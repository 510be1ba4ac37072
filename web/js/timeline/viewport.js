// viewport.js -- the visible time window.  Times inside the UI are Numbers of
// ns relative to `origin` (a BigInt of absolute ns: the profile start), so
// they stay exact far below 2^53; absolute times only exist as BigInt or
// digit strings at the API boundary.

const MIN_WINDOW_NS = 20;

export class Viewport {
  /** origin: BigInt absolute ns of relative 0; extent: [min, max] in rel ns. */
  constructor(origin, min, max) {
    this.origin = origin;
    this.min = min;
    this.max = Math.max(max, min + MIN_WINDOW_NS);
    this.start = this.min;
    this.end = this.max;
    this.onChange = null;
  }

  get dur() { return this.end - this.start; }

  /** Relative ns of an absolute time (digit string or BigInt). */
  rel(abs) { return Number(BigInt(abs) - this.origin); }

  /** Absolute ns (digit string) of a relative time, floored to 1 ns. */
  abs(rel) { return (this.origin + BigInt(Math.floor(rel))).toString(); }

  set(start, end) {
    const span = this.max - this.min;
    let d = Math.min(Math.max(end - start, MIN_WINDOW_NS), span * 1.5);
    let s = start;
    // Keep at least part of the profile in view.
    const pad = span * 0.25;
    s = Math.min(Math.max(s, this.min - pad), this.max + pad - d);
    if (d >= span + 2 * pad) { s = this.min - pad; d = span + 2 * pad; }
    if (s === this.start && s + d === this.end) return;
    this.start = s;
    this.end = s + d;
    this.onChange?.();
  }

  fit() { this.set(this.min, this.max); }

  /** Zooms by `factor` (< 1 zooms in) keeping rel time `at` fixed on screen. */
  zoom(factor, at = (this.start + this.end) / 2) {
    const s = at - (at - this.start) * factor;
    this.set(s, s + this.dur * factor);
  }

  pan(dns) { this.set(this.start + dns, this.end + dns); }

  /** Centres `rel` keeping the zoom, or zooms out so [rel, rel+dur] fits. */
  reveal(rel, dur = 0) {
    let d = this.dur;
    if (dur > d * 0.8) d = dur / 0.6;
    let s = rel + dur / 2 - d / 2;
    // Stay inside the profile when the window fits in it.
    if (d <= this.max - this.min) s = Math.min(Math.max(s, this.min), this.max - d);
    this.set(s, s + d);
  }
}

/** ns per px rounded down to a power of two (stable cache keys), >= 1. */
export function resolutionFor(windowNs, widthPx) {
  const r = windowNs / Math.max(widthPx, 1);
  return r < 2 ? 1 : 2 ** Math.floor(Math.log2(r));
}
