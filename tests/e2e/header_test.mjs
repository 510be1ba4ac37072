#!/usr/bin/env node
// header_test.mjs -- browser test of the page header at narrow widths: at
// 1024, 1280, 1500 and 1600 px, in the System Trace, Summary and Device
// Trace views (and the Device Trace's bar of figures), every header control
// (buttons, selects, inputs, labels, the brand and the profile title) is
// shown whole inside the viewport, is what the browser finds at its own
// centre (nothing covers or clips it), and no two overlap (bounding boxes).
// Headless Chromium (playwright-core) against the server on a profile made
// by neuron-explorer-synth.  Prints TAP; skips as ui_test.mjs does.
// Screenshots go to $NEX_BUILDDIR/tests/out/e2e/.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, idle as idleOf, BUILD, OUT } from './harness.mjs';

const SYNTH = path.join(BUILD, 'tools/neuron-explorer-synth');
const h = harness('nex-e2e-header-');
const { test, tmp } = h;
let page = null;
const pageErrors = [];
const WIDTHS = [1024, 1280, 1500, 1600];

async function setup() {
  assert(fs.existsSync(SYNTH), `synth tool not built: ${SYNTH}`);
  execFileSync(SYNTH, ['--out', path.join(tmp, 'profile'), '--seed', '5', '--instances', '1', '--processes', '1',
    '--cores', '1', '--steps', '2', '--device-instructions', '200'], { stdio: 'pipe' });
  await h.startServer(path.join(tmp, 'profile'));
  const browser = await h.launch();
  page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
}

/**
 * What is wrong with the header as laid out now: a list of sentences, empty
 * when every control is whole, inside the viewport, uncovered and apart.
 */
function headerProblems() {
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const name = (el) => el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}.${el.className || ''}"${el.textContent.trim().slice(0, 20)}"`;
  const sel = ['button', 'select', 'input', 'label', '.brand', '.ptitle', '#dev-tab', '.stat', '.title'].flatMap((x) => [`#bar ${x}`, `.subbar ${x}`]).join(', ');
  const els = [...document.querySelectorAll(sel)]
    .filter((el) => shown(el) && (el.textContent.trim() || !/^(SPAN|DIV)$/.test(el.tagName)));
  const out = [];
  const W = document.documentElement.clientWidth, H = innerHeight;
  const boxes = els.map((el) => [el, el.getBoundingClientRect()]);
  for (const [el, r] of boxes) {
    if (r.width < 1 || r.height < 1) { out.push(`${name(el)} has no size`); continue; }
    if (r.left < 0 || r.top < 0 || r.right > W + 0.5 || r.bottom > H) out.push(`${name(el)} outside the viewport: ${r.left}..${r.right} of ${W}`);
    // clipped by an ancestor, or covered: the browser must find it (or a child) at its centre
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!at || !(el === at || el.contains(at) || (at.contains(el) && at.tagName === 'LABEL'))) out.push(`${name(el)} is covered or clipped (${at ? name(at) : 'nothing'} at its centre)`);
    // its text cut (the titles ellipsize on purpose: their title attribute has it all)
    if (!el.closest('.ptitle, .title') && el.tagName !== 'INPUT' && el.tagName !== 'SELECT' && el.scrollWidth > el.clientWidth + 1) out.push(`${name(el)}'s content is cut: ${el.scrollWidth} > ${el.clientWidth}`);
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      if (a.contains(b) || b.contains(a)) continue;
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left), hh = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 0.5 && hh > 0.5) out.push(`${name(a)} and ${name(b)} overlap (${w.toFixed(1)} x ${hh.toFixed(1)} px)`);
    }
  }
  return out;
}

async function check(view, hash) {
  for (const w of WIDTHS) {
    await page.setViewportSize({ width: w, height: 800 });
    await page.goto(`http://localhost:${h.port()}/#${hash}`);
    await page.waitForFunction((v) => window.nexTest?.view() === v && window.nexTest.ready(), view, { timeout: 20000 });
    if (view !== 'summary') await idleOf(page);
    await page.fill('#search-q', 'nrt_execute');
    await page.waitForFunction(() => /hits/.test(document.getElementById('search-count').textContent), null, { timeout: 20000 });
    const bad = await page.evaluate(headerProblems);
    await page.screenshot({ path: path.join(OUT, `header-${view}-${w}.png`), clip: { x: 0, y: 0, width: w, height: 180 } });
    assert(!bad.length, `${view} at ${w} px:\n  ${bad.join('\n  ')}`);
    const canvas = await page.$('.tl-canvas');
    if (canvas) {
      const [bar, c] = await page.evaluate(() => [document.getElementById('bar').getBoundingClientRect().bottom, document.querySelector('.tl-canvas').getBoundingClientRect()]);
      assert(c.top >= bar && c.width > 0 && c.height > 200, `${view} at ${w} px: the timeline below the header (${c.top} >= ${bar}), ${c.height} px high`);
    }
  }
}

test('System Trace header: every control whole, inside the viewport and apart at 1024, 1280, 1500, 1600 px', async () => {
  await check('timeline', 'v=timeline');
});

test('Device Trace header and bar: the same', async () => {
  const r = await fetch(`http://127.0.0.1:${h.port()}/api/v1/device-profiles`);
  const id = (await r.json()).items[0].id;
  await check('device', `v=device&dp=${id}`);
});

test('Summary header: the same', async () => {
  await check('summary', 'v=summary');
});

test('no page errors', async () => {
  assert(!pageErrors.length, `page errors: ${pageErrors.join('; ')}`);
});

h.run(setup);
