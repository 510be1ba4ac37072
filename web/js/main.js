// main.js -- start-up and routing: the live connection (progress, ready,
// new data), the three views (System Trace, Summary, Device Trace), the URL
// hash that restores them, global keys, theme, search.

import { get, onApiError, onStale, connectLive } from './api.js';
import { installTestHook } from './testhook.js';
import { banner, dismiss, progress } from './panels/status.js';
import { esc, fmtDur, fmtInt } from './format.js';
import { Search } from './panels/search.js';
import { openHelp } from './panels/help.js';
import { closeModal, modalOpen } from './panels/modal.js';
import { openSqlConsole } from './panels/sqlconsole.js';
import { Annotations } from './panels/annotations.js';
import { SystemView, GROUPINGS } from './views/system.js';
import { DeviceView } from './views/device.js';
import { SummaryView } from './views/summary.js';
import { forgetEvents } from './views/traceview.js';

const main = document.getElementById('main');

const app = {
  profile: null,
  view: null,
  viewName: '',
  groupings: GROUPINGS.map(([v]) => v),
  fromSystem: false,
  lastHash: '',
  search: null,

  /** Shows view `v` ('timeline' | 'summary' | 'device') restoring URL state `st`. */
  async show(v, st = {}) {
    if (!['timeline', 'summary', 'device'].includes(v)) v = 'timeline';
    if (v === 'device' && !st.dp) v = 'timeline';
    this.view?.destroy();
    main.innerHTML = '';
    this.viewName = v;
    document.querySelectorAll('#tabs .tab[data-view]').forEach((b) => b.classList.toggle('active', b.dataset.view === v));
    const devTab = document.getElementById('dev-tab');
    devTab.hidden = v !== 'device';
    const view = v === 'summary' ? new SummaryView(this, main) : v === 'device' ? new DeviceView(this, main, st.dp) : new SystemView(this, main);
    this.view = view;
    if (v === 'device') devTab.textContent = `Device Trace — profile ${st.dp}`;
    try {
      await view.init(st);
    } catch (e) {
      if (this.view === view) banner('view', `Could not open the ${v} view: ${e.message}`);
      return;
    }
    if (this.view !== view) return;
    if (v === 'device' && view.dp) devTab.textContent = `Device Trace — PID ${view.dp.process_id} · NC ${view.dp.nc_id}`;
    this.saveState(true);
    if (this.search.q) this.search.rerun().catch(() => {});
  },

  /** Selects event `key` of the system timeline and brings it into view, switching to the timeline if needed. */
  goEvent(key) {
    if (this.viewName === 'timeline') { this.view.tv.selectKey(key, true); this.saveState(); return; }
    this.writeHash({ v: 'timeline', sel: key }, true);
    this.show('timeline', { sel: key });
  },

  /**
   * Opens the Device Trace Viewer of profile `id`, optionally at [start, end)
   * (device ns); `exec` the exec_id of the execution drilled down from.
   */
  openDevice(id, start, end, exec) {
    this.fromSystem = this.viewName === 'timeline';
    this.writeHash({ v: 'timeline', ...this.view.state() }, false);
    const st = { v: 'device', dp: String(id) };
    if (start && end) { st.s = String(start); st.e = String(end); }
    if (exec !== undefined && exec !== null) st.x = String(exec);
    this.writeHash(st, true);
    this.show('device', st);
  },

  backToSystem() {
    if (this.fromSystem) { history.back(); return; }
    this.writeHash({ v: 'timeline' }, true);
    this.show('timeline', {});
  },

  /** Puts the current view's state in the URL (debounced); the search marks follow the window. */
  saveState(now = false) {
    this.search?.viewChanged();
    clearTimeout(this.saveTimer);
    const write = () => {
      if (!this.view) return;
      this.writeHash({ v: this.viewName, ...this.view.state(), q: this.search.q || '', a: this.annots.hashValue() }, false);
    };
    if (now) write(); else this.saveTimer = setTimeout(write, 250);
  },

  writeHash(st, push) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(st)) if (v !== '' && v !== undefined && v !== null) p.set(k, v);
    const h = '#' + p.toString();
    if (h === location.hash && !push) return;
    this.lastHash = h;
    if (push) history.pushState(null, '', h); else history.replaceState(null, '', h);
  },

  /** The browser moved (back/forward, edited hash): follow it. */
  follow() {
    if (location.hash === this.lastHash) return;
    this.lastHash = location.hash;
    const st = parseHash();
    const v = st.v || 'timeline';
    if (v !== this.viewName || (v === 'device' && st.dp !== this.view?.id)) this.show(v, st);
    else this.view.apply(st);
    if ((st.q || '') !== (this.search.q || '')) this.search.set(st.q || '').catch(() => {});
  },

  /** New data landed: reload the profile and refresh the view in place. */
  async reload(events, onlyIfChanged = false) {
    let p;
    try { p = await get('profile'); } catch { return; }
    const old = this.profile;
    if (onlyIfChanged && old && ['start', 'end', 'event_count', 'device_profiles', 'generation'].every((k) => old[k] === p[k])) return;
    this.profile = p;
    showTitle(p);
    forgetEvents();
    await this.annots.load();
    if (!this.view) return;
    if (old && old.start !== p.start) { this.show(this.viewName, parseHash()); return; }
    await this.view.refresh(p);
    if (this.search.q) this.search.rerun().catch(() => {});
    banner('live', `Profile updated: ${fmtInt(events ?? p.event_count)} events.`, { kind: 'info', timeout: 5000 });
  },
};
window.nexApp = app;
onStale(() => app.reload()); // a request named a replaced store's ids

/** The profile title in the header: directory, instances, processes, time span. */
function showTitle(p) {
  const el = document.getElementById('profile-title');
  const dir = (p.dir || '').replace(/\/+$/, '');
  const n = (k, w, pl = `${w}s`) => `${fmtInt(k)} ${Number(k) === 1 ? w : pl}`;
  const span = p.start && p.end ? fmtDur(BigInt(p.end) - BigInt(p.start)) : '';
  el.innerHTML = `<b>${esc(dir.slice(dir.lastIndexOf('/') + 1) || dir)}</b><span>${esc([n((p.instances || []).length, 'instance'), n((p.processes || []).length, 'process', 'processes'), span].filter(Boolean).join(' · '))}</span>`;
  el.title = `${dir}\n${p.start} – ${p.end} ns`;
}

function parseHash() {
  return Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
}

// ------------------------------------------------------------ live status

let loaded = false;
let phase = '';

async function start() {
  if (loaded) return;
  let p;
  try { p = await get('profile', null, { quiet: true }); } catch (e) {
    if (e.status === 503) { showLoading(e.body?.progress); return; }
    showLoading(null, e.message);
    return;
  }
  if (loaded) return;
  if (p.state === 'failed') { showLoading(null, 'The profile could not be loaded (see the server log).'); return; }
  if (p.state !== 'ready' || !p.start) { showLoading(p.progress); return; }
  loaded = true;
  app.profile = p;
  showTitle(p);
  progress(null);
  if (p.warnings) banner('warnings', `${fmtInt(p.warnings)} ingest warning${p.warnings === 1 ? '' : 's'}: some data could not be read (see the Warning table).`, { kind: 'warn', timeout: 15000 });
  const st = parseHash();
  app.lastHash = location.hash;
  if (st.q) app.search.input.value = st.q;
  await app.annots.load();
  await app.show(st.v || 'timeline', st);
  await app.annots.fromHash(st.a);
  if (st.q) app.search.set(st.q).catch(() => {});
}

function showLoading(p, err) {
  if (loaded) return;
  main.innerHTML = `<div class="loading-screen"><div class="big">${err ? 'Waiting for the server…' : 'Loading the profile…'}</div>
    <div>${err ? esc(err) : 'The page opens as soon as the profile is ready.'}</div></div>`;
  if (p) progress(p);
}

const live = connectLive({
  onOpen() { dismiss('conn'); },
  onClose(retry) {
    phase = 'lost';
    banner('conn', `Lost the connection to the server — reconnecting in ${Math.round(retry / 1000) || 1} s…`, {
      kind: 'error', action: { label: 'Retry now', run: () => live.retryNow() },
    });
  },
  onMessage(m) {
    switch (m.type) {
      case 'hello':
        if (m.state === 'ready') { if (!loaded) start(); else if (phase === 'lost') app.reload(undefined, true); }
        if (m.state === 'failed') banner('ingest', 'The profile could not be loaded (see the server log).');
        phase = m.state;
        if (m.state === 'loading' && !loaded) showLoading(null);
        break;
      case 'progress':
        progress(m);
        if (!loaded) showLoading(null);
        break;
      case 'ready':
        progress(null);
        if (!loaded) start(); else app.reload(m.event_count);
        break;
      case 'new-data':
        banner('live', `New data under the profile directory (${(m.files || []).length} file${(m.files || []).length === 1 ? '' : 's'}) — loading it…`, { kind: 'info', timeout: 8000 });
        break;
      case 'warning':
        banner('warning', `Ingest warning: ${m.message}${m.file ? ` (${m.file}${m.offset != null ? ` @ ${m.offset}` : ''})` : ''}`, { kind: 'warn', timeout: 12000 });
        break;
      case 'failed':
        progress(null);
        banner('ingest', `The profile could not be loaded: ${m.error}`);
        break;
    }
  },
});

onApiError((e) => {
  if (e.status === 0) {
    phase = 'lost';
    banner('conn', 'The server does not answer — is neuron-explorer-server still running?', { kind: 'error', action: { label: 'Retry now', run: () => location.reload() } });
  } else {
    banner('api', `Server error ${e.status} (${e.code}): ${e.detail}`, { kind: 'error', timeout: 15000 });
  }
});

// ------------------------------------------------------------ chrome

app.annots = new Annotations(app);

app.search = new Search({
  scope: () => (app.view?.scope?.() ?? { domain: 'system' }),
  onHits: (hits, cur) => app.view?.setHits(hits, cur),
  onCounts: (counts) => app.view?.tv?.setHitCounts(counts),
  window: () => app.view?.tv?.searchWindow() ?? null,
  onMarks: (m) => app.view?.tv?.setSearchMarks(m),
  onGo: (h) => {
    if (app.viewName === 'summary') { app.goEvent(h.key); return; }
    app.view?.goHit(h);
    app.saveState();
  },
});

document.querySelectorAll('#tabs .tab[data-view]').forEach((b) => {
  b.onclick = () => {
    if (b.dataset.view === app.viewName || !loaded) return;
    app.writeHash({ v: b.dataset.view }, true);
    app.show(b.dataset.view, {});
  };
});

function toggleTheme() {
  const t = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  document.documentElement.dataset.theme = t;
  localStorage.setItem('nex.theme', t);
  app.view?.tv?.tl.readTheme();
  app.view?.drawChart?.();
}
document.getElementById('theme').onclick = toggleTheme;
document.getElementById('help').onclick = openHelp;
app.openSql = () => { if (loaded) openSqlConsole((key) => app.goEvent(key)); };

const typing = (e) => e.target instanceof Element && e.target.matches('input:not([type=checkbox]):not([type=radio]):not([type=button]), select, textarea');

document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && closeModal()) { e.preventDefault(); return; }
  if (typing(e) || e.altKey || e.ctrlKey || e.metaKey) return;
  if (modalOpen()) return;
  if (e.key === '?') { openHelp(); e.preventDefault(); return; }
  if (e.key === '/') { app.search.focus(); e.preventDefault(); return; }
  if (e.key === 't' || e.key === 'T') { toggleTheme(); return; }
  if (e.key === 'q' || e.key === 'Q') { app.openSql(); e.preventDefault(); return; }
  if (e.key === 'Enter' && app.search.q) { app.search.step(e.shiftKey ? -1 : 1); e.preventDefault(); return; }
  if (app.view?.key(e, true)) e.preventDefault();
});
document.addEventListener('keyup', (e) => { app.view?.key(e, false); });
window.addEventListener('blur', () => app.view?.tv?.tl.releaseKeys());
window.addEventListener('hashchange', () => app.follow());
window.addEventListener('popstate', () => app.follow());

installTestHook(app, () => loaded);

start();
