/* teststore.c -- the unit tests' small stores (see teststore.h). */
#include "teststore.h"
#include "lod.h"
#include "store_vtab.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

char *teststore_one(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    fprintf(stderr, "teststore: %s: %s\n", sql, sqlite3_errmsg(db));
    abort();
  }
  const char *t = (const char *)sqlite3_column_text(st, 0);
  char *out = xstrdup(t ? t : "");
  sqlite3_finalize(st);
  return out;
}

int teststore_sorts(sqlite3 *db, const char *sql) {
  char *q = xasprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "teststore: %s: %s\n", q, sqlite3_errmsg(db));
    abort();
  }
  int sorts = 0;
  while (sqlite3_step(st) == SQLITE_ROW)
    sorts |= strstr((const char *)sqlite3_column_text(st, 3), "B-TREE") != NULL;
  sqlite3_finalize(st);
  free(q);
  return sorts;
}

char *teststore_corrupt(sqlite3 *db, const char *damage, const char *query) {
  sqlite3_stmt *st = NULL;
  char *msg = NULL;
  if (sqlite3_exec(db, damage, NULL, NULL, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_CORRUPT)
    msg = xstrdup(sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return msg;
}

void teststore_close(sqlite3 *db, char *path) {
  sqlite3_close(db);
  unlink(path);
  free(path);
}

int teststore_read_only(sqlite3 *db, const char *const *sql, int n) {
  for (int k = 0; k < n; k++) {
    char *err = NULL;
    int rc = sqlite3_exec(db, sql[k], NULL, NULL, &err);
    int refused = rc != SQLITE_OK && err && strstr(err, "may not be modified");
    sqlite3_free(err);
    if (!refused)
      return 0;
  }
  return 1;
}

sqlite3 *teststore_open_ref(const char *path, const char *vt,
                            const char *cols) {
  sqlite3 *db;
  char *sql = xasprintf("ATTACH ':memory:' AS m; CREATE TABLE m.ref (%s); "
                        "INSERT INTO m.ref SELECT * FROM %s",
                        cols, vt);
  if (sqlite3_open(path, &db) != SQLITE_OK ||
      store_vtab_register(db) != SQLITE_OK ||
      sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
    fprintf(stderr, "teststore: %s: %s\n", path, sqlite3_errmsg(db));
    abort();
  }
  free(sql);
  return db;
}

/* fmt with its first "%s" replaced by a and its second by b (malloc'd). */
static char *teststore_fill(const char *fmt, const char *a, const char *b) {
  struct sbuf q = {0};
  const char *s[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    const char *at = strstr(fmt, "%s");
    if (!at)
      break;
    sbuf_add(&q, fmt, (size_t)(at - fmt));
    sbuf_adds(&q, s[k]);
    fmt = at + 2;
  }
  sbuf_adds(&q, fmt);
  return q.s;
}

void teststore_same_as_ref(sqlite3 *db, const char *fmt, const char *vt,
                           const char *const *where, size_t n) {
  for (size_t k = 0; k < n; k++) {
    char *r[2];
    for (int t = 0; t < 2; t++) {
      char *q = teststore_fill(fmt, t ? "ref" : vt, where[k]);
      r[t] = teststore_one(db, q);
      free(q);
    }
    if (strcmp(r[0], r[1]) != 0) {
      fprintf(stderr, "teststore: WHERE %s: %s %.60s, table %.60s\n", where[k],
              vt, r[0], r[1]);
      abort();
    }
    free(r[0]);
    free(r[1]);
  }
}
