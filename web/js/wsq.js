// wsq.js -- window queries over the live WebSocket (doc/api.md, "Queries
// over /ws"): requests carry our ids, answers come back on the same socket
// (window answers as binary frames, first coarse then final, compressed
// with raw deflate when the browser can inflate), and an aborted request is
// cancelled on the server.  api.js owns the socket and hands it here while
// it is open; every answer is shaped like the REST answer of the same
// request, so callers cannot tell the two apart.

const MAGIC = 0x3242584e; // "NXB2" little-endian
const text = new TextDecoder('utf-8');
const canInflate = typeof DecompressionStream === 'function';

/** Raw deflate -> ArrayBuffer. */
function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Response(stream).arrayBuffer();
}

const pad8 = (n) => (n + 7) & ~7;

/**
 * The integer column at byte `off` (an 8-byte descriptor {width, high
 * width}, the low parts, the high parts if any): [values, next offset].
 * Values are a typed array laid over the buffer, or a Float64Array when
 * some need more than 32 bits.
 */
function intColumn(buf, off, n) {
  const b = new Uint8Array(buf, off, 2);
  const w = b[0], hw = b[1];
  off += 8;
  const arr = (width, at) => (width === 1 ? new Uint8Array(buf, at, n) : width === 2 ? new Uint16Array(buf, at, n)
    : width === 4 ? new Uint32Array(buf, at, n) : new Float64Array(buf, at, n));
  let v = arr(w, off);
  off = pad8(off + n * w);
  if (hw) {
    const hi = arr(hw, off);
    off = pad8(off + n * hw);
    const full = new Float64Array(n);
    for (let i = 0; i < n; i++) full[i] = v[i] + hi[i] * 4294967296;
    v = full;
  }
  return [v, off];
}

/**
 * Decodes a binary window frame (an ArrayBuffer) into the REST answer's
 * shape, with typed arrays for the columns: resolves to { id, final,
 * coarse, answer }.  `names` (Map id -> text) is the connection's name
 * table: the frame's new names are added to it, and the answer's `names`
 * object lists every id its rows use.
 */
export async function decodeFrame(frame, names) {
  let buf = frame;
  let v = new DataView(buf);
  if (v.getUint32(0, true) !== MAGIC) throw new Error('not a window frame');
  const id = v.getUint32(4, true);
  const kind = v.getUint8(8), flags = v.getUint8(9), nDict = v.getUint32(12, true);
  const base = v.getBigInt64(16, true);
  const nNames = v.getUint32(52, true), nTracks = v.getUint32(56, true), nRows = v.getUint32(60, true);
  let off = 64;
  for (let i = 0; i < nNames; i++) {
    const nid = v.getUint32(off, true), len = v.getUint32(off + 4, true);
    names.set(nid, text.decode(new Uint8Array(buf, off + 8, len)));
    off += 8 + len;
  }
  off = pad8(off);
  const head = v;
  if (flags & 4) { // the body is raw deflate: offsets count from its start
    buf = await inflate(new Uint8Array(frame, off));
    v = new DataView(buf);
    off = 0;
  }
  const dict = new Uint32Array(buf, off, nDict);
  off = pad8(off + 4 * nDict);
  const tracks = [];
  const groups = [];
  for (let t = 0; t < nTracks; t++) {
    const track = { track: v.getBigInt64(off, true).toString(), level: v.getInt32(off + 8, true) };
    const nGroups = v.getUint32(off + 12, true), slen = v.getUint32(off + 16, true);
    if (kind === 2) track.source = text.decode(new Uint8Array(buf, off + 24, slen));
    off = pad8(off + 24 + slen);
    const list = [];
    for (let g = 0; g < nGroups; g++) {
      if (kind === 1) {
        list.push({ lane: v.getUint32(off, true), n: v.getUint32(off + 4, true), truncated: !!(v.getUint32(off + 8, true) & 1) });
        off += 16;
      } else {
        const nl = v.getUint32(off + 16, true), ul = v.getUint32(off + 20, true);
        list.push({
          series: v.getInt32(off, true), level: v.getInt32(off + 4, true), n: v.getUint32(off + 8, true),
          truncated: !!(v.getUint32(off + 12, true) & 1),
          name: text.decode(new Uint8Array(buf, off + 24, nl)), unit: text.decode(new Uint8Array(buf, off + 24 + nl, ul)),
        });
        off = pad8(off + 24 + nl + ul);
      }
    }
    if (kind === 1) track.lanes = list; else { delete track.level; track.series = list; }
    groups.push(...list);
    tracks.push(track);
  }
  const cols = {};
  const take = (key) => { [cols[key], off] = intColumn(buf, off, nRows); };
  take('ts');
  if (kind === 1) { take('dur'); take('name'); take('grp'); } else { take('min'); take('max'); take('last'); }
  take('count');
  if (kind === 1) { // the frame has each row's idle time: busy = dur - idle
    take('idle');
    const dur = cols.dur, idle = cols.idle, busy = new Float64Array(nRows);
    for (let i = 0; i < nRows; i++) busy[i] = dur[i] - idle[i];
    cols.busy = busy;
    delete cols.idle;
  }
  if (off !== buf.byteLength) throw new Error(`window frame of ${buf.byteLength} bytes, decoded ${off}`);
  const used = {};
  if (kind === 1) { // dictionary indexes -> string ids
    for (const k of ['name', 'grp']) {
      const c = cols[k], ids = new Uint32Array(nRows);
      for (let i = 0; i < nRows; i++) ids[i] = dict[c[i]];
      cols[k] = ids;
    }
    for (let i = 1; i < nDict; i++) used[dict[i]] = names.get(dict[i]) ?? '';
  }
  let row = 0;
  for (const g of groups) {
    for (const k of Object.keys(cols)) g[k] = cols[k].subarray(row, row + g.n);
    row += g.n;
    delete g.n;
  }
  return {
    id, final: !!(flags & 1), coarse: !!(flags & 2),
    answer: {
      base: base.toString(), start: head.getBigInt64(24, true).toString(), end: head.getBigInt64(32, true).toString(),
      px: head.getUint32(48, true), resolution_ns: Number(head.getBigInt64(40, true)), names: used, tracks,
    },
  };
}

/**
 * The query side of the live socket.  request() resolves to
 * { status, data } like a REST answer; onCoarse(data) gets the coarse
 * answer of a window first.
 */
export class QueryChannel {
  constructor() {
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject, onCoarse, fallback }
    this.names = new Map();
    this.counts = { ws: 0, rest: 0, coarse: 0, cancelled: 0 };
    this.waiters = [];
    this.chain = Promise.resolve(); // answers are handled in arrival order
  }

  get open() { return !!this.ws && this.ws.readyState === WebSocket.OPEN; }

  /** The socket opened: requests go over it from now on. */
  attach(ws) {
    this.ws = ws;
    this.names = new Map(); // a new connection knows no names yet
    this.settle(true);
  }

  /** The socket closed (or never opened): requests in flight are handed
   * to their REST fallback. */
  detach() {
    this.ws = null;
    const list = [...this.pending.values()];
    this.pending.clear();
    for (const p of list) p.fallback();
    this.settle(false);
  }

  /** Whether the socket is open, waiting while it is being opened. */
  ready(connecting) {
    if (this.open) return Promise.resolve(true);
    if (!connecting) return Promise.resolve(false);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  settle(ok) {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r(ok);
  }

  /**
   * Sends {type, ...params} with a new id.  rest() is the fallback (a
   * promise of the same answer) if the socket goes away first.
   */
  request(type, params, { signal, onCoarse, rest }) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const entry = {
        resolve, reject, onCoarse,
        fallback: () => { this.counts.rest++; rest().then(resolve, reject); },
      };
      if (signal) {
        if (signal.aborted) { reject(new DOMException('aborted', 'AbortError')); return; }
        signal.addEventListener('abort', () => {
          if (!this.pending.delete(id)) return;
          this.counts.cancelled++;
          if (this.open) this.ws.send(JSON.stringify({ type: 'cancel', ids: [id] }));
          reject(new DOMException('aborted', 'AbortError'));
        }, { once: true });
      }
      this.pending.set(id, entry);
      this.counts.ws++;
      this.ws.send(JSON.stringify({ type, id, deflate: canInflate, ...params }));
    });
  }

  /** A binary message: a window frame. */
  onBinary(buf) {
    const names = this.names;
    this.chain = this.chain.then(() => this.frame(buf, names)).catch((e) => console.error('window frame:', e));
  }

  async frame(buf, names) {
    let f;
    try { f = await decodeFrame(buf, names); } catch (e) {
      const id = buf.byteLength >= 8 ? new DataView(buf).getUint32(4, true) : -1;
      const p = this.pending.get(id);
      if (p) { this.pending.delete(id); p.reject(e); }
      return;
    }
    const p = this.pending.get(f.id);
    if (!p) return; // cancelled meanwhile
    if (f.coarse) { this.counts.coarse++; p.onCoarse?.(f.answer); return; }
    this.pending.delete(f.id);
    p.resolve({ status: 200, data: f.answer });
  }

  /** A text message of type "result". */
  onResult(msg) {
    this.chain = this.chain.then(() => this.result(msg)).catch((e) => console.error('answer:', e));
  }

  result(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    p.resolve({ status: msg.status, data: msg.data });
  }
}
