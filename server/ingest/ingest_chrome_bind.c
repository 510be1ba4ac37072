/* ingest_chrome_bind.c -- the flow endpoints of Chrome traces bound to
 * their slices once all slices exist, in bounded memory.  See
 * ingest_readers.h.
 *
 * Flow endpoints are bound to slices once all slices exist: s/t (and
 * bp:"e") go to the deepest enclosing slice (the highest lane whose latest
 * slice started at or before ts still covers it), f to the first slice
 * starting at or after ts.  A sweep meets a track's slices in (ts, lane)
 * order with its endpoints in ts order.  So that nothing is read back from
 * the store, each Chrome track keeps a compact history of its slices in
 * the order ingest_place gave them: (ts, lane) order (lanes.h), except
 * for slices that reached the track after it was drained; such a late
 * slice rebinds the settled endpoints it changes (lanes never put it below
 * a slice that starts after it).  A track whose history cannot be used is
 * swept from the store.
 *
 * Memory stays bounded whatever the trace: a track's history and its
 * endpoints are spools, blocks of whole records; when all blocks together
 * pass a budget, blocks move to an unlinked spill file beside the store
 * until half of it is left.  A track's endpoints are bound in batches of
 * at most INGEST_CHROME_BATCH, each batch over the whole history.  Each
 * batch, bound, gives its flows to the ingest's endpoints (ingest_flows.h:
 * the flow table) and two runs (kept in memory within the budget, else in
 * the spill file): its flows in the key order of the slice_flow table, and
 * its unbound endpoints in file order.  The runs of each kind are merged,
 * so that each row goes at the end of its table's B-tree (hashed flow ids
 * in file order would land anywhere in it): a track's slice_flow runs once
 * the track is swept (its rows are the only ones with its track id), then
 * the unbound endpoints of all tracks, warned about in file order. */

#include "ingest_readers.h"
#include "ingest_runs.h"
#include "sort.h"
#include "spill.h"
#include "varint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifndef INGEST_CHROME_CHUNK /* tests/unit/test_ingest_chrome.c: tiny ones */
#define INGEST_CHROME_CHUNK (64u << 10)  /* largest spool block */
#define INGEST_CHROME_BUDGET (32u << 20) /* blocks and runs in memory */
#define INGEST_CHROME_BATCH (128u << 10) /* endpoints bound at once */
#endif

/* An endpoint as read: pos is its place in the Chrome files read (the
 * file's base + its offset) times 4 plus its kind. */
enum { CHROME_S, CHROME_T, CHROME_F, CHROME_F_ENCLOSING };

struct ingest_chrome_bind_end {
  int64_t ts, flow_id;
  uint64_t pos;
};

/* An endpoint being bound: lane < 0 while unbound. */
struct ingest_chrome_bind_ep {
  struct ingest_chrome_bind_end e;
  int64_t lane, slice_ts, slice_id;
};

/* Part of a spool: len bytes at mem (cap allocated), or at off in the
 * spill file when mem is NULL. */
struct ingest_chrome_bind_block {
  unsigned char *mem;
  uint64_t off;
  size_t len, cap;
};

/* Bytes appended in whole records: blocks [0, spilled) are in the spill
 * file, the others in memory. */
struct ingest_chrome_bind_spool {
  struct ingest_chrome_bind_block *b;
  size_t nb, spilled;
};

/* The binding's state for the run (an ingest_state): from the first
 * Chrome file to the binding. */
struct ingest_chrome_bind_state {
  const char **files; /* the Chrome files read (borrowed) */
  size_t nfiles;
  size_t nflows;                  /* endpoints read */
  struct spill *spill;            /* beside the store */
  size_t mem;                     /* bytes of the blocks and runs in memory */
  unsigned char *rends, *rhist;   /* blocks read back (one of each kind) */
  uint64_t *base;                 /* per Chrome file: pos / 4 of its offset 0 */
  uint64_t next_base;             /* the next file's base */
  struct ingest_runs runs;        /* sorted runs of the batches bound */
  struct ingest_chrome_bind_ep *batch; /* the batch being bound */
  size_t nbatch;                       /* its capacity */
  int error; /* the spill file or the store could not be read back: a
               negative errno */
};

static const char ingest_chrome_bind_key; /* its ingest_state key */

/* Where a merge's records go: slice_flow, or warnings (file: the file of
 * the last one). */
struct ingest_chrome_bind_emit {
  struct ing *g;
  size_t file;
};

/* The binding's state: NULL before the first Chrome file and after the
 * binding. */
static struct ingest_chrome_bind_state *
ingest_chrome_bind_current(struct ing *g) {
  return ingest_state(g, &ingest_chrome_bind_key);
}

struct ingest_chrome_bind_ref {
  int64_t lane, ts, id, end;
  int found;
};

/* A track's endpoints of one kind sorted by ts: [0, head) are settled,
 * [head, n) wait for a slice. */
struct ingest_chrome_bind_queue {
  struct ingest_chrome_bind_ep *v;
  size_t head, n;
};

struct ingest_chrome_bind_sweep {
  /* history: per slice, varints of the ts and id deltas (zigzag), the
   * duration and the lane */
  struct ingest_chrome_bind_spool hist;
  int64_t hts, hid; /* the last slice added */
  int rebind;       /* the history cannot be used: sweep from the store */
  int swept;        /* the endpoints are bound */
  struct ingest_chrome_bind_spool
      ends; /* struct ingest_chrome_bind_end records */
  size_t nends;
  struct ingest_chrome_bind_queue next; /* f: the next slice at or after ts */
  struct ingest_chrome_bind_queue encl; /* s, t, bp:"e": the enclosing slice */
  struct ingest_chrome_bind_ref *lane;  /* the latest slice of each lane */
  int64_t nlanes;
  struct ingest_chrome_bind_ref last; /* the latest slice swept in order */
};

/* Frees a spool; mem (NULL allowed) is the budget to give its blocks back
 * to. */
static void ingest_chrome_bind_spool_free(struct ingest_chrome_bind_spool *sp,
                                          size_t *mem) {
  for (size_t k = sp->spilled; k < sp->nb; k++) {
    if (mem)
      *mem -= sp->b[k].cap;
    free(sp->b[k].mem);
  }
  free(sp->b);
  *sp = (struct ingest_chrome_bind_spool){0};
}

/* Frees a track's binding state (the track hook's free). */
static void ingest_chrome_bind_sweep_free(void *state) {
  struct ingest_chrome_bind_sweep *w = state;
  ingest_chrome_bind_spool_free(&w->hist, NULL);
  ingest_chrome_bind_spool_free(&w->ends, NULL);
  free(w->lane);
  free(w);
}

static void ingest_chrome_bind_placed(struct ing *g, struct itrack *t,
                                      int64_t lane,
                                      const struct lanes_item *it);

static void ingest_chrome_bind_finished(struct ing *g, struct itrack *t);

static const struct ingest_hook ingest_chrome_bind_hook = {
    ingest_chrome_bind_placed, ingest_chrome_bind_finished,
    ingest_chrome_bind_sweep_free};

/* A track's binding state, or NULL when it has none. */
static struct ingest_chrome_bind_sweep *
ingest_chrome_bind_sweep_of(struct itrack *t) {
  return ingest_track_hook_state(t, &ingest_chrome_bind_hook);
}

/* Moves a spool's blocks in memory to the spill file until the memory
 * used is at most goal.  Returns 0, or -1 when there is no spill file. */
static int ingest_chrome_bind_spool_spill(struct ing *g,
                                          struct ingest_chrome_bind_spool *sp,
                                          size_t goal) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  for (; sp->spilled < sp->nb && s->mem > goal; sp->spilled++) {
    struct ingest_chrome_bind_block *b = &sp->b[sp->spilled];
    if (spill_write(s->spill, b->mem, b->len, &b->off))
      return -1;
    s->mem -= b->cap;
    free(b->mem);
    b->mem = NULL;
  }
  return 0;
}

/* Moves blocks to the spill file until half of the budget is used. */
static void ingest_chrome_bind_spill(struct ing *g) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  for (size_t k = 0; k < ingest_track_n(g) && s->mem > INGEST_CHROME_BUDGET / 2;
       k++) {
    struct ingest_chrome_bind_sweep *w =
        ingest_chrome_bind_sweep_of(ingest_track_at(g, k));
    if (w &&
        (ingest_chrome_bind_spool_spill(g, &w->hist,
                                        INGEST_CHROME_BUDGET / 2) ||
         ingest_chrome_bind_spool_spill(g, &w->ends, INGEST_CHROME_BUDGET / 2)))
      return;
  }
}

/* Appends one record of n bytes (at most INGEST_CHROME_CHUNK). */
static void ingest_chrome_bind_spool_add(struct ing *g,
                                         struct ingest_chrome_bind_spool *sp,
                                         const void *rec, size_t n) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  struct ingest_chrome_bind_block *b = sp->nb ? &sp->b[sp->nb - 1] : NULL;
  if (!b || !b->mem || (b->cap - b->len < n && b->cap >= INGEST_CHROME_CHUNK)) {
    /* a new block: as large as the one before (small at first) */
    sp->b = xrealloc(sp->b, sizeof *sp->b * (sp->nb + 1));
    b = &sp->b[sp->nb++];
    *b = (struct ingest_chrome_bind_block){0};
  }
  if (b->cap - b->len < n) {
    size_t cap = b->cap ? b->cap * 2 : sp->nb > 1 ? sp->b[sp->nb - 2].cap : 256;
    while (cap - b->len < n)
      cap *= 2;
    b->mem = xrealloc(b->mem, cap);
    s->mem += cap - b->cap;
    b->cap = cap;
  }
  memcpy(b->mem + b->len, rec, n);
  b->len += n;
  if (s->mem > INGEST_CHROME_BUDGET && spill_usable(s->spill))
    ingest_chrome_bind_spill(g);
}

/* Calls fn on each block of a spool in order; *buf is where blocks are
 * read back (allocated on first use, freed by the caller).  Returns 0,
 * fn's non-zero value, or a negative errno when the spill file cannot be
 * read. */
static int ingest_chrome_bind_spool_each(
    struct ing *g, const struct ingest_chrome_bind_spool *sp,
    unsigned char **buf, int (*fn)(void *ud, const unsigned char *p, size_t n),
    void *ud) {
  int rc;
  for (size_t k = 0; k < sp->nb; k++) {
    const struct ingest_chrome_bind_block *b = &sp->b[k];
    const unsigned char *p = b->mem;
    if (!p) {
      if (!*buf)
        *buf = xmalloc(INGEST_CHROME_CHUNK);
      if ((rc = spill_read(ingest_chrome_bind_current(g)->spill, *buf, b->len,
                           b->off)))
        return rc;
      p = *buf;
    }
    if ((rc = fn(ud, p, b->len)))
      return rc;
  }
  return 0;
}

/* A slice of a Chrome track was given its lane: it is added to the
 * track's history for the binding (the track hook's placed). */
static void ingest_chrome_bind_placed(struct ing *g, struct itrack *t,
                                      int64_t lane,
                                      const struct lanes_item *it) {
  struct ingest_chrome_bind_sweep *w = ingest_chrome_bind_sweep_of(t);
  if (w->rebind || !ingest_chrome_bind_current(g))
    return;
  unsigned char rec[40];
  size_t n = 0;
  /* wrapping differences: the decoder adds them back the same way */
  n += varint_put(rec + n,
                  varint_zig((int64_t)((uint64_t)it->ts - (uint64_t)w->hts)));
  n += varint_put(rec + n,
                  varint_zig((int64_t)((uint64_t)it->id - (uint64_t)w->hid)));
  n += varint_put(rec + n, (uint64_t)(it->dur > 0 ? it->dur : 0));
  n += varint_put(rec + n, (uint64_t)lane);
  ingest_chrome_bind_spool_add(g, &w->hist, rec, n);
  w->hts = it->ts;
  w->hid = it->id;
}

/* The first settled endpoint whose ts is >= ts (after = 0) or > ts. */
static size_t ingest_chrome_bind_find(const struct ingest_chrome_bind_queue *q,
                                      int64_t ts, int after) {
  size_t lo = 0, hi = q->head;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int64_t t = q->v[mid].e.ts;
    if (t < ts || (after && t == ts))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void ingest_chrome_bind_bound(struct ingest_chrome_bind_ep *f,
                                     const struct ingest_chrome_bind_ref *b) {
  f->lane = b->lane;
  f->slice_ts = b->ts;
  f->slice_id = b->id;
}

static void
ingest_chrome_bind_enclosing(const struct ingest_chrome_bind_sweep *w,
                             struct ingest_chrome_bind_ep *f) {
  int64_t ts = f->e.ts;
  for (int64_t l = w->nlanes - 1; l >= 0; l--)
    if (w->lane[l].found && w->lane[l].ts <= ts && ts < w->lane[l].end) {
      ingest_chrome_bind_bound(f, &w->lane[l]);
      return;
    }
}

/* Makes b the latest slice of its lane. */
static void
ingest_chrome_bind_sweep_lane(struct ingest_chrome_bind_sweep *w,
                              const struct ingest_chrome_bind_ref *b) {
  if (b->lane >= w->nlanes) {
    int64_t n = b->lane + 1 > 2 * w->nlanes ? b->lane + 1 : 2 * w->nlanes;
    w->lane = xrealloc(w->lane, sizeof *w->lane * (size_t)n);
    memset(w->lane + w->nlanes, 0, sizeof *w->lane * (size_t)(n - w->nlanes));
    w->nlanes = n;
  }
  w->lane[b->lane] = *b;
}

/* The next slice in (ts, lane) order: endpoints before it are settled (it
 * cannot enclose them, and it is the first slice at or after an f at its
 * ts or earlier). */
static void
ingest_chrome_bind_sweep_slice(struct ingest_chrome_bind_sweep *w,
                               const struct ingest_chrome_bind_ref *b) {
  struct ingest_chrome_bind_queue *q = &w->next;
  for (; q->head < q->n && q->v[q->head].e.ts <= b->ts; q->head++)
    ingest_chrome_bind_bound(&q->v[q->head], b);
  q = &w->encl;
  for (; q->head < q->n && q->v[q->head].e.ts < b->ts; q->head++)
    ingest_chrome_bind_enclosing(w, &q->v[q->head]);
  ingest_chrome_bind_sweep_lane(w, b);
  w->last = *b;
}

/* A slice that starts before the latest one swept: the settled f
 * endpoints at or before its ts bound to a slice after it now have it
 * first, and the settled enclosing endpoints it covers have it as a
 * candidate (no slice of its lane starts between it and them).  The
 * waiting endpoints all come after it. */
static void
ingest_chrome_bind_sweep_late(struct ingest_chrome_bind_sweep *w,
                              const struct ingest_chrome_bind_ref *b) {
  const struct ingest_chrome_bind_queue *q = &w->next;
  for (size_t k = ingest_chrome_bind_find(q, b->ts, 1); k > 0; k--) {
    struct ingest_chrome_bind_ep *f = &q->v[k - 1];
    if (f->slice_ts < b->ts || (f->slice_ts == b->ts && f->lane < b->lane))
      break;
    ingest_chrome_bind_bound(f, b);
  }
  q = &w->encl;
  for (size_t k = ingest_chrome_bind_find(q, b->ts, 0);
       k < q->head && q->v[k].e.ts < b->end; k++)
    if (q->v[k].lane < b->lane)
      ingest_chrome_bind_bound(&q->v[k], b);
  ingest_chrome_bind_sweep_lane(w, b);
}

/* No slice follows: the enclosing endpoints left are settled, the f ones
 * have no slice. */
static void ingest_chrome_bind_sweep_end(struct ingest_chrome_bind_sweep *w) {
  struct ingest_chrome_bind_queue *q = &w->encl;
  for (; q->head < q->n; q->head++)
    ingest_chrome_bind_enclosing(w, &q->v[q->head]);
  w->next.head = w->next.n;
}

/* Starts the sweep of a track over: its endpoints wait, no slice seen. */
static void ingest_chrome_bind_sweep_reset(struct ingest_chrome_bind_sweep *w) {
  struct ingest_chrome_bind_queue *qs[] = {&w->next, &w->encl};
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < qs[k]->n; i++)
      qs[k]->v[i].lane = -1;
    qs[k]->head = 0;
  }
  w->last.found = 0;
  free(w->lane);
  w->lane = NULL;
  w->nlanes = 0;
}

struct ingest_chrome_bind_replay {
  struct ingest_chrome_bind_sweep *w;
  uint64_t ts, id;
};

/* Replays a piece of a track's history.  Returns 0, or -1 if a slice does
 * not come as lanes places them (then the sweep must be done again). */
static int ingest_chrome_bind_sweep_hist(void *ud, const unsigned char *p,
                                         size_t n) {
  struct ingest_chrome_bind_replay *r = ud;
  struct ingest_chrome_bind_sweep *w = r->w;
  const unsigned char *end = p + n;
  while (p < end) {
    struct ingest_chrome_bind_ref b = {0};
    r->ts += (uint64_t)varint_unzig(varint_get(&p));
    r->id += (uint64_t)varint_unzig(varint_get(&p));
    int64_t dur = (int64_t)varint_get(&p);
    b.lane = (int64_t)varint_get(&p);
    b.ts = (int64_t)r->ts;
    b.id = (int64_t)r->id;
    b.end = b.ts + (dur > 1 ? dur : 1);
    b.found = 1;
    if (!w->last.found || b.ts > w->last.ts ||
        (b.ts == w->last.ts && b.lane > w->last.lane))
      ingest_chrome_bind_sweep_slice(w, &b);
    else if (b.ts < w->last.ts &&
             (b.lane >= w->nlanes || !w->lane[b.lane].found ||
              w->lane[b.lane].end <= b.ts))
      ingest_chrome_bind_sweep_late(w, &b);
    else
      return -1;
  }
  return 0;
}

static int ingest_chrome_bind_sweep_row(void *ud, sqlite3_stmt *st) {
  struct ingest_chrome_bind_sweep *w = ud;
  struct ingest_chrome_bind_ref b = {sqlite3_column_int64(st, 0),
                                     sqlite3_column_int64(st, 1),
                                     sqlite3_column_int64(st, 3), 0, 1};
  int64_t dur = sqlite3_column_int64(st, 2);
  b.end = b.ts + (dur > 1 ? dur : 1);
  ingest_chrome_bind_sweep_slice(w, &b);
  return 0;
}

static inline int ingest_chrome_bind_ts_cmp(const void *x, const void *y) {
  int64_t a = ((const struct ingest_chrome_bind_ep *)x)->e.ts,
          b = ((const struct ingest_chrome_bind_ep *)y)->e.ts;
  return (a > b) - (a < b);
}

/* Binds a batch of a track's endpoints (v[0, n), f ones first: nnext)
 * and makes it runs (v is overwritten). */
static void ingest_chrome_bind_sweep_batch(struct ing *g, struct itrack *t,
                                           struct ingest_chrome_bind_ep *v,
                                           size_t n, size_t nnext) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  struct ingest_chrome_bind_sweep *w = ingest_chrome_bind_sweep_of(t);
  w->next = (struct ingest_chrome_bind_queue){v, 0, nnext};
  w->encl = (struct ingest_chrome_bind_queue){v + nnext, 0, n - nnext};
  struct ingest_chrome_bind_ep *tmp = xmalloc(sizeof *v * (n ? n : 1));
  sort_stable(w->next.v, w->next.n, sizeof *v, tmp, ingest_chrome_bind_ts_cmp);
  sort_stable(w->encl.v, w->encl.n, sizeof *v, tmp, ingest_chrome_bind_ts_cmp);
  free(tmp);
  ingest_chrome_bind_sweep_reset(w);
  struct ingest_chrome_bind_replay rp = {w, 0, 0};
  if (w->rebind ||
      ingest_chrome_bind_spool_each(g, &w->hist, &s->rhist,
                                    ingest_chrome_bind_sweep_hist, &rp)) {
    ingest_chrome_bind_sweep_reset(w);
    int rc =
        store_writer_query(ingest_writer(g), ingest_chrome_bind_sweep_row, w,
                           "SELECT lane, ts, dur, id FROM slice WHERE "
                           "track = ? ORDER BY ts, lane",
                           "i", ingest_track_id(t));
    if (rc < 0 && !s->error) /* the binding fails */
      s->error = rc;
  }
  ingest_chrome_bind_sweep_end(w);
  w->next = w->encl = (struct ingest_chrome_bind_queue){0};
  _Static_assert(sizeof(struct ingest_run_rec) ==
                     sizeof(struct ingest_chrome_bind_ep),
                 "a run is written over its batch");
  /* the bound ones first (each written at or before its own place),
   * the unbound ones after them */
  struct ingest_run_rec *out = (struct ingest_run_rec *)v;
  size_t nbound = 0, nfree = 0;
  for (size_t i = 0; i < n; i++)
    nfree += v[i].lane < 0;
  struct ingest_run_rec *unbound =
      xmalloc(sizeof *unbound * (nfree ? nfree : 1));
  nfree = 0;
  for (size_t i = 0; i < n; i++) {
    struct ingest_chrome_bind_ep f = v[i];
    struct ingest_run_rec o = {f.e.pos,
                               f.e.flow_id,
                               ingest_track_id(t),
                               f.lane,
                               f.lane >= 0 ? f.slice_ts : f.e.ts,
                               f.slice_id};
    if (f.lane >= 0)
      out[nbound++] = o;
    else
      unbound[nfree++] = o;
  }
  memcpy(out + nbound, unbound, sizeof *unbound * nfree);
  free(unbound);
  for (size_t i = 0; i < nbound; i++)
    ingest_flow_end(g, out[i].flow_id, out[i].track, out[i].lane, out[i].ts,
                    out[i].id);
  ingest_runs_keep(&s->runs, out, nbound, RUN_BY_SLICE);
  ingest_runs_keep(&s->runs, out + nbound, nfree, RUN_UNBOUND);
}

/* Collects a track's endpoints into batches: f ones from the front, the
 * enclosing ones from the back. */
struct ingest_chrome_bind_batch {
  struct ing *g;
  struct itrack *t;
  struct ingest_chrome_bind_ep *v;
  size_t cap, nnext, nencl;
};

static int ingest_chrome_bind_batch_add(void *ud, const unsigned char *p,
                                        size_t n) {
  struct ingest_chrome_bind_batch *b = ud;
  for (size_t k = 0; k < n; k += sizeof(struct ingest_chrome_bind_end)) {
    struct ingest_chrome_bind_ep f = {.lane = -1};
    memcpy(&f.e, p + k, sizeof f.e);
    if ((f.e.pos & 3) == CHROME_F)
      b->v[b->nnext++] = f;
    else
      b->v[b->cap - ++b->nencl] = f;
    if (b->nnext + b->nencl < b->cap)
      continue;
    /* the enclosing ones move next to the f ones */
    memmove(b->v + b->nnext, b->v + b->cap - b->nencl, b->nencl * sizeof *b->v);
    ingest_chrome_bind_sweep_batch(b->g, b->t, b->v, b->cap, b->nnext);
    b->nnext = b->nencl = 0;
  }
  return 0;
}

/* Binds the endpoints of one track.  Returns 0, or a negative errno when
 * the spill file cannot be read. */
static int ingest_chrome_bind_sweep_track(struct ing *g, struct itrack *t) {
  struct ingest_chrome_bind_sweep *w = ingest_chrome_bind_sweep_of(t);
  struct ingest_chrome_bind_batch b = {
      .g = g,
      .t = t,
      .cap = w->nends < INGEST_CHROME_BATCH ? w->nends : INGEST_CHROME_BATCH};
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  if (s->nbatch < b.cap) { /* kept for the next tracks: no new pages */
    free(s->batch);
    s->batch = xmalloc(b.cap * sizeof *s->batch);
    s->nbatch = b.cap;
  }
  b.v = s->batch;
  int rc = ingest_chrome_bind_spool_each(g, &w->ends, &s->rends,
                                         ingest_chrome_bind_batch_add, &b);
  if (rc == 0 && b.nnext + b.nencl) {
    memmove(b.v + b.nnext, b.v + b.cap - b.nencl, b.nencl * sizeof *b.v);
    ingest_chrome_bind_sweep_batch(g, t, b.v, b.nnext + b.nencl, b.nnext);
  }
  return rc;
}

/* A bound endpoint: a row of slice_flow. */
static void ingest_chrome_bind_emit_flow(void *ud,
                                         const struct ingest_run_rec *o) {
  struct ingest_chrome_bind_emit *e = ud;
  store_writer_flow(ingest_writer(e->g), STORE_FLOW_BY_SLICE, o->flow_id,
                    o->track, o->lane, o->ts, o->id);
}

/* An unbound endpoint: a warning at its place in its file. */
static void ingest_chrome_bind_emit_warn(void *ud,
                                         const struct ingest_run_rec *o) {
  struct ingest_chrome_bind_emit *e = ud;
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(e->g);
  uint64_t pos = o->pos >> 2;
  char phase = "stff"[o->pos & 3];
  while (e->file + 1 < s->nfiles && s->base[e->file + 1] <= pos)
    e->file++;
  ingest_warn(e->g, "Missing Data", s->files[e->file], pos - s->base[e->file],
              "flow endpoint '%c' at %" PRId64 " ns has no slice to bind to",
              phase, o->ts);
}

/* Merges the runs of one kind into slice_flow, or their warnings in file
 * order. */
static void ingest_chrome_bind_merge(struct ing *g, enum ingest_run_kind kind) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  struct ingest_chrome_bind_emit e = {g, 0};
  int rc = ingest_runs_merge(&s->runs, kind,
                             kind == RUN_UNBOUND ? ingest_chrome_bind_emit_warn
                                                 : ingest_chrome_bind_emit_flow,
                             &e);
  if (rc < 0 && !s->error)
    s->error = rc;
}

/* Frees the binding's state. */
static void ingest_chrome_bind_state_free(void *state) {
  struct ingest_chrome_bind_state *s = state;
  spill_free(s->spill);
  free(s->files);
  free(s->rends);
  free(s->rhist);
  free(s->base);
  ingest_runs_free(&s->runs);
  free(s->batch);
  free(s);
}

/* A track's slices are all placed: its endpoints are bound, and its rows
 * of slice_flow are final (no other track has rows of this one), so the
 * writer thread inserts them while the next track is drained and swept. */
static void ingest_chrome_bind_finished(struct ing *g, struct itrack *t) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  struct ingest_chrome_bind_sweep *w = ingest_chrome_bind_sweep_of(t);
  if (!s || w->swept)
    return;
  int rc = w->nends && !s->error ? ingest_chrome_bind_sweep_track(g, t) : 0;
  if (rc < 0 && !s->error)
    s->error = rc;
  ingest_chrome_bind_spool_free(&w->hist, &s->mem);
  ingest_chrome_bind_spool_free(&w->ends, &s->mem);
  w->rebind = w->swept = 1;
  if (!s->error)
    ingest_chrome_bind_merge(g, RUN_BY_SLICE);
}

int ingest_chrome_bind_flows(struct ing *g, size_t *endpoints) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  *endpoints = s ? s->nflows : 0;
  if (!s)
    return 0;
  for (size_t k = 0; k < ingest_track_n(g); k++) {
    struct itrack *t = ingest_track_at(g, k);
    if (ingest_chrome_bind_sweep_of(t))
      ingest_chrome_bind_finished(g, t);
  }
  if (!s->error)
    ingest_chrome_bind_merge(g, RUN_UNBOUND);
  int rc = s->error;
  ingest_state_set(g, &ingest_chrome_bind_key, NULL, NULL);
  return rc;
}

void ingest_chrome_bind_track(struct itrack *t) {
  if (ingest_chrome_bind_sweep_of(t))
    return;
  struct ingest_chrome_bind_sweep *w = xcalloc(1, sizeof *w);
  /* slices added before may be placed already: not in the history */
  w->rebind = ingest_track_count(t) > 0;
  ingest_track_hook(t, &ingest_chrome_bind_hook, w);
}

uint32_t ingest_chrome_bind_file(struct ing *g, const char *rel) {
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  if (!s) {
    s = xcalloc(1, sizeof *s);
    s->spill = spill_new(ingest_opts(g)->db_path, "flow binding data");
    s->runs = (struct ingest_runs){
        .spill = s->spill, .mem = &s->mem, .budget = INGEST_CHROME_BUDGET};
    ingest_state_set(g, &ingest_chrome_bind_key, s,
                     ingest_chrome_bind_state_free);
  }
  s->files = xrealloc(s->files, sizeof *s->files * (s->nfiles + 1));
  s->files[s->nfiles] = rel;
  s->base = xrealloc(s->base, sizeof *s->base * (s->nfiles + 1));
  s->base[s->nfiles] = s->next_base;
  return (uint32_t)s->nfiles++;
}

void ingest_chrome_bind_file_end(struct ing *g, uint64_t max_offset) {
  ingest_chrome_bind_current(g)->next_base += max_offset + 1;
}

void ingest_chrome_bind_endpoint(struct ing *g, struct itrack *t, uint32_t file,
                                 uint64_t offset, int64_t ts, int64_t flow_id,
                                 char phase, bool enclosing) {
  int kind = phase == 's'   ? CHROME_S
             : phase == 't' ? CHROME_T
             : enclosing    ? CHROME_F_ENCLOSING
                            : CHROME_F;
  struct ingest_chrome_bind_state *s = ingest_chrome_bind_current(g);
  struct ingest_chrome_bind_end e = {.ts = ts,
                                     .flow_id = flow_id,
                                     .pos = (s->base[file] + offset) << 2 |
                                            (uint64_t)kind};
  struct ingest_chrome_bind_sweep *w = ingest_chrome_bind_sweep_of(t);
  ingest_chrome_bind_spool_add(g, &w->ends, &e, sizeof e);
  w->nends++;
  s->nflows++;
}
