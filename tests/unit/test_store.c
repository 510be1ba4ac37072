/* test_store.c -- the store writer: a complete store is renamed into place
 * and read back; errors (a location that cannot be written, a statement
 * that does not run, a file that cannot grow) are sticky, reported by
 * store_writer_finish() with the first cause, and leave no file behind.
 * store.h is included twice: all of it is inside its include guard. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "store.h"
#include "store.h" /* twice: a second inclusion must add nothing */
#include "store_json.h"
#include "teststore.h"
#include "util.h"

/* "/tmp/nex-test-store-<pid>-<name>" (the caller frees it). */
static char *tmp_path(const char *name) {
  return xasprintf("/tmp/nex-test-store-%d-%s", (int)getpid(), name);
}

/* Whether a file exists at path. */
static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* A writer for the store tmp_path(name); *path gets its path
 * (the caller frees it). */
static struct store_writer *open_store(const char *name, char **path) {
  struct store_writer *w = NULL;
  char *cause = NULL;
  *path = tmp_path(name);
  assert_int_equal(store_writer_open(*path, &w, &cause), 0);
  assert_null(cause);
  return w;
}

/* One slice track with n slices of 1 ns every 10 ns, each with `args`. */
static int64_t add_slices(struct store_writer *w, int n, const char *args) {
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t track = store_writer_track(w, &t);
  teststore_slices(w, track,
                   &(struct teststore_slices){.name = "op",
                                              .args = args,
                                              .n = n,
                                              .lod_level = -1,
                                              .step = 10,
                                              .dur = 1,
                                              .id0 = 1});
  return track;
}

/* store_writer_query() row callback: counts rows in *ud. */
static int count_row(void *ud, sqlite3_stmt *st) {
  (void)st;
  (*(int *)ud)++;
  return 0;
}

/* Finishes w, which must fail: returns the cause (the caller frees it)
 * after checking that neither the store nor its temporary file is left. */
static char *finish_fails(struct store_writer *w, const char *path) {
  char *cause = NULL;
  assert_int_equal(store_writer_finish(w, &cause), -EIO);
  assert_non_null(cause);
  char *tmp = xasprintf("%s.tmp", path);
  assert_false(exists(path));
  assert_false(exists(tmp));
  free(tmp);
  return cause;
}

static void test_complete_store(void **state) {
  char *path;
  struct store_writer *w = open_store("good.db", &path);
  char *tmp = xasprintf("%s.tmp", path);
  assert_true(exists(tmp)); /* written under the temporary name */
  assert_false(exists(path));
  assert_int_equal(store_writer_intern(w, "a"), 1);
  assert_int_equal(store_writer_intern(w, "b"), 2);
  assert_int_equal(store_writer_intern(w, "a"), 1);
  add_slices(w, 1000, "{\"k\":1}");
  assert_int_equal(store_writer_exec(w,
                                     "INSERT INTO Warning (category, file, "
                                     "offset, message) VALUES (?,?,?,?)",
                                     "ttit", "Missing Data", "f", (int64_t)3,
                                     "m"),
                   1);
  /* store_info has no rowid: no error is all there is to see */
  assert_true(store_writer_exec(w,
                                "INSERT INTO store_info VALUES "
                                "('fingerprint', ?)",
                                "t", "fp-1") >= 0);
  int rows = 0;
  assert_int_equal(store_writer_query(w, count_row, &rows,
                                      "SELECT id FROM str WHERE s IN (?, ?)",
                                      "tt", "a", "op"),
                   0);
  assert_int_equal(rows, 2);
  char *cause = NULL;
  assert_int_equal(store_writer_finish(w, &cause), 0);
  assert_null(cause);
  assert_true(exists(path));
  assert_false(exists(tmp));

  uint64_t events = 0, warnings = 0;
  assert_int_equal(store_is_current(path, "fp-1", &events, &warnings), 1);
  assert_int_equal(events, 1000);
  assert_int_equal(warnings, 1);
  assert_int_equal(store_is_current(path, "fp-2", &events, &warnings), 0);

  struct store_pool *p;
  assert_int_equal(store_pool_open(path, 1, &p, &cause), 0);
  sqlite3 *db = store_pool_get(p);
  const struct store_names *names = store_pool_names(p, db);
  assert_non_null(names);
  assert_string_equal(store_names_get(names, 2), "b");
  assert_null(store_names_get(names, 99));
  /* REGEXP works on a reader without any query code registering it. */
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT count(*) FROM str "
                                      "WHERE s REGEXP '^B$'",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 1); /* "b", case-blind */
  sqlite3_finalize(st);
  store_pool_put(p, db);
  store_pool_close(p);
  unlink(path);
  free(tmp);
  free(path);
}

/* A store where no file can be created: the error names the reason. */
static void test_unusable_location(void **state) {
  struct store_writer *w = NULL;
  char *cause = NULL;
  char *path = tmp_path("no/such/folder/s.db");
  assert_int_equal(store_writer_open(path, &w, &cause), -ENOENT);
  assert_null(w);
  assert_non_null(strstr(cause, "No such file or directory"));
  assert_non_null(strstr(cause, "s.db.tmp"));
  free(cause);
  free(path);
  cause = NULL;
  assert_int_equal(store_writer_open("/tmp", &w, &cause), -EISDIR);
  assert_non_null(strstr(cause, "Is a directory"));
  free(cause);
}

/* A statement that does not prepare is the writer's first error: every
 * later call fails at once and finish() reports it. */
static void test_bad_statement_sticky(void **state) {
  char *path;
  struct store_writer *w = open_store("bad.db", &path);
  add_slices(w, 10, NULL);
  assert_int_equal(
      store_writer_exec(w, "INSERT INTO no_such_table VALUES (?)", "i", 1),
      -EIO);
  /* a good statement after the error: refused, not run */
  assert_int_equal(store_writer_exec(w,
                                     "INSERT INTO store_info VALUES "
                                     "('fingerprint', 'x')",
                                     ""),
                   -EIO);
  int rows = 0;
  assert_int_equal(
      store_writer_query(w, count_row, &rows, "SELECT id FROM str", ""), -EIO);
  assert_int_equal(rows, 0);
  /* a second bad statement does not replace the first error */
  assert_int_equal(
      store_writer_exec(w, "INSERT INTO other_table VALUES (1)", ""), -EIO);
  add_slices(w, 10, NULL); /* rows are accepted and dropped */
  char *cause = finish_fails(w, path);
  assert_non_null(strstr(cause, "no such table: no_such_table"));
  assert_null(strstr(cause, "other_table"));
  free(cause);
  free(path);
}

/* A constraint broken by a statement that runs: the same. */
static void test_failed_step_sticky(void **state) {
  char *path;
  struct store_writer *w = open_store("step.db", &path);
  const char *sql = "INSERT INTO store_info VALUES ('state', ?)";
  assert_true(store_writer_exec(w, sql, "t", "a") >= 0);
  assert_int_equal(store_writer_exec(w, sql, "t", "b"), -EIO); /* dup key */
  assert_int_equal(store_writer_exec(w,
                                     "INSERT INTO store_info VALUES "
                                     "('other', 'c')",
                                     ""),
                   -EIO);
  char *cause = finish_fails(w, path);
  assert_non_null(strstr(cause, "UNIQUE constraint failed"));
  free(cause);
  free(path);
}

/* A file that cannot grow (a full disk, here RLIMIT_FSIZE): the write
 * error, with the system's reason, and no partial store. */
static void test_full_disk(void **state) {
  char *path;
  struct store_writer *w = open_store("full.db", &path);
  char *tmp = xasprintf("%s.tmp", path);
  struct stat st;
  assert_int_equal(stat(tmp, &st), 0);
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = (rlim_t)st.st_size + 8192; /* the schema and a page */
  signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG */
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  add_slices(w, 20000, "{\"a long argument\":\"to fill pages quickly\"}");
  char *cause = NULL;
  int rc = store_writer_finish(w, &cause);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, SIG_DFL);
  assert_int_equal(rc, -EIO);
  assert_non_null(cause);
  assert_non_null(strstr(cause, "File too large"));
  assert_false(exists(path));
  assert_false(exists(tmp));
  free(cause);
  free(tmp);
  free(path);
}

/* The two ways of reading member ?2 of ?1 compared. */
#define JSON_MEMBER "SELECT nex_json_member(?1, ?2)"
#define JSON_EXTRACT "SELECT json_extract(?1, '$.\"' || ?2 || '\"')"

/* Query sql (JSON_MEMBER or JSON_EXTRACT) on db for json and label: its
 * row's type and value, or an error, in *out ("<type> <value>" or
 * "error"). */
static void json_member(sqlite3 *db, const char *sql, const char *json,
                        const char *label, char *out, size_t n) {
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  if (json)
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, label, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_ROW)
    snprintf(out, n, "error");
  else
    snprintf(out, n, "%d %s", sqlite3_column_type(st, 0),
             sqlite3_column_type(st, 0) == SQLITE_NULL
                 ? ""
                 : (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

static void test_json_member(void **state) {
  (void)state;
  sqlite3 *db;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(store_json_register(db), SQLITE_OK);
  /* what json_extract answers, whichever of the two answers it */
  static const char *const same[][2] = {
      {"{\"size\":1024}", "size"},
      {"{\"a\":1,\"size\":-7}", "size"},
      {"{\"size\":\"12\"}", "size"},
      {"{\"size\":\"x\\\"y\\u0041\"}", "size"},
      {"{\"size\":\"na\xc3\xafve\"}", "size"},
      {"{\"size\":\"\"}", "size"},
      {"{\"size\":1.5}", "size"},
      {"{\"size\":1e3}", "size"},
      {"{\"size\":-0}", "size"},
      {"{\"size\":0}", "size"},
      {"{\"size\":123456789012345678}", "size"},
      {"{\"size\":-123456789012345678}", "size"},
      {"{\"size\":1234567890123456789}", "size"},
      {"{\"size\":99999999999999999999}", "size"},
      {"{\"size\":true}", "size"},
      {"{\"size\":false}", "size"},
      {"{\"size\":null}", "size"},
      {"{\"size\":{\"a\":[1,{\"b\":\"}\"}]}}", "size"},
      {"{\"size\":[1,2]}", "size"},
      {"{}", "size"},
      {" { } ", "size"},
      {"{\"a\":{\"size\":1}}", "size"},
      {"{\"a\":[{\"size\":1}],\"size\":2}", "size"},
      {"{\"a\":\"}\",\"b\":\"\\\"\",\"size\":3}", "size"},
      {"{\"s\\u0069ze\":4,\"size\":5}", "size"},
      {" {\t\"size\" :\n 5 } ", "size"},
      {"{\"size\":5,\"size\":6}", "size"},
      {"{\"queue\":\"q\",\"transfer_bytes\":2048}", "transfer_bytes"},
      {"{\"\":7}", ""},
      {"[1,2]", "size"},
      {"5", "size"},
      {"\"size\"", "size"},
      {"null", "size"},
      {"{\"size\":007}", "size"},
      {"{\"a\":1,}", "size"},
      {"{\"a\" 1}", "size"},
      {"{\"size\"", "size"},
      {"{\"size\":1", "size"},
      {"not json", "size"},
      {"", "size"},
      {NULL, "size"}};
  char a[256], b[256];
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    json_member(db, JSON_MEMBER, same[i][0], same[i][1], a, sizeof a);
    json_member(db, JSON_EXTRACT, same[i][0], same[i][1], b, sizeof b);
    if (strcmp(a, b) != 0)
      fail_msg("%s in %s: %s, json_extract %s", same[i][1],
               same[i][0] ? same[i][0] : "NULL", a, b);
  }
  /* past the member found nothing is checked: an answer where
   * json_extract fails (which shows the scan answered it) */
  json_member(db, JSON_MEMBER, "{\"size\":1}x", "size", a, sizeof a);
  json_member(db, JSON_EXTRACT, "{\"size\":1}x", "size", b, sizeof b);
  assert_string_equal(a, "1 1");
  assert_string_equal(b, "error");
  sqlite3_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_complete_store),
      cmocka_unit_test(test_unusable_location),
      cmocka_unit_test(test_bad_statement_sticky),
      cmocka_unit_test(test_failed_step_sticky),
      cmocka_unit_test(test_full_disk),
      cmocka_unit_test(test_json_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
