/* ingest_runs.c -- sorted runs of flow endpoints, merged per kind with a
 * heap.  See ingest_runs.h. */

#include "ingest_runs.h"
#include "sort.h"
#include "spill.h"
#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* n records at off in the spill file, or at mem without one; while
 * merging, buf[at, nbuf) is read and done of them were read. */
struct ingest_run {
  uint64_t off;
  size_t n;
  enum ingest_run_kind kind;
  struct ingest_run_rec *mem;
  struct ingest_run_rec *buf;
  size_t nbuf, at, done;
};

/* The key of a table, as the offsets of its columns in a record. */
#define OUT(f) offsetof(struct ingest_run_rec, f)
static const size_t ingest_runs_id_key[] = {OUT(flow_id), OUT(track), OUT(lane),
                                            OUT(ts), OUT(id)};
static const size_t ingest_runs_slice_key[] = {OUT(track), OUT(lane), OUT(ts),
                                               OUT(id), OUT(flow_id)};
#undef OUT

/* Compares records x and y by the five int64 columns of key. */
static inline int ingest_runs_key_cmp(const void *x, const void *y,
                                      const size_t key[5]) {
  for (int i = 0; i < 5; i++) {
    int64_t a, b;
    memcpy(&a, (const char *)x + key[i], sizeof a);
    memcpy(&b, (const char *)y + key[i], sizeof b);
    if (a != b)
      return a < b ? -1 : 1;
  }
  return 0;
}

/* The order of a RUN_BY_ID run: the flow table's key. */
static int ingest_runs_id_cmp(const void *x, const void *y) {
  return ingest_runs_key_cmp(x, y, ingest_runs_id_key);
}

/* The order of a RUN_BY_SLICE run: the slice_flow table's key. */
static int ingest_runs_slice_cmp(const void *x, const void *y) {
  return ingest_runs_key_cmp(x, y, ingest_runs_slice_key);
}

/* The order of a RUN_UNBOUND run: file order. */
static int ingest_runs_pos_cmp(const void *x, const void *y) {
  const struct ingest_run_rec *a = x, *b = y;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

static int (*const ingest_runs_order[])(const void *, const void *) = {
    [RUN_UNBOUND] = ingest_runs_pos_cmp,
    [RUN_BY_ID] = ingest_runs_id_cmp,
    [RUN_BY_SLICE] = ingest_runs_slice_cmp};

void ingest_runs_keep(struct ingest_runs *rs, struct ingest_run_rec *out,
                      size_t n, enum ingest_run_kind kind) {
  if (n == 0)
    return;
  if (rs->ntmp < n) {
    free(rs->tmp);
    rs->tmp = xmalloc(n * sizeof *rs->tmp);
    rs->ntmp = n;
  }
  switch (kind) { /* a sort of each order, its compare inlined */
  case RUN_UNBOUND:
    sort_stable(out, n, sizeof *out, rs->tmp, ingest_runs_pos_cmp);
    break;
  case RUN_BY_ID:
    sort_stable(out, n, sizeof *out, rs->tmp, ingest_runs_id_cmp);
    break;
  case RUN_BY_SLICE:
    sort_stable(out, n, sizeof *out, rs->tmp, ingest_runs_slice_cmp);
    break;
  }
  rs->v = xrealloc(rs->v, sizeof *rs->v * (rs->n + 1));
  struct ingest_run *r = &rs->v[rs->n++];
  *r = (struct ingest_run){.n = n, .kind = kind};
  if (*rs->mem + n * sizeof *out > rs->budget &&
      spill_write(rs->spill, out, n * sizeof *out, &r->off) == 0)
    return;
  r->mem = xmalloc(n * sizeof *out);
  memcpy(r->mem, out, n * sizeof *out);
  *rs->mem += n * sizeof *out;
}

/* The next record of a run (its buffer refilled when read): NULL at its
 * end, or when the spill file cannot be read (then *err is set, if it was
 * 0, and the run ends there). */
static const struct ingest_run_rec *
ingest_runs_peek(struct ingest_runs *rs, struct ingest_run *r, int *err) {
  if (r->at < r->nbuf)
    return &r->buf[r->at];
  if (r->done == r->n)
    return NULL;
  size_t n = r->n - r->done < r->nbuf ? r->n - r->done : r->nbuf;
  int rc = spill_read(rs->spill, r->buf, n * sizeof *r->buf,
                      r->off + r->done * sizeof *r->buf);
  if (rc) {
    if (!*err)
      *err = rc;
    r->done = r->n;
    r->nbuf = r->at = 0;
    return NULL;
  }
  r->done += n;
  r->nbuf = n;
  r->at = 0;
  return r->buf;
}

/* Whether run x's next record comes before run y's (both have one read,
 * both of one kind). */
static bool ingest_runs_less(const struct ingest_runs *rs, size_t x, size_t y) {
  const struct ingest_run *a = &rs->v[x], *b = &rs->v[y];
  return ingest_runs_order[a->kind](&a->buf[a->at], &b->buf[b->at]) < 0;
}

/* Restores the heap of runs h[0, n) (the next record first in run order)
 * below k.  The runs in the heap have their next record read. */
static void ingest_runs_down(const struct ingest_runs *rs, size_t *h, size_t n,
                             size_t k) {
  for (;;) {
    size_t m = k, l = 2 * k + 1;
    if (l < n && ingest_runs_less(rs, h[l], h[m]))
      m = l;
    if (l + 1 < n && ingest_runs_less(rs, h[l + 1], h[m]))
      m = l + 1;
    if (m == k)
      return;
    size_t x = h[k];
    h[k] = h[m];
    h[m] = x;
    k = m;
  }
}

/* Frees the runs of one kind (kind < 0: all) and takes them out of the
 * list. */
static void ingest_runs_drop(struct ingest_runs *rs, int kind) {
  size_t left = 0;
  for (size_t k = 0; k < rs->n; k++) {
    struct ingest_run *r = &rs->v[k];
    if (kind >= 0 && (int)r->kind != kind)
      rs->v[left++] = *r;
    else if (r->mem) {
      *rs->mem -= r->n * sizeof *r->mem;
      free(r->mem);
    } else {
      free(r->buf);
    }
  }
  rs->n = left;
}

int ingest_runs_merge(struct ingest_runs *rs, enum ingest_run_kind kind,
                      void (*emit)(void *ud, const struct ingest_run_rec *o),
                      void *ud) {
  size_t nruns = 0;
  for (size_t k = 0; k < rs->n; k++)
    nruns += rs->v[k].kind == kind;
  size_t per = rs->budget / sizeof(struct ingest_run_rec) / (nruns ? nruns : 1);
  per = per < 64 ? 64 : per > 4096 ? 4096 : per;
  size_t *h = xmalloc(sizeof *h * (nruns ? nruns : 1)), n = 0;
  int err = 0;
  for (size_t k = 0; k < rs->n; k++) {
    struct ingest_run *r = &rs->v[k];
    if (r->kind != kind)
      continue;
    if (r->mem) { /* in memory: one buffer, read already */
      r->buf = r->mem;
      r->nbuf = r->done = r->n;
      r->at = 0;
    } else { /* an empty buffer of nbuf records */
      r->nbuf = r->at = r->n < per ? r->n : per;
      r->buf = xmalloc(sizeof *r->buf * r->nbuf);
    }
    if (ingest_runs_peek(rs, r, &err)) /* the heap: runs read ahead */
      h[n++] = k;
  }
  for (size_t k = n; k-- > 0;)
    ingest_runs_down(rs, h, n, k);
  while (n) {
    struct ingest_run *r = &rs->v[h[0]];
    emit(ud, &r->buf[r->at]);
    r->at++;
    if (!ingest_runs_peek(rs, r, &err))
      h[0] = h[--n];
    ingest_runs_down(rs, h, n, 0);
  }
  free(h);
  ingest_runs_drop(rs, (int)kind);
  return err;
}

void ingest_runs_free(struct ingest_runs *rs) {
  ingest_runs_drop(rs, -1);
  free(rs->v);
  free(rs->tmp);
  rs->v = NULL;
  rs->tmp = NULL;
  rs->ntmp = 0;
}
