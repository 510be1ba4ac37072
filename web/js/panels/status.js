// status.js -- the ingest progress bar, error/warning banners and toasts.

import { esc, fmtInt, fmtBytes } from '../format.js';

const banners = new Map();

/** Shows or replaces banner `id`: kind 'error' | 'warn' | 'info'; action {label, run}. */
export function banner(id, message, { kind = 'error', action = null, timeout = 0 } = {}) {
  let el = banners.get(id);
  if (!el) {
    el = document.createElement('div');
    el.dataset.id = id;
    document.getElementById('banners').append(el);
    banners.set(id, el);
  }
  el.className = `banner ${kind}`;
  el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  el.innerHTML = `<span class="msg">${esc(message)}</span>` +
    (action ? `<button class="act">${esc(action.label)}</button>` : '') +
    '<button class="close" title="Dismiss" aria-label="dismiss">×</button>';
  if (action) el.querySelector('.act').onclick = action.run;
  el.querySelector('.close').onclick = () => dismiss(id);
  clearTimeout(el.timer);
  if (timeout) el.timer = setTimeout(() => dismiss(id), timeout);
}

export function dismiss(id) {
  const el = banners.get(id);
  if (el) { el.remove(); banners.delete(id); }
}

/** Progress of the ingest (the WebSocket `progress` message), or null to hide. */
export function progress(p) {
  const el = document.getElementById('progress');
  if (!p) { el.hidden = true; return; }
  el.hidden = false;
  const frac = p.bytes_total ? p.bytes / p.bytes_total : p.files_total ? p.files_done / p.files_total : 0;
  el.querySelector('.fill').style.width = `${Math.max(0, Math.min(1, frac)) * 100}%`;
  el.querySelector('.label').textContent =
    `Loading profile… ${Math.round(frac * 100)}% — ${fmtInt(p.files_done)}/${fmtInt(p.files_total)} files, ` +
    `${fmtInt(p.events)} events, ${fmtBytes(p.bytes)} of ${fmtBytes(p.bytes_total)}` + (p.file ? ` — ${p.file}` : '');
}
