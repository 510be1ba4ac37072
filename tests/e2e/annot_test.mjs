#!/usr/bin/env node
// annot_test.mjs -- browser test of annotations: headless Chromium
// (playwright-core) against the server on a profile made by
// neuron-explorer-synth.  A click on the time axis drops a flag (kept by the
// server, drawn as a line over the rows, listed in the side panel; a double
// click does not); "Add note" on the selected event; "Name this area" on an
// area selection; the side panel jumps to, edits and deletes them; a reload
// keeps them; "Copy link to this event" gives a URL that opens that event in
// the same window with the same annotations, even on a server that lost
// them.  Prints TAP; skips as ui_test.mjs does.  Screenshots go to
// $NEX_BUILDDIR/tests/out/e2e/.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, waitFor, idle as idleOf, BUILD, OUT } from './harness.mjs';

const SYNTH = path.join(BUILD, 'tools/neuron-explorer-synth');
const h = harness('nex-e2e-annot-');
const { test, api, tmp } = h;
let browser = null;
let page = null;
const pageErrors = [];
const idle = () => idleOf(page);
const shot = (name) => page.screenshot({ path: path.join(OUT, `${name}.png`) });
const annots = async () => (await api('annotations')).annotations;
const state = () => page.evaluate(() => window.nexTest.state());

/** method /api/v1/path with a JSON body, from outside the page. */
async function send(method, p, body) {
  const r = await fetch(`http://127.0.0.1:${h.port()}/api/v1/${p}`, {
    method, headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

async function openPage(hash = '') {
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 950 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`http://localhost:${h.port()}/${hash}`);
  await idle();
}

async function canvasBox() {
  return page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
}

/** [r, g, b] of the canvas pixel at page (x, y). */
function pixel(x, y) {
  return page.evaluate(([px, py]) => {
    const c = document.querySelector('.tl-canvas'), r = c.getBoundingClientRect(), d = window.devicePixelRatio || 1;
    return [...c.getContext('2d').getImageData(Math.round((px - r.left) * d), Math.round((py - r.top) * d), 1, 1).data].slice(0, 3);
  }, [x, y]);
}

async function setup() {
  assert(fs.existsSync(SYNTH), `synth tool not built: ${SYNTH}`);
  execFileSync(SYNTH, ['--out', path.join(tmp, 'profile'), '--seed', '11', '--instances', '1', '--processes', '1',
    '--cores', '2', '--steps', '6'], { stdio: 'pipe' });
  await h.startServer(path.join(tmp, 'profile'));
  browser = await h.launch();
  await openPage();
}

let flag = null; // the flag dropped by a click
let note = null;
let area = null;

test('a click on the time axis drops a flag drawn over the rows and listed in the side panel', async () => {
  eq(await annots(), [], 'no annotations at first');
  const box = await canvasBox(), st = await state();
  const x = box.x + st.labelW + Math.round((box.w - st.labelW) * 0.4);
  const t = await page.evaluate((px) => window.nexTest.timeAt(px), x);
  await page.mouse.click(x, box.y + 20);
  await page.waitForFunction(() => window.nexTest.annotations().length === 1);
  const list = await annots();
  eq(list.map((a) => [a.kind, a.text]), [['flag', 'Flag 1']], 'the server keeps one flag');
  flag = list[0];
  const rel = Number(BigInt(flag.ts) - BigInt(st.window.s)) + st.window.start;
  assert(Math.abs(rel - t) <= (st.window.end - st.window.start) / (box.w - st.labelW), `flag at ${rel}, clicked at ${t}`);
  // The side panel opened: the canvas is narrower now, the flag where its time is.
  await page.waitForSelector('#annot-panel:not([hidden]) li[data-kind=flag]');
  await idle();
  const drawn = await page.evaluate(() => window.nexTest.annotations());
  const box2 = await canvasBox(), st2 = await state();
  const x2 = box2.x + st2.labelW + (rel - st2.window.start) * (box2.w - st2.labelW - 12) / (st2.window.end - st2.window.start);
  assert(box2.w < box.w, `the panel takes room (${box2.w} < ${box.w})`);
  assert(drawn[0].kind === 'flag' && Math.abs(drawn[0].x - x2) <= 1, `drawn at x ${drawn[0].x}, its time at ${x2}`);
  // The line crosses the rows: the flag's red at its x far below the axis.
  const px = await pixel(Math.round(drawn[0].x), box2.y + box2.h - 30);
  assert(px[0] > 180 && px[1] < 110 && px[2] < 120, `flag colour on the rows: ${px}`);
  eq(await page.$eval('li[data-kind=flag] .annot-text', (i) => i.value), 'Flag 1', 'the panel lists it');
  // A double click sets the time origin and drops no flag: a single click
  // after it drops the second flag only (its timer runs after any the
  // double click could have left).
  await page.mouse.dblclick(x2 + 200, box2.y + 20);
  await page.waitForFunction(() => window.nexTest.state().origin !== null);
  await page.mouse.click(x2 - 150, box2.y + 20);
  await page.waitForFunction(() => window.nexTest.annotations().length === 2);
  const two = await annots();
  eq(two.map((a) => a.text), ['Flag 2', 'Flag 1'], 'the double click added no flag');
  await page.click(`li[data-id="${two[0].id}"] .annot-del`);
  await page.waitForFunction(() => window.nexTest.annotations().length === 1);
  eq((await annots()).map((a) => a.id), [flag.id], 'the second flag deleted');
  await page.keyboard.press('Shift+O');
  await shot('annot-01-flag');
});

test('"Add note" on the selected event keeps a note on it', async () => {
  const hit = (await api('search?q=nrt_execute&limit=3')).items[1];
  assert(hit, 'the profile has nrt_execute events');
  await page.evaluate((k) => window.nexApp.goEvent(k), hit.key);
  await page.waitForSelector('.drawer button.add-note');
  await page.click('.drawer button.add-note');
  await page.waitForSelector('li[data-kind=note] .annot-text');
  eq(await page.evaluate(() => document.activeElement?.className), 'annot-text', 'the new note\'s text has the focus');
  await page.keyboard.type('slow step');
  await page.keyboard.press('Enter');
  await waitFor('the note text saved', async () => (await annots()).some((a) => a.kind === 'note' && a.text === 'slow step'));
  note = (await annots()).find((a) => a.kind === 'note');
  eq([note.event, note.event_name, note.ts], [hit.key, 'nrt_execute', hit.start_ts], 'the note is on the event');
  await page.waitForFunction(() => window.nexTest.annotations().some((a) => a.kind === 'note'));
  eq(await page.$eval('li[data-kind=note] .annot-sub', (d) => d.textContent), 'on nrt_execute', 'the panel names its event');
});

test('"Name this area" keeps the area selection as a named area', async () => {
  const box = await canvasBox(), st = await state();
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + st.labelW + 200, box.y + 70);
  await page.mouse.down();
  await page.mouse.move(box.x + st.labelW + 500, box.y + 160, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForSelector('.drawer .name-area:not([hidden])');
  const sel = (await state()).area;
  await page.click('.drawer .name-area');
  await page.waitForSelector('li[data-kind=area]');
  await page.fill('li[data-kind=area] .annot-text', 'warm-up');
  await page.press('li[data-kind=area] .annot-text', 'Enter');
  await waitFor('the area name saved', async () => (await annots()).some((a) => a.kind === 'area' && a.text === 'warm-up'));
  area = (await annots()).find((a) => a.kind === 'area');
  const s2 = await state(), rel = (abs) => Number(BigInt(abs) - BigInt(s2.window.s)) + s2.window.start;
  assert(Math.abs(rel(area.ts) - Math.min(sel.start, sel.end)) <= 1 && Math.abs(rel(area.end) - Math.max(sel.start, sel.end)) <= 1,
    `area [${rel(area.ts)}, ${rel(area.end)}] is the selection [${sel.start}, ${sel.end}]`);
  await shot('annot-02-area');
});

test('the side panel jumps to, edits and deletes annotations', async () => {
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  await page.click(`li[data-id="${area.id}"] .annot-jump`);
  await waitFor('the window on the area', async () => {
    const w = (await state()).window;
    return BigInt(w.s) <= BigInt(area.ts) && BigInt(w.e) >= BigInt(area.end) && BigInt(w.e) - BigInt(w.s) < (BigInt(area.end) - BigInt(area.ts)) * 2n;
  });
  await page.click(`li[data-id="${flag.id}"] .annot-jump`);
  await waitFor('the flag centred', async () => {
    const w = (await state()).window, mid = (BigInt(w.s) + BigInt(w.e)) / 2n, span = BigInt(w.e) - BigInt(w.s);
    const d = mid - BigInt(flag.ts);
    return (d < 0n ? -d : d) * 200n <= span;
  });
  await page.fill(`li[data-id="${flag.id}"] .annot-text`, 'checkpoint');
  await page.press(`li[data-id="${flag.id}"] .annot-text`, 'Enter');
  await waitFor('the flag renamed', async () => (await annots()).find((a) => a.id === flag.id)?.text === 'checkpoint');
  await page.click(`li[data-id="${note.id}"] .annot-jump`);
  await page.waitForFunction((k) => window.nexTest.state().selection === k, note.event);
  const extra = await send('POST', 'annotations', { kind: 'flag', ts: flag.ts, text: 'to delete' });
  eq(extra.status, 201, 'one more flag over the API');
  await page.reload();
  await idle();
  await page.click('#annot-toggle');
  await page.click(`li[data-id="${extra.body.id}"] .annot-del`);
  await waitFor('the flag deleted', async () => !(await annots()).some((a) => a.id === extra.body.id));
  await page.waitForFunction((id) => !document.querySelector(`li[data-id="${id}"]`), extra.body.id);
  await shot('annot-03-panel');
});

test('a reload keeps them: listed, drawn and in the URL', async () => {
  await page.reload();
  await idle();
  await page.click('#annot-toggle');
  const ids = await page.$$eval('#annot-panel li.annot', (lis) => lis.map((li) => li.dataset.id));
  eq(ids.sort(), [flag.id, note.id, area.id].sort(), 'the panel lists the three');
  await page.evaluate(() => window.nexTest.dispatch({ type: 'fit' }));
  await page.evaluate(() => window.nexTest.waitIdle());
  const kinds = await page.evaluate(() => window.nexTest.annotations().map((a) => a.kind).sort());
  eq(kinds, ['area', 'flag', 'note'], 'all three drawn');
  await waitFor('the annotations in the URL', async () => new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('a'));
});

test('"Copy link to this event" opens the event, its window and the annotations elsewhere', async () => {
  await page.evaluate((k) => window.nexApp.goEvent(k), note.event);
  await page.waitForSelector('.drawer button.copy-link');
  await page.click('.drawer button.copy-link');
  await page.waitForSelector('.drawer button.copy-link[data-link]');
  const link = await page.$eval('.drawer button.copy-link', (b) => b.dataset.link);
  const p = new URLSearchParams(new URL(link).hash.slice(1));
  eq(p.get('sel'), note.event, 'the link names the event');
  const w = (await state()).window;
  eq([p.get('s'), p.get('e')], [w.s, w.e], 'the link keeps the window that shows the event');
  // Another server (here: the same one after losing them) opens the link.
  for (const a of await annots()) eq((await send('DELETE', `annotations/${a.id}`)).status, 200, 'deleted');
  await page.close();
  page = await browser.newPage();
  await page.setViewportSize({ width: 1600, height: 950 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(link);
  await idle();
  await page.waitForFunction((k) => window.nexTest.state().selection === k, note.event);
  const w2 = (await state()).window;
  eq([w2.s, w2.e], [p.get('s'), p.get('e')], 'the same window');
  await waitFor('the link\'s annotations added', async () => (await annots()).length === 3);
  eq((await annots()).map((a) => [a.kind, a.text]).sort(), [['area', 'warm-up'], ['flag', 'checkpoint'], ['note', 'slow step']], 'the same annotations');
  eq((await annots()).find((a) => a.kind === 'note').event, note.event, 'the note on the same event');
  await page.waitForFunction(() => window.nexTest.annotations().length >= 2);
  await shot('annot-04-link');
  eq(pageErrors, [], 'no page errors');
});

h.run(setup);
