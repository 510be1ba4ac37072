// timeline.js -- the canvas timeline widget shared by the System and Device
// Trace Viewers: a virtualized track tree on the left, the time axis on top,
// pinned rows, then the scrolling rows.
//
// One direction of flow: input (input.js) and the views only dispatch
// actions to the store (store.js); a state change schedules one frame; a
// frame computes the layout (layout.js), asks tiles.js for the tiles that
// layout needs, then paints (paint.js).  The widget reports selections,
// hover, area and window changes through callbacks by comparing states; it
// never calls the API itself.

import { Viewport } from './viewport.js';
import { TileStore } from './tiles.js';
import { Store, initialState } from './store.js';
import { layout } from './layout.js';
import { Painter } from './paint.js';
import { Input } from './input.js';
import { hitTest, locate, scrollFor } from './hittest.js';

// State fields a frame draws; a change of any other field needs no frame.
const PAINTED = ['start', 'end', 'min', 'max', 'W', 'H', 'dpr', 'labelW', 'scrollTop', 'tree', 'collapsed', 'pins',
  'showHidden', 'filter', 'sharedScales', 'timeOrigin', 'annots', 'sel', 'flows', 'links', 'marks', 'markCur', 'density', 'hitCounts', 'hoverRow', 'area', 'drag', 'cursor', 'dataGen', 'themeGen'];

const hoverKey = (s) => {
  const h = s.hover?.hit;
  return h?.kind === 'slice' ? h.key : h?.kind === 'counter' ? `${h.track.id}@${h.time}` : null;
};

export class Timeline {
  /**
   * el: the container element.  o: {
   *   origin (BigInt), min, max (rel extent), fmtDur(ns), hbmCapacity (bytes | 0),
   *   fetchBatch(kind, params, signal, onCoarse),
   *   onSelect(sel|null), onArea(area|null), onHover(hit|null, x, y), onView(), onOpen(hit),
   *   onAxisClick({t, tol}) (a single click on the time axis at rel t; tol: 6 px in ns) }
   */
  constructor(el, o) {
    this.o = o;
    this.el = document.createElement('div');
    this.el.className = 'tl';
    this.el.innerHTML = '<canvas class="tl-canvas" tabindex="0" aria-label="timeline"></canvas>' +
      '<div class="tl-vscroll"><div class="tl-vspace"></div></div>' +
      '<div class="tl-corner"><input class="tl-filter" type="search" placeholder="Filter tracks (text, /regex/)" aria-label="filter tracks">' +
      '<label title="Show the matching tracks only (else mark them)"><input class="tl-only" type="checkbox" checked> only</label></div>';
    el.append(this.el);
    this.canvas = this.el.querySelector('canvas');
    this.scroller = this.el.querySelector('.tl-vscroll');
    this.spacer = this.el.querySelector('.tl-vspace');
    this.corner = this.el.querySelector('.tl-corner');
    const labelW = Math.min(320, Math.max(140, Math.round(this.el.clientWidth * 0.22)));
    this.store = new Store(initialState(o.min, o.max, labelW));
    this.vp = new Viewport(this.store, o.origin);
    this.absOf = (rel) => this.vp.abs(rel);
    this.tiles = new TileStore(o.origin, o.fetchBatch, () => this.dispatch({ type: 'data' }));
    this.painter = new Painter(this.canvas.getContext('2d', { alpha: false }), o.fmtDur, o.hbmCapacity);
    this.input = new Input(this);
    this.frames = []; // paint times (ms), newest last
    this.rafId = 0;
    this.lastKeyT = null;
    this.dom = {};
    this.store.subscribe((s, p) => this.changed(s, p));
    this.resizeObs = new ResizeObserver(() => this.resize());
    this.resizeObs.observe(this.el);
    this.scroller.addEventListener('scroll', () => this.dispatch({ type: 'scroll', top: this.scroller.scrollTop }));
    const filter = this.corner.querySelector('.tl-filter');
    filter.addEventListener('input', () => this.dispatch({ type: 'filter', text: filter.value }));
    // Enter or Escape hands the keys back to the timeline.
    filter.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === 'Escape') this.canvas.focus({ preventScroll: true }); });
    this.corner.querySelector('.tl-only').addEventListener('change', (e) => this.dispatch({ type: 'filter', only: e.target.checked }));
    this.resize();
  }

  get state() { return this.store.state; }
  dispatch(a) { this.store.dispatch(a); }

  destroy() {
    cancelAnimationFrame(this.rafId);
    clearTimeout(this.loadingTimer);
    this.resizeObs.disconnect();
    this.tiles.clear();
    this.el.remove();
  }

  /** The callbacks a state change calls, then a frame if it changed what is drawn. */
  changed(s, p) {
    const o = this.o;
    if (s.start !== p.start || s.end !== p.end || s.timeOrigin !== p.timeOrigin) o.onView?.();
    if (s.sel !== p.sel) o.onSelect?.(s.sel);
    if (s.hover !== p.hover) o.onHover?.(s.hover?.hit || null, s.hover?.x, s.hover?.y);
    if (s.area !== p.area && (!s.area || s.area.bases)) o.onArea?.(s.area && { start: s.area.start, end: s.area.end, bases: s.area.bases });
    if (s.open !== p.open && s.open) o.onOpen?.(s.open);
    if (s.axisClick !== p.axisClick && s.axisClick) o.onAxisClick?.(s.axisClick);
    if (s.keys !== p.keys && s.keys.length && !p.keys.length) this.lastKeyT = null;
    if (hoverKey(s) !== hoverKey(p) || s.keys.length || PAINTED.some((k) => s[k] !== p[k])) this.dirty();
  }

  // ------------------------------------------------------------ views' API

  /** Replaces the tracks (grouping change or new data), keeping collapse and pins. */
  setTracks(tracks) { this.painter.reset(); this.dispatch({ type: 'tracks', tracks }); }

  /** New extent (live refresh); cached tiles are dropped. */
  setExtent(min, max) { this.tiles.clear(); this.painter.reset(); this.dispatch({ type: 'extent', min, max }); }

  /** Drops the cached tiles and draws again. */
  refresh() { this.tiles.clear(); this.painter.reset(); this.dispatch({ type: 'data' }); }

  /** Re-reads the CSS theme colours. */
  readTheme() { this.painter.readTheme(); this.dispatch({ type: 'theme' }); }

  get sel() { return this.state.sel; }
  get area() { return this.state.area; }
  get hover() { return this.state.hover?.hit || null; }

  /** Selects an event ({base, lane, ts, dur, key, name}) or clears with null. */
  select(sel) { this.dispatch({ type: 'select', sel }); }

  /**
   * Flow partners of the selection: [{base, lane, ts, up, dur, key,
   * fromEnd}] (fromEnd: the arrow leaves the upstream event at its end).
   */
  setFlows(list) { this.dispatch({ type: 'flows', list }); }

  /** Arrows between events wherever the selection is: [{from, to}], ends {base, lane, ts, dur, key}. */
  setLinks(list) { this.dispatch({ type: 'links', list }); }

  /** The arrows the last frame drew: [{kind, from, to}] (event keys). */
  get arrows() { return this.painter.arrows || []; }

  /** Search hits [{base, lane, ts, dur, key}] and the current one. */
  setMarks(list, cur = null) { this.dispatch({ type: 'marks', list, cur }); }

  /** Search hits per track and bucket (see store.js) or null. */
  setDensity(density) { this.dispatch({ type: 'density', density }); }

  /** Search hits per base track id (Map) or null, shown in the track list. */
  setHitCounts(counts) { this.dispatch({ type: 'hitCounts', counts }); }

  /** Expands the collapsed groups above the track of `base`. */
  expandTo(base) {
    const s = this.state, hit = s.tree.byBase.get(String(base));
    for (let n = hit && s.tree.byId.get(hit.track.id)?.parent; n && n.depth >= 0; n = n.parent) {
      if (s.collapsed.get(n.path) === true) this.dispatch({ type: 'collapse', path: n.path, value: false });
    }
  }

  clearArea() { this.dispatch({ type: 'area', area: null }); }

  /** Flags, notes and named areas to draw: [{id, kind, ts, end, text, color, base, lane}] (rel ns). */
  setAnnotations(list) { this.dispatch({ type: 'annots', list }); }

  /** The annotations the last frame drew: [{id, kind, x}] (x: canvas px of ts). */
  get annotsDrawn() { return this.painter.annotsDrawn || []; }

  /** Scrolls so the row of `base` is visible. */
  scrollToBase(base) { const s = this.state; this.dispatch({ type: 'scroll', top: scrollFor(s, layout(s), base) }); }

  /** Key down/up from the page (W/A/S/D, arrows).  Returns true if handled. */
  key(e, down) { return this.input.key(e, down); }

  /** Clears held keys (window blur). */
  releaseKeys() { this.dispatch({ type: 'keys', keys: [] }); }

  /** Canvas position of an event, for tests. */
  locate(base, lane, ts) { const s = this.state; return locate(s, layout(s), base, lane, ts); }

  /** The slice or counter sample under canvas (x, y), or null. */
  hitTest(x, y) { const s = this.state; return hitTest(s, layout(s), this.tiles, x, y, this.absOf); }

  /** Whether nothing is drawn or fetched right now. */
  get idle() { return this.tiles.busy === 0 && !this.rafId; }

  // ------------------------------------------------------------ frame

  resize() {
    const r = this.el.getBoundingClientRect();
    const W = Math.max(200, Math.floor(r.width)), H = Math.max(120, Math.floor(r.height));
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.canvas.style.width = `${W}px`;
    this.canvas.style.height = `${H}px`;
    this.dispatch({ type: 'size', W, H, dpr });
    this.dirty();
  }

  dirty() {
    if (!this.rafId && !this.inFrame) this.rafId = requestAnimationFrame((t) => this.frame(t));
  }

  frame(now) {
    this.rafId = 0;
    this.inFrame = true;
    if (this.state.keys.length) {
      const dt = this.lastKeyT ? Math.min(now - this.lastKeyT, 50) / 1000 : 1 / 60;
      this.lastKeyT = now;
      this.dispatch({ type: 'keyStep', dt });
    }
    const s = this.state, L = layout(s);
    this.syncDom(s, L);
    this.tiles.update(L.fetch);
    const t0 = performance.now();
    this.painter.paint(s, this.tiles, this.tiles.busy > 0);
    this.frames.push(performance.now() - t0);
    if (this.frames.length > 5000) this.frames.splice(0, 1000);
    this.inFrame = false;
    if (s.keys.length) this.dirty();
    if (this.tiles.busy) this.loadingTimer ||= setTimeout(() => { this.loadingTimer = 0; this.dirty(); }, 100);
  }

  /** Brings the DOM around the canvas (scroll bar, cursor) in line with the layout. */
  syncDom(s, L) {
    const d = this.dom;
    if (d.bodyTop !== L.bodyTop) this.scroller.style.top = `${(d.bodyTop = L.bodyTop)}px`;
    if (d.height !== L.height) this.spacer.style.height = `${(d.height = L.height)}px`;
    if (d.cursor !== s.cursor) this.canvas.style.cursor = d.cursor = s.cursor;
    if (d.labelW !== s.labelW) this.corner.style.width = `${(d.labelW = s.labelW) - 12}px`;
    if (this.scroller.scrollTop !== L.scrollTop) this.scroller.scrollTop = L.scrollTop;
  }
}
