/* test_ingest_chrome.c -- the Chrome flow binding with a tiny memory
 * budget: blocks of 256 bytes, 1 KiB in memory, batches of 3 endpoints;
 * and the slices' sort with a 4 KiB budget.  Every path of the bounded
 * binding (spill file, blocks read back, several batches per track, runs
 * in memory and in the spill file, their merge) and of the sort (sorted
 * runs spilled and merged) then runs on small traces, and must store
 * exactly the slice, LOD, flow and Warning rows of the server's own build
 * (NEX_BUILDDIR).  A Kineto-ordered trace (parents written last) gets
 * exact lanes and flow bindings. */
#define INGEST_CHROME_CHUNK 256u
#define INGEST_CHROME_BUDGET 1024u
#define INGEST_CHROME_BATCH 3u
/* the binding's reads of the spill file go through test_spill_read, which
 * fails them on demand */
#define spill_read test_spill_read
#include "ingest_chrome_bind.c"
#undef spill_read
int spill_read(struct spill *s, void *p, size_t len,
               uint64_t off); /* spill.h */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "filter.h"
#include "ingest.h"
#include "log.h"
#include "store_vtab.h"
#include "testutil.h"

static int fail_reads;

int test_spill_read(struct spill *s, void *p, size_t len, uint64_t off) {
  return fail_reads ? -EIO : spill_read(s, p, len, off);
}

/* Copies <source tree>/<rel> into the directory dir. */
static void copy_in(const char *dir, const char *rel) {
  char *src = testutil_srcpath("%s", rel);
  size_t n;
  char *b = testutil_slurp(src, &n);
  const char *base = strrchr(rel, '/');
  char *dst = xasprintf("%s/%s", dir, base ? base + 1 : rel);
  testutil_write(dst, b, n);
  free(dst);
  free(b);
  free(src);
}

/* How many rows of the query differ between main and the attached ref
 * (both ways). */
static int64_t differ(sqlite3 *db, const char *cols, const char *table) {
  char *sql = xasprintf("SELECT (SELECT count(*) FROM (SELECT %s FROM main.%s "
                        "EXCEPT SELECT %s FROM ref.%s)) + (SELECT count(*) "
                        "FROM (SELECT %s FROM ref.%s EXCEPT SELECT %s FROM "
                        "main.%s))",
                        cols, table, cols, table, cols, table, cols, table);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  free(sql);
  return n;
}

static int64_t count(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Ingests the files into a new directory `name` with the tiny budget and
 * with the server; checks the flow and Warning tables are the same and
 * that there are flows and warnings as many as expected. */
static void check_same(const char *name, const char *const *rels, int64_t flows,
                       int64_t warnings) {
  char *dir = testutil_path(name);
  assert_int_equal(mkdir(dir, 0755), 0);
  for (int i = 0; rels[i]; i++)
    copy_in(dir, rels[i]);
  char *db = xasprintf("%s.db", dir), *ref = xasprintf("%s.ref.db", dir);
  struct filter *f = filter_new();
  struct ingest_opts o = {
      .dir = dir, .db_path = db, .filter = f, .sort_budget = 4096};
  struct ingest_stats st;
  char *cause = NULL;
  assert_int_equal(testutil_cause(ingest_run(&o, &st, &cause), cause), 0);
  filter_free(f);
  const char *build = getenv("NEX_BUILDDIR");
  char *cmd = xasprintf("'%s/server/neuron-explorer-server' --dir '%s' "
                        "--db '%s' --ingest-only --quiet 2>/dev/null",
                        build ? build : ".", dir, ref);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1);
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(store_vtab_register(h), SQLITE_OK);
  char *attach = xasprintf("ATTACH '%s' AS ref", ref);
  assert_int_equal(sqlite3_exec(h, attach, NULL, NULL, NULL), SQLITE_OK);
  assert_int_equal(count(h, "SELECT count(*) FROM main.flow"), flows);
  assert_int_equal(count(h, "SELECT count(*) FROM ref.flow"), flows);
  assert_int_equal(differ(h, "flow_id, track, lane, ts, id", "flow"), 0);
  assert_int_equal(
      differ(h, "track, lane, ts, id, dur, name, grp, args", "slice"), 0);
  assert_int_equal(
      differ(h, "track, level, lane, bucket, n, count, rows", "slice_lod"), 0);
  assert_int_equal(count(h, "SELECT count(*) FROM main.Warning"), warnings);
  assert_int_equal(count(h, "SELECT count(*) FROM ref.Warning"), warnings);
  assert_int_equal(differ(h, "id, message, category, file, offset", "Warning"),
                   0);
  sqlite3_close(h);
  free(attach);
  free(cmd);
  free(ref);
  free(db);
  free(dir);
}

/* Flows v1 and v2, enclosing and next-slice endpoints, some unbound. */
static void test_flows(void **state) {
  (void)state;
  const char *rels[] = {"tests/data/chrome/flows.json", NULL};
  check_same("flows", rels, 9, 7);
}

/* Flows over many threads, 265 endpoints without a slice. */
static void test_catapult(void **state) {
  (void)state;
  const char *rels[] = {"tests/data/traces/catapult_flow.json", NULL};
  check_same("catapult", rels, 1394, 265);
}

/* Several traces: the warnings of each file in its order, files in the
 * order read; thousands of endpoints in batches and runs. */
static void test_several(void **state) {
  (void)state;
  const char *rels[] = {"tests/data/chrome/flows.json",
                        "tests/data/traces/catapult_flow.json",
                        "tests/data/traces/hta_nccl_data.json.gz",
                        "tests/data/traces/tl_h100_qwen.json.gz",
                        "tests/data/chrome/tolerance.json",
                        NULL};
  check_same("several", rels, 9 + 1394 + 13600 + 3629, 7 + 265 + 13);
}

/* Kineto's order: each enclosing event after the ones it contains.  The
 * lanes are the nesting depths; s binds to the innermost slice enclosing
 * it, f with bp:"e" too, f without it to the next slice. */
static void test_kineto_order(void **state) {
  (void)state;
  const char *rels[] = {"tests/data/chrome/kineto_order.json", NULL};
  check_same("kineto", rels, 4, 0);
  char *db = testutil_path("kineto.db");
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(store_vtab_register(h), SQLITE_OK);
  const char *lanes =
      "SELECT group_concat(x, ',') FROM (SELECT n.s || '@' || s.lane AS x "
      "FROM slice s JOIN str n ON n.id = s.name ORDER BY s.track, s.ts, "
      "s.lane)";
  const char *flows =
      "SELECT group_concat(x, ',') FROM (SELECT n.s || '@' || f.lane AS x "
      "FROM flow f JOIN slice s ON s.track = f.track AND s.lane = f.lane "
      "AND s.ts = f.ts AND s.id = f.id JOIN str n ON n.id = s.name ORDER BY "
      "f.ts, f.lane)";
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(h, lanes, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0),
                      "ProfilerStep#1@0,python: forward@1,aten::mm@2,"
                      "cudaLaunchKernel@3,ProfilerStep#1@0,gemm@1,"
                      "elementwise@1");
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_prepare_v2(h, flows, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0),
                      "aten::mm@2,cudaLaunchKernel@3,gemm@1,elementwise@1");
  sqlite3_finalize(st);
  sqlite3_close(h);
  free(db);
}

/* The flow spill file cannot be read back (a disk error): the ingest fails
 * with a cause and leaves no store; the process goes on (it used to stop
 * in fatal(), with the server serving the previous store). */
static void test_spill_unreadable(void **state) {
  (void)state;
  char *dir = testutil_path("unreadable");
  assert_int_equal(mkdir(dir, 0755), 0);
  copy_in(dir, "tests/data/traces/tl_h100_qwen.json.gz");
  char *db = xasprintf("%s.db", dir);
  struct filter *f = filter_new();
  struct ingest_opts o = {.dir = dir, .db_path = db, .filter = f};
  struct ingest_stats st;
  char *cause = NULL;
  fail_reads = 1;
  int rc = ingest_run(&o, &st, &cause);
  fail_reads = 0;
  assert_int_equal(rc, -EIO);
  assert_non_null(cause);
  assert_non_null(strstr(cause, "spill file"));
  struct stat sb;
  assert_int_not_equal(stat(db, &sb), 0);
  free(cause);
  /* the same directory ingests once the file reads again */
  cause = NULL;
  assert_int_equal(testutil_cause(ingest_run(&o, &st, &cause), cause), 0);
  assert_int_equal(stat(db, &sb), 0);
  filter_free(f);
  free(db);
  free(dir);
}

int main(void) {
  log_set_level(LOG_ERROR); /* the traces' warnings are expected */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flows),
      cmocka_unit_test(test_catapult),
      cmocka_unit_test(test_several),
      cmocka_unit_test(test_kineto_order),
      cmocka_unit_test(test_spill_unreadable),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
