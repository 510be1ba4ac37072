// annotations.js -- flags, notes on events and named areas: the side panel
// that lists them (jump to, edit, delete), what the System Trace and the
// Device Trace draw of them, the link to an event, and their copy in the URL
// hash (so a link opens the same view with the same annotations).  The
// server keeps them in a file beside the store (/api/v1/annotations,
// doc/api.md); times are absolute ns strings there and rel ns on the
// timeline.  An annotation belongs to the system timeline or to one device
// profile (whose clock is its own): the device profile of its track.

import { get, send } from '../api.js';
import { esc, fmtTime } from '../format.js';
import { ANNOT_COLORS } from '../timeline/annotdraw.js';
import { banner } from './status.js';

const ICON = { flag: '⚑', note: '✎', area: '▭' };
const HASH_MAX = 200; // annotations carried in the URL

/** base64url of the UTF-8 of `text`, and back. */
function toB64(text) {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
function fromB64(s) {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** What makes two annotations the same one (a shared link read twice adds nothing). */
const sameKey = (kind, ts, end, text) => `${kind}|${ts}|${end}|${text || ''}`;

/**
 * The device profile id annotation `a` belongs to, from its track path
 * (domain and device profile are its 2nd and 14th parts); '' for the
 * system timeline.
 */
export function annotScope(a) {
  const p = (a.track_path || '').split('/');
  return p[1] === 'device' ? p[13] || '' : '';
}

const byTime = (a, b) => (BigInt(a.ts) < BigInt(b.ts) ? -1 : BigInt(a.ts) > BigInt(b.ts) ? 1 : Number(a.id) - Number(b.id));

export class Annotations {
  /** app: the page (main.js): view, viewName, profile, saveState(), goEvent(), show(), writeHash(). */
  constructor(app) {
    this.app = app;
    this.list = [];
    this.tv = null;
    this.scope = ''; // '' (system) or the device profile id of the view attached
    this.scopeTrack = null; // a track of that device profile: what its flags and areas are kept on
    this.el = document.getElementById('annot-panel');
    this.button = document.getElementById('annot-toggle');
    this.el.innerHTML = `<div class="annot-head"><b>Annotations</b> <span class="dim annot-count"></span><span class="spacer"></span>
      <button class="icon annot-close" title="Close the panel" aria-label="close annotations">×</button></div>
      <div class="annot-help dim">Click the time axis to drop a flag, “Add note” in Event Details, “Name this area” on an area selection.</div>
      <ul class="annot-list"></ul>`;
    this.ul = this.el.querySelector('.annot-list');
    this.button.onclick = () => this.show(this.el.hidden);
    this.el.querySelector('.annot-close').onclick = () => this.show(false);
  }

  /** Opens (true) or closes the side panel. */
  show(on) {
    this.el.hidden = !on;
    this.button.classList.toggle('active', on);
  }

  /** Reads the server's annotations (at start and after a re-ingest: event keys may change). */
  async load() {
    try { this.list = (await get('annotations')).annotations.sort(byTime); } catch { this.list = []; }
    this.changed(false);
  }

  /**
   * The view (TraceView) that draws them: the System Trace's (scope '') or
   * the Device Trace's of device profile `scope`, whose flags and areas are
   * kept on its base track `track`; detach() when it goes.
   */
  attach(tv, scope = '', track = null) { this.tv = tv; this.scope = scope; this.scopeTrack = track; this.changed(false); }
  detach(tv) { if (this.tv === tv) { this.tv = null; this.scope = ''; this.scopeTrack = null; } }

  /** Whether `a` is on the timeline of the view attached. */
  here(a) { return !!this.tv && annotScope(a) === this.scope; }

  changed(save = true) {
    this.draw();
    this.render();
    if (save) this.app.saveState(true);
  }

  draw() {
    const tv = this.tv;
    if (!tv) return;
    tv.tl.setAnnotations(this.list.filter((a) => this.here(a)).map((a) => {
      const k = /^(\d+):(\d+):\d+$/.exec(a.event || '');
      return { id: a.id, kind: a.kind, ts: tv.relOf(a.ts), end: tv.relOf(a.end), text: a.text || '', color: a.color, base: k ? k[1] : null, lane: k ? Number(k[2]) : 0 };
    }));
  }

  /**
   * The time of `a` as shown: from the origin its timeline counts from
   * when the view shows it; else from the profile start (system) or as
   * device time, naming its device profile.
   */
  timeOf(a) {
    const tv = this.tv, dp = annotScope(a), here = this.here(a);
    const at = here ? (abs) => tv.timeText(tv.relOf(abs))
      : dp ? (abs) => fmtTime(BigInt(abs)) : (abs) => fmtTime(BigInt(abs) - BigInt(this.app.profile?.start ?? 0));
    const where = !here && dp ? `Device profile ${dp} · ` : '';
    return where + (a.kind === 'area' ? `${at(a.ts)} – ${at(a.end)}` : at(a.ts));
  }

  render() {
    const n = this.list.length;
    this.el.querySelector('.annot-count').textContent = n ? `(${n})` : '';
    this.button.textContent = n ? `⚑ ${n}` : '⚑';
    this.ul.innerHTML = this.list.map((a) => {
      const color = a.color || ANNOT_COLORS[a.kind];
      const sub = a.kind === 'note' && a.event_name ? `<div class="annot-sub dim">on ${esc(a.event_name)}${a.event ? '' : ' (not in this profile any more)'}</div>` : '';
      return `<li class="annot" data-id="${esc(a.id)}" data-kind="${esc(a.kind)}">
        <span class="annot-ico" style="color:${esc(color)}">${ICON[a.kind] || ''}</span>
        <button class="link annot-jump" title="Go to it: ${esc(this.timeOf(a))}">${esc(this.timeOf(a))}</button>
        <input type="color" class="annot-color" value="${esc(/^#[0-9a-f]{6}$/i.test(color) ? color : '#888888')}" title="Colour" aria-label="colour">
        <button class="icon annot-del" title="Delete" aria-label="delete">×</button>
        <input class="annot-text" value="${esc(a.text || '')}" placeholder="${a.kind === 'note' ? 'Note…' : 'Name…'}" aria-label="text">${sub}</li>`;
    }).join('') || '<li class="empty dim">None yet.</li>';
    for (const li of this.ul.querySelectorAll('li.annot')) {
      const a = this.list.find((x) => x.id === li.dataset.id);
      const text = li.querySelector('.annot-text');
      li.querySelector('.annot-jump').onclick = () => this.jump(a);
      li.querySelector('.annot-del').onclick = () => this.remove(a);
      li.querySelector('.annot-color').onchange = (e) => this.update(a, { color: e.target.value });
      text.onkeydown = (e) => { if (e.key === 'Enter' || e.key === 'Escape') text.blur(); };
      text.onchange = () => { if (text.value !== (a.text || '')) this.update(a, { text: text.value }); };
    }
  }

  /** Focuses the text of annotation `id` in the panel. */
  focus(id) {
    const input = this.ul.querySelector(`li[data-id="${CSS.escape(id)}"] .annot-text`);
    input?.focus();
    input?.select();
  }

  // ---------------------------------------------------------- changes

  /** Keeps a new annotation (body: POST fields); on a device profile's view, on its track. */
  async add(body) {
    if (this.scope && !body.event) body = { ...body, track: this.scopeTrack };
    let a;
    try { a = await send('POST', 'annotations', body); } catch { return null; } // the error banner says why
    this.list.push(a);
    this.list.sort(byTime);
    this.changed();
    this.show(true);
    this.focus(a.id);
    return a;
  }

  async update(a, body) {
    let n;
    try { n = await send('PATCH', `annotations/${a.id}`, body); } catch { this.render(); return; }
    this.list = this.list.map((x) => (x.id === n.id ? n : x)).sort(byTime);
    this.changed();
  }

  async remove(a) {
    try { await send('DELETE', `annotations/${a.id}`); } catch { return; }
    this.list = this.list.filter((x) => x.id !== a.id);
    this.changed();
  }

  /** A single click on the time axis ({t, tol} rel ns): a new flag, or the flag already there. */
  flagAt(click) {
    const tv = this.tv;
    const near = this.list.find((a) => a.kind === 'flag' && this.here(a) && Math.abs(tv.relOf(a.ts) - click.t) <= click.tol);
    if (near) { this.show(true); this.focus(near.id); return null; }
    return this.add({ kind: 'flag', ts: tv.vp.abs(Math.round(click.t)), text: `Flag ${this.list.filter((a) => a.kind === 'flag').length + 1}` });
  }

  /** A note on event `ev` (GET /events answer). */
  noteOn(ev) { return this.add({ kind: 'note', event: ev.key, text: '' }); }

  /** Names the area selection {start, end} (rel ns). */
  nameArea(area) {
    const vp = this.tv.vp;
    return this.add({ kind: 'area', ts: vp.abs(Math.floor(Math.min(area.start, area.end))), end: vp.abs(Math.ceil(Math.max(area.start, area.end))), text: `Area ${this.list.filter((a) => a.kind === 'area').length + 1}` });
  }

  /**
   * Brings `a` into view, opening its timeline (system or device) if the
   * page shows another: a note selects its event; a flag is centred; an
   * area fills the window.
   */
  jump(a) {
    const here = this.here(a), dp = annotScope(a);
    if (here && a.kind === 'note' && a.event) { this.tv.selectKey(a.event, true); this.app.saveState(); return; }
    if (!dp && a.kind === 'note' && a.event) { this.app.goEvent(a.event); return; }
    const p = this.app.profile, ts = BigInt(a.ts), end = BigInt(a.end);
    const pad = a.kind === 'area' ? (end - ts) / 20n + 1n : dp ? 50000n : (BigInt(p.end) - BigInt(p.start)) / 200n + 1n;
    let s = ts - pad, e = end + pad;
    if (here && a.kind !== 'area') {
      const half = BigInt(Math.round((this.tv.vp.end - this.tv.vp.start) / 2));
      s = ts - half; e = ts + half;
    }
    if (here) { this.tv.vp.set(this.tv.relOf(String(s)), this.tv.relOf(String(e))); return; }
    if (s < 0n) s = 0n;
    const st = dp ? { v: 'device', dp, s: String(s), e: String(e), sel: a.event || '' } : { v: 'timeline', s: String(s), e: String(e) };
    this.app.writeHash(st, true);
    this.app.show(st.v, st);
  }

  // ---------------------------------------------------------- links

  /** The URL hash value carrying the annotations ('' when none). */
  hashValue() {
    if (!this.list.length) return '';
    return toB64(JSON.stringify(this.list.slice(0, HASH_MAX).map((a) => [a.kind, a.ts, a.end, a.text || '', a.color || '', a.event || '', a.track || ''])));
  }

  /**
   * Adds the annotations of a shared link (hash value v) that this server
   * does not keep yet; a note whose event this profile does not have stays
   * a note at its time.
   */
  async fromHash(v) {
    if (!v) return;
    let items;
    try { items = JSON.parse(fromB64(v)); } catch {
      banner('annot', 'The annotations in this link could not be read.', { kind: 'warn', timeout: 8000 });
      return;
    }
    const have = new Set(this.list.map((a) => sameKey(a.kind, a.ts, a.end, a.text)));
    let added = 0;
    for (const it of Array.isArray(items) ? items : []) {
      if (!Array.isArray(it)) continue;
      const [kind, ts, end, text, color, event, track] = it;
      if (have.has(sameKey(kind, ts, end, text))) continue;
      const body = { kind, ts, end, text, color: color || null };
      let a = null;
      if (kind === 'note' && event) a = await send('POST', 'annotations', { kind, event, text, color: color || null }, { quiet: true }).catch(() => null);
      if (!a && track) a = await send('POST', 'annotations', { ...body, track }, { quiet: true }).catch(() => null);
      a ||= await send('POST', 'annotations', body, { quiet: true }).catch(() => null);
      if (a) { this.list.push(a); have.add(sameKey(kind, ts, end, text)); added++; }
    }
    if (!added) return;
    this.list.sort(byTime);
    this.changed();
    banner('annot', `Added ${added} annotation${added === 1 ? '' : 's'} from the link.`, { kind: 'info', timeout: 5000 });
  }

  /** The URL that opens event `ev` of the view attached, in the current window when it shows the event. */
  eventLink(ev) {
    const vp = this.tv.vp, ts = BigInt(ev.start_ts), end = BigInt(ev.end_ts ?? ev.start_ts);
    let s = BigInt(vp.abs(Math.floor(vp.start))), e = BigInt(vp.abs(Math.ceil(vp.end)));
    if (ts < s || end > e) {
      const pad = (end - ts) / 4n + 1000n;
      s = ts - pad; e = end + pad;
    }
    const view = this.scope ? { v: 'device', dp: this.scope } : { v: 'timeline', ...(this.app.view?.grouping ? { g: this.app.view.grouping } : {}) };
    const p = new URLSearchParams({ ...view, s: String(s), e: String(e), sel: ev.key });
    const a = this.hashValue();
    if (a) p.set('a', a);
    return `${location.origin}${location.pathname}#${p}`;
  }

  /** The buttons the Event Details of `ev` get: "Add note" and "Copy link to this event". */
  decorate(ev, pane) {
    const actions = pane.querySelector('.actions');
    if (!actions || !this.tv) return;
    const note = document.createElement('button');
    note.className = 'add-note';
    note.textContent = '✎ Add note';
    note.onclick = () => this.noteOn(ev);
    const link = document.createElement('button');
    link.className = 'copy-link';
    link.textContent = 'Copy link to this event';
    link.onclick = () => {
      const url = this.eventLink(ev);
      link.dataset.link = url;
      const done = () => banner('annot', 'Link to this event copied.', { kind: 'info', timeout: 4000 });
      navigator.clipboard?.writeText(url).then(done, () => banner('annot', `Copy this link: ${url}`, { kind: 'info', timeout: 20000 }));
    };
    actions.append(note, link);
  }
}
