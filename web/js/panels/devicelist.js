// devicelist.js -- the Device Profiles List modal: filter, pages, a radio
// list of profile names, Cancel / Submit.

import { get } from '../api.js';
import { esc, fmtDur, fmtInt } from '../format.js';
import { openModal } from './modal.js';

const PER_PAGE = 20;

/** Opens the modal; onSubmit(profile) is called with the chosen item. */
export function openDeviceList(onSubmit) {
  const m = openModal('Device Profiles', 'Select a device profile to open the Device Trace Viewer');
  m.body.innerHTML = `<input id="dp-filter" type="search" placeholder="Filter by name" style="width:100%" aria-label="filter device profiles">
    <ul class="dp-list" id="dp-list"><li class="dim">Loading…</li></ul>`;
  m.footer.innerHTML = `<button id="dp-prev">‹ Prev</button><span id="dp-page" class="dim"></span><button id="dp-next">Next ›</button>
    <span class="spacer"></span><button id="dp-cancel">Cancel</button><button id="dp-submit" class="primary" disabled>Submit</button>`;
  const $ = (id) => m.body.querySelector(id) || m.footer.querySelector(id);
  let page = 1, total = 0, chosen = null, ctrl = null, timer = 0;
  const load = async () => {
    ctrl?.abort();
    ctrl = new AbortController();
    const list = $('#dp-list');
    try {
      const r = await get('device-profiles', { filter: $('#dp-filter').value, page, per_page: PER_PAGE }, { signal: ctrl.signal, quiet: true });
      total = r.total;
      const pages = Math.max(1, Math.ceil(total / PER_PAGE));
      $('#dp-page').textContent = `Page ${page} of ${pages} — ${fmtInt(total)} profile${total === 1 ? '' : 's'}`;
      $('#dp-prev').disabled = page <= 1;
      $('#dp-next').disabled = page >= pages;
      list.innerHTML = r.items.length ? r.items.map((d) => `<li><label>
          <input type="radio" name="dp" value="${esc(d.id)}" ${chosen?.id === d.id ? 'checked' : ''}>
          <span class="name">${esc(d.name)}</span>
          <span class="dim">NC ${esc(d.nc_id)} · ${esc(fmtDur(d.duration_ns))} · ${esc(fmtInt(d.instruction_count))} instr.</span></label></li>`).join('')
        : '<li class="dim">No device profile matches.</li>';
      for (const inp of list.querySelectorAll('input')) {
        inp.onchange = () => { chosen = r.items.find((d) => d.id === inp.value); $('#dp-submit').disabled = false; };
        inp.closest('label').ondblclick = () => { m.close(); onSubmit(r.items.find((d) => d.id === inp.value)); };
      }
    } catch (e) {
      if (e.name !== 'AbortError') list.innerHTML = `<li class="dim">Could not load the list: ${esc(e.message)}</li>`;
    }
  };
  $('#dp-filter').oninput = () => { clearTimeout(timer); timer = setTimeout(() => { page = 1; load(); }, 200); };
  $('#dp-prev').onclick = () => { page--; load(); };
  $('#dp-next').onclick = () => { page++; load(); };
  $('#dp-cancel').onclick = () => m.close();
  $('#dp-submit').onclick = () => { if (chosen) { m.close(); onSubmit(chosen); } };
  $('#dp-filter').focus();
  load();
}
