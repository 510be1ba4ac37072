/* teststore.c -- the unit tests' small stores (see teststore.h). */
#include "teststore.h"
#include "lod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store_writer *teststore_open(const char *path) {
  struct store_writer *w;
  char *cause = NULL;
  if (store_writer_open(path, &w, &cause) < 0) {
    fprintf(stderr, "teststore: %s\n", cause);
    abort();
  }
  return w;
}

void teststore_finish(struct store_writer *w) {
  char *cause = NULL;
  if (store_writer_finish(w, &cause) < 0) {
    fprintf(stderr, "teststore: %s\n", cause);
    abort();
  }
}

struct store_track teststore_track(const char *kind, const char *source) {
  return (struct store_track){.kind = kind,
                              .domain = "system",
                              .source = source,
                              .instance_id = "i-1",
                              .pid = 10,
                              .has_pid = 1,
                              .tid = 11,
                              .has_tid = 1,
                              .nc_idx = 0,
                              .pcore_idx = -1,
                              .worker_gid = -1,
                              .stream_id = -1,
                              .device_idx = -1,
                              .hbm_idx = -1};
}

void teststore_slices(struct store_writer *w, int64_t track,
                      const struct teststore_slices *s) {
  int64_t name = store_writer_intern(w, s->name);
  int lanes = s->lanes > 0 ? s->lanes : 1;
  struct lod *lod = s->lod_level >= 0 ? lod_new(track, s->lod_level) : NULL;
  size_t args_len = s->args ? strlen(s->args) : 0;
  for (int i = 0; i < s->n; i++) {
    int64_t ts = s->ts0 + i * s->step;
    store_writer_slice(w, track, i % lanes, ts, s->id0 + i, s->dur, name, 0,
                       s->args, args_len);
    if (lod)
      lod_slice(lod, w, i % lanes, ts, s->dur, s->id0 + i, name, 0);
  }
  if (lod) {
    lod_flush(lod, w);
    lod_free(lod);
  }
  store_writer_name_stat(w, name, track, s->n, s->n * s->dur);
  struct store_track_stats st = {
      lanes,       s->dur, s->n, s->ts0, s->ts0 + (s->n - 1) * s->step + s->dur,
      s->lod_level};
  store_writer_track_stats(w, track, &st);
}

void teststore_counter(struct store_writer *w, int64_t track, int n,
                       int64_t ts0, int lod_level) {
  struct lod_counter *c = lod_counter_new(track, lod_level);
  for (int i = 0; i < n; i++) {
    store_writer_counter(w, track, 0, ts0 + i * 1000, 0, i);
    lod_counter_sample(c, w, 0, ts0 + i * 1000, i);
  }
  lod_counter_flush(c, w);
  lod_counter_free(c);
  struct store_track_stats st = {0, 0, n, ts0, ts0 + (n - 1) * 1000, lod_level};
  store_writer_track_stats(w, track, &st);
}
