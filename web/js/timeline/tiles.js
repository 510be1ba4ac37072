// tiles.js -- fetches and caches window data per (track, resolution, tile).
//
// Resolution r is ns per pixel (a power of two); a tile is TILE_PX pixels
// wide, so tile k covers rel [k*r*TILE_PX, (k+1)*r*TILE_PX).  The loader
// wants the visible window plus half a window each side, fetches missing
// tiles in batches of up to 200 tracks, aborts batches nobody needs any more
// (AbortController: the server cancels them), and keeps an LRU of finished
// tiles so panning and zooming back reuse them.  A batch may first deliver
// a coarse answer: its tiles are drawn from it (marked coarse) until the
// final answer replaces them.

import { colorIndex } from './colors.js';

export const TILE_PX = 1024;

/**
 * The rel time before which the rows of entries[j] repeat those of
 * entries[j - 1] (-Infinity: none): the row reaching into a tile from the
 * one before comes with both tiles, whole in the earlier one (the server
 * merges nothing into it), so the later copy is dropped.
 */
export function repeatsBefore(entries, j) {
  if (j === 0) return -Infinity;
  const e = entries[j], p = entries[j - 1], t = e.k * e.r * TILE_PX;
  return p.k * p.r * TILE_PX < t && (p.k + 1) * p.r * TILE_PX >= t ? t : -Infinity;
}
const MAX_TRACKS = 200;
const MAX_INFLIGHT = 12;
const MAX_ENTRIES = 6000;
const MAX_ITEMS = 4_000_000;
const RETRY_MS = 5000;

export class TileStore {
  /**
   * origin: BigInt absolute ns of rel 0.  fetchBatch(kind, params, signal,
   * onCoarse) resolves to the /slices or /counters JSON, after giving
   * onCoarse(answer) a coarser answer of the same window if it has one.
   * onData() is called whenever new tiles are cached.
   */
  constructor(origin, fetchBatch, onData) {
    this.origin = origin;
    this.fetchBatch = fetchBatch;
    this.onData = onData;
    this.names = new Map([[0, '']]);
    this.entries = new Map(); // key -> entry (insertion order = LRU)
    this.items = 0;
    this.failed = new Map(); // key -> time of failure
    this.pending = new Map(); // key -> batch
    this.queue = [];
    this.inflight = new Set();
    this.colorCache = new Map();
    this.gen = 0; // bumped whenever entries, failures or work in flight change
    this.sig = '';
  }

  key(kind, id, r, k) { return `${kind}|${id}|${r}|${k}`; }

  get(kind, id, r, k) {
    const key = this.key(kind, id, r, k);
    const e = this.entries.get(key);
    if (e) { this.entries.delete(key); this.entries.set(key, e); }
    return e;
  }

  /**
   * The cached entries that best cover tiles k0..k1 of track `id` at
   * resolution r: exact tiles, else coarser ones, else finer ones.
   */
  cover(kind, id, r, k0, k1) {
    const out = [];
    const seen = new Set();
    for (let k = k0; k <= k1; k++) {
      let e = this.get(kind, id, r, k);
      if (e) { out.push(e); continue; }
      for (let j = 1; j <= 8 && !e; j++) {
        const K = Math.floor(k / 2 ** j);
        e = this.get(kind, id, r * 2 ** j, K);
      }
      if (e) {
        if (!seen.has(e)) { seen.add(e); out.push(e); }
        continue;
      }
      for (let j = 1; j <= 2 && r / 2 ** j >= 1; j++) {
        const n = 2 ** j;
        let any = false;
        for (let i = 0; i < n; i++) {
          const f = this.get(kind, id, r / n, k * n + i);
          if (f) { out.push(f); any = true; }
        }
        if (any) break;
      }
    }
    return out;
  }

  /**
   * Wants the tiles of a layout's `fetch`: the window [start, end) (rel ns)
   * at resolution r for the tracks `want` ([{kind, id, source}]) inside the
   * extent [min, max]; `sig` names the set of tracks.
   */
  update({ start, end, r, want, sig: wantSig, min: extentMin, max: extentMax }) {
    const span = r * TILE_PX;
    const w = end - start;
    const lo = Math.max(start - w / 2, extentMin);
    const hi = Math.min(end + w / 2, extentMax);
    const k0 = Math.floor(lo / span), k1 = Math.floor(Math.max(hi - 1, lo) / span);
    const v0 = Math.floor(Math.max(start, extentMin) / span);
    const v1 = Math.floor(Math.max(Math.min(end, extentMax) - 1, 0) / span);
    // Nothing to do when the same tiles of the same tracks were asked for
    // since the cache last changed (most frames while panning inside them).
    const sig = `${r}|${k0}|${k1}|${v0}|${v1}|${wantSig}|${this.gen}`;
    if (sig === this.sig) return;
    this.sig = sig;
    const mid = (start + end) / 2;
    const ks = [];
    for (let k = k0; k <= k1; k++) ks.push(k);
    // Visible tiles first, nearest to the centre first.
    ks.sort((a, b) => ((a < v0 || a > v1) - (b < v0 || b > v1)) ||
      Math.abs((a + 0.5) * span - mid) - Math.abs((b + 0.5) * span - mid));

    const needed = new Set();
    const wantedIds = new Set(want.map((t) => t.id));
    const now = performance.now();
    const batches = [];
    for (const k of ks) {
      for (const kind of ['slices', 'counters']) {
        needed.add(`${kind}|${r}|${k}`);
        let ids = [];
        for (const t of want) {
          if (t.kind !== kind) continue;
          const key = this.key(kind, t.id, r, k);
          if (this.entries.get(key)?.coarse === false || this.pending.has(key)) continue;
          const f = this.failed.get(key);
          if (f && now - f < RETRY_MS) continue;
          ids.push(t);
          if (ids.length === MAX_TRACKS) { batches.push({ kind, r, k, tracks: ids }); ids = []; }
        }
        if (ids.length) batches.push({ kind, r, k, tracks: ids });
      }
    }
    // Drop work nobody needs: other resolutions, far tiles, hidden tracks.
    const stale = (b) => !needed.has(`${b.kind}|${b.r}|${b.k}`) || !b.tracks.some((t) => wantedIds.has(t.id));
    this.queue = this.queue.filter((b) => !stale(b) || (this.unpend(b), false));
    for (const b of [...this.inflight]) if (stale(b)) { b.ctrl.abort(); this.inflight.delete(b); this.unpend(b); }
    for (const b of batches) {
      for (const t of b.tracks) this.pending.set(this.key(b.kind, t.id, r, b.k), b);
      this.queue.push(b);
    }
    this.pump();
  }

  unpend(b) {
    this.gen++;
    for (const t of b.tracks) {
      const key = this.key(b.kind, t.id, b.r, b.k);
      if (this.pending.get(key) === b) this.pending.delete(key);
    }
  }

  get busy() { return this.inflight.size + this.queue.length; }

  pump() {
    while (this.inflight.size < MAX_INFLIGHT && this.queue.length) {
      const b = this.queue.shift();
      b.ctrl = new AbortController();
      this.inflight.add(b);
      const span = b.r * TILE_PX;
      const params = {
        tracks: b.tracks.map((t) => t.id).join(','),
        start: (this.origin + BigInt(b.k * span)).toString(),
        end: (this.origin + BigInt((b.k + 1) * span)).toString(),
        px: TILE_PX,
      };
      const coarse = (res) => {
        if (!this.inflight.has(b)) return;
        this.store(b, res, true);
        this.onData();
      };
      this.fetchBatch(b.kind, params, b.ctrl.signal, coarse).then((res) => {
        if (!this.inflight.delete(b)) return;
        this.unpend(b);
        this.store(b, res);
        this.pump();
        this.onData();
      }, (err) => {
        if (!this.inflight.delete(b)) return;
        this.unpend(b);
        if (err.name !== 'AbortError') {
          const t = performance.now();
          for (const tr of b.tracks) this.failed.set(this.key(b.kind, tr.id, b.r, b.k), t);
        }
        this.pump();
        this.onData();
      });
    }
  }

  /** Caches the tiles of batch b's answer (`coarse`: a first, coarser one). */
  store(b, res, coarse = false) {
    const shift = Number(BigInt(res.base) - this.origin);
    if (res.names) for (const [id, s] of Object.entries(res.names)) this.names.set(+id, s);
    const src = new Map(b.tracks.map((t) => [String(t.id), t.source]));
    for (const t of res.tracks || []) {
      const id = String(t.track);
      const entry = b.kind === 'slices'
        ? this.sliceEntry(t, shift, src.get(id) || '')
        : this.counterEntry(t, shift);
      entry.r = b.r;
      entry.k = b.k;
      entry.resolution = res.resolution_ns;
      entry.coarse = coarse;
      const key = this.key(b.kind, id, b.r, b.k);
      const old = this.entries.get(key);
      if (old) this.items -= old.items;
      this.entries.set(key, entry);
      this.items += entry.items;
    }
    this.evict();
  }

  sliceEntry(t, shift, source) {
    const lanes = [];
    let items = 0;
    for (const l of t.lanes || []) {
      const n = l.ts.length;
      const ts = new Float64Array(n), dur = new Float64Array(n);
      const name = Int32Array.from(l.name), grp = l.grp ? Int32Array.from(l.grp) : new Int32Array(n);
      const count = l.count ? Uint32Array.from(l.count) : new Uint32Array(n).fill(1);
      const busy = Float64Array.from(l.busy ?? l.dur); // ns of each row its events cover
      const col = new Uint16Array(n);
      for (let i = 0; i < n; i++) {
        ts[i] = l.ts[i] + shift;
        dur[i] = l.dur[i];
        col[i] = this.color(source, name[i], grp[i]);
      }
      lanes[l.lane] = { ts, dur, name, grp, count, busy, col };
      items += n;
    }
    return { lanes, items: items + 1, level: t.level };
  }

  counterEntry(t, shift) {
    let items = 0;
    const series = (t.series || []).map((s) => {
      const n = s.ts.length;
      const ts = new Float64Array(n);
      for (let i = 0; i < n; i++) ts[i] = s.ts[i] + shift;
      items += n;
      return {
        series: s.series, name: s.name, ts,
        min: Float64Array.from(s.min ?? s.last), max: Float64Array.from(s.max ?? s.last),
        last: Float64Array.from(s.last), count: s.count ? Uint32Array.from(s.count) : new Uint32Array(n).fill(1),
      };
    });
    return { series, items: items + 1 };
  }

  color(source, nameId, grpId) {
    const key = `${source}|${nameId}|${grpId}`;
    let c = this.colorCache.get(key);
    if (c === undefined) {
      c = colorIndex(source, this.names.get(nameId) ?? String(nameId), grpId ? this.names.get(grpId) ?? String(grpId) : '');
      this.colorCache.set(key, c);
    }
    return c;
  }

  evict() {
    for (const [key, e] of this.entries) {
      if (this.entries.size <= MAX_ENTRIES && this.items <= MAX_ITEMS) break;
      this.entries.delete(key);
      this.items -= e.items;
    }
  }

  /** Forgets everything (new data landed); aborts what is in flight. */
  clear() {
    this.gen++;
    for (const b of this.inflight) b.ctrl.abort();
    this.inflight.clear();
    this.queue = [];
    this.pending.clear();
    this.entries.clear();
    this.failed.clear();
    this.items = 0;
  }
}
