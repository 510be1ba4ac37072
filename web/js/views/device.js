// device.js -- the Device Trace Viewer of one device profile: engine rows,
// DMA queues, semaphores and counters (named for people, devicenames.js) on
// the device timeline (ns from the start of execution), instructions
// coloured by framework operator; an instruction's dependencies in its
// details and as arrows (of the selected one, or of every visible one);
// the flags, notes and named areas of this device profile.

import { get } from '../api.js';
import { TraceView, parseKey } from './traceview.js';
import { deviceTrackNames } from './devicenames.js';
import { sortableTable } from '../panels/table.js';
import { esc, fmtDur, fmtInt, fmtPct } from '../format.js';

const LINK_LIMIT = 3000; // arrows of the visible instructions drawn at most

const MFU_TIP = 'Model FLOPs utilization: the tensor engine\'s FLOPs without the transposes\' / (peak FLOP/s × profile duration)';
const HFU_TIP = 'Hardware FLOPs utilization: every FLOP of the tensor engine, transposes included / (peak FLOP/s × profile duration)';

export class DeviceView {
  constructor(app, root, id) {
    this.app = app;
    this.root = root;
    this.id = id;
  }

  async init(st) {
    const [dp, tr] = await Promise.all([get(`device-profiles/${encodeURIComponent(this.id)}`), get(`device-profiles/${encodeURIComponent(this.id)}/tracks`)]);
    this.dp = dp;
    const sum = dp.summary || {};
    const engines = Object.entries(sum.engines || {}).map(([k, v]) => `${k} <b>${esc(fmtPct(v.active_percent))}</b>`).join(' · ');
    const name = dp.name || dp.device_profile_name || `device profile ${this.id}`;
    const bar = document.createElement('div');
    bar.className = 'subbar';
    bar.innerHTML = `<button id="back" title="Back to the System Trace Viewer">← System view</button>
      <span class="title" title="${esc(name)}">${esc(name)}</span>
      <label class="stat">Execution <select id="exec" aria-label="execution"><option value="">all</option>${(dp.executions || []).map((x, i) =>
        `<option value="${i}">${x.exec_id != null ? `exec ${esc(x.exec_id)} ` : ''}#${esc(x.execution_index ?? i)} — ${esc(fmtDur(Number(x.execution_end_ts) - Number(x.execution_start_ts)))}</option>`).join('')}</select></label>
      <span id="exec-slot"></span>
      <span class="stat">Duration <b>${esc(fmtDur(Number(BigInt(dp.end) - BigInt(dp.start))))}</b></span>
      <span class="stat">Instructions <b>${esc(fmtInt(dp.instruction_count))}</b></span>
      ${sum.mfu_percent != null ? `<span class="stat" id="stat-mfu" title="${esc(MFU_TIP)}">MFU <b>${esc(fmtPct(sum.mfu_percent))}</b></span>` : ''}
      ${sum.hfu_percent != null ? `<span class="stat" id="stat-hfu" title="${esc(HFU_TIP)}">HFU <b>${esc(fmtPct(sum.hfu_percent))}</b></span>` : ''}
      ${sum.mbu_percent != null ? `<span class="stat">MBU <b>${esc(fmtPct(sum.mbu_percent))}</b></span>` : ''}
      ${engines ? `<span class="stat">${engines}</span>` : ''}`;
    this.root.append(bar);
    this.bar = bar;
    document.getElementById('tools').innerHTML = `<button class="icon" id="zoom-in" title="Zoom in (W)" aria-label="zoom in">+</button>
      <button class="icon" id="zoom-out" title="Zoom out (S)" aria-label="zoom out">−</button>
      <button class="icon" id="fit" title="Fit to profile (0)" aria-label="fit to profile">⤢</button>
      <label class="stat" title="Draw the dependency arrows of every instruction in view (else those of the selected one)"><input type="checkbox" id="deps-all"> all dependency arrows</label>
      <span class="stat" id="deps-note"></span>`;
    this.tv = new TraceView(this.root, {
      origin: BigInt(dp.start), min: 0, max: Number(BigInt(dp.end) - BigInt(dp.start)),
      domain: 'device', profile: this.id,
      onState: () => { this.app.saveState(); this.loadLinks(); },
      openDevice: null,
      details: (ev, pane, flows) => { this.app.annots.decorate(ev, pane); this.details(ev, pane, flows); },
      onAxisClick: (c) => this.app.annots.flagAt(c),
      nameArea: (a) => this.app.annots.nameArea(a),
    });
    this.tv.tl.setTracks(deviceTrackNames(tr.tracks));
    this.app.annots.attach(this.tv, String(this.id), tr.tracks.find((t) => t.base?.length)?.base[0].id ?? null);
    const $ = (id) => document.getElementById(id);
    $('back').onclick = () => this.app.backToSystem();
    $('exec').onchange = (e) => {
      const x = dp.executions?.[+e.target.value];
      if (x) this.tv.vp.set(this.tv.relOf(String(x.execution_start_ts)), this.tv.relOf(String(x.execution_end_ts)));
      else this.tv.vp.fit();
    };
    $('zoom-in').onclick = () => this.tv.vp.zoom(0.5);
    $('zoom-out').onclick = () => this.tv.vp.zoom(2);
    $('fit').onclick = () => this.tv.vp.fit();
    $('deps-all').onchange = (e) => this.showAllLinks(e.target.checked);
    this.tv.apply(st);
    this.showAllLinks(st.da === '1');
    const i = (dp.executions || []).findIndex((x) => String(x.execution_start_ts) === st.s && String(x.execution_end_ts) === st.e);
    if (i >= 0) $('exec').value = String(i);
    this.showExec(st.x);
  }

  /**
   * States what the drill-down from execution `x` (the event's exec_id)
   * opened: that execution, chosen in the list, when it was captured; else
   * which ones were.
   */
  showExec(x) {
    this.exec = x || '';
    const slot = this.bar.querySelector('#exec-slot');
    if (!this.exec) { slot.innerHTML = ''; return; }
    const ex = this.dp.executions || [];
    const i = ex.findIndex((e) => String(e.exec_id) === this.exec);
    if (i >= 0) {
      slot.innerHTML = `<span class="stat" id="exec-note">Drilled down from execution <b>${esc(x)}</b>: captured (#${esc(ex[i].execution_index ?? i)})</span>`;
      this.bar.querySelector('#exec').value = String(i);
      return;
    }
    const ids = ex.map((e) => e.exec_id).filter((v) => v != null);
    const list = ids.length ? `captured: ${ids.slice(0, 8).map((v) => `exec ${v}`).join(', ')}${ids.length > 8 ? ` and ${ids.length - 8} more` : ''} — pick one` : 'no execution was captured';
    slot.innerHTML = `<span class="stat warn" id="exec-note">Execution <b>${esc(x)}</b> was not captured in this profile; ${esc(list)}</span>`;
  }

  // ---------------------------------------------------------- dependencies

  /** An end of a dependency as a timeline event {base, lane, ts, dur, key}, or null. */
  end(key, dur) {
    const p = parseKey(key);
    return p && { base: p.base, lane: p.lane, ts: this.tv.relOf(p.abs), dur, key };
  }

  /**
   * The instruction's dependencies in its details (ev: GET /events/{key}):
   * a clickable list of those it waits for and of those waiting for it, and
   * their arrows (into flows), from the end of the dependency to the start
   * of the dependent.
   */
  details(ev, pane, flows) {
    if (!ev.dependencies && !ev.dependents) return;
    const up = ev.dependencies || [], down = ev.dependents || [];
    for (const [list, isUp] of [[up, true], [down, false]]) {
      for (const d of list) {
        const e = d.key && this.end(d.key, Number(d.duration_ns || 0));
        if (e) flows.push({ ...e, up: isUp, fromEnd: true });
      }
    }
    const sec = document.createElement('section');
    sec.className = 'deps';
    sec.innerHTML = `<h3>Instruction Dependencies <span class="dim">— waits for ${fmtInt(up.length)}, ${fmtInt(down.length)} wait${down.length === 1 ? 's' : ''} for it</span></h3>`;
    if (!up.length && !down.length) sec.insertAdjacentHTML('beforeend', '<div class="empty">This instruction has no inst_dep_ids and nothing waits for it.</div>');
    const time = (d) => (d.key ? this.tv.timeText(this.tv.relOf(d.start_ts)) : '');
    for (const [title, list, cls] of [['Waits for', up, 'deps-up'], ['Waited for by', down, 'deps-down']]) {
      if (!list.length) continue;
      sec.insertAdjacentHTML('beforeend', `<h3>${title} <span class="dim">(${list.length})</span></h3>`);
      sortableTable(sec, [
        { key: 'name', label: 'Opcode', html: (r) => (r.key ? `<button class="link" data-key="${esc(r.key)}">${esc(r.name)}</button>` : '<span class="dim">not in this profile</span>') },
        { key: 'label', label: 'Engine', html: (r) => esc(r.label ?? '') },
        { key: 'id', label: 'Instruction ID', cls: 'mono' },
        { key: 'start_ts', label: 'Start', num: true, html: (r) => esc(time(r)), value: (r) => (r.key ? BigInt(r.start_ts) : -1n) },
        { key: 'duration_ns', label: 'Duration', num: true, html: (r) => (r.key ? esc(fmtDur(r.duration_ns)) : ''), value: (r) => Number(r.duration_ns || 0) },
      ], list, { cls, onRow: (r, tr) => { const b = tr.querySelector('button.link'); if (b) b.onclick = () => this.tv.selectKey(r.key, true); } });
    }
    (pane.querySelector('.cols') || pane).append(sec);
  }

  /** Draws the arrows of every visible instruction (on) or of the selected one only. */
  showAllLinks(on) {
    this.allLinks = on;
    document.getElementById('deps-all').checked = on;
    this.linkWin = null;
    this.loadLinks();
    this.app.saveState();
  }

  /** Fetches the arrows of the window when it changed (debounced). */
  loadLinks() {
    clearTimeout(this.linkTimer);
    const note = document.getElementById('deps-note');
    if (!this.allLinks) {
      this.linkSeq = (this.linkSeq || 0) + 1;
      if (this.tv.tl.state.links.length) this.tv.tl.setLinks([]);
      note.textContent = '';
      return;
    }
    const vp = this.tv.vp, start = vp.abs(vp.start), end = vp.abs(Math.ceil(vp.end));
    if (this.linkWin === `${start}-${end}`) return;
    this.linkTimer = setTimeout(async () => {
      const seq = (this.linkSeq = (this.linkSeq || 0) + 1);
      let r;
      try {
        r = await get(`device-profiles/${encodeURIComponent(this.id)}/dependencies`, { start, end, limit: LINK_LIMIT }, { quiet: true });
      } catch (e) {
        if (seq === this.linkSeq) note.textContent = `arrows: ${e.message}`;
        return;
      }
      if (seq !== this.linkSeq) return;
      this.linkWin = `${start}-${end}`;
      const links = [];
      for (const a of r.arrows) {
        const f = this.end(a.from, 0), t = this.end(a.to, 0);
        if (!f || !t) continue;
        f.dur = Number(BigInt(a.from_end) - BigInt(parseKey(a.from).abs));
        links.push({ from: f, to: t });
      }
      this.tv.tl.setLinks(links);
      note.textContent = r.truncated ? `the first ${fmtInt(LINK_LIMIT)} arrows: zoom in for all` : `${fmtInt(links.length)} arrows`;
    }, 120);
  }

  async refresh() {
    const tr = await get(`device-profiles/${encodeURIComponent(this.id)}/tracks`);
    this.tv.tl.setTracks(deviceTrackNames(tr.tracks));
    this.tv.tl.refresh();
    this.linkWin = null;
    this.loadLinks();
  }

  scope() { return { domain: 'device', profile: this.id }; }
  state() { return { dp: this.id, x: this.exec, da: this.allLinks ? '1' : '', ...(this.tv ? this.tv.state() : {}) }; }
  apply(st) {
    this.tv?.apply(st);
    if (this.bar && (st.x || '') !== this.exec) this.showExec(st.x);
    if (this.bar && (st.da === '1') !== !!this.allLinks) this.showAllLinks(st.da === '1');
  }
  key(e, down) { return this.tv ? this.tv.key(e, down) : false; }
  setHits(h, c) { this.tv?.setHits(h, c); }
  goHit(h) { this.tv?.goHit(h); }
  destroy() { clearTimeout(this.linkTimer); if (this.tv) this.app.annots.detach(this.tv); this.tv?.destroy(); this.bar?.remove(); document.getElementById('tools').innerHTML = ''; }
}
