#!/usr/bin/env node
// ui_frames.mjs -- frame times of the System Trace Viewer during a scripted
// pan/zoom/scroll over a profile with about 1,000 tracks.  Not a pass/fail
// test: it prints p50/p95/p99/max of the timeline's render time (JS work
// per frame) and of the interval between animation frames (what the user
// sees), the same interval on the same page left alone for 3 s first (the
// floor the machine gives: timer jitter, other processes), and the late
// frames (an interval of 25 ms or more: at least one frame missed) by step
// of the script, with the long tasks (50 ms or more) the page reported.
//
//   node bench/ui_frames.mjs [--build DIR] [--processes N] [--cores N]
//                            [--instances N] [--events N] [--width W] [--height H]
//                            [--profile N]
//
// --profile N: also samples the page's JavaScript (CDP Profiler) during the
// script and prints the N functions with the most self time, overall and
// within the stretches of 40 ms or more without an idle sample (what makes
// frames late).
//
// Needs a built tree (server + synth), /usr/bin/chromium and playwright-core
// (npm ci at the top of the source tree).

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const opt = { build: path.join(SRC, 'build'), instances: 2, processes: 45, cores: 4, events: 400000, width: 1920, height: 1080, profile: 0 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in opt)) { console.error(`unknown option ${process.argv[i]}`); process.exit(2); }
  opt[k] = k === 'build' ? path.resolve(process.argv[i + 1]) : Number(process.argv[i + 1]);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nex-ui-bench-'));
const port = await new Promise((r) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => r(p)); }); });
let server, browser;
try {
  execFileSync(path.join(opt.build, 'tools/neuron-explorer-synth'), ['--out', path.join(tmp, 'p'), '--seed', '3',
    '--instances', String(opt.instances), '--processes', String(opt.processes), '--cores', String(opt.cores),
    '--target-events', String(opt.events), '--device-profile', 'none'], { stdio: 'ignore' });
  server = spawn(path.join(opt.build, 'server/neuron-explorer-server'), ['--dir', path.join(tmp, 'p'), '--db', path.join(tmp, 'db'),
    '--port', String(port), '--web-root', path.join(SRC, 'web')], { stdio: 'ignore' });
  const t0 = Date.now();
  for (;;) {
    try { if ((await (await fetch(`http://127.0.0.1:${port}/api/v1/health`)).json()).state === 'ready') break; } catch { /* starting */ }
    if (Date.now() - t0 > 300000) throw new Error('server not ready after 5 minutes');
    await new Promise((r) => setTimeout(r, 200));
  }
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = await browser.newPage({ viewport: { width: opt.width, height: opt.height } });
  // counts the text the canvases draw (the costliest call of a frame)
  await page.addInitScript(() => {
    const P = CanvasRenderingContext2D.prototype, text = P.fillText;
    window.__texts = 0;
    P.fillText = function (...a) { window.__texts++; return text.apply(this, a); };
  });
  await page.goto(`http://localhost:${port}/`);
  await page.waitForFunction(() => window.nexTest?.ready(), null, { timeout: 60000 });
  await page.evaluate(() => window.nexTest.waitIdle(60000));
  const tracks = await page.evaluate(() => window.nexTest.tracks().length);
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  // The floor: animation frame intervals of the page doing nothing.
  const idleIv = await page.evaluate(() => new Promise((resolve) => {
    const iv = [];
    let last = 0;
    const t0 = performance.now();
    const loop = (t) => {
      if (last) iv.push(t - last);
      last = t;
      if (t - t0 < 3000) requestAnimationFrame(loop); else resolve(iv);
    };
    requestAnimationFrame(loop);
  }));
  await page.evaluate(() => {
    window.nexTest.resetFrames();
    window.__texts = 0;
    window.__iv = [];
    window.__late = [];
    window.__long = [];
    window.__step = 'start';
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push([window.__step, e.duration]); }).observe({ type: 'longtask' });
    let last = 0;
    const loop = (t) => {
      if (last) { window.__iv.push(t - last); if (t - last >= 25) window.__late.push([window.__step, t - last]); }
      last = t;
      window.__raf = requestAnimationFrame(loop);
    };
    window.__raf = requestAnimationFrame(loop);
  });
  const step = (name) => page.evaluate((n) => { window.__step = n; }, name);
  const cdp = opt.profile ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 250 });
    await cdp.send('Profiler.start');
  }
  // The script: zoom in, pan both ways, zoom out (held keys), scroll the
  // track list with the wheel, zoom with Ctrl+wheel, pan by dragging.
  await page.mouse.move(box.x + box.w * 0.6, box.y + box.h / 2);
  for (const [k, ms] of [['w', 1500], ['d', 1200], ['a', 1200], ['s', 800], ['w', 600]]) {
    await step(`key ${k}`);
    await page.keyboard.down(k);
    await page.waitForTimeout(ms);
    await page.keyboard.up(k);
  }
  await step('wheel scroll');
  for (let i = 0; i < 80; i++) { await page.mouse.wheel(0, 150); await page.waitForTimeout(16); }
  await step('ctrl+wheel zoom');
  await page.keyboard.down('Control');
  for (let i = 0; i < 30; i++) { await page.mouse.wheel(0, i < 15 ? -100 : 100); await page.waitForTimeout(16); }
  await page.keyboard.up('Control');
  await step('drag pan');
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.2, box.y + box.h / 3, { steps: 60 });
  await page.mouse.up();
  const prof = cdp ? (await cdp.send('Profiler.stop')).profile : null;
  const { iv, fr, late, long, texts } = await page.evaluate(() => {
    cancelAnimationFrame(window.__raf);
    return { iv: window.__iv, fr: window.nexTest.frames(), late: window.__late, long: window.__long, texts: window.__texts };
  });
  const stats = (a) => {
    const s = [...a].sort((x, y) => x - y);
    const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
    return `p50 ${q(0.5).toFixed(2)} ms, p95 ${q(0.95).toFixed(2)} ms, p99 ${q(0.99).toFixed(2)} ms, max ${s[s.length - 1].toFixed(2)} ms (${s.length} frames)`;
  };
  const bySteps = (list) => {
    const m = new Map();
    for (const [st, ms] of list) m.set(st, [...(m.get(st) || []), Math.round(ms)]);
    return [...m].map(([st, v]) => `${st}: ${v.join(', ')}`).join('; ') || 'none';
  };
  console.log(`tracks: ${tracks} (${opt.instances} instances x ${opt.processes} processes x ${opt.cores} cores, ~${opt.events} events), viewport ${opt.width}x${opt.height}`);
  console.log(`render time per frame:  ${stats(fr)}; ${(texts / Math.max(1, fr.length)).toFixed(0)} fillText calls per frame`);
  // vsync times come in 0.1 ms steps: 16.6 and 16.7 ms are on time, 16.8 ms a jitter, 25 ms+ a frame missed
  const share = (a) => `over 16.7 ms: ${(100 * a.filter((x) => x > 16.75).length / a.length).toFixed(1)}%, 25 ms or more: ${(100 * a.filter((x) => x >= 25).length / a.length).toFixed(1)}%`;
  console.log(`animation frame interval: ${stats(iv)}; ${share(iv)}`);
  console.log(`idle frame interval (same page, no input, before): ${stats(idleIv)}; ${share(idleIv)}`);
  console.log(`late frames (interval >= 25 ms, ms): ${bySteps(late)}`);
  console.log(`long tasks (ms): ${bySteps(long)}`);
  if (prof) {
    // self time per function: samples x the mean sampling interval
    const dt = (prof.endTime - prof.startTime) / 1000 / Math.max(1, prof.samples.length);
    const self = new Map();
    for (const n of prof.nodes) {
      const f = n.callFrame, k = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/web\//, '')}:${f.lineNumber + 1}`;
      self.set(k, (self.get(k) || 0) + (n.hitCount || 0) * dt);
    }
    const top = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, opt.profile).map(([k, ms]) => `  ${ms.toFixed(1).padStart(8)}  ${k}`).join('\n');
    console.log(`JavaScript self time (ms) over ${((prof.endTime - prof.startTime) / 1000).toFixed(0)} ms:\n${top(self)}`);
    // Stretches of samples without an idle one, 40 ms or longer.
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    const label = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/web\//, '')}:${n.callFrame.lineNumber + 1}`;
    const inLong = new Map();
    let run = [], runMs = 0, stretches = 0;
    const flush = () => {
      if (runMs >= 40) { stretches++; for (const [id, d] of run) { const k = label(byId.get(id)); inLong.set(k, (inLong.get(k) || 0) + d); } }
      run = []; runMs = 0;
    };
    prof.samples.forEach((id, i) => {
      const d = (prof.timeDeltas[i + 1] ?? 0) / 1000;
      if (byId.get(id).callFrame.functionName === '(idle)') { flush(); return; }
      run.push([id, d]); runMs += d;
    });
    flush();
    console.log(`busy stretches >= 40 ms: ${stretches}; self time (ms) in them:\n${top(inLong)}`);
  }
} finally {
  await browser?.close();
  server?.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
}
