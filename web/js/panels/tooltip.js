// tooltip.js -- the hover tooltip that follows the mouse over the timeline.

import { esc } from '../format.js';

const tip = () => document.getElementById('tooltip');

/** Shows `html` near the client point (x, y), kept inside the window. */
export function showTip(html, x, y) {
  const el = tip();
  el.innerHTML = html;
  el.hidden = false;
  const w = el.offsetWidth, h = el.offsetHeight;
  let left = x + 14, top = y + 16;
  if (left + w > innerWidth - 4) left = Math.max(4, x - w - 14);
  if (top + h > innerHeight - 4) top = Math.max(4, y - h - 12);
  el.style.left = `${left}px`;
  el.style.top = `${top}px`;
}

export function hideTip() { tip().hidden = true; }

/** Tooltip body: a title, an optional note, then label/value rows (values are HTML-escaped unless raw). */
export function tipHtml(title, rows, note = '') {
  return `<div class="t-name">${esc(title)}</div>${note ? `<div class="t-note">${esc(note)}</div>` : ''}<table>${rows
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v, raw]) => `<tr><td>${esc(k)}</td><td>${raw ? v : esc(v)}</td></tr>`).join('')}</table>`;
}
