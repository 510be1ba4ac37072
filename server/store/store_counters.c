/* store_counters.c -- see store_counters.h. */
#include "store_counters.h"
#include "store_block.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One series of the track being written: its open block and its last
 * sample so far. */
struct store_counters_series {
  int series;
  int any; /* a sample was added: last_* are set */
  int64_t last_ts, last_seq;
  struct store_block b;
};

struct store_counters {
  store_counters_emit_fn *emit;
  void *ud;
  int64_t track; /* the track being written, -1: none yet */
  struct store_counters_series *ser;
  int n, cap, hit;     /* hit: the series found last */
  unsigned char *done; /* bit per track id: written before the current one */
  size_t done_bytes;
  char *error; /* the first error not taken yet */
};

struct store_counters *store_counters_new(store_counters_emit_fn *emit,
                                          void *ud) {
  struct store_counters *s = xcalloc(1, sizeof *s);
  s->emit = emit;
  s->ud = ud;
  s->track = -1;
  return s;
}

void store_counters_error(struct store_counters *s, char **error) {
  util_error_take(&s->error, error);
}

/* Encodes and emits the open block of e, if any. */
static void store_counters_close(struct store_counters *s,
                                 struct store_counters_series *e) {
  if (!e->b.n)
    return;
  size_t len;
  unsigned char *data = store_block_encode_counter(&e->b, &len);
  s->emit(s->ud, s->track, e->series, e->b.row[0].ts, e->b.row[0].id, e->b.n,
          data, len);
  free(data);
  store_block_clear(&e->b);
}

void store_counters_flush(struct store_counters *s) {
  for (int i = 0; i < s->n; i++)
    store_counters_close(s, &s->ser[i]);
}

/* Whether bit `track` of the done set is set; sets it when `set`. */
static int store_counters_done(struct store_counters *s, int64_t track,
                               int set) {
  size_t byte = (size_t)track / 8;
  if (byte >= s->done_bytes) {
    if (!set)
      return 0;
    size_t nb = byte * 2 + 64;
    s->done = xrealloc(s->done, nb);
    memset(s->done + s->done_bytes, 0, nb - s->done_bytes);
    s->done_bytes = nb;
  }
  int was = s->done[byte] >> (track % 8) & 1;
  if (set)
    s->done[byte] |= (unsigned char)(1u << (track % 8));
  return was;
}

/* Makes `track` the track being written: the previous one is closed and
 * done.  Returns 0, or -1 (error kept) when track was written before. */
static int store_counters_switch(struct store_counters *s, int64_t track) {
  if (store_counters_done(s, track, 0)) {
    util_error_keep(&s->error, xasprintf("counter track %" PRId64
                                         " written again after another "
                                         "track",
                                         track));
    return -1;
  }
  if (s->track >= 0) {
    store_counters_flush(s);
    store_counters_done(s, s->track, 1);
  }
  for (int i = 0; i < s->n; i++)
    store_block_free(&s->ser[i].b);
  s->n = 0;
  s->hit = 0;
  s->track = track;
  return 0;
}

/* The series entry of the current track, made when new. */
static struct store_counters_series *
store_counters_series(struct store_counters *s, int series) {
  if (s->hit < s->n && s->ser[s->hit].series == series)
    return &s->ser[s->hit];
  for (int i = 0; i < s->n; i++)
    if (s->ser[i].series == series)
      return &s->ser[s->hit = i];
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 8;
    s->ser = xrealloc(s->ser, (size_t)s->cap * sizeof *s->ser);
  }
  s->ser[s->n] = (struct store_counters_series){.series = series};
  return &s->ser[s->hit = s->n++];
}

void store_counters_add(struct store_counters *s, int64_t track, int series,
                        int64_t ts, int64_t seq, double value) {
  if (track < 0 || series < 0) {
    util_error_keep(&s->error, xasprintf("counter sample of track %" PRId64
                                         ", series %d: not a valid key",
                                         track, series));
    return;
  }
  if (track != s->track && store_counters_switch(s, track) < 0)
    return;
  struct store_counters_series *e = store_counters_series(s, series);
  if (e->any && (ts < e->last_ts || (ts == e->last_ts && seq <= e->last_seq))) {
    util_error_keep(&s->error,
                    xasprintf("counter sample (track %" PRId64
                              ", series %d, ts %" PRId64 ", seq %" PRId64
                              ") comes after a later one or is "
                              "written twice",
                              track, series, ts, seq));
    return;
  }
  e->any = 1;
  e->last_ts = ts;
  e->last_seq = seq;
  store_block_add_sample(&e->b, ts, seq, value);
  if (e->b.n == STORE_CBLOCK_ROWS)
    store_counters_close(s, e);
}

void store_counters_free(struct store_counters *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    store_block_free(&s->ser[i].b);
  free(s->ser);
  free(s->done);
  free(s->error);
  free(s);
}
