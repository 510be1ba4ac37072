/* test_store_flow.c -- flow endpoints in packed blocks read back through
 * the virtual table `flow`: every endpoint once (one given twice is kept
 * once), the same answers as a plain table of the same rows for
 * constraints of every kind and for flows looked up one after the other
 * (the table's cache of the block read last), no sort in flow order, no
 * writes, and clear errors for endpoints out of order and a block that is
 * not one. */
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
#include "store_vtab.h"
#include "teststore.h"
#include "util.h"

#define FLOWS 500 /* flow i has 1 + i % 3 endpoints */

static char *tmp_path(const char *name) {
  return xasprintf("/tmp/nex-test-flow-%d-%s", (int)getpid(), name);
}

/* Endpoint k of flow i: track 1 + k, lane i % 2, ts 1000 i + 10 k, id
 * 3 i + k. */
static void endpoint(int i, int k, int64_t e[4]) {
  e[0] = 1 + k, e[1] = i % 2, e[2] = 1000 * (int64_t)i + 10 * k,
  e[3] = 3 * (int64_t)i + k;
}

/* Flows 1 to FLOWS, every tenth endpoint given twice.  Returns the path. */
static char *write_store(void) {
  char *path = tmp_path("ok.db");
  struct store_writer *w = teststore_open(path);
  for (int i = 1; i <= FLOWS; i++)
    for (int k = 0; k < 1 + i % 3; k++) {
      int64_t e[4];
      endpoint(i, k, e);
      for (int twice = 0; twice < 1 + (i % 10 == 0); twice++)
        store_writer_flow(w, STORE_FLOW_BY_ID, i, e[0], e[1], e[2], e[3]);
    }
  teststore_finish(w);
  return path;
}

static sqlite3 *open_with_ref(const char *path) {
  return teststore_open_ref(path, "flow",
                            "flow_id INTEGER, track INTEGER, lane INTEGER, "
                            "ts INTEGER, id INTEGER");
}

static void test_rows_as_written(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  int n = 0;
  for (int i = 1; i <= FLOWS; i++)
    n += 1 + i % 3;
  char *want = xasprintf("%d %d", n, n);
  char *s = teststore_one(db, "SELECT count(*) || ' ' || (SELECT sum(n) FROM "
                              "flow_block) FROM flow");
  assert_string_equal(s, want);
  free(s);
  free(want);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT * FROM flow", -1, &st, NULL),
                   SQLITE_OK);
  for (int i = 1; i <= FLOWS; i++)
    for (int k = 0; k < 1 + i % 3; k++) {
      int64_t e[4];
      endpoint(i, k, e);
      assert_int_equal(sqlite3_step(st), SQLITE_ROW);
      assert_int_equal(sqlite3_column_int64(st, 0), i);
      for (int c = 0; c < 4; c++)
        assert_int_equal(sqlite3_column_int64(st, 1 + c), e[c]);
    }
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  /* 64 endpoints a block, a few bytes each */
  s = teststore_one(db, "SELECT count(*) || ' ' || (sum(length(data)) < 8 * "
                        "(SELECT sum(n) FROM flow_block)) FROM flow_block");
  want = xasprintf("%d 1", (n + STORE_FBLOCK_ROWS - 1) / STORE_FBLOCK_ROWS);
  assert_string_equal(s, want);
  free(want);
  free(s);
  teststore_close(db, path);
}

static void test_constraints_as_a_table(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  /* where the blocks start: flows that straddle two blocks */
  char *starts = teststore_one(db, "SELECT group_concat(flow0) FROM "
                                   "flow_block");
  char *second = strchr(starts, ',') + 1;
  second[strcspn(second, ",")] = '\0';
  char *straddling = xasprintf("flow_id = %s", second);
  const char *const where[] = {
      "flow_id = 7",
      "flow_id = 1",
      straddling,
      "flow_id = 500",
      "flow_id = 501",
      "flow_id = 0",
      "flow_id >= 40 AND flow_id < 90",
      "flow_id > 250.5 AND flow_id <= 260",
      "flow_id IN (3, 300, 45)",
      "flow_id = NULL",
      "flow_id = '12'",
      "flow_id > 'abc'",
      "flow_id < 'abc' AND track = 3",
      "track = 2 AND ts > 100000 AND ts < 120000",
      "lane = 1 AND id < 30",
      "flow_id >= 9223372036854775807",
  };
  teststore_same_as_ref(db,
                        "SELECT count(*) || ':' || coalesce(group_concat(x, "
                        "','), '') FROM (SELECT flow_id || '/' || track || "
                        "'/' || lane || '/' || ts || '/' || id AS x FROM %s "
                        "WHERE %s ORDER BY flow_id, track, lane, ts, id)",
                        "flow", where, sizeof where / sizeof *where);
  /* every flow looked up in turn, forwards and backwards (the cache) */
  const char *const each[] = {"x.flow_id > 0", "x.flow_id % 7 = 3"};
  teststore_same_as_ref(db,
                        "SELECT group_concat(c, ';') FROM (SELECT (SELECT "
                        "count(*) || '/' || sum(g.ts) || '/' || max(g.track) "
                        "FROM %s g WHERE g.flow_id = x.flow_id) AS c FROM "
                        "(SELECT DISTINCT flow_id FROM ref) x WHERE %s)",
                        "flow", each, 2);
  teststore_same_as_ref(db,
                        "SELECT group_concat(c, ';') FROM (SELECT (SELECT "
                        "count(*) || '/' || sum(g.id) FROM (SELECT id FROM %s "
                        "WHERE flow_id = x.flow_id ORDER BY flow_id DESC) g) "
                        "AS c FROM (SELECT DISTINCT flow_id FROM ref ORDER BY "
                        "1 DESC) x WHERE %s)",
                        "flow", each, 2);
  free(straddling);
  free(starts);
  teststore_close(db, path);
}

static void test_order_and_writes(void **state) {
  (void)state;
  char *path = write_store();
  sqlite3 *db = open_with_ref(path);
  const char *sorted[] = {
      "SELECT * FROM flow ORDER BY flow_id",
      "SELECT * FROM flow WHERE flow_id > 7 ORDER BY flow_id DESC",
  };
  for (size_t k = 0; k < sizeof sorted / sizeof *sorted; k++)
    if (teststore_sorts(db, sorted[k]))
      fail_msg("%s sorts", sorted[k]);
  assert_true(teststore_sorts(db, "SELECT * FROM flow ORDER BY ts"));
  const char *const writes[] = {"DELETE FROM flow", "UPDATE flow SET ts = 0",
                                "INSERT INTO flow VALUES (1, 1, 1, 1, 1)"};
  assert_true(teststore_read_only(db, writes, 3));
  char *msg = teststore_corrupt(
      db, "UPDATE flow_block SET data = x'00ff' WHERE flow0 = 1",
      "SELECT * FROM flow WHERE flow_id = 1");
  assert_non_null(msg);
  assert_non_null(strstr(msg, "flow_block at flow0 1: not a block"));
  free(msg);
  teststore_close(db, path);
}

static void test_out_of_order(void **state) {
  (void)state;
  char *path = tmp_path("bad.db");
  struct store_writer *w = teststore_open(path);
  store_writer_flow(w, STORE_FLOW_BY_ID, 5, 1, 0, 100, 1);
  store_writer_flow(w, STORE_FLOW_BY_ID, 5, 1, 0, 50, 2);
  char *cause = NULL;
  assert_int_equal(store_writer_finish(w, &cause), -EIO);
  assert_non_null(strstr(cause, "flow 5 endpoint (track 1, lane 0, ts 50, "
                                "id 2) comes after a later one"));
  assert_int_not_equal(access(path, F_OK), 0);
  free(cause);
  free(path);
}

/* The codec alone: any int64 round-trips; bytes that are not a block
 * give -EINVAL. */
static void test_codec(void **state) {
  (void)state;
  struct store_block b = {0}, d = {0};
  const int64_t big[4] = {INT64_MAX, INT64_MIN, -1, 0};
  for (int i = 0; i < STORE_FBLOCK_ROWS; i++) {
    int64_t e[4];
    for (int k = 0; k < 4; k++)
      e[k] = i % 5 ? big[(i + k) % 4] : i * 7 + k;
    store_block_add_endpoint(&b, i % 9 ? INT64_MIN + i : INT64_MAX - i, e);
  }
  size_t len;
  unsigned char *out = store_block_encode_flow(&b, &len);
  assert_int_equal(store_block_decode_flow(&d, b.row[0].ts, out, len), 0);
  assert_int_equal(d.n, b.n);
  for (int i = 0; i < b.n; i++) {
    assert_int_equal(d.row[i].ts, b.row[i].ts);
    for (int k = 0; k < 4; k++)
      assert_int_equal(d.ends[4 * i + k], b.ends[4 * i + k]);
  }
  assert_int_equal(store_block_decode_flow(&d, 0, out, len - 1), -EINVAL);
  free(out);
  /* n = 1, five one-byte columns */
  const char one[] = "\x02\x02\x02\x02\x02\x02\x00\x02\x04\x06\x08";
  assert_int_equal(store_block_decode_flow(&d, 9, one, 11), 0);
  assert_int_equal(d.row[0].ts, 9);
  assert_int_equal(d.ends[3], 4);
  assert_int_equal(store_block_decode_flow(&d, 9, one, 10), -EINVAL);
  assert_int_equal(store_block_decode_flow(&d, 9, "\x02\x02", 2), -EINVAL);
  assert_int_equal(store_block_decode_flow(&d, 9, NULL, 0), -EINVAL);
  store_block_free(&b);
  store_block_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_as_written),
      cmocka_unit_test(test_constraints_as_a_table),
      cmocka_unit_test(test_order_and_writes),
      cmocka_unit_test(test_out_of_order),
      cmocka_unit_test(test_codec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
