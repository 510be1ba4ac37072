/* test_annot.c -- the annotations database (store/annot.c): created on the
 * first write only, records kept exactly and in order, updates and deletes
 * of known and unknown ids, the text and count limits, and a second opening
 * of the same file (a restart) seeing the same records.  Then the API's view
 * of them (query/query_annot.c) across three stores of one profile: a track
 * renumbered and an event moved to another lane keep their annotations,
 * an event gone leaves its note without a key. */
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
#include "query_annot.h"
#include "store.h"
#include "teststore.h"

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

/* A store at path: track "rt" (pid 10, tid 11, NeuronCore 0) with
 * nrt_execute at 1000 (lane 0, 500 ns) and, when load_lane >= 0, nrt_load
 * at 1100 (100 ns) on lane load_lane; first, when `before`, another track
 * (pid 9), so that "rt" is track 2 instead of 1. */
static void build_store(const char *path, int before, int load_lane) {
  struct store_writer *w;
  char *cause = NULL;
  unlink(path);
  assert_int_equal(store_writer_open(path, &w, &cause), 0);
  struct store_track t = teststore_track("slices", "neuron_rt");
  t.pid = 9;
  if (before)
    store_writer_track(w, &t);
  t.pid = 10;
  int64_t rt = store_writer_track(w, &t);
  store_writer_slice(w, rt, 0, 1000, 1, 500,
                     store_writer_intern(w, "nrt_execute"), 0, NULL, 0);
  if (load_lane >= 0)
    store_writer_slice(w, rt, load_lane, 1100, 2, 100,
                       store_writer_intern(w, "nrt_load"), 0, NULL, 0);
  struct store_track_stats st = {
      load_lane + 1 > 1 ? load_lane + 1 : 1, 500, 2, 1000, 1500, -1};
  store_writer_track_stats(w, rt, &st);
  assert_int_equal(store_writer_finish(w, &cause), 0);
}

/* query_annot() through a connection to the store at path; the answer's
 * JSON text (malloc'd) or, on an error, "<status> <detail>". */
static char *ask(const char *store, struct annot *a, const char *method,
                 int64_t id, const char *body) {
  struct store_pool *p;
  char *cause = NULL, *text;
  assert_int_equal(store_pool_open(store, 1, &p, &cause), 0);
  sqlite3 *db = store_pool_get(p);
  struct query_err e;
  json_t *out;
  if (query_annot(db, a, method, id, body, body ? strlen(body) : 0, &out, &e) <
      0) {
    text = malloc(600);
    snprintf(text, 600, "%d %s", e.status, e.detail);
  } else {
    text = json_dumps(out, JSON_COMPACT);
    json_decref(out);
  }
  store_pool_put(p, db);
  store_pool_close(p);
  return text;
}

static void expect(char *got, const char *want) {
  assert_string_equal(got, want);
  free(got);
}

#define PATH_RT "slices/system/neuron_rt/i-1/10/11/0////////"
#define NOTE(id, tr, ev, name, ts, end, text)                                  \
  "{\"id\":\"" id "\",\"kind\":\"note\",\"ts\":\"" ts "\",\"end\":\"" end      \
  "\",\"track\":" tr ",\"track_path\":\"" PATH_RT "\",\"event\":" ev           \
  ",\"event_name\":\"" name "\",\"text\":\"" text "\",\"color\":null}"

static void test_across_stores(void **state) {
  (void)state;
  char *s1 = test_path("one.db"), *s2 = test_path("two.db"),
       *s3 = test_path("three.db"), *notes = test_path("x.notes.sqlite");
  build_store(s1, 0, 1);
  build_store(s2, 1, 2);
  build_store(s3, 1, -1);
  struct annot *a = annot_new(notes);
  const char *n1 =
      NOTE("1", "\"1\"", "\"1:1:1100\"", "nrt_load", "1100", "1200", "why");
  expect(ask(s1, a, "POST", -1,
             "{\"kind\":\"note\",\"event\":\"1:1:1100\",\"text\":\"why\"}"),
         n1);
  expect(
      ask(s1, a, "POST", -1,
          "{\"kind\":\"area\",\"ts\":900,\"end\":\"2000\",\"track\":1,\"text\":"
          "\"a\"}"),
      "{\"id\":\"2\",\"kind\":\"area\",\"ts\":\"900\",\"end\":\"2000\","
      "\"track\":\"1\",\"track_path\":\"" PATH_RT
      "\",\"event\":null,\"event_name\":null,\"text\":\"a\",\"color\":null}");
  expect(
      ask(s1, a, "POST", -1,
          "{\"kind\":\"note\",\"event\":\"1:0:1000\",\"text\":\"x\"}"),
      NOTE("3", "\"1\"", "\"1:0:1000\"", "nrt_execute", "1000", "1500", "x"));
  expect(ask(s1, a, "POST", -1, "{\"kind\":\"note\",\"event\":\"1:0:1100\"}"),
         "400 field 'event': no event with key 1:0:1100");
  expect(ask(s1, a, "POST", -1,
             "{\"kind\":\"area\",\"ts\":1,\"end\":2,\"track\":7}"),
         "400 field 'track': no track with id 7");
  expect(ask(s1, a, "PATCH", 9, "{\"text\":\"y\"}"),
         "404 no annotation with id 9");
  expect(ask(s1, a, "PATCH", 3, "[]"), "400 the body must be a JSON object");
  /* Store two: the track is 2, nrt_load on lane 2; the list by ts. */
  const char *n1b =
      NOTE("1", "\"2\"", "\"2:2:1100\"", "nrt_load", "1100", "1200", "why");
  char want[2048];
  snprintf(
      want, sizeof want,
      "{\"file\":\"%s\",\"annotations\":[{\"id\":\"2\",\"kind\":\"area\","
      "\"ts\":\"900\",\"end\":\"2000\","
      "\"track\":\"2\",\"track_path\":\"" PATH_RT
      "\",\"event\":null,\"event_name\":null,\"text\":\"a\","
      "\"color\":null},%s,%s]}",
      notes,
      NOTE("3", "\"2\"", "\"2:0:1000\"", "nrt_execute", "1000", "1500", "x"),
      n1b);
  expect(ask(s2, a, "GET", -1, NULL), want);
  /* Store three: nrt_load is gone; its note keeps its time and name. */
  expect(ask(s3, a, "PATCH", 1, "{\"text\":\"gone?\"}"),
         NOTE("1", "\"2\"", "null", "nrt_load", "1100", "1200", "gone?"));
  expect(ask(s3, a, "DELETE", 1, NULL), "{\"deleted\":\"1\"}");
  annot_free(a);
  test_done(s1);
  test_done(s2);
  test_done(s3);
  test_done(notes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_created_on_first_write),
      cmocka_unit_test(test_records),
      cmocka_unit_test(test_bad_records),
      cmocka_unit_test(test_count_limit),
      cmocka_unit_test(test_unwritable),
      cmocka_unit_test(test_across_stores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
