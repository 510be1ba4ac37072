// timeline.js -- the canvas timeline widget shared by the System and Device
// Trace Viewers: a virtualized track tree on the left, the time axis on top,
// pinned rows, then the scrolling rows.  It draws with requestAnimationFrame
// only when something changed, asks tiles.js for the visible window only,
// and reports selections through callbacks; it never calls the API itself.

import { Viewport, resolutionFor } from './viewport.js';
import { TileStore, TILE_PX } from './tiles.js';
import { TrackTree, LANE_H, GROUP_H } from './tracktree.js';
import { SliceBatch, makeHatch, joinSeries, drawCounter, drawStacked, drawAxis, drawGrid } from './render.js';
import { colorIndex, colorFill } from './colors.js';

const AXIS_H = 40;
const SCROLL_W = 12;
const MIN_LABEL_W = 140;
const DRAG_PX = 4;

export class Timeline {
  /**
   * el: the container element.  o: {
   *   origin (BigInt), min, max (rel extent), fetchBatch(kind, params, signal),
   *   onSelect(sel|null), onArea(area|null), onHover(hit|null, x, y),
   *   onView(), onOpen(sel), visible(track) }
   */
  constructor(el, o) {
    this.o = o;
    this.el = document.createElement('div');
    this.el.className = 'tl';
    this.el.innerHTML = '<canvas class="tl-canvas" tabindex="0" aria-label="timeline"></canvas>' +
      '<div class="tl-vscroll"><div class="tl-vspace"></div></div>';
    el.append(this.el);
    el = this.el;
    this.canvas = el.querySelector('canvas');
    this.ctx = this.canvas.getContext('2d', { alpha: false });
    this.scroller = el.querySelector('.tl-vscroll');
    this.spacer = el.querySelector('.tl-vspace');
    this.labelW = Math.min(320, Math.max(MIN_LABEL_W, Math.round(el.clientWidth * 0.22)));
    this.vp = new Viewport(o.origin, o.min, o.max);
    this.vp.onChange = () => { this.dirty(); o.onView?.(); };
    this.tiles = new TileStore(o.origin, o.fetchBatch, () => this.dirty());
    this.tree = new TrackTree([]);
    this.pins = new Set(); // track names
    this.batch = new SliceBatch();
    this.sel = null; // {base, lane, ts, dur, key, name}
    this.hover = null;
    this.area = null; // {start, end, y0, y1}
    this.flows = [];
    this.bodyRows = [];
    this.marks = [];
    this.markCur = null;
    this.drag = null;
    this.keys = new Set();
    this.mouse = null;
    this.counterMax = new Map();
    this.frames = []; // render times (ms), newest last
    this.rafId = 0;
    this.readTheme();
    this.resizeObs = new ResizeObserver(() => this.resize());
    this.resizeObs.observe(el);
    this.scroller.addEventListener('scroll', () => this.dirty());
    this.canvas.addEventListener('pointerdown', (e) => this.down(e));
    this.canvas.addEventListener('pointermove', (e) => this.move(e));
    this.canvas.addEventListener('pointerup', (e) => this.up(e));
    this.canvas.addEventListener('pointerleave', () => { this.mouse = null; this.setHover(null); });
    this.canvas.addEventListener('dblclick', (e) => this.dblclick(e));
    this.canvas.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.resize();
  }

  destroy() {
    cancelAnimationFrame(this.rafId);
    this.resizeObs.disconnect();
    this.tiles.clear();
    this.el.remove();
  }

  readTheme() {
    const cs = getComputedStyle(document.documentElement);
    const v = (n) => cs.getPropertyValue(n).trim();
    this.theme = {
      bg: v('--tl-bg'), fg: v('--fg'), dim: v('--fg-dim'), grid: v('--tl-grid'), alt: v('--tl-alt'),
      labelBg: v('--tl-label-bg'), axisBg: v('--tl-axis-bg'), border: v('--border'), group: v('--tl-group'),
      sel: v('--tl-sel'), hit: v('--tl-hit'), accent: v('--accent'), area: v('--tl-area'), flow: v('--tl-flow'),
      outside: v('--tl-outside'),
    };
    this.hatch = makeHatch(this.ctx, v('--tl-hatch'));
    this.dirty();
  }

  // ------------------------------------------------------------ model

  /** Replaces the tracks (grouping change or new data), keeping collapse and pins. */
  setTracks(tracks) {
    this.tree = new TrackTree(tracks, this.tree.collapsed);
    this.counterMax.clear();
    this.relayout();
  }

  /** New extent (live refresh); cached tiles are dropped. */
  setExtent(min, max) {
    this.vp.min = min;
    this.vp.max = Math.max(max, min + 20);
    this.tiles.clear();
    this.counterMax.clear();
    this.dirty();
  }

  refresh() { this.tiles.clear(); this.counterMax.clear(); this.dirty(); }

  relayout() {
    this.layoutGen = (this.layoutGen || 0) + 1;
    const visible = this.o.visible || (() => true);
    this.tree.layout(visible);
    this.pinRows = [];
    let y = 0;
    for (const r of this.tree.rows) {
      if (r.node.track && this.pins.has(r.node.track.name)) {
        this.pinRows.push({ ...r, y, depth: 0 });
        y += r.h;
      }
    }
    // Pinned tracks stay listed even when their group is collapsed.
    for (const name of this.pins) {
      const n = this.tree.byPath.get(name);
      if (n?.track && visible(n.track) && !this.pinRows.some((r) => r.node === n)) {
        const h = this.tree.rows.length ? (this.tree.rowOf.get(n)?.h ?? 38) : 38;
        this.pinRows.push({ node: n, y, h, depth: 0, count: 1, group: false });
        y += h;
      }
    }
    this.pinH = Math.min(y, Math.round(this.H * 0.4));
    this.scroller.style.top = `${AXIS_H + this.pinH}px`;
    this.spacer.style.height = `${this.tree.height}px`;
    this.dirty();
  }

  togglePin(track) {
    if (this.pins.has(track.name)) this.pins.delete(track.name); else this.pins.add(track.name);
    this.relayout();
  }

  // ------------------------------------------------------------ geometry

  resize() {
    const r = this.el.getBoundingClientRect();
    this.W = Math.max(200, Math.floor(r.width));
    this.H = Math.max(120, Math.floor(r.height));
    const dpr = window.devicePixelRatio || 1;
    this.dpr = dpr;
    this.canvas.width = Math.round(this.W * dpr);
    this.canvas.height = Math.round(this.H * dpr);
    this.canvas.style.width = `${this.W}px`;
    this.canvas.style.height = `${this.H}px`;
    this.relayout();
  }

  get tlW() { return Math.max(50, this.W - this.labelW - SCROLL_W); }
  get scrollTop() { return this.scroller.scrollTop; }
  get bodyTop() { return AXIS_H + this.pinH; }
  nsPerPx() { return this.vp.dur / this.tlW; }
  xOf(t) { return this.labelW + (t - this.vp.start) / this.nsPerPx(); }
  tOf(x) { return this.vp.start + (x - this.labelW) * this.nsPerPx(); }

  /** The row under canvas y: {row, top, pinned} or null. */
  rowAt(y) {
    if (y < AXIS_H) return null;
    if (y < this.bodyTop) {
      for (const r of this.pinRows) if (y >= AXIS_H + r.y && y < AXIS_H + r.y + r.h) return { row: r, top: AXIS_H + r.y, pinned: true };
      return null;
    }
    const cy = y - this.bodyTop + this.scrollTop;
    const i = this.tree.rowIndexAt(cy);
    const r = this.tree.rows[i];
    return r && cy >= r.y ? { row: r, top: this.bodyTop + r.y - this.scrollTop, pinned: false } : null;
  }

  /** Screen y of the middle of (base, lane) in the scrolling area, or null. */
  laneY(base, lane) {
    const hit = this.tree.rowForBase(base);
    if (!hit) return null;
    const top = this.bodyTop + hit.row.y - this.scrollTop;
    const off = hit.exact ? hit.laneOffset + lane : 0;
    return { y: top + 2 + off * LANE_H + LANE_H / 2, row: hit.row, exact: hit.exact };
  }

  /** Canvas position of an event, for tests and flows. */
  locate(base, lane, ts) {
    const p = this.laneY(base, lane);
    return p ? { x: this.xOf(ts), y: p.y } : null;
  }

  /** Scrolls so the row of `base` is visible. */
  scrollToBase(base) {
    const hit = this.tree.rowForBase(base);
    if (!hit) return;
    const r = hit.row, view = this.H - this.bodyTop;
    const st = this.scrollTop;
    if (r.y < st || r.y + r.h > st + view) this.scroller.scrollTop = Math.max(0, r.y - view / 3);
  }

  // ------------------------------------------------------------ frame

  dirty() {
    if (!this.rafId) this.rafId = requestAnimationFrame((t) => this.frame(t));
  }

  frame(now) {
    this.rafId = 0;
    if (this.keys.size) this.keyStep(now);
    const t0 = performance.now();
    this.render();
    const dt = performance.now() - t0;
    this.frames.push(dt);
    if (this.frames.length > 5000) this.frames.splice(0, 1000);
    if (this.keys.size) this.dirty();
  }

  render() {
    const ctx = this.ctx, th = this.theme;
    const W = this.W, H = this.H, L = this.labelW, tw = this.tlW;
    const vp = this.vp, nspp = this.nsPerPx();
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, W, H);

    const r = resolutionFor(vp.dur, tw);
    const span = r * TILE_PX;
    this.frameRes = { r, k0: Math.floor(vp.start / span), k1: Math.floor((vp.end - 1) / span) };

    // Rows in view: pinned, then the scrolling body.
    const body = [];
    const st = this.scrollTop, bodyH = H - this.bodyTop;
    const i0 = this.tree.rowIndexAt(st);
    for (let i = i0; i < this.tree.rows.length; i++) {
      const row = this.tree.rows[i];
      if (row.y >= st + bodyH) break;
      body.push(row);
    }
    this.bodyRows = body;
    const want = [];
    const wantTrack = (t) => {
      for (const b of t.base || []) want.push({ kind: t.kind === 'counter' ? 'counters' : 'slices', id: String(b.id), source: b.source || t.source });
    };
    for (const row of this.pinRows) if (row.node.track) wantTrack(row.node.track);
    for (const row of body) if (row.node.track) wantTrack(row.node.track);
    const wantSig = `${this.layoutGen}|${i0}|${body.length}`;
    this.tiles.update(vp.start, vp.end, r, want, wantSig, vp.min, vp.max);

    // Timeline area.
    ctx.save();
    ctx.translate(L, 0);
    this.drawRows(ctx, this.pinRows, AXIS_H, AXIS_H, this.pinH, tw, nspp);
    this.drawRows(ctx, body, this.bodyTop - st, this.bodyTop, H - this.bodyTop, tw, nspp);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, tw, H - AXIS_H);
    ctx.clip();
    this.drawOverlays(ctx, tw, nspp);
    ctx.restore();
    drawAxis(ctx, vp.start, nspp, tw, AXIS_H, th);
    this.drawAxisOverlay(ctx, tw, nspp);
    ctx.restore();

    // Track labels.
    this.drawLabels(ctx, this.pinRows, AXIS_H, AXIS_H, this.pinH, true);
    this.drawLabels(ctx, body, this.bodyTop - st, this.bodyTop, H - this.bodyTop);
    if (this.pinH) {
      ctx.fillStyle = th.border;
      ctx.fillRect(0, this.bodyTop - 2, W, 2);
    }
    // Corner: the duration of the visible window.
    ctx.fillStyle = th.axisBg;
    ctx.fillRect(0, 0, L, AXIS_H);
    ctx.fillStyle = th.dim;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'alphabetic';
    ctx.fillText('visible window', 10, 16);
    ctx.fillStyle = th.fg;
    ctx.font = '600 13px system-ui, sans-serif';
    ctx.fillText(this.o.fmtDur(vp.dur), 10, 33);
    ctx.fillStyle = th.border;
    ctx.fillRect(0, AXIS_H - 1, L, 1);
    ctx.fillRect(L - 1, 0, 1, H);
    if (this.tiles.busy) {
      ctx.fillStyle = th.accent;
      ctx.fillRect(L, AXIS_H - 2, tw * ((Date.now() % 1000) / 1000), 2);
      this.loadingTimer ||= setTimeout(() => { this.loadingTimer = 0; this.dirty(); }, 100);
    }
  }

  /** Draws rows (their content and backgrounds) clipped to [clipTop, clipTop+clipH). */
  drawRows(ctx, rows, offY, clipTop, clipH, tw, nspp) {
    if (!rows.length || clipH <= 0) return;
    const th = this.theme, vp = this.vp;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, clipTop, tw, clipH);
    ctx.clip();
    // Backgrounds.
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i], top = offY + row.y;
      if (!row.node.track) { ctx.fillStyle = th.group; ctx.fillRect(0, top, tw, row.h); } else if ((Math.floor(row.y / 2) + i) & 1) { ctx.fillStyle = th.alt; ctx.fillRect(0, top, tw, row.h); }
    }
    // Outside the profile.
    const x0 = (vp.min - vp.start) / nspp, x1 = (vp.max - vp.start) / nspp;
    ctx.fillStyle = th.outside;
    if (x0 > 0) ctx.fillRect(0, clipTop, x0, clipH);
    if (x1 < tw) ctx.fillRect(x1, clipTop, tw - x1, clipH);
    drawGrid(ctx, vp.start, nspp, tw, clipTop, clipTop + clipH, th.grid);
    const { r, k0, k1 } = this.frameRes;
    const batch = this.batch;
    batch.reset();
    for (const row of rows) {
      const t = row.node.track;
      if (!t) continue;
      const top = offY + row.y;
      if (t.kind === 'counter') { this.drawCounterRow(ctx, t, top, row.h, tw, nspp, r, k0, k1); continue; }
      let lane = 0;
      for (const b of t.base || []) {
        const entries = this.tiles.cover('slices', String(b.id), r, k0, k1);
        const n = b.lanes || 1;
        for (let l = 0; l < n; l++) {
          const y = top + 2 + (lane + l) * LANE_H;
          if (y > clipTop + clipH || y + LANE_H < clipTop) continue;
          for (const e of entries) { const Ld = e.lanes[l]; if (Ld) batch.lane(Ld, vp.start, nspp, tw, y, this.tiles.names); }
        }
        lane += n;
      }
    }
    batch.fill(ctx, tw, this.hatch);
    // Row separators.
    ctx.fillStyle = th.grid;
    for (const row of rows) ctx.fillRect(0, offY + row.y + row.h - 1, tw, 1);
    ctx.restore();
  }

  drawCounterRow(ctx, t, top, h, tw, nspp, r, k0, k1) {
    const b = t.base?.[0];
    if (!b) return;
    const entries = this.tiles.cover('counters', String(b.id), r, k0, k1);
    if (!entries.length) return;
    const vp = this.vp, t0 = vp.start, t1 = vp.end;
    const key = t.id;
    const grow = (v) => {
      const m = Math.max(this.counterMax.get(key) || 0, v);
      this.counterMax.set(key, m);
      return m;
    };
    if (t.source === 'neuron_hbm_usage') {
      const cats = [];
      let vmax = 0;
      const total = joinSeries(entries, 0, t0, t1);
      for (const v of total.max) vmax = Math.max(vmax, v);
      const n = total.ts.length;
      for (let s = 1; s < (t.series?.length || 23); s++) {
        const pts = joinSeries(entries, s, t0, t1);
        if (pts.ts.length !== n || !pts.last.some((v) => v > 0)) continue;
        cats.push({ idx: s, pts });
      }
      const m = grow(vmax * 1.05);
      if (cats.length) drawStacked(ctx, cats, t0, nspp, tw, vp.max, top, h, m);
      else drawCounter(ctx, total, t0, nspp, tw, vp.max, top, h, m, this.counterColor(t));
      return;
    }
    const pts = joinSeries(entries, 0, t0, t1);
    let vmax = 0;
    for (const v of pts.max) vmax = Math.max(vmax, v);
    const m = t.unit === '%' ? Math.max(100, vmax) : grow(vmax * 1.1);
    drawCounter(ctx, pts, t0, nspp, tw, vp.max, top, h, m, this.counterColor(t));
  }

  counterColor(t) {
    let c = this.counterColors?.get(t.source);
    if (c) return c;
    const i = colorIndex('counter', t.source, '');
    const base = colorFill(i);
    c = { line: base, fill: base.replace(')', ' / 0.35)'), band: base.replace(')', ' / 0.25)') };
    (this.counterColors ||= new Map()).set(t.source, c);
    return c;
  }

  /** Track names; `full`: the whole path (pinned rows), cut on the left. */
  drawLabels(ctx, rows, offY, clipTop, clipH, full = false) {
    if (!rows.length || clipH <= 0) return;
    const th = this.theme, L = this.labelW;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, clipTop, L, clipH);
    ctx.clip();
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(0, clipTop, L, clipH);
    ctx.textBaseline = 'middle';
    const hoverRow = this.hoverRow;
    for (const row of rows) {
      const top = offY + row.y, n = row.node, t = n.track;
      const x = 8 + row.depth * 12;
      if (!t) { ctx.fillStyle = th.group; ctx.fillRect(0, top, L, row.h); }
      if (hoverRow === n) { ctx.fillStyle = th.alt; ctx.fillRect(0, top, L, row.h); }
      const mid = top + Math.min(row.h, GROUP_H) / 2;
      if (row.group) {
        ctx.fillStyle = th.dim;
        ctx.font = '10px system-ui, sans-serif';
        ctx.fillText(this.tree.isCollapsed(n) ? '▶' : '▼', x, mid);
      }
      let lx = x + 14;
      if (t) {
        ctx.fillStyle = colorFill(colorIndex(t.kind === 'counter' ? 'counter' : t.source, t.kind === 'counter' ? t.source : t.name, ''));
        ctx.fillRect(lx, mid - 4, 3, 8);
        lx += 8;
      }
      ctx.fillStyle = t ? th.fg : th.dim;
      ctx.font = t ? '12px system-ui, sans-serif' : '600 12px system-ui, sans-serif';
      const pinned = t && this.pins.has(t.name);
      const room = L - lx - (t ? 26 : 8);
      let label = full ? n.path : n.label;
      if (row.group && this.tree.isCollapsed(n) && row.count > 1) label += `  (${row.count})`;
      ctx.fillText(full ? fitLeft(ctx, label, room) : fit(ctx, label, room), lx, mid);
      if (t && (pinned || hoverRow === n)) pin(ctx, L - 16, mid, pinned ? th.accent : th.dim, pinned);
      ctx.fillStyle = th.grid;
      ctx.fillRect(0, top + row.h - 1, L, 1);
    }
    ctx.restore();
  }

  /** Selection, hover, search marks, flows and the area selection. */
  drawOverlays(ctx, tw, nspp) {
    const th = this.theme;
    const X = (t) => (t - this.vp.start) / nspp;
    const box = (ev, color, w) => {
      const p = this.laneY(ev.base, ev.lane);
      if (!p) return null;
      const x0 = X(ev.ts), x1 = Math.max(X(ev.ts + (ev.dur || 0)), x0 + 2);
      if (x1 < -4 || x0 > tw + 4) return p;
      ctx.strokeStyle = color;
      ctx.lineWidth = w;
      ctx.strokeRect(Math.max(x0, -4) - w / 2, p.y - LANE_H / 2 + 0.5, Math.min(x1, tw + 4) - Math.max(x0, -4) + w, LANE_H - 2);
      return p;
    };
    const cur = this.markCur;
    for (const m of this.marks) if (m !== cur) box(m, th.hit, 1.5);
    if (cur) box(cur, th.hit, 3);
    if (this.hover && !this.drag) box(this.hover, th.fg, 1);
    if (this.sel) box(this.sel, th.sel, 2.5);
    // Flow arrows for the selected event.
    if (this.sel && this.flows.length) {
      const from = this.laneY(this.sel.base, this.sel.lane);
      ctx.strokeStyle = th.flow;
      ctx.fillStyle = th.flow;
      ctx.lineWidth = 1.5;
      for (const f of this.flows) {
        const p = this.laneY(f.base, f.lane);
        if (!p || !from) continue;
        const selX = X(this.sel.ts), fx = X(f.ts);
        const a = f.up ? { x: fx, y: p.y } : { x: selX, y: from.y };
        const b = f.up ? { x: selX, y: from.y } : { x: fx, y: p.y };
        arrow(ctx, a, b);
      }
    }
    if (this.area) {
      const a = this.area;
      const x0 = X(Math.min(a.start, a.end)), x1 = X(Math.max(a.start, a.end));
      ctx.fillStyle = th.area;
      if (a.nodes) {
        // The selected rows only, wherever they are scrolled to.
        for (const r of this.pinRows) if (a.nodes.has(r.node)) ctx.fillRect(x0, AXIS_H + r.y, x1 - x0, r.h);
        const off = this.bodyTop - this.scrollTop;
        for (const r of this.bodyRows) if (a.nodes.has(r.node)) ctx.fillRect(x0, off + r.y, x1 - x0, r.h);
      } else {
        ctx.fillRect(x0, Math.min(a.y0, a.y1), x1 - x0, Math.abs(a.y1 - a.y0));
      }
      ctx.fillStyle = th.accent;
      ctx.fillRect(x0, AXIS_H, 1, this.H - AXIS_H);
      ctx.fillRect(x1 - 1, AXIS_H, 1, this.H - AXIS_H);
    }
  }

  drawAxisOverlay(ctx, tw, nspp) {
    const th = this.theme;
    const X = (t) => (t - this.vp.start) / nspp;
    // Search hits overview along the bottom of the axis.
    ctx.fillStyle = th.hit;
    for (const m of this.marks) {
      const x = X(m.ts);
      if (x >= -2 && x <= tw) ctx.fillRect(Math.max(x, 0), AXIS_H - 5, Math.min(Math.max(2, (m.dur || 0) / nspp), tw - x), 4);
    }
    const d = this.drag;
    if (d && d.mode === 'axis' && d.moved) {
      const x0 = Math.min(d.x0, d.x) - this.labelW, x1 = Math.max(d.x0, d.x) - this.labelW;
      ctx.fillStyle = th.area;
      ctx.fillRect(x0, 0, x1 - x0, this.H);
      ctx.fillStyle = th.fg;
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText(this.o.fmtDur((x1 - x0) * nspp), x0 + 4, 12);
    }
    if (this.area) {
      const a = this.area;
      const x0 = X(Math.min(a.start, a.end)), x1 = X(Math.max(a.start, a.end));
      ctx.fillStyle = th.accent;
      ctx.fillRect(x0, AXIS_H - 3, x1 - x0, 3);
    }
  }

  // ------------------------------------------------------------ hit testing

  /** The slice or counter sample under canvas (x, y), or null. */
  hitTest(x, y) {
    if (x < this.labelW || x > this.labelW + this.tlW) return null;
    const at = this.rowAt(y);
    if (!at || !at.row.node.track) return null;
    const t = at.row.node.track, nspp = this.nsPerPx();
    const time = this.tOf(x);
    const { r, k0, k1 } = this.frameRes || { r: 1, k0: 0, k1: 0 };
    if (t.kind === 'counter') {
      const b = t.base?.[0];
      if (!b) return null;
      const entries = this.tiles.cover('counters', String(b.id), r, k0, k1);
      const n = t.source === 'neuron_hbm_usage' ? (t.series?.length || 23) : (t.series?.length || 1);
      const series = [];
      for (let s = 0; s < n; s++) {
        const pts = joinSeries(entries, s, time - nspp * 2, time);
        const i = lastAtOrBefore(pts.ts, time);
        if (i >= 0) series.push({ idx: s, name: t.series?.[s] ?? `series ${s}`, ts: pts.ts[i], min: pts.min[i], max: pts.max[i], last: pts.last[i], count: pts.count[i] });
      }
      return series.length ? { kind: 'counter', track: t, time, series, y: at.top } : null;
    }
    let laneIdx = Math.floor((y - at.top - 2) / LANE_H);
    for (const b of t.base || []) {
      const n = b.lanes || 1;
      if (laneIdx >= n) { laneIdx -= n; continue; }
      const entries = this.tiles.cover('slices', String(b.id), r, k0, k1);
      const tol = nspp * 2;
      let best = null, bestD = Infinity;
      for (const e of entries) {
        const L = e.lanes[laneIdx];
        if (!L) continue;
        for (let i = 0; i < L.ts.length; i++) {
          const s = L.ts[i];
          if (s > time + tol) break;
          const en = s + Math.max(L.dur[i], nspp);
          if (en < time - tol) continue;
          const d = time < s ? s - time : time > en ? time - en : 0;
          if (d < bestD || (d === bestD && best && L.dur[i] < best.dur)) {
            bestD = d;
            best = { kind: 'slice', base: String(b.id), lane: laneIdx, ts: s, dur: L.dur[i], name: this.tiles.names.get(L.name[i]) ?? '', grp: L.grp[i] ? this.tiles.names.get(L.grp[i]) : '', count: L.count[i], track: t, source: b.source || t.source, baseInfo: b };
          }
        }
      }
      if (best) best.key = `${best.base}:${best.lane}:${this.vp.abs(best.ts)}`;
      return best;
    }
    return null;
  }

  setHover(h, x, y) {
    const same = h && this.hover && h.key === this.hover.key && h.kind === this.hover.kind;
    if (!same || h?.kind === 'counter') {
      this.hover = h?.kind === 'slice' ? h : null;
      this.dirty();
    }
    this.o.onHover?.(h, x, y);
  }

  // ------------------------------------------------------------ input

  pos(e) {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  down(e) {
    if (e.button !== 0) return;
    this.canvas.focus({ preventScroll: true });
    const { x, y } = this.pos(e);
    this.canvas.setPointerCapture(e.pointerId);
    let mode;
    if (Math.abs(x - this.labelW) < 5) mode = 'resize';
    else if (x < this.labelW) mode = 'label';
    else if (y < AXIS_H) mode = 'axis';
    else if (e.shiftKey) mode = 'area';
    else mode = 'pan';
    this.drag = { mode, x0: x, y0: y, x, y, start: this.vp.start, moved: false, t0: this.tOf(x), ctrl: e.ctrlKey || e.metaKey };
    this.setHover(null);
  }

  move(e) {
    const { x, y } = this.pos(e);
    this.mouse = { x, y };
    const d = this.drag;
    if (!d) {
      this.canvas.style.cursor = Math.abs(x - this.labelW) < 5 ? 'col-resize' : y < AXIS_H && x > this.labelW ? 'text' : 'default';
      const at = x < this.labelW ? this.rowAt(y) : null;
      const hr = at?.row.node || null;
      if (hr !== this.hoverRow) { this.hoverRow = hr; this.dirty(); }
      this.setHover(this.hitTest(x, y), e.clientX, e.clientY);
      return;
    }
    d.x = x; d.y = y;
    if (Math.abs(x - d.x0) + Math.abs(y - d.y0) > DRAG_PX) d.moved = true;
    if (!d.moved) return;
    if (d.mode === 'pan') {
      this.canvas.style.cursor = 'grabbing';
      this.vp.set(d.start - (x - d.x0) * this.nsPerPx(), d.start - (x - d.x0) * this.nsPerPx() + this.vp.dur);
      this.scroller.scrollTop += (d.lastY ?? d.y0) - y;
      d.lastY = y;
    } else if (d.mode === 'resize') {
      this.labelW = Math.max(MIN_LABEL_W, Math.min(this.W * 0.6, x));
      this.dirty();
    } else if (d.mode === 'area') {
      this.area = { start: d.t0, end: this.tOf(x), y0: d.y0, y1: y };
      this.dirty();
    } else this.dirty();
  }

  up(e) {
    const d = this.drag;
    this.drag = null;
    this.canvas.style.cursor = 'default';
    if (!d) return;
    const { x, y } = this.pos(e);
    if (d.mode === 'axis' && d.moved) {
      const a = this.tOf(Math.min(d.x0, x)), b = this.tOf(Math.max(d.x0, x));
      if (b - a > 0) this.vp.set(a, b);
      this.dirty();
      return;
    }
    if (d.mode === 'area' && d.moved) {
      this.finishArea(d, x, y);
      return;
    }
    if (d.moved) { this.dirty(); return; }
    if (d.mode === 'label') { this.labelClick(x, y); return; }
    if (d.mode === 'pan' || d.mode === 'area') {
      const h = this.hitTest(x, y);
      if (this.area && !h) { this.area = null; this.o.onArea?.(null); }
      if (h?.kind === 'slice') {
        if (h.count > 1) {
          // A run of one event as wide as the view: zoom in around the click.
          if (h.dur > this.vp.dur / 4) this.vp.zoom(1 / 8, this.tOf(x));
          else this.vp.set(h.ts - h.dur * 0.1, h.ts + h.dur * 1.1);
          return;
        }
        if (d.ctrl) { this.o.onOpen?.(h); return; }
        this.select(h);
      } else if (!h) this.select(null);
      this.dirty();
    }
  }

  finishArea(d, x, y) {
    const a = this.rowAt(Math.min(d.y0, y)) || this.rowAt(this.bodyTop);
    const b = this.rowAt(Math.max(d.y0, y)) || this.rowAt(this.H - 1);
    const bases = [];
    const nodes = new Set();
    const add = (node) => {
      nodes.add(node);
      if (node.track?.kind === 'slices') for (const bb of node.track.base || []) bases.push(String(bb.id));
      if (this.tree.isCollapsed(node) || !node.track) for (const ch of node.children) add(ch);
    };
    if (a && b) {
      const rows = a.pinned === b.pinned ? (a.pinned ? this.pinRows : this.tree.rows) : null;
      if (rows) {
        const i0 = rows.indexOf(a.row), i1 = rows.indexOf(b.row);
        for (let i = Math.min(i0, i1); i <= Math.max(i0, i1); i++) add(rows[i].node);
      }
    }
    const s = Math.min(d.t0, this.tOf(x)), e = Math.max(d.t0, this.tOf(x));
    this.area = { start: s, end: e, y0: d.y0, y1: y, nodes };
    this.o.onArea?.({ start: s, end: e, bases: [...new Set(bases)] });
    this.dirty();
  }

  labelClick(x, y) {
    const at = this.rowAt(y);
    if (!at) return;
    const n = at.row.node;
    if (n.track && x > this.labelW - 28) { this.togglePin(n.track); return; }
    if (n.children.length) { this.tree.toggle(n); this.relayout(); }
  }

  dblclick(e) {
    const { x, y } = this.pos(e);
    const h = this.hitTest(x, y);
    if (h?.kind === 'slice') this.vp.set(h.ts - h.dur * 0.1, h.ts + h.dur * 1.1);
  }

  wheel(e) {
    e.preventDefault();
    const { x, y } = this.pos(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.H : 1;
    const dx = e.deltaX * unit, dy = e.deltaY * unit;
    const onAxis = y < AXIS_H && x > this.labelW;
    if (e.ctrlKey || e.metaKey || onAxis) {
      const at = x > this.labelW ? this.tOf(x) : undefined;
      this.vp.zoom(Math.exp(dy * 0.002), at);
    } else if (e.shiftKey) {
      this.vp.pan((dy || dx) * this.nsPerPx());
    } else if (Math.abs(dx) > Math.abs(dy)) {
      this.vp.pan(dx * this.nsPerPx());
    } else {
      this.scroller.scrollTop += dy;
    }
  }

  /** Key down/up from the page (W/A/S/D, arrows).  Returns true if handled. */
  key(e, down) {
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (!['w', 'a', 's', 'd', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'].includes(k)) return false;
    if (down) {
      if (!this.keys.has(k)) { this.keys.add(k); this.lastKeyT = null; this.dirty(); }
    } else this.keys.delete(k);
    return true;
  }

  keyStep(now) {
    const dt = this.lastKeyT ? Math.min(now - this.lastKeyT, 50) / 1000 : 1 / 60;
    this.lastKeyT = now;
    const k = this.keys;
    const zoom = (k.has('w') || k.has('ArrowUp') ? -1 : 0) + (k.has('s') || k.has('ArrowDown') ? 1 : 0);
    const pan = (k.has('d') || k.has('ArrowRight') ? 1 : 0) - (k.has('a') || k.has('ArrowLeft') ? 1 : 0);
    const at = this.mouse && this.mouse.x > this.labelW ? this.tOf(this.mouse.x) : undefined;
    if (zoom) this.vp.zoom(Math.exp(zoom * 2.8 * dt), at);
    if (pan) this.vp.pan(pan * this.vp.dur * 1.2 * dt);
  }

  /** Clears held keys (window blur). */
  releaseKeys() { this.keys.clear(); }

  // ------------------------------------------------------------ selection

  /** Selects an event ({base, lane, ts, dur, key, name}) or clears with null. */
  select(sel, notify = true) {
    this.sel = sel;
    this.flows = [];
    this.dirty();
    if (notify) this.o.onSelect?.(sel);
  }

  /** Flow partners of the selection: [{base, lane, ts, up}]. */
  setFlows(list) { this.flows = list; this.dirty(); }

  /** Search hits [{base, lane, ts, dur}] and the current one. */
  setMarks(list, cur = null) { this.marks = list; this.markCur = cur; this.dirty(); }

  clearArea() { this.area = null; this.dirty(); }
}

const fitCache = new Map();

/** `s` cut with an ellipsis to fit `room` px in the current font (cached). */
function fit(ctx, s, room) {
  if (room <= 10) return '';
  const key = `${ctx.font}|${room}|${s}`;
  let r = fitCache.get(key);
  if (r === undefined) {
    if (fitCache.size > 5000) fitCache.clear();
    r = fitSlow(ctx, s, room);
    fitCache.set(key, r);
  }
  return r;
}

function fitSlow(ctx, s, room) {
  if (ctx.measureText(s).width <= room) return s;
  let lo = 0, hi = s.length;
  while (lo < hi) {
    const m = (lo + hi + 1) >> 1;
    if (ctx.measureText(s.slice(0, m) + '…').width <= room) lo = m; else hi = m - 1;
  }
  return s.slice(0, lo) + '…';
}

/** `s` with its start cut ("…/NC:0/neuron_hbm_usage") to fit `room` px. */
function fitLeft(ctx, s, room) {
  if (room <= 10 || ctx.measureText(s).width <= room) return room <= 10 ? '' : s;
  let lo = 0, hi = s.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (ctx.measureText('…' + s.slice(m)).width <= room) hi = m; else lo = m + 1;
  }
  return '…' + s.slice(lo);
}

/** A small push-pin glyph centred at (x, y). */
function pin(ctx, x, y, color, filled) {
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.arc(x, y - 2, 3.5, 0, Math.PI * 2);
  if (filled) ctx.fill(); else ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x, y + 1.5);
  ctx.lineTo(x, y + 7);
  ctx.stroke();
}

function lastAtOrBefore(ts, t) {
  let lo = 0, hi = ts.length - 1, r = -1;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (ts[m] <= t) { r = m; lo = m + 1; } else hi = m - 1;
  }
  return r;
}

function arrow(ctx, a, b) {
  const dx = Math.max(Math.abs(b.x - a.x) / 2, 20);
  ctx.beginPath();
  ctx.moveTo(a.x, a.y);
  ctx.bezierCurveTo(a.x + dx, a.y, b.x - dx, b.y, b.x, b.y);
  ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(b.x, b.y);
  ctx.lineTo(b.x - 7, b.y - 4);
  ctx.lineTo(b.x - 7, b.y + 4);
  ctx.closePath();
  ctx.fill();
}

