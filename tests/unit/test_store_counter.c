/* test_store_counter.c -- counter samples in packed blocks read back
 * through the virtual table `counter`: every value exactly as written
 * (integers, decimals, values only their bits keep, infinities, -0.0 as
 * SQLite keeps it), the scale each block chose, the same answers as a
 * plain table of the same rows for constraints of every kind, no sort for
 * the key order (forwards, and backwards within one series), no writes,
 * and clear errors for samples out of order, a track written in two runs
 * and a block that is not one. */
#include <errno.h>
#include <float.h>
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

#include "store.h"
#include "store_block.h"
#include "store_vtab.h"
#include "teststore.h"
#include "util.h"

#define SAMPLES 1000 /* per series of track 1: 16 blocks */

static char *tmp_path(const char *name) {
  return xasprintf("/tmp/nex-test-counter-%d-%s", (int)getpid(), name);
}

/* The value of sample i of series s of track 1: series 0 bytes (integers
 * that grow), 1 a percentage with two decimals, 2 a ratio only its bits
 * keep. */
static double value_of(int s, int i) {
  switch (s) {
  case 0:
    return 1e12 + 4096.0 * (i % 37);
  case 1:
    return (i % 10000) / 100.0;
  default:
    return 1.0 / (i + 3);
  }
}

/* Track 1: three series of SAMPLES samples (ts 1000 * i, every 100th
 * sample's time repeated by the next one), track 2: one series of 5.
 * Returns the store's path. */
static char *write_store(void) {
  char *path = tmp_path("ok.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("counter", "host_mem");
  int64_t t1 = store_writer_track(w, &t), t2 = store_writer_track(w, &t);
  for (int i = 0; i < SAMPLES; i++) {
    int64_t ts = 1000 * (int64_t)i - (i % 100 == 1 ? 1000 : 0);
    for (int s = 0; s < 3; s++)
      store_writer_counter(w, t1, s, ts, i + 1, value_of(s, i));
  }
  store_writer_track_stats(
      w, t1,
      &(struct store_track_stats){.event_count = SAMPLES, .lod_min_level = -1});
  for (int i = 0; i < 5; i++)
    store_writer_counter(w, t2, 0, 500 * i, i + 1, -i);
  store_writer_track_stats(
      w, t2,
      &(struct store_track_stats){.event_count = 5, .lod_min_level = -1});
  teststore_finish(w);
  return path;
}

/* A connection to path with an in-memory copy of counter as `ref`. */
static sqlite3 *open_with_ref(const char *path) {
  return teststore_open_ref(path, "counter",
                            "track INTEGER, series INTEGER, ts INTEGER, seq "
                            "INTEGER, value REAL");
}

static void test_values_as_written(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(store_vtab_register(db), SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT series, ts, seq, value FROM "
                                      "counter WHERE track = 1",
                                      -1, &st, NULL),
                   SQLITE_OK);
  int n[3] = {0};
  while (sqlite3_step(st) == SQLITE_ROW) {
    int s = sqlite3_column_int(st, 0), i = n[s]++;
    int64_t ts = 1000 * (int64_t)i - (i % 100 == 1 ? 1000 : 0);
    assert_int_equal(sqlite3_column_int64(st, 1), ts);
    assert_int_equal(sqlite3_column_int64(st, 2), i + 1);
    double v = sqlite3_column_double(st, 3), want = value_of(s, i);
    if (memcmp(&v, &want, sizeof v) != 0)
      fail_msg("series %d sample %d: %.17g, written %.17g", s, i, v, want);
  }
  sqlite3_finalize(st);
  assert_int_equal(n[0] + n[1] + n[2], 3 * SAMPLES);
  /* the scale each series' first block chose (the byte after n) */
  char *s =
      teststore_one(db, "SELECT group_concat(series || ':' || "
                        "hex(substr(data, 3, 1)), ',') FROM (SELECT * FROM "
                        "counter_block WHERE track = 1 AND ts0 = 0 ORDER BY "
                        "series)");
  assert_string_equal(s, "0:00,1:04,2:0E");
  free(s);
  /* 16 blocks a series; far smaller than 8-byte values alone */
  s = teststore_one(db, "SELECT count(*) || ' ' || (sum(length(data)) < 3 * "
                        "8 * 1000) FROM counter_block WHERE track = 1");
  char *want = xasprintf(
      "%d 1", 3 * ((SAMPLES + STORE_CBLOCK_ROWS - 1) / STORE_CBLOCK_ROWS));
  assert_string_equal(s, want);
  free(want);
  free(s);
  s = teststore_one(
      db, "SELECT group_concat(value, ',') FROM counter WHERE track = 2");
  assert_string_equal(s, "0.0,-1.0,-2.0,-3.0,-4.0");
  free(s);
  teststore_close(db, path);
}

/* Values at the edges of the codec come back bit for bit (-0.0 as 0.0). */
static void test_codec(void **state) {
  (void)state;
  const double v[] = {0.0,      -0.0,      1.5,       -2.25,
                      0.1,      99.999999, 1e17,      -9.007199254740993e15,
                      INFINITY, -INFINITY, DBL_MAX,   DBL_MIN,
                      5e-324,   1.0 / 3.0, 123456.78, 9223372036854775807.0,
                      12.345,   -1e-6,     1e6,       4e15};
  size_t nv = sizeof v / sizeof *v;
  for (size_t k = 0; k <= nv; k++) {
    struct store_block b = {0}, d = {0};
    /* each value alone (its scale), then all of them in one block */
    for (size_t i = k < nv ? k : 0; i < (k < nv ? k + 1 : nv); i++)
      store_block_add_sample(&b, 10 + 7 * (int64_t)i, 3 * (int64_t)i, v[i]);
    size_t len;
    unsigned char *out = store_block_encode_counter(&b, &len);
    assert_int_equal(store_block_decode_counter(&d, b.row[0].ts, out, len), 0);
    assert_int_equal(d.n, b.n);
    for (int i = 0; i < b.n; i++) {
      double want = b.row[i].value == 0 ? 0.0 : b.row[i].value;
      assert_int_equal(d.row[i].ts, b.row[i].ts);
      assert_int_equal(d.row[i].id, b.row[i].id);
      if (memcmp(&d.row[i].value, &want, sizeof want) != 0)
        fail_msg("%.17g came back as %.17g", want, d.row[i].value);
    }
    free(out);
    store_block_free(&b);
    store_block_free(&d);
  }
}

/* Bytes that are not a counter block give -EINVAL.  Varints are zigzag:
 * 2v stands for v.  One sample: n "\x02", scale "\x00", the three column
 * lengths, then ts, seq, value. */
static void test_decode_rejects(void **state) {
  (void)state;
  struct {
    const char *data;
    size_t len;
  } bad[] = {
      {"", 0},                                     /* nothing */
      {"\x00\x00\x02\x02\x02\x00\x02\x02", 8},     /* n = 0 */
      {"\x82\x04\x00", 3},                         /* n = 257 */
      {"\x02\x10\x02\x02\x02\x00\x02\x02", 8},     /* scale 8 */
      {"\x02\x01\x02\x02\x02\x00\x02\x02", 8},     /* scale -1 */
      {"\x02\x00\x02\x02\x04\x00\x02\x02", 8},     /* value column too long */
      {"\x02\x00\x02\x02\x02\x00\x02\x02\x02", 9}, /* a byte after it */
      {"\x02\x00\x02\x02\x02\x00\x02\x82", 8},     /* a varint cut short */
      {"\x02\x00\x02\x02", 4},                     /* no lengths */
      {"\x04\x00\x02\x02\x02\x00\x02\x02", 8},     /* n = 2, one value each */
  };
  struct store_block b = {0};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    if (store_block_decode_counter(&b, 0, bad[k].data, bad[k].len) != -EINVAL)
      fail_msg("bad block %zu decoded", k);
  assert_int_equal(
      store_block_decode_counter(&b, 5, "\x02\x00\x02\x02\x02\x00\x02\x06", 8),
      0);
  assert_int_equal(b.n, 1);
  assert_int_equal(b.row[0].ts, 5);
  assert_int_equal(b.row[0].id, 1);
  assert_true(b.row[0].value == 3.0);
  /* two samples, each column one value (lengths negated): deltas of 1,
   * 1 and 3 */
  assert_int_equal(
      store_block_decode_counter(&b, 5, "\x04\x00\x01\x01\x01\x02\x02\x06", 8),
      0);
  assert_int_equal(b.n, 2);
  assert_int_equal(b.row[1].ts, 7);
  assert_int_equal(b.row[1].id, 2);
  assert_true(b.row[1].value == 6.0);
  store_block_free(&b);
}

static void test_constraints_as_a_table(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  const char *const where[] = {
      "track = 1",
      "track = 2 AND series = 0",
      "track = 1 AND series = 1 AND ts >= 255000 AND ts < 513000",
      "ts > 99000 AND ts <= 101000",
      "ts = 0",
      "ts = 100000",
      "track = 1 AND series = 2 AND ts = 100000 AND seq = 102",
      "track = 1 AND seq = 500",
      "seq = 3",
      "track > 1",
      "series > 0 AND ts < 3000",
      "series IN (2, 0) AND ts BETWEEN 255000 AND 257000",
      "ts > 1500.5 AND ts < 3000.25",
      "track = 1.0 AND series = 0.5",
      "ts > NULL",
      "ts < '3000' AND track = 1 AND series = 0",
      "ts > 'abc'",
      "ts >= 9.3e18",
      "value > 50 AND track = 1",
  };
  teststore_same_as_ref(db,
                        "SELECT count(*) || ':' || coalesce(group_concat(x, "
                        "','), '') FROM (SELECT track || '/' || series || '/' "
                        "|| ts || '/' || seq || '/' || value AS x FROM %s "
                        "WHERE %s ORDER BY track, series, ts, seq)",
                        "counter", where, sizeof where / sizeof *where);
  /* the latest samples before a time, as the window query asks for one */
  const char *const back[] = {"track = 1 AND series = 1 AND ts < 513000",
                              "track = 1 AND series = 0 AND ts < 100000",
                              "track = 2 AND series = 0 AND ts < 0"};
  teststore_same_as_ref(db,
                        "SELECT coalesce(group_concat(x, ','), '') FROM "
                        "(SELECT ts || '/' || seq || '/' || value AS x FROM %s "
                        "WHERE %s ORDER BY ts DESC, seq DESC LIMIT 300)",
                        "counter", back, sizeof back / sizeof *back);
  teststore_close(db, path);
}

static void test_order_and_writes(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  const char *sorted[] = {
      "SELECT * FROM counter ORDER BY track, series, ts, seq",
      "SELECT ts, value FROM counter WHERE track = 1 AND series = 2 AND "
      "ts < 5000 ORDER BY ts DESC, seq DESC LIMIT 1",
      "SELECT ts, value FROM counter WHERE track = 1 AND series = 2 AND "
      "ts >= 5000 AND ts < 9000 ORDER BY ts, seq LIMIT 10",
  };
  for (size_t k = 0; k < sizeof sorted / sizeof *sorted; k++)
    if (teststore_sorts(db, sorted[k]))
      fail_msg("%s sorts", sorted[k]);
  assert_true(teststore_sorts(db, "SELECT * FROM counter ORDER BY ts"));
  const char *const writes[] = {"DELETE FROM counter",
                                "UPDATE counter SET value = 0",
                                "INSERT INTO counter VALUES (1, 0, 1, 1, 1.0)"};
  assert_true(teststore_read_only(db, writes, 3));
  /* a block that is not one: an error naming it, not a crash */
  char *msg = teststore_corrupt(
      db, "UPDATE counter_block SET data = x'00ff' WHERE track = 2",
      "SELECT * FROM counter WHERE track = 2");
  assert_non_null(msg);
  assert_non_null(strstr(msg, "counter_block of track 2 series 0: not a "
                              "block"));
  free(msg);
  teststore_close(db, path);
}

/* Writes samples (series, ts, seq) of track 1, and with `other` a sample
 * of track 2 after the first one, into a store that must not complete;
 * returns the cause. */
static char *write_bad(const int64_t *s, int n, int other) {
  char *path = tmp_path("bad.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("counter", "host_mem");
  int64_t t1 = store_writer_track(w, &t), t2 = store_writer_track(w, &t);
  for (int i = 0; i < n; i++) {
    store_writer_counter(w, t1, (int)s[3 * i], s[3 * i + 1], s[3 * i + 2], 1);
    if (i == 0 && other)
      store_writer_counter(w, t2, 0, 5, 1, 1);
  }
  char *cause = NULL;
  assert_int_equal(store_writer_finish(w, &cause), -EIO);
  assert_int_not_equal(access(path, F_OK), 0);
  free(path);
  return cause;
}

static void test_out_of_order(void **state) {
  (void)state;
  int64_t late[] = {0, 10, 1, 1, 10, 1, 0, 5, 2};
  char *cause = write_bad(late, 3, 0);
  assert_non_null(strstr(cause, "(track 1, series 0, ts 5, seq 2) comes "
                                "after a later one"));
  free(cause);
  int64_t twice[] = {0, 10, 1, 0, 10, 1};
  cause = write_bad(twice, 2, 0);
  assert_non_null(strstr(cause, "ts 10, seq 1) comes after a later one or "
                                "is written twice"));
  free(cause);
  int64_t again[] = {0, 10, 1, 0, 20, 2};
  cause = write_bad(again, 2, 1);
  assert_non_null(strstr(cause, "counter track 1 written again after another "
                                "track"));
  free(cause);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_as_written),
      cmocka_unit_test(test_codec),
      cmocka_unit_test(test_decode_rejects),
      cmocka_unit_test(test_constraints_as_a_table),
      cmocka_unit_test(test_order_and_writes),
      cmocka_unit_test(test_out_of_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
