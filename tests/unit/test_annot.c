/* test_annot.c -- the annotations database (store/annot.c): created on the
 * first write only, records kept exactly and in order, updates and deletes
 * of known and unknown ids, the text and count limits, and a second opening
 * of the same file (a restart) seeing the same records. */
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

#include <sqlite3.h>

#include "annot.h"

/* "/tmp/nex-test-annot-<pid>-<name>", removed first (malloc'd). */
static char *test_path(const char *name) {
  char *p = malloc(128);
  snprintf(p, 128, "/tmp/nex-test-annot-%d-%s", (int)getpid(), name);
  unlink(p);
  return p;
}

/* Removes the file at path and frees path. */
static void test_done(char *path) {
  unlink(path);
  free(path);
}

static char track[] = "slices/system/neuron_rt/i-1/10/11/0////////";
static char green[] = "#00ff00", execute[] = "nrt_execute";
static char here[] = "here", warm[] = "warm-up", slow[] = "slow";

static struct annot_rec rec(const char *kind, int64_t ts, int64_t end,
                            char *text) {
  struct annot_rec r = {.ts = ts, .end = end, .text = text};
  snprintf(r.kind, sizeof r.kind, "%s", kind);
  return r;
}

static void test_created_on_first_write(void **state) {
  (void)state;
  char *path = test_path("first.notes.sqlite");
  struct annot *a = annot_new(path);
  struct annot_rec *list;
  size_t n = 7;
  char *cause = NULL;
  int64_t id = 0;
  assert_string_equal(annot_path(a), path);
  assert_int_equal(annot_list(a, &list, &n, &cause), 0);
  assert_int_equal(n, 0);
  assert_int_not_equal(access(path, F_OK), 0); /* a read creates nothing */
  assert_int_equal(annot_delete(a, 1, &cause), -ENOENT);
  assert_string_equal(cause, "no annotation with id 1");
  free(cause);
  cause = NULL;
  struct annot_rec r = rec("flag", 50, 50, here);
  assert_int_equal(annot_add(a, &r, &id, &cause), 0);
  assert_int_equal(id, 1);
  assert_int_equal(access(path, F_OK), 0);
  annot_free(a);
  test_done(path);
}

static void test_records(void **state) {
  (void)state;
  char *path = test_path("records.notes.sqlite");
  struct annot *a = annot_new(path);
  char *cause = NULL;
  int64_t id[3];
  struct annot_rec r1 = rec("area", 300, 900, warm);
  r1.track = track;
  r1.color = green;
  struct annot_rec r2 = rec("note", 100, 160, slow);
  r2.track = r1.track;
  r2.event_name = execute;
  struct annot_rec r3 = rec("flag", 200, 200, NULL);
  assert_int_equal(annot_add(a, &r1, &id[0], &cause), 0);
  assert_int_equal(annot_add(a, &r2, &id[1], &cause), 0);
  assert_int_equal(annot_add(a, &r3, &id[2], &cause), 0);
  assert_int_equal(id[0], 1);
  assert_int_equal(id[2], 3);

  struct annot_rec *list;
  size_t n;
  assert_int_equal(annot_list(a, &list, &n, &cause), 0);
  assert_int_equal(n, 3); /* by ts: the note, the flag, the area */
  assert_int_equal(list[0].id, 2);
  assert_string_equal(list[0].kind, "note");
  assert_int_equal(list[0].ts, 100);
  assert_int_equal(list[0].end, 160);
  assert_string_equal(list[0].event_name, "nrt_execute");
  assert_string_equal(list[0].track, track);
  assert_string_equal(list[0].text, "slow");
  assert_null(list[0].color);
  assert_int_equal(list[1].id, 3);
  assert_null(list[1].text);
  assert_null(list[1].track);
  assert_int_equal(list[2].id, 1);
  assert_string_equal(list[2].color, "#00ff00");
  annot_list_free(list, n);

  struct annot_rec g;
  assert_int_equal(annot_get(a, 1, &g, &cause), 0);
  free(g.text);
  g.text = strdup("steady state");
  g.end = 1000;
  assert_int_equal(annot_update(a, &g, &cause), 0);
  annot_rec_free(&g);
  assert_int_equal(annot_delete(a, 3, &cause), 0);
  assert_int_equal(annot_get(a, 3, &g, &cause), -ENOENT);
  free(cause);
  cause = NULL;
  struct annot_rec ghost = rec("flag", 1, 1, NULL);
  ghost.id = 3;
  assert_int_equal(annot_update(a, &ghost, &cause), -ENOENT);
  free(cause);
  cause = NULL;
  annot_free(a);

  /* A restart opens the same file. */
  a = annot_new(path);
  assert_int_equal(annot_list(a, &list, &n, &cause), 0);
  assert_int_equal(n, 2);
  assert_int_equal(list[1].id, 1);
  assert_int_equal(list[1].end, 1000);
  assert_string_equal(list[1].text, "steady state");
  annot_list_free(list, n);
  annot_free(a);
  test_done(path);
}

static void test_bad_records(void **state) {
  (void)state;
  char *path = test_path("bad.notes.sqlite");
  struct annot *a = annot_new(path);
  char *cause = NULL;
  int64_t id;
  char *big = malloc(ANNOT_MAX_TEXT + 2);
  memset(big, 'x', ANNOT_MAX_TEXT + 1);
  big[ANNOT_MAX_TEXT + 1] = '\0';
  struct annot_rec r = rec("flag", 5, 5, big);
  assert_int_equal(annot_add(a, &r, &id, &cause), -EINVAL);
  assert_string_equal(cause, "'text' is longer than 4096 bytes");
  free(cause);
  big[ANNOT_MAX_TEXT] = '\0'; /* exactly the limit is fine */
  assert_int_equal(annot_add(a, &r, &id, &cause), 0);
  r = rec("pin", 5, 5, NULL);
  assert_int_equal(annot_add(a, &r, &id, &cause), -EINVAL);
  assert_string_equal(cause, "'kind' must be flag, note or area");
  free(cause);
  r = rec("area", 5, 4, NULL);
  assert_int_equal(annot_add(a, &r, &id, &cause), -EINVAL);
  assert_string_equal(cause, "'end' must not be before 'ts'");
  free(cause);
  free(big);
  annot_free(a);
  test_done(path);
}

/* ANNOT_MAX_COUNT rows written straight into the file: one more is
 * refused, a delete makes room. */
static void test_count_limit(void **state) {
  (void)state;
  char *path = test_path("full.notes.sqlite");
  struct annot *a = annot_new(path);
  char *cause = NULL;
  int64_t id;
  struct annot_rec r = rec("flag", 1, 1, NULL);
  assert_int_equal(annot_add(a, &r, &id, &cause), 0);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char sql[256];
  snprintf(sql, sizeof sql,
           "WITH RECURSIVE c(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM c "
           "WHERE n < %d) INSERT INTO annotation (id, kind, ts, end_ts) "
           "SELECT n, 'flag', n, n FROM c",
           ANNOT_MAX_COUNT);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(annot_add(a, &r, &id, &cause), -ENOSPC);
  assert_string_equal(cause, "there are 100000 annotations already, the most "
                             "one profile keeps; delete some first");
  free(cause);
  assert_int_equal(annot_delete(a, 77, &cause), 0);
  assert_int_equal(annot_add(a, &r, &id, &cause), 0);
  assert_int_equal(id, ANNOT_MAX_COUNT + 1);
  annot_free(a);
  test_done(path);
}

/* A file that cannot be created is an -EIO naming it, not a crash. */
static void test_unwritable(void **state) {
  (void)state;
  struct annot *a = annot_new("/nonexistent-dir/x.notes.sqlite");
  char *cause = NULL;
  int64_t id;
  struct annot_rec r = rec("flag", 1, 1, NULL);
  assert_int_equal(annot_add(a, &r, &id, &cause), -EIO);
  assert_non_null(strstr(cause, "/nonexistent-dir/x.notes.sqlite"));
  free(cause);
  annot_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_created_on_first_write),
      cmocka_unit_test(test_records),
      cmocka_unit_test(test_bad_records),
      cmocka_unit_test(test_count_limit),
      cmocka_unit_test(test_unwritable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
