// traceview.js -- what the System and Device Trace Viewers share: the
// timeline, the drawer (Event Details + dependency chain, area selection
// summary), hover tooltips, search hits, selection by event key.

import { get, windowQuery } from '../api.js';
import { Timeline } from '../timeline/timeline.js';
import { esc, fmtDur, fmtTime, fmtInt, fmtValue, fmtBytes, fmtPct } from '../format.js';
import { renderDetails } from '../panels/details.js';
import { sortableTable } from '../panels/table.js';
import { showTip, hideTip, tipHtml } from '../panels/tooltip.js';
import { seriesColor } from '../timeline/colors.js';

/** "<track>:<lane>:<ts>" -> { base, lane, abs } (abs: digit string). */
export function parseKey(key) {
  const m = /^(\d+):(\d+):(\d+)$/.exec(key || '');
  return m ? { base: m[1], lane: +m[2], abs: m[3] } : null;
}

const details = new Map(); // key -> Promise of GET /events/{key}

/** GET /events/{key}, cached. */
function fetchEvent(key, quiet = false) {
  let p = details.get(key);
  if (!p) {
    p = get(`events/${encodeURIComponent(key)}`, null, { quiet });
    p.catch(() => details.delete(key));
    if (details.size > 500) details.delete(details.keys().next().value);
    details.set(key, p);
  }
  return p;
}

export function forgetEvents() { details.clear(); }

export class TraceView {
  /**
   * o: { origin (BigInt), min, max, domain, profile (device id | undefined),
   *      onState(), openDevice(ev) | null, hbmCapacity, onAxisClick({t, tol}) and
   *      nameArea(area) | undefined (flags and named areas),
   *      details(ev, pane, flows) | undefined: adds to the Event Details of
   *      ev shown in pane and to the arrows (flows) drawn for it }
   */
  constructor(root, o) {
    this.o = o;
    this.el = document.createElement('div');
    this.el.className = 'view';
    this.el.innerHTML = `<div class="tl-wrap"></div>
      <div class="drawer"><div class="grip" title="Drag to resize"></div>
        <div class="drawer-head">
          <button class="tab active" data-tab="details">Event Details</button>
          <button class="tab" data-tab="area">Area Selection</button>
          <button class="name-area" hidden title="Keep this area as a named annotation">▭ Name this area</button>
          <span class="spacer"></span>
          <button class="icon toggle" title="Collapse / expand the panel" aria-label="collapse panel">▾</button>
        </div>
        <div class="drawer-body"><div class="pane" data-pane="details"><div class="empty">Click an event to see its details and dependency chain. Shift+drag to summarize an area.</div></div>
          <div class="pane" data-pane="area" hidden><div class="empty">Shift+drag over the tracks to summarize an area (count, total and self time by name).</div></div></div></div>`;
    root.append(this.el);
    this.wrap = this.el.querySelector('.tl-wrap');
    this.drawer = this.el.querySelector('.drawer');
    this.panes = { details: this.el.querySelector('[data-pane=details]'), area: this.el.querySelector('[data-pane=area]') };
    this.setupDrawer();
    this.tl = new Timeline(this.wrap, {
      origin: o.origin, min: o.min, max: o.max, fmtDur, hbmCapacity: o.hbmCapacity,
      fetchBatch: (kind, params, signal, onCoarse) => windowQuery(kind, params, { signal, onCoarse }),
      onSelect: (sel) => this.onSelect(sel),
      onArea: (a) => this.onArea(a),
      onHover: (h, x, y) => this.onHover(h, x, y),
      onView: () => o.onState(),
      onOpen: (h) => fetchEvent(h.key).then((ev) => o.openDevice?.(ev)),
      onAxisClick: (c) => o.onAxisClick?.(c),
    });
    this.nameBtn = this.el.querySelector('.name-area');
    this.nameBtn.onclick = () => { if (this.tl.area) o.nameArea(this.tl.area); };
    this.vp = this.tl.vp;
    this.selEvent = null;
  }

  destroy() { hideTip(); this.tl.destroy(); this.el.remove(); }

  setupDrawer() {
    for (const b of this.el.querySelectorAll('.drawer-head .tab')) b.onclick = () => this.showTab(b.dataset.tab);
    const toggle = this.el.querySelector('.drawer-head .toggle');
    toggle.onclick = () => { this.drawer.classList.toggle('closed'); toggle.textContent = this.drawer.classList.contains('closed') ? '▴' : '▾'; };
    const grip = this.el.querySelector('.grip');
    grip.onpointerdown = (e) => {
      grip.setPointerCapture(e.pointerId);
      const y0 = e.clientY, h0 = this.drawer.offsetHeight;
      grip.onpointermove = (m) => { this.drawer.classList.remove('closed'); this.drawer.style.height = `${Math.max(32, Math.min(innerHeight * 0.8, h0 + y0 - m.clientY))}px`; };
      grip.onpointerup = () => { grip.onpointermove = null; };
    };
  }

  showTab(name) {
    for (const b of this.el.querySelectorAll('.drawer-head .tab')) b.classList.toggle('active', b.dataset.tab === name);
    for (const [k, p] of Object.entries(this.panes)) p.hidden = k !== name;
    if (this.drawer.classList.contains('closed')) this.el.querySelector('.drawer-head .toggle').click();
  }

  relOf(abs) { return this.vp.rel(abs); }

  /** Rel time `rel` as shown: from the origin the user set (the profile start by default), to `step` ns. */
  timeText(rel, step = 1) { return fmtTime(rel - this.tl.state.timeOrigin, step); }

  /** Absolute time (digit string) as shown, with what it is counted from. */
  absText(abs) { return `${this.timeText(this.relOf(abs))} from ${this.tl.state.timeOrigin ? 'the origin' : 'the start'}`; }

  /** Moves time 0 to rel time t (0: the profile start). */
  setOrigin(t) { this.tl.dispatch({ type: 'origin', t }); }

  // ---------------------------------------------------------- selection

  async onSelect(sel) {
    this.o.onState();
    this.selEvent = null;
    const pane = this.panes.details;
    if (!sel) { pane.innerHTML = '<div class="empty">No event selected.</div>'; return; }
    this.showTab('details');
    pane.innerHTML = `<div class="empty">Loading ${esc(sel.name || sel.key)}…</div>`;
    let ev;
    try { ev = await fetchEvent(sel.key); } catch (e) {
      if (this.tl.sel === sel) pane.innerHTML = `<div class="empty">Could not load the event: ${esc(e.message)}</div>`;
      return;
    }
    if (this.tl.sel !== sel) return;
    this.selEvent = ev;
    renderDetails(pane, ev, (abs) => this.absText(abs), {
      jump: (entry) => this.selectKey(entry.key, true),
      openDevice: this.o.openDevice ? (e) => this.o.openDevice(e) : null,
    });
    const flows = [];
    for (const [list, up] of [[ev.upstream || [], true], [ev.downstream || [], false]]) {
      for (const f of list) {
        const p = parseKey(f.key);
        if (p) flows.push({ base: p.base, lane: p.lane, ts: this.relOf(p.abs), up, key: f.key });
      }
    }
    this.o.details?.(ev, pane, flows);
    this.tl.setFlows(flows);
  }

  /**
   * Selects the event `key`; reveal: recentre the timeline on it ('focus':
   * and zoom so it shows whole with a margin, its groups expanded).
   */
  async selectKey(key, reveal) {
    const p = parseKey(key);
    if (!p) return;
    let ev;
    try { ev = await fetchEvent(key); } catch { return; }
    const ts = this.relOf(p.abs), dur = Number(ev.duration_ns || 0);
    if (reveal === 'focus') {
      this.tl.expandTo(p.base);
      this.vp.focus(ts, dur);
    } else if (reveal) {
      this.vp.reveal(ts, dur);
    }
    if (reveal) this.tl.scrollToBase(p.base);
    this.tl.select({ key, base: p.base, lane: p.lane, ts, dur, name: ev.name });
  }

  /** Follows the first upstream (-1) or downstream (+1) event of the selection. */
  follow(dir) {
    const list = dir < 0 ? this.selEvent?.upstream : this.selEvent?.downstream;
    if (list?.length) this.selectKey(list[dir < 0 ? list.length - 1 : 0].key, true);
  }

  fitSelection() {
    const s = this.tl.sel;
    if (s && s.dur > 0) this.vp.set(s.ts - s.dur * 0.15, s.ts + s.dur * 1.15); else this.vp.fit();
  }

  // ---------------------------------------------------------- area

  async onArea(a) {
    const pane = this.panes.area;
    this.areaCtrl?.abort();
    this.nameBtn.hidden = !a || !this.o.nameArea;
    if (!a) { pane.innerHTML = '<div class="empty">No area selected.</div>'; return; }
    this.showTab('area');
    const head = `<h3>Area Selection <span class="dim">— ${esc(fmtDur(a.end - a.start))}, ${fmtInt(a.bases.length)} track${a.bases.length === 1 ? '' : 's'}</span></h3>`;
    if (!a.bases.length) { pane.innerHTML = head + '<div class="empty">No event track in the selected rows.</div>'; return; }
    pane.innerHTML = head + '<div class="empty">Summarizing…</div>';
    this.areaCtrl = new AbortController();
    let r;
    try {
      r = await get('range-summary', { tracks: a.bases.join(','), start: this.vp.abs(a.start), end: this.vp.abs(Math.ceil(a.end)) }, { signal: this.areaCtrl.signal });
    } catch (e) {
      if (e.name !== 'AbortError') pane.innerHTML = head + `<div class="empty">Could not summarize: ${esc(e.message)}</div>`;
      return;
    }
    const rows = r.rows || [];
    const count = rows.reduce((s, x) => s + Number(x.count), 0);
    pane.innerHTML = head.replace('</span></h3>', ` — ${fmtInt(count)} events, ${fmtInt(rows.length)} names</span></h3>`);
    if (!rows.length) { pane.insertAdjacentHTML('beforeend', '<div class="empty">No event overlaps this area.</div>'); return; }
    sortableTable(pane, [
      { key: 'name', label: 'Name' },
      { key: 'count', label: 'Count', num: true, html: (x) => fmtInt(x.count), value: (x) => Number(x.count) },
      { key: 'total_ns', label: 'Total time', num: true, html: (x) => fmtDur(x.total_ns), value: (x) => Number(x.total_ns) },
      { key: 'self_ns', label: 'Self time', num: true, html: (x) => fmtDur(x.self_ns), value: (x) => Number(x.self_ns) },
      { key: 'avg', label: 'Average', num: true, html: (x) => fmtDur(Number(x.total_ns) / Math.max(1, Number(x.count))), value: (x) => Number(x.total_ns) / Math.max(1, Number(x.count)) },
    ], rows, { sort: { key: 'total_ns', dir: 'desc' }, cls: 'area-summary' });
  }

  // ---------------------------------------------------------- hover

  onHover(h, x, y) {
    clearTimeout(this.tipTimer);
    if (!h) { hideTip(); return; }
    if (h.kind === 'counter') { showTip(this.counterTip(h), x, y); return; }
    if (h.count > 1) { showTip(this.mergedTip(h), x, y); return; }
    const draw = (ev) => showTip(this.sliceTip(h, ev), x, y);
    draw(null);
    if (h.count === 1) {
      this.tipTimer = setTimeout(() => {
        fetchEvent(h.key, true).then((ev) => { if (this.tl.hover?.key === h.key) draw(ev); }, () => {});
      }, 120);
    }
  }

  /**
   * A merged box: how many events, the span it covers, and how busy the
   * track is in that span, all from the LOD rows the box was drawn from
   * (h: hitTest's merged run; its busy is the sum of their busy column).
   */
  mergedTip(h) {
    return tipHtml(`${h.name} and others`, [
      ['Row', h.track.name],
      ['Events', fmtInt(h.count)],
      ['Span', `${this.timeText(h.ts, h.prec)} – ${this.timeText(h.ts + h.dur, h.prec)}`],
      ['Span length', fmtDur(h.dur, h.prec)],
      ['Busy', `${fmtDur(h.busy)} (${fmtPct((100 * Math.min(h.busy, h.dur)) / Math.max(h.dur, 1))} of the span)`],
    ], `${fmtInt(h.count)} events merged at this zoom — click to zoom in`);
  }

  sliceTip(h, ev) {
    const b = h.baseInfo || {};
    const pick = (k, bk) => ev?.[k] ?? b[bk ?? k];
    const time = `${this.timeText(h.ts, h.prec)} – ${this.timeText(h.ts + h.dur, h.prec)}`;
    if (this.o.domain === 'device') {
      const a = ev?.attributes || {};
      return tipHtml(h.name, [
        ['Row', h.track.name], ['Framework op', h.grp || ev?.framework_op], ['HLO', ev?.hlo_name ?? a.hlo_name],
        ['Operands', ev?.operands ?? a.operands], ['PC', ev?.pc ?? a.pc],
        ['Time', time], ['Duration', fmtDur(h.dur, h.prec)],
      ]);
    }
    return tipHtml(h.name, [
      ['Event Source', pick('trace_event_source', 'source') ?? h.source],
      ['Instance ID', pick('instance_id')], ['Process ID', pick('process_id', 'pid')], ['Thread ID', pick('thread_id', 'tid')],
      ['Worker Global ID', pick('worker_gid')], ['Physical Core Index', pick('pcore_idx')], ['Stream ID', pick('framework_stream_id', 'stream_id')],
      ['Time', time], ['Duration', fmtDur(h.dur, h.prec)],
    ]);
  }

  counterTip(h) {
    const t = h.track;
    const s0 = h.series[0];
    const time = this.timeText(s0.ts);
    const range = (s) => (s.count > 1 && s.min !== s.max ? ` (min ${fmtValue(s.min, t.unit)}, max ${fmtValue(s.max, t.unit)}, ${fmtInt(s.count)} samples)` : '');
    if (t.source === 'neuron_hbm_usage') {
      const total = s0.last, cap = this.o.hbmCapacity;
      const rows = [['Total Usage', `${fmtBytes(total)}${cap ? ` (${fmtPct((100 * total) / cap)})` : ''}`], ['Time', time]];
      for (const s of h.series.slice(1)) {
        if (!s.last) continue;
        rows.push([s.name, `<span class="sw" style="background:${seriesColor(s.idx)}"></span>${esc(fmtBytes(s.last))} (${esc(fmtPct((100 * s.last) / (total || 1)))})`, true]);
      }
      return tipHtml(t.name, rows);
    }
    if (t.source === 'host_cpu_util') {
      const cpu = /CPU:([^/]+)/.exec(t.name)?.[1];
      return tipHtml(t.name, [['CPU', cpu], ['Utilization', fmtPct(s0.last) + range(s0)], ['Time', time]]);
    }
    if (/bandwidth|throughput/.test(t.source)) return tipHtml(t.name, [['Bandwidth', fmtValue(s0.last, t.unit) + range(s0)], ['Time', time]]);
    const rows = h.series.map((s, i) => [t.seriesLabels?.[i] ?? s.name, fmtValue(s.last, i === 0 ? t.unit : /percent/.test(s.name) ? '%' : '') + range(s)]);
    rows.push(['Time', time]);
    if (t.storeName) rows.push(['Store name', t.storeName]);
    return tipHtml(t.name, rows);
  }

  // ---------------------------------------------------------- search

  /** A search hit as a timeline mark {base, lane, ts, dur, key}, or null. */
  hitMark(h) {
    const p = parseKey(h?.key);
    return p && { base: p.base, lane: p.lane, ts: this.relOf(p.abs), dur: Number(h.duration_ns || 0), key: h.key };
  }

  /** The current search hit `cur` (the list of hits is marked per window: setSearchMarks). */
  setHits(hits, cur) {
    this.hitCur = this.hitMark(cur);
    this.tl.setMarks(this.tl.state.marks, this.hitCur);
  }

  /** The window search marks ask for: absolute start, end, and a bucket per 4 px. */
  searchWindow() {
    const vp = this.vp, s = this.tl.state;
    return { start: vp.abs(vp.start), end: vp.abs(Math.ceil(vp.end)), buckets: Math.max(1, Math.round((s.W - s.labelW) / 4)) };
  }

  /** The search marks of the window (search.js): its hits, or the hit density per track. */
  setSearchMarks(m) {
    this.tl.setMarks((m?.hits || []).map((h) => this.hitMark(h)).filter(Boolean), this.hitCur || null);
    const d = m?.density;
    let density = null;
    if (d) {
      const n = Math.max(0, ...[...d.tracks.values()].map((c) => c.length));
      const total = new Float64Array(n);
      let max = 0;
      for (const c of d.tracks.values()) c.forEach((v, i) => { total[i] += v; if (v > max) max = v; });
      density = { start: this.relOf(d.start), w: d.bucketNs, tracks: d.tracks, total, max };
    }
    this.tl.setDensity(density);
  }

  /** Search hits per base track id (Map) or null, for the track list. */
  setHitCounts(counts) { this.tl.setHitCounts(counts); }

  goHit(h) { this.selectKey(h.key, 'focus'); }

  // ---------------------------------------------------------- keys, state

  key(e, down) {
    if (this.tl.key(e, down)) return true;
    if (!down) return false;
    switch (e.key) {
      case 'f': case 'F': this.fitSelection(); return true;
      case 'o': this.setOrigin(this.tl.sel ? this.tl.sel.ts : 0); return true;
      case 'O': this.setOrigin(0); return true;
      case 'y': case 'Y': this.tl.dispatch({ type: 'sharedScales', value: !this.tl.state.sharedScales }); return true;
      case '0': this.vp.fit(); return true;
      case '[': this.follow(-1); return true;
      case ']': this.follow(1); return true;
      case 'Escape':
        if (this.tl.area) this.tl.clearArea(); else this.tl.select(null);
        return true;
    }
    return false;
  }

  /** The window and selection for the URL. */
  state() {
    const o = this.tl.state.timeOrigin;
    return { s: this.vp.abs(this.vp.start), e: this.vp.abs(Math.ceil(this.vp.end)), sel: this.tl.sel?.key || '', o: o ? this.vp.abs(o) : '' };
  }

  /** Restores window and selection from URL state. */
  apply(st) {
    if (st.s && st.e && /^\d+$/.test(st.s) && /^\d+$/.test(st.e)) {
      const s = this.relOf(st.s), e = this.relOf(st.e);
      if (e > s) this.vp.set(s, e);
    }
    this.setOrigin(/^\d+$/.test(st.o || '') ? this.relOf(st.o) : 0);
    if (st.sel && st.sel !== this.tl.sel?.key) this.selectKey(st.sel, !(st.s && st.e));
  }
}
