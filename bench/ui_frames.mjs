#!/usr/bin/env node
// ui_frames.mjs -- frame times of the System Trace Viewer during a scripted
// pan/zoom/scroll over a profile with about 1,000 tracks.  Not a pass/fail
// test: it prints p50/p95/max of the timeline's render time (JS work per
// frame) and of the interval between animation frames (what the user sees).
//
//   node bench/ui_frames.mjs [--build DIR] [--processes N] [--cores N]
//                            [--instances N] [--events N] [--width W] [--height H]
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
const opt = { build: path.join(SRC, 'build'), instances: 2, processes: 45, cores: 4, events: 400000, width: 1920, height: 1080 };
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
  await page.goto(`http://localhost:${port}/`);
  await page.waitForFunction(() => window.nexTest?.ready(), null, { timeout: 60000 });
  await page.evaluate(() => window.nexTest.waitIdle(60000));
  const tracks = await page.evaluate(() => window.nexTest.tracks().length);
  const box = await page.$eval('.tl-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  await page.evaluate(() => {
    window.nexTest.resetFrames();
    window.__iv = [];
    let last = 0;
    const loop = (t) => { if (last) window.__iv.push(t - last); last = t; window.__raf = requestAnimationFrame(loop); };
    window.__raf = requestAnimationFrame(loop);
  });
  // The script: zoom in, pan both ways, zoom out (held keys), scroll the
  // track list with the wheel, zoom with Ctrl+wheel, pan by dragging.
  await page.mouse.move(box.x + box.w * 0.6, box.y + box.h / 2);
  for (const [k, ms] of [['w', 1500], ['d', 1200], ['a', 1200], ['s', 800], ['w', 600]]) {
    await page.keyboard.down(k);
    await page.waitForTimeout(ms);
    await page.keyboard.up(k);
  }
  for (let i = 0; i < 80; i++) { await page.mouse.wheel(0, 150); await page.waitForTimeout(16); }
  await page.keyboard.down('Control');
  for (let i = 0; i < 30; i++) { await page.mouse.wheel(0, i < 15 ? -100 : 100); await page.waitForTimeout(16); }
  await page.keyboard.up('Control');
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.2, box.y + box.h / 3, { steps: 60 });
  await page.mouse.up();
  const { iv, fr } = await page.evaluate(() => { cancelAnimationFrame(window.__raf); return { iv: window.__iv, fr: window.nexTest.frames() }; });
  const stats = (a) => {
    const s = [...a].sort((x, y) => x - y);
    const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
    return `p50 ${q(0.5).toFixed(2)} ms, p95 ${q(0.95).toFixed(2)} ms, max ${s[s.length - 1].toFixed(2)} ms (${s.length} frames)`;
  };
  console.log(`tracks: ${tracks} (${opt.instances} instances x ${opt.processes} processes x ${opt.cores} cores, ~${opt.events} events), viewport ${opt.width}x${opt.height}`);
  console.log(`render time per frame:  ${stats(fr)}`);
  console.log(`animation frame interval: ${stats(iv)}`);
} finally {
  await browser?.close();
  server?.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
}
