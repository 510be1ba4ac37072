/* test_app.c -- the state shared by the ingest and serving threads: phases,
 * progress, the store pool handed over across a new store (the old one
 * closed when its last user gives it back), the warnings kept for new
 * pages (at most 100), and what the listener is told. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
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

#include "app.h"
#include "store.h"
#include "util.h"

/* What the listener was told, in order. */
struct heard {
  json_t *msgs; /* array of the messages */
  int events[5];
};

static void on_event(void *ud, enum app_event ev, json_t *msg) {
  struct heard *h = ud;
  json_array_append(h->msgs, msg);
  h->events[ev]++;
}

/* The type of the last message heard. */
static const char *last_type(const struct heard *h) {
  json_t *m = json_array_get(h->msgs, json_array_size(h->msgs) - 1);
  return json_string_value(json_object_get(m, "type"));
}

/* The last message heard. */
static json_t *last_msg(const struct heard *h) {
  return json_array_get(h->msgs, json_array_size(h->msgs) - 1);
}

/* A complete empty store /tmp/nex-test-app-<pid>-<name>; returns its path
 * (unlink and free it). */
static char *make_store(const char *name) {
  struct store_writer *w;
  char *cause = NULL;
  char *path = xasprintf("/tmp/nex-test-app-%d-%s", (int)getpid(), name);
  assert_int_equal(store_writer_open(path, &w, &cause), 0);
  assert_int_equal(store_writer_finish(w, &cause), 0);
  return path;
}

/* How many of this process's descriptors are open on the file at path:
 * a pool's connections hold one each, a closed pool none. */
static int fds_on(const char *path) {
  char real[PATH_MAX], link[300], target[PATH_MAX];
  int n = 0;
  assert_non_null(realpath(path, real));
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    n += strcmp(target, real) == 0;
  }
  closedir(d);
  return n;
}

static struct store_pool *open_pool(const char *path, int n) {
  struct store_pool *p;
  char *cause = NULL;
  assert_int_equal(store_pool_open(path, n, &p, &cause), 0);
  return p;
}

static void test_phases(void **state) {
  struct heard h = {json_array(), {0}};
  struct app *a = app_new("/some/dir", "/web");
  struct ingest_progress p;
  assert_string_equal(app_dir(a), "/some/dir");
  assert_string_equal(app_web_root(a), "/web");
  assert_int_equal(app_phase(a, NULL), APP_LOADING);
  assert_null(app_acquire_pool(a)); /* nothing to read yet */
  app_set_listener(a, on_event, &h);

  json_t *hello = app_hello_messages(a);
  assert_int_equal(json_array_size(hello), 1);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(hello, 0), "state")),
      "loading");
  json_decref(hello);

  app_set_failed(a, "cannot read the profile");
  assert_int_equal(app_phase(a, NULL), APP_FAILED);
  assert_int_equal(h.events[APP_EV_FAILED], 1);
  assert_string_equal(last_type(&h), "failed");
  assert_string_equal(json_string_value(json_object_get(last_msg(&h), "error")),
                      "cannot read the profile");
  hello = app_hello_messages(a);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(hello, 0), "state")),
      "failed");
  json_decref(hello);

  char *path = make_store("phases.db");
  app_set_ready(a, open_pool(path, 1), 42, 3);
  assert_int_equal(app_phase(a, &p), APP_READY);
  assert_int_equal(h.events[APP_EV_READY], 1);
  assert_string_equal(last_type(&h), "ready");
  assert_int_equal(
      json_integer_value(json_object_get(last_msg(&h), "event_count")), 42);
  assert_int_equal(
      json_integer_value(json_object_get(last_msg(&h), "warnings")), 3);

  /* no listener: nothing is heard */
  app_set_listener(a, NULL, NULL);
  app_set_failed(a, "again");
  assert_int_equal(json_array_size(h.msgs), 2);
  app_free(a);
  assert_int_equal(fds_on(path), 0); /* app_free() closed the pool */
  json_decref(h.msgs);
  unlink(path);
  free(path);
}

static void test_progress(void **state) {
  struct heard h = {json_array(), {0}};
  struct app *a = app_new(NULL, NULL);
  struct ingest_progress in = {1, 10, 100, 1000, 5000, "a/b.pb"}, out;
  app_set_listener(a, on_event, &h);
  app_set_progress(a, &in);
  /* the first one is always sent */
  assert_int_equal(h.events[APP_EV_PROGRESS], 1);
  json_t *m = last_msg(&h);
  assert_string_equal(json_string_value(json_object_get(m, "type")),
                      "progress");
  assert_int_equal(json_integer_value(json_object_get(m, "files_done")), 1);
  assert_int_equal(json_integer_value(json_object_get(m, "files_total")), 10);
  assert_int_equal(json_integer_value(json_object_get(m, "events")), 100);
  assert_int_equal(json_integer_value(json_object_get(m, "bytes")), 1000);
  assert_int_equal(json_integer_value(json_object_get(m, "bytes_total")), 5000);
  assert_string_equal(json_string_value(json_object_get(m, "file")), "a/b.pb");

  /* the phase always has the latest figures, sent or not (at most ten
   * messages a second) */
  in.files_done = 2;
  app_set_progress(a, &in);
  assert_int_equal(app_phase(a, &out), APP_LOADING);
  assert_int_equal(out.files_done, 2);
  assert_string_equal(out.file, "a/b.pb");

  /* new data: the listener is told the files; the next progress is sent */
  const char *files[] = {"x.pb", "y.json"};
  app_notify_new_data(a, files, 2);
  assert_string_equal(last_type(&h), "new-data");
  json_t *list = json_object_get(last_msg(&h), "files");
  assert_int_equal(json_array_size(list), 2);
  assert_string_equal(json_string_value(json_array_get(list, 1)), "y.json");
  int before = h.events[APP_EV_PROGRESS];
  in.files_done = 3;
  app_set_progress(a, &in);
  assert_int_equal(h.events[APP_EV_PROGRESS], before + 1);
  assert_int_equal(
      json_integer_value(json_object_get(last_msg(&h), "files_done")), 3);

  /* a file name that is not UTF-8 is said so, not dropped */
  snprintf(in.file, sizeof in.file, "bad\xff.pb");
  app_notify_new_data(a, files, 0);
  app_set_progress(a, &in);
  assert_string_equal(json_string_value(json_object_get(last_msg(&h), "file")),
                      "(not UTF-8)");
  app_free(a);
  json_decref(h.msgs);
}

/* A new store while a request reads the old one: the old pool stays open
 * until that request gives it back, and new requests get the new one. */
static void test_pool_handover(void **state) {
  struct app *a = app_new(NULL, NULL);
  char *old_path = make_store("old.db"), *new_path = make_store("new.db");
  struct store_pool *old = open_pool(old_path, 2);
  struct store_pool *young = open_pool(new_path, 2);
  assert_int_equal(fds_on(old_path), 2);

  app_set_ready(a, old, 0, 0);
  struct store_pool *r1 = app_acquire_pool(a);
  struct store_pool *r2 = app_acquire_pool(a);
  assert_ptr_equal(r1, old);
  assert_ptr_equal(r2, old);

  app_set_ready(a, young, 0, 0);
  assert_ptr_equal(app_acquire_pool(a), young);
  app_release_pool(a, young);
  assert_int_equal(fds_on(old_path), 2); /* still in use twice */
  app_release_pool(a, r1);
  assert_int_equal(fds_on(old_path), 2); /* still in use once */
  app_release_pool(a, r2);
  assert_int_equal(fds_on(old_path), 0); /* its last user closed it */
  assert_int_equal(fds_on(new_path), 2);

  /* a pool nobody uses is closed as soon as it is replaced */
  char *third = make_store("third.db");
  app_set_ready(a, open_pool(third, 1), 0, 0);
  assert_int_equal(fds_on(new_path), 0);
  assert_int_equal(fds_on(third), 1);
  app_free(a);
  assert_int_equal(fds_on(third), 0);
  unlink(old_path);
  unlink(new_path);
  unlink(third);
  free(old_path);
  free(new_path);
  free(third);
}

static void test_warnings_capped(void **state) {
  struct heard h = {json_array(), {0}};
  struct app *a = app_new(NULL, NULL);
  app_set_listener(a, on_event, &h);
  for (int i = 0; i < 150; i++) {
    char msg[32];
    snprintf(msg, sizeof msg, "warning %d", i);
    app_add_warning(a, "f.pb", (uint64_t)i, msg);
  }
  /* the first 100 are told and kept; the rest only counted by ingest */
  assert_int_equal(h.events[APP_EV_WARNING], 100);
  assert_string_equal(
      json_string_value(json_object_get(last_msg(&h), "message")),
      "warning 99");
  json_t *hello = app_hello_messages(a);
  assert_int_equal(json_array_size(hello), 101);
  json_t *w = json_array_get(hello, 100);
  assert_string_equal(json_string_value(json_object_get(w, "type")), "warning");
  assert_string_equal(json_string_value(json_object_get(w, "file")), "f.pb");
  assert_int_equal(json_integer_value(json_object_get(w, "offset")), 99);
  json_decref(hello);

  /* a re-ingest reports its warnings again: the list starts over */
  app_notify_new_data(a, NULL, 0);
  hello = app_hello_messages(a);
  assert_int_equal(json_array_size(hello), 1);
  json_decref(hello);
  app_add_warning(a, NULL, 7, "bad \xff byte");
  assert_string_equal(
      json_string_value(json_object_get(last_msg(&h), "message")),
      "(warning text is not valid UTF-8)");
  hello = app_hello_messages(a);
  assert_int_equal(json_array_size(hello), 2);
  json_decref(hello);
  app_free(a);
  json_decref(h.msgs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_phases),
      cmocka_unit_test(test_progress),
      cmocka_unit_test(test_pool_handover),
      cmocka_unit_test(test_warnings_capped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
