#!/usr/bin/env node
// trace_test.mjs -- browser test of a real Kineto trace: headless Chromium
// (playwright-core) against the server on a directory holding only
// tests/data/traces/tl_h100_qwen.json.gz (an H100 Qwen profile).  It checks
// in the page what doc/api.md "Lanes and flows" promises: a
// cudaLaunchKernel is drawn one lane below its aten:: op, itself below its
// python frames; its flow arrow goes to its kernel on a GPU stream row; a
// stream row holds one lane of kernels.  Prints TAP; skips as ui_test.mjs
// does (NEX_REQUIRE_E2E=1 makes a missing browser a failure, NEX_SKIP_E2E=1
// skips).  The screenshot goes to $NEX_BUILDDIR/tests/out/e2e/.

import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, idle as idleOf, SRC, OUT } from './harness.mjs';

const TRACE = path.join(SRC, 'tests/data/traces/tl_h100_qwen.json.gz');
const h = harness('nex-e2e-trace-');
const { test, api } = h;
let page = null;
const pageErrors = [];
const idle = () => idleOf(page);

async function setup() {
  const dir = path.join(h.tmp, 'profile');
  fs.mkdirSync(dir);
  fs.copyFileSync(TRACE, path.join(dir, path.basename(TRACE)));
  await h.startServer(dir, 120000);
  const browser = await h.launch();
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 1500 }); // the 28-lane thread row, the stream row and the details
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`http://localhost:${h.port()}/`);
  await idle();
}

// ------------------------------------------------------------ tests

const keyOf = (k) => { const [base, lane, ts] = k.split(':'); return { base, lane: Number(lane), ts: BigInt(ts) }; };
let tracks = null; // /tracks: base id -> {name, kind}
let launch = null; // the cudaLaunchKernel's /events answer
let kernel = null; // its downstream entry

test('the trace loads with its own thread and stream track names', async () => {
  tracks = new Map();
  for (const t of (await api('tracks')).tracks) for (const b of t.base) tracks.set(String(b.id), { name: t.name, kind: t.kind, lanes: b.lanes ?? t.lanes });
  const names = [...tracks.values()].map((t) => t.name);
  assert(names.some((x) => /\/stream 7$/.test(x)), `a "stream 7" track: ${names.slice(0, 20).join(', ')}`);
  assert(names.some((x) => /\/python3 \d+ \(GPU 0\)\//.test(x)), 'tracks under "python3 <pid> (GPU 0)"');
});

test('a cudaLaunchKernel with a flow goes to its kernel on a stream track', async () => {
  const hits = (await api('search?q=cudaLaunchKernel&per_page=50')).items;
  assert(hits.length > 0, 'the trace has cudaLaunchKernel events');
  for (const h of hits) {
    const ev = await api(`events/${encodeURIComponent(h.key)}`);
    if (ev.name === 'cudaLaunchKernel' && (ev.downstream || []).length === 1) { launch = ev; break; }
  }
  assert(launch, 'one of the first cudaLaunchKernel hits has one downstream event');
  kernel = launch.downstream[0];
  eq(kernel.flow_id, launch.flow_ids[0], 'the kernel is on the launch\'s flow');
  assert(/\/stream \d+$/.test(tracks.get(keyOf(kernel.key).base).name), `kernel track: ${tracks.get(keyOf(kernel.key).base).name}`);
  assert(!/\/stream \d+$/.test(tracks.get(keyOf(launch.key).base).name), 'the launch is on a thread track');
  eq(BigInt(kernel.start_ts) >= BigInt(launch.start_ts), true, 'the kernel starts after its launch');
});

// The chain of slices drawn one lane above, up to lane 0, at the launch's
// x on its row: each contains the one below.
test('the launch is drawn inside its aten:: op inside its python frames', async () => {
  const s = BigInt(launch.start_ts), d = BigInt(launch.duration_ns);
  const span = 6n * (d > 0n ? d : 1000n);
  await page.goto(`http://localhost:${h.port()}/#v=timeline&g=default&s=${s - span}&e=${s + span}&sel=${encodeURIComponent(launch.key)}`);
  await page.waitForFunction((k) => window.nexTest.state()?.selection === k, launch.key);
  await page.waitForSelector('table.details');
  await idle();
  const me = keyOf(launch.key);
  assert(me.lane >= 2, `the launch is on lane ${me.lane}, below an op and a python frame`);
  const pos = await page.evaluate((k) => window.nexTest.locate(k), launch.key);
  assert(pos, 'the launch is on screen');
  // Up to the first lane with nothing drawn there (a ProfilerStep#N that
  // overlaps a python frame partially sits lower, leaving a gap).
  const chain = [];
  for (let lane = me.lane; lane >= 0; lane--) {
    const at = await page.evaluate((k) => window.nexTest.locate(k), `${me.base}:${lane}:${me.ts}`);
    assert(at, `lane ${lane} of the launch's row is laid out`);
    const hit = await page.evaluate(([x, y]) => window.nexTest.hitAt(x, y), [pos.x, at.y]);
    if (!hit) break;
    chain.push(hit);
  }
  eq(chain[0].key, launch.key, 'the hit at the launch is the launch');
  for (let i = 1; i < chain.length; i++) {
    const k = keyOf(chain[i].key);
    eq([k.base, k.lane], [me.base, me.lane - i], `slice ${i} up is on the launch's row, lane ${me.lane - i}`);
    assert(chain[i].start <= chain[i - 1].start && chain[i].end >= chain[i - 1].end,
      `${chain[i].name} [${chain[i].start}, ${chain[i].end}] contains ${chain[i - 1].name} [${chain[i - 1].start}, ${chain[i - 1].end}]`);
  }
  const names = chain.map((h) => h.name);
  console.log(`# ${names.join(' < ')}`);
  // The launch's parent is an aten:: op; above the aten:: ops, python frames.
  const isPy = (x) => /\.py\(\d+\): /.test(x) || x.startsWith('<built-in method ');
  let j = 1;
  while (j < names.length && names[j].startsWith('aten::')) j++;
  assert(j > 1, `the launch's parent is an aten:: op: ${names.join(' < ')}`);
  assert(j < names.length && isPy(names[j]), `a python frame right above the aten:: ops: ${names.join(' < ')}`);
  assert(names.slice(j).some((x) => /\.py\(\d+\): /.test(x)), `a .py frame above them: ${names.join(' < ')}`);
  // The REST API names the same slices on the same keys.
  for (const h of chain) eq((await api(`events/${encodeURIComponent(h.key)}`)).name, h.name, `event ${h.key}`);
});

test('the selected launch shows its arrow to its kernel on the stream row', async () => {
  const down = await page.$$eval('.drawer button.link', (b) => b.map((x) => [x.textContent, x.dataset.key]));
  eq(down, [[kernel.name, kernel.key]], 'the details list the kernel downstream');
  // The arrow ends at the kernel's lane at its start: the slice drawn there
  // is the kernel, on a stream row.
  const end = await page.evaluate((k) => window.nexTest.locate(k), kernel.key);
  assert(end, 'the kernel\'s row is laid out');
  const hit = await page.evaluate(([x, y]) => window.nexTest.hitAt(x, y), [end.x, end.y]);
  eq(hit && [hit.key, hit.name], [kernel.key, kernel.name], 'the slice at the arrow\'s end');
  const boxes = await page.evaluate(() => window.nexTest.rowBoxes());
  const st = await page.evaluate(() => window.nexTest.state());
  const top = await page.$eval('.tl-canvas', (c) => c.getBoundingClientRect().top);
  const row = boxes.find((r) => !r.group && end.y >= top + 40 + r.y - st.scrollTop && end.y < top + 40 + r.y - st.scrollTop + r.h);
  assert(row && /\/stream \d+$/.test(row.path), `the arrow's end is on a stream row: ${row?.path}`);
  eq(row.path, tracks.get(keyOf(kernel.key).base).name, 'the stream row is the kernel\'s track');
  await page.screenshot({ path: path.join(OUT, 'trace-01-launch-flow.png') });
});

// Kineto puts the step's GPU annotation (ProfilerStep#N) on the stream,
// spanning the kernels of the step: a stream track has two lanes, the
// annotations and the kernels outside them on lane 0, the kernels inside
// them on lane 1; no kernel is ever drawn on top of another.
test('each GPU stream track holds one lane of kernels', async () => {
  const p = await api('profile');
  const streams = (await api('tracks')).tracks.filter((t) => /\/stream \d+$/.test(t.name));
  assert(streams.length > 0, 'stream tracks');
  const steps = (await api('search?q=ProfilerStep%23&per_page=500')).items.filter((h) => /^ProfilerStep#\d+$/.test(h.name));
  const out = [];
  for (const t of streams) {
    const ids = t.base.map((b) => String(b.id));
    eq(t.base.map((b) => b.lanes), ids.map(() => 2), `${t.name}: two lanes`);
    const mine = [];
    for (const h of steps.filter((x) => ids.includes(keyOf(x.key).base))) {
      const ev = await api(`events/${encodeURIComponent(h.key)}`);
      eq(ev.lane, 0, `${t.name}: ${h.name} on lane 0`);
      mine.push([BigInt(ev.start_ts), BigInt(ev.end_ts)]);
    }
    assert(mine.length > 0, `${t.name}: a ProfilerStep# annotation`);
    const r = await api(`slices?tracks=${ids.join(',')}&start=${p.start}&end=${BigInt(p.end) + 1n}&px=10000`);
    let inner = 0;
    for (const tr of r.tracks) {
      for (const l of tr.lanes) {
        if (l.lane !== 1) continue;
        l.ts.forEach((ts, i) => {
          const a = BigInt(r.base) + BigInt(ts), e = a + BigInt(l.dur[i]);
          assert(mine.some(([s0, e0]) => s0 <= a && e <= e0), `${t.name}: lane-1 slices at ${a}..${e} inside a ProfilerStep#`);
          inner += l.count[i];
        });
      }
    }
    out.push(`${t.name}: ${mine.length} steps, ${inner} kernels inside them on lane 1`);
  }
  eq(keyOf(kernel.key).lane, 1, 'the launched kernel is on lane 1, below its ProfilerStep#');
  console.log(`# ${out.join('; ')}`);
});

test('no script errors on the page', async () => {
  eq(pageErrors, [], 'page errors');
});

// ------------------------------------------------------------ main

h.run(setup);
