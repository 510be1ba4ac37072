// search.js -- the search box: hits of /search (paged, 500 at a time),
// the count, next/previous, the hit count of each track, and the marks of
// the visible window: its hits when there are at most 500, else the
// per-track density of hits (the histogram of /search?buckets=N).

import { get } from '../api.js';
import { fmtInt } from '../format.js';

const PAGE = 500;
const MARK_DELAY_MS = 150;

export class Search {
  /**
   * cb: { scope() -> {domain, profile} | null, onHits(hits, current),
   *   onGo(hit), onCounts(Map base track id -> hits) | null,
   *   window() -> {start, end (absolute ns strings), buckets} | null: the
   *   visible window, onMarks({hits, density} | null): the marks of that
   *   window, density {start, bucketNs (ns), tracks: Map id -> counts} }
   */
  constructor(cb) {
    this.cb = cb;
    this.form = document.getElementById('search');
    this.input = document.getElementById('search-q');
    this.countEl = document.getElementById('search-count');
    this.q = '';
    this.total = 0;
    this.hits = []; // loaded hits by index (sparse across pages)
    this.idx = -1;
    this.ctrl = null;
    this.timer = 0;
    this.markCtrl = null;
    this.markTimer = 0;
    this.markKey = '';
    this.marked = false; // marks given to onMarks since they were last cleared
    this.input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(this.input.value.trim()), 300);
    });
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.step(1); });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); this.step(e.shiftKey ? -1 : 1); }
      if (e.key === 'Escape') { this.input.blur(); }
    });
    document.getElementById('search-next').onclick = () => this.step(1);
    document.getElementById('search-prev').onclick = () => this.step(-1);
  }

  focus() { this.input.focus(); this.input.select(); }

  /** Sets the text (deep link) and runs it. */
  set(q) { this.input.value = q || ''; return this.run(this.input.value.trim()); }

  /** Runs `q` in the current scope; resolves when the first page is in. */
  async run(q) {
    clearTimeout(this.timer);
    if (q === this.q && this.scopeKey === JSON.stringify(this.cb.scope())) return;
    this.q = q;
    this.scopeKey = JSON.stringify(this.cb.scope());
    this.hits = [];
    this.total = 0;
    this.idx = -1;
    this.markKey = ''; // a new run marks the window again (a new view, new data)
    this.ctrl?.abort();
    if (!q || !this.cb.scope()) { this.show(); this.cb.onHits([], null); this.cb.onCounts?.(null); this.marks(); return; }
    this.countEl.textContent = '…';
    await this.load(1);
    this.show();
    this.marks();
  }

  /** Re-runs the current query (scope changed or new data). */
  rerun() { const q = this.q; this.q = null; return this.run(q || ''); }

  async load(page) {
    this.ctrl = new AbortController();
    const scope = this.cb.scope();
    try {
      const r = await get('search', { q: this.q, page, per_page: PAGE, ...scope }, { signal: this.ctrl.signal });
      this.total = r.total;
      r.items.forEach((h, i) => { this.hits[(page - 1) * PAGE + i] = h; });
      if (page === 1) this.cb.onCounts?.(new Map(r.tracks.map((t) => [String(t.track), t.count])));
      this.cb.onHits(this.hits.filter(Boolean), this.hits[this.idx] || null);
    } catch (e) {
      if (e.name !== 'AbortError') this.countEl.textContent = 'error';
      throw e;
    }
  }

  /** The visible window moved: its marks follow (debounced). */
  viewChanged() {
    clearTimeout(this.markTimer);
    this.markTimer = setTimeout(() => this.marks(), MARK_DELAY_MS);
  }

  /**
   * Fetches the marks of the visible window: its hits, or when there are
   * more than a page of them, the density of hits per track.
   */
  async marks() {
    clearTimeout(this.markTimer);
    const w = this.q && this.total ? this.cb.window?.() : null;
    const key = w ? JSON.stringify([this.q, this.scopeKey, w]) : '';
    if (key === this.markKey && (key || !this.marked)) return;
    this.markKey = key;
    this.markCtrl?.abort();
    if (!w) { this.marked = false; this.cb.onMarks?.(null); return; }
    const ctrl = this.markCtrl = new AbortController();
    let r;
    try {
      r = await get('search', { q: this.q, start: w.start, end: w.end, per_page: PAGE, buckets: w.buckets, ...this.cb.scope() },
        { signal: ctrl.signal, quiet: true });
    } catch {
      if (this.markKey === key) this.markKey = '';
      return;
    }
    if (ctrl !== this.markCtrl) return;
    const density = r.total > r.items.length
      ? { start: w.start, bucketNs: Number(r.bucket_ns), tracks: new Map(r.tracks.map((t) => [String(t.track), t.buckets])) }
      : null;
    this.marked = true;
    this.cb.onMarks?.({ hits: density ? [] : r.items, density });
  }

  show() {
    const c = this.countEl;
    if (!this.q) { c.textContent = ''; return; }
    c.textContent = this.total ? (this.idx >= 0 ? `${fmtInt(this.idx + 1)} / ${fmtInt(this.total)}` : `${fmtInt(this.total)} hits`) : 'no hits';
    c.style.color = this.total ? '' : 'var(--danger)';
  }

  async step(d) {
    const q = this.input.value.trim();
    if (q !== this.q || this.scopeKey !== JSON.stringify(this.cb.scope())) await this.run(q);
    if (!this.total) return;
    this.idx = this.idx < 0 ? (d > 0 ? 0 : this.total - 1) : (this.idx + d + this.total) % this.total;
    if (!this.hits[this.idx]) await this.load(Math.floor(this.idx / PAGE) + 1);
    const h = this.hits[this.idx];
    this.show();
    if (h) {
      this.cb.onHits(this.hits.filter(Boolean), h);
      this.cb.onGo(h);
    }
  }
}
