// paint.js -- the paint step: draws a state and its layout on the canvas
// from the tiles already cached.  It never changes the state and never
// fetches; what it keeps between frames is drawing memory only (colours,
// the counter scales that grow as larger values are seen, the batch, the
// hit counts of the groups, the track label column of the last frame).
// Counter tracks are painted by counters.js.

import { LANE_H, GROUP_H } from './tracktree.js';
import { AXIS_H, layout, trackMatches, descendants } from './layout.js';
import { laneY } from './hittest.js';
import { SliceBatch, drawAxis, drawGrid, axisTicks } from './render.js';
import { colorIndex, colorFill } from './colors.js';
import { Counters } from './counters.js';
import { drawAnnots, drawAnnotHeads } from './annotdraw.js';
import { TILE_PX } from './tiles.js';
import { fmtInt } from '../format.js';

const DENSITY_H = 4; // the strip of search hit density at the bottom of a row

export class Painter {
  /** ctx: the canvas 2D context; fmtDur(ns): duration text for the corner; hbmCapacity: bytes or 0. */
  constructor(ctx, fmtDur, hbmCapacity) {
    this.ctx = ctx;
    this.fmtDur = fmtDur;
    this.batch = new SliceBatch();
    this.counters = new Counters(hbmCapacity);
    this.density = [[], [], [], []]; // rects [x, y, w, ...] per density level (1/4 .. 4/4)
    this.colMax = new Float32Array(0); // per pixel column: busiest lane of a collapsed group
    this.colLane = new Float32Array(0); // per pixel column: busy fraction of one lane
    this.hitMemo = { counts: null, byNode: new Map() };
    this.labelCol = { canvas: null, key: null }; // the label column drawn, and what it was drawn from
    this.readTheme();
  }

  /** Reads the colours of the current CSS theme. */
  readTheme() {
    const cs = getComputedStyle(document.documentElement);
    const v = (n) => cs.getPropertyValue(n).trim();
    this.theme = {
      bg: v('--tl-bg'), fg: v('--fg'), dim: v('--fg-dim'), grid: v('--tl-grid'), alt: v('--tl-alt'),
      labelBg: v('--tl-label-bg'), axisBg: v('--tl-axis-bg'), border: v('--border'), group: v('--tl-group'),
      sel: v('--tl-sel'), hit: v('--tl-hit'), accent: v('--accent'), area: v('--tl-area'), flow: v('--tl-flow'),
      outside: v('--tl-outside'), dark: cs.colorScheme !== 'light',
    };
  }

  /** Forgets the counter scales (new tracks or data). */
  reset() { this.counters.reset(); }

  /** Draws state s; `busy`: tiles are loading (the progress line). */
  paint(s, tiles, busy) {
    const L = layout(s);
    const ctx = this.ctx, th = this.theme;
    const W = s.W, H = s.H, LW = s.labelW, tw = L.tw, nspp = L.nspp;
    ctx.setTransform(s.dpr, 0, 0, s.dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, W, H);
    const st = L.scrollTop;
    this.axis = axisTicks(ctx, s.start - s.timeOrigin, nspp, tw);

    // Timeline area.
    ctx.save();
    ctx.translate(LW, 0);
    this.rows(s, L, tiles, L.pinRows, AXIS_H, AXIS_H, L.pinH);
    this.rows(s, L, tiles, L.bodyRows, L.bodyTop - st, L.bodyTop, H - L.bodyTop);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, tw, H - AXIS_H);
    ctx.clip();
    this.overlays(s, L);
    drawAnnots(ctx, s, L);
    ctx.restore();
    const stickyH = L.sticky.length * GROUP_H;
    if (stickyH) {
      ctx.fillStyle = th.group;
      ctx.fillRect(0, L.bodyTop, tw, stickyH);
      ctx.fillStyle = th.border;
      ctx.fillRect(0, L.bodyTop + stickyH - 1, tw, 1);
    }
    drawAxis(ctx, s.start - s.timeOrigin, nspp, tw, AXIS_H, th, this.axis);
    this.axisOverlay(s, L);
    this.annotsDrawn = drawAnnotHeads(ctx, s, L, this.theme);
    ctx.restore();

    this.labelColumn(s, L);
    if (L.pinH) {
      ctx.fillStyle = th.border;
      ctx.fillRect(0, L.bodyTop - 2, W, 2);
    }
    // Corner: the duration of the visible window.
    ctx.fillStyle = th.axisBg;
    ctx.fillRect(0, 0, LW, AXIS_H);
    ctx.fillStyle = th.dim;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'alphabetic';
    ctx.fillText('visible window', 10, 35);
    ctx.fillStyle = th.fg;
    ctx.font = '600 12px system-ui, sans-serif';
    ctx.fillText(this.fmtDur(s.end - s.start, nspp), 94, 35);
    ctx.fillStyle = th.border;
    ctx.fillRect(0, AXIS_H - 1, LW, 1);
    ctx.fillRect(LW - 1, 0, 1, H);
    if (busy) {
      ctx.fillStyle = th.accent;
      ctx.fillRect(LW, AXIS_H - 2, tw * ((Date.now() % 1000) / 1000), 2);
    }
  }

  /** Draws rows (their content and backgrounds) clipped to [clipTop, clipTop+clipH). */
  rows(s, L, tiles, rows, offY, clipTop, clipH) {
    if (!rows.length || clipH <= 0) return;
    const ctx = this.ctx, th = this.theme, tw = L.tw, nspp = L.nspp;
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
    const x0 = (s.min - s.start) / nspp, x1 = (s.max - s.start) / nspp;
    ctx.fillStyle = th.outside;
    if (x0 > 0) ctx.fillRect(0, clipTop, x0, clipH);
    if (x1 < tw) ctx.fillRect(x1, clipTop, tw - x1, clipH);
    drawGrid(ctx, this.axis, clipTop, clipTop + clipH, th.grid);
    const { r, k0, k1 } = L.res;
    const batch = this.batch;
    batch.reset();
    const counterRows = [];
    for (const row of rows) {
      const t = row.node.track;
      const sum = !t && L.summary.get(row.node);
      if (sum) this.summaryRow(s, L, tiles, sum, offY + row.y);
      if (!t) continue;
      const top = offY + row.y;
      if (t.kind === 'counter') { counterRows.push({ t, top, h: row.h }); continue; }
      let lane = 0;
      for (const b of t.base || []) {
        const entries = tiles.cover('slices', String(b.id), r, k0, k1);
        const n = b.lanes || 1;
        for (let l = 0; l < n; l++) {
          const y = top + 2 + (lane + l) * LANE_H;
          if (y > clipTop + clipH || y + LANE_H < clipTop) continue;
          batch.lane(entries, l, s.start, nspp, tw, y, tiles.names);
        }
        lane += n;
      }
    }
    batch.fill(ctx, tw, th.fg, th.dark);
    this.counters.prepare(s, L, tiles, counterRows);
    this.counters.draw(ctx, s, L, th);
    if (s.density) {
      for (const row of rows) {
        const c = this.rowDensity(s.density, row.node.track ? [row.node.track] : L.summary.get(row.node));
        if (c) this.densityStrip(c, s, L, offY + row.y + row.h - DENSITY_H - 1);
      }
      this.fillDensity();
    }
    // Row separators.
    ctx.fillStyle = th.grid;
    for (const row of rows) ctx.fillRect(0, offY + row.y + row.h - 1, tw, 1);
    ctx.restore();
  }

  /**
   * A collapsed group: per pixel column, the busy fraction of the busiest
   * lane of the event tracks under it, drawn as a bar from the bottom of
   * its row, so the group's idle time shows as gaps and low bars.
   */
  summaryRow(s, L, tiles, tracks, top) {
    const { r, k0, k1 } = L.res, n = Math.ceil(L.tw);
    if (this.colMax.length < n) { this.colMax = new Float32Array(n); this.colLane = new Float32Array(n); }
    const mx = this.colMax, ln = this.colLane;
    mx.fill(0, 0, n);
    for (const t of tracks) {
      for (const b of t.base || []) {
        const entries = tiles.cover('slices', String(b.id), r, k0, k1);
        for (let l = 0; l < (b.lanes || 1); l++) {
          const [lo, hi] = laneBusy(entries, l, s.start, L.nspp, n, ln);
          for (let x = lo; x < hi; x++) { if (ln[x] > mx[x]) mx[x] = ln[x]; ln[x] = 0; }
        }
      }
    }
    const ctx = this.ctx, H = GROUP_H - 6, bottom = top + 3 + H;
    ctx.fillStyle = this.theme.accent;
    let x0 = 0, h0 = 0;
    for (let x = 0; x <= n; x++) {
      const h = x < n && mx[x] > 0 ? Math.max(1, Math.round(Math.min(mx[x], 1) * H)) : 0;
      if (h === h0) continue;
      if (h0) ctx.fillRect(x0, bottom - h0, x - x0, h0);
      x0 = x;
      h0 = h;
    }
  }

  /** The search hits per bucket of `tracks` (null: none), summed over their base tracks. */
  rowDensity(d, tracks) {
    let sum = null;
    for (const t of tracks || []) {
      for (const b of t.base || []) {
        const c = d.tracks.get(String(b.id));
        if (!c) continue;
        if (!sum) { sum = Array.from(c); continue; }
        for (let i = 0; i < c.length; i++) sum[i] += c[i];
      }
    }
    return sum;
  }

  /**
   * Adds a strip of hit density at y: a rectangle per bucket with hits, of
   * one of four levels (log scale against the busiest bucket of any track).
   */
  densityStrip(counts, s, L, y) {
    const d = s.density, k = Math.log1p(d.max), tw = L.tw;
    let lv0 = 0, x0 = 0, x1 = 0;
    const put = () => { if (lv0) this.density[lv0 - 1].push(x0, y, x1 - x0); };
    for (let i = 0; i < counts.length; i++) {
      if (!counts[i]) continue;
      const a = Math.max((d.start + i * d.w - s.start) / L.nspp, 0), b = Math.min(a + d.w / L.nspp, tw);
      if (b < 0 || a > tw) continue;
      const lv = Math.min(4, Math.max(1, Math.ceil((4 * Math.log1p(counts[i])) / k)));
      if (lv === lv0 && a <= x1 + 0.5) { x1 = Math.max(b, a + 1); continue; }
      put();
      lv0 = lv; x0 = a; x1 = Math.max(b, a + 1);
    }
    put();
  }

  /** Fills the density strips added since the last call. */
  fillDensity() {
    const ctx = this.ctx;
    ctx.fillStyle = this.theme.hit;
    for (let l = 0; l < 4; l++) {
      const a = this.density[l];
      ctx.globalAlpha = (l + 1) / 4;
      for (let j = 0; j < a.length; j += 3) ctx.fillRect(a[j], a[j + 1], a[j + 2], DENSITY_H);
      a.length = 0;
    }
    ctx.globalAlpha = 1;
  }

  /** The search hits of node n (a track, or the tracks under a group), or 0. */
  hitCount(counts, n) {
    const m = this.hitMemo;
    if (m.counts !== counts) { m.counts = counts; m.byNode.clear(); }
    let v = m.byNode.get(n);
    if (v === undefined) {
      v = 0;
      for (const t of n.track ? [n.track] : descendants(n)) for (const b of t.base || []) v += counts.get(String(b.id)) || 0;
      m.byNode.set(n, v);
    }
    return v;
  }

  /**
   * The track label column: drawn into a canvas of its own when what it
   * shows changed, else the last one copied (panning and zooming, most
   * frames, change nothing of it).
   */
  labelColumn(s, L) {
    const lc = this.labelCol;
    const key = [L.rows, L.scrollTop, L.pinH, L.bodyRows.length, L.sticky.length, s.labelW, s.H, s.dpr, s.hoverRow,
      s.hitCounts, s.filter, s.pins, s.collapsed, s.tree, s.themeGen, this.theme];
    const w = Math.ceil(s.labelW * s.dpr), h = Math.round(s.H * s.dpr);
    if (!lc.key || key.some((v, i) => v !== lc.key[i])) {
      const c = (lc.canvas ||= document.createElement('canvas'));
      if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
      const main = this.ctx;
      this.ctx = c.getContext('2d');
      try {
        this.ctx.setTransform(s.dpr, 0, 0, s.dpr, 0, 0);
        this.ctx.clearRect(0, 0, s.labelW, s.H);
        this.labelRows(s, L);
      } finally {
        this.ctx = main;
      }
      lc.key = key;
    }
    this.ctx.drawImage(lc.canvas, 0, 0, w, h, 0, 0, w / s.dpr, h / s.dpr);
  }

  /** The track labels of the pinned, scrolling and sticky rows. */
  labelRows(s, L) {
    const ctx = this.ctx, st = L.scrollTop, H = s.H, stickyH = L.sticky.length * GROUP_H;
    this.labels(s, L.pinRows, AXIS_H, AXIS_H, L.pinH, true);
    this.labels(s, L.bodyRows, L.bodyTop - st, L.bodyTop, H - L.bodyTop);
    if (stickyH) {
      // The groups of the rows at the top, kept in view while scrolling.
      this.labels(s, L.sticky.map((r, i) => ({ ...r, y: i * GROUP_H, h: GROUP_H })), L.bodyTop, L.bodyTop, stickyH);
      ctx.fillStyle = this.theme.border;
      ctx.fillRect(0, L.bodyTop + stickyH - 1, s.labelW, 1);
    }
  }

  /** Track names; `full`: the whole path (pinned rows), cut on the left. */
  labels(s, rows, offY, clipTop, clipH, full = false) {
    if (!rows.length || clipH <= 0) return;
    const ctx = this.ctx, th = this.theme, LW = s.labelW;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, clipTop, LW, clipH);
    ctx.clip();
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(0, clipTop, LW, clipH);
    ctx.textBaseline = 'middle';
    const hoverRow = s.hoverRow;
    const marked = s.filter.re && !s.filter.only;
    for (const row of rows) {
      const top = offY + row.y, n = row.node, t = n.track;
      const x = 8 + row.depth * 12;
      const collapsed = s.collapsed.get(n.path) === true;
      if (!t) { ctx.fillStyle = th.group; ctx.fillRect(0, top, LW, row.h); }
      if (hoverRow === n) { ctx.fillStyle = th.alt; ctx.fillRect(0, top, LW, row.h); }
      const mid = top + Math.min(row.h, GROUP_H) / 2;
      if (row.group) {
        ctx.fillStyle = th.dim;
        ctx.font = '10px system-ui, sans-serif';
        ctx.fillText(collapsed ? '▶' : '▼', x, mid);
      }
      let lx = x + 14;
      if (t) {
        ctx.fillStyle = colorFill(colorIndex(t.kind === 'counter' ? 'counter' : t.source, t.kind === 'counter' ? t.source : t.name, ''));
        ctx.fillRect(lx, mid - 4, 3, 8);
        lx += 8;
      }
      ctx.fillStyle = t ? (marked && trackMatches(s, t) ? th.accent : th.fg) : th.dim;
      ctx.font = t ? '12px system-ui, sans-serif' : '600 12px system-ui, sans-serif';
      const pinned = t && s.pins.has(t.name);
      let room = LW - lx - (t ? 26 : 8);
      const hits = s.hitCounts ? this.hitCount(s.hitCounts, n) : 0;
      if (hits) {
        // The search hits of the row, right-aligned before the pin.
        const txt = fmtInt(hits), font = ctx.font;
        ctx.font = '11px system-ui, sans-serif';
        const w = ctx.measureText(txt).width;
        ctx.fillStyle = th.hit;
        ctx.fillText(txt, lx + room - w, mid);
        ctx.font = font;
        room -= w + 6;
        ctx.fillStyle = t ? (marked && trackMatches(s, t) ? th.accent : th.fg) : th.dim;
      }
      let label = full ? n.path : n.label;
      if (row.group && collapsed && row.count > 1) label += `  (${row.count})`;
      ctx.fillText(full ? fitLeft(ctx, label, room) : fit(ctx, label, room), lx, mid);
      if (t && (pinned || hoverRow === n)) pin(ctx, LW - 16, mid, pinned ? th.accent : th.dim, pinned);
      ctx.fillStyle = th.grid;
      ctx.fillRect(0, top + row.h - 1, LW, 1);
    }
    ctx.restore();
  }

  /**
   * Selection, hover, search marks, dependency links, flows and the area
   * selection.  The arrows drawn are kept in this.arrows: [{kind ('link' |
   * 'flow'), from, to}] (event keys, null when unknown).
   */
  overlays(s, L) {
    const ctx = this.ctx, th = this.theme, tw = L.tw, nspp = L.nspp;
    const X = (t) => (t - s.start) / nspp;
    const box = (ev, color, w) => {
      const p = laneY(s, L, ev.base, ev.lane);
      if (!p) return;
      const x0 = X(ev.ts), x1 = Math.max(X(ev.ts + (ev.dur || 0)), x0 + 2);
      if (x1 < -4 || x0 > tw + 4) return;
      ctx.strokeStyle = color;
      ctx.lineWidth = w;
      ctx.strokeRect(Math.max(x0, -4) - w / 2, p.y - LANE_H / 2 + 0.5, Math.min(x1, tw + 4) - Math.max(x0, -4) + w, LANE_H - 2);
    };
    const cur = s.markCur;
    for (const m of s.marks) if (m.key !== cur?.key) box(m, th.hit, 1.5);
    if (cur) box(cur, th.hit, 3);
    const hov = s.hover?.hit;
    if (hov?.kind === 'slice' && !s.drag) box(hov, th.fg, 1);
    if (hov?.kind === 'counter' && !s.drag) this.counters.cursor(ctx, s, L, th, hov.y, hov.h);
    if (s.sel) box(s.sel, th.sel, 2.5);
    this.arrows = [];
    const shown = (a, b) => Math.max(a.x, b.x) >= 0 && Math.min(a.x, b.x) <= tw;
    // Dependency links of the visible events: from the end of one to the start of the other.
    if (s.links.length) {
      ctx.save();
      ctx.globalAlpha = 0.45;
      ctx.strokeStyle = th.flow;
      ctx.fillStyle = th.flow;
      ctx.lineWidth = 1;
      for (const k of s.links) {
        const p = laneY(s, L, k.from.base, k.from.lane), q = laneY(s, L, k.to.base, k.to.lane);
        const a = p && { x: X(k.from.ts + (k.from.dur || 0)), y: p.y }, b = q && { x: X(k.to.ts), y: q.y };
        if (!a || !b || !shown(a, b)) continue;
        arrow(ctx, a, b);
        this.arrows.push({ kind: 'link', from: k.from.key ?? null, to: k.to.key ?? null });
      }
      ctx.restore();
    }
    // Flow arrows for the selected event (fromEnd: from the end of the upstream one).
    const from = s.sel && s.flows.length ? laneY(s, L, s.sel.base, s.sel.lane) : null;
    if (from) {
      ctx.strokeStyle = th.flow;
      ctx.fillStyle = th.flow;
      ctx.lineWidth = 1.5;
      for (const f of s.flows) {
        const p = laneY(s, L, f.base, f.lane);
        if (!p) continue;
        const end = (t, dur) => t + (f.fromEnd ? dur || 0 : 0);
        const selX = X(f.up ? s.sel.ts : end(s.sel.ts, s.sel.dur)), fx = X(f.up ? end(f.ts, f.dur) : f.ts);
        const a = f.up ? { x: fx, y: p.y } : { x: selX, y: from.y };
        const b = f.up ? { x: selX, y: from.y } : { x: fx, y: p.y };
        if (!shown(a, b)) continue;
        arrow(ctx, a, b);
        this.arrows.push({ kind: 'flow', from: f.up ? f.key ?? null : s.sel.key ?? null, to: f.up ? s.sel.key ?? null : f.key ?? null });
      }
    }
    if (s.area) {
      const a = s.area;
      const x0 = X(Math.min(a.start, a.end)), x1 = X(Math.max(a.start, a.end));
      ctx.fillStyle = th.area;
      if (a.nodes) {
        // The selected rows only, wherever they are scrolled to.
        for (const r of L.pinRows) if (a.nodes.has(r.node)) ctx.fillRect(x0, AXIS_H + r.y, x1 - x0, r.h);
        const off = L.bodyTop - L.scrollTop;
        for (const r of L.bodyRows) if (a.nodes.has(r.node)) ctx.fillRect(x0, off + r.y, x1 - x0, r.h);
      } else {
        ctx.fillRect(x0, Math.min(a.y0, a.y1), x1 - x0, Math.abs(a.y1 - a.y0));
      }
      ctx.fillStyle = th.accent;
      ctx.fillRect(x0, AXIS_H, 1, s.H - AXIS_H);
      ctx.fillRect(x1 - 1, AXIS_H, 1, s.H - AXIS_H);
    }
  }

  axisOverlay(s, L) {
    const ctx = this.ctx, th = this.theme, tw = L.tw, nspp = L.nspp;
    const X = (t) => (t - s.start) / nspp;
    // Search hits overview along the bottom of the axis.
    ctx.fillStyle = th.hit;
    for (const m of s.marks) {
      const x = X(m.ts);
      if (x >= -2 && x <= tw) ctx.fillRect(Math.max(x, 0), AXIS_H - 5, Math.min(Math.max(2, (m.dur || 0) / nspp), tw - x), 4);
    }
    if (s.density) {
      this.densityStrip(s.density.total, s, L, AXIS_H - 5);
      this.fillDensity();
    }
    const d = s.drag;
    if (d && d.mode === 'axis' && d.moved) {
      const x0 = Math.min(d.x0, d.x) - s.labelW, x1 = Math.max(d.x0, d.x) - s.labelW;
      ctx.fillStyle = th.area;
      ctx.fillRect(x0, 0, x1 - x0, s.H);
      ctx.fillStyle = th.fg;
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText(this.fmtDur((x1 - x0) * nspp, nspp), x0 + 4, 12);
    }
    if (s.area) {
      const a = s.area;
      const x0 = X(Math.min(a.start, a.end)), x1 = X(Math.max(a.start, a.end));
      ctx.fillStyle = th.accent;
      ctx.fillRect(x0, AXIS_H - 3, x1 - x0, 3);
    }
    // A moved origin: a marker where time 0 is.
    const xo = X(s.timeOrigin);
    if (s.timeOrigin !== 0 && xo >= -6 && xo <= tw + 6) {
      ctx.fillStyle = th.accent;
      ctx.fillRect(Math.round(xo) - 1, 0, 2, AXIS_H);
      ctx.beginPath();
      ctx.moveTo(xo - 5, 0); ctx.lineTo(xo + 5, 0); ctx.lineTo(xo, 7);
      ctx.fill();
    }
  }
}

/**
 * Adds to out[x] the busy fraction of pixel column x (0..n-1) of lane l of
 * tile entries (tiles.js; t0 the time of column 0): each row spreads its
 * busy time evenly over its span, counted inside its own tile only (a row
 * reaching over a tile edge comes with both tiles).  Returns [lo, hi): the
 * columns set.
 */
function laneBusy(entries, l, t0, nspp, n, out) {
  let lo = n, hi = 0;
  for (const e of entries) {
    const L = e.lanes[l];
    if (!L) continue;
    const span = e.r * TILE_PX, tx0 = (e.k * span - t0) / nspp, tx1 = ((e.k + 1) * span - t0) / nspp;
    const ts = L.ts, dur = L.dur, busy = L.busy;
    for (let i = 0; i < ts.length; i++) {
      if (!(dur[i] > 0)) continue;
      const xs = Math.max((ts[i] - t0) / nspp, tx0), xe = Math.min((ts[i] + dur[i] - t0) / nspp, tx1);
      if (xe <= 0 || xs >= n || xe <= xs) continue;
      const f = Math.min(busy[i] / dur[i], 1);
      const c0 = Math.max(Math.floor(xs), 0), c1 = Math.min(Math.ceil(xe), n);
      for (let c = c0; c < c1; c++) out[c] += f * (Math.min(xe, c + 1) - Math.max(xs, c));
      if (c0 < lo) lo = c0;
      if (c1 > hi) hi = c1;
    }
  }
  return [lo, hi];
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
