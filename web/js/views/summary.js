// summary.js -- the System Profile Summary: overview card, HBM memory usage
// over time, and the device profiles table (each row opens its Device
// Trace Viewer; expanding a row shows per-engine active time).

import { get } from '../api.js';
import { esc, fmtDur, fmtDurShort, fmtInt, fmtPct, fmtBytes } from '../format.js';
import { seriesColor } from '../timeline/colors.js';
import { tickStep } from '../timeline/render.js';

export class SummaryView {
  constructor(app, root) {
    this.app = app;
    this.el = document.createElement('div');
    this.el.className = 'view summary';
    root.append(this.el);
    this.ro = new ResizeObserver(() => this.drawChart());
  }

  async init() {
    const s = await get('summary');
    this.s = s;
    const card = (k, v) => `<div class="card"><div class="k">${esc(k)}</div><div class="v">${esc(v)}</div></div>`;
    this.el.innerHTML = `<div class="cards" id="overview">
        ${card('Instances', fmtInt(s.instances))}${card('Processes', fmtInt(s.processes))}
        ${card('System Profile Time', fmtDurShort(s.system_profile_time_ns))}${card('Total Device Runtime', fmtDurShort(s.total_device_runtime_ns))}
        ${card('Total Device Profiles', fmtInt((s.device_profiles || []).length))}</div>
      <div class="panel"><h2>HBM Memory Usage</h2><canvas class="chart" id="hbm-chart"></canvas><div class="legend" id="hbm-legend"></div></div>
      <div class="panel"><h2>Device Profiles <span class="dim" style="font-weight:400">— click a name to open its Device Trace Viewer</span></h2><div id="dp-table"></div></div>`;
    this.table();
    this.ro.observe(this.el.querySelector('#hbm-chart'));
    await this.loadHbm();
  }

  table() {
    const list = this.s.device_profiles || [];
    const el = this.el.querySelector('#dp-table');
    if (!list.length) { el.innerHTML = '<div class="dim">This profile has no device profiles.</div>'; return; }
    const maxDur = Math.max(...list.map((d) => Number(d.duration_ns) || 0), 1);
    const t = document.createElement('table');
    t.className = 'grid';
    t.innerHTML = `<thead><tr><th></th><th>Profile Name</th><th class="num">LNC</th><th>Total Duration</th><th class="num">Calls</th>
      <th class="num" title="Model FLOPs utilization: tensor-engine FLOPs without the transposes' / (peak FLOP/s × duration)">MFU</th>
      <th class="num" title="Hardware FLOPs utilization: every tensor-engine FLOP, transposes included / (peak FLOP/s × duration)">HFU</th>
      <th class="num" title="Memory bandwidth utilization: HBM bytes / (HBM bandwidth × duration)">MBU</th></tr></thead>`;
    const body = document.createElement('tbody');
    for (const d of list) {
      const tr = document.createElement('tr');
      tr.innerHTML = `<td><button class="icon expand" aria-label="show engines" title="Per-engine active time">▸</button></td>
        <td><button class="link open">${esc(d.name)}</button></td><td class="num">${esc(d.lnc ?? '')}</td>
        <td class="bar-cell">${esc(fmtDur(d.duration_ns))}<div class="b" style="width:${(100 * (Number(d.duration_ns) || 0)) / maxDur * 0.8}%"></div></td>
        <td class="num">${esc(fmtInt(d.calls))}</td><td class="num">${esc(fmtPct(d.mfu_percent))}</td>
        <td class="num">${esc(fmtPct(d.hfu_percent))}</td><td class="num">${esc(fmtPct(d.mbu_percent))}</td>`;
      const sub = document.createElement('tr');
      sub.className = 'sub';
      sub.hidden = true;
      const eng = Object.entries(d.engines || {});
      sub.innerHTML = `<td></td><td colspan="7">${eng.length ? `<table class="grid"><thead><tr><th>Engine</th><th class="num">Active time</th><th class="num">Active</th></tr></thead><tbody>${eng.map(([k, v]) =>
        `<tr><td>${esc(k)}</td><td class="num">${esc(fmtDur(v.active_ns))}</td><td class="num">${esc(fmtPct(v.active_percent))}</td></tr>`).join('')}</tbody></table>` : '<span class="dim">No per-engine data.</span>'}</td>`;
      tr.querySelector('.open').onclick = () => this.app.openDevice(d.id);
      tr.querySelector('.expand').onclick = (e) => { sub.hidden = !sub.hidden; e.target.textContent = sub.hidden ? '▸' : '▾'; };
      body.append(tr, sub);
    }
    t.append(body);
    el.append(t);
  }

  async loadHbm() {
    const hbm = this.s.hbm || [];
    const p = this.app.profile;
    const canvas = this.el.querySelector('#hbm-chart');
    if (!hbm.length) { canvas.replaceWith(Object.assign(document.createElement('div'), { className: 'dim', textContent: 'No HBM usage was recorded.' })); return; }
    const px = Math.max(100, Math.min(4000, Math.round(canvas.clientWidth || 800)));
    const r = await get('counters', { tracks: hbm.map((h) => h.track).join(','), start: p.start, end: p.end, px });
    this.hbmData = { r, shift: Number(BigInt(r.base) - BigInt(p.start)), dur: Number(BigInt(p.end) - BigInt(p.start)) };
    this.drawChart();
  }

  drawChart() {
    const canvas = this.el.querySelector('#hbm-chart');
    if (!canvas || !this.hbmData) return;
    const { r, shift, dur } = this.hbmData;
    const dpr = devicePixelRatio || 1, W = canvas.clientWidth, H = canvas.clientHeight;
    canvas.width = W * dpr; canvas.height = H * dpr;
    const L = 70, B = 22, pw = W - L - 8, ph = H - B - 6;
    // No plot area (a chart too narrow, or one whose view was closed while
    // its counters loaded: 0 px wide): nothing to draw, and a time axis of
    // 1 ns steps over the whole profile would hold the page for minutes.
    if (pw < 1 || ph < 1 || !(dur > 0)) return;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const cs = getComputedStyle(document.documentElement);
    const fg = cs.getPropertyValue('--fg-dim'), grid = cs.getPropertyValue('--tl-grid');
    const X = (t) => L + ((t + shift) / dur) * pw;
    const tracks = r.tracks || [];
    const single = tracks.length === 1;
    // Layers: one track -> its categories stacked; several -> each total as a line.
    let layers = [];
    if (single) {
      const ser = tracks[0].series.filter((s) => s.series > 0 && s.last.some((v) => v > 0));
      const n = ser[0]?.ts.length || 0;
      const acc = new Float64Array(n);
      layers = ser.map((s) => { const lo = Float64Array.from(acc); for (let i = 0; i < n; i++) acc[i] += s.last[i] || 0; return { name: s.name, idx: s.series, ts: s.ts, lo, hi: Float64Array.from(acc) }; });
      if (!layers.length && tracks[0].series[0]) { const s = tracks[0].series[0]; layers = [{ name: s.name, idx: 0, ts: s.ts, lo: new Float64Array(s.ts.length), hi: Float64Array.from(s.last) }]; }
    } else {
      layers = tracks.map((t, i) => { const s = t.series.find((x) => x.series === 0) || t.series[0]; return { name: (this.s.hbm[i]?.name || t.track), idx: i + 1, ts: s.ts, lo: null, hi: Float64Array.from(s.last) }; });
    }
    let vmax = 0;
    for (const l of layers) for (const v of l.hi) vmax = Math.max(vmax, v);
    vmax = vmax * 1.08 || 1;
    const Y = (v) => 6 + ph - (v / vmax) * ph;
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = fg;
    ctx.strokeStyle = grid;
    ctx.textBaseline = 'middle';
    for (let i = 0; i <= 4; i++) {
      const v = (vmax * i) / 4, y = Math.round(Y(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(L, y); ctx.lineTo(W - 8, y); ctx.stroke();
      ctx.fillText(fmtBytes(v), 4, y);
    }
    const step = tickStep(dur / pw, 120);
    ctx.textBaseline = 'alphabetic';
    for (let t = 0; t <= dur; t += step) {
      const s = fmtDurShort(t), x = Math.max(0, L + (t / dur) * pw - 10);
      if (x + ctx.measureText(s).width <= W) ctx.fillText(s, x, H - 4);
    }
    for (const l of layers) {
      const n = l.ts.length;
      if (!n) continue;
      ctx.beginPath();
      ctx.moveTo(X(l.ts[0]), Y(l.hi[0]));
      for (let i = 1; i < n; i++) { ctx.lineTo(X(l.ts[i]), Y(l.hi[i - 1])); ctx.lineTo(X(l.ts[i]), Y(l.hi[i])); }
      ctx.lineTo(L + pw, Y(l.hi[n - 1]));
      if (l.lo) {
        ctx.lineTo(L + pw, Y(l.lo[n - 1]));
        for (let i = n - 1; i >= 1; i--) { ctx.lineTo(X(l.ts[i]), Y(l.lo[i])); ctx.lineTo(X(l.ts[i]), Y(l.lo[i - 1])); }
        ctx.lineTo(X(l.ts[0]), Y(l.lo[0]));
        ctx.closePath();
        ctx.fillStyle = seriesColor(l.idx, 0.85);
        ctx.fill();
      } else {
        ctx.strokeStyle = seriesColor(l.idx);
        ctx.lineWidth = 1.5;
        ctx.stroke();
      }
    }
    this.el.querySelector('#hbm-legend').innerHTML = layers.map((l) => `<span><span class="sw" style="background:${seriesColor(l.idx)}"></span>${esc(l.name)}</span>`).join('');
  }

  refresh() { return this.init(); }
  scope() { return null; }
  state() { return {}; }
  apply() {}
  key() { return false; }
  setHits() {}
  goHit() {}
  destroy() { this.ro.disconnect(); this.el.remove(); }
}
