/* test_store_vtab.c -- slices in packed blocks read back through the
 * virtual table `slice`: every row as written (args byte for byte, NULL
 * and empty ones, compressed blocks), the same answers as a plain table of
 * the same rows for constraints of every kind (integers, reals, NULL,
 * text, ranges that cross block boundaries), no sort for the key order
 * (forwards, and backwards within one lane),
 * no writes, and clear errors for slices out of order, a slice written
 * twice and a block that is not one. */
#include <errno.h>
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
#include "store_argset.h"
#include "store_block.h"
#include "store_vtab.h"
#include "teststore.h"
#include "testutil.h"
#include "util.h"

#define ROWS 3000 /* per lane of track 1: three blocks */

static char *tmp_path(const char *name) {
  return xasprintf("/tmp/nex-test-vtab-%d-%s", (int)getpid(), name);
}

/* The args of slice i: NULL, empty, short, or long enough to compress. */
static char *args_of(int i, size_t *len) {
  switch (i % 4) {
  case 0:
    *len = 0;
    return NULL;
  case 1:
    *len = 0;
    return xstrdup("");
  case 2: {
    char *s = xasprintf("{\"i\":%d}", i);
    *len = strlen(s);
    return s;
  }
  default:
    break;
  }
  char *s = xasprintf("{\"model_name\":\"/tmp/model_%d.neff\",\"exec\":%d,"
                      "\"text\":\"\\u00e9 \\\"q\\\"\"}",
                      i % 3, i);
  *len = strlen(s);
  return s;
}

/* Track 1: lanes 0 and 1 with ROWS slices each (ts 100 * i + lane, id
 * i * 2 + lane, some pairs sharing a start on lane 1); track 2:
 * 5 slices on lane 0.  Returns the store's path. */
static char *write_store(void) {
  char *path = tmp_path("ok.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t t1 = store_writer_track(w, &t), t2 = store_writer_track(w, &t);
  int64_t name = store_writer_intern(w, "op"),
          grp = store_writer_intern(w, "g");
  for (int i = 0; i < ROWS; i++)
    for (int lane = 0; lane < 2; lane++) {
      size_t len = 0;
      char *a = args_of(i, &len);
      /* lane 1 repeats a start now and then, once across blocks */
      int tie = lane && i > 0 && (i % 500 == 1 || i % STORE_BLOCK_ROWS == 0);
      int64_t ts = 100 * (int64_t)i + lane - (tie ? 100 : 0);
      store_writer_slice(w, t1, lane, ts, i * 2 + lane, 50 + i % 7, name,
                         i % 2 ? grp : 0, a, len);
      free(a);
    }
  store_writer_track_stats(w, t1,
                           &(struct store_track_stats){.lanes = 2,
                                                       .event_count = 2 * ROWS,
                                                       .lod_min_level = -1});
  for (int i = 0; i < 5; i++)
    store_writer_slice(w, t2, 0, 1000 * i, 7, 10, name, 0, "{}", 2);
  store_writer_track_stats(w, t2,
                           &(struct store_track_stats){.lanes = 1,
                                                       .event_count = 5,
                                                       .lod_min_level = -1});
  teststore_finish(w);
  return path;
}

/* A connection to path with an in-memory copy of slice as `ref`. */
static sqlite3 *open_with_ref(const char *path) {
  return teststore_open_ref(path, "slice",
                            "track INTEGER, lane INTEGER, ts INTEGER, id "
                            "INTEGER, dur INTEGER, name INTEGER, grp INTEGER, "
                            "args TEXT, flows TEXT");
}

static void test_rows_as_written(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  char *s =
      teststore_one(db, "SELECT count(*) || ' ' || sum(n) FROM slice_block");
  /* the two lanes of track 1 in full blocks and one short one, track 2 */
  char *want = xasprintf(
      "%d 6005", 2 * ((ROWS + STORE_BLOCK_ROWS - 1) / STORE_BLOCK_ROWS) + 1);
  assert_string_equal(s, want);
  free(want);
  free(s);
  s = teststore_one(
      db, "SELECT count(*) || ' ' || sum(ts) || ' ' || sum(id) || ' ' || "
          "sum(dur) || ' ' || count(grp) || ' ' || count(args) || ' ' || "
          "sum(length(args)) FROM slice WHERE track = 1");
  want =
      teststore_one(db, "SELECT count(*) || ' ' || sum(ts) || ' ' || sum(id) "
                        "|| ' ' || sum(dur) || ' ' || count(grp) || ' ' || "
                        "count(args) || ' ' || sum(length(args)) FROM ref "
                        "WHERE track = 1");
  assert_string_equal(s, want);
  free(s);
  free(want);
  /* args byte for byte: NULL, empty and long ones */
  for (int i = 0; i < 8; i++) {
    size_t len;
    char *a = args_of(i, &len);
    char *q = xasprintf("SELECT coalesce(args, 'NULL') FROM slice WHERE track "
                        "= 1 AND lane = 0 AND ts = %d",
                        100 * i);
    s = teststore_one(db, q);
    assert_string_equal(s, a ? a : "NULL");
    free(s);
    free(q);
    free(a);
  }
  /* the args of track 1 were compressed (flag 2: zstd), track 2's 10 bytes
   * not;
   * blocks hold fewer bytes than the args text alone */
  s = teststore_one(
      db, "SELECT group_concat(x) FROM (SELECT DISTINCT track || ':' || "
          "hex(substr(args, 1, 1)) AS x FROM slice_block b JOIN slice_args "
          "a ON a.block = b.id ORDER BY 1)");
  assert_string_equal(s, "1:02,2:00");
  free(s);
  s = teststore_one(
      db, "SELECT (SELECT sum(length(data)) FROM slice_block) + (SELECT "
          "sum(length(args)) FROM slice_args) < (SELECT sum(length(args)) "
          "FROM slice)");
  assert_string_equal(s, "1");
  free(s);
  /* the args sets, in the order first written (the first blocks of track
   * 1, then track 2's): #, $ stand for the marks of an integer and a text */
  s = teststore_one(db, "SELECT group_concat(replace(replace(CAST(tpl AS "
                        "TEXT), char(1), '#'), char(3), '$'), ' ') FROM "
                        "(SELECT tpl FROM arg_set ORDER BY id)");
  assert_string_equal(s, " {\"i\":#} {\"model_name\":\"$\",\"exec\":#,"
                         "\"text\":\"$\"} {}");
  free(s);
  teststore_close(db, path);
}

static void test_constraints_as_a_table(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  const char *const where[] = {
      "track = 1",
      "track = 2 AND lane = 0",
      "track = 1 AND lane = 1 AND ts >= 102399 AND ts < 204801",
      "ts > 102300 AND ts <= 102500",
      "ts = 0",
      "ts = 49901",
      "ts = 102301",
      "ts >= 102301 AND ts < 102302",
      "track = 1 AND lane = 1 AND ts > 102301",
      "track = 1 AND lane = 1 AND ts = 49901 AND id = 999",
      "track = 1 AND id = 4001",
      "id = 7",
      "track > 1",
      "track >= 1 AND track < 2 AND lane > 0",
      "lane < 1 AND ts < 300",
      "lane <= 0 AND ts >= 299999",
      "ts > 1500.5 AND ts < 1700.25",
      "ts >= 1500.0 AND ts <= 1600.0",
      "track = 1.0 AND lane = 0.5",
      "ts > NULL",
      "track = NULL",
      "ts < '300'",
      "track = '1' AND lane = '0' AND ts < 1000",
      "ts > 9223372036854775807",
      "ts < -9223372036854775808",
      "ts > 1e300",
      "ts < -1e300",
      "ts = 1500.5",
      "ts = 49901.0",
      "ts >= 102300.5 AND ts <= 102301.0",
      "ts > 49901.0 AND ts < 102301.0",
      "ts >= 9.3e18",
      "ts < 9.3e18 AND ts > -9.3e18 AND lane = 1",
      "ts <= -9223372036854775808.0",
      "ts < 'abc' AND track = 2",
      "ts > 'abc'",
      "ts >= x'00'",
      "ts <= x'00' AND lane = 0 AND track = 2",
      "track < 1.5 AND lane >= 0.5",
      "track IN (2, 1) AND lane = 0 AND ts < 500",
      "lane IN (1) AND ts BETWEEN 49800 AND 50000",
  };
  /* the same, read backwards: the latest slices before a time */
  const char *const back[] = {"track = 1 AND lane = 1 AND ts <= 102301",
                              "track = 1 AND lane = 0 AND ts < 250000.5",
                              "track = 2 AND lane = 0",
                              "track = 1 AND lane = 1"};
  teststore_same_as_ref(db,
                        "SELECT group_concat(x, ',') FROM (SELECT ts || '/' "
                        "|| id AS x FROM %s WHERE %s ORDER BY ts DESC, id "
                        "DESC LIMIT 1030)",
                        "slice", back, sizeof back / sizeof *back);
  teststore_same_as_ref(db,
                        "SELECT count(*) || ':' || coalesce(group_concat(x, "
                        "','), '') FROM (SELECT track || '/' || lane || '/' "
                        "|| ts || '/' || id || '/' || coalesce(args, '-') AS "
                        "x FROM %s WHERE %s ORDER BY track, lane, ts, id)",
                        "slice", where, sizeof where / sizeof *where);
  teststore_close(db, path);
}

static void test_order_and_writes(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  const char *sorted[] = {
      "SELECT * FROM slice ORDER BY track, lane, ts, id",
      "SELECT * FROM slice WHERE track = 1 AND lane = 1 ORDER BY ts",
      "SELECT * FROM slice WHERE track = 1 ORDER BY lane, ts",
      "SELECT ts FROM slice WHERE track = 1 AND lane = 1 AND ts <= 5 "
      "ORDER BY ts DESC LIMIT 1",
  };
  for (size_t k = 0; k < sizeof sorted / sizeof *sorted; k++)
    if (teststore_sorts(db, sorted[k]))
      fail_msg("%s sorts", sorted[k]);
  const char *unsorted[] = {
      "SELECT * FROM slice ORDER BY ts", /* not the blocks' order */
      "SELECT * FROM slice WHERE track = 1 ORDER BY lane DESC, ts DESC",
  };
  for (size_t k = 0; k < sizeof unsorted / sizeof *unsorted; k++)
    assert_true(teststore_sorts(db, unsorted[k]));
  const char *const writes[] = {
      "DELETE FROM slice", "UPDATE slice SET dur = 0",
      "INSERT INTO slice VALUES (1, 0, 1, 1, 1, 1, 1, '')"};
  assert_true(teststore_read_only(db, writes, 3));
  /* a block that is not one: an error naming it, not a crash */
  char *msg = teststore_corrupt(
      db, "UPDATE slice_block SET data = x'00ff' WHERE track = 2",
      "SELECT * FROM slice WHERE track = 2");
  assert_non_null(msg);
  assert_non_null(strstr(msg, "slice_block of track 2 lane 0: not a block"));
  free(msg);
  teststore_close(db, path);
}

/* Writes the slices (lane 0 of one track, in the given order: ts, id)
 * into a store that must not complete; returns the cause. */
static char *write_bad(const int64_t *ts_id, int n, int flush_after) {
  char *path = tmp_path("bad.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t track = store_writer_track(w, &t);
  int64_t name = store_writer_intern(w, "op");
  for (int i = 0; i < n; i++) {
    store_writer_slice(w, track, 0, ts_id[2 * i], ts_id[2 * i + 1], 1, name, 0,
                       NULL, 0);
    if (i == flush_after)
      store_writer_track_stats(
          w, track, &(struct store_track_stats){.lod_min_level = -1});
  }
  char *cause = NULL;
  assert_int_equal(store_writer_finish(w, &cause), -EIO);
  assert_int_not_equal(access(path, F_OK), 0);
  free(path);
  return cause;
}

static void test_out_of_order(void **state) {
  (void)state;
  /* within an open block any order is sorted */
  char *path = tmp_path("sorted.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t track = store_writer_track(w, &t);
  for (int i = 5; i > 0; i--)
    store_writer_slice(w, track, 0, i, i, 1, store_writer_intern(w, "op"), 0,
                       NULL, 0);
  teststore_finish(w);
  sqlite3 *db = open_with_ref(path);
  char *s = teststore_one(db, "SELECT group_concat(ts) FROM slice");
  assert_string_equal(s, "1,2,3,4,5");
  free(s);
  teststore_close(db, path);
  /* before a block already written, or twice: the store fails */
  int64_t late[] = {10, 1, 20, 2, 15, 3};
  char *cause = write_bad(late, 3, 1);
  assert_non_null(strstr(cause, "ts 15, id 3) comes after a later one"));
  free(cause);
  int64_t twice[] = {10, 1, 10, 1};
  cause = write_bad(twice, 2, -1);
  assert_non_null(strstr(cause, "ts 10, id 1) written twice"));
  free(cause);
}

/* Blocks that are not blocks decode to an error (never past their bytes).
 * Varints are zigzag: 2v stands for v.  One row's data is "\x02" (n = 1),
 * the lengths of its six columns ("\x02": 1 byte each), then ts, dur, id,
 * name, grp and args set (0 NULL, 1 none: the text whole, k + 1 set k),
 * then the flows part (nothing, or the row's count and its ids).  The args
 * blob: flags, then the integers' length, the integers and the texts (each
 * a length and the bytes). */
#define HEAD "\x02\x02\x02\x02\x02\x02\x02"
#define ALL_FLOWS (STORE_BLOCK_ALL | STORE_BLOCK_FLOWS)
static void test_decode_rejects(void **state) {
  (void)state;
  struct store_block b = {0};
  struct {
    const char *data, *args;
    size_t len, args_len;
  } bad[] = {
      {"", "\x00", 0, 1},              /* no bytes */
      {"\x00", "\x00", 1, 1},          /* no rows */
      {HEAD "\x00\x00", "\x00", 9, 1}, /* columns cut short */
      {"\x02\x02\x02\x02\x02\x02\x14\x00\x00", "\x00", 9,
       1}, /* a length past the end */
      {HEAD "\x00\x00\x00\x00\x00\x02\x02", "\x00", 14, 1}, /* a count, no id */
      {HEAD "\x00\x84\x00\x00\x00\x02", "\x00", 13,
       1},                                    /* a varint past its column */
      {"\xff\xff\xff\xff\x0f", "\x00", 5, 1}, /* too many rows */
      {HEAD "\x00\x00\x00\x00\x00\x08", "\x00{}", 13,
       3}, /* a negative length */
      {HEAD "\x00\x00\x00\x00\x00\x06", "\x01{}", 13, 3}, /* zlib: layout 9 */
      {HEAD "\x00\x00\x00\x00\x00\x06", "\x03{}", 13, 3}, /* unknown flag */
      {HEAD "\x00\x00\x00\x00\x00\x06", "\x02\x04xx", 13, 4}, /* no zstd */
      {HEAD "\x00\x00\x00\x00\x00\x06", "", 13, 0},           /* no flags */
      {HEAD "\x00\x00\x00\x00\x00\x02\x02\x02\x00", "\x00", 16,
       1}, /* bytes after the flows */
      {HEAD "\x00\x00\x00\x00\x00\x02\x04\x02", "\x00", 15,
       1}, /* two flows, one id */
      {HEAD "\x00\x00\x00\x00\x00\x02\x01", "\x00", 14, 1}, /* count -1 */
      /* args of 2^55 - 1 bytes claimed, none there: refused before any
       * allocation (it aborted on one of 2^55 bytes) */
      {"\x02\x02\x02\x02\x02\x02\x12\x00\x00\x00\x00\x00"
       "\x80\x80\x80\x80\x80\x80\x80\x80\x01",
       "\x00", 21, 1},
      /* 16 - 19: a text past the end, integers past the end, a byte left
       * over, set 1 where no set can be read */
      {HEAD "\x00\x00\x00\x00\x00\x02", "\x00\x00\x0a{}", 13, 5},
      {HEAD "\x00\x00\x00\x00\x00\x02", "\x00\x0a{}", 13, 4},
      {HEAD "\x00\x00\x00\x00\x00\x02", "\x00\x00\x04{}x", 13, 6},
      {HEAD "\x00\x00\x00\x00\x00\x04", "\x00\x00", 13, 2},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
    if (store_block_decode(&b, 0, bad[k].data, bad[k].len, bad[k].args,
                           bad[k].args_len, ALL_FLOWS) != -EINVAL)
      fail_msg("case %zu decodes", k);
  /* the columns not read are not checked: ts alone, all but args, all but
   * the flows */
  assert_int_equal(
      store_block_decode(&b, 5, bad[5].data, 13, NULL, 0, STORE_BLOCK_TS), 0);
  assert_int_equal(b.n, 1);
  assert_int_equal(b.row[0].ts, 5);
  assert_int_equal(b.row[0].args_len, -1);
  assert_int_equal(b.row[0].n_flows, 0);
  assert_int_equal(store_block_decode(&b, 5, bad[7].data, 13, NULL, 0,
                                      STORE_BLOCK_ALL & ~STORE_BLOCK_ARGS),
                   0);
  assert_int_equal(store_block_decode(&b, 5, bad[16].data, 13, "\x00\x00\x04{}",
                                      5, STORE_BLOCK_ALL),
                   0);
  assert_int_equal(b.row[0].args_len, 2);
  assert_memory_equal(b.args + b.row[0].args_off, "{}", 2);
  /* args asked for but no args blob (a damaged store's NULL column): the
   * rows have none, not lengths into nothing */
  assert_int_equal(
      store_block_decode(&b, 5, bad[9].data, 13, NULL, 0, STORE_BLOCK_ALL), 0);
  assert_int_equal(b.row[0].args_len, -1);
  assert_int_equal(store_block_decode(&b, 5, bad[4].data, 14, "\x00\x00\x00", 3,
                                      STORE_BLOCK_ALL),
                   0);
  assert_int_equal(b.row[0].args_len, 0);
  assert_int_equal(b.row[0].n_flows, 0);
  /* flows 5 and 6: a count of 2, then 5 and 6 - 5 */
  assert_int_equal(store_block_decode(&b, 5,
                                      HEAD "\x00\x00\x00\x00\x00\x02\x04\x0a"
                                           "\x02",
                                      16, "\x00\x00\x00", 3, ALL_FLOWS),
                   0);
  assert_int_equal(b.row[0].n_flows, 2);
  assert_int_equal(b.flows[b.row[0].flows_off], 5);
  assert_int_equal(b.flows[b.row[0].flows_off + 1], 6);
  store_block_free(&b);
}

/* A column that holds one value for every slice of a block is written
 * once, its length negated; the decoder gives every row that value, and
 * refuses such a column of more or less than one varint. */
static void test_same_columns(void **state) {
  (void)state;
  struct store_block b = {0};
  for (int i = 0; i < 3; i++)
    store_block_add(&b, 100 + 10 * i, 7 + i, 5, 3, 0, "{}", 2, NULL, 0);
  struct store_block_enc e;
  store_block_enc_init(&e);
  size_t len, at;
  unsigned char *out = store_block_encode(&b, &e, &len, &at);
  /* n = 3; ts (0, 10, 10) and id (7, 1, 1) in full, dur, name, grp and
   * the args set (set 1, "{}": 2) once: zigzag 3 bytes = 6, -1 byte = 1 */
  assert_memory_equal(out, "\x06\x06\x01\x06\x01\x01\x01", 7);
  assert_int_equal(at, 7 + 3 + 1 + 3 + 1 + 1 + 1);
  assert_int_equal(out[at - 1], 4);
  struct store_block d = {.argset = store_argsets_get, .argset_ud = e.sets};
  assert_int_equal(
      store_block_decode(&d, 100, out, at, out + at, len - at, STORE_BLOCK_ALL),
      0);
  assert_int_equal(d.n, 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(d.row[i].ts, 100 + 10 * i);
    assert_int_equal(d.row[i].id, 7 + i);
    assert_int_equal(d.row[i].dur, 5);
    assert_int_equal(d.row[i].name, 3);
    assert_int_equal(d.row[i].grp, 0);
    assert_int_equal(d.row[i].args_len, 2);
  }
  free(out);
  /* n = 2, dur one value of one byte (1): both rows 1 */
  assert_int_equal(store_block_decode(&d, 0,
                                      "\x04\x04\x01\x04\x04\x04\x04"
                                      "\x00\x02\x02\x02\x02\x02\x02\x02"
                                      "\x02\x02\x00\x00",
                                      18, NULL, 0, STORE_BLOCK_ALL),
                   0);
  assert_int_equal(d.row[1].dur, 1);
  assert_int_equal(d.row[1].ts, 1);
  /* the same with two varints where one is said, and a length of -2^63 */
  assert_int_equal(store_block_decode(&d, 0,
                                      "\x04\x04\x03\x04\x04\x04\x04"
                                      "\x00\x02\x02\x02\x02\x02\x02\x02"
                                      "\x02\x02\x00\x00",
                                      19, NULL, 0, STORE_BLOCK_ALL),
                   -EINVAL);
  assert_int_equal(store_block_decode(&d, 0,
                                      "\x04\xff\xff\xff\xff\xff\xff\xff"
                                      "\xff\xff\x01\x00\x00\x00\x00\x00",
                                      16, NULL, 0, STORE_BLOCK_ALL),
                   -EINVAL);
  store_block_enc_free(&e);
  store_block_free(&b);
  store_block_free(&d);
}

/* The flows written with a slice come back in its block, ascending and
 * each once, as the `flows` column; slices without any have NULL, and a
 * block with none writes no flows part. */
static void test_flows(void **state) {
  (void)state;
  char *path = tmp_path("flows.db");
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t t1 = store_writer_track(w, &t), t2 = store_writer_track(w, &t);
  int64_t name = store_writer_intern(w, "op");
  const int64_t big = INT64_MAX - 3;
  for (int i = 0; i < 600; i++) {
    int64_t f[3] = {1000 - i, big, 1000 - i};
    store_writer_slice_flows(w, t1, 0, 10 * (int64_t)i, i, 5, name, 0, NULL, 0,
                             f, i % 4);
  }
  store_writer_slice(w, t2, 0, 0, 1, 5, name, 0, NULL, 0);
  store_writer_track_stats(w, t1,
                           &(struct store_track_stats){.lanes = 1,
                                                       .event_count = 600,
                                                       .lod_min_level = -1});
  store_writer_track_stats(w, t2,
                           &(struct store_track_stats){.lanes = 1,
                                                       .event_count = 1,
                                                       .lod_min_level = -1});
  teststore_finish(w);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(store_vtab_register(db), SQLITE_OK);
  char *s =
      teststore_one(db, "SELECT group_concat(coalesce(flows, '-'), ' ') FROM "
                        "(SELECT flows FROM slice WHERE track = 1 AND id < 4 "
                        "ORDER BY id)");
  char *want = xasprintf("- [999] [998,%lld] [997,%lld]", (long long)big,
                         (long long)big);
  assert_string_equal(s, want);
  free(want);
  free(s);
  s = teststore_one(
      db, "SELECT count(flows) || ' ' || sum(json_array_length(flows)) "
          "|| ' ' || sum(json_extract(flows, '$[0]')) FROM slice WHERE "
          "track = 1");
  /* 450 slices with flows: 150 of one, 300 of two (the third of i % 4 ==
   * 3 repeats the first); their first ids are 1000 - i */
  int64_t sum = 0;
  for (int i = 0; i < 600; i++)
    sum += i % 4 ? 1000 - i : 0;
  want = xasprintf("450 750 %lld", (long long)sum);
  assert_string_equal(s, want);
  free(want);
  free(s);
  s = teststore_one(db,
                    "SELECT count(*) || ' ' || count(flows) FROM slice WHERE "
                    "track = 2");
  assert_string_equal(s, "1 0");
  free(s);
  /* no slice has args: no block has an args row */
  s = teststore_one(db, "SELECT count(*) FROM slice_args");
  assert_string_equal(s, "0");
  free(s);
  teststore_close(db, path);
}

/* The fuzz target's kept inputs (tests/data/regress/store-*): a block with
 * flows, args asked for without a blob, args lengths claiming 2^55
 * bytes, a block whose every args is NULL (encoded again without an args
 * part), args of one set without values (the encoder's integers were no
 * buffer at all: a NULL to memcpy), a block whose first set read has no
 * literal bytes (its templates' buffer was none either), a row of set -1
 * (read as NULL args, then written back as NULL: not the same block);
 * each decodes to an error or to what its encoding gives back. */
static void test_regress_inputs(void **state) {
  (void)state;
  assert_int_equal(testutil_replay("tests/data/regress", "store-"), 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_as_written),
      cmocka_unit_test(test_constraints_as_a_table),
      cmocka_unit_test(test_order_and_writes),
      cmocka_unit_test(test_out_of_order),
      cmocka_unit_test(test_decode_rejects),
      cmocka_unit_test(test_same_columns),
      cmocka_unit_test(test_flows),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
