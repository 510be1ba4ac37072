/* lod.c -- see lod.h. */
#include "lod.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

#define LOD_EVENTS_PER_BUCKET 2
#define LOD_BLOCK_BYTES 1024 /* a block is written once it holds this much */

int lod_pick_level(int64_t span, int64_t n) {
  if (n < 2 || span <= 0)
    return 1;
  /* bucket >= LOD_EVENTS_PER_BUCKET * mean gap */
  double want = (double)span / (double)(n - 1) * LOD_EVENTS_PER_BUCKET;
  for (int l = 1; l <= LOD_MAX_LEVEL; l++)
    if ((double)(1LL << LOD_SHIFT(l)) >= want)
      return l;
  return LOD_MAX_LEVEL;
}

/* The rows of one (lane, level) waiting to be written as a block. */
struct lod_pack {
  int64_t bucket; /* of the first row */
  int n;
  int64_t count;
  struct lod_row prev;
  size_t len;
  unsigned char buf[LOD_BLOCK_BYTES + LOD_ROW_BYTES];
};

/* ---- slices ---- */

/* One LOD row being built: a run of buckets from `bucket` to `last`. */
struct lod_bucket {
  int64_t bucket; /* -1: empty */
  int64_t last;
  int64_t ts, end, id, name, grp, dur, count, busy;
};

struct lod_level {
  struct lod_bucket open;
  struct lod_pack pack;
};

struct lod {
  int64_t track;
  int min_level, nlevels;
  struct lod_level *b; /* [lane * nlevels + level - min_level] */
  int64_t nlanes;
};

struct lod *lod_new(int64_t track, int min_level) {
  struct lod *l = xcalloc(1, sizeof *l);
  l->track = track;
  l->min_level = min_level;
  l->nlevels = LOD_MAX_LEVEL - min_level + 1;
  return l;
}

static void lod_write(struct lod *l, struct store_writer *w, int64_t lane,
                      int level, struct lod_pack *p) {
  if (p->n)
    store_writer_slice_lod(w, l->track, level, lane, p->bucket, p->n, p->count,
                           p->buf, p->len);
  p->n = 0;
}

/* Appends the finished row of lv to its block, writing the block when
 * full. */
static void lod_emit(struct lod *l, struct store_writer *w, int64_t lane,
                     int level, struct lod_level *lv) {
  const struct lod_bucket *b = &lv->open;
  struct lod_pack *p = &lv->pack;
  if (p->n == 0) {
    p->bucket = b->bucket;
    p->count = 0;
    p->len = 0;
    p->prev = lod_block_origin(level, b->bucket);
  }
  struct lod_row r = {.bucket = b->bucket, .ts = b->ts, .end = b->end,
                      .id = b->id, .name = b->name, .grp = b->grp,
                      .dur = b->dur, .count = b->count,
                      .busy = b->busy};
  p->len = (size_t)(lod_block_put(p->buf + p->len, &p->prev, &r) - p->buf);
  p->n++;
  p->count += b->count;
  if (p->n == LOD_BLOCK_ROWS || p->len >= LOD_BLOCK_BYTES)
    lod_write(l, w, lane, level, p);
}

void lod_slice(struct lod *l, struct store_writer *w, int64_t lane, int64_t ts,
               int64_t dur, int64_t id, int64_t name, int64_t grp) {
  while (lane >= l->nlanes) {
    l->b =
        xrealloc(l->b, sizeof *l->b * (size_t)((l->nlanes + 1) * l->nlevels));
    for (int i = 0; i < l->nlevels; i++) {
      l->b[l->nlanes * l->nlevels + i].open.bucket = -1;
      l->b[l->nlanes * l->nlevels + i].pack.n = 0;
    }
    l->nlanes++;
  }
  int64_t end = ts + dur;
  for (int i = 0; i < l->nlevels; i++) {
    int level = l->min_level + i;
    struct lod_level *lv = &l->b[lane * l->nlevels + i];
    struct lod_bucket *b = &lv->open;
    int64_t bucket = ts >> LOD_SHIFT(level);
    /* Joins the row when in its last bucket, or when it continues a run
     * of the row's name with a gap under half a bucket: a queried level's
     * buckets are 1/2 to 2 pixels wide, so the gap is under a pixel. */
    if (b->bucket >= 0 &&
        (b->last == bucket ||
         (name == b->name && grp == b->grp &&
          ts - b->end < (INT64_C(1) << LOD_SHIFT(level)) / 2))) {
      b->last = bucket;
      b->count++;
      b->busy += dur;
      if (end > b->end)
        b->end = end;
      if (dur > b->dur) {
        b->dur = dur, b->id = id, b->name = name, b->grp = grp;
      }
      continue;
    }
    if (b->bucket >= 0)
      lod_emit(l, w, lane, level, lv);
    *b = (struct lod_bucket){bucket, bucket, ts,  end, id,
                             name,   grp,    dur, 1,   dur};
  }
}

void lod_flush(struct lod *l, struct store_writer *w) {
  for (int64_t lane = 0; lane < l->nlanes; lane++)
    for (int i = 0; i < l->nlevels; i++) {
      struct lod_level *lv = &l->b[lane * l->nlevels + i];
      if (lv->open.bucket >= 0)
        lod_emit(l, w, lane, l->min_level + i, lv);
      lod_write(l, w, lane, l->min_level + i, &lv->pack);
      lv->open.bucket = -1;
    }
}

void lod_free(struct lod *l) {
  if (!l)
    return;
  free(l->b);
  free(l);
}

struct lod_cbucket {
  int64_t bucket, ts, count;
  double min, max, last;
};

struct lod_counter {
  int64_t track;
  int min_level, nlevels, nseries;
  struct lod_cbucket *b; /* [series * nlevels + level - min_level] */
};

struct lod_counter *lod_counter_new(int64_t track, int min_level) {
  struct lod_counter *c = xcalloc(1, sizeof *c);
  c->track = track;
  c->min_level = min_level;
  c->nlevels = LOD_MAX_LEVEL - min_level + 1;
  return c;
}

static void lod_counter_emit(struct lod_counter *c, struct store_writer *w,
                             int series, int level,
                             const struct lod_cbucket *b) {
  store_writer_counter_lod(w, c->track, series, level, b->bucket, b->ts, b->min,
                           b->max, b->last, b->count);
}

void lod_counter_sample(struct lod_counter *c, struct store_writer *w,
                        int series, int64_t ts, double value) {
  while (series >= c->nseries) {
    c->b =
        xrealloc(c->b, sizeof *c->b * (size_t)((c->nseries + 1) * c->nlevels));
    for (int i = 0; i < c->nlevels; i++)
      c->b[c->nseries * c->nlevels + i].bucket = -1;
    c->nseries++;
  }
  for (int i = 0; i < c->nlevels; i++) {
    int level = c->min_level + i;
    struct lod_cbucket *b = &c->b[series * c->nlevels + i];
    int64_t bucket = ts >> LOD_SHIFT(level);
    if (b->bucket >= 0 && bucket <= b->bucket) {
      b->count++;
      b->last = value;
      if (value < b->min)
        b->min = value;
      if (value > b->max)
        b->max = value;
      continue;
    }
    if (b->bucket >= 0)
      lod_counter_emit(c, w, series, level, b);
    *b = (struct lod_cbucket){bucket, ts, 1, value, value, value};
  }
}

void lod_counter_flush(struct lod_counter *c, struct store_writer *w) {
  for (int s = 0; s < c->nseries; s++)
    for (int i = 0; i < c->nlevels; i++) {
      struct lod_cbucket *b = &c->b[s * c->nlevels + i];
      if (b->bucket >= 0)
        lod_counter_emit(c, w, s, c->min_level + i, b);
      b->bucket = -1;
    }
}

void lod_counter_free(struct lod_counter *c) {
  if (!c)
    return;
  free(c->b);
  free(c);
}
