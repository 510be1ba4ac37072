/* test_deps.c -- instruction dependencies (server/ingest/ingest_deps.c):
 * resolved in memory as the instructions are placed, and in SQL when a
 * profile outgrows half the sort budget; both give the same rows of
 * inst_dep and of inst_dep_rev (the found ones again, by dependency).
 *
 * A device export written here holds what the resolution must get right:
 * an id on two instructions of two tracks (the dependency lies on the
 * track created first), an id on two lanes of one track (on the lower
 * lane, though the other starts earlier), a dependency the profile does
 * not hold (NULL), signed ids.  Each directory is ingested with the
 * default budget and with one of 4 KiB, the rows compared, and the
 * expected ones checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "filter.h"
#include "ingest.h"
#include "store_vtab.h"
#include "testutil.h"
#include "util.h"

/* The rows of inst_dep in key order, a line each, then "by dependency"
 * and those of inst_dep_rev in its key order. */
static char *rows(const char *db) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(store_vtab_register(h), SQLITE_OK);
  struct sbuf b = {0};
  for (int rev = 0; rev < 2; rev++) {
    sqlite3_stmt *st;
    char *sql = xasprintf(
        "SELECT d.ts, d.lane, d.id, d.seq, d.dep_id, t.label, d.dep_lane, "
        "d.dep_ts, (SELECT label FROM track WHERE id = d.dep_track) FROM %s "
        "d JOIN track t ON t.id = d.track ORDER BY %s",
        rev ? "inst_dep_rev" : "inst_dep",
        rev ? "d.dep_track, d.dep_lane, d.dep_ts, d.dep_id, d.seq, d.track, "
              "d.lane, d.ts, d.id"
            : "d.track, d.ts, d.lane, d.id, d.seq");
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    free(sql);
    if (rev)
      sbuf_adds(&b, "by dependency\n");
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < 9; c++) {
        const unsigned char *v = sqlite3_column_text(st, c);
        sbuf_printf(&b, "%s%s", c ? " " : "", v ? (const char *)v : "-");
      }
      sbuf_addc(&b, '\n');
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return b.s;
}

/* Ingests dir with sort budget `budget` (0: the default) into dir.<tag>.db
 * and returns its inst_dep rows. */
static char *ingest(const char *dir, size_t budget, const char *tag) {
  char *db = xasprintf("%s.%s.db", dir, tag);
  struct filter *f = filter_new();
  struct ingest_opts o = {
      .dir = dir, .db_path = db, .filter = f, .sort_budget = budget};
  struct ingest_stats st;
  char *cause = NULL;
  assert_int_equal(testutil_cause(ingest_run(&o, &st, &cause), cause), 0);
  filter_free(f);
  char *r = rows(db);
  free(db);
  return r;
}

/* Both ways, and with budgets the profile outgrows at one point or
 * another of its reading (the dependencies get half of it: the map alone,
 * the rows grown to what it leaves, or all in memory); returns the rows
 * (the same). */
static char *both(const char *dir) {
  static const size_t budget[] = {4096, 128 << 10, 512 << 10, 2 << 20};
  char *mem = ingest(dir, 0, "mem");
  for (size_t k = 0; k < sizeof budget / sizeof *budget; k++) {
    char tag[32];
    snprintf(tag, sizeof tag, "b%zu", budget[k]);
    char *other = ingest(dir, budget[k], tag);
    assert_string_equal(mem, other);
    free(other);
  }
  return mem;
}

static void test_tricky(void **state) {
  (void)state;
  char *dir = testutil_path("tricky");
  assert_int_equal(mkdir(dir, 0755), 0);
  char *src = testutil_srcpath("tests/data/vjson/system_profile.json");
  size_t n;
  char *sys = testutil_slurp(src, &n);
  char *dst = xasprintf("%s/system_profile.json", dir);
  testutil_write(dst, sys, n);
  free(dst);
  free(sys);
  free(src);
  static const char dev[] =
      "{\"profile_info\": {\"ntff_filename\": \"a.ntff\", \"neff_id\": "
      "\"123\"},\n\"instruction\": [\n"
      "{\"timestamp\": 100, \"duration\": 50, \"label\": \"A\", \"opcode\": "
      "\"MM\", \"id\": 5, \"inst_dep_ids\": [7, 9, 99, -3]},\n"
      "{\"timestamp\": 110, \"duration\": 100, \"label\": \"A\", \"opcode\": "
      "\"MM\", \"id\": 9},\n"
      "{\"timestamp\": 200, \"duration\": 10, \"label\": \"B\", \"opcode\": "
      "\"ACT\", \"id\": 7},\n"
      "{\"timestamp\": 300, \"duration\": 10, \"label\": \"A\", \"opcode\": "
      "\"ACT\", \"id\": 7, \"inst_dep_ids\": [5]},\n"
      "{\"timestamp\": 400, \"duration\": 10, \"label\": \"A\", \"opcode\": "
      "\"ACT\", \"id\": 9},\n"
      "{\"timestamp\": 500, \"duration\": 10, \"label\": \"A\", \"opcode\": "
      "\"ACT\", \"id\": -3}\n"
      "]}\n";
  dst = xasprintf("%s/device_profile_model_1.json", dir);
  testutil_write(dst, dev, sizeof dev - 1);
  free(dst);
  char *r = both(dir);
  /* ts lane id seq dep_id track dep_lane dep_ts dep_track */
  assert_string_equal(r, "100 0 5 0 7 A 0 300 A\n"  /* on A (created first),
                                                     not on B at 200 */
                         "100 0 5 1 9 A 0 400 A\n"  /* lane 0 at 400, not lane
                                                     1 at 110 */
                         "100 0 5 2 99 A - - -\n"   /* not in the profile */
                         "100 0 5 3 -3 A 0 500 A\n" /* a signed id */
                         "300 0 7 0 5 A 0 100 A\n"
                         "by dependency\n" /* the found ones, by dependency */
                         "300 0 7 0 5 A 0 100 A\n"
                         "100 0 5 0 7 A 0 300 A\n"
                         "100 0 5 1 9 A 0 400 A\n"
                         "100 0 5 3 -3 A 0 500 A\n");
  free(r);
  free(dir);
}

static void test_generated(void **state) {
  (void)state;
  /* a generated profile: the instructions of every device profile depend
   * on each other */
  char *dir = testutil_path("gen"), *man = testutil_path("gen.json");
  const char *build = getenv("NEX_BUILDDIR");
  char *cmd = xasprintf("'%s/tools/neuron-explorer-synth' --out '%s' --seed 7 "
                        "--processes 1 --cores 2 --target-events 3000 "
                        "--device-instructions 3000 --manifest '%s' "
                        "2>/dev/null",
                        build ? build : ".", dir, man);
  assert_int_equal(system(cmd), 0);
  free(cmd);
  size_t n;
  char *m = testutil_slurp(man, &n);
  const char *k = strstr(m, "\"inst_deps\":");
  assert_non_null(k);
  long deps = strtol(k + 12, NULL, 10);
  assert_true(deps > 1000);
  char *r = both(dir);
  char *rev = strstr(r, "by dependency\n");
  assert_non_null(rev);
  long lines = 0, unresolved = 0, rev_lines = -1;
  for (const char *c = r; (c = strchr(c, '\n')) && c < rev; c++)
    lines++;
  for (const char *c = r; (c = strstr(c, " - - -\n")); c++)
    unresolved++;
  for (const char *c = rev; (c = strchr(c, '\n')); c++)
    rev_lines++;
  assert_int_equal(lines, deps);
  assert_int_equal(unresolved, 0);
  assert_int_equal(rev_lines, deps); /* every one found, so every one again */
  free(r);
  free(m);
  free(man);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tricky),
      cmocka_unit_test(test_generated),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
