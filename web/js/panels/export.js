// export.js -- the Export dialog: GET /api/v1/export of the current window
// or of the area selection, as Perfetto (Chrome trace) JSON, the vendor's
// system_profile.json, CSV of the events, or the summary.

import { apiHref } from '../api.js';
import { esc, fmtDur } from '../format.js';
import { openModal } from './modal.js';

const FORMATS = [
  ['perfetto', 'Perfetto / Chrome trace (JSON)'],
  ['json', 'system_profile.json (re-ingestable)'],
  ['csv', 'CSV of the events'],
  ['summary-text', 'Summary (text)'],
  ['summary-json', 'Summary (JSON)'],
];

/**
 * Opens the dialog.  ranges: [{id, label, start, end}] (absolute ns digit
 * strings), the first one chosen.
 */
export function openExport(ranges) {
  const m = openModal('Export', 'Download the events of a time range');
  m.body.innerHTML = `<fieldset class="exp-ranges"><legend>Range</legend>${ranges.map((r, i) => `<label><input type="radio" name="exp-range" value="${i}" ${i ? '' : 'checked'}>
      ${esc(r.label)} <span class="dim">(${esc(fmtDur(Number(BigInt(r.end) - BigInt(r.start))))})</span></label>`).join('<br>')}</fieldset>
    <ul class="exp-links" id="exp-links"></ul>`;
  m.footer.innerHTML = '<span class="spacer"></span><button id="exp-close">Close</button>';
  const links = () => {
    const r = ranges[+m.body.querySelector('input[name=exp-range]:checked').value];
    m.body.querySelector('#exp-links').innerHTML = FORMATS.map(([f, label]) =>
      `<li><a class="exp-link" data-format="${f}" href="${esc(apiHref('export', { format: f, start: r.start, end: r.end }))}" download>${esc(label)}</a></li>`).join('');
  };
  for (const i of m.body.querySelectorAll('input[name=exp-range]')) i.onchange = links;
  m.footer.querySelector('#exp-close').onclick = () => m.close();
  links();
}
