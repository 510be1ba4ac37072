#!/usr/bin/env node
// ui_test.mjs -- browser test of the web UI: a real headless Chromium
// (driven by playwright-core) against the real server on a profile made by
// neuron-explorer-synth.  Prints TAP.  Screenshots go to
// $NEX_BUILDDIR/tests/out/e2e/.  Missing Chromium or playwright-core is a
// failure, not a skip.

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const SRC = process.env.NEX_SRCDIR || path.resolve(here, '../..');
const BUILD = process.env.NEX_BUILDDIR || process.cwd();
const CHROMIUM = process.env.NEX_CHROMIUM || '/usr/bin/chromium';
const SERVER = path.join(BUILD, 'server/neuron-explorer-server');
const SYNTH = path.join(BUILD, 'tools/neuron-explorer-synth');
const OUT = path.join(BUILD, 'tests/out/e2e');

const TESTS = [];
const test = (name, fn) => TESTS.push({ name, fn });
let n = 0;
let failed = 0;

function report(ok, name, err) {
  n++;
  console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${name}`);
  if (!ok) {
    failed++;
    for (const line of String(err?.stack || err).split('\n').slice(0, 12)) console.log(`#   ${line}`);
  }
}

function assert(cond, msg) { if (!cond) throw new Error(msg); }
function eq(got, want, msg) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(`${msg}\n got:  ${g}\n want: ${w}`);
}

// ------------------------------------------------------------ environment

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nex-e2e-'));
let server = null;
let browser = null;
let port = 0;
let manifest = null;
let page = null;
const pageErrors = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function api(p) {
  const r = await fetch(`http://127.0.0.1:${port}/api/v1/${p}`);
  if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

async function waitFor(what, fn, ms = 60000) {
  const t0 = Date.now();
  let last;
  for (;;) {
    try { if (await fn()) return; } catch (e) { last = e; }
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function startServer() {
  const log = fs.openSync(path.join(tmp, 'server.log'), 'a');
  server = spawn(SERVER, ['--dir', path.join(tmp, 'profile'), '--db', path.join(tmp, 'store.db'),
    '--port', String(port), '--web-root', path.join(SRC, 'web')], { stdio: ['ignore', log, log] });
  server.on('exit', () => { server = null; });
  return waitFor('the server to be ready', async () => (await api('health')).state === 'ready');
}

function stopServer() {
  if (!server) return Promise.resolve();
  const s = server;
  return new Promise((resolve) => { s.once('exit', resolve); s.kill('SIGTERM'); });
}

async function shot(name) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
}

const idle = () => page.waitForFunction(() => window.nexDebug?.ready() && window.nexDebug.idle(), null, { timeout: 20000 });
const win = () => page.evaluate(() => window.nexDebug.window());

async function openPage(hash = '') {
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 950 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`http://localhost:${port}/${hash}`);
  await idle();
}

async function setup() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed: run "npm ci" in ${SRC} (${e.message})`);
  }
  assert(fs.existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: apt-get install chromium`);
  assert(fs.existsSync(SERVER), `server not built: ${SERVER}`);
  assert(fs.existsSync(SYNTH), `synth tool not built: ${SYNTH}`);
  fs.mkdirSync(OUT, { recursive: true });
  execFileSync(SYNTH, ['--out', path.join(tmp, 'profile'), '--manifest', path.join(tmp, 'manifest.json'),
    '--seed', '7', '--instances', '1', '--processes', '2', '--cores', '2', '--target-events', '200000'], { stdio: 'pipe' });
  manifest = JSON.parse(fs.readFileSync(path.join(tmp, 'manifest.json'), 'utf8'));
  port = await freePort();
  await startServer();
  browser = await chromium.launchPersistentContext(path.join(tmp, 'chrome-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// ------------------------------------------------------------ expectations

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const EXTRA = [
  '{I}/ND:\\d+/HBM:\\d+/neuron_hbm_usage', '{I}/NC:\\d+/host_to_device_transfers', '{I}/NC:\\d+/device_to_host_transfers',
  '{I}/NC:\\d+/host_to_device/transfer_bandwidth', '{I}/NC:\\d+/device_to_host/transfer_bandwidth',
  '{I}/host_memory_usage', '{I}/CPU:[^/]+/host_cpu_util',
];
// The documented names of the event tracks per grouping (doc/api.md).
const MODES = {
  default: ['{P}/framework/TID:\\d+', '{P}/framework/[^/]+ \\d+', '{P}/framework/Stream:\\d+', '{P}/neuron_rt/NC:\\d+', '{P}/neuron_hw/NC\\d+:\\d+', '{P}/neuron_rt/TID:\\d+'],
  cpu_device: ['{P}/TID:\\d+/neuron_rt', '{P}/TID:\\d+/framework', '{P}/Worker:\\d+/neuron_hw'],
  neuroncore: ['{I}/NC:\\d+', '{P}/TID:\\d+'],
  thread: ['{P}/TID:\\d+'],
  process: ['{P}'],
  instance: ['{I}'],
};

function namePatterns(mode) {
  const out = [];
  for (const p of manifest.processes) {
    const I = esc(p.instance_id), P = `${I}/PID:${p.pid}`;
    for (const s of [...MODES[mode], ...EXTRA]) out.push(new RegExp(`^${s.replaceAll('{P}', P).replaceAll('{I}', I)}$`));
  }
  return out;
}

// ------------------------------------------------------------ tests

test('the page loads the generated profile', async () => {
  await openPage();
  eq(await page.title(), 'Neuron Explorer', 'title');
  const w = await win();
  const p = await api('profile');
  eq(w.abs.s, p.start, 'the window starts at the profile start');
  eq(BigInt(w.abs.e) >= BigInt(p.end), true, 'the window covers the whole profile');
  const names = await page.evaluate(() => window.nexDebug.tracks());
  assert(names.length > 10, `only ${names.length} tracks`);
  eq(await page.$eval('.tl-canvas', (c) => c.width > 0), true, 'canvas drawn');
  await shot('01-system-default');
});

test('window fetches go over the WebSocket, decoded as the REST answers', async () => {
  const t = await page.evaluate(() => window.nexDebug.transport());
  assert(t.ws > 0, `no window fetch over the socket: ${JSON.stringify(t)}`);
  eq(t.rest, 0, 'window fetches over REST');
  // The page's own decoder of the binary frames against REST, row by row.
  const diff = await page.evaluate(async () => {
    const api = await import('/js/api.js');
    const [tr, p] = await Promise.all([api.get('tracks'), api.get('profile')]);
    const ids = (kind) => tr.tracks.filter((x) => x.kind === kind).flatMap((x) => x.base.map((b) => b.id)).join(',');
    const flat = (res, kind) => {
      const base = BigInt(res.base), out = [];
      const nm = (v) => (v ? res.names[v] ?? `?${v}` : '');
      for (const t of res.tracks) {
        for (const g of (kind === 'slices' ? t.lanes : t.series)) {
          for (let i = 0; i < g.ts.length; i++) {
            const abs = (base + BigInt(g.ts[i])).toString();
            out.push(kind === 'slices'
              ? [t.track, g.lane, abs, g.dur[i], nm(g.name[i]), nm(g.grp[i]), g.count[i]].join('|')
              : [t.track, g.series, abs, g.min[i] ?? NaN, g.max[i] ?? NaN, g.last[i] ?? NaN, g.count[i]].join('|'));
          }
        }
      }
      return out;
    };
    const span = BigInt(p.end) - BigInt(p.start);
    const windows = [[p.start, p.end, 1500], [(BigInt(p.start) + span / 3n).toString(), (BigInt(p.start) + span / 2n).toString(), 700]];
    for (const kind of ['slices', 'counters']) {
      for (const [start, end, px] of windows) {
        const params = { tracks: ids(kind === 'slices' ? 'slices' : 'counter'), start, end, px };
        const [ws, rest] = await Promise.all([api.windowQuery(kind, params), api.get(kind, params)]);
        const a = flat(ws, kind), b = flat(rest, kind);
        if (!a.length) return `${kind}: no rows`;
        if (a.length !== b.length) return `${kind}: ${a.length} rows, REST ${b.length}`;
        for (let i = 0; i < a.length; i++) {
          // REST writes doubles with 15 significant digits
          const x = a[i].split('|'), y = b[i].split('|');
          if (x.some((v, k) => v !== y[k] && !(Math.abs(+v - +y[k]) <= 1e-13 * Math.abs(+y[k])))) return `${kind} row ${i}: ${a[i]} vs ${b[i]}`;
        }
      }
    }
    return '';
  });
  eq(diff, '', 'socket and REST answers');
  assert((await page.evaluate(() => window.nexDebug.transport())).rest === 0, 'the comparison went over the socket');
});

test('window fetches fall back to REST when the socket cannot be opened', async () => {
  const p = await browser.newPage();
  await p.setViewportSize({ width: 1200, height: 800 });
  // Every WebSocket goes to a path that is not one: the upgrade fails.
  await p.addInitScript(() => {
    const W = window.WebSocket;
    window.WebSocket = class extends W { constructor(url, proto) { super(url.replace(/\/ws$/, '/no-ws'), proto); } };
  });
  const errors = [];
  p.on('pageerror', (e) => errors.push(e.message));
  await p.goto(`http://localhost:${port}/`);
  await p.waitForFunction(() => window.nexDebug?.ready() && window.nexDebug.idle(), null, { timeout: 20000 });
  const t = await p.evaluate(() => window.nexDebug.transport());
  assert(t.rest > 0, `no window fetch over REST: ${JSON.stringify(t)}`);
  eq(t.ws, 0, 'window fetches over the socket');
  eq(errors, [], 'page errors');
  await p.close();
});

for (const mode of Object.keys(MODES)) {
  test(`tracks under grouping "${mode}" have the documented names`, async () => {
    await page.selectOption('#grouping', mode);
    await page.waitForFunction((m) => location.hash.includes(`g=${m}`), mode);
    await idle();
    const names = await page.evaluate(() => window.nexDebug.tracks());
    const api_ = await api(`tracks?grouping=${mode}`);
    eq(names, api_.tracks.map((t) => t.name), 'the UI shows the tracks of /tracks in order');
    const pats = namePatterns(mode);
    const bad = names.filter((s) => !pats.some((re) => re.test(s)));
    eq(bad, [], 'names outside the documented patterns');
    const rows = new Set(await page.evaluate(() => window.nexDebug.rows()));
    const hidden = new Set(api_.tracks.filter((t) => t.hidden_by_default).map((t) => t.name));
    for (const s of names) assert(rows.has(s) === !hidden.has(s), `row shown for ${s} should be ${!hidden.has(s)}`);
    for (const p of manifest.processes) {
      const I = p.instance_id, P = `${I}/PID:${p.pid}`;
      const want = { default: `${P}/neuron_rt/NC:`, cpu_device: `${P}/Worker:`, neuroncore: `${I}/NC:`, thread: `${P}/TID:`, process: P, instance: I }[mode];
      assert(names.some((s) => s.startsWith(want)), `no track starting with ${want}`);
    }
    if (mode === 'process') eq(names.filter((s) => /^[^/]+\/PID:\d+$/.test(s)).sort(), manifest.processes.map((p) => `${p.instance_id}/PID:${p.pid}`).sort(), 'one track per process');
    if (mode === 'instance') eq(names.filter((s) => !s.includes('/')).sort(), [...manifest.instances].sort(), 'one track per instance');
    if (mode === 'default' || mode === 'process') await shot(`02-grouping-${mode}`);
  });
}

test('CPU utilization toggle shows the host_cpu_util tracks', async () => {
  await page.selectOption('#grouping', 'default');
  await idle();
  const cpu = (rows) => rows.filter((s) => s.endsWith('/host_cpu_util')).length;
  eq(cpu(await page.evaluate(() => window.nexDebug.rows())), 0, 'hidden by default');
  await page.check('#cpu-toggle');
  await idle();
  const all = (await api('tracks?grouping=default')).tracks.filter((t) => t.name.endsWith('/host_cpu_util')).length;
  assert(all > 0, 'the profile has CPU tracks');
  eq(cpu(await page.evaluate(() => window.nexDebug.rows())), all, 'every CPU track shown');
  await page.uncheck('#cpu-toggle');
});

test('wheel, keys and axis drag change the visible window', async () => {
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const mid = { x: box.x + box.w * 0.6, y: box.y + 200 };
  await page.mouse.move(mid.x, mid.y);
  const w0 = await win();
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -400);
  await page.keyboard.up('Control');
  await page.waitForFunction((d) => window.nexDebug.window().end - window.nexDebug.window().start < d * 0.8, w0.end - w0.start);
  const w1 = await win();
  await page.keyboard.down('d');
  await page.waitForFunction((s) => window.nexDebug.window().start > s, w1.start);
  await page.keyboard.up('d');
  const w2 = await win();
  assert(Math.abs((w2.end - w2.start) - (w1.end - w1.start)) < 1, 'D pans without zooming');
  await page.keyboard.down('s');
  await page.waitForFunction((d) => window.nexDebug.window().end - window.nexDebug.window().start > d * 1.2, w2.end - w2.start);
  await page.keyboard.up('s');
  await page.keyboard.press('0');
  await page.waitForFunction((s) => window.nexDebug.window().abs.s === s, w0.abs.s);
  // Drag on the axis: zoom to that range.
  const ax = box.y + 20, x0 = box.x + 500, x1 = box.x + 700;
  await page.mouse.move(x0, ax);
  await page.mouse.down();
  await page.mouse.move(x1, ax, { steps: 5 });
  await page.mouse.up();
  const w3 = await win();
  const wF = w0.end - w0.start;
  assert(w3.end - w3.start < wF * 0.3, `axis drag zoomed in (${w3.end - w3.start} of ${wF})`);
  await idle();
  await shot('03-zoomed');
  await page.keyboard.press('0');
});

test('clicking a merged run as wide as the view zooms in around the click', async () => {
  await page.keyboard.press('0');
  await idle();
  const hit = (await api('search?q=nc_exec_running&per_page=1')).items[0];
  const pos = await page.evaluate((k) => window.nexDebug.locate(k), hit.key);
  assert(pos, 'the first nc_exec_running row is on screen');
  // The executions run back to back: on the whole profile they are one run.
  const x = pos.x + 40;
  const run = await page.evaluate(([a, b]) => window.nexDebug.hit(a, b), [x, pos.y]);
  const w0 = await win();
  assert(run && run.count > 1, `a merged run under the cursor (${JSON.stringify(run)})`);
  assert(run.end - run.start > (w0.end - w0.start) / 4, `the run spans over a quarter of the view (${JSON.stringify(run)})`);
  const t0 = await page.evaluate((a) => window.nexDebug.timeAt(a), x);
  await page.mouse.click(x, pos.y);
  await page.waitForFunction((d) => { const w = window.nexDebug.window(); return w.end - w.start < d / 4; }, w0.end - w0.start);
  const w1 = await win();
  assert(Math.abs((w1.end - w1.start) * 8 - (w0.end - w0.start)) < 2, `zoomed in 8x (${w1.end - w1.start} of ${w0.end - w0.start})`);
  const t1 = await page.evaluate((a) => window.nexDebug.timeAt(a), x);
  assert(Math.abs(t1 - t0) < (w1.end - w1.start) / 1000, `the clicked time stays under the cursor (${t0} -> ${t1})`);
  await page.keyboard.press('0');
  await idle();
});

let execKey = null;
test('clicking an nc_exec_running shows its details, the drill-down opens the device view', async () => {
  const hit = (await api('search?q=nc_exec_running&per_page=1')).items[0];
  assert(hit, 'the profile has nc_exec_running events');
  execKey = hit.key;
  const ev = await api(`events/${encodeURIComponent(hit.key)}`);
  // Zoom to the event, then click it where it is drawn.
  const s = BigInt(ev.start_ts), d = BigInt(ev.duration_ns);
  await page.evaluate(([a, b]) => { location.hash = `#v=timeline&g=default&s=${a}&e=${b}`; }, [(s - d).toString(), (s + 2n * d).toString()]);
  await page.waitForFunction((a) => window.nexDebug.window().abs.s === a, (s - d).toString());
  await idle();
  const pos = await page.evaluate((k) => window.nexDebug.locate(k), hit.key);
  assert(pos, 'the event row is on screen');
  await page.mouse.click(pos.x + 4, pos.y);
  await page.waitForFunction((k) => window.nexDebug.selection() === k, hit.key);
  await page.waitForSelector('table.details');
  const fields = await page.$$eval('table.details tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  eq(fields.name, 'nc_exec_running', 'details name');
  eq(fields.trace_event_source, 'neuron_hw', 'details source');
  assert(fields.start_ts.startsWith(ev.start_ts), 'details start_ts');
  for (const k of Object.keys(ev.attributes || {})) assert(k in fields, `attribute ${k} listed`);
  const up = (ev.upstream || []).length;
  if (up) eq(await page.$$eval('.drawer button.link', (b) => b.length), up + (ev.downstream || []).length, 'dependency chain links');
  await shot('04-event-details');
  await page.click('#open-device');
  await page.waitForFunction(() => window.nexDebug.view() === 'device');
  await idle();
  const names = await page.evaluate(() => window.nexDebug.tracks());
  const engines = names.filter((x) => ['Tensor', 'TensorMatrix', 'Vector', 'Scalar', 'GpSimd', 'Sync'].includes(x));
  assert(engines.length >= 4, `engine rows: ${names.join(', ')}`);
  assert(names.some((x) => x.startsWith('DMA/')), 'DMA queue rows');
  const dr = await api(`events/${encodeURIComponent(hit.key)}/device-profile`);
  const w = await win();
  eq([w.abs.s, w.abs.e], [dr.start, dr.end], 'the device window is the execution');
  await shot('05-device-view');
  await page.click('#back');
  await page.waitForFunction(() => window.nexDebug.view() === 'timeline');
  await idle();
});

test('search finds a known event with the right count', async () => {
  const want = manifest.events.nc_exec_running;
  await page.fill('#search-q', 'nc_exec_running');
  await page.press('#search-q', 'Enter');
  await page.waitForFunction((w) => document.getElementById('search-count').textContent === `1 / ${w}`, want.toLocaleString('en-US'));
  const sel = await page.evaluate(() => window.nexDebug.selection());
  const first = (await api('search?q=nc_exec_running&per_page=1')).items[0];
  eq(sel, first.key, 'the first hit is selected');
  await page.press('#search-q', 'Enter');
  await page.waitForFunction((w) => document.getElementById('search-count').textContent === `2 / ${w}`, want.toLocaleString('en-US'));
  await page.press('#search-q', 'Shift+Enter');
  await page.waitForFunction((w) => document.getElementById('search-count').textContent === `1 / ${w}`, want.toLocaleString('en-US'));
  await idle();
  await shot('06-search');
  await page.fill('#search-q', 'no-such-event-name');
  await page.press('#search-q', 'Enter');
  await page.waitForFunction(() => document.getElementById('search-count').textContent === 'no hits');
  await page.fill('#search-q', '');
  await page.press('#search-q', 'Enter');
});

test('a deep link restores window, grouping, selection and device profile', async () => {
  const ev = await api(`events/${encodeURIComponent(execKey)}`);
  const s = (BigInt(ev.start_ts) - 5000n).toString(), e = (BigInt(ev.end_ts) + 5000n).toString();
  const hash = `#v=timeline&g=process&s=${s}&e=${e}&sel=${encodeURIComponent(execKey)}`;
  const old = page;
  await openPage(hash);
  await old.close();
  eq(await page.$eval('#grouping', (x) => x.value), 'process', 'grouping');
  const w = await win();
  eq([w.abs.s, w.abs.e], [s, e], 'window');
  await page.waitForFunction((k) => window.nexDebug.selection() === k, execKey);
  await page.waitForSelector('table.details');
  await idle();
  await shot('07-deep-link');
  const dp = (await api('device-profiles?per_page=1')).items[0];
  await openPage(`#v=device&dp=${dp.id}`);
  eq(await page.evaluate(() => window.nexDebug.view()), 'device', 'device view from the link');
  assert((await page.textContent('.subbar .title')).includes(dp.name), 'device profile name shown');
});

test('the device profiles modal filters, pages and submits', async () => {
  await page.click('#tabs [data-view=timeline]');
  await page.waitForFunction(() => window.nexDebug.view() === 'timeline');
  await idle();
  await page.click('#dp-open');
  await page.waitForSelector('#dp-list input[type=radio]');
  const total = manifest.device_profiles.length;
  eq(await page.$$eval('#dp-list input', (x) => x.length), Math.min(total, 20), 'first page');
  assert((await page.textContent('#dp-page')).includes(`${total} profile`), 'total shown');
  const pid = String(manifest.processes[0].pid);
  const want = manifest.device_profiles.filter((d) => d.file.includes(`_pid_${pid}/`)).length;
  await page.fill('#dp-filter', `pid_${pid}`);
  await page.waitForFunction((w) => document.querySelectorAll('#dp-list input').length === w &&
    [...document.querySelectorAll('#dp-list .name')].every((x) => x.textContent.includes('pid_')), want);
  const names = await page.$$eval('#dp-list .name', (x) => x.map((y) => y.textContent));
  for (const s of names) assert(s.includes(`_pid_${pid}`), `filtered: ${s}`);
  await shot('08-device-profiles-modal');
  await page.fill('#dp-filter', 'no-such-profile');
  await page.waitForFunction(() => document.querySelectorAll('#dp-list input').length === 0);
  await page.fill('#dp-filter', `pid_${pid}`);
  await page.waitForSelector('#dp-list input[type=radio]');
  await page.click('#dp-list input[type=radio]');
  await page.click('#dp-submit');
  await page.waitForFunction(() => window.nexDebug.view() === 'device');
  await idle();
});

test('area selection summarizes count, total and self time by name', async () => {
  await page.click('#tabs [data-view=timeline]');
  await page.waitForFunction(() => window.nexDebug.view() === 'timeline');
  await idle();
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + box.w * 0.3, box.y + 60);
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.9, box.y + box.h - 20, { steps: 6 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('table.area-summary tbody tr');
  const rows = await page.$$eval('table.area-summary tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert(rows.length > 0, 'rows');
  for (const r of rows) assert(Number(r[1].replace(/,/g, '')) > 0, `count of ${r[0]}`);
  await shot('09-area-selection');
});

test('help, theme and the summary view', async () => {
  await page.keyboard.press('Escape');
  await page.keyboard.press('?');
  await page.waitForSelector('.modal .keys');
  await shot('10-help');
  await page.keyboard.press('Escape');
  const t0 = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.click('#theme');
  eq(await page.evaluate(() => document.documentElement.dataset.theme), t0 === 'dark' ? 'light' : 'dark', 'theme switched');
  await page.click('#tabs [data-view=summary]');
  await page.waitForSelector('#overview .card');
  const sum = await api('summary');
  const cards = await page.$$eval('#overview .card', (c) => c.map((x) => [x.querySelector('.k').textContent, x.querySelector('.v').textContent]));
  eq(cards[0], ['Instances', String(sum.instances)], 'instances card');
  eq(cards[4], ['Total Device Profiles', String(manifest.device_profiles.length)], 'device profiles card');
  eq(await page.$$eval('#dp-table .open', (x) => x.length), manifest.device_profiles.length, 'device profiles table');
  await shot('11-summary');
  await page.click('#dp-table .open');
  await page.waitForFunction(() => window.nexDebug.view() === 'device');
  await idle();
});

test('the page reports a lost server and reconnects', async () => {
  await page.click('#tabs [data-view=timeline]');
  await idle();
  await stopServer();
  await page.waitForSelector('.banner.error');
  assert(/connection|does not answer/i.test(await page.textContent('.banner.error')), 'error banner text');
  await shot('12-server-gone');
  await startServer();
  await page.waitForFunction(() => !document.querySelector('.banner[data-id=conn]'), null, { timeout: 30000 });
});

test('new data under --dir shows ingest progress and refreshes the page live', async () => {
  await page.evaluate(() => {
    window.__progressSeen = false;
    new MutationObserver(() => { if (!document.getElementById('progress').hidden) window.__progressSeen = true; })
      .observe(document.getElementById('progress'), { attributes: true });
  });
  await page.evaluate(() => document.querySelector('.banner[data-id=live] .close')?.click());
  const dir = path.join(tmp, 'profile', manifest.processes[0].dir);
  const f = fs.readdirSync(dir).find((x) => x.endsWith('.json')) || fs.readdirSync(dir)[0];
  // Rewrite it unchanged: the watcher reacts to a file closed after writing.
  fs.writeFileSync(path.join(dir, f), fs.readFileSync(path.join(dir, f)));
  await page.waitForFunction(() => /Profile updated/.test(document.querySelector('.banner[data-id=live]')?.textContent || ''), null, { timeout: 60000 });
  eq(await page.evaluate(() => window.__progressSeen), true, 'the progress bar was shown');
  eq(await page.evaluate(() => document.getElementById('progress').hidden), true, 'and hidden again');
  await idle();
});

test('no script errors on the page', async () => {
  eq(pageErrors, [], 'page errors');
});

// ------------------------------------------------------------ main

async function main() {
  console.log(`1..${TESTS.length}`);
  if (process.env.NEX_SKIP_E2E) {
    for (const t of TESTS) report(true, `${t.name} # SKIP NEX_SKIP_E2E is set`);
    return;
  }
  const timer = setTimeout(() => { console.log('# Bail out! the browser test took more than 5 minutes'); cleanup().then(() => process.exit(1)); }, 300000);
  let setupErr = null;
  try { await setup(); } catch (e) { setupErr = e; }
  for (const t of TESTS) {
    if (setupErr) { report(false, t.name, setupErr); continue; }
    try { await t.fn(); report(true, t.name); } catch (e) { report(false, t.name, e); }
  }
  clearTimeout(timer);
}

async function cleanup() {
  try { await browser?.close(); } catch { /* already gone */ }
  await stopServer();
  if (failed && fs.existsSync(path.join(tmp, 'server.log'))) console.log(`# server log and profile kept in ${tmp}`);
  else fs.rmSync(tmp, { recursive: true, force: true });
}

main().then(cleanup, async (e) => { console.log(`# ${e.stack}`); failed++; await cleanup(); }).then(() => process.exit(failed ? 1 : 0));
