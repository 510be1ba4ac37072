// harness.mjs -- what the browser tests share: TAP output, assertions, the
// server under test (spawned on a free port, stopped with SIGTERM), headless
// Chromium through playwright-core, and the run rules: without
// playwright-core or a Chromium binary every test prints a TAP skip line with
// the reason; NEX_REQUIRE_E2E=1 makes that a failure, NEX_SKIP_E2E=1 skips
// on purpose.  A suite is one harness() call; its temporary directory is
// removed at the end unless a test failed.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SRC = path.resolve(process.env.NEX_SRCDIR || path.join(here, '../..'));
export const BUILD = process.env.NEX_BUILDDIR || process.cwd();
export const CHROMIUM = process.env.NEX_CHROMIUM || '/usr/bin/chromium';
export const SERVER = path.join(BUILD, 'server/neuron-explorer-server');
export const OUT = path.join(BUILD, 'tests/out/e2e');

export function assert(cond, msg) { if (!cond) throw new Error(msg); }
export function eq(got, want, msg) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(`${msg}\n got:  ${g}\n want: ${w}`);
}

/** Polls fn() every 100 ms until it is truthy; throws after `ms`. */
export async function waitFor(what, fn, ms = 60000) {
  const t0 = Date.now();
  let last;
  for (;;) {
    try { if (await fn()) return; } catch (e) { last = e; }
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the page's timeline is ready and has nothing in flight. */
export async function idle(p) {
  await p.waitForFunction(() => window.nexTest?.ready(), null, { timeout: 20000 });
  await p.evaluate(() => window.nexTest.waitIdle());
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// Loads playwright-core and checks for the Chromium binary.  Returns the
// driver, or a string saying what is missing.
async function browserDriver() {
  try {
    const { chromium } = await import('playwright-core');
    if (!fs.existsSync(CHROMIUM)) return `Chromium not found at ${CHROMIUM} (apt-get install chromium, or set NEX_CHROMIUM)`;
    return chromium;
  } catch (e) {
    return `playwright-core not found (run "npm ci" in ${SRC}): ${e.code || e.message}`;
  }
}

/**
 * A suite.  Returns { tmp, test(name, fn), api(p), port(), startServer(dir),
 * stopServer(), launch(), run(setup) }: setup(h) gets the harness after the
 * driver was found; run() prints TAP and exits.
 */
export function harness(prefix) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const tests = [];
  let n = 0, failed = 0, port = 0, server = null, browser = null, driver = null;

  const report = (ok, name, err) => {
    n++;
    console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${name}`);
    if (!ok) {
      failed++;
      for (const line of String(err?.stack || err).split('\n').slice(0, 12)) console.log(`#   ${line}`);
    }
  };

  const h = {
    tmp,
    test: (name, fn) => tests.push({ name, fn }),
    port: () => port,
    async api(p) {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/${p}`);
      if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
      return r.json();
    },
    /** Starts the server on `dir` (the store in tmp); resolves when it is ready. */
    async startServer(dir, ms = 60000) {
      assert(fs.existsSync(SERVER), `server not built: ${SERVER}`);
      port ||= await freePort();
      const log = fs.openSync(path.join(tmp, 'server.log'), 'a');
      server = spawn(SERVER, ['--dir', dir, '--db', path.join(tmp, 'store.db'), '--port', String(port),
        '--web-root', path.join(SRC, 'web')], { stdio: ['ignore', log, log] });
      server.on('exit', () => { server = null; });
      await waitFor('the server to be ready', async () => (await h.api('health')).state === 'ready', ms);
    },
    stopServer() {
      if (!server) return Promise.resolve();
      const s = server;
      return new Promise((resolve) => { s.once('exit', resolve); s.kill('SIGTERM'); });
    },
    /** Headless Chromium with a profile in tmp; returns its browser context. */
    async launch() {
      browser = await driver.launchPersistentContext(path.join(tmp, 'chrome-profile'), {
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
          '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      });
      return browser;
    },
    async cleanup() {
      try { await browser?.close(); } catch { /* already gone */ }
      await h.stopServer();
      if (failed && fs.existsSync(path.join(tmp, 'server.log'))) console.log(`# server log and profile kept in ${tmp}`);
      else fs.rmSync(tmp, { recursive: true, force: true });
    },
    async main(setup) {
      console.log(`1..${tests.length}`);
      const d = process.env.NEX_SKIP_E2E ? 'NEX_SKIP_E2E is set' : await browserDriver();
      if (typeof d === 'string' && (!process.env.NEX_REQUIRE_E2E || process.env.NEX_SKIP_E2E)) {
        for (const t of tests) report(true, `${t.name} # SKIP ${d}`);
        return;
      }
      const timer = setTimeout(() => { console.log('# Bail out! the browser test took more than 5 minutes'); h.cleanup().then(() => process.exit(1)); }, 300000);
      let setupErr = typeof d === 'string' ? new Error(`${d} (NEX_REQUIRE_E2E is set)`) : null;
      driver = d;
      if (!setupErr) {
        fs.mkdirSync(OUT, { recursive: true });
        try { await setup(h); } catch (e) { setupErr = e; }
      }
      for (const t of tests) {
        if (setupErr) { report(false, t.name, setupErr); continue; }
        try { await t.fn(); report(true, t.name); } catch (e) { report(false, t.name, e); }
      }
      clearTimeout(timer);
    },
    /** Runs the suite and exits with its status. */
    run(setup) {
      h.main(setup).then(h.cleanup, async (e) => { console.log(`# ${e.stack}`); failed++; await h.cleanup(); })
        .then(() => process.exit(failed ? 1 : 0));
    },
  };
  return h;
}
