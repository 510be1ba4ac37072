// device.js -- the Device Trace Viewer of one device profile: engine rows,
// DMA queues, semaphores and counters on the device timeline (ns from the
// start of execution), instructions coloured by framework operator.

import { get } from '../api.js';
import { TraceView } from './traceview.js';
import { esc, fmtDur, fmtInt, fmtPct } from '../format.js';

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
      ${sum.mfu_percent != null ? `<span class="stat">MFU <b>${esc(fmtPct(sum.mfu_percent))}</b></span>` : ''}
      ${sum.hfu_percent != null ? `<span class="stat">HFU <b>${esc(fmtPct(sum.hfu_percent))}</b></span>` : ''}
      ${sum.mbu_percent != null ? `<span class="stat">MBU <b>${esc(fmtPct(sum.mbu_percent))}</b></span>` : ''}
      ${engines ? `<span class="stat">${engines}</span>` : ''}`;
    this.root.append(bar);
    this.bar = bar;
    document.getElementById('tools').innerHTML = `<button class="icon" id="zoom-in" title="Zoom in (W)" aria-label="zoom in">+</button>
      <button class="icon" id="zoom-out" title="Zoom out (S)" aria-label="zoom out">−</button>
      <button class="icon" id="fit" title="Fit to profile (0)" aria-label="fit to profile">⤢</button>`;
    this.tv = new TraceView(this.root, {
      origin: BigInt(dp.start), min: 0, max: Number(BigInt(dp.end) - BigInt(dp.start)),
      domain: 'device', profile: this.id,
      onState: () => this.app.saveState(),
      openDevice: null,
    });
    this.tv.tl.setTracks(tr.tracks);
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
    this.tv.apply(st);
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

  async refresh() {
    const tr = await get(`device-profiles/${encodeURIComponent(this.id)}/tracks`);
    this.tv.tl.setTracks(tr.tracks);
    this.tv.tl.refresh();
  }

  scope() { return { domain: 'device', profile: this.id }; }
  state() { return { dp: this.id, x: this.exec, ...(this.tv ? this.tv.state() : {}) }; }
  apply(st) {
    this.tv?.apply(st);
    if (this.bar && (st.x || '') !== this.exec) this.showExec(st.x);
  }
  key(e, down) { return this.tv ? this.tv.key(e, down) : false; }
  setHits(h, c) { this.tv?.setHits(h, c); }
  goHit(h) { this.tv?.goHit(h); }
  destroy() { this.tv?.destroy(); this.bar?.remove(); document.getElementById('tools').innerHTML = ''; }
}
