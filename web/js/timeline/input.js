// input.js -- pointer, wheel and key handlers of the timeline canvas.  They
// read the state and its layout and only dispatch actions (store.js); the
// widget turns state changes into callbacks, fetches and frames.

import { AXIS_H, layout, trackVisible } from './layout.js';
import { rowAt, hitTest } from './hittest.js';
import { timeAt, nsPerPx } from './viewport.js';
import { NAV_KEYS } from './store.js';

const MIN_LABEL_W = 140;
const DRAG_PX = 4;
const DBLCLICK_MS = 250;

export class Input {
  /** tl: the widget ({store, canvas, tiles, absOf(rel)}); attaches the listeners. */
  constructor(tl) {
    this.tl = tl;
    const c = tl.canvas;
    c.addEventListener('pointerdown', (e) => this.down(e));
    c.addEventListener('pointermove', (e) => this.move(e));
    c.addEventListener('pointerup', (e) => this.up(e));
    c.addEventListener('pointerleave', () => { this.act({ type: 'mouse', pos: null }); this.act({ type: 'hover', hit: null }); });
    c.addEventListener('dblclick', (e) => this.dblclick(e));
    c.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
  }

  get s() { return this.tl.store.state; }
  act(a) { this.tl.store.dispatch(a); }

  pos(e) {
    const r = this.tl.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  hit(x, y) { const s = this.s; return hitTest(s, layout(s), this.tl.tiles, x, y, this.tl.absOf); }

  scrollBy(dy) {
    const L = layout(this.s);
    this.act({ type: 'scroll', top: Math.min(L.maxScroll, Math.max(0, L.scrollTop + dy)) });
  }

  down(e) {
    if (e.button !== 0) return;
    this.tl.canvas.focus({ preventScroll: true });
    this.tl.canvas.setPointerCapture(e.pointerId);
    const { x, y } = this.pos(e), s = this.s;
    let mode;
    if (Math.abs(x - s.labelW) < 5) mode = 'resize';
    else if (x < s.labelW) mode = 'label';
    else if (y < AXIS_H) mode = 'axis';
    else if (e.shiftKey) mode = 'area';
    else mode = 'pan';
    this.act({ type: 'drag', drag: { mode, x0: x, y0: y, x, y, lastY: y, start: s.start, moved: false, t0: timeAt(s, x), ctrl: e.ctrlKey || e.metaKey } });
    this.act({ type: 'hover', hit: null });
  }

  move(e) {
    const { x, y } = this.pos(e), s = this.s;
    this.act({ type: 'mouse', pos: { x, y } });
    const d0 = s.drag;
    if (!d0) {
      this.act({ type: 'cursor', cursor: Math.abs(x - s.labelW) < 5 ? 'col-resize' : y < AXIS_H && x > s.labelW ? 'text' : 'default' });
      this.act({ type: 'hoverRow', node: x < s.labelW ? rowAt(layout(s), y)?.row.node || null : null });
      this.act({ type: 'hover', hit: this.hit(x, y), x: e.clientX, y: e.clientY });
      return;
    }
    const d = { ...d0, x, y, moved: d0.moved || Math.abs(x - d0.x0) + Math.abs(y - d0.y0) > DRAG_PX };
    this.act({ type: 'drag', drag: d });
    if (!d.moved) return;
    if (d.mode === 'pan') {
      this.act({ type: 'cursor', cursor: 'grabbing' });
      const dt = (x - d.x0) * (s.end - s.start) / layout(s).tw;
      this.act({ type: 'window', start: d.start - dt, end: d.start - dt + (s.end - s.start) });
      this.scrollBy(d0.lastY - y);
      this.act({ type: 'drag', drag: { ...d, lastY: y } });
    } else if (d.mode === 'resize') {
      this.act({ type: 'labelW', w: Math.max(MIN_LABEL_W, Math.min(s.W * 0.6, x)) });
    } else if (d.mode === 'area') {
      this.act({ type: 'area', area: { start: d.t0, end: timeAt(s, x), y0: d.y0, y1: y } });
    }
  }

  up(e) {
    const d = this.s.drag;
    this.act({ type: 'drag', drag: null });
    this.act({ type: 'cursor', cursor: 'default' });
    if (!d) return;
    const { x, y } = this.pos(e), s = this.s;
    if (d.mode === 'axis' && d.moved) {
      const a = timeAt(s, Math.min(d.x0, x)), b = timeAt(s, Math.max(d.x0, x));
      if (b - a > 0) this.act({ type: 'window', start: a, end: b });
      return;
    }
    if (d.mode === 'area' && d.moved) { this.finishArea(d, x, y); return; }
    if (d.mode === 'axis' && x > s.labelW) { this.axisClick(timeAt(s, x), 6 * nsPerPx(s)); return; }
    if (d.moved) return;
    if (d.mode === 'label') { this.labelClick(x, y); return; }
    if (d.mode === 'pan' || d.mode === 'area') {
      const h = this.hit(x, y);
      if (s.area && !h) this.act({ type: 'area', area: null });
      if (h?.kind === 'slice') {
        if (h.count > 1) {
          // A run of one event as wide as the view: zoom in around the click.
          if (h.dur > (s.end - s.start) / 4) this.act({ type: 'zoom', factor: 1 / 8, at: timeAt(s, x) });
          else this.act({ type: 'window', start: h.ts - h.dur * 0.1, end: h.ts + h.dur * 1.1 });
          return;
        }
        if (d.ctrl) { this.act({ type: 'open', hit: h }); return; }
        this.act({ type: 'select', sel: h });
      } else if (!h) this.act({ type: 'select', sel: null });
    }
  }

  finishArea(d, x, y) {
    const s = this.s, L = layout(s);
    const a = rowAt(L, Math.min(d.y0, y)) || rowAt(L, L.bodyTop);
    const b = rowAt(L, Math.max(d.y0, y)) || rowAt(L, s.H - 1);
    // The rows dragged over: a track row counts its track; a collapsed
    // group every shown track under it (they are drawn in its row); an
    // expanded group's header nothing (its tracks have rows of their own).
    const bases = [];
    const nodes = new Set();
    const addTracks = (node) => {
      if (node.track?.kind === 'slices' && trackVisible(s, node.track)) for (const bb of node.track.base || []) bases.push(String(bb.id));
      for (const ch of node.children) addTracks(ch);
    };
    const add = (node) => {
      if (node.track) {
        nodes.add(node);
        if (node.track.kind === 'slices') for (const bb of node.track.base || []) bases.push(String(bb.id));
      } else if (s.collapsed.get(node.path) === true) {
        nodes.add(node);
        addTracks(node);
      }
    };
    if (a && b && a.pinned === b.pinned) {
      const rows = a.pinned ? L.pinRows : L.rows;
      const i0 = rows.indexOf(a.row), i1 = rows.indexOf(b.row);
      for (let i = Math.min(i0, i1); i <= Math.max(i0, i1); i++) add(rows[i].node);
    }
    const t = timeAt(s, x);
    this.act({ type: 'area', area: { start: Math.min(d.t0, t), end: Math.max(d.t0, t), y0: d.y0, y1: y, nodes, bases: [...new Set(bases)] } });
  }

  labelClick(x, y) {
    const at = rowAt(layout(this.s), y);
    if (!at) return;
    const n = at.row.node;
    if (n.track && x > this.s.labelW - 28) { this.act({ type: 'pin', name: n.track.name }); return; }
    if (n.children.length) this.act({ type: 'collapse', path: n.path });
  }

  /** A single click on the axis, told once no second click made it a double click. */
  axisClick(t, tol) {
    clearTimeout(this.axisTimer);
    this.axisTimer = setTimeout(() => this.act({ type: 'axisClick', t, tol }), DBLCLICK_MS);
  }

  dblclick(e) {
    clearTimeout(this.axisTimer);
    const { x, y } = this.pos(e), s = this.s;
    if (y < AXIS_H) { this.act({ type: 'origin', t: x > s.labelW ? timeAt(s, x) : 0 }); return; }
    const h = this.hit(x, y);
    if (h?.kind === 'slice') this.act({ type: 'window', start: h.ts - h.dur * 0.1, end: h.ts + h.dur * 1.1 });
  }

  wheel(e) {
    e.preventDefault();
    const { x, y } = this.pos(e), s = this.s;
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? s.H : 1;
    const dx = e.deltaX * unit, dy = e.deltaY * unit;
    const nspp = (s.end - s.start) / layout(s).tw;
    if (e.ctrlKey || e.metaKey || (y < AXIS_H && x > s.labelW)) {
      this.act({ type: 'zoom', factor: Math.exp(dy * 0.002), at: x > s.labelW ? timeAt(s, x) : undefined });
    } else if (e.shiftKey) {
      this.act({ type: 'pan', dns: (dy || dx) * nspp });
    } else if (Math.abs(dx) > Math.abs(dy)) {
      this.act({ type: 'pan', dns: dx * nspp });
    } else {
      this.scrollBy(dy);
    }
  }

  /** Key down/up from the page (W/A/S/D, arrows).  Returns true if handled. */
  key(e, down) {
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (!NAV_KEYS.includes(k)) return false;
    const keys = this.s.keys;
    if (down && !keys.includes(k)) this.act({ type: 'keys', keys: [...keys, k] });
    if (!down && keys.includes(k)) this.act({ type: 'keys', keys: keys.filter((x) => x !== k) });
    return true;
  }
}
