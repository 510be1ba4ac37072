/* test_api.c -- the REST routing of serve/api.c, without HTTP: every route
 * and method, the 404/405/400/503 answers as JSON {"error", "detail"}, and
 * window and event answers from a small store built here (a slice track,
 * a counter track with LOD rows). */
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

#include "api.h"
#include "app.h"
#include "store.h"
#include "teststore.h"
#include "util.h"

static char store_path[64];
static struct app *ready;   /* a published store */
static struct app *loading; /* none yet */
static int64_t slices_id, counter_id;

/* Track "slices": nrt_execute at 1000, 2000, 3000 (500 ns each).  Track
 * "counter": value i at i * 1000 ns for i < 100, LOD from level 2. */
static void build_store(const char *path) {
  struct store_writer *w = teststore_open(path);
  struct store_track t = teststore_track("slices", "neuron_rt");
  slices_id = store_writer_track(w, &t);
  teststore_slices(w, slices_id,
                   &(struct teststore_slices){.name = "nrt_execute",
                                              .n = 3,
                                              .lod_level = -1,
                                              .ts0 = 1000,
                                              .step = 1000,
                                              .dur = 500,
                                              .id0 = 1});
  t = teststore_track("counter", "host_mem");
  counter_id = store_writer_track(w, &t);
  teststore_counter(w, counter_id, 100, 0, 2);
  teststore_finish(w);
}

static int setup(void **state) {
  struct store_pool *p;
  char *cause = NULL;
  snprintf(store_path, sizeof store_path, "/tmp/nex-test-api-%d.db",
           (int)getpid());
  build_store(store_path);
  assert_int_equal(store_pool_open(store_path, 2, &p, &cause), 0);
  ready = app_new("/profile", "/web");
  app_set_ready(ready, p, 103, 0);
  loading = app_new("/profile", "/web");
  return 0;
}

static int teardown(void **state) {
  app_free(ready);
  app_free(loading);
  unlink(store_path);
  return 0;
}

/* The query string "k=v&k=v" of a request, split in place. */
struct query_args {
  char buf[512];
  const char *key[16], *value[16];
  int n;
};

static const char *arg(void *ctx, const char *key) {
  const struct query_args *q = ctx;
  for (int i = 0; i < q->n; i++)
    if (strcmp(q->key[i], key) == 0)
      return q->value[i];
  return NULL;
}

/* An answer: the status, the Allow header and the body parsed. */
struct answer {
  int status;
  const char *allow;
  json_t *body;
};

/* Sends method path?query to a (through db when not NULL: api_handle_db)
 * and parses the answer, which must be JSON. */
static struct answer call_db(struct app *a, sqlite3 *db, const char *method,
                             const char *path, const char *query) {
  struct query_args q = {.n = 0};
  snprintf(q.buf, sizeof q.buf, "%s", query ? query : "");
  for (char *p = q.buf, *next; *p && q.n < 16; p = next) {
    next = p + strcspn(p, "&");
    if (*next)
      *next++ = '\0';
    char *eq = strchr(p, '=');
    assert_non_null(eq);
    *eq = '\0';
    q.key[q.n] = p;
    q.value[q.n++] = eq + 1;
  }
  struct api_request rq = {method, path, arg, &q, NULL, 0, NULL};
  struct api_response rs;
  if (db)
    api_handle_db(a, db, &rq, &rs);
  else
    api_handle(a, &rq, &rs);
  struct answer an = {rs.status, rs.allow, NULL};
  assert_null(rs.stream.next);
  assert_string_equal(rs.content_type, "application/json");
  an.body = json_loadb(rs.body, rs.len, 0, NULL);
  assert_non_null(an.body);
  api_response_free(&rs);
  return an;
}

static struct answer call(struct app *a, const char *method, const char *path,
                          const char *query) {
  return call_db(a, NULL, method, path, query);
}

/* Checks an error answer: the status, {"error": code, "detail": ...}
 * (plus "progress" for 503) and a detail containing `says`. */
static void expect_error(struct answer an, int status, const char *code,
                         const char *says) {
  assert_int_equal(an.status, status);
  assert_true(json_is_object(an.body));
  assert_int_equal(json_object_size(an.body), status == 503 ? 3 : 2);
  assert_string_equal(json_string_value(json_object_get(an.body, "error")),
                      code);
  const char *detail = json_string_value(json_object_get(an.body, "detail"));
  assert_non_null(detail);
  if (!strstr(detail, says))
    fail_msg("detail '%s' does not say '%s'", detail, says);
  json_decref(an.body);
}

static void test_health(void **state) {
  struct answer an = call(ready, "GET", "/api/v1/health", NULL);
  assert_int_equal(an.status, 200);
  assert_string_equal(json_string_value(json_object_get(an.body, "state")),
                      "ready");
  assert_string_equal(json_string_value(json_object_get(an.body, "status")),
                      "ok");
  json_decref(an.body);
  an = call(loading, "HEAD", "/api/v1/health", NULL);
  assert_int_equal(an.status, 200);
  assert_string_equal(json_string_value(json_object_get(an.body, "state")),
                      "loading");
  json_decref(an.body);
}

/* Every route that reads the store answers 503 while none is published. */
static void test_loading(void **state) {
  static const char *const paths[] = {
      "/api/v1/tracks",          "/api/v1/events/1:0:1000",
      "/api/v1/device-profiles", "/api/v1/device-profiles/1",
      "/api/v1/summary",         "/api/v1/search"};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
    expect_error(call(loading, "GET", paths[i], "q=x"), 503, "loading",
                 "still loading");
  expect_error(
      call(loading, "GET", "/api/v1/slices", "tracks=1&start=0&end=10&px=10"),
      503, "loading", "retry when /api/v1/health says ready");
  app_set_failed(loading, "no profile");
  struct answer an = call(loading, "GET", "/api/v1/tracks", NULL);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(an.body, "progress"), "files_done")),
                   0);
  expect_error(an, 503, "failed", "could not be loaded");
  /* and /profile says so with 200 */
  an = call(loading, "GET", "/api/v1/profile", NULL);
  assert_int_equal(an.status, 200);
  assert_string_equal(json_string_value(json_object_get(an.body, "state")),
                      "failed");
  json_decref(an.body);
}

static void test_not_found(void **state) {
  expect_error(call(ready, "GET", "/api/v2/health", NULL), 404, "not_found",
               "no API at /api/v2/health; the API is /api/v1/");
  expect_error(call(ready, "GET", "/api/v1/nothing", NULL), 404, "not_found",
               "no API endpoint /api/v1/nothing");
  expect_error(call(ready, "GET", "/api/v1/health/more", NULL), 404,
               "not_found", "no API endpoint /api/v1/health/more");
  expect_error(call(ready, "GET", "/api/v1/events/1:0:1000/other", NULL), 404,
               "not_found", "no API endpoint");
  expect_error(call(ready, "GET", "/api/v1/a/b/c/d/e", NULL), 404, "not_found",
               "no API endpoint /api/v1/a/b/c/d/e");
  expect_error(call(ready, "GET", "/api/v1/events/9:0:1000", NULL), 404,
               "not_found", "no event with key 9:0:1000");
  expect_error(call(ready, "GET", "/api/v1/device-profiles/7", NULL), 404,
               "not_found", "no device profile with id 7");
  expect_error(
      call(ready, "GET", "/api/v1/slices", "tracks=99&start=0&end=10&px=10"),
      404, "not_found", "no track with id 99");
}

static void test_methods(void **state) {
  struct answer an = call(ready, "POST", "/api/v1/slices", NULL);
  assert_string_equal(an.allow, "GET, HEAD");
  expect_error(an, 405, "method_not_allowed", "POST /api/v1/slices: use GET");
  an = call(ready, "DELETE", "/api/v1/health", NULL);
  assert_string_equal(an.allow, "GET, HEAD");
  expect_error(an, 405, "method_not_allowed", "DELETE /api/v1/health");
  an = call(ready, "GET", "/api/v1/db/store/_search", NULL);
  assert_string_equal(an.allow, "POST");
  expect_error(an, 405, "method_not_allowed", "use POST");
  an = call(ready, "HEAD", "/api/v1/tracks", NULL);
  assert_int_equal(an.status, 200);
  json_decref(an.body);
}

static void test_bad_parameters(void **state) {
  static const struct {
    const char *path, *query, *says;
  } cases[] = {
      {"/api/v1/slices", "start=0&end=10&px=10", "'tracks' is required"},
      {"/api/v1/slices", "tracks=1,x&start=0&end=10&px=10",
       "comma-separated integers, got 'x'"},
      {"/api/v1/slices", "tracks=1,,2&start=0&end=10&px=10",
       "comma-separated integers"},
      {"/api/v1/slices", "tracks=1&end=10&px=10", "'start' is required"},
      {"/api/v1/slices", "tracks=1&start=5&end=5&px=10",
       "'end' must be greater than 'start'"},
      {"/api/v1/slices", "tracks=1&start=0&end=10&px=0",
       "'px' must be an integer from 1 to 10000, got '0'"},
      {"/api/v1/slices", "tracks=1&start=0&end=10&px=10001", "'px'"},
      {"/api/v1/slices", "tracks=1&start=1e3&end=10&px=10", "'start'"},
      {"/api/v1/slices", "tracks=1&start=-9223372036854775808&end=1&px=10",
       "wider than 2^63-1 ns"},
      {"/api/v1/counters", "tracks=1&start=0&end=10&px=10",
       "is a slices track; use /api/v1/slices"},
      {"/api/v1/slices", "tracks=2&start=0&end=10&px=10",
       "is a counter track; use /api/v1/counters"},
      {"/api/v1/tracks", "grouping=bogus", "'grouping' must be default"},
      {"/api/v1/events/1-0-1000", NULL, "<track>:<lane>:<ts>"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_error(call(ready, "GET", cases[i].path, cases[i].query), 400,
                 "bad_parameter", cases[i].says);
}

/* The i-th integer of column `col` of the first lane or series of the
 * first track of a window answer. */
static int64_t cell(json_t *body, const char *list, const char *col, size_t i) {
  json_t *t = json_array_get(json_object_get(body, "tracks"), 0);
  json_t *l = json_array_get(json_object_get(t, list), 0);
  return json_integer_value(json_array_get(json_object_get(l, col), i));
}

static size_t cells(json_t *body, const char *list, const char *col) {
  json_t *t = json_array_get(json_object_get(body, "tracks"), 0);
  json_t *l = json_array_get(json_object_get(t, list), 0);
  return json_array_size(json_object_get(l, col));
}

static void test_windows(void **state) {
  char q[128];
  snprintf(q, sizeof q, "tracks=%lld&start=500&end=10000&px=100",
           (long long)slices_id);
  struct answer an = call(ready, "GET", "/api/v1/slices", q);
  assert_int_equal(an.status, 200);
  assert_string_equal(json_string_value(json_object_get(an.body, "base")),
                      "500");
  assert_int_equal(cells(an.body, "lanes", "ts"), 3);
  assert_int_equal(cell(an.body, "lanes", "ts", 0), 500); /* 1000 - base */
  assert_int_equal(cell(an.body, "lanes", "ts", 2), 2500);
  assert_int_equal(cell(an.body, "lanes", "dur", 1), 500);
  char id[24];
  snprintf(id, sizeof id, "%lld", (long long)cell(an.body, "lanes", "name", 0));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(an.body, "names"), id)),
      "nrt_execute");
  json_decref(an.body);

  /* start=-1 at a LOD level (UBSan once aborted here): every sample once */
  snprintf(q, sizeof q, "tracks=%lld&start=-1&end=1000000&px=1000",
           (long long)counter_id);
  an = call(ready, "GET", "/api/v1/counters", q);
  assert_int_equal(an.status, 200);
  json_t *s = json_array_get(
      json_object_get(json_array_get(json_object_get(an.body, "tracks"), 0),
                      "series"),
      0);
  assert_int_equal(json_integer_value(json_object_get(s, "level")), 2);
  int64_t count = 0;
  for (size_t i = 0; i < cells(an.body, "series", "count"); i++)
    count += cell(an.body, "series", "count", i);
  assert_int_equal(count, 100);
  json_decref(an.body);
}

static void test_event(void **state) {
  char path[64];
  snprintf(path, sizeof path, "/api/v1/events/%lld:0:2000",
           (long long)slices_id);
  struct answer an = call(ready, "GET", path, NULL);
  assert_int_equal(an.status, 200);
  assert_string_equal(json_string_value(json_object_get(an.body, "name")),
                      "nrt_execute");
  assert_string_equal(json_string_value(json_object_get(an.body, "start_ts")),
                      "2000");
  assert_string_equal(
      json_string_value(json_object_get(an.body, "duration_ns")), "500");
  assert_true(json_is_null(json_object_get(an.body, "device_profile")));
  json_decref(an.body);
  snprintf(path, sizeof path, "/api/v1/events/%lld:0:2000/device-profile",
           (long long)slices_id);
  expect_error(call(ready, "GET", path, NULL), 404, "no_device_profile",
               "no device profile matches");
}

/* Through a caller's connection (the WebSocket workers): the same answers,
 * but not for what needs the pool itself. */
static void test_handle_db(void **state) {
  struct store_pool *p = app_acquire_pool(ready);
  sqlite3 *db = store_pool_get(p);
  expect_error(call_db(ready, db, "GET", "/api/v1/profile", NULL), 404,
               "not_found", "/api/v1/profile is only available over HTTP");
  char q[128];
  snprintf(q, sizeof q, "tracks=%lld&start=0&end=10000&px=100",
           (long long)slices_id);
  struct answer an = call_db(ready, db, "GET", "/api/v1/slices", q);
  assert_int_equal(an.status, 200);
  assert_int_equal(cells(an.body, "lanes", "ts"), 3);
  json_decref(an.body);
  store_pool_put(p, db);
  app_release_pool(ready, p);
}

/* With every pooled connection held elsewhere, a store-backed endpoint
 * answers 503 busy with Retry-After after a bounded wait (it waited for
 * ever), while the SQL endpoint and exports, which read from connections
 * of their own, still answer. */
static void test_busy(void **state) {
  struct store_pool *p = app_acquire_pool(ready);
  sqlite3 *held[2] = {store_pool_get(p), store_pool_get(p)};
  struct query_args q = {.n = 0};
  struct api_request rq = {"GET", "/api/v1/summary", arg, &q, NULL, 0, NULL};
  struct api_response rs;
  api_handle(ready, &rq, &rs);
  assert_int_equal(rs.status, 503);
  assert_int_equal(rs.retry_after, 1);
  assert_string_equal(rs.body,
                      "{\"error\":\"busy\",\"detail\":\"all 2 store "
                      "connections stayed busy for 3000 ms (long queries of "
                      "other clients); retry in a moment\"}");
  api_response_free(&rs);

  const char *body = "{\"type\":\"databaseExplorerQuery\",\"query\":"
                     "\"SELECT count(*) FROM slice\"}";
  struct api_request sq = {
      "POST", "/api/v1/db/system/_search", arg, &q, body, strlen(body), NULL};
  api_handle(ready, &sq, &rs);
  assert_int_equal(rs.status, 200);
  assert_string_equal(rs.body, "{\"columns\":[\"count(*)\"],\"rows\":[[3]],"
                               "\"truncated\":false}");
  api_response_free(&rs);

  q.key[0] = "format";
  q.value[0] = "csv";
  q.n = 1;
  struct api_request eq = {"GET", "/api/v1/export", arg, &q, NULL, 0, NULL};
  struct sbuf out = {0};
  int more = 1, names = 0;
  api_handle(ready, &eq, &rs);
  assert_int_equal(rs.status, 200);
  assert_non_null(rs.stream.next);
  while (more > 0)
    more = rs.stream.next(rs.stream.ctx, &out);
  assert_int_equal(more, 0);
  for (const char *t = out.s; (t = strstr(t, "nrt_execute")) != NULL; t++)
    names++;
  assert_int_equal(names, 3);
  sbuf_free(&out);
  api_response_free(&rs);
  store_pool_put(p, held[0]);
  store_pool_put(p, held[1]);
  app_release_pool(ready, p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_health),         cmocka_unit_test(test_loading),
      cmocka_unit_test(test_not_found),      cmocka_unit_test(test_methods),
      cmocka_unit_test(test_bad_parameters), cmocka_unit_test(test_windows),
      cmocka_unit_test(test_event),          cmocka_unit_test(test_handle_db),
      cmocka_unit_test(test_busy),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
