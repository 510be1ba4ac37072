/* test_query.c -- window queries on a hand-made store: the straddling
 * slice, the raw limit falling back to the finest LOD level, the LOD row
 * before the first bucket, LOD runs of one event name (stored and merged
 * per pixel), counters with the sample before the window;
 * plus search, range summary, the SQL guard and the small parsers; windows
 * at the ends of int64 (no undefined behaviour: build with --enable-asan);
 * a device profile whose engine time is kept in the pool's memo. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "lod.h"
#include "query.h"
#include "store.h"
#include "store_vtab.h"
#include "teststore.h"
#include "util.h"

/* Track A: one lane, "long" [0, 1500) then 100 "short" slices of 50 ns
 * every 100 ns from 2000; finest LOD level 2 (1024 ns buckets).
 * Track B: a counter, sample i (value i) at i * 1000 ns, LOD from level 2.
 * Track C: runs of "busy" for the LOD runs (see add_runs). */
#define SHORT_N 100
static char store_path[64];
static struct store_pool *pool;
static int64_t track_a, track_b, track_c, track_e, profile_d;

/* Device profile D over [0, 10000) with one "Tensor" engine track E of two
 * lanes: lane 0 [0, 1000) and [3000, 4000), lane 1 [500, 2000): active
 * 3000 ns (the union), 3 instructions. */
static void add_device(struct store_writer *w) {
  profile_d = store_writer_exec(
      w,
      "INSERT INTO DeviceProfileList (device_profile_name, instance_id, "
      "process_id, nc_id, ntff_file, first_ts, last_ts) "
      "VALUES (?,?,?,?,?,?,?)",
      "ttiitii", "dp", "i-1", (int64_t)7, (int64_t)0, "x.ntff", (int64_t)0,
      (int64_t)10000);
  assert_true(profile_d > 0);
  struct store_track e = {.kind = "slices",
                          .domain = "device",
                          .source = "engine",
                          .instance_id = "i-1",
                          .nc_idx = 0,
                          .pcore_idx = 0,
                          .worker_gid = -1,
                          .stream_id = -1,
                          .device_idx = -1,
                          .hbm_idx = -1,
                          .label = "Tensor",
                          .device_profile_id = profile_d};
  track_e = store_writer_track(w, &e);
  int64_t op = store_writer_intern(w, "MATMUL");
  store_writer_slice(w, track_e, 0, 0, 1, 1000, op, 0, NULL, 0);
  store_writer_slice(w, track_e, 0, 3000, 2, 1000, op, 0, NULL, 0);
  store_writer_slice(w, track_e, 1, 500, 3, 1500, op, 0, NULL, 0);
  struct store_track_stats se = {2, 1500, 3, 0, 4000, -1};
  store_writer_track_stats(w, track_e, &se);
}

/* Track C, one lane, LOD from level 2 (1024 ns buckets): 20 "busy" of
 * 900 ns every 1000 ns from 0 (gaps of 100 ns: one run), a 2100 ns gap,
 * 5 more from 22000 (a second run at level 2; at level 3, 4096 ns buckets,
 * the gap is still over half a bucket), then "other" [27000, 27500) and
 * "busy" [27600, 27700) sharing bucket 26. */
static void add_runs(struct store_writer *w, const struct store_track *tmpl) {
  track_c = store_writer_track(w, tmpl);
  int64_t busy = store_writer_intern(w, "busy");
  int64_t other = store_writer_intern(w, "other");
  struct lod *l = lod_new(track_c, 2);
  int64_t id = 1000;
  for (int i = 0; i < 25; i++) {
    int64_t ts = i < 20 ? 1000 * i : 22000 + 1000 * (i - 20);
    store_writer_slice(w, track_c, 0, ts, id, 900, busy, 0, NULL, 0);
    lod_slice(l, w, 0, ts, 900, id++, busy, 0);
  }
  store_writer_slice(w, track_c, 0, 27000, id, 500, other, 0, NULL, 0);
  lod_slice(l, w, 0, 27000, 500, id++, other, 0);
  store_writer_slice(w, track_c, 0, 27600, id, 100, busy, 0, NULL, 0);
  lod_slice(l, w, 0, 27600, 100, id++, busy, 0);
  lod_flush(l, w);
  lod_free(l);
  struct store_track_stats sc = {1, 900, 27, 0, 27700, 2};
  store_writer_track_stats(w, track_c, &sc);
}

static int setup(void **state) {
  char *cause = NULL;
  snprintf(store_path, sizeof store_path, "/tmp/nex-test-query-%d.db",
           (int)getpid());
  struct store_writer *w = teststore_open(store_path);
  struct store_track a = teststore_track("slices", "neuron_rt");
  track_a = store_writer_track(w, &a);
  int64_t n_long = store_writer_intern(w, "long");
  int64_t n_short = store_writer_intern(w, "short");
  struct lod *l = lod_new(track_a, 2);
  store_writer_slice(w, track_a, 0, 0, 1, 1500, n_long, 0, NULL, 0);
  lod_slice(l, w, 0, 0, 1500, 1, n_long, 0);
  for (int i = 0; i < SHORT_N; i++) {
    store_writer_slice(w, track_a, 0, 2000 + 100 * i, 100 + i, 50, n_short, 0,
                       NULL, 0);
    lod_slice(l, w, 0, 2000 + 100 * i, 50, 100 + i, n_short, 0);
  }
  lod_flush(l, w);
  lod_free(l);
  store_writer_name_stat(w, n_long, track_a, 1, 1500);
  store_writer_name_stat(w, n_short, track_a, SHORT_N, 50 * SHORT_N);
  struct store_track_stats sa = {
      1, 1500, SHORT_N + 1, 0, 2000 + 100 * (SHORT_N - 1) + 50, 2};
  store_writer_track_stats(w, track_a, &sa);

  struct store_track b = teststore_track("counter", "host_mem");
  track_b = store_writer_track(w, &b);
  teststore_counter(w, track_b, 100, 0, 2);
  add_runs(w, &a);
  add_device(w);
  teststore_finish(w);
  assert_int_equal(store_pool_open(store_path, 2, &pool, &cause), 0);
  return 0;
}

static int teardown(void **state) {
  store_pool_close(pool);
  unlink(store_path);
  return 0;
}

/* Runs a window query and parses the answer. */
static json_t *window(int64_t track, int64_t start, int64_t end, int px,
                      int counters) {
  struct query_window w = {&track, 1, start, end, px, NULL};
  struct query_err e;
  struct sbuf b = {0};
  sqlite3 *db = store_pool_get(pool);
  int rc =
      counters ? query_counters(db, &w, &b, &e) : query_slices(db, &w, &b, &e);
  store_pool_put(pool, db);
  assert_int_equal(rc, 0);
  json_error_t err;
  json_t *j = json_loads(b.s, 0, &err);
  assert_non_null(j);
  sbuf_free(&b);
  return j;
}

static json_t *lane0(json_t *j) {
  return json_array_get(
      json_object_get(json_array_get(json_object_get(j, "tracks"), 0), "lanes"),
      0);
}

static int level_of(json_t *j) {
  return (int)json_integer_value(json_object_get(
      json_array_get(json_object_get(j, "tracks"), 0), "level"));
}

static int64_t at(json_t *lane, const char *col, size_t i) {
  return json_integer_value(json_array_get(json_object_get(lane, col), i));
}

static int64_t sum(json_t *lane, const char *col) {
  int64_t s = 0;
  for (size_t i = 0; i < json_array_size(json_object_get(lane, col)); i++)
    s += at(lane, col, i);
  return s;
}

static size_t rows(json_t *lane) {
  return json_array_size(json_object_get(lane, "ts"));
}

static void test_raw_straddle(void **state) {
  json_t *j = window(track_a, 1100, 2450, 100, 0);
  json_t *l = lane0(j);
  assert_int_equal(level_of(j), -1);
  assert_int_equal(rows(l), 6);
  assert_int_equal(at(l, "ts", 0), -1100); /* "long" straddles the start */
  assert_int_equal(at(l, "dur", 0), 1500);
  assert_int_equal(at(l, "ts", 1), 900);
  assert_int_equal(at(l, "ts", 5), 1300);
  char key[24];
  snprintf(key, sizeof key, "%lld", (long long)at(l, "name", 0));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(j, "names"), key)),
      "long");
  json_decref(j);
}

static void test_raw_skips_ended(void **state) {
  json_t *j = window(track_a, 1600, 2050, 100, 0);
  assert_int_equal(rows(lane0(j)), 1);
  assert_int_equal(at(lane0(j), "ts", 0), 400);
  json_decref(j);
}

static void test_lod_level(void **state) {
  json_t *j = window(track_a, 0, 12 * 1024, 12, 0);
  assert_int_equal(json_integer_value(json_object_get(j, "resolution_ns")),
                   1024);
  assert_int_equal(level_of(j), 2);
  assert_int_equal(sum(lane0(j), "count"), SHORT_N + 1);
  assert_true(rows(lane0(j)) <= 12 + 1); /* one row per pixel */
  json_decref(j);
}

static void test_raw_limit_falls_back(void **state) {
  /* r = 1000 ns: level 1 is finer than the stored levels; 100 events in
   * the window exceed 4 * px = 40 raw rows: the answer comes from level 2 */
  json_t *j = window(track_a, 1999, 11999, 10, 0);
  assert_int_equal(level_of(j), 2);
  assert_int_equal(sum(lane0(j), "count"), SHORT_N);
  json_decref(j);
  j = window(track_a, 1999, 11999, 100, 0); /* 400 rows allowed: raw */
  assert_int_equal(level_of(j), -1);
  assert_int_equal(rows(lane0(j)), SHORT_N);
  json_decref(j);
}

static void test_dense_reads_lod(void **state) {
  /* r = 240 ns, level 1 is finer than the stored levels, and 101 events
   * fit the raw limit (200), but at ~2 events per pixel the answer comes
   * from level 2 without reading them */
  json_t *j = window(track_a, 0, 12000, 50, 0);
  assert_int_equal(level_of(j), 2);
  assert_int_equal(sum(lane0(j), "count"), SHORT_N + 1);
  json_decref(j);
  j = window(track_a, 0, 12000, 120, 0); /* under one per pixel: raw */
  assert_int_equal(level_of(j), -1);
  assert_int_equal(rows(lane0(j)), SHORT_N + 1);
  json_decref(j);
}

static void test_lod_before_row(void **state) {
  json_t *j = window(track_a, 1100, 1100 + 12 * 1024, 12, 0);
  json_t *l = lane0(j);
  assert_int_equal(level_of(j), 2);
  assert_int_equal(at(l, "ts", 0), -1100); /* bucket 0 reaches into it */
  assert_int_equal(at(l, "dur", 0), 1500);
  assert_int_equal(at(l, "count", 0), 1);
  assert_int_equal(at(l, "busy", 0), 1500);
  assert_int_equal(sum(l, "count"), SHORT_N + 1);
  json_decref(j);
}

/* The stored LOD rows of track C at `level`, as
 * "bucket:count:ts:end:busy;". */
static char *lod_rows(int level) {
  sqlite3 *db = store_pool_get(pool);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT bucket, n, count, rows FROM "
                                      "slice_lod WHERE track=?1 AND level=?2 "
                                      "AND lane=0 ORDER BY bucket",
                                      -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_int64(st, 1, track_c);
  sqlite3_bind_int(st, 2, level);
  struct sbuf out = {0};
  while (sqlite3_step(st) == SQLITE_ROW) {
    struct lod_block b;
    struct lod_row r;
    int64_t n = 0, count = 0;
    lod_block_init(&b, level, sqlite3_column_int64(st, 0),
                   sqlite3_column_blob(st, 3),
                   (size_t)sqlite3_column_bytes(st, 3));
    while (lod_block_next(&b, &r) == 1) {
      sbuf_printf(&out, "%s%lld:%lld:%lld:%lld:%lld", out.len ? ";" : "",
                  (long long)r.bucket, (long long)r.count, (long long)r.ts,
                  (long long)r.end, (long long)r.busy);
      n++;
      count += r.count;
    }
    assert_int_equal(n, sqlite3_column_int64(st, 1));
    assert_int_equal(count, sqlite3_column_int64(st, 2));
  }
  sqlite3_finalize(st);
  store_pool_put(pool, db);
  return out.s;
}

/* The names of an answer are the same from the in-memory str table. */
static void test_names_in_memory(void **state) {
  sqlite3 *db = store_pool_get(pool);
  const struct store_names *names = store_pool_names(pool, db);
  assert_non_null(names);
  assert_ptr_equal(store_pool_names(pool, db), names); /* read once */
  assert_string_equal(store_names_get(names, 1), "long");
  assert_null(store_names_get(names, 0));
  assert_null(store_names_get(names, 1000000));
  struct query_window w = {&track_c, 1, 0, 28000, 28, NULL};
  struct query_err e;
  struct sbuf a = {0}, b = {0};
  assert_int_equal(query_slices(db, &w, &a, &e), 0);
  w.names = names;
  assert_int_equal(query_slices(db, &w, &b, &e), 0);
  store_pool_put(pool, db);
  assert_string_equal(a.s, b.s);
  assert_non_null(strstr(b.s, "\"other\""));
  sbuf_free(&a);
  sbuf_free(&b);
}

/* query_warm reads levels from the coarsest until its budget is spent. */
static void test_warm(void **state) {
  sqlite3 *db = store_pool_get(pool);
  sqlite3_stmt *st;
  assert_int_equal(
      sqlite3_prepare_v2(db,
                         "SELECT sum(length(rows)), (SELECT sum(length(rows)) "
                         "FROM slice_lod WHERE level = 20) FROM slice_lod",
                         -1, &st, NULL),
      SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t all = sqlite3_column_int64(st, 0), top = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  assert_true(top > 0 && top < all);
  assert_int_equal(query_warm(db, INT64_MAX), all);
  assert_int_equal(query_warm(db, 1), top); /* the coarsest level only */
  store_pool_put(pool, db);
}

/* Blocks round-trip any int64 (deltas modulo 2^64) and refuse truncation. */
static void test_lod_block_bytes(void **state) {
  static const unsigned char one[] = {0, 2, 4, 6, 8, 10, 12, 14, 16};
  struct lod_block b;
  struct lod_row r;
  lod_block_init(&b, 1, 5, one, sizeof one);
  assert_int_equal(lod_block_next(&b, &r), 1);
  assert_int_equal(r.bucket, 5);
  assert_int_equal(r.ts, 5 * 256 + 1);
  assert_int_equal(r.end, r.ts + 2);
  assert_int_equal(r.id, 3);
  assert_int_equal(r.name, 4);
  assert_int_equal(r.count, 7);
  assert_int_equal(r.busy, 8);
  assert_int_equal(lod_block_next(&b, &r), 0);
  lod_block_init(&b, 1, 5, one, sizeof one - 1);
  assert_int_equal(lod_block_next(&b, &r), -EINVAL);
  static const unsigned char endless[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                            0xff, 0xff, 0xff, 0xff, 0xff};
  lod_block_init(&b, 1, 5, endless, sizeof endless);
  assert_int_equal(lod_block_next(&b, &r), -EINVAL);
}

static void test_lod_runs(void **state) {
  char *s = lod_rows(2);
  /* a run per gap under half a bucket; "busy" [27600, 27700) shares
   * "other"'s bucket and is merged there */
  /* busy: 20 x 900, 5 x 900, then 500 + 100 */
  assert_string_equal(
      s, "0:20:0:19900:18000;21:5:22000:26900:4500;26:2:27000:27700:600");
  free(s);
  s = lod_rows(3);
  assert_string_equal(s, "0:20:0:19900:18000;5:7:22000:27700:5100");
  free(s);
}

static void test_query_runs(void **state) {
  /* r = 1000 ns, level 2: the 2100 ns gap is two pixels: three rows */
  json_t *j = window(track_c, 0, 28000, 28, 0);
  json_t *l = lane0(j);
  assert_int_equal(level_of(j), 2);
  assert_int_equal(rows(l), 3);
  assert_int_equal(at(l, "count", 0), 20);
  assert_int_equal(at(l, "dur", 0), 19900);
  assert_int_equal(at(l, "busy", 0), 18000); /* 20 x 900: the gaps idle */
  assert_int_equal(at(l, "count", 1), 5);
  assert_int_equal(at(l, "busy", 1), 4500);
  assert_int_equal(at(l, "count", 2), 2);
  assert_int_equal(at(l, "busy", 2), 600);
  json_decref(j);
  /* r = 2800 ns, level 3: the gap is under a pixel: one run of 27 */
  j = window(track_c, 0, 28000, 10, 0);
  l = lane0(j);
  assert_int_equal(level_of(j), 3);
  assert_int_equal(rows(l), 1);
  assert_int_equal(at(l, "ts", 0), 0);
  assert_int_equal(at(l, "dur", 0), 27700);
  assert_int_equal(at(l, "count", 0), 27);
  assert_int_equal(at(l, "busy", 0), 23100); /* 25 x 900 + 500 + 100 */
  json_decref(j);
}

/* A row reaching into the window from before it stays as stored: the
 * next run of the same name does not merge into it (the window before
 * holds it whole; a client joining the two drops this copy). */
static void test_query_carried_row(void **state) {
  /* r = 3000 ns, level 3: stored rows [0, 19900) x20 and [22000, 27700) x7;
   * the 2100 ns gap is under a pixel, so from 0 they are one row of 27 */
  json_t *j = window(track_c, 0, 30000, 10, 0);
  assert_int_equal(level_of(j), 3);
  assert_int_equal(rows(lane0(j)), 1);
  json_decref(j);
  j = window(track_c, 10000, 28000, 6, 0);
  json_t *l = lane0(j);
  assert_int_equal(level_of(j), 3);
  assert_int_equal(rows(l), 2);
  assert_int_equal(at(l, "ts", 0), -10000);
  assert_int_equal(at(l, "count", 0), 20);
  assert_int_equal(at(l, "busy", 0), 18000);
  assert_int_equal(at(l, "ts", 1), 12000);
  assert_int_equal(at(l, "count", 1), 7);
  json_decref(j);
}

static json_t *series0(json_t *j) {
  return json_array_get(
      json_object_get(json_array_get(json_object_get(j, "tracks"), 0),
                      "series"),
      0);
}

static void test_counter_raw(void **state) {
  json_t *j = window(track_b, 1500, 4500, 100, 1);
  json_t *s = series0(j);
  assert_int_equal(json_integer_value(json_object_get(s, "level")), -1);
  assert_int_equal(rows(s), 4); /* the sample before, then 2000, 3000, 4000 */
  assert_int_equal(at(s, "ts", 0), -500);
  assert_int_equal(at(s, "last", 0), 1);
  assert_int_equal(at(s, "ts", 3), 2500);
  assert_int_equal(at(s, "max", 3), 4);
  assert_string_equal(json_string_value(json_object_get(s, "name")),
                      "used_bytes");
  json_decref(j);
}

static void test_counter_lod(void **state) {
  json_t *j = window(track_b, 0, 100000, 10, 1);
  json_t *s = series0(j);
  assert_int_equal(json_integer_value(json_object_get(s, "level")),
                   query_level(10000));
  assert_int_equal(sum(s, "count"), 100);
  assert_true(rows(s) <= 4 * 10 + 2);
  json_decref(j);
}

/* GET /counters?start=-1 at a LOD level: the first bucket is -1 (b0 << shift
 * was undefined for it); every sample is counted once. */
static void test_counter_negative_start(void **state) {
  json_t *j = window(track_b, -1, 1000000, 1000, 1);
  json_t *s = series0(j);
  assert_int_equal(json_integer_value(json_object_get(s, "level")), 2);
  assert_int_equal(sum(s, "count"), 100);
  /* samples every 1000 ns in 1024 ns buckets: buckets 0..96 */
  assert_int_equal(rows(s), 97);
  json_decref(j);
}

/* Windows at the ends of int64, on every track at both ends of px: each
 * is answered (or refused as too wide) without undefined behaviour. */
static void test_extreme_windows(void **state) {
  const int64_t edges[] = {
      INT64_MIN, INT64_MIN + 1,    -(INT64_C(1) << 62), -1,       0,
      1,         INT64_C(1) << 62, INT64_MAX - 1,       INT64_MAX};
  const int64_t tracks[] = {track_a, track_b, track_c};
  const int pxs[] = {1, QUERY_MAX_PX};
  size_t n = sizeof edges / sizeof *edges, answered = 0, refused = 0;
  sqlite3 *db = store_pool_get(pool);
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < n; i++)
      for (size_t k = i + 1; k < n; k++)
        for (size_t x = 0; x < 2; x++) {
          struct query_window w = {&tracks[t], 1,      edges[i],
                                   edges[k],   pxs[x], NULL};
          struct query_err e;
          struct sbuf b = {0};
          int rc = tracks[t] == track_b ? query_counters(db, &w, &b, &e)
                                        : query_slices(db, &w, &b, &e);
          if (rc == 0) {
            json_t *j = json_loads(b.s, 0, NULL);
            assert_non_null(j);
            json_decref(j);
            answered++;
          } else {
            assert_int_equal(rc, -EINVAL);
            assert_int_equal(e.status, 400);
            refused++;
          }
          sbuf_free(&b);
        }
  store_pool_put(pool, db);
  /* too wide (over 2^63-1 ns): from INT64_MIN to 0 and up (5 ends), from
   * INT64_MIN + 1 to 1 and up (4), from -2^62 to 2^62 and up (3), from -1
   * to INT64_MAX (1) */
  assert_int_equal(refused, 3 * 2 * 13);
  assert_int_equal(answered, 3 * 2 * (n * (n - 1) / 2 - 13));
}

/* The engines' active time: computed once, kept in the memo of the pool
 * (not of the process), gone with the pool. */
static void test_engine_memo(void **state) {
  char key[48];
  struct query_err e;
  json_t *first, *second;
  snprintf(key, sizeof key, "engines/%lld", (long long)profile_d);
  sqlite3 *db = store_pool_get(pool);
  assert_null(store_pool_memo_get(db, key));
  assert_int_equal(query_device_profile(db, profile_d, &first, &e), 0);
  const char *kept = store_pool_memo_get(db, key);
  assert_non_null(kept);
  assert_int_equal(query_device_profile(db, profile_d, &second, &e), 0);
  assert_ptr_equal(store_pool_memo_get(db, key), kept);
  store_pool_put(pool, db);
  assert_true(json_equal(first, second));
  json_t *tensor = json_object_get(
      json_object_get(json_object_get(first, "summary"), "engines"), "tensor");
  assert_string_equal(json_string_value(json_object_get(tensor, "active_ns")),
                      "3000");
  assert_int_equal(
      json_integer_value(json_object_get(tensor, "instruction_count")), 3);
  assert_true(fabs(json_real_value(json_object_get(tensor, "active_percent")) -
                   30.0) < 1e-9);
  json_decref(first);
  json_decref(second);

  /* a new pool on the same store starts with an empty memo */
  struct store_pool *again;
  char *cause = NULL;
  assert_int_equal(store_pool_open(store_path, 1, &again, &cause), 0);
  db = store_pool_get(again);
  assert_null(store_pool_memo_get(db, key));
  store_pool_memo_put(db, key, "{}");
  assert_string_equal(store_pool_memo_get(db, key), "{}");
  store_pool_memo_put(db, key, "{\"later\":1}"); /* the first one stays */
  assert_string_equal(store_pool_memo_get(db, key), "{}");
  store_pool_put(again, db);
  store_pool_close(again);
  /* a connection of no pool has no memo */
  sqlite3 *plain;
  assert_int_equal(
      sqlite3_open_v2(store_path, &plain, SQLITE_OPEN_READONLY, NULL),
      SQLITE_OK);
  assert_int_equal(store_vtab_register(plain), SQLITE_OK);
  store_pool_memo_put(plain, key, "{}");
  assert_null(store_pool_memo_get(plain, key));
  assert_int_equal(query_device_profile(plain, profile_d, &first, &e), 0);
  json_decref(first);
  for (sqlite3_stmt *st; (st = sqlite3_next_stmt(plain, NULL));)
    sqlite3_finalize(st); /* the statements query_stmt() cached */
  assert_int_equal(sqlite3_close(plain), SQLITE_OK);
}

static void test_level(void **state) {
  /* the bucket nearest a pixel: between half a pixel and two */
  assert_int_equal(query_level(1), -1);
  assert_int_equal(query_level(31), -1);
  assert_int_equal(query_level(32), 0);
  assert_int_equal(query_level(127), 0);
  assert_int_equal(query_level(128), 1);
  assert_int_equal(query_level(511), 1);
  assert_int_equal(query_level(512), 2);
  assert_int_equal(query_level(INT64_MAX), LOD_MAX_LEVEL);
}

static void test_args(void **state) {
  json_t *a = query_args("{\"a\":12345678901234567890,\"b\":9007199254740993,"
                         "\"c\":9007199254740992,\"d\":-5,\"e\":1.5e3,"
                         "\"f\":[\"x\\\"1\",123456789012345678],\"g\":null}");
  assert_non_null(a);
  assert_string_equal(json_string_value(json_object_get(a, "a")),
                      "12345678901234567890");
  assert_string_equal(json_string_value(json_object_get(a, "b")),
                      "9007199254740993");
  assert_int_equal(json_integer_value(json_object_get(a, "c")),
                   9007199254740992LL);
  assert_int_equal(json_integer_value(json_object_get(a, "d")), -5);
  assert_true(json_real_value(json_object_get(a, "e")) == 1500.0);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(a, "f"), 0)), "x\"1");
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(a, "f"), 1)),
      "123456789012345678");
  json_decref(a);
  assert_null(query_args("[1,2]"));
  assert_null(query_args("{broken"));
  assert_null(query_args(NULL));
}

static void test_key(void **state) {
  int64_t t, l, ts;
  assert_int_equal(query_parse_key("3:0:1766072157039689700", &t, &l, &ts), 0);
  assert_int_equal(t, 3);
  assert_int_equal(l, 0);
  assert_int_equal(ts, 1766072157039689700LL);
  assert_int_equal(query_parse_key("3:0:-5", &t, &l, &ts), 0);
  assert_int_equal(ts, -5);
  assert_int_equal(query_parse_key("3:0", &t, &l, &ts), -EINVAL);
  assert_int_equal(query_parse_key("3:0:1:2", &t, &l, &ts), -EINVAL);
  assert_int_equal(query_parse_key("a:0:1", &t, &l, &ts), -EINVAL);
  assert_int_equal(query_parse_key("::", &t, &l, &ts), -EINVAL);
  assert_int_equal(query_parse_key("1:1:99999999999999999999", &t, &l, &ts),
                   -EINVAL);
}

static void test_search(void **state) {
  struct query_search s = {"SHO",    INT64_MIN, INT64_MAX, 2, 10,
                           "system", -1,        0,         0};
  struct query_err e;
  json_t *out;
  sqlite3 *db = store_pool_get(pool);
  assert_int_equal(query_search(db, &s, &out, &e), 0);
  assert_int_equal(json_integer_value(json_object_get(out, "total")), SHORT_N);
  json_t *items = json_object_get(out, "items");
  assert_int_equal(json_array_size(items), 10);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(items, 0), "start_ts")),
      "3000");
  json_decref(out);
  s.start = 2000;
  s.end = 2500; /* a window: counted, not taken from name_stat */
  s.page = 1;
  assert_int_equal(query_search(db, &s, &out, &e), 0);
  assert_int_equal(json_integer_value(json_object_get(out, "total")), 5);
  json_decref(out);
  store_pool_put(pool, db);
}

/* The total of one search, or the (negative) error. */
static int64_t search_total(sqlite3 *db, const char *q, int64_t offset,
                            json_t **out) {
  struct query_search s = {q,        INT64_MIN, INT64_MAX, 1, 10,
                           "system", -1,        offset,    0};
  struct query_err e;
  int rc = query_search(db, &s, out, &e);
  if (rc < 0) {
    assert_int_equal(e.status, 400);
    assert_non_null(strstr(e.detail, q));
    return rc;
  }
  return json_integer_value(json_object_get(*out, "total"));
}

static void test_search_terms(void **state) {
  static const struct {
    const char *q;
    int64_t total;
  } cases[] = {
      {"o", SHORT_N + 1},     {"o dur>1us", 1},      {"dur<=50ns", SHORT_N},
      {"name~^SH", SHORT_N},  {"pid:10 name~g$", 1}, {"pid:11", 0},
      {"tid:11 nc:0 instance:i-1 source:neuron_rt", SHORT_N + 1},
      {"dur>=1.5us", 1},      {"dur>1.5us", 0},      {"source:neuron_hw", 0},
  };
  sqlite3 *db = store_pool_get(pool);
  json_t *out;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t n = search_total(db, cases[i].q, 0, &out);
    if (n != cases[i].total)
      fail_msg("search '%s': %lld hits, want %lld", cases[i].q, (long long)n,
               (long long)cases[i].total);
    json_decref(out);
  }
  assert_int_equal(search_total(db, "short", SHORT_N - 5, &out), SHORT_N);
  json_t *items = json_object_get(out, "items");
  assert_int_equal(json_array_size(items), 5);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(items, 0), "start_ts")),
      "11500");
  json_t *t0 = json_array_get(json_object_get(out, "tracks"), 0);
  assert_int_equal(json_integer_value(json_object_get(t0, "count")), SHORT_N);
  json_decref(out);
  static const char *bad[] = {"dur>1x", "name~[", "pid:x", "dur=>1", "dur>"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(search_total(db, bad[i], 0, &out), -EINVAL);
  store_pool_put(pool, db);
}

/* buckets=3 over [2000, 3000): 334 ns buckets, the last cut at 3000. */
static void test_search_buckets(void **state) {
  struct query_search s = {"o", 2000, 3000, 1, 10, "system", -1, 0, 3};
  struct query_err e;
  json_t *out;
  sqlite3 *db = store_pool_get(pool);
  assert_int_equal(query_search(db, &s, &out, &e), 0);
  assert_string_equal(json_string_value(json_object_get(out, "bucket_ns")),
                      "334");
  json_t *tracks = json_object_get(out, "tracks");
  assert_int_equal(json_array_size(tracks), 1);
  json_t *b = json_object_get(json_array_get(tracks, 0), "buckets");
  assert_int_equal(json_array_size(b), 3);
  int64_t want[] = {4, 3, 3}; /* 2000..2300, 2400..2600, 2700..2900 */
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(json_integer_value(json_array_get(b, i)), want[i]);
  assert_int_equal(json_integer_value(json_object_get(out, "total")), 10);
  json_decref(out);
  s.end = INT64_MAX; /* no end: refused */
  assert_int_equal(query_search(db, &s, &out, &e), -EINVAL);
  assert_int_equal(e.status, 400);
  assert_non_null(strstr(e.detail, "'buckets'"));
  store_pool_put(pool, db);
}

static void test_range_summary(void **state) {
  struct query_window w = {&track_a, 1, 0, 1000000, 0, NULL};
  struct query_err e;
  json_t *out;
  sqlite3 *db = store_pool_get(pool);
  assert_int_equal(query_range_summary(db, &w, &out, &e), 0);
  json_t *rows_ = json_object_get(out, "rows");
  assert_int_equal(json_array_size(rows_), 2);
  json_t *r0 = json_array_get(rows_, 0); /* biggest total first */
  assert_string_equal(json_string_value(json_object_get(r0, "name")), "short");
  assert_int_equal(json_integer_value(json_object_get(r0, "count")), SHORT_N);
  assert_string_equal(json_string_value(json_object_get(r0, "total_ns")),
                      "5000");
  json_decref(out);
  w.start = 1000; /* clipped to the window */
  w.end = 2025;
  assert_int_equal(query_range_summary(db, &w, &out, &e), 0);
  r0 = json_array_get(json_object_get(out, "rows"), 0);
  assert_string_equal(json_string_value(json_object_get(r0, "name")), "long");
  assert_string_equal(json_string_value(json_object_get(r0, "total_ns")),
                      "500");
  json_decref(out);
  store_pool_put(pool, db);
}

/* Runs sql on the SQL endpoint: 0 with *out the parsed answer, or the
 * negative code with e filled. */
/* The guard's rules at the endpoint's deadline; the budget tests get a
 * minute, so that a slow build (sanitizers) meets the budget first. */
static int sql_run_within(const char *sql, int timeout_ms, json_t **out,
                          struct query_err *e) {
  struct sbuf b = {0};
  int rc = query_sql(store_path, sql, timeout_ms, &b, e);
  if (rc == 0) {
    *out = json_loadb(b.s, b.len, 0, NULL);
    assert_non_null(*out);
  } else {
    assert_int_equal(b.len, 0);
  }
  sbuf_free(&b);
  return rc;
}

static int sql_run(const char *sql, json_t **out, struct query_err *e) {
  return sql_run_within(sql, QUERY_SQL_TIMEOUT_MS, out, e);
}

static void test_sql_guard(void **state) {
  struct query_err e;
  json_t *out;
  assert_int_equal(
      sql_run("SELECT count(*) FROM slice WHERE track=1", &out, &e), 0);
  assert_int_equal(json_integer_value(json_array_get(
                       json_array_get(json_object_get(out, "rows"), 0), 0)),
                   SHORT_N + 1);
  assert_true(json_is_false(json_object_get(out, "truncated")));
  assert_null(json_object_get(out, "reason"));
  json_decref(out);
  assert_int_equal(sql_run("DELETE FROM slice", &out, &e), -EPERM);
  assert_int_equal(e.status, 403);
  assert_string_equal(e.detail, "DELETE is not allowed: the SQL endpoint "
                                "runs one read-only SELECT");
  assert_int_equal(sql_run("ATTACH DATABASE ':memory:' AS x", &out, &e),
                   -EPERM);
  assert_int_equal(sql_run("SELECT 1; DROP TABLE slice", &out, &e), -EINVAL);
  assert_int_equal(sql_run("  -- nothing\n", &out, &e), -EINVAL);
  assert_non_null(strstr(e.detail, "'query'"));
}

/* A refusal names the statement refused, not the step SQLite checked
 * first; the table-valued pragma functions are reads. */
static void test_sql_names(void **state) {
  struct query_err e;
  json_t *out;
  assert_int_equal(sql_run("/* x */ DROP TABLE slice", &out, &e), -EPERM);
  assert_string_equal(e.detail, "DROP is not allowed: the SQL endpoint runs "
                                "one read-only SELECT");
  assert_int_equal(sql_run("create index i on slice(dur)", &out, &e), -EPERM);
  assert_string_equal(e.detail, "CREATE is not allowed: the SQL endpoint "
                                "runs one read-only SELECT");
  assert_int_equal(sql_run("WITH x AS (SELECT 1) DELETE FROM slice", &out, &e),
                   -EPERM);
  assert_string_equal(e.detail, "DELETE is not allowed: the SQL endpoint "
                                "runs one read-only SELECT");
  assert_int_equal(sql_run("PRAGMA table_info(slice)", &out, &e), -EPERM);
  assert_string_equal(e.detail, "PRAGMA is not allowed: the SQL endpoint "
                                "runs one read-only SELECT");
  assert_int_equal(sql_run("SELECT name FROM pragma_table_info('slice') "
                           "ORDER BY cid",
                           &out, &e),
                   0);
  json_t *rows = json_object_get(out, "rows");
  assert_int_equal(json_array_size(rows), 9);
  assert_string_equal(
      json_string_value(json_array_get(json_array_get(rows, 7), 0)), "args");
  assert_string_equal(
      json_string_value(json_array_get(json_array_get(rows, 8), 0)), "flows");
  json_decref(out);
}

/* The budget counts the JSON sent, value by value: 6 MB of hex per row
 * fits 11 times in 64 MiB; a row never holds more than half of it. */
static void test_sql_budget(void **state) {
  struct query_err e;
  json_t *out;
  assert_int_equal(
      sql_run_within("SELECT zeroblob(3000000) FROM slice LIMIT 20", 60000, &out, &e), 0);
  assert_int_equal(json_array_size(json_object_get(out, "rows")), 11);
  assert_true(json_is_true(json_object_get(out, "truncated")));
  assert_string_equal(json_string_value(json_object_get(out, "reason")),
                      "the answer would be larger than 64 MiB of JSON: the "
                      "first 11 rows are shown");
  json_decref(out);
  assert_int_equal(
      sql_run_within("SELECT zeroblob(5000000), 1, 2, 3, 4, 5, 6, 7", 60000, &out, &e), 0);
  assert_int_equal(json_array_size(json_object_get(out, "rows")), 0);
  assert_true(json_is_true(json_object_get(out, "truncated")));
  assert_string_equal(json_string_value(json_object_get(out, "reason")),
                      "a value is larger than 4194304 bytes, the most one "
                      "value may hold when a row has 8 columns (64 MiB of "
                      "answer): the first 0 rows are shown");
  json_decref(out);
  /* control characters grow 6 times when escaped */
  assert_int_equal(
      sql_run_within("SELECT printf('%.*c', 4000000, char(1)) FROM slice LIMIT 5",
              60000, &out, &e),
      0);
  assert_int_equal(json_array_size(json_object_get(out, "rows")), 2);
  assert_true(json_is_true(json_object_get(out, "truncated")));
  json_decref(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_raw_straddle),
      cmocka_unit_test(test_raw_skips_ended),
      cmocka_unit_test(test_lod_level),
      cmocka_unit_test(test_raw_limit_falls_back),
      cmocka_unit_test(test_dense_reads_lod),
      cmocka_unit_test(test_lod_before_row),
      cmocka_unit_test(test_lod_runs),
      cmocka_unit_test(test_lod_block_bytes),
      cmocka_unit_test(test_names_in_memory),
      cmocka_unit_test(test_warm),
      cmocka_unit_test(test_query_runs),
      cmocka_unit_test(test_query_carried_row),
      cmocka_unit_test(test_counter_raw),
      cmocka_unit_test(test_counter_lod),
      cmocka_unit_test(test_counter_negative_start),
      cmocka_unit_test(test_extreme_windows),
      cmocka_unit_test(test_engine_memo),
      cmocka_unit_test(test_level),
      cmocka_unit_test(test_args),
      cmocka_unit_test(test_key),
      cmocka_unit_test(test_search),
      cmocka_unit_test(test_sql_names),
      cmocka_unit_test(test_sql_budget),
      cmocka_unit_test(test_search_terms),
      cmocka_unit_test(test_search_buckets),
      cmocka_unit_test(test_range_summary),
      cmocka_unit_test(test_sql_guard),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
