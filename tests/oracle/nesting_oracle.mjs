#!/usr/bin/env node
// nesting_oracle.mjs -- the Chrome DevTools trace engine
// (@paulirish/trace_engine, the Performance panel's model) as an oracle for
// the nesting of our Chrome-trace ingest.  Prints TAP.
//
// For every trace in tests/data/traces and in the shared trace folder
// ($NEX_SHARED_TRACES_EXTRA, else ../shared/traces or ../../shared/traces
// beside the source tree; a TAP skip line when none is there), and a 1 MB
// trace of bench/kineto_gen.py (Kineto's file order), it builds the
// engine's entry tree (RendererHandler's entryToNode, made by
// TreeHelpers.treify), ingests the same file with our server and asserts,
// entry by entry, that our parent (the innermost slice one lane up on the
// same track that contains it) is the engine's parent.  Every disagreement
// is counted exactly and the first ones are printed.
//
// What is handed to the engine, and why:
//  * timestamps as exact integer nanoseconds from the decimal text (JSON.parse
//    with source text access), rebased to the trace's first one: Kineto's
//    epoch microseconds with three decimals are not exact as doubles (their
//    ulp is 0.25 us), and the engine would nest by rounding errors;
//  * B/E pairs as X events, paired per (pid, tid) as the Trace Event Format
//    says (the engine keeps one begin stack for all threads);
//  * thread-scoped instants (i, I) as I (the engine knows only I);
//  * nothing else (metadata, flows, counters, async events are no part of
//    the thread trees).
// The engine leaves out of its tree an entry that starts inside the entry
// on top of its stack and ends after it; such entries (and any of a process
// the engine drops) are counted, not compared.
// Events are matched by (pid, tid, ts, dur, name) in exact ns; duplicates
// of one key are compared by their parents' keys.
//
// Needs JSON.parse source text access: under a node without it by default
// the script runs itself again with --harmony-json-parse-with-source.

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';

function hasSourceAccess() {
  let seen = false;
  JSON.parse('[1]', function (k, v, ctx) {
    if (ctx && typeof ctx.source === 'string')
      seen = true;
    return v;
  });
  return seen;
}

if (!hasSourceAccess()) {
  const flag = '--harmony-json-parse-with-source';
  if (process.execArgv.includes(flag)) {
    console.log('1..0 # SKIP this node has no JSON.parse source text access');
    process.exit(0);
  }
  const r = spawnSync(process.execPath, [flag, ...process.argv.slice(1)],
                      { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const SRC = process.env.NEX_SRCDIR || path.resolve(here, '../..');
const BUILD = process.env.NEX_BUILDDIR || process.cwd();
const SERVER = path.join(BUILD, 'server/neuron-explorer-server');
const SHOW = 15; // disagreements printed per trace

const ENGINE = path.join(SRC, 'node_modules/@paulirish/trace_engine');
// A release tarball has no node_modules/: skip with the reason, unless
// NEX_REQUIRE_E2E says the engine must be there (tools/bootstrap.sh test).
if (!fs.existsSync(path.join(ENGINE, 'models/trace/trace.js'))) {
  const why = `no ${ENGINE} (npm ci installs it)`;
  if (process.env.NEX_REQUIRE_E2E) {
    console.log(`1..1\nnot ok 1 - the DevTools trace engine is installed # ${why}`);
    process.exit(1);
  }
  console.log(`1..0 # SKIP ${why}`);
  process.exit(0);
}
const Trace = await import(pathToFileURL(path.join(ENGINE, 'models/trace/trace.js')));
const { polyfillDOMRect } = await import(
  pathToFileURL(path.join(ENGINE, 'analyze-trace.mjs')));

let n = 0, failed = 0;
function ok(cond, name, lines = []) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
  if (!cond)
    failed++;
  for (const l of lines)
    console.log(`#   ${l}`);
}

// ------------------------------------------------------------ the traces

function traceDirs() {
  const dirs = [path.join(SRC, 'tests/data/traces')];
  const extra = process.env.NEX_SHARED_TRACES_EXTRA;
  const cand = extra ? [extra] : [path.resolve(SRC, '../shared/traces'),
                                  path.resolve(SRC, '../../shared/traces')];
  const found = cand.find((d) => fs.existsSync(d));
  return { dirs: found ? [...dirs, found] : dirs, shared: found, cand };
}

// Every *.json / *.json.gz, each basename once (the first folder wins).
function traceFiles(dirs) {
  const seen = new Map();
  for (const d of dirs) {
    if (!fs.existsSync(d))
      continue;
    for (const f of fs.readdirSync(d).sort())
      if (/\.json(\.gz)?$/.test(f) && !seen.has(f))
        seen.set(f, path.join(d, f));
  }
  return [...seen.values()];
}

// ------------------------------------------------------------ exact time

// A decimal number text (µs) times 1000, rounded half away from zero, as a
// BigInt: the decoder's jtok_decimal(…, 3).  null when it is no number.
function nsOf(text, scale = 3) {
  const m = /^\s*([-+]?)(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === ''))
    return null;
  const digits = (m[2] || '') + (m[3] || '');
  let exp = (m[4] ? parseInt(m[4], 10) : 0) - (m[3] || '').length + scale;
  let v = BigInt(digits || '0');
  if (exp >= 0) {
    v *= 10n ** BigInt(exp);
  } else {
    const d = 10n ** BigInt(-exp);
    const q = v / d, r = v % d;
    v = q + (2n * r >= d ? 1n : 0n);
  }
  return m[1] === '-' ? -v : v;
}

class Exact { constructor(src) { this.src = src; } }

// The events of a trace with ts/dur (and baseTimeNanoseconds) kept as
// their source text.
function loadTrace(file) {
  let buf = fs.readFileSync(file);
  if (buf[0] === 0x1f && buf[1] === 0x8b)
    buf = zlib.gunzipSync(buf);
  const doc = JSON.parse(buf.toString('utf8'), function (k, v, ctx) {
    if ((k === 'ts' || k === 'dur') && this && typeof this === 'object' &&
        !Array.isArray(this) && 'ph' in this &&
        (typeof v === 'number' || typeof v === 'string'))
      return new Exact(typeof v === 'number' ? ctx.source : v);
    if (k === 'baseTimeNanoseconds' && typeof v === 'number')
      return new Exact(ctx.source);
    return v;
  });
  const events = Array.isArray(doc) ? doc : (doc?.traceEvents ?? []);
  let base = 0n;
  if (!Array.isArray(doc) && doc?.baseTimeNanoseconds instanceof Exact)
    base = nsOf(doc.baseTimeNanoseconds.src, 0) ?? 0n;
  return { events, base };
}

const text = (v) => (v === undefined || v === null ? ''
                     : typeof v === 'string' ? v : JSON.stringify(v));

// The thread-tree entries of a trace, as the engine gets them: X, paired
// B/E, thread-scoped instants.  Each carries key (pid, tid, ts, dur, name
// in exact ns) and at (its index in the event array).
function entries(trace) {
  const out = [];
  const stacks = new Map();
  let tsMax = null, skippedScope = 0;
  const seen = (end) => { if (tsMax === null || end > tsMax) tsMax = end; };
  trace.events.forEach((e, at) => {
    if (!e || typeof e !== 'object' || typeof e.ph !== 'string' || e.ph === 'M')
      return;
    if (!(e.ts instanceof Exact))
      return;
    const ts = nsOf(e.ts.src);
    if (ts === null)
      return;
    const t = ts + trace.base;
    let dur = 0n;
    if (e.ph === 'X' && e.dur instanceof Exact) {
      const d = nsOf(e.dur.src);
      dur = d !== null && d >= 0n ? d : 0n;
    }
    seen(t + dur);
    const pid = text(e.pid), tid = text(e.tid), name = text(e.name);
    const mk = (ph, ts0, d) => ({ ph, pid: e.pid, tid: e.tid, name, cat: e.cat,
                                  args: {}, at, tsns: ts0, durns: d, kpid: pid, ktid: tid });
    if (e.ph === 'X') {
      out.push(mk('X', t, dur));
    } else if (e.ph === 'B') {
      const k = pid + '\u0000' + tid;
      if (!stacks.has(k))
        stacks.set(k, []);
      const b = mk('X', t, null);
      stacks.get(k).push(b);
      out.push(b);
    } else if (e.ph === 'E') {
      const st = stacks.get(pid + '\u0000' + tid);
      if (st && st.length) {
        const b = st.pop();
        b.durns = t - b.tsns;
      }
    } else if (e.ph === 'i' || e.ph === 'I') {
      if (e.s === undefined || e.s === null || e.s === 't')
        out.push(mk('I', t, 0n));
      else
        skippedScope++;
    }
  });
  for (const st of stacks.values())
    for (const b of st)
      b.durns = tsMax - b.tsns; // an unmatched B runs to the trace's end
  let first = null;
  for (const x of out)
    if (first === null || x.tsns < first)
      first = x.tsns;
  for (const x of out) {
    x.ts = Number(x.tsns - first);
    if (x.ph === 'X')
      x.dur = Number(x.durns);
    x.key = [x.kpid, x.ktid, x.tsns, x.durns, x.name].join('\t');
  }
  return { list: out, skippedScope };
}

// The engine's parent of each entry: Map entry -> parent entry or null;
// entries left out of its tree are absent.
async function engineParents(list) {
  polyfillDOMRect();
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(list);
  const parsed = model.parsedTrace();
  const e2n = parsed?.data?.Renderer?.entryToNode;
  if (!e2n)
    throw new Error('the engine built no entry tree');
  const parents = new Map();
  for (const [entry, node] of e2n)
    parents.set(entry, node.parent ? node.parent.entry : null);
  return parents;
}

// ------------------------------------------------------------ our store

function sql(db, q) {
  const out = execFileSync('sqlite3', ['-separator', '\t', '-cmd',
                                       `.load ${path.join(BUILD, 'nexstore')}`,
                                       db, q],
                           { maxBuffer: 1 << 30 }).toString('utf8');
  return out.split('\n').filter((l) => l.length).map((l) => l.split('\t'));
}

// Our slices with their parent key: Map key -> [parent key or ''].
function storeParents(db) {
  // pids/tids the trace wrote as text are stored as numbers with the text
  // as their name (named = 1)
  const pname = new Map(sql(db, 'SELECT pid, name FROM process WHERE named')
                        .map(([p, nm]) => [p, nm]));
  const tname = new Map(sql(db, 'SELECT pid, tid, name FROM thread WHERE named')
                        .map(([p, t, nm]) => [p + '\t' + t, nm]));
  const rows = sql(db, `SELECT t.id, t.pid, t.tid, s.lane, s.ts, s.dur, replace(replace(n.s, char(9), ' '), char(10), ' ')
    FROM slice s JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name
    WHERE t.source = 'framework' ORDER BY t.id, s.lane, s.ts`);
  const tracks = new Map();
  for (const [track, pid, tid, lane, ts, dur, name] of rows) {
    const p = pname.has(pid) ? pname.get(pid) : pid;
    const t = tname.has(pid + '\t' + tid) ? tname.get(pid + '\t' + tid) : tid;
    const s = { lane: +lane, ts: BigInt(ts), dur: BigInt(dur) };
    s.key = [p, t, s.ts, s.dur, name].join('\t');
    if (!tracks.has(track))
      tracks.set(track, []);
    const lanes = tracks.get(track);
    while (lanes.length <= s.lane)
      lanes.push([]);
    lanes[s.lane].push(s);
  }
  const byKey = new Map();
  for (const lanes of tracks.values()) {
    lanes.forEach((lane, l) => {
      for (const s of lane) {
        let parent = '';
        if (l > 0) {
          const up = lanes[l - 1];
          // the last slice one lane up starting at or before s
          let lo = 0, hi = up.length;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (up[mid].ts <= s.ts) lo = mid + 1; else hi = mid;
          }
          for (let i = lo - 1; i >= 0 && parent === ''; i--) {
            const p = up[i];
            if (p.ts + p.dur >= s.ts + s.dur)
              parent = p.key;
            if (p.ts < s.ts)
              break;
          }
        }
        if (!byKey.has(s.key))
          byKey.set(s.key, []);
        byKey.get(s.key).push(parent);
      }
    });
  }
  return byKey;
}

// Whether our parent differs from the engine's by one of our documented
// rules (doc/api.md, "Lanes and flows"):
//  * zero-length events at one instant stack, each one lane below the one
//    before (ids are track:lane:ts, so they cannot share a lane), where
//    DevTools makes them siblings: a zero-length event contains nothing;
//  * DevTools leaves a slice out of its tree when it starts inside the
//    slice on top of its stack and ends after it (a partial overlap, e.g.
//    ProfilerStep#N against a python frame): its children then get the
//    slice below it as parent; we keep the slice, and it holds what it
//    contains.
function documented(x, got, leftOut) {
  if (!got)
    return false;
  const [, , ts, dur] = got.split('\t');
  if (x.durns === 0n && dur === '0' && BigInt(ts) === x.tsns)
    return true;
  return leftOut.has(got);
}

// ------------------------------------------------------------ main

const show = (k) => (k ? k.split('\t').join(' | ') : '(none)');

async function check(file, tmp) {
  const b = path.basename(file);
  const dir = path.join(tmp, b + '.d');
  fs.mkdirSync(dir);
  fs.copyFileSync(file, path.join(dir, b));
  const db = path.join(tmp, b + '.db');
  const r = spawnSync(SERVER, ['--dir', dir, '--db', db, '--ingest-only', '--quiet'],
                      { stdio: ['ignore', 'ignore', 'pipe'] });
  ok(r.status === 0 || r.status === 1, `${b}: ingests (exit ${r.status})`,
     r.status > 1 ? [String(r.stderr).slice(0, 300)] : []);
  const { list, skippedScope } = entries(loadTrace(file));
  const parents = await engineParents(list);
  const ours = storeParents(db);

  const missing = [], differ = [], deliberate = [];
  // entries the engine left out of its tree (a partial overlap)
  const leftOut = new Set(list.filter((x) => !parents.has(x)).map((x) => x.key));
  let inTree = 0, roots = 0;
  const taken = new Map();
  for (const x of list) {
    if (!parents.has(x))
      continue;
    inTree++;
    const p = parents.get(x);
    const want = p ? p.key : '';
    if (!p)
      roots++;
    const cands = ours.get(x.key);
    if (!cands || !cands.length) {
      missing.push(x);
      continue;
    }
    // duplicates of one key: take an equal parent first
    const i = cands.indexOf(want);
    const got = cands.splice(i >= 0 ? i : 0, 1)[0];
    taken.set(x.key, (taken.get(x.key) || 0) + 1);
    if (got !== want)
      (documented(x, got, leftOut) ? deliberate : differ).push({ x, want, got });
  }
  console.log(`# ${b}: ${list.length} thread entries, ${inTree} in the engine's tree ` +
              `(${inTree - roots} with a parent, ${roots} roots), ` +
              `${list.length - inTree} left out of it, ${skippedScope} process/global instants`);
  ok(missing.length === 0,
     `${b}: each of the engine's ${inTree} entries is a slice in the store (${missing.length} missing)`,
     missing.slice(0, SHOW).map((x) => `missing: event #${x.at} ${show(x.key)}`));
  if (deliberate.length)
    console.log(`# ${b}: ${deliberate.length} parents differ by a documented rule ` +
                '(doc/api.md, "Lanes and flows": zero-length events at one ' +
                'instant stack; a slice DevTools leaves out of its tree for a ' +
                'partial overlap still holds what it contains)');
  ok(differ.length === 0,
     `${b}: our parent is the engine's for each of ${inTree - missing.length} entries (${differ.length} disagree)`,
     differ.slice(0, SHOW).flatMap(({ x, want, got }) => [
       `event #${x.at} ${show(x.key)}`,
       `    engine's parent: ${show(want)}`,
       `    our parent:      ${show(got)}`]));
  return differ.length;
}

// A 1 MB trace of bench/kineto_gen.py: Kineto's file order (annotations
// after their children, python frames and kernels in late blocks).
function generated(tmp) {
  const out = path.join(tmp, 'gen', 'kineto_gen.json');
  execFileSync('python3', [path.join(SRC, 'bench/kineto_gen.py'), '--out', out,
                           '--size', '1M', '--manifest', path.join(tmp, 'gen.manifest')],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

async function main() {
  if (!fs.existsSync(SERVER)) {
    ok(false, `the server is built: ${SERVER}`);
    console.log(`1..${n}`);
    process.exit(1);
  }
  const { dirs, shared, cand } = traceDirs();
  const files = traceFiles(dirs);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nex-nest-'));
  const summary = [];
  try {
    files.push(generated(tmp));
    for (const f of files)
      summary.push(`${path.basename(f)} ${await check(f, tmp)}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (!shared) {
    n++;
    console.log(`ok ${n} # SKIP no shared traces (${cand.join(', ')})`);
  }
  console.log(`# disagreements per trace: ${summary.join(', ')}`);
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  ok(false, 'the oracle ran', String(e.stack || e).split('\n').slice(0, 10));
  console.log(`1..${n}`);
  process.exit(1);
});
