/* test_store_dep.c -- instruction dependencies in packed blocks
 * (store_deps.c) read back through the virtual tables `inst_dep` (seen
 * from the dependents) and `inst_dep_rev` (from the dependencies): the
 * rows as written, the same answers as a plain table of the same rows for
 * constraints of every kind (an instruction whose dependencies fill five
 * blocks, dependencies not found), no sort in key order, no writes, a
 * clear error for a block that is not one, and the codec at the limits of
 * int64. */
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
#include "store_block.h"
#include "store_deps.h"
#include "teststore.h"
#include "util.h"

#define INSTS 400 /* instruction i: track 1 + i % 2, lane i / 2 % 2 */
#define MANY 7    /* the instruction with 300 dependencies */

/* A dependency, seen from the dependent: key (track, lane, ts, id), seq,
 * the dependency (track, lane, ts, id) and whether it was found. */
struct dep {
  int64_t key[4], seq, other[4];
  int found;
};

/* Where instruction i lies: ts 100 i, id 1000 + i. */
static void inst(int i, int64_t k[4]) {
  k[0] = 1 + i % 2, k[1] = i / 2 % 2, k[2] = 100 * (int64_t)i, k[3] = 1000 + i;
}

/* The dependencies: instruction i waits for i % 4 instructions before it
 * (MANY for 300), those before the first not found (ids 5000 + seq). */
static size_t deps(struct dep *out) {
  size_t n = 0;
  for (int i = 0; i < INSTS; i++)
    for (int s = 0; s < (i == MANY ? 300 : i % 4); s++) {
      struct dep *d = &out[n++];
      int j = i - 1 - s;
      inst(i, d->key);
      d->seq = s;
      d->found = j >= 0;
      if (d->found)
        inst(j, d->other);
      else
        memset(d->other, 0, sizeof d->other), d->other[3] = 5000 + s;
    }
  return n;
}

static int dep_cmp(const void *pa, const void *pb) {
  const struct dep *a = pa, *b = pb;
  const int64_t x[9] = {a->key[0],   a->key[1],   a->key[2],
                        a->key[3],   a->seq,      a->other[0],
                        a->other[1], a->other[2], a->other[3]};
  const int64_t y[9] = {b->key[0],   b->key[1],   b->key[2],
                        b->key[3],   b->seq,      b->other[0],
                        b->other[1], b->other[2], b->other[3]};
  for (int k = 0; k < 9; k++)
    if (x[k] != y[k])
      return x[k] < y[k] ? -1 : 1;
  return 0;
}

static void emit(void *w, int64_t track, int64_t lane, int64_t ts0, int64_t n,
                 const unsigned char *data, size_t len, int rev) {
  store_writer_dep_block(w, rev, track, lane, ts0, n, data, len);
}
static void emit_fwd(void *w, int64_t track, int64_t lane, int64_t ts0,
                     int64_t n, const unsigned char *data, size_t len) {
  emit(w, track, lane, ts0, n, data, len, 0);
}
static void emit_rev(void *w, int64_t track, int64_t lane, int64_t ts0,
                     int64_t n, const unsigned char *data, size_t len) {
  emit(w, track, lane, ts0, n, data, len, 1);
}

static struct dep all[INSTS * 4 + 300];

/* Writes both sides; returns the path, the number of dependencies and of
 * those found. */
static char *write_store(size_t *n, size_t *found) {
  char *path = xasprintf("/tmp/nex-test-dep-%d.db", (int)getpid());
  struct store_writer *w = teststore_open(path);
  struct store_deps *fwd = store_deps_new(emit_fwd, w),
                    *rev = store_deps_new(emit_rev, w);
  *n = deps(all);
  qsort(all, *n, sizeof *all, dep_cmp);
  for (size_t k = 0; k < *n; k++)
    store_deps_add(fwd, all[k].key, all[k].seq, all[k].other, all[k].found);
  struct dep *turned = xcalloc(*n, sizeof *turned);
  size_t m = 0;
  for (size_t k = 0; k < *n; k++)
    if (all[k].found) {
      memcpy(turned[m].key, all[k].other, sizeof all[k].other);
      memcpy(turned[m].other, all[k].key, sizeof all[k].key);
      turned[m].seq = all[k].seq;
      turned[m++].found = 1;
    }
  qsort(turned, m, sizeof *turned, dep_cmp);
  *found = m;
  for (size_t k = 0; k < m; k++)
    store_deps_add(rev, turned[k].key, turned[k].seq, turned[k].other, 1);
  free(turned);
  store_deps_flush(fwd);
  store_deps_flush(rev);
  store_deps_free(fwd);
  store_deps_free(rev);
  teststore_finish(w);
  return path;
}

static sqlite3 *open_with_ref(const char *path) {
  return teststore_open_ref(path, "inst_dep",
                            "track INTEGER, ts INTEGER, lane INTEGER, id "
                            "INTEGER, seq INTEGER, dep_id INTEGER, dep_track "
                            "INTEGER, dep_lane INTEGER, dep_ts INTEGER");
}

static void test_rows_as_written(void **state) {
  (void)state;
  size_t n, found;
  char *path = write_store(&n, &found);
  sqlite3 *db = open_with_ref(path);
  sqlite3_stmt *st;
  assert_int_equal(
      sqlite3_prepare_v2(db, "SELECT * FROM inst_dep", -1, &st, NULL),
      SQLITE_OK);
  for (size_t k = 0; k < n; k++) { /* all[] is in key order */
    const struct dep *d = &all[k];
    const int64_t want[6] = {d->key[0], d->key[2], d->key[1],
                             d->key[3], d->seq,    d->other[3]};
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    for (int c = 0; c < 6; c++)
      assert_int_equal(sqlite3_column_int64(st, c), want[c]);
    for (int c = 0; c < 3; c++)
      if (d->found)
        assert_int_equal(sqlite3_column_int64(st, 6 + c), d->other[c]);
      else
        assert_int_equal(sqlite3_column_type(st, 6 + c), SQLITE_NULL);
  }
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  /* the found ones again, by dependency; 64 a block, a few bytes each */
  char *s = teststore_one(
      db, "SELECT (SELECT count(*) FROM inst_dep_rev) || ' ' || (SELECT "
          "count(*) FROM inst_dep WHERE dep_track IS NOT NULL) || ' ' || "
          "(SELECT count(*) FROM (SELECT * FROM inst_dep_rev EXCEPT SELECT * "
          "FROM ref)) || ' ' || (SELECT sum(n) FROM inst_dep_block) || ' ' || "
          "(SELECT sum(length(data)) < 12 * sum(n) FROM inst_dep_block)");
  char *want = xasprintf("%zu %zu 0 %zu 1", found, found, n);
  assert_string_equal(s, want);
  free(s);
  free(want);
  teststore_close(db, path);
}

static void test_constraints_as_a_table(void **state) {
  (void)state;
  size_t n, found;
  char *path = write_store(&n, &found);
  sqlite3 *db = open_with_ref(path);
  /* MANY is instruction 7: track 2, lane 1, ts 700, id 1007 */
  const char *const where[] = {
      "track = 2 AND lane = 1 AND ts = 700 AND id = 1007",
      "track = 2 AND lane = 1 AND ts = 700",
      "track = 2 AND ts > 650 AND ts <= 20000",
      "track IN (1, 2) AND ts >= 3000 AND ts < 9000 AND dep_track IS NOT "
      "NULL",
      "track = 1 AND lane = 0 AND ts = 0",
      "dep_track IS NULL",
      "track = 1 AND id = 1010.0",
      "ts = 'x'",
      "track = NULL",
      "lane > 0 AND seq = 2",
      "ts >= 9223372036854775807",
  };
  teststore_same_as_ref(db,
                        "SELECT count(*) || ':' || coalesce(group_concat(x, "
                        "','), '') FROM (SELECT track || '/' || lane || '/' "
                        "|| ts || '/' || id || '/' || seq || '/' || dep_id || "
                        "'/' || coalesce(dep_track || '/' || dep_lane || '/' "
                        "|| dep_ts, '-') AS x FROM %s WHERE %s ORDER BY track, "
                        "lane, ts, id, seq)",
                        "inst_dep", where, sizeof where / sizeof *where);
  /* by dependency: instruction 6 (track 1, lane 1, ts 600, id 1006) is
   * one of MANY's */
  const char *const by_dep[] = {
      "dep_track = 1 AND dep_lane = 1 AND dep_ts = 600 AND dep_id = 1006",
      "dep_track = 1 AND dep_lane = 1 AND dep_ts = 600",
      "dep_track = 2 AND dep_ts >= 1000 AND dep_ts < 5000",
      "dep_track IN (1, 2) AND dep_ts < 300",
      "dep_id = 1399",
      "dep_track = 3",
  };
  teststore_same_as_ref(
      db,
      "SELECT count(*) || ':' || coalesce(group_concat(x, "
      "','), '') FROM (SELECT track || '/' || lane || '/' "
      "|| ts || '/' || id || '/' || seq || '/' || dep_id || "
      "'/' || dep_track || '/' || dep_lane || '/' || dep_ts "
      "AS x FROM %s WHERE dep_track IS NOT NULL AND %s ORDER "
      "BY dep_track, dep_lane, dep_ts, dep_id, seq, track, lane, ts, id)",
      "inst_dep_rev", by_dep, sizeof by_dep / sizeof *by_dep);
  /* every instruction's dependencies and dependents looked up in turn */
  const char *const each[] = {"1"};
  teststore_same_as_ref(
      db,
      "SELECT group_concat(c, ';') FROM (SELECT (SELECT count(*) || '/' || "
      "coalesce(sum(g.dep_id), 0) FROM %s g WHERE g.track = x.track AND "
      "g.lane = x.lane AND g.ts = x.ts AND g.id = x.id) AS c FROM (SELECT "
      "DISTINCT track, lane, ts, id FROM ref) x WHERE %s)",
      "inst_dep", each, 1);
  char *a = teststore_one(
      db, "SELECT group_concat(c, ';') FROM (SELECT (SELECT count(*) || '/' "
          "|| sum(g.id) FROM inst_dep_rev g WHERE g.dep_track = x.dep_track "
          "AND g.dep_lane = x.dep_lane AND g.dep_ts = x.dep_ts AND g.dep_id = "
          "x.dep_id) AS c FROM (SELECT DISTINCT dep_track, dep_lane, dep_ts, "
          "dep_id FROM ref WHERE dep_track IS NOT NULL ORDER BY 1, 2, 3, 4) "
          "x)");
  char *b = teststore_one(
      db, "SELECT group_concat(c, ';') FROM (SELECT count(*) || '/' || "
          "sum(id) AS c FROM ref WHERE dep_track IS NOT NULL GROUP BY "
          "dep_track, dep_lane, dep_ts, dep_id ORDER BY dep_track, dep_lane, "
          "dep_ts, dep_id)");
  assert_string_equal(a, b);
  free(a);
  free(b);
  teststore_close(db, path);
}

static void test_order_and_writes(void **state) {
  (void)state;
  size_t n, found;
  char *path = write_store(&n, &found);
  sqlite3 *db = open_with_ref(path);
  const char *sorted[] = {
      "SELECT * FROM inst_dep ORDER BY track, lane, ts, id",
      "SELECT * FROM inst_dep_rev ORDER BY dep_track, dep_lane, dep_ts",
      "SELECT * FROM inst_dep WHERE track = 1 AND lane = 0 ORDER BY ts DESC",
  };
  for (size_t k = 0; k < sizeof sorted / sizeof *sorted; k++)
    if (teststore_sorts(db, sorted[k]))
      fail_msg("%s sorts", sorted[k]);
  assert_true(teststore_sorts(db, "SELECT * FROM inst_dep ORDER BY dep_ts"));
  const char *const writes[] = {
      "DELETE FROM inst_dep", "UPDATE inst_dep_rev SET ts = 0",
      "INSERT INTO inst_dep VALUES (1, 1, 1, 1, 1, 1, 1, 1, 1)"};
  assert_true(teststore_read_only(db, writes, 3));
  char *msg = teststore_corrupt(
      db,
      "UPDATE inst_dep_rev_block SET data = x'00ff' WHERE track = 1 AND "
      "lane = 0 AND ts0 = 0",
      "SELECT * FROM inst_dep_rev WHERE dep_track = 1 AND dep_lane = 0");
  assert_non_null(msg);
  assert_non_null(
      strstr(msg, "inst_dep_rev_block of track 1 lane 0: not a block"));
  free(msg);
  teststore_close(db, path);
}

/* The codec alone: any int64 round-trips, found or not; bytes that are
 * not a block give -EINVAL. */
static void test_codec(void **state) {
  (void)state;
  struct store_block b = {0}, d = {0};
  const int64_t big[4] = {INT64_MAX, INT64_MIN, -1, 0};
  for (int i = 0; i < STORE_BLOCK_ROWS; i++) {
    int64_t e[4];
    for (int k = 0; k < 4; k++)
      e[k] = i % 5 ? big[(i + k) % 4] : i * 7 + k;
    if (e[0] < 0) /* a track is not below 0 (store_block.h) */
      e[0] = INT64_MAX - (e[0] & 1);
    store_block_add_dep(&b, i % 9 ? INT64_MIN + i : INT64_MAX - i, big[i % 4],
                        i % 3 ? i : INT64_MAX, e, i % 7 != 3);
  }
  size_t len;
  unsigned char *out = store_block_encode_dep(&b, &len);
  assert_int_equal(store_block_decode_dep(&d, b.row[0].ts, out, len), 0);
  assert_int_equal(d.n, b.n);
  for (int i = 0; i < b.n; i++) {
    assert_int_equal(d.row[i].ts, b.row[i].ts);
    assert_int_equal(d.row[i].id, b.row[i].id);
    assert_int_equal(d.row[i].dur, b.row[i].dur);
    assert_int_equal(d.row[i].grp, i % 7 != 3);
    for (int k = d.row[i].grp ? 0 : 3; k < 4; k++)
      assert_int_equal(d.ends[4 * i + k], b.ends[4 * i + k]);
  }
  assert_int_equal(store_block_decode_dep(&d, 0, out, len - 1), -EINVAL);
  free(out);
  /* n = 1, seven one-byte columns: ts 0 from ts0, id 1, seq 2, not
   * found, id 4 */
  const char one[] = "\x02\x02\x02\x02\x02\x02\x02\x02"
                     "\x00\x02\x04\x00\x00\x00\x08";
  assert_int_equal(store_block_decode_dep(&d, 9, one, 15), 0);
  assert_int_equal(d.row[0].ts, 9);
  assert_int_equal(d.row[0].id, 1);
  assert_int_equal(d.row[0].dur, 2);
  assert_int_equal(d.row[0].grp, 0);
  assert_int_equal(d.ends[3], 4);
  assert_int_equal(store_block_decode_dep(&d, 9, one, 14), -EINVAL);
  assert_int_equal(store_block_decode_dep(&d, 9, "\x02\x02", 2), -EINVAL);
  assert_int_equal(store_block_decode_dep(&d, 9, NULL, 0), -EINVAL);
  store_block_free(&b);
  store_block_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_as_written),
      cmocka_unit_test(test_constraints_as_a_table),
      cmocka_unit_test(test_order_and_writes),
      cmocka_unit_test(test_codec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
