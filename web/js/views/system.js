// system.js -- the System Trace Viewer: tracks under one of the six
// grouping modes, CPU utilization toggle, Device Profiles List, drill-down
// from hardware events to their device profile.

import { get } from '../api.js';
import { TraceView } from './traceview.js';
import { openDeviceList } from '../panels/devicelist.js';
import { openExport } from '../panels/export.js';
import { banner } from '../panels/status.js';

export const GROUPINGS = [
  ['default', 'Default'],
  ['cpu_device', 'CPU vs Neuron Device Events'],
  ['neuroncore', 'NeuronCore'],
  ['thread', 'Thread ID'],
  ['process', 'Process ID'],
  ['instance', 'Instance'],
];

/** base track id -> event source, from tracks that each have one source. */
function sourcesOf(tracks) {
  const m = new Map();
  for (const t of tracks) if (t.source !== 'mixed') for (const b of t.base || []) m.set(String(b.id), t.source);
  return m;
}

export class SystemView {
  constructor(app, root) {
    this.app = app;
    const p = app.profile;
    this.grouping = 'default';
    this.cpu = false;
    const cap = (p.metadata || []).map((m) => Number(m.hbm_capacity_bytes)).find((x) => x > 0);
    this.tv = new TraceView(root, {
      origin: BigInt(p.start), min: 0, max: Number(BigInt(p.end) - BigInt(p.start)),
      domain: 'system', hbmCapacity: cap,
      onState: () => app.saveState(),
      openDevice: (ev) => this.openDevice(ev),
      details: (ev, pane) => app.annots.decorate(ev, pane),
      onAxisClick: (c) => app.annots.flagAt(c),
      nameArea: (a) => app.annots.nameArea(a),
    });
    app.annots.attach(this.tv);
    this.tools();
  }

  tools() {
    const el = document.getElementById('tools');
    el.innerHTML = `<label>Grouping <select id="grouping" aria-label="grouping">${GROUPINGS.map(([v, l]) => `<option value="${v}">${l}</option>`).join('')}</select></label>
      <label title="Show the host CPU utilization tracks"><input type="checkbox" id="cpu-toggle"> CPU utilization</label>
      <span class="sep"></span>
      <button id="dp-open" title="Device Profiles List">☰ Device Profiles</button>
      <button class="icon" id="sql-open" title="SQL console over the profile store (Q)" aria-label="SQL console">SQL</button>
      <button class="icon" id="export-open" title="Export the window or the area selection" aria-label="export">⤓</button>
      <span class="sep"></span>
      <button class="icon" id="zoom-in" title="Zoom in (W)" aria-label="zoom in">+</button>
      <button class="icon" id="zoom-out" title="Zoom out (S)" aria-label="zoom out">−</button>
      <button class="icon" id="fit" title="Fit to profile (0)" aria-label="fit to profile">⤢</button>
      <button class="icon" id="collapse-all" title="Collapse all groups" aria-label="collapse all">⊟</button>
      <button class="icon" id="expand-all" title="Expand all groups" aria-label="expand all">⊞</button>
      <button class="icon" id="shared-scales" title="Counters of one kind on one scale, or each on its own (Y)" aria-label="shared counter scales">⇕</button>`;
    const $ = (id) => document.getElementById(id);
    $('grouping').onchange = (e) => this.setGrouping(e.target.value);
    $('cpu-toggle').onchange = (e) => { this.setCpu(e.target.checked); this.app.saveState(); };
    $('dp-open').onclick = () => openDeviceList((d) => this.app.openDevice(d.id));
    $('sql-open').onclick = () => this.app.openSql();
    $('export-open').onclick = () => this.openExport();
    $('zoom-in').onclick = () => this.tv.vp.zoom(0.5);
    $('zoom-out').onclick = () => this.tv.vp.zoom(2);
    $('fit').onclick = () => this.tv.vp.fit();
    $('collapse-all').onclick = () => this.tv.tl.dispatch({ type: 'collapseAll', value: true });
    $('expand-all').onclick = () => this.tv.tl.dispatch({ type: 'collapseAll', value: false });
    $('shared-scales').onclick = () => this.tv.tl.dispatch({ type: 'sharedScales', value: !this.tv.tl.state.sharedScales });
  }

  /** The Export dialog over the area selection (when there is one) and the window. */
  openExport() {
    const vp = this.tv.vp, a = this.tv.tl.state.area;
    const ranges = [];
    if (a?.bases) ranges.push({ label: 'Area selection', start: vp.abs(a.start), end: vp.abs(Math.ceil(a.end)) });
    ranges.push({ label: 'Current window', start: vp.abs(vp.start), end: vp.abs(Math.ceil(vp.end)) });
    ranges.push({ label: 'Whole profile', start: this.app.profile.start, end: this.app.profile.end });
    openExport(ranges);
  }

  /** Shows (true) or hides the tracks hidden by default (CPU utilization). */
  setCpu(on) {
    this.cpu = on;
    document.getElementById('cpu-toggle').checked = on;
    this.tv.tl.dispatch({ type: 'showHidden', value: on });
  }

  async setGrouping(g) {
    if (!this.app.groupings.includes(g)) g = 'default';
    this.grouping = g;
    document.getElementById('grouping').value = g;
    const r = await get('tracks', { grouping: g });
    if (this.grouping !== g) return;
    await this.markSources(r.tracks, g);
    if (this.grouping !== g) return;
    this.tracks = r.tracks;
    this.tv.tl.setTracks(r.tracks);
    this.app.saveState();
  }

  /**
   * Tracks that merge several event sources (source "mixed": process,
   * thread, instance groupings) get each base track's own source, taken
   * from the default grouping where every track has one source, so events
   * keep their source colours.
   */
  async markSources(tracks, g) {
    if (!tracks.some((t) => t.source === 'mixed')) {
      if (g === 'default') this.baseSource = sourcesOf(tracks);
      return;
    }
    if (!this.baseSource) this.baseSource = sourcesOf((await get('tracks', { grouping: 'default' })).tracks);
    for (const t of tracks) for (const b of t.base || []) b.source ??= this.baseSource.get(String(b.id));
  }

  async init(st) {
    this.setCpu(st.cpu === '1');
    await this.setGrouping(st.g || 'default');
    this.tv.apply(st);
  }

  async openDevice(ev) {
    try {
      const r = await get(`events/${encodeURIComponent(ev.key)}/device-profile`, null, { quiet: true });
      this.app.openDevice(r.device_profile.id, r.start, r.end, ev.attributes?.exec_id);
    } catch (e) {
      if (e.code === 'no_device_profile' || e.status === 404) {
        banner('drill', `No device profile was captured for this ${ev.name} (instance ${ev.instance_id}, process ${ev.process_id}, NeuronCore ${ev.nc_idx ?? '?'}).`, { kind: 'warn', timeout: 8000 });
      } else banner('drill', `Could not open the device profile: ${e.message}`);
    }
  }

  /** Live refresh: the profile grew or changed. */
  async refresh(p) {
    this.baseSource = null;
    this.tv.tl.setExtent(0, Number(BigInt(p.end) - BigInt(p.start)));
    await this.setGrouping(this.grouping);
  }

  scope() { return { domain: 'system' }; }
  state() { return { g: this.grouping, cpu: this.cpu ? '1' : '', ...this.tv.state() }; }
  apply(st) {
    if ((st.g || 'default') !== this.grouping) this.setGrouping(st.g || 'default');
    if ((st.cpu === '1') !== this.cpu) this.setCpu(st.cpu === '1');
    this.tv.apply(st);
  }
  key(e, down) { return this.tv.key(e, down); }
  setHits(h, c) { this.tv.setHits(h, c); }
  goHit(h) { this.tv.goHit(h); }
  destroy() { this.app.annots.detach(this.tv); this.tv.destroy(); document.getElementById('tools').innerHTML = ''; }
}
