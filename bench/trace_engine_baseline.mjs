// trace_engine_baseline.mjs -- the Chrome DevTools trace engine
// (@paulirish/trace_engine, the Performance panel's model) on one trace file:
// the baseline bench/chrome_bench.py compares our ingest with.
//
//   node --max-old-space-size=MB bench/trace_engine_baseline.mjs FILE [MODE]
//
// MODE "whole" (the package's own analyze-trace.mjs way): read the file into
// one string, JSON.parse it, hand traceEvents to the engine.  V8 strings stop
// at 0x1fffffe8 characters (~512 MiB), so bigger files fail there, which is
// the result to report.  MODE "stream" (what the Performance panel's
// TimelineLoader does with a file): read it in chunks, cut the traceEvents
// array into whole events with a string-aware bracket scanner, JSON.parse
// them batch by batch, then hand the array to the engine.  Either way every
// event ends up as a JS object in memory: that is how the engine works.
//
// Prints one JSON line: {mode, ok, events, load_s, parse_s, total_s,
// heap_mb, error}.  Exits 0 when the engine parsed the trace, 1 if not.
import fs from 'node:fs';
import * as Trace from '@paulirish/trace_engine/models/trace/trace.js';
import {polyfillDOMRect} from '@paulirish/trace_engine/analyze-trace.mjs';

const CHUNK = 16 << 20;

function loadWhole(file) {
  const text = fs.readFileSync(file).toString('utf8');
  const json = JSON.parse(text);
  return Array.isArray(json) ? json : json.traceEvents;
}

// The index of the quote closing the string opened at `open`, or -1 when
// the buffer ends first.  A quote is escaped when an odd number of
// backslashes precede it.
function stringEnd(buf, open) {
  for (let q = open;;) {
    q = buf.indexOf(0x22, q + 1);
    if (q < 0)
      return -1;
    let k = q - 1;
    while (buf[k] === 0x5c)
      k--;
    if ((q - 1 - k) % 2 === 0)
      return q;
  }
}

// Element boundaries of the event array: depth counts brackets outside
// strings (strings are skipped with indexOf); the array is the top-level one
// or the value of the top-level key "traceEvents".  The whole elements of
// each chunk are parsed as one batch; an unfinished element (or, before the
// array, an unfinished string) is carried over to the next chunk and
// scanned again from its start.
function loadStream(file) {
  const fd = fs.openSync(file, 'r');
  const events = [];
  let carry = Buffer.alloc(0), depth = 0;
  let arrayDepth = -1, lastKey = '', done = false;
  while (!done) {
    const chunk = Buffer.allocUnsafe(CHUNK);
    const n = fs.readSync(fd, chunk, 0, CHUNK, null);
    if (n === 0)
      break;
    const buf = Buffer.concat([carry, chunk.subarray(0, n)]);
    let first = -1, open = -1, last = -1, strOpen = -1;
    for (let i = 0; i < buf.length; i++) {
      const c = buf[i];
      if (c === 0x22) {
        const q = stringEnd(buf, i);
        if (q < 0) {
          strOpen = i;
          break;
        }
        if (arrayDepth < 0 && depth === 1)
          lastKey = buf.toString('utf8', i + 1, q);
        i = q;
      } else if (c === 0x7b || c === 0x5b) {  // { [
        if (arrayDepth < 0 && c === 0x5b &&
            (depth === 0 || (depth === 1 && lastKey === 'traceEvents')))
          arrayDepth = depth + 1;
        else if (depth === arrayDepth) {
          open = i;
          if (first < 0)
            first = i;
        }
        depth++;
      } else if (c === 0x7d || c === 0x5d) {  // } ]
        depth--;
        if (depth === arrayDepth)
          last = i + 1;
        else if (arrayDepth > 0 && depth === arrayDepth - 1) {
          done = true;
          break;
        }
      }
    }
    if (first >= 0 && last > first) {
      const batch = JSON.parse('[' + buf.toString('utf8', first, last) + ']');
      for (const e of batch)
        events.push(e);
    }
    if (open > last) {  // an element goes on in the next chunk
      carry = buf.subarray(open);
      depth = arrayDepth;
    } else if (arrayDepth < 0 && strOpen >= 0) {  // a top-level string does
      carry = buf.subarray(strOpen);
    } else {
      carry = Buffer.alloc(0);
    }
  }
  fs.closeSync(fd);
  return events;
}

async function main() {
  const file = process.argv[2];
  const mode = process.argv[3] || 'whole';
  if (!file || (mode !== 'whole' && mode !== 'stream')) {
    console.error('usage: trace_engine_baseline.mjs FILE [whole|stream]');
    process.exit(2);
  }
  polyfillDOMRect();
  const out = {mode, ok: false, events: 0, load_s: 0, parse_s: 0, total_s: 0,
               heap_mb: 0, error: null};
  const t0 = performance.now();
  try {
    const events = mode === 'whole' ? loadWhole(file) : loadStream(file);
    out.events = events.length;
    const t1 = performance.now();
    out.load_s = (t1 - t0) / 1000;
    const model = Trace.TraceModel.Model.createWithAllHandlers();
    await model.parse(events);
    if (!model.parsedTrace())
      throw new Error('the engine returned no data');
    out.parse_s = (performance.now() - t1) / 1000;
    out.ok = true;
  } catch (e) {
    out.error = `${e.code ? e.code + ': ' : ''}${e.message}`;
  }
  out.total_s = (performance.now() - t0) / 1000;
  out.heap_mb = process.memoryUsage().heapUsed / 1048576;
  console.log(JSON.stringify(out));
  process.exit(out.ok ? 0 : 1);
}

main();
