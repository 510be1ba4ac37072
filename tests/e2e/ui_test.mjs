#!/usr/bin/env node
// ui_test.mjs -- browser test of the web UI: a real headless Chromium
// (driven by playwright-core) against the real server on a profile made by
// neuron-explorer-synth.  Prints TAP.  Screenshots go to
// $NEX_BUILDDIR/tests/out/e2e/.  Without playwright-core (node_modules/,
// absent from a release tarball) or a Chromium binary every test prints a
// TAP skip line with the reason; NEX_REQUIRE_E2E=1 makes that a failure
// (tools/bootstrap.sh test sets it), NEX_SKIP_E2E=1 skips on purpose.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, waitFor, idle as idleOf, BUILD, OUT } from './harness.mjs';

const SYNTH = path.join(BUILD, 'tools/neuron-explorer-synth');
const h = harness('nex-e2e-');
const { test, api, tmp } = h;
let browser = null;
let manifest = null;
let page = null;
let port = 0;
const pageErrors = [];
const startServer = () => h.startServer(path.join(tmp, 'profile'));
const stopServer = () => h.stopServer();

async function shot(name) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
}

const idle = (p = page) => idleOf(p);
const win = () => page.evaluate(() => window.nexTest.state().window);

async function openPage(hash = '') {
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 950 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // Records the canvas texts (CSS px) while window.__recordTexts is set.
  await page.addInitScript(() => {
    const fill = CanvasRenderingContext2D.prototype.fillText;
    CanvasRenderingContext2D.prototype.fillText = function (s, x, y, ...rest) {
      if (window.__recordTexts) {
        const m = this.getTransform(), r = window.devicePixelRatio || 1;
        window.__texts.push({ s: String(s), x: (m.a * x + m.c * y + m.e) / r, y: (m.b * x + m.d * y + m.f) / r });
      }
      return fill.call(this, s, x, y, ...rest);
    };
  });
  await page.goto(`http://localhost:${port}/${hash}`);
  await idle();
}

async function setup() {
  assert(fs.existsSync(SYNTH), `synth tool not built: ${SYNTH}`);
  execFileSync(SYNTH, ['--out', path.join(tmp, 'profile'), '--manifest', path.join(tmp, 'manifest.json'),
    '--seed', '7', '--instances', '1', '--processes', '2', '--cores', '2', '--target-events', '200000'], { stdio: 'pipe' });
  manifest = JSON.parse(fs.readFileSync(path.join(tmp, 'manifest.json'), 'utf8'));
  await startServer();
  port = h.port();
  browser = await h.launch();
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
  eq(w.s, p.start, 'the window starts at the profile start');
  eq(BigInt(w.e) >= BigInt(p.end), true, 'the window covers the whole profile');
  const names = await page.evaluate(() => window.nexTest.tracks());
  assert(names.length > 10, `only ${names.length} tracks`);
  eq(await page.$eval('.tl-canvas', (c) => c.width > 0), true, 'canvas drawn');
  await shot('01-system-default');
});

test('window fetches go over the WebSocket, decoded as the REST answers', async () => {
  const t = await page.evaluate(() => window.nexTest.transport());
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
  assert((await page.evaluate(() => window.nexTest.transport())).rest === 0, 'the comparison went over the socket');
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
  await idle(p);
  const t = await p.evaluate(() => window.nexTest.transport());
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
    const names = await page.evaluate(() => window.nexTest.tracks());
    const api_ = await api(`tracks?grouping=${mode}`);
    eq(names, api_.tracks.map((t) => t.name), 'the UI shows the tracks of /tracks in order');
    const pats = namePatterns(mode);
    const bad = names.filter((s) => !pats.some((re) => re.test(s)));
    eq(bad, [], 'names outside the documented patterns');
    const rows = new Set(await page.evaluate(() => window.nexTest.rows()));
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
  eq(cpu(await page.evaluate(() => window.nexTest.rows())), 0, 'hidden by default');
  await page.check('#cpu-toggle');
  await idle();
  const all = (await api('tracks?grouping=default')).tracks.filter((t) => t.name.endsWith('/host_cpu_util')).length;
  assert(all > 0, 'the profile has CPU tracks');
  eq(cpu(await page.evaluate(() => window.nexTest.rows())), all, 'every CPU track shown');
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
  await page.waitForFunction((d) => window.nexTest.state().window.end - window.nexTest.state().window.start < d * 0.8, w0.end - w0.start);
  const w1 = await win();
  await page.keyboard.down('d');
  await page.waitForFunction((s) => window.nexTest.state().window.start > s, w1.start);
  await page.keyboard.up('d');
  const w2 = await win();
  assert(Math.abs((w2.end - w2.start) - (w1.end - w1.start)) < 1, 'D pans without zooming');
  await page.keyboard.down('s');
  await page.waitForFunction((d) => window.nexTest.state().window.end - window.nexTest.state().window.start > d * 1.2, w2.end - w2.start);
  await page.keyboard.up('s');
  await page.keyboard.press('0');
  await page.waitForFunction((s) => window.nexTest.state().window.s === s, w0.s);
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
  const pos = await page.evaluate((k) => window.nexTest.locate(k), hit.key);
  assert(pos, 'the first nc_exec_running row is on screen');
  // The executions run back to back: on the whole profile they are one run.
  const x = pos.x + 40;
  const run = await page.evaluate(([a, b]) => window.nexTest.hitAt(a, b), [x, pos.y]);
  const w0 = await win();
  assert(run && run.count > 1, `a merged run under the cursor (${JSON.stringify(run)})`);
  assert(run.end - run.start > (w0.end - w0.start) / 4, `the run spans over a quarter of the view (${JSON.stringify(run)})`);
  const t0 = await page.evaluate((a) => window.nexTest.timeAt(a), x);
  await page.mouse.click(x, pos.y);
  await page.waitForFunction((d) => { const w = window.nexTest.state().window; return w.end - w.start < d / 4; }, w0.end - w0.start);
  const w1 = await win();
  assert(Math.abs((w1.end - w1.start) * 8 - (w0.end - w0.start)) < 2, `zoomed in 8x (${w1.end - w1.start} of ${w0.end - w0.start})`);
  const t1 = await page.evaluate((a) => window.nexTest.timeAt(a), x);
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
  await page.waitForFunction((a) => window.nexTest.state().window.s === a, (s - d).toString());
  await idle();
  const pos = await page.evaluate((k) => window.nexTest.locate(k), hit.key);
  assert(pos, 'the event row is on screen');
  await page.mouse.click(pos.x + 4, pos.y);
  await page.waitForFunction((k) => window.nexTest.state().selection === k, hit.key);
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
  await page.waitForFunction(() => window.nexTest.view() === 'device');
  await idle();
  const names = await page.evaluate(() => window.nexTest.tracks());
  const engines = names.filter((x) => ['Tensor', 'TensorMatrix', 'Vector', 'Scalar', 'GpSimd', 'Sync'].includes(x));
  assert(engines.length >= 4, `engine rows: ${names.join(', ')}`);
  assert(names.some((x) => x.startsWith('DMA/')), 'DMA queue rows');
  const dr = await api(`events/${encodeURIComponent(hit.key)}/device-profile`);
  const w = await win();
  eq([w.s, w.e], [dr.start, dr.end], 'the device window is the execution');
  await shot('05-device-view');
  await page.click('#back');
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
  await idle();
});

test('search finds a known event with the right count', async () => {
  const want = manifest.events.nc_exec_running;
  await page.fill('#search-q', 'nc_exec_running');
  await page.press('#search-q', 'Enter');
  await page.waitForFunction((w) => document.getElementById('search-count').textContent === `1 / ${w}`, want.toLocaleString('en-US'));
  const sel = await page.evaluate(() => window.nexTest.state().selection);
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
  eq([w.s, w.e], [s, e], 'window');
  await page.waitForFunction((k) => window.nexTest.state().selection === k, execKey);
  await page.waitForSelector('table.details');
  await idle();
  await shot('07-deep-link');
  const dp = (await api('device-profiles?per_page=1')).items[0];
  await openPage(`#v=device&dp=${dp.id}`);
  eq(await page.evaluate(() => window.nexTest.view()), 'device', 'device view from the link');
  assert((await page.textContent('.subbar .title')).includes(dp.name), 'device profile name shown');
});

test('the device profiles modal filters, pages and submits', async () => {
  await page.click('#tabs [data-view=timeline]');
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
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
  await page.waitForFunction(() => window.nexTest.view() === 'device');
  await idle();
});

test('area selection summarizes count, total and self time by name', async () => {
  await page.click('#tabs [data-view=timeline]');
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
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
  await page.waitForFunction(() => window.nexTest.view() === 'device');
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

// ------------------------------------------------------------ issue #14

const UNITS = { s: 9, ms: 6, 'µs': 3, ns: 0 };
/** "1.101 600 250 s" -> BigInt ns, or null; a label with more decimals than its unit has is wrong too. */
function parseTime(text) {
  const m = /^(-?)(\d+)(?:\.([\d\u202f]+))?\s(s|ms|µs|ns)$/.exec(text.trim());
  if (!m) return null;
  const frac = (m[3] || '').replace(/\u202f/g, ''), k = UNITS[m[4]];
  if (frac.length > k) return null;
  const v = BigInt(m[2]) * 10n ** BigInt(k) + BigInt(frac.padEnd(k, '0') || '0');
  return m[1] ? -v : v;
}

/** Texts drawn on the canvas during one repaint: [{s, x, y}] in CSS px. */
async function drawnTexts() {
  await idle();
  await page.evaluate(() => { window.__texts = []; window.__recordTexts = true; window.nexTest.dispatch({ type: 'theme' }); });
  await idle();
  return page.evaluate(() => { window.__recordTexts = false; return window.__texts; });
}

/** The time axis labels drawn: [{t (BigInt ns), x}] (x of the tick in canvas px). */
async function axisLabels() {
  const texts = await drawnTexts();
  const labelW = await page.evaluate(() => window.nexTest.state().labelW);
  // a tile landing may repaint once more while recording: the same label
  // at the same place is one label
  const seen = new Set();
  return texts.filter((t) => Math.abs(t.y - 23) < 1 && t.x > labelW)
    .filter((t) => !seen.has(`${t.s}@${t.x}`) && seen.add(`${t.s}@${t.x}`))
    .map((t) => ({ s: t.s, t: parseTime(t.s), x: t.x - 3 }));
}

let transfer = null;
test('time axis labels are exact and distinct at 2 µs, 100 ns and 20 ns windows', async () => {
  await page.click('#tabs [data-view=timeline]');
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
  await idle();
  const p = await api('profile');
  const hit = (await api('search?q=dmem_buf_copyin&per_page=1')).items[0];
  assert(hit, 'the profile has transfers');
  transfer = { ...(await api(`events/${encodeURIComponent(hit.key)}`)), profileStart: p.start };
  const rel = Number(BigInt(transfer.start_ts) - BigInt(p.start));
  for (const W of [2000, 100, 20]) {
    const s0 = rel - W / 3;
    await page.evaluate(([a, b]) => window.nexTest.dispatch({ type: 'window', start: a, end: b }), [s0, s0 + W]);
    const st = await page.evaluate(() => window.nexTest.state());
    const labels = await axisLabels();
    const nspp = (st.window.end - st.window.start) / (st.width - st.labelW - 12);
    assert(labels.length >= 4, `${W} ns window: ${labels.length} axis labels (${labels.map((l) => l.s).join(' | ')})`);
    eq(labels.filter((l) => l.t === null).map((l) => l.s), [], `${W} ns window: labels that are not times`);
    eq(new Set(labels.map((l) => l.s)).size, labels.length, `${W} ns window: distinct labels (${labels.map((l) => l.s).join(' | ')})`);
    for (const l of labels) {
      const at = st.window.start + (l.x - st.labelW) * nspp;
      assert(Math.abs(Number(l.t) - at) <= nspp + 0.5, `${W} ns window: label ${l.s} drawn at ${at.toFixed(1)} ns`);
    }
  }
  await shot('13-axis-20ns');
});

test('a transfer\'s tooltip and details give its times and duration to the ns; the origin can be moved to it', async () => {
  const p0 = BigInt(transfer.profileStart), s = BigInt(transfer.start_ts), d = BigInt(transfer.duration_ns);
  await page.evaluate(([a, b]) => { location.hash = `#v=timeline&g=default&s=${a}&e=${b}`; }, [(s - d).toString(), (s + 2n * d).toString()]);
  await page.waitForFunction((a) => window.nexTest.state().window.s === a, (s - d).toString());
  await idle();
  const pos = await page.evaluate((k) => window.nexTest.locate(k), transfer.key);
  assert(pos, 'the transfer is on screen');
  const x = pos.x + 20;
  await page.mouse.move(x, pos.y);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden && /dmem_buf_copyin/.test(document.getElementById('tooltip').textContent));
  await idle();
  const rows = await page.$$eval('#tooltip tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  const [a, b] = rows.Time.split(' – ');
  eq([String(parseTime(a)), String(parseTime(b))], [String(s - p0), String(s + d - p0)], `tooltip time ${rows.Time}`);
  eq(String(parseTime(rows.Duration)), String(d), `tooltip duration ${rows.Duration}`);
  await shot('14-transfer-tooltip');
  await page.mouse.click(x, pos.y);
  await page.waitForFunction((k) => window.nexTest.state().selection === k, transfer.key, { timeout: 5000 })
    .catch(async (e) => { throw new Error(`${e.message}: ${JSON.stringify(await page.evaluate(() => window.nexTest.state()))}`); });
  await page.waitForSelector('table.details');
  const fields = await page.$$eval('table.details tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  const m = /\((.*) from the start\)/.exec(fields.start_ts);
  assert(m, `details start_ts: ${fields.start_ts}`);
  eq(String(parseTime(m[1])), String(s - p0), 'details start from the profile start');
  // O: time 0 is the selected transfer; the axis label at its start reads 0.
  await page.keyboard.press('o');
  await waitFor('the origin at the transfer', async () => (await page.evaluate(() => window.nexTest.state().origin)) === transfer.start_ts, 10000)
    .catch(async (e) => { throw new Error(`${e.message}: ${JSON.stringify(await page.evaluate(() => [window.nexTest.state(), document.activeElement?.outerHTML.slice(0, 80)]))}`); });
  const labels = await axisLabels();
  const zero = labels.find((l) => l.t === 0n);
  assert(zero, `an axis label "0" (${labels.map((l) => l.s).join(' | ')})`);
  assert(Math.abs(zero.x - (pos.x - 2)) <= 2, `the 0 label at the transfer's start (${zero.x} vs ${pos.x - 2})`);
  assert(labels.some((l) => l.t < 0n) && labels.some((l) => l.t > 0n), 'times before and after the origin');
  await page.waitForFunction((o) => location.hash.includes(`&o=${o}`), transfer.start_ts);
  await shot('15-origin');
  await page.keyboard.press('Shift+O');
  await page.waitForFunction(() => window.nexTest.state().origin === null);
  await page.keyboard.press('Escape');
  await page.keyboard.press('0');
  await idle();
});

test('single-child groups fold into one row; group headers stay in view while scrolling', async () => {
  await page.selectOption('#grouping', 'default');
  await idle();
  const I = manifest.instances[0];
  const rows = new Set(await page.evaluate(() => window.nexTest.rows()));
  assert(rows.has(`${I}/ND:0`), 'the ND:0 group is a row');
  assert(!rows.has(`${I}/ND:0/HBM:0`), 'HBM:0 (one child) is not a row of its own');
  assert(rows.has(`${I}/ND:0/HBM:0/neuron_hbm_usage`), 'the HBM track is a row');
  const boxes = await page.evaluate(() => window.nexTest.rowBoxes());
  eq(boxes.find((b) => b.path === `${I}/ND:0/HBM:0/neuron_hbm_usage`)?.label, 'HBM:0/neuron_hbm_usage', 'the folded row\'s label');
  for (const b of boxes) {
    if (!b.group) continue;
    const kids = boxes.filter((c) => c.path === `${b.path}/${c.label}`);
    assert(kids.length > 1, `group ${b.path} has ${kids.length} child rows`);
  }
  // Scroll so that the first NeuronCore row of the first process's runtime is at the top.
  const P = `${I}/PID:${manifest.processes.find((p) => p.instance_id === I).pid}`;
  const target = boxes.find((b) => b.path.startsWith(`${P}/neuron_rt/NC:`) && !b.group);
  assert(target, `a runtime NeuronCore row under ${P}`);
  await page.evaluate((y) => window.nexTest.dispatch({ type: 'scroll', top: y }), target.y);
  await page.waitForFunction((y) => window.nexTest.state().scrollTop === y, target.y);
  const st = await page.evaluate(() => window.nexTest.state());
  // The kept headers are drawn last over the rows they cover.
  const top = (await drawnTexts()).filter((t) => t.x < st.labelW && t.y > 40 && t.y < 40 + 3 * 22 && !/^[▼▶]$/.test(t.s)).map((t) => t.s);
  eq(top.slice(-3), [I, `PID:${P.split(':').pop()}`, 'neuron_rt'], `the group headers drawn at the top of the list (${top.join(' | ')})`);
  await shot('16-sticky-headers');
  // The kept header of the process is a header: a click on it collapses the process.
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
  await page.mouse.click(box.x + 60, box.y + 40 + 22 + 11);
  await page.waitForFunction((p) => window.nexTest.state().collapsed.includes(p), P);
  await page.evaluate((p) => { window.nexTest.dispatch({ type: 'collapse', path: p, value: false }); window.nexTest.dispatch({ type: 'scroll', top: 0 }); }, P);
  await idle();
});

test('the header names the profile; the details panel fits its content and collapses', async () => {
  const p = await api('profile');
  const title = await page.textContent('#profile-title');
  assert(title.startsWith(path.basename(p.dir)), `title names the directory: ${title}`);
  const parts = title.slice(path.basename(p.dir).length).split(' · ');
  eq(parts.slice(0, 2), [`${p.instances.length} instance${p.instances.length === 1 ? '' : 's'}`, `${p.processes.length} processes`], 'instances and processes');
  eq(String(parseTime(parts[2])), String(BigInt(p.end) - BigInt(p.start)), `the time span (${parts[2]})`);
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => window.nexTest.state().selection === null);
  const vh = await page.evaluate(() => innerHeight);
  const empty = await page.$eval('.drawer', (d) => d.getBoundingClientRect().height);
  assert(empty < vh * 0.12, `an empty details panel is ${empty} px high of ${vh}`);
  // With an event selected it grows to its content, up to under half the page.
  await page.evaluate(async (k) => { location.hash = `#v=timeline&g=default&sel=${encodeURIComponent(k)}`; }, transfer.key);
  await page.waitForSelector('table.details');
  await idle();
  const full = await page.$eval('.drawer', (d) => d.getBoundingClientRect().height);
  assert(full > empty + 100 && full <= vh * 0.5, `a details panel with an event is ${full} px high`);
  await shot('17-details-panel');
  await page.click('.drawer-head .toggle');
  const closed = await page.$eval('.drawer', (d) => d.getBoundingClientRect().height);
  assert(closed <= 34, `a collapsed panel is ${closed} px high`);
  await page.click('.drawer-head .toggle');
});

test('the track filter shows the matching tracks only, or marks them', async () => {
  await page.keyboard.press('Escape');
  const all = await page.evaluate(() => window.nexTest.rows());
  const names = new Set(await page.evaluate(() => window.nexTest.tracks()));
  const trackRows = (rows) => rows.filter((r) => names.has(r));
  await page.fill('.tl-filter', 'HBM');
  await page.waitForFunction(() => window.nexTest.state().filter.text === 'HBM');
  let rows = trackRows(await page.evaluate(() => window.nexTest.rows()));
  const want = (await api('tracks?grouping=default')).tracks.filter((t) => /hbm/i.test(t.name) && !t.hidden_by_default).map((t) => t.name);
  eq(rows, want, 'the HBM tracks only');
  await page.fill('.tl-filter', '/NC:0\\/host_to_device_transfers$/');
  await page.waitForFunction(() => window.nexTest.state().filter.text.startsWith('/NC:0'));
  rows = trackRows(await page.evaluate(() => window.nexTest.rows()));
  eq(rows, manifest.instances.map((i) => `${i}/NC:0/host_to_device_transfers`), 'a regular expression');
  await idle();
  await shot('18-track-filter');
  await page.uncheck('.tl-only');
  await page.waitForFunction(() => window.nexTest.state().filter.only === false);
  eq(await page.evaluate(() => window.nexTest.rows()), all, 'every row back, the matches marked');
  await page.check('.tl-only');
  await page.fill('.tl-filter', '');
  await page.press('.tl-filter', 'Escape');
  await page.waitForFunction(() => window.nexTest.state().filter.text === '');
  eq(await page.evaluate(() => window.nexTest.rows()), all, 'every row back');
});

test('a merged run is one box across tile edges; its tooltip gives count, span and busy time', async () => {
  await page.keyboard.press('0');
  await idle();
  const hit = (await api('search?q=nc_exec_running&per_page=1')).items[0];
  const pos = await page.evaluate((k) => window.nexTest.locate(k), hit.key);
  const st = await page.evaluate(() => window.nexTest.state());
  const nspp = (st.window.end - st.window.start) / (st.width - st.labelW - 12);
  const run = await page.evaluate(([a, b]) => window.nexTest.hitAt(a, b), [pos.x + 40, pos.y]);
  assert(run && run.count > 1, `a merged run (${JSON.stringify(run)})`);
  // A tile edge inside the run: the same run on both sides of it.
  const span = st.resolution * 1024;
  const edge = Math.ceil((run.start + 3 * nspp) / span) * span;
  assert(edge < run.end - 3 * nspp, `the run [${run.start}, ${run.end}) crosses a tile edge (${span} ns tiles)`);
  const canvasLeft = await page.$eval('.tl-canvas', (c) => c.getBoundingClientRect().left);
  const px = (t) => canvasLeft + st.labelW + (t - st.window.start) / nspp;
  const left = await page.evaluate(([a, b]) => window.nexTest.hitAt(a, b), [px(edge) - 3, pos.y]);
  const right = await page.evaluate(([a, b]) => window.nexTest.hitAt(a, b), [px(edge) + 3, pos.y]);
  eq([left?.start, left?.end, left?.count], [right?.start, right?.end, right?.count], 'the run on both sides of the tile edge');
  const texts = (await drawnTexts()).map((t) => t.s).filter((s) => s.startsWith('nc_exec_running ×'));
  assert(texts.includes(`nc_exec_running ×${run.count}`), `the box label counts the whole run: ${texts.join(' | ')}`);
  // Tooltip.
  await page.mouse.move(px(edge) + 3, pos.y);
  await page.waitForFunction(() => /Busy/.test(document.getElementById('tooltip').textContent) && !/loading/.test(document.getElementById('tooltip').textContent));
  const tip = await page.$$eval('#tooltip tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  const note = await page.textContent('#tooltip');
  assert(!/longest shown/.test(note), 'no "longest shown"');
  eq(tip.Events, run.count.toLocaleString('en-US'), 'events in the run');
  const [a, b] = tip.Span.split(' – ').map(parseTime);
  assert(a !== null && b !== null && Math.abs(Number(a) - run.start) <= nspp && Math.abs(Number(b) - run.end) <= nspp, `span ${tip.Span} vs [${run.start}, ${run.end})`);
  const m = /^(.*) \(([\d.]+)% of the span\)$/.exec(tip.Busy);
  assert(m && parseTime(m[1]) > 0n && +m[2] > 0 && +m[2] <= 100, `busy: ${tip.Busy}`);
  await shot('19-merged-tooltip');
  await page.mouse.move(5, 5);
});

test('a collapsed group draws the busy time of its tracks', async () => {
  const I = manifest.instances[0];
  const P = `${I}/PID:${manifest.processes.find((p) => p.instance_id === I).pid}`;
  await page.evaluate((p) => window.nexTest.dispatch({ type: 'collapse', path: p, value: true }), P);
  await idle();
  const row = (await page.evaluate(() => window.nexTest.rowBoxes())).find((b) => b.path === P);
  const st = await page.evaluate(() => window.nexTest.state());
  // Pixels of the row's timeline part that are not its background (a group row's).
  const busy = await page.evaluate(([y, lw]) => {
    const c = document.querySelector('.tl-canvas'), r = window.devicePixelRatio || 1;
    const d = c.getContext('2d').getImageData(Math.round((lw + 4) * r), Math.round(y * r), Math.round((c.width / r - lw - 30) * r), Math.round(12 * r)).data;
    const probe = document.createElement('canvas').getContext('2d');
    probe.fillStyle = getComputedStyle(document.documentElement).getPropertyValue('--tl-group').trim();
    probe.fillRect(0, 0, 1, 1);
    const bg = probe.getImageData(0, 0, 1, 1).data.join(), n = d.length / 4;
    let other = 0;
    for (let i = 0; i < d.length; i += 4) if (`${d[i]},${d[i + 1]},${d[i + 2]},${d[i + 3]}` !== bg) other++;
    return other / n;
  }, [40 + row.y - st.scrollTop + 5, st.labelW]);
  assert(busy > 0.2, `the collapsed process row is ${(busy * 100).toFixed(1)}% drawn`);
  await shot('20-collapsed-summary');
  await page.evaluate((p) => window.nexTest.dispatch({ type: 'collapse', path: p, value: false }), P);
  await idle();
});

test('counter tracks show their scale, the value under the pointer, and share a scale per kind', async () => {
  await page.keyboard.press('0');
  await page.fill('.tl-filter', '/neuron_hbm_usage|transfer_bandwidth/');
  await page.waitForFunction(() => window.nexTest.state().filter.text.includes('hbm'));
  await idle();
  const st = await page.evaluate(() => window.nexTest.state());
  eq(st.sharedScales, true, 'shared scales by default');
  const boxes = (await page.evaluate(() => window.nexTest.rowBoxes())).filter((b) => !b.group);
  const cap = (await api('profile')).metadata.map((m) => Number(m.hbm_capacity_bytes)).find((x) => x > 0);
  assert(cap > 0, 'the profile states the HBM capacity');
  const capText = `${(cap / 2 ** 30).toFixed(2)} GiB`;
  // The y-axis label of each counter row, drawn at its top left.
  const scales = async () => {
    const texts = await drawnTexts();
    const out = {};
    for (const b of boxes) {
      const y = 40 + b.y - st.scrollTop;
      const t = texts.find((x) => x.x > st.labelW && x.x < st.labelW + 12 && x.y >= y && x.y < y + 10);
      out[b.path] = t?.s ?? null;
    }
    return out;
  };
  let sc = await scales();
  const hbm = boxes.filter((b) => b.path.endsWith('neuron_hbm_usage')).map((b) => b.path);
  const bw = boxes.filter((b) => b.path.endsWith('transfer_bandwidth')).map((b) => b.path);
  assert(hbm.length >= 2 && bw.length >= 2, `HBM and bandwidth rows in view: ${boxes.map((b) => b.path).join(', ')}`);
  for (const p of hbm) eq(sc[p], `${capText} (shared)`, `HBM scale of ${p}`);
  const bws = new Set(bw.map((p) => sc[p]));
  eq(bws.size, 1, `one bandwidth scale: ${[...bws].join(', ')}`);
  assert(/B\/s \(shared\)$/.test([...bws][0]), `bandwidth scale in B/s: ${[...bws][0]}`);
  // The value under the pointer.
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width }; });
  const row = boxes.find((b) => b.path === hbm[0]);
  await page.mouse.move(box.x + box.w * 0.7, box.y + 40 + row.y - st.scrollTop + row.h / 2);
  await page.waitForFunction(() => /Total Usage/.test(document.getElementById('tooltip').textContent));
  const tipTotal = await page.$$eval('#tooltip tr', (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]).find((r) => r[0] === 'Total Usage')[1]);
  const drawn = (await drawnTexts()).map((t) => t.s);
  assert(drawn.includes(tipTotal.replace(/ \(.*\)$/, '')), `the value under the pointer (${tipTotal}) is drawn`);
  await shot('21-counter-scales');
  // Y: every track on its own scale.
  await page.mouse.move(5, 5);
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('y');
  await page.waitForFunction(() => window.nexTest.state().sharedScales === false);
  sc = await scales();
  for (const p of [...hbm, ...bw]) assert(sc[p] && !sc[p].includes('shared'), `own scale of ${p}: ${sc[p]}`);
  assert(hbm.some((p) => sc[p] !== `${capText}`), 'HBM scaled to its own data');
  await page.click('#shared-scales');
  await page.waitForFunction(() => window.nexTest.state().sharedScales === true);
  await page.fill('.tl-filter', '');
  await page.press('.tl-filter', 'Escape');
  await idle();
});

test('an area selection sums the dragged rows only and its table sorts', async () => {
  eq(await page.evaluate(() => document.activeElement.className), 'tl-canvas', 'the timeline has the focus');
  await page.keyboard.press('0');
  await idle();
  const st = await page.evaluate(() => window.nexTest.state());
  const boxes = await page.evaluate(() => window.nexTest.rowBoxes());
  const byName = new Map((await api('tracks?grouping=default')).tracks.map((t) => [t.name, t]));
  // Ten rows from the second one: they cross group headers (process, runtime, hardware).
  const i0 = 1, i1 = 10;
  const rows = boxes.slice(i0, i1 + 1);
  assert(rows.some((r) => r.group), 'the drag crosses a group header');
  const want = rows.flatMap((r) => (byName.get(r.path)?.kind === 'slices' ? byName.get(r.path).base.map((b) => String(b.id)) : []));
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width }; });
  const yOf = (r) => box.y + 40 + r.y - st.scrollTop + Math.min(r.h, 22) / 2;
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + box.w * 0.4, yOf(rows[0]));
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.8, yOf(rows[rows.length - 1]), { steps: 6 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForFunction(() => window.nexTest.state().area);
  const area = await page.evaluate(() => window.nexTest.state().area);
  eq([...area.bases].sort(), [...new Set(want)].sort(), `the base tracks of the ${rows.length} rows dragged over`);
  await page.waitForSelector('table.area-summary tbody tr');
  const head = await page.textContent('.drawer h3');
  assert(head.includes(`${area.bases.length} track${area.bases.length === 1 ? '' : 's'}`), `summary head: ${head}`);
  // Sort by count, both ways.
  const counts = () => page.$$eval('table.area-summary tbody tr', (trs) => trs.map((tr) => Number(tr.cells[1].textContent.replace(/,/g, ''))));
  await page.click('table.area-summary th[data-key=count]');
  let c = await counts();
  eq(c, [...c].sort((a, b) => a - b), 'ascending counts');
  await page.click('table.area-summary th[data-key=count]');
  c = await counts();
  eq(c, [...c].sort((a, b) => b - a), 'descending counts');
  await shot('22-area-rows');
  await page.keyboard.press('Escape');
});

test('the SQL console runs a query, reveals a row on the timeline, keeps saved queries; export links the window', async () => {
  const sql = 'SELECT track, lane, start_ts, name, duration_ns FROM SystemProfileEvents ORDER BY duration_ns DESC, start_ts LIMIT 7';
  const want = await (await fetch(`http://127.0.0.1:${port}/api/v1/db/system/_search`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ type: 'databaseExplorerQuery', query: sql }),
  })).json();
  eq(want.rows.length, 7, 'rows of the query over REST');
  await page.click('#sql-open');
  await page.waitForSelector('#sql-q');
  await page.waitForSelector('#sql-tables button[data-t=SystemProfileEvents]');
  await page.fill('#sql-q', sql);
  await page.click('#sql-run');
  await page.waitForSelector('table.sql-grid tbody tr');
  eq(await page.$$eval('table.sql-grid th', (ths) => ths.map((th) => th.textContent)), want.columns, 'grid columns');
  const grid = await page.$$eval('table.sql-grid tbody tr', (trs) => trs.map((tr) => ({ key: tr.dataset.key, name: tr.cells[3].textContent })));
  eq(grid.map((r) => r.name), want.rows.map((r) => r[3]), 'grid names in order');
  eq(grid.map((r) => r.key), want.rows.map((r) => `${r[0]}:${r[1]}:${r[2]}`), 'every row names its event');
  assert(/^7 rows/.test(await page.textContent('#sql-status')), `status: ${await page.textContent('#sql-status')}`);
  await shot('30-sql-console');
  // A bad query says why and keeps the console open.
  await page.fill('#sql-q', 'DELETE FROM slice');
  await page.click('#sql-run');
  await page.waitForSelector('.sql-error');
  // Save a query, then pick a row: the console closes and the event is selected and in view.
  await page.fill('#sql-q', sql);
  await page.fill('#sql-name', 'longest seven');
  await page.click('#sql-save');
  await page.waitForSelector('#sql-saved button[data-i="0"]');
  await page.click('#sql-run');
  await page.waitForSelector('table.sql-grid tbody tr');
  const target = grid[2].key;
  await page.click('table.sql-grid tbody tr:nth-child(3)');
  await page.waitForFunction((k) => window.nexTest.state()?.selection === k, target);
  await idle();
  const w = await win();
  const ts = BigInt(target.split(':')[2]);
  assert(BigInt(w.s) <= ts && ts < BigInt(w.e), `the event ${target} is in the window ${w.s}..${w.e}`);
  assert(await page.evaluate((k) => window.nexTest.locate(k) !== null, target), 'the selected event is drawn');
  eq(await page.$('#sql-q'), null, 'the console closed');
  // The saved query survives a reload.
  await page.reload();
  await idle();
  await page.click('#sql-open');
  await page.waitForSelector('#sql-saved button[data-i="0"]');
  eq(await page.textContent('#sql-saved button[data-i="0"]'), 'longest seven', 'the saved query after a reload');
  await page.click('#sql-close');
  // Export: links of the current window; the CSV one answers that window's events.
  await page.click('#export-open');
  await page.waitForSelector('a.exp-link[data-format=csv]');
  const w2 = await win();
  const href = await page.getAttribute('a.exp-link[data-format=csv]', 'href');
  const u = new URL(href, `http://localhost:${port}`);
  eq([u.pathname, u.searchParams.get('format'), u.searchParams.get('start'), u.searchParams.get('end')], ['/api/v1/export', 'csv', w2.s, w2.e], 'CSV export of the window');
  eq((await page.$$eval('a.exp-link', (as) => as.map((a) => a.dataset.format))), ['perfetto', 'json', 'csv', 'summary-text', 'summary-json'], 'export formats');
  const csv = await page.evaluate(async (h) => { const r = await fetch(h); return { status: r.status, text: await r.text() }; }, href);
  eq(csv.status, 200, 'CSV export status');
  assert(csv.text.split('\n').filter(Boolean).length > 1, 'the CSV has rows');
  await page.click('#exp-close');
});

test('the device viewer says which execution the drill-down came from and which ones were captured', async () => {
  const hit = (await api('search?q=nc_exec_running&per_page=1')).items[0];
  const ev = await api(`events/${encodeURIComponent(hit.key)}`);
  const x = String(ev.attributes.exec_id);
  const dr = await api(`events/${encodeURIComponent(hit.key)}/device-profile`);
  const dp = await api(`device-profiles/${dr.device_profile.id}`);
  const i = dp.executions.findIndex((e) => String(e.exec_id) === x);
  await page.evaluate((k) => window.nexApp.goEvent(k), hit.key);
  await page.waitForFunction((k) => window.nexTest.state()?.selection === k, hit.key);
  await page.waitForSelector('#open-device');
  await page.click('#open-device');
  await page.waitForFunction(() => window.nexTest.view() === 'device');
  await idle();
  eq(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('x'), x, 'the URL keeps the execution drilled from');
  const note = await page.textContent('#exec-note');
  if (i >= 0) {
    eq(note, `Drilled down from execution ${x}: captured (#${dp.executions[i].execution_index})`, 'captured execution note');
    eq(await page.$eval('#exec', (e) => e.value), String(i), 'the captured execution is chosen');
  } else assert(note.startsWith(`Execution ${x} was not captured`), `note: ${note}`);
  // An execution the profile does not hold: said, with the captured ones offered.
  const st = { v: 'device', dp: dr.device_profile.id, x: '987654321' };
  await page.evaluate((h) => { location.hash = h; }, '#' + new URLSearchParams(st).toString());
  await page.waitForFunction(() => /987654321/.test(document.getElementById('exec-note')?.textContent || ''));
  const ids = dp.executions.map((e) => e.exec_id).filter((v) => v != null);
  const note2 = await page.textContent('#exec-note');
  assert(note2.startsWith('Execution 987654321 was not captured in this profile; '), `note: ${note2}`);
  if (ids.length) assert(note2.includes(`captured: exec ${ids[0]}`), `the captured ones are listed: ${note2}`);
  eq(await page.$$eval('#exec option', (o) => o.length), dp.executions.length + 1, 'every captured execution is offered');
  await page.evaluate(() => { location.hash = '#v=timeline'; });
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
  await idle();
});

test('no script errors on the page', async () => {
  eq(pageErrors, [], 'page errors');
});

// ------------------------------------------------------------ main

h.run(setup);
