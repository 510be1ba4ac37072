#!/usr/bin/env node
// overview_test.mjs -- browser test of the overviews that show idle time and
// of search marks, on a Chrome trace written here with known busy fractions:
// thread 1 runs "sparse" (1 us every 4 us: 25% busy) for 80 ms, then
// "dense" (1 us every 1.25 us: 80% busy) for 25 ms; thread 2 runs 3,000
// "needle" (2 us every 30 us) and one "pin" of 5 us at 95.0005 ms.  It
// checks the API fields exactly (/slices busy, /search buckets) and what
// the page draws (fillRect and fillText calls recorded in the page): busy
// bars as high as the busy fraction, a collapsed group's busiest-lane bars,
// hit density strips and hit counts in the track list, and next/previous
// hit zooming to the hit, merged labels counting each event once across
// tile edges, a merged box's tooltip giving the count and busy time of the
// LOD rows it was drawn from (no request on hover).  Prints TAP; skips as
// ui_test.mjs does.
// Screenshots go to $NEX_BUILDDIR/tests/out/e2e/.

import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, waitFor, idle as idleOf, OUT } from './harness.mjs';

const h = harness('nex-e2e-overview-');
const { test, api } = h;
let page = null;
const pageErrors = [];
const idle = () => idleOf(page);
const US = 1000;
const END = 104999750; // the profile's last end, ns
const GROUP = 'trace.json/app 1';
const T1 = `${GROUP}/Thread 1`, T2 = `${GROUP}/Thread 2`;
const SLICE_H = 15, GROUP_BAR_H = 16, AXIS_H = 40; // web/js/timeline: render.js, paint.js, layout.js

function writeTrace(dir) {
  const ev = [{ ph: 'M', name: 'process_name', pid: 1, args: { name: 'app' } }];
  for (let i = 0; i < 20000; i++) ev.push({ ph: 'X', name: 'sparse', pid: 1, tid: 1, ts: i * 4, dur: 1 });
  for (let i = 0; i < 20000; i++) ev.push({ ph: 'X', name: 'dense', pid: 1, tid: 1, ts: 80000 + i * 1.25, dur: 1 });
  for (let i = 0; i < 3000; i++) ev.push({ ph: 'X', name: 'needle', pid: 1, tid: 2, ts: i * 30, dur: 2 });
  ev.push({ ph: 'X', name: 'pin', pid: 1, tid: 2, ts: 95000.5, dur: 5 });
  fs.writeFileSync(path.join(dir, 'trace.json'), JSON.stringify({ traceEvents: ev }));
}

async function setup() {
  const dir = path.join(h.tmp, 'profile');
  fs.mkdirSync(dir);
  writeTrace(dir);
  await h.startServer(dir);
  const browser = await h.launch();
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 900 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // Records fillRect and fillText calls (CSS px of the canvas) while window.__rec is set.
  await page.addInitScript(() => {
    const P = CanvasRenderingContext2D.prototype, rect = P.fillRect, text = P.fillText;
    const at = (ctx, x, y) => {
      const m = ctx.getTransform(), r = window.devicePixelRatio || 1;
      return [(m.a * x + m.c * y + m.e) / r, (m.b * x + m.d * y + m.f) / r];
    };
    P.fillRect = function (x, y, w, hh) {
      if (window.__rec) { const [X, Y] = at(this, x, y); window.__rects.push({ x: X, y: Y, w, h: hh, style: String(this.fillStyle), alpha: this.globalAlpha }); }
      return rect.call(this, x, y, w, hh);
    };
    P.fillText = function (s, x, y, ...rest) {
      if (window.__rec) { const [X, Y] = at(this, x, y); window.__texts.push({ s: String(s), x: X, y: Y, style: String(this.fillStyle) }); }
      return text.call(this, s, x, y, ...rest);
    };
  });
  await page.goto(`http://localhost:${h.port()}/`);
  await idle();
}

// ------------------------------------------------------------ helpers

/**
 * The fillRect and fillText calls of one full repaint (a theme switch).  A
 * recording that caught a second frame (a late tile on a loaded machine) is
 * thrown away and made again, the theme switched back first.
 */
async function record() {
  for (let attempt = 1; ; attempt++) {
    await idle();
    const r = await page.evaluate(async () => {
      window.nexTest.resetFrames();
      window.__rects = []; window.__texts = []; window.__rec = true;
      window.nexTest.dispatch({ type: 'theme' });
      await window.nexTest.waitIdle();
      window.__rec = false;
      return { rects: window.__rects, texts: window.__texts, frames: window.nexTest.frames().length };
    });
    if (r.frames === 1) return r;
    assert(attempt < 5, `a recording of one frame (${r.frames} frames drawn, ${attempt} tries)`);
    await page.evaluate(() => window.nexTest.dispatch({ type: 'theme' }));
  }
}

/** Canvas x of rel time t, the canvas box, the theme colours. */
async function geometry() {
  return page.evaluate(() => {
    const st = window.nexTest.state(), c = document.querySelector('.tl-canvas').getBoundingClientRect();
    const cs = getComputedStyle(document.documentElement);
    const probe = document.createElement('canvas').getContext('2d');
    const norm = (v) => { probe.fillStyle = v.trim(); return String(probe.fillStyle); };
    return { win: st.window, labelW: st.labelW, width: st.width, scrollTop: st.scrollTop, top: c.top, left: c.left,
      hit: norm(cs.getPropertyValue('--tl-hit')), accent: norm(cs.getPropertyValue('--accent')) };
  });
}

const xOf = (g, t) => g.labelW + ((t - g.win.start) / (g.win.end - g.win.start)) * (g.width - g.labelW - 12);

async function rowBox(p) {
  const r = (await page.evaluate(() => window.nexTest.rowBoxes())).find((b) => b.path === p);
  assert(r, `a row ${p}`);
  return r;
}

/**
 * The part of [x0, x1) covered by rects of height `hgt` (1 px tolerance)
 * among `rects` (sorted by x).
 */
function coverage(rects, x0, x1, hgt) {
  let got = 0;
  for (const r of rects) {
    if (Math.abs(r.h - hgt) > 1) continue;
    got += Math.max(0, Math.min(r.x + r.w, x1) - Math.max(r.x, x0));
  }
  return got / (x1 - x0);
}

// ------------------------------------------------------------ tests

test('/slices: a merged row carries its busy time, the sum of its events\' durations', async () => {
  const a = await api(`slices?tracks=1&start=0&end=${END + 250}&px=1300`);
  const l = a.tracks[0].lanes[0];
  assert(a.tracks[0].level >= 0, `answered from LOD (level ${a.tracks[0].level})`);
  eq(l.count.reduce((x, y) => x + y, 0), 40000, 'every event counted');
  eq(l.busy.reduce((x, y) => x + y, 0), 40000 * US, 'busy sums to 40,000 x 1 us');
  l.busy.forEach((b, i) => eq(b, l.count[i] * US, `row ${i}: busy = count x 1 us`));
  const sparse = l.name.findIndex((n) => a.names[n] === 'sparse');
  const f = l.busy[sparse] / l.dur[sparse];
  assert(Math.abs(f - 0.25) < 0.001, `the sparse run is 25% busy: ${f}`);
});

test('/search buckets=10: per-track hit counts per bucket of the window', async () => {
  const r = await api(`search?q=needle&start=0&end=${END + 250}&buckets=10&per_page=1`);
  eq(r.bucket_ns, '10500000', 'bucket_ns = 105 ms / 10');
  eq(r.tracks, [{ track: '2', count: 3000, buckets: [350, 350, 350, 350, 350, 350, 350, 350, 200, 0] }], 'the histogram of thread 2');
  const bad = await fetch(`http://127.0.0.1:${h.port()}/api/v1/search?q=needle&buckets=10`);
  eq(bad.status, 400, 'buckets without start/end');
  assert(/'buckets'/.test((await bad.json()).detail), 'the error names buckets');
});

test('merged rows: a bar as high as the busy fraction (25% sparse, 80% dense), no full walls', async () => {
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  const g = await geometry();
  const { rects, texts } = await record();
  // The runs cross the 67 ms tile edge: each event counted once (the first
  // run holds the first 16 dense events: they share its last bucket).
  const labels = texts.map((t) => t.s).filter((s) => / ×\d+$/.test(s)).sort();
  eq(labels, ['dense ×19984', 'needle ×3000', 'sparse ×20016'], 'the merged runs\' labels');
  const p = await page.evaluate(() => window.nexTest.locate('1:0:0'));
  const band = p.y - g.top - 9; // the lane's top: laneY() is its middle
  const inLane = rects.filter((r) => r.y >= band - 0.5 && r.y + r.h <= band + SLICE_H + 0.5 && r.h < SLICE_H && r.alpha === 1);
  const xs = xOf(g, 0) + 2, xm = xOf(g, 80e6), xe = xOf(g, END);
  const lo = coverage(inLane, xs, xm - 2, Math.round(0.25 * SLICE_H)), hi = coverage(inLane, xm + 2, xe - 2, Math.round(0.8 * SLICE_H));
  assert(lo > 0.95, `a 4 px bar over the sparse part: ${lo.toFixed(3)} of it`);
  assert(hi > 0.95, `a 12 px bar over the dense part: ${hi.toFixed(3)} of it`);
  await page.screenshot({ path: path.join(OUT, 'overview-busy.png') });
});

/**
 * The merged run of lane 0 of track 1 around rel time t as the page builds
 * it from its tiles of resolution r (1024 px each, from the API): the rows
 * of count > 1 (a row reaching in from the tile before is that tile's), joined while
 * closer than half a pixel.  Returns {count, busy} (busy: the LOD column).
 */
async function lodRun(r, t) {
  const span = r * 1024, rows = [];
  for (let k = 0; k * span <= END; k++) {
    const a = await api(`slices?tracks=1&start=${k * span}&end=${(k + 1) * span}&px=1024`);
    const l = a.tracks[0]?.lanes.find((x) => x.lane === 0);
    if (!l) continue;
    l.ts.forEach((t0, i) => {
      const ts = Number(a.base) + t0;
      if (ts >= k * span) rows.push({ ts, end: ts + l.dur[i], count: l.count[i], busy: l.busy[i], name: a.names[l.name[i]] });
    });
  }
  rows.sort((a, b) => a.ts - b.ts);
  let run = null;
  for (const x of rows) {
    if (run && x.count > 1 && x.name === run.name && x.ts <= run.end + r / 2) { run.end = Math.max(run.end, x.end); run.count += x.count; run.busy += x.busy; continue; }
    if (run && run.ts <= t && t < run.end) break;
    run = { ...x };
  }
  return run;
}

test('a merged box\'s tooltip: count and busy time from the LOD rows it was drawn from, no extra request', async () => {
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  await idle();
  const g = await geometry();
  const st = await page.evaluate(() => window.nexTest.state());
  const run = await lodRun(st.resolution, 40e6);
  eq([run.count, run.busy], [20016, 20016 * US], 'the sparse run: 20,016 events of 1 us (16 dense ones in its last bucket)');
  const p = await page.evaluate(() => window.nexTest.locate('1:0:0'));
  const asked = [];
  const onReq = (r) => { if (/range-summary/.test(r.url())) asked.push(r.url()); };
  page.on('request', onReq);
  await page.mouse.move(g.left + xOf(g, 40e6), p.y);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden && /sparse and others/.test(document.getElementById('tooltip').textContent));
  const rows = await page.$$eval('#tooltip tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  page.off('request', onReq);
  await page.mouse.move(g.left + 2, g.top + 2);
  eq(rows.Events, '20,016', 'the tooltip\'s count');
  const busy = /^([\d.]+) ms \(([\d.]+)% of the span\)$/.exec(rows.Busy);
  assert(busy, `the busy time, then its share of the span: ${rows.Busy}`);
  eq(busy[1], '20.016', 'the busy time is the LOD rows\' sum: 20,016 us');
  assert(Math.abs(Number(busy[2]) - 25) < 0.5, `about 25% of the span: ${busy[2]}`);
  eq(asked, [], 'no /range-summary request on hover');
});

test('a collapsed group draws its busiest lane\'s busy fraction per pixel', async () => {
  await page.evaluate((p) => window.nexTest.dispatch({ type: 'collapse', path: p, value: true }), GROUP);
  const g = await geometry();
  const row = await rowBox(GROUP);
  const { rects } = await record();
  const top = AXIS_H + row.y - g.scrollTop; // no pinned rows
  const bars = rects.filter((r) => r.style === g.accent && r.y >= top + 3 - 0.5 && r.y + r.h <= top + 3 + GROUP_BAR_H + 0.5);
  const xs = xOf(g, 0) + 2, xm = xOf(g, 80e6), xe = xOf(g, END);
  // sparse 25% beats the needles' 6.7%; dense 80% (needles run to 90 ms)
  const lo = coverage(bars, xs, xm - 2, Math.round(0.25 * GROUP_BAR_H)), hi = coverage(bars, xm + 2, xe - 2, Math.round(0.8 * GROUP_BAR_H));
  assert(lo > 0.9, `4 px bars under the sparse part: ${lo.toFixed(3)}`);
  assert(hi > 0.9, `13 px bars under the dense part: ${hi.toFixed(3)}`);
  await page.screenshot({ path: path.join(OUT, 'overview-collapsed.png') });
  await page.evaluate((p) => window.nexTest.dispatch({ type: 'collapse', path: p, value: false }), GROUP);
});

test('search with 3,000 hits: a density strip over all of them and hit counts in the track list', async () => {
  await page.fill('#search-q', 'needle');
  await waitFor('the hit count', async () => (await page.textContent('#search-count')) === '3,000 hits', 20000);
  const row = await rowBox(T2), grp = await rowBox(GROUP);
  let last = null;
  await waitFor('density marks over thread 2', async () => {
    const g = await geometry();
    const { rects, texts } = await record();
    const y = AXIS_H + row.y - g.scrollTop + row.h - 5;
    const strip = rects.filter((r) => r.style === g.hit && Math.abs(r.y - y) < 0.5 && r.h === 4).map((r) => ({ ...r, h: 4 }));
    const cov = coverage(strip, xOf(g, 0) + 1, xOf(g, 90e6) - 1, 4);
    const label = (r) => texts.find((t) => t.s === '3,000' && t.x < g.labelW && Math.abs(t.y - (AXIS_H + r.y - g.scrollTop + 11)) < 2);
    last = { cov, t2: !!label(row), group: !!label(grp) };
    return cov > 0.95 && last.t2 && last.group;
  }, 20000).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(last)}`); });
  await page.screenshot({ path: path.join(OUT, 'overview-search-density.png') });
});

test('next hit centres and zooms to it: the 5 us event fills 60% of the window', async () => {
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  await page.fill('#search-q', 'pin');
  await waitFor('one hit', async () => (await page.textContent('#search-count')) === '1 hits', 20000);
  await page.press('#search-q', 'Enter');
  await waitFor('the window on the hit', async () => (await geometry()).win.end - (await geometry()).win.start < 1e6, 10000);
  await idle();
  const w = (await geometry()).win;
  assert(Math.abs(w.end - w.start - 5 * US / 0.6) < 1, `window ${w.end - w.start} ns = 5 us / 0.6`);
  assert(Math.abs((w.start + w.end) / 2 - 95003 * US) < 1, `centred on the hit: ${(w.start + w.end) / 2}`);
  eq(await page.evaluate(() => window.nexTest.state().selection), `2:0:${95000500}`, 'the hit is selected');
  await page.screenshot({ path: path.join(OUT, 'overview-search-zoom.png') });
});

test('a hit that already fits keeps the zoom and is centred', async () => {
  await page.evaluate(() => window.nexTest.dispatch({ type: 'window', start: 95050000, end: 95070000 }));
  await idle();
  await page.press('#search-q', 'Shift+Enter');
  await waitFor('the window on the hit', async () => Math.abs((await geometry()).win.start - 94993000) < 1, 10000);
  const w = (await geometry()).win;
  eq(w.end - w.start, 20000, 'the 20 us window kept');
});

test('clearing the search clears the marks, the density strips and the counts', async () => {
  await page.fill('#search-q', 'needle');
  await waitFor('the hit count', async () => (await page.textContent('#search-count')) === '3,000 hits', 20000);
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  const marked = async () => {
    const g = await geometry();
    const { rects, texts } = await record();
    return { strips: rects.filter((r) => r.style === g.hit && r.h === 4).length, counts: texts.filter((t) => t.x < g.labelW && t.style === g.hit).length };
  };
  await waitFor('density strips', async () => (await marked()).strips > 0, 20000);
  await page.fill('#search-q', '');
  await waitFor('no marks', async () => { const m = await marked(); return m.strips === 0 && m.counts === 0; }, 20000);
});

test('no page errors', async () => {
  eq(pageErrors, [], 'page errors');
});

h.run(setup);
