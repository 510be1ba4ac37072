#!/usr/bin/env node
// device_test.mjs -- browser test of the Device Trace Viewer: instruction
// dependency arrows (of the selected instruction and of every visible one,
// read from the page's drawn-arrow list), the clickable dependency list,
// HFU beside MFU, counters under human names, flags, notes and named areas
// of the device timeline.  A real headless Chromium
// (playwright-core) against the real server on a profile made by
// neuron-explorer-synth; every expectation comes from the API.  Prints TAP;
// skips like ui_test.mjs without playwright-core or Chromium
// (NEX_REQUIRE_E2E=1 makes that a failure, NEX_SKIP_E2E=1 skips on purpose).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, waitFor, idle as idleOf, BUILD, OUT } from './harness.mjs';

const SYNTH = path.join(BUILD, 'tools/neuron-explorer-synth');
const h = harness('nex-e2e-device-');
const test = h.test;
const api = (p) => h.api(p);
let page = null, manifest = null;
const pageErrors = [];
const idle = () => idleOf(page);

async function setup() {
  execFileSync(SYNTH, ['--out', path.join(h.tmp, 'profile'), '--manifest', path.join(h.tmp, 'manifest.json'), '--seed', '3',
    '--instances', '1', '--processes', '1', '--cores', '1', '--steps', '3', '--device-instructions', '2000'], { stdio: 'pipe' });
  manifest = JSON.parse(fs.readFileSync(path.join(h.tmp, 'manifest.json'), 'utf8'));
  await h.startServer(path.join(h.tmp, 'profile'));
  const browser = await h.launch();
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 950 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
}

async function open(hash) {
  await page.goto(`http://localhost:${h.port()}/#${new URLSearchParams(hash).toString()}`);
  await page.waitForFunction(() => window.nexTest?.view() === 'device');
  await idle();
}

const keyTs = (k) => BigInt(k.split(':')[2]);
const arrowSet = (list) => list.map((a) => `${a.kind} ${a.from} -> ${a.to}`).sort();

// ------------------------------------------------------------ the profile

let dp = null;      // GET /device-profiles/{id}
let arrows = null;  // every arrow of the profile
let pick = null;    // an instruction waiting for 2+ others and waited for

test('the profile has instruction dependencies to show', async () => {
  const id = (await api('device-profiles')).items[0].id;
  dp = await api(`device-profiles/${id}`);
  const all = await api(`device-profiles/${id}/dependencies?start=${dp.start}&end=${BigInt(dp.end) + 1n}&limit=100000`);
  arrows = all.arrows;
  eq(arrows.length, manifest.inst_deps, 'the arrows are the dependencies the generator wrote');
  const ins = new Map(), outs = new Map();
  for (const a of arrows) {
    ins.set(a.to, [...(ins.get(a.to) || []), a]);
    outs.set(a.from, [...(outs.get(a.from) || []), a]);
  }
  const mid = (BigInt(dp.start) + BigInt(dp.end)) / 2n;
  const keys = [...ins.keys()].filter((k) => ins.get(k).length >= 2 && outs.has(k)).sort((a, b) => (keyTs(a) < keyTs(b) ? -1 : 1));
  assert(keys.length, 'some instruction waits for two others and is waited for');
  const key = keys.find((k) => keyTs(k) >= mid) || keys[0];
  pick = { key, up: ins.get(key), down: outs.get(key) };
});

test('selecting an instruction draws an arrow from each dependency and to each dependent', async () => {
  const ts = [keyTs(pick.key), ...pick.up.map((a) => keyTs(a.from)), ...pick.down.map((a) => keyTs(a.to))];
  const lo = ts.reduce((a, b) => (a < b ? a : b)), hi = ts.reduce((a, b) => (a > b ? a : b));
  const pad = (hi - lo) / 4n + 100n;
  await open({ v: 'device', dp: dp.id, s: String(lo - pad), e: String(hi + pad), sel: pick.key });
  await page.waitForSelector('.deps-up');
  await idle();
  const want = [...pick.up.map((a) => ({ kind: 'flow', from: a.from, to: pick.key })),
    ...pick.down.map((a) => ({ kind: 'flow', from: pick.key, to: a.to }))];
  eq(arrowSet(await page.evaluate(() => window.nexTest.arrows())), arrowSet(want), 'the drawn arrows');
  await page.screenshot({ path: path.join(OUT, 'device-dependency-arrows.png') });
});

test('the details list the dependencies; a click selects one and draws its arrows', async () => {
  const ev = await api(`events/${encodeURIComponent(pick.key)}`);
  eq(await page.$$eval('.deps-up button.link', (b) => b.map((x) => x.dataset.key).sort()), ev.dependencies.map((d) => d.key).sort(), 'waits for');
  eq(await page.$$eval('.deps-down button.link', (b) => b.map((x) => x.dataset.key).sort()), ev.dependents.map((d) => d.key).sort(), 'waited for by');
  const target = ev.dependencies[0].key;
  await page.click(`.deps-up button.link[data-key="${target}"]`);
  await page.waitForFunction((k) => window.nexTest.state().selection === k && document.querySelector('.deps'), target);
  await idle();
  const tev = await api(`events/${encodeURIComponent(target)}`);
  const want = [...tev.dependencies.filter((d) => d.key).map((d) => ({ kind: 'flow', from: d.key, to: target })),
    ...tev.dependents.map((d) => ({ kind: 'flow', from: target, to: d.key }))];
  await page.waitForFunction((n) => window.nexTest.arrows().length === n, want.length);
  eq(arrowSet(await page.evaluate(() => window.nexTest.arrows())), arrowSet(want), 'the drawn arrows of the clicked dependency');
  assert(want.some((a) => a.from === target && a.to === pick.key), 'one goes to the instruction we came from');
});

test('"all dependency arrows" draws the arrows of every visible instruction', async () => {
  await page.check('#deps-all');
  await page.waitForFunction(() => /arrows/.test(document.getElementById('deps-note').textContent));
  await idle();
  const w = await page.evaluate(() => window.nexTest.state().window);
  const s = BigInt(w.s), e = BigInt(w.e);
  const r = await api(`device-profiles/${dp.id}/dependencies?start=${s}&end=${e}&limit=3000`);
  assert(!r.truncated && r.arrows.length >= 5, `a window with some arrows (${r.arrows.length})`);
  // drawn when some part lies in the window: from the dependency's end to the dependent's start
  const want = r.arrows.filter((a) => { const f = BigInt(a.from_end), t = keyTs(a.to); return (f > t ? f : t) >= s && (f < t ? f : t) <= e; })
    .map((a) => ({ kind: 'link', from: a.from, to: a.to }));
  const got = (await page.evaluate(() => window.nexTest.arrows())).filter((a) => a.kind === 'link');
  eq(arrowSet(got), arrowSet(want), 'the drawn links');
  eq(await page.textContent('#deps-note'), `${r.arrows.length} arrows`, 'the count is stated');
  await page.waitForFunction(() => /(^#|&)da=1(&|$)/.test(location.hash), null, { timeout: 5000 }); // kept in the URL
  await page.screenshot({ path: path.join(OUT, 'device-all-arrows.png') });
  await page.uncheck('#deps-all');
  await page.waitForFunction(() => window.nexTest.arrows().every((a) => a.kind === 'flow'));
});

test('HFU is shown beside MFU in the device bar and the System Profile Summary', async () => {
  const pct = (v) => `${Number(v).toFixed(1)}%`;
  const sum = dp.summary;
  assert(sum.hfu_percent > sum.mfu_percent && sum.mfu_percent > 0, `HFU ${sum.hfu_percent} > MFU ${sum.mfu_percent} > 0`);
  eq(await page.textContent('#stat-hfu b'), pct(sum.hfu_percent), 'HFU in the device bar');
  eq(await page.textContent('#stat-mfu b'), pct(sum.mfu_percent), 'MFU in the device bar');
  assert(/transposes/.test(await page.getAttribute('#stat-hfu', 'title')), 'the HFU tooltip says what it counts');
  await page.goto(`http://localhost:${h.port()}/#v=summary`);
  await page.waitForSelector('#dp-table tbody tr');
  const s = await api('summary');
  const heads = await page.$$eval('#dp-table > table > thead th', (t) => t.map((x) => x.textContent));
  const hi = heads.indexOf('HFU'), mi = heads.indexOf('MFU');
  const rows = await page.$$eval('#dp-table > table > tbody > tr:not(.sub)', (r) => r.map((x) => [...x.children].map((c) => c.textContent.trim())));
  eq(rows.map((r) => [r[mi], r[hi]]), s.device_profiles.map((d) => [pct(d.mfu_percent), pct(d.hfu_percent)]), 'MFU and HFU per device profile');
});

test('the summary\'s HBM chart draws no axis when it has no width (too narrow, or its view closed while the counters loaded)', async () => {
  // Left the summary before its counters came back, the chart was 0 px
  // wide: its time axis ran in 1 ns steps over the whole profile and held
  // the page for minutes.  measureText is counted, and stops a runaway.
  await page.waitForFunction(() => window.nexApp.view?.hbmData && document.getElementById('hbm-chart'));
  const calls = await page.evaluate(() => {
    const v = window.nexApp.view, c = document.getElementById('hbm-chart'), proto = CanvasRenderingContext2D.prototype;
    const measure = proto.measureText, out = {};
    let n = 0;
    proto.measureText = function (...a) { if (++n > 10000) throw new Error('a runaway time axis'); return measure.apply(this, a); };
    try {
      for (const [k, w] of [['wide', ''], ['narrow', '40px'], ['none', '0px']]) {
        c.style.width = w;
        n = 0;
        try { v.drawChart(); out[k] = n; } catch (e) { out[k] = e.message; }
      }
    } finally { proto.measureText = measure; c.style.width = ''; }
    return out;
  });
  assert(calls.wide > 0 && calls.wide < 200, `the chart at its width draws its axis: ${JSON.stringify(calls)}`);
  eq([calls.narrow, calls.none], [0, 0], 'no axis without room');
});

test('device counters have human names and units; the store name is in the tooltip', async () => {
  await open({ v: 'device', dp: dp.id });
  const tracks = await page.evaluate(() => window.nexTest.tracks());
  for (const t of ['State Buffer Usage', 'PSUM Usage', 'DMA Throughput']) assert(tracks.includes(t), `track ${t} in ${tracks}`);
  for (const t of ['sbuf_usage', 'psum_usage', 'dma_throughput']) assert(!tracks.includes(t), `no raw name ${t}`);
  await page.fill('.tl-filter', 'State Buffer');
  await page.waitForFunction(() => window.nexTest.state().filter.text === 'State Buffer');
  await idle();
  const box = (await page.evaluate(() => window.nexTest.rowBoxes())).find((b) => b.path === 'State Buffer Usage');
  assert(box, 'the State Buffer Usage row is laid out');
  const st = await page.evaluate(() => window.nexTest.state());
  const c = await page.$eval('.tl-canvas', (el) => { const r = el.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width }; });
  await page.mouse.move(c.x + c.w * 0.6, c.y + 40 + box.y - st.scrollTop + box.h / 2);
  await page.waitForFunction(() => /Store name/.test(document.getElementById('tooltip').textContent));
  const tip = await page.$$eval('#tooltip tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  assert(/^\d+\.\d%/.test(tip.Utilization || ''), `utilization in % under the pointer: ${JSON.stringify(tip)}`);
  eq(tip['Store name'], 'sbuf_usage', 'the name SQL and the API use');
  assert((await page.textContent('#tooltip')).includes('State Buffer Usage'), 'the tooltip title');
  await page.fill('.tl-filter', '');
});

test('flags, notes and named areas on the device timeline: kept on this device profile, drawn here only', async () => {
  const list = async () => (await api('annotations')).annotations;
  const scopeOf = (a) => a.track_path.split('/')[13]; // the device profile part of the track path
  eq(await list(), [], 'no annotations at first');
  const ts = keyTs(pick.key), pad = 20000n;
  await open({ v: 'device', dp: dp.id, s: String(ts - pad), e: String(ts + pad) });
  const box = await page.$eval('.tl-canvas', (el) => { const r = el.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const st = await page.evaluate(() => window.nexTest.state());
  const nspp = (st.window.end - st.window.start) / (st.width - st.labelW - 12);
  // A click on the time axis: a flag at that device time.
  const x = box.x + st.labelW + Math.round((box.w - st.labelW) * 0.3);
  const t = await page.evaluate((px) => window.nexTest.timeAt(px), x);
  await page.mouse.click(x, box.y + 20);
  await page.waitForFunction(() => window.nexTest.annotations().length === 1);
  const [flag] = await list();
  eq([flag.kind, scopeOf(flag)], ['flag', dp.id], 'a flag on this device profile');
  const rel = Number(BigInt(flag.ts) - BigInt(st.window.s)) + st.window.start;
  assert(Math.abs(rel - t) <= nspp, `the flag at ${rel}, clicked at ${t}`);
  // "Add note" in the details of an instruction.
  await page.evaluate((k) => window.nexApp.view.tv.selectKey(k, false), pick.key);
  await page.waitForSelector('.drawer button.add-note');
  await page.click('.drawer button.add-note');
  await waitFor('the note', async () => (await list()).some((a) => a.kind === 'note'));
  const note = (await list()).find((a) => a.kind === 'note');
  eq([note.event, note.ts, scopeOf(note)], [pick.key, String(ts), dp.id], 'the note is on the instruction');
  // Shift+drag, then "Name this area".
  const st2 = await page.evaluate(() => window.nexTest.state());
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + st2.labelW + 150, box.y + 60);
  await page.mouse.down();
  await page.mouse.move(box.x + st2.labelW + 400, box.y + 140, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('.drawer .name-area:not([hidden])');
  await page.click('.drawer .name-area');
  await waitFor('the area', async () => (await list()).some((a) => a.kind === 'area'));
  const area = (await list()).find((a) => a.kind === 'area');
  eq(scopeOf(area), dp.id, 'the area is on this device profile');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => window.nexTest.annotations().length === 3);
  eq((await page.evaluate(() => window.nexTest.annotations())).map((a) => a.kind).sort(), ['area', 'flag', 'note'], 'all three drawn on the device timeline');
  await page.screenshot({ path: path.join(OUT, 'device-annotations.png') });
  // The System Trace's clock is another: it draws none of them.
  await page.click('#back');
  await page.waitForFunction(() => window.nexTest.view() === 'timeline');
  await idle();
  eq(await page.evaluate(() => window.nexTest.annotations()), [], 'the system timeline draws none');
  // The side panel lists them; jumping to the flag opens its device profile.
  await page.waitForSelector(`#annot-panel li[data-id="${flag.id}"]`, { state: 'attached' });
  if (await page.$eval('#annot-panel', (el) => el.hidden)) await page.click('#annot-toggle');
  assert((await page.textContent(`li[data-id="${flag.id}"] .annot-jump`)).startsWith(`Device profile ${dp.id}`), 'the panel names the device profile');
  await page.click(`li[data-id="${flag.id}"] .annot-jump`);
  await page.waitForFunction(() => window.nexTest.view() === 'device');
  await idle();
  await page.waitForFunction(() => window.nexTest.annotations().length === 3);
  const w = (await page.evaluate(() => window.nexTest.state())).window;
  assert(BigInt(w.s) < BigInt(flag.ts) && BigInt(flag.ts) < BigInt(w.e), `the flag in the window [${w.s}, ${w.e})`);
  for (const a of await list()) await fetch(`http://127.0.0.1:${h.port()}/api/v1/annotations/${a.id}`, { method: 'DELETE', headers: { 'Content-Type': 'application/json' } });
});

test('no script errors on the page', async () => {
  eq(pageErrors, [], 'page errors');
});

h.run(setup);
