#!/usr/bin/env node
// gen_test.mjs -- browser test of the store generation (doc/api.md,
// "Store generation"): the page sends the generation of the store its ids
// come from as `gen` with every REST request and WebSocket window request;
// when the profile is re-ingested while the page misses the WebSocket's
// pushes (filtered out here), its next request gets 409 stale and the page reloads the profile
// and its tracks, then asks with the new generation.  Headless Chromium
// (playwright-core) against the server watching a folder with one Chrome
// trace; prints TAP and skips as ui_test.mjs does.

import fs from 'node:fs';
import path from 'node:path';
import { harness, assert, eq, waitFor, idle as idleOf, SRC } from './harness.mjs';

const h = harness('nex-e2e-gen-');
const { test, api } = h;
let page = null;
let trace = '';
let quiet = false; // drop the server's text pushes to the page
const answers = []; // every /api/v1/ answer the page got: {url, status}
const wsSent = []; // every text message the page sent over /ws, parsed
const idle = () => idleOf(page);

async function setup() {
  const dir = path.join(h.tmp, 'profile');
  fs.mkdirSync(dir);
  trace = path.join(dir, 'trace.json');
  fs.copyFileSync(path.join(SRC, 'tests/data/chrome/basic.json'), trace);
  await h.startServer(dir);
  const browser = await h.launch();
  page = await browser.newPage();
  await page.routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      if (typeof m === 'string') wsSent.push(JSON.parse(m));
      server.send(m);
    });
    server.onMessage((m) => {
      if (quiet && typeof m === 'string' && !m.includes('"type":"result"')) return;
      ws.send(m);
    });
  });
  page.on('response', (r) => {
    const url = new URL(r.url());
    if (url.pathname.startsWith('/api/v1/')) answers.push({ url, status: r.status() });
  });
  await page.goto(`http://localhost:${h.port()}/`);
  await idle();
}

// ------------------------------------------------------------ tests

let gen0 = '';

test('the page sends its store generation with every REST request', async () => {
  gen0 = (await api('profile')).generation;
  assert(/^[0-9a-f]{16}$/.test(gen0), `/profile's generation: ${gen0}`);
  const sent = answers.filter((a) => !/\/(profile|health)$/.test(a.url.pathname));
  assert(sent.some((a) => a.url.pathname === '/api/v1/tracks'), `the page asked for its tracks: ${sent.map((a) => a.url.pathname)}`);
  for (const a of sent) eq(a.url.searchParams.get('gen'), gen0, `gen of ${a.url.pathname}`);
});

test('its window requests over the WebSocket carry the generation too', async () => {
  const windows = wsSent.filter((m) => m.type === 'slices' || m.type === 'counters');
  assert(windows.length > 0, `the page asked windows over /ws: ${wsSent.map((m) => m.type)}`);
  for (const m of windows) eq(m.gen, gen0, `gen of a ${m.type} request`);
});

test('a re-ingest the page missed: 409 stale, then it reloads with the new generation', async () => {
  quiet = true; // no new-data, progress or ready reaches the page
  fs.appendFileSync(trace, '\n'); // a new size: the watcher re-ingests
  let gen1 = gen0;
  await waitFor('the re-ingest', async () => (gen1 = (await api('profile')).generation) !== gen0, 60000);
  const from = answers.length;
  await page.selectOption('#grouping', 'thread');
  const newTracks = (a) => a.url.pathname === '/api/v1/tracks' && a.url.searchParams.get('gen') === gen1 && a.status === 200;
  await waitFor('tracks asked with the new generation', async () => answers.slice(from).some(newTracks), 20000);
  const after = answers.slice(from);
  const stale = after.findIndex((a) => a.status === 409);
  assert(stale >= 0, `a request got 409: ${after.map((a) => `${a.url.pathname} ${a.status}`)}`);
  eq([after[stale].url.pathname, after[stale].url.searchParams.get('gen')], ['/api/v1/tracks', gen0], 'the stale request named the old generation');
  const reload = after.findIndex((a) => a.url.pathname === '/api/v1/profile');
  assert(reload > stale && after.findIndex(newTracks) > reload, 'then /profile, then /tracks with the new generation');
  await idle();
  const names = await page.evaluate(() => window.nexTest.tracks());
  assert(names.length > 0, 'the view shows the reloaded tracks');
});

// ------------------------------------------------------------ main

h.run(setup);
