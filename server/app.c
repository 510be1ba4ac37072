/* app.c -- the daemon's shared state (see app.h).
 *
 * One mutex guards everything.  Store pools are reference counted: a pool
 * replaced by app_set_ready() is closed by whoever gives back its last user.
 * Listener calls happen after the mutex is released.
 */
#include "app.h"
#include "annot.h"
#include "store.h"
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define APP_MAX_WARNINGS 100
#define APP_PROGRESS_INTERVAL_NS 100000000LL /* at most 10 messages/s */

struct app_pool_ref {
  struct store_pool *pool;
  int users;
  struct app_pool_ref *next; /* retired list */
};

struct app {
  pthread_mutex_t mu;
  pthread_mutex_t listener_mu; /* held while the listener runs */
  char *dir, *web_root;
  enum app_phase phase;
  struct ingest_progress progress;
  int64_t progress_sent_ns;
  json_t *warnings; /* the first APP_MAX_WARNINGS warning messages */
  struct app_pool_ref *current;
  struct app_pool_ref *retired; /* replaced pools still in use */
  struct annot *annot;          /* set before serving, then constant */
  app_listener listener;        /* guarded by listener_mu */
  void *listener_ud;
};

struct app *app_new(const char *dir, const char *web_root) {
  struct app *a = xcalloc(1, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  pthread_mutex_init(&a->listener_mu, NULL);
  a->dir = xstrdup(dir ? dir : "");
  a->web_root = xstrdup(web_root ? web_root : "");
  a->phase = APP_LOADING;
  a->warnings = json_array();
  return a;
}

void app_free(struct app *a) {
  if (!a)
    return;
  if (a->current) {
    store_pool_close(a->current->pool);
    free(a->current);
  }
  while (a->retired) {
    struct app_pool_ref *r = a->retired;
    a->retired = r->next;
    store_pool_close(r->pool);
    free(r);
  }
  json_decref(a->warnings);
  annot_free(a->annot);
  pthread_mutex_destroy(&a->mu);
  pthread_mutex_destroy(&a->listener_mu);
  free(a->dir);
  free(a->web_root);
  free(a);
}

const char *app_dir(const struct app *a) { return a->dir; }
const char *app_web_root(const struct app *a) { return a->web_root; }

static const char *app_phase_name(enum app_phase p) {
  switch (p) {
  case APP_READY:
    return "ready";
  case APP_FAILED:
    return "failed";
  default:
    return "loading";
  }
}

/* Tells the listener, if any; takes the reference to msg (NULL when a
 * string was not UTF-8: nothing is sent).  listener_mu (never a->mu) is
 * held during the call, so app_set_listener() waits for calls in flight. */
static void app_tell(struct app *a, enum app_event ev, json_t *msg) {
  pthread_mutex_lock(&a->listener_mu);
  if (a->listener && msg)
    a->listener(a->listener_ud, ev, msg);
  pthread_mutex_unlock(&a->listener_mu);
  json_decref(msg);
}

void app_set_progress(struct app *a, const struct ingest_progress *p) {
  int64_t now = util_now_ns();
  bool send;
  pthread_mutex_lock(&a->mu);
  a->progress = *p;
  a->progress.file[sizeof a->progress.file - 1] = '\0';
  send = now - a->progress_sent_ns >= APP_PROGRESS_INTERVAL_NS;
  if (send)
    a->progress_sent_ns = now;
  pthread_mutex_unlock(&a->mu);
  if (!send)
    return;
  json_t *msg = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "type", "progress",
                          "files_done", (json_int_t)p->files_done,
                          "files_total", (json_int_t)p->files_total, "events",
                          (json_int_t)p->events, "bytes", (json_int_t)p->bytes,
                          "bytes_total", (json_int_t)p->bytes_total);
  json_t *file = json_stringn(p->file, strnlen(p->file, sizeof p->file));
  json_object_set_new(msg, "file", file ? file : json_string("(not UTF-8)"));
  app_tell(a, APP_EV_PROGRESS, msg);
}

void app_set_ready(struct app *a, struct store_pool *pool, uint64_t events,
                   uint64_t warnings) {
  struct app_pool_ref *r = xcalloc(1, sizeof *r), *old;
  r->pool = pool;
  pthread_mutex_lock(&a->mu);
  old = a->current;
  a->current = r;
  a->phase = APP_READY;
  if (old && old->users > 0) {
    old->next = a->retired;
    a->retired = old;
    old = NULL;
  }
  pthread_mutex_unlock(&a->mu);
  if (old) {
    store_pool_close(old->pool);
    free(old);
  }
  app_tell(a, APP_EV_READY,
           json_pack("{s:s, s:I, s:I, s:s}", "type", "ready", "event_count",
                     (json_int_t)events, "warnings", (json_int_t)warnings,
                     "generation", store_pool_generation(pool)));
}

void app_set_failed(struct app *a, const char *error) {
  pthread_mutex_lock(&a->mu);
  a->phase = APP_FAILED;
  pthread_mutex_unlock(&a->mu);
  app_tell(a, APP_EV_FAILED,
           json_pack("{s:s, s:s}", "type", "failed", "error",
                     error ? error : "ingest failed"));
}

void app_add_warning(struct app *a, const char *file, uint64_t offset,
                     const char *message) {
  json_t *msg = json_pack("{s:s, s:s, s:s, s:I}", "type", "warning", "message",
                          message ? message : "", "file", file ? file : "",
                          "offset", (json_int_t)offset);
  if (!msg) /* invalid UTF-8 in a name: say so rather than drop it */
    msg = json_pack("{s:s, s:s, s:s, s:I}", "type", "warning", "message",
                    "(warning text is not valid UTF-8)", "file", "", "offset",
                    (json_int_t)offset);
  bool keep;
  pthread_mutex_lock(&a->mu);
  keep = json_array_size(a->warnings) < APP_MAX_WARNINGS;
  if (keep)
    json_array_append(a->warnings, msg);
  pthread_mutex_unlock(&a->mu);
  if (keep)
    app_tell(a, APP_EV_WARNING, msg);
  else
    json_decref(msg);
}

void app_notify_new_data(struct app *a, const char *const *files, int n) {
  json_t *list = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(list, json_string(files[i]));
  pthread_mutex_lock(&a->mu);
  json_array_clear(a->warnings); /* the re-ingest reports them again */
  a->progress_sent_ns = 0;
  pthread_mutex_unlock(&a->mu);
  app_tell(a, APP_EV_NEW_DATA,
           json_pack("{s:s, s:o}", "type", "new-data", "files", list));
}

enum app_phase app_phase(struct app *a, struct ingest_progress *p) {
  pthread_mutex_lock(&a->mu);
  enum app_phase ph = a->phase;
  if (p)
    *p = a->progress;
  pthread_mutex_unlock(&a->mu);
  return ph;
}

struct store_pool *app_acquire_pool(struct app *a) {
  struct store_pool *p = NULL;
  pthread_mutex_lock(&a->mu);
  if (a->current) {
    a->current->users++;
    p = a->current->pool;
  }
  pthread_mutex_unlock(&a->mu);
  return p;
}

void app_release_pool(struct app *a, struct store_pool *pool) {
  struct app_pool_ref *dead = NULL;
  pthread_mutex_lock(&a->mu);
  if (a->current && a->current->pool == pool) {
    a->current->users--;
  } else {
    for (struct app_pool_ref **pp = &a->retired; *pp; pp = &(*pp)->next)
      if ((*pp)->pool == pool) {
        if (--(*pp)->users == 0) {
          dead = *pp;
          *pp = dead->next;
        }
        break;
      }
  }
  pthread_mutex_unlock(&a->mu);
  if (dead) {
    store_pool_close(dead->pool);
    free(dead);
  }
}

void app_set_annotations(struct app *a, struct annot *n) {
  pthread_mutex_lock(&a->mu);
  annot_free(a->annot);
  a->annot = n;
  pthread_mutex_unlock(&a->mu);
}

struct annot *app_annotations(struct app *a) {
  pthread_mutex_lock(&a->mu);
  struct annot *n = a->annot;
  pthread_mutex_unlock(&a->mu);
  return n;
}

void app_set_listener(struct app *a, app_listener fn, void *ud) {
  pthread_mutex_lock(&a->listener_mu);
  a->listener = fn;
  a->listener_ud = ud;
  pthread_mutex_unlock(&a->listener_mu);
}

json_t *app_hello_messages(struct app *a) {
  json_t *out = json_array();
  pthread_mutex_lock(&a->mu);
  json_t *hello =
      json_pack("{s:s, s:s, s:s}", "type", "hello", "state",
                app_phase_name(a->phase), "version", PACKAGE_VERSION);
  if (a->current)
    json_object_set_new(hello, "generation",
                        json_string(store_pool_generation(a->current->pool)));
  json_array_append_new(out, hello);
  json_array_extend(out, a->warnings);
  pthread_mutex_unlock(&a->mu);
  return out;
}
