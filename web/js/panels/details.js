// details.js -- the Event Details panel (every attribute, sortable
// Field/Value table) and the dependency chain (upstream/downstream links).

import { esc, fmtDur, fmtInt } from '../format.js';
import { sortableTable } from './table.js';

const SKIP = new Set(['attributes', 'upstream', 'downstream', 'flow_ids', 'device_profile', 'key']);
const ORDER = ['name', 'opcode', 'start_ts', 'end_ts', 'duration_ns', 'trace_event_source', 'engine', 'framework_op',
  'hlo_name', 'operands', 'pc', 'id', 'instance_id', 'process_id', 'thread_id', 'worker_gid', 'nc_idx', 'pcore_idx',
  'framework_stream_id', 'track'];

/** Events that can open a device profile (hardware events). */
const HW_EVENTS = new Set(['nc_exec_running', 'cc_running', 'cc_exec_barrier', 'numerical_err', 'nc_model_switch', 'nrt_model_switch', 'hw_notify']);

/**
 * Renders event `ev` (GET /events/{key}) into `el`.  timeOf(abs) gives the
 * text of an absolute time ("1.101 600 250 s from the start").  cb: {
 * jump(entry), openDevice(ev) | null }.
 */
export function renderDetails(el, ev, timeOf, cb) {
  el.innerHTML = '';
  const cols = document.createElement('div');
  cols.className = 'cols';
  const left = document.createElement('section');
  const src = ev.trace_event_source;
  left.innerHTML = `<h3>Event Details <span class="dim">— ${esc(ev.name)}</span> ${src ? `<span class="chip ${esc(src)}">${esc(src)}</span>` : ''}</h3>`;
  const actions = document.createElement('div');
  actions.className = 'actions';
  if (cb.openDevice && (ev.device_profile || HW_EVENTS.has(ev.name))) {
    const b = document.createElement('button');
    b.className = 'primary';
    b.id = 'open-device';
    b.textContent = ev.device_profile ? `Open device profile: ${shortName(ev.device_profile.name)}` : 'Open device profile';
    b.onclick = () => cb.openDevice(ev);
    actions.append(b);
  }
  const copy = document.createElement('button');
  copy.textContent = 'Copy as JSON';
  copy.onclick = () => navigator.clipboard?.writeText(JSON.stringify(ev, null, 2));
  actions.append(copy);
  left.append(actions);
  const rows = [];
  for (const [k, v] of Object.entries(ev)) if (!SKIP.has(k) && v !== null && v !== undefined) rows.push({ field: k, value: v });
  for (const [k, v] of Object.entries(ev.attributes || {})) rows.push({ field: k, value: v, attr: true });
  if (ev.flow_ids?.length) rows.push({ field: 'flow_id', value: ev.flow_ids.join(', ') });
  const rank = (f) => { const i = ORDER.indexOf(f); return i < 0 ? ORDER.length : i; };
  rows.sort((a, b) => rank(a.field) - rank(b.field) || (a.attr ? 1 : 0) - (b.attr ? 1 : 0) || a.field.localeCompare(b.field));
  rows.forEach((r, i) => { r.order = i; });
  sortableTable(left, [
    { key: 'field', label: 'Field', cls: 'field', value: (r) => r.field },
    { key: 'value', label: 'Value', html: (r) => valueHtml(r.field, r.value, timeOf), value: (r) => (typeof r.value === 'object' ? JSON.stringify(r.value) : r.value) },
  ], rows, { cls: 'details' });
  cols.append(left);

  const right = document.createElement('section');
  const up = ev.upstream || [], down = ev.downstream || [];
  right.innerHTML = `<h3>Dependency Chain <span class="dim">— ${up.length} upstream, ${down.length} downstream</span></h3>`;
  if (!up.length && !down.length) {
    right.insertAdjacentHTML('beforeend', `<div class="empty">${ev.flow_ids?.length ? 'No linked events.' : 'This event carries no flow id.'}</div>`);
  }
  for (const [title, list] of [['Upstream Events', up], ['Downstream Events', down]]) {
    if (!list.length) continue;
    const h = document.createElement('h3');
    h.innerHTML = `${title} <span class="dim">(${list.length})</span>`;
    right.append(h);
    sortableTable(right, [
      { key: 'name', label: 'Name', html: (r) => `<button class="link" data-key="${esc(r.key)}">${esc(r.name)}</button>` },
      { key: 'id', label: 'Event ID', cls: 'mono' },
      { key: 'flow_id', label: 'Flow ID', cls: 'mono' },
      { key: 'trace_event_source', label: 'Trace Event Source', html: (r) => `<span class="chip ${esc(r.trace_event_source)}">${esc(r.trace_event_source)}</span>` },
      { key: 'start_ts', label: 'Start', num: true, html: (r) => esc(timeOf(r.start_ts)), value: (r) => BigInt(r.start_ts) },
    ], list, { onRow: (r, tr) => { tr.querySelector('button.link').onclick = () => cb.jump(r); } });
  }
  cols.append(right);
  el.append(cols);
}

function shortName(n) { return n.length > 48 ? '…' + n.slice(-46) : n; }

function valueHtml(field, v, timeOf) {
  if (v && typeof v === 'object') return `<span class="mono">${esc(JSON.stringify(v))}</span>`;
  const s = String(v);
  if ((field === 'start_ts' || field === 'end_ts') && /^\d+$/.test(s)) {
    return `<span class="mono">${esc(s)}</span> <span class="dim">(${esc(timeOf(s))})</span>`;
  }
  if (/^(duration|duration_ns|dur|.*_duration_ns)$/.test(field) && /^-?\d+$/.test(s)) return `${esc(fmtInt(s))} ns <span class="dim">(${esc(fmtDur(s))})</span>`;
  return esc(s);
}
