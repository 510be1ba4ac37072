/* ingest_rates.c -- rate counters summed as their slices are placed.  See
 * ingest_rates.h. */
#include "ingest_rates.h"
#include "store_json.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The buckets of a span: bytes[k] holds [first + k width, + width). */
struct ingest_rate_bins {
  int64_t first, width;
  size_t n;
  double *bytes;
};

/* A slice of a lane above 0, kept aside until its track is done. */
struct ingest_rate_aside {
  int64_t lane, ts, dur;
  double bytes;
};

struct ingest_rates;

struct ingest_rate {
  struct ingest_rates *all;
  struct ingest_rate *next;
  enum ingest_rate_kind kind;
  int64_t key, last;
  const char *member;
  struct ingest_rate_bins b;
  bool failed;    /* summed by the scan instead */
  int64_t placed; /* slices seen */
  int64_t track;  /* the track being summed (0: none yet) */
  bool any0;      /* whether its lane 0 had a slice, the last at last0 */
  int64_t last0;
  struct ingest_rate_aside *aside;
  size_t naside, cap;
};

/* The run's rates, and the bytes they hold. */
struct ingest_rates {
  struct ingest_rate *head;
  size_t mem;
};

static const char ingest_rates_key; /* its ingest_state key */

/* Frees what r holds (its buckets and what it kept aside). */
static void ingest_rates_drop(struct ingest_rate *r) {
  r->all->mem -= r->b.n * sizeof *r->b.bytes + r->cap * sizeof *r->aside;
  free(r->b.bytes);
  free(r->aside);
  r->b.bytes = NULL;
  r->aside = NULL;
  r->b.n = r->naside = r->cap = 0;
}

static void ingest_rates_free(void *state) {
  struct ingest_rates *s = state;
  while (s->head) {
    struct ingest_rate *r = s->head;
    s->head = r->next;
    ingest_rates_drop(r);
    free(r);
  }
  free(s);
}

/* The buckets of [first, last] (none when last <= first), zeroed. */
static struct ingest_rate_bins ingest_rates_bins(int64_t first, int64_t last) {
  struct ingest_rate_bins b = {.first = first};
  if (last <= first)
    return b;
  b.width = (last - first) / INGEST_RATE_BUCKETS + 1;
  if (b.width < 1000)
    b.width = 1000;
  b.n = (size_t)((last - first) / b.width + 1);
  b.bytes = xcalloc(b.n, sizeof *b.bytes);
  return b;
}

/* Spreads the bytes of the slice [ts, ts + dur) (1 ns when dur is 0)
 * over the buckets it overlaps. */
static void ingest_rates_add(struct ingest_rate_bins *b, int64_t ts,
                             int64_t dur, double bytes) {
  ts -= b->first;
  if (ts < 0 || dur < 0 || bytes <= 0)
    return;
  int64_t end = ts + (dur > 0 ? dur : 1);
  for (int64_t k = ts / b->width; k <= (end - 1) / b->width; k++) {
    if ((size_t)k >= b->n)
      break;
    int64_t lo = k * b->width > ts ? k * b->width : ts;
    int64_t hi = (k + 1) * b->width < end ? (k + 1) * b->width : end;
    b->bytes[k] += bytes * (double)(hi - lo) / (double)(end - ts);
  }
}

/* The rate is summed by the scan after all. */
static void ingest_rates_fail(struct ingest_rate *r) {
  ingest_rates_drop(r);
  r->failed = true;
}

/* Orders slices kept aside by lane, then start (a lane's are unique). */
static int ingest_rates_aside_cmp(const void *pa, const void *pb) {
  const struct ingest_rate_aside *a = pa, *b = pb;
  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The track being summed is done: adds what its lanes above 0 had. */
static void ingest_rates_flush(struct ingest_rate *r) {
  if (!r->naside)
    return;
  qsort(r->aside, r->naside, sizeof *r->aside, ingest_rates_aside_cmp);
  for (size_t k = 0; k < r->naside; k++)
    ingest_rates_add(&r->b, r->aside[k].ts, r->aside[k].dur, r->aside[k].bytes);
  r->naside = 0;
}

/* Keeps a slice of a lane above 0 aside; false when over the budget. */
static bool ingest_rates_keep_aside(struct ingest_rate *r,
                                    struct ingest_rate_aside a) {
  if (r->naside == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 256;
    if (r->all->mem + (cap - r->cap) * sizeof *r->aside > INGEST_RATES_BUDGET)
      return false;
    r->all->mem += (cap - r->cap) * sizeof *r->aside;
    r->aside = xrealloc(r->aside, cap * sizeof *r->aside);
    r->cap = cap;
  }
  r->aside[r->naside++] = a;
  return true;
}

static const struct ingest_hook ingest_rates_hook;

static void ingest_rates_placed(struct ing *g, struct itrack *t, int64_t lane,
                                const struct lanes_item *it) {
  (void)g;
  struct ingest_rate *r = ingest_track_hook_state(t, &ingest_rates_hook);
  r->placed++;
  if (r->failed)
    return;
  int64_t track = ingest_track_id(t);
  if (track != r->track) {
    if (track < r->track) { /* its tracks out of id order */
      ingest_rates_fail(r);
      return;
    }
    ingest_rates_flush(r);
    r->track = track;
    r->any0 = false;
  }
  double bytes = 0; /* coalesce(..., 0) of NULL */
  if (store_json_real(it->args, it->args_len, r->member, &bytes) ==
      STORE_JSON_OTHER) {
    ingest_rates_fail(r);
    return;
  }
  if (lane != 0) {
    if (!ingest_rates_keep_aside(
            r, (struct ingest_rate_aside){lane, it->ts, it->dur, bytes}))
      ingest_rates_fail(r);
    return;
  }
  if (r->any0 && it->ts <= r->last0) { /* a slice placed late */
    ingest_rates_fail(r);
    return;
  }
  r->any0 = true;
  r->last0 = it->ts;
  ingest_rates_add(&r->b, it->ts, it->dur, bytes);
}

/* The state is the run's, not the track's. */
static void ingest_rates_keep(void *state) { (void)state; }

static const struct ingest_hook ingest_rates_hook = {ingest_rates_placed, NULL,
                                                     ingest_rates_keep};

struct ingest_rate *ingest_rates_begin(struct ing *g,
                                       enum ingest_rate_kind kind, int64_t key,
                                       int64_t first, int64_t last,
                                       const char *member) {
  struct ingest_rates *s =
      ingest_state_make(g, &ingest_rates_key, sizeof *s, ingest_rates_free);
  struct ingest_rate_bins b = ingest_rates_bins(first, last);
  size_t mem = b.n * sizeof *b.bytes;
  if (s->mem + mem > INGEST_RATES_BUDGET) {
    free(b.bytes);
    return NULL;
  }
  struct ingest_rate *r = xcalloc(1, sizeof *r);
  *r = (struct ingest_rate){.all = s,
                            .next = s->head,
                            .kind = kind,
                            .key = key,
                            .last = last,
                            .member = member,
                            .b = b};
  s->head = r;
  s->mem += mem;
  return r;
}

void ingest_rates_watch(struct ingest_rate *r, struct itrack *t) {
  if (!r)
    return;
  if (ingest_track_hooked(t)) /* a reader's own hook: no room for this one */
    ingest_rates_fail(r);
  else
    ingest_track_hook(t, &ingest_rates_hook, r);
}

/* A row of the scan: ts, dur, bytes. */
static int ingest_rates_row(void *ud, sqlite3_stmt *st) {
  ingest_rates_add(ud, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                   sqlite3_column_double(st, 2));
  return 0;
}

/* The rate (kind, key) of the run; NULL if none. */
static struct ingest_rate *
ingest_rates_find(struct ing *g, enum ingest_rate_kind kind, int64_t key) {
  struct ingest_rates *s = ingest_state(g, &ingest_rates_key);
  for (struct ingest_rate *r = s ? s->head : NULL; r; r = r->next)
    if (r->kind == kind && r->key == key)
      return r;
  return NULL;
}

bool ingest_rates_emit(struct ing *g, struct itrack *dst,
                       enum ingest_rate_kind kind, int64_t key, int64_t first,
                       int64_t last, int64_t count, const char *sql) {
  struct ingest_rate *r = ingest_rates_find(g, kind, key);
  struct ingest_rate_bins b = {0};
  bool placed = r && !r->failed && r->b.first == first && r->last == last &&
                r->placed == count,
       scan = !placed && last > first;
  if (placed) {
    ingest_rates_flush(r);
    b = r->b;
    r->all->mem -= b.n * sizeof *b.bytes;
    r->b = (struct ingest_rate_bins){0};
  } else if (scan) {
    b = ingest_rates_bins(first, last);
    int rc = store_writer_query(ingest_writer(g), ingest_rates_row, &b, sql,
                                "i", key);
    if (rc < 0)
      ingest_warn(g, "Missing Data", NULL, 0,
                  "the %s counter is incomplete: %s",
                  ingest_track_desc(dst)->source, strerror(-rc));
  }
  if (r) /* its tracks keep the hook: later slices are not summed */
    ingest_rates_fail(r);
  for (size_t k = 0; k < b.n; k++)
    ingest_counter(g, dst, 0, b.first + (int64_t)k * b.width,
                   b.bytes[k] * 1e9 / (double)b.width);
  free(b.bytes);
  return scan;
}
