/* api.c -- REST handlers of /api/v1/ (see api.h and doc/api.md).
 *
 * Each handler validates its parameters (400 naming the parameter), takes a
 * pooled store connection only when it needs one (503 while none is
 * published yet) and answers JSON.  Window answers are written by query.c
 * straight into the body buffer; exports are streamed.
 */
#include "api.h"
#include "api_param.h"
#include "app.h"
#include "export.h"
#include "hostcheck.h"
#include "log.h"
#include "query.h"
#include "query_annot.h"
#include "store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define API_JSON "application/json"
/* How long a request waits for a pooled connection before a 503 busy. */
#define API_POOL_WAIT_MS 3000
/* Requests that open a store connection of their own run at most this many
 * at once (each is CPU or a connection's cache); more get a 503 busy. */
#define API_MAX_SQL 1
#define API_MAX_EXPORTS 4
/* The cache of such a connection; no memory map, whose pages would count
 * again in the process's RSS for every connection that touched them. */
#define API_OWN_CONN_PRAGMAS "PRAGMA mmap_size=0; PRAGMA cache_size=-2048"

/* The requests running on connections of their own, over every server of
 * the process (there is one). */
static atomic_int api_sql_running, api_exports_running;

struct api_ctx {
  struct app *app;
  const struct api_request *rq;
  struct api_response *rs;
  struct store_pool *pool; /* acquired by api_db() */
  sqlite3 *db;
  bool borrowed;           /* db is the caller's (api_handle_db()) */
  struct api_param params; /* the query arguments, a bad one answered 400 */
};

/* api_param's answer to a bad parameter: a 400 naming it. */
static void api_bad_param(void *rs, const char *detail) {
  api_error(rs, 400, "bad_parameter", detail);
}

/* ------------------------------------------------------------------ */
/* answers */

static void api_json(struct api_response *rs, int status, json_t *j) {
  rs->status = status;
  rs->content_type = API_JSON;
  rs->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!rs->body) { /* never an empty 200 */
    rs->status = 500;
    rs->body = xstrdup("{\"error\":\"internal\",\"detail\":\"the answer "
                       "could not be written (out of memory)\"}");
    log_warn("an answer could not be written as JSON");
  }
  rs->len = strlen(rs->body);
}

void api_error(struct api_response *rs, int status, const char *code,
               const char *detail) {
  free(rs->body);
  rs->body = NULL;
  api_json(rs, status,
           json_pack("{s:s, s:o}", "error", code, "detail",
                     query_json_text(detail)));
}

static void api_errorf(struct api_response *rs, int status, const char *code,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void api_errorf(struct api_response *rs, int status, const char *code,
                       const char *fmt, ...) {
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  api_error(rs, status, code, detail);
}

static void api_query_error(struct api_response *rs,
                            const struct query_err *e) {
  if (e->status >= 500)
    log_warn("%s", e->detail);
  api_error(rs, e->status, e->code, e->detail);
}

/* Answers the JSON text a query wrote into b (rc 0: b's text becomes the
 * body) or its error (rc < 0: b is freed). */
static void api_text(struct api_ctx *c, int rc, struct sbuf *b,
                     const struct query_err *e) {
  if (rc < 0) {
    sbuf_free(b);
    api_query_error(c->rs, e);
    return;
  }
  c->rs->status = 200;
  c->rs->content_type = API_JSON;
  c->rs->body = b->s;
  c->rs->len = b->len;
}

void api_response_free(struct api_response *rs) {
  free(rs->body);
  free(rs->filename);
  if (rs->stream.close)
    rs->stream.close(rs->stream.ctx);
  memset(rs, 0, sizeof *rs);
}

static const char *api_phase_name(enum app_phase p) {
  return p == APP_READY ? "ready" : p == APP_FAILED ? "failed" : "loading";
}

static json_t *api_progress(const struct ingest_progress *p) {
  return json_pack(
      "{s:I, s:I, s:I, s:I, s:I, s:o}", "files_done", (json_int_t)p->files_done,
      "files_total", (json_int_t)p->files_total, "events",
      (json_int_t)p->events, "bytes", (json_int_t)p->bytes, "bytes_total",
      (json_int_t)p->bytes_total, "file", query_json_text(p->file));
}

/* The request's `gen` (when given) names the store being answered from;
 * false (with a 409 stale answer carrying the current generation) when it
 * names another: the ids the client holds may mean other things now. */
char *api_stale(const char *want, const char *cur) {
  char detail[320];
  if (strcmp(want, cur) == 0)
    return NULL;
  snprintf(detail, sizeof detail,
           "the profile was re-ingested: generation '%.64s' is gone and its "
           "track and event ids may mean other things now; reload "
           "/api/v1/tracks (generation '%s')",
           want, cur);
  json_t *j = json_pack("{s:s, s:o, s:s}", "error", "stale", "detail",
                        query_json_text(detail), "generation", cur);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  return text ? text : xstrdup("{\"error\":\"stale\"}");
}

static bool api_gen_ok(struct api_ctx *c) {
  const char *want = c->rq->arg(c->rq->arg_ctx, "gen");
  char buf[STORE_GEN_LEN + 1];
  const char *cur = buf;
  if (!want)
    return true;
  if (c->pool)
    cur = store_pool_generation(c->pool);
  else
    store_generation(c->db, buf);
  char *stale = api_stale(want, cur);
  if (!stale)
    return true;
  c->rs->status = 409;
  c->rs->content_type = API_JSON;
  c->rs->body = stale;
  c->rs->len = strlen(stale);
  return false;
}

/* The published store for this request; false (with a 503 answer) while
 * none is published, or a 409 when the request's gen is not its. */
static bool api_pool(struct api_ctx *c) {
  if (c->pool)
    return true;
  c->pool = app_acquire_pool(c->app);
  if (c->pool)
    return api_gen_ok(c);
  struct ingest_progress p;
  enum app_phase ph = app_phase(c->app, &p);
  api_json(c->rs, 503,
           json_pack("{s:s, s:s, s:o}", "error",
                     ph == APP_FAILED ? "failed" : "loading", "detail",
                     ph == APP_FAILED
                         ? "the profile could not be loaded; see the server "
                           "log"
                         : "the profile is still loading; retry when "
                           "/api/v1/health says ready",
                     "progress", api_progress(&p)));
  return false;
}

/* A pooled connection of c->pool, waited for at most API_POOL_WAIT_MS;
 * false (with a 503 busy answer) when none came free. */
static bool api_take(struct api_ctx *c) {
  c->db = store_pool_get_wait(c->pool, API_POOL_WAIT_MS);
  if (c->db)
    return true;
  api_errorf(c->rs, 503, "busy",
             "all %d store connections stayed busy for %d ms (long queries "
             "of other clients); retry in a moment",
             store_pool_size(c->pool), API_POOL_WAIT_MS);
  c->rs->retry_after = 1;
  return false;
}

/* One of `max` slots of `running` for a heavy request (`what`); false
 * with a 503 busy answer when all are taken.  api_slot_put() gives it
 * back. */
static bool api_slot_take(struct api_ctx *c, atomic_int *running, int max,
                          const char *what) {
  if (atomic_fetch_add(running, 1) < max)
    return true;
  atomic_fetch_sub(running, 1);
  api_errorf(c->rs, 503, "busy",
             "%d %s already running%s; retry in a moment", max, what,
             max == 1 ? " is" : " are");
  c->rs->retry_after = 1;
  return false;
}

static void api_slot_put(atomic_int *running) {
  atomic_fetch_sub(running, 1);
}

/* A store connection for this request; false (with a 503 answer) while no
 * store is published or all connections stay busy, or a 409 (api_gen_ok). */
static bool api_db(struct api_ctx *c) {
  if (c->db)
    return !c->borrowed || api_gen_ok(c);
  return api_pool(c) && api_take(c);
}

/* Endpoints that need the app's pool itself, not one connection, are not
 * answered through api_handle_db(). */
static bool api_own_pool(struct api_ctx *c) {
  if (!c->borrowed)
    return true;
  api_errorf(c->rs, 404, "not_found", "%.200s is only available over HTTP",
             c->rq->path);
  return false;
}

static void api_db_release(struct api_ctx *c) {
  if (c->borrowed)
    return;
  if (c->db)
    store_pool_put(c->pool, c->db);
  if (c->pool)
    app_release_pool(c->app, c->pool);
  c->db = NULL;
  c->pool = NULL;
}

/* ------------------------------------------------------------------ */
/* handlers */

static void api_health(struct api_ctx *c) {
  api_json(c->rs, 200,
           json_pack("{s:s, s:s, s:s}", "status", "ok", "state",
                     api_phase_name(app_phase(c->app, NULL)), "version",
                     PACKAGE_VERSION));
}

static void api_profile(struct api_ctx *c) {
  if (!api_own_pool(c))
    return;
  struct ingest_progress p;
  enum app_phase ph = app_phase(c->app, &p);
  json_t *o =
      json_pack("{s:s, s:o, s:o}", "state", api_phase_name(ph), "progress",
                api_progress(&p), "dir", query_json_text(app_dir(c->app)));
  c->pool = app_acquire_pool(c->app);
  if (c->pool) {
    struct query_err e;
    json_t *more;
    if (!api_take(c)) {
      json_decref(o);
      return;
    }
    if (query_profile(c->db, &more, &e) < 0) {
      json_decref(o);
      api_query_error(c->rs, &e);
      return;
    }
    json_object_update(o, more);
    json_decref(more);
    json_object_set_new(o, "generation",
                        json_string(store_pool_generation(c->pool)));
  }
  api_json(c->rs, 200, o);
}

static void api_tracks_list(struct api_ctx *c) {
  enum tracks_mode m;
  const char *g = c->rq->arg(c->rq->arg_ctx, "grouping");
  char buf[80];
  struct query_err e;
  json_t *out;
  if (tracks_mode_parse(g, &m) < 0) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'grouping' must be default, cpu_device, neuroncore, "
               "thread, process or instance, got '%s'",
               api_param_show(g, buf, sizeof buf));
    return;
  }
  if (!api_db(c))
    return;
  if (query_tracks(c->db, m, &out, &e) < 0) {
    api_query_error(c->rs, &e);
    return;
  }
  char gen[STORE_GEN_LEN + 1];
  store_generation(c->db, gen);
  json_object_set_new(out, "generation", json_string(gen));
  api_json(c->rs, 200, out);
}

/* GET /slices and /counters. */
static void api_window_query(struct api_ctx *c, bool counters) {
  int64_t ids[QUERY_MAX_TRACKS];
  struct query_window w = {.tracks = ids};
  struct query_err e;
  struct sbuf b = {0};
  if (!api_param_tracks(&c->params, ids, &w.n_tracks) ||
      !api_param_window(&c->params, true, true, &w) || !api_db(c))
    return;
  w.names = store_pool_names(c->pool, c->db);
  api_text(c,
           counters ? query_counters(c->db, &w, &b, &e)
                    : query_slices(c->db, &w, &b, &e),
           &b, &e);
}

static void api_event(struct api_ctx *c, const char *key, bool drill) {
  struct query_err e;
  json_t *out;
  struct sbuf b = {0};
  if (!api_db(c))
    return;
  int rc = drill ? query_event_device_profile(c->db, key, &out, &e)
                 : query_event(c->db, key, &b, &e);
  if (rc < 0) {
    sbuf_free(&b);
    api_query_error(c->rs, &e);
  } else if (drill) {
    api_json(c->rs, 200, out);
  } else {
    c->rs->status = 200;
    c->rs->content_type = API_JSON;
    c->rs->body = b.s;
    c->rs->len = b.len;
  }
}

static void api_device_profiles(struct api_ctx *c) {
  int64_t page, per_page;
  const char *filter = c->rq->arg(c->rq->arg_ctx, "filter");
  struct query_err e;
  json_t *out;
  if (!api_param_int(&c->params, "page", 1, 1000000, false, 1, &page) ||
      !api_param_int(&c->params, "per_page", 1, 500, false, 20, &per_page))
    return;
  if (filter && strlen(filter) > 256) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'filter' is longer than 256 bytes");
    return;
  }
  if (!api_db(c))
    return;
  if (query_device_profiles(c->db, filter, page, per_page, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

/* A device profile id from the path. */
static bool api_path_id(struct api_ctx *c, const char *s, int64_t *id) {
  char buf[80];
  if (util_parse_i64(s, id) < 0 || *id < 0) {
    api_errorf(c->rs, 404, "not_found",
               "'%s' is not a device profile id (an integer)",
               api_param_show(s, buf, sizeof buf));
    return false;
  }
  return true;
}

static void api_device_profile(struct api_ctx *c, const char *sid,
                               bool tracks) {
  int64_t id;
  struct query_err e;
  json_t *out;
  if (!api_path_id(c, sid, &id) || !api_db(c))
    return;
  int rc = tracks ? query_device_tracks(c->db, id, &out, &e)
                  : query_device_profile(c->db, id, &out, &e);
  if (rc < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

/* GET /device-profiles/{id}/dependencies?start=&end=&limit=. */
static void api_device_arrows(struct api_ctx *c, const char *sid) {
  int64_t id, limit;
  struct query_window w = {0};
  struct query_err e;
  json_t *out;
  if (!api_path_id(c, sid, &id) ||
      !api_param_window(&c->params, true, false, &w) ||
      !api_param_int(&c->params, "limit", 1, 100000, false, 5000, &limit) ||
      !api_db(c))
    return;
  if (query_device_arrows(c->db, id, w.start, w.end, limit, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

static void api_search(struct api_ctx *c) {
  struct query_search s = {0};
  struct query_window w = {0};
  struct query_err e;
  json_t *out;
  char buf[80];
  s.q = c->rq->arg(c->rq->arg_ctx, "q");
  s.domain = c->rq->arg(c->rq->arg_ctx, "domain");
  if (!s.q || !*s.q || strlen(s.q) > 256) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'q' is required: 1 to 256 bytes of text");
    return;
  }
  if (!s.domain)
    s.domain = "system";
  if (strcmp(s.domain, "system") != 0 && strcmp(s.domain, "device") != 0) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'domain' must be system or device, got '%s'",
               api_param_show(s.domain, buf, sizeof buf));
    return;
  }
  if (!api_param_window(&c->params, false, false, &w) ||
      !api_param_int(&c->params, "page", 1, 1000000, false, 1, &s.page) ||
      !api_param_int(&c->params, "per_page", 1, 500, false, 50, &s.per_page) ||
      !api_param_int(&c->params, "limit", 1, 500, false, s.per_page,
                     &s.per_page) ||
      !api_param_int(&c->params, "offset", 0, 100000, false, 0, &s.offset) ||
      !api_param_int(&c->params, "profile", 0, INT64_MAX, false, -1,
                     &s.profile) ||
      !api_param_int(&c->params, "buckets", 1, QUERY_SEARCH_MAX_BUCKETS, false,
                     0, &s.buckets))
    return;
  s.start = w.start;
  s.end = w.end;
  if (s.profile >= 0 && strcmp(s.domain, "device") != 0) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'profile' needs domain=device");
    return;
  }
  if (!api_db(c))
    return;
  if (query_search(c->db, &s, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

static void api_summary(struct api_ctx *c) {
  struct query_err e;
  json_t *out;
  if (!api_db(c))
    return;
  if (query_summary(c->db, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

static void api_range_summary(struct api_ctx *c) {
  int64_t ids[QUERY_MAX_TRACKS];
  struct query_window w = {.tracks = ids};
  struct query_err e;
  json_t *out;
  if (!api_param_tracks(&c->params, ids, &w.n_tracks) ||
      !api_param_window(&c->params, true, false, &w) || !api_db(c))
    return;
  if (query_range_summary(c->db, &w, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, 200, out);
}

/* databaseExplorerQuery: the answer is JSON text already. */
static void api_sql(struct api_ctx *c, const char *sql) {
  struct sbuf b = {0};
  struct query_err e;
  if (!api_slot_take(c, &api_sql_running, API_MAX_SQL, "SQL query"))
    return;
  api_text(
      c, query_sql(store_pool_path(c->pool), sql, QUERY_SQL_TIMEOUT_MS, &b, &e),
      &b, &e);
  api_slot_put(&api_sql_running);
}

/* POST /db/{name}/_search */
static void api_db_search(struct api_ctx *c) {
  json_error_t jerr;
  json_t *body =
      c->rq->body ? json_loadb(c->rq->body, c->rq->body_len, 0, &jerr) : NULL;
  const char *type = json_string_value(json_object_get(body, "type"));
  struct query_err e;
  json_t *out = NULL;
  int rc = 0;
  char buf[80];
  if (!api_own_pool(c)) {
    json_decref(body);
    return;
  }
  if (!json_is_object(body)) {
    api_errorf(c->rs, 400, "bad_request",
               "the body must be a JSON object with a 'type' field%s%s",
               body || !c->rq->body ? "" : ": ",
               body || !c->rq->body ? "" : jerr.text);
  } else if (!type) {
    api_errorf(c->rs, 400, "bad_parameter",
               "field 'type' is required: databaseExplorerQuery, tableSchema "
               "or listDbFiles");
  } else if (strcmp(type, "databaseExplorerQuery") == 0) {
    const char *sql = json_string_value(json_object_get(body, "query"));
    if (!sql)
      api_errorf(c->rs, 400, "bad_parameter",
                 "field 'query' is required: one SELECT statement");
    else if (api_pool(c)) /* its own connection, no pooled one */
      api_sql(c, sql);
  } else if (strcmp(type, "tableSchema") == 0) {
    if (api_db(c))
      rc = query_table_schema(c->db, &out, &e);
  } else if (strcmp(type, "listDbFiles") == 0) {
    if (api_pool(c)) {
      struct stat st;
      const char *path = store_pool_path(c->pool);
      out = json_pack("{s:[{s:s, s:o, s:I}]}", "files", "name", "system",
                      "path", query_json_text(path), "size",
                      (json_int_t)(stat(path, &st) == 0 ? st.st_size : 0));
    }
  } else {
    api_errorf(c->rs, 400, "bad_parameter",
               "field 'type' must be databaseExplorerQuery, tableSchema or "
               "listDbFiles, got '%s'",
               api_param_show(type, buf, sizeof buf));
  }
  json_decref(body);
  if (rc < 0)
    api_query_error(c->rs, &e);
  else if (out)
    api_json(c->rs, 200, out);
}

/* GET, POST /annotations; PATCH, DELETE /annotations/{sid} (sid NULL for
 * the former).  Over HTTP only. */
static void api_annotations(struct api_ctx *c, const char *sid) {
  struct annot *a = app_annotations(c->app);
  const char *m = c->rq->method;
  struct query_err e;
  json_t *out;
  int64_t id = -1;
  if (!api_own_pool(c))
    return;
  if (!a || (sid && (util_parse_i64(sid, &id) < 0 || id < 0))) {
    api_error(c->rs, 404, "not_found",
              a ? "no annotation with that id (an integer)"
                : "this server keeps no annotations");
    return;
  }
  if (strcmp(m, "DELETE") != 0 && !api_db(c)) /* a delete needs no store */
    return;
  if (query_annot(c->db, a, m, id, c->rq->body, c->rq->body_len, &out, &e) < 0)
    api_query_error(c->rs, &e);
  else
    api_json(c->rs, strcmp(m, "POST") == 0 ? 201 : 200, out);
}

/* An export streams from its own connection (a pool of one, never one of
 * the app's: a slow client must not hold those), closed with the stream. */
struct api_export {
  struct store_pool *own;
  sqlite3 *db;
  struct export *x;
};

static int api_export_next(void *ctx, struct sbuf *out) {
  struct api_export *s = ctx;
  struct query_err e;
  int rc = export_next(s->x, out, &e);
  if (rc < 0)
    log_warn("export stopped: %s", e.detail);
  return rc;
}

static void api_export_close(void *ctx) {
  struct api_export *s = ctx;
  export_close(s->x);
  store_pool_put(s->own, s->db);
  store_pool_close(s->own);
  free(s);
  api_slot_put(&api_exports_running);
}

static void api_export(struct api_ctx *c) {
  struct query_window w = {0};
  const char *format = c->rq->arg(c->rq->arg_ctx, "format");
  struct export *x;
  struct query_err e;
  struct store_pool *own;
  char *cause = NULL;
  if (!api_own_pool(c))
    return;
  if (!format) {
    api_errorf(c->rs, 400, "bad_parameter",
               "parameter 'format' is required: perfetto, pftrace, json, "
               "summary-text, summary-json or csv");
    return;
  }
  if (!api_param_window(&c->params, false, false, &w) || !api_pool(c) ||
      !api_slot_take(c, &api_exports_running, API_MAX_EXPORTS, "exports"))
    return;
  if (store_pool_open(store_pool_path(c->pool), 1, &own, &cause) < 0) {
    log_warn("export: %s", cause);
    api_errorf(c->rs, 500, "store_error", "cannot open the store: %.300s",
               cause);
    free(cause);
    api_slot_put(&api_exports_running);
    return;
  }
  sqlite3 *db = store_pool_get(own);
  sqlite3_exec(db, API_OWN_CONN_PRAGMAS, NULL, NULL, NULL);
  if (export_open(db, format, w.start, w.end, &x, &e) < 0) {
    store_pool_put(own, db);
    store_pool_close(own);
    api_slot_put(&api_exports_running);
    api_query_error(c->rs, &e);
    return;
  }
  struct api_export *s = xcalloc(1, sizeof *s);
  s->own = own;
  s->db = db;
  s->x = x;
  c->rs->status = 200;
  c->rs->content_type = export_content_type(x);
  c->rs->filename = xstrdup(export_filename(x));
  c->rs->stream = (struct api_stream){api_export_next, api_export_close, s};
}

/* ------------------------------------------------------------------ */
/* routing */

/* Whether a POST may run: no cross-site browser request (Sec-Fetch-Site
 * other than same-origin or none, or an Origin that is not
 * http(s)://<Host>; http.c has checked Host) and a JSON body (a form or
 * text/plain POST is what any web page can send without asking).  False
 * with a 403 or 415 answer. */
static bool api_post_ok(struct api_ctx *c) {
  const struct api_request *rq = c->rq;
  if (!rq->header)
    return true;
  const char *site = rq->header(rq->arg_ctx, "Sec-Fetch-Site");
  const char *origin = rq->header(rq->arg_ctx, "Origin");
  const char *host = rq->header(rq->arg_ctx, "Host");
  const char *type = rq->header(rq->arg_ctx, "Content-Type");
  size_t n = strlen(API_JSON);
  if (!hostcheck_same_origin(site, origin, host)) {
    api_errorf(c->rs, 403, "cross_site",
               "%s requests from another site are refused: Origin must be "
               "this server's (the page's own requests) and Sec-Fetch-Site "
               "same-origin",
               rq->method);
    return false;
  }
  if (!type || strncasecmp(type, API_JSON, n) != 0 ||
      (type[n] && type[n] != ';' && type[n] != ' ')) {
    api_errorf(c->rs, 415, "unsupported_media_type",
               "%s bodies must be sent with Content-Type: application/json",
               rq->method);
    return false;
  }
  return true;
}

/* Whether method m is in allow ("GET": GET or HEAD; else a list such as
 * "GET, HEAD, POST"). */
static bool api_allowed(const char *m, const char *allow) {
  size_t n = strlen(m);
  if (strcmp(allow, "GET") == 0)
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
  for (const char *p = allow; n && (p = strstr(p, m)); p += n)
    if ((p == allow || p[-1] == ' ') && (p[n] == ',' || !p[n]))
      return true;
  return false;
}

/* Whether c's method is allowed (else a 405 answer) and, for a method that
 * writes (any but GET and HEAD), api_post_ok(). */
static bool api_method(struct api_ctx *c, const char *allow) {
  const char *m = c->rq->method;
  if (!api_allowed(m, allow)) {
    api_errorf(c->rs, 405, "method_not_allowed", "%s %s: use %s", m,
               c->rq->path, allow);
    c->rs->allow = strcmp(allow, "GET") == 0 ? "GET, HEAD" : allow;
    return false;
  }
  return api_allowed(m, "GET") || api_post_ok(c);
}

/* Routes c's request to its handler. */
static void api_route(struct api_ctx *c) {
  const struct api_request *rq = c->rq;
  struct api_response *rs = c->rs;
  const char *p = rq->path;
  char seg[4][256];
  int n = 0;
  memset(rs, 0, sizeof *rs);
  if (strncmp(p, "/api/v1/", 8) != 0) {
    api_errorf(rs, 404, "not_found", "no API at %.200s; the API is /api/v1/",
               p);
    return;
  }
  for (p += 8; *p && n < 4; n++) {
    size_t len = strcspn(p, "/");
    if (len >= sizeof seg[0])
      len = sizeof seg[0] - 1;
    memcpy(seg[n], p, len);
    seg[n][len] = '\0';
    p += strcspn(p, "/");
    if (*p == '/')
      p++;
  }
  if (*p)
    n = 99; /* too many segments */
#define ROUTE(cond, allow, call)                                               \
  if (cond) {                                                                  \
    if (api_method(c, allow))                                                  \
      call;                                                                    \
    api_db_release(c);                                                         \
    return;                                                                    \
  }
#define IS(i, s) (strcmp(seg[i], s) == 0)
  ROUTE(n == 1 && IS(0, "health"), "GET", api_health(c));
  ROUTE(n == 1 && IS(0, "profile"), "GET", api_profile(c));
  ROUTE(n == 1 && IS(0, "tracks"), "GET", api_tracks_list(c));
  ROUTE(n == 1 && IS(0, "slices"), "GET", api_window_query(c, false));
  ROUTE(n == 1 && IS(0, "counters"), "GET", api_window_query(c, true));
  ROUTE(n == 2 && IS(0, "events"), "GET", api_event(c, seg[1], false));
  ROUTE(n == 3 && IS(0, "events") && IS(2, "device-profile"), "GET",
        api_event(c, seg[1], true));
  ROUTE(n == 1 && IS(0, "device-profiles"), "GET", api_device_profiles(c));
  ROUTE(n == 2 && IS(0, "device-profiles"), "GET",
        api_device_profile(c, seg[1], false));
  ROUTE(n == 3 && IS(0, "device-profiles") && IS(2, "tracks"), "GET",
        api_device_profile(c, seg[1], true));
  ROUTE(n == 3 && IS(0, "device-profiles") && IS(2, "dependencies"), "GET",
        api_device_arrows(c, seg[1]));
  ROUTE(n == 1 && IS(0, "search"), "GET", api_search(c));
  ROUTE(n == 1 && IS(0, "summary"), "GET", api_summary(c));
  ROUTE(n == 1 && IS(0, "range-summary"), "GET", api_range_summary(c));
  ROUTE(n == 3 && IS(0, "db") && IS(2, "_search"), "POST", api_db_search(c));
  ROUTE(n == 1 && IS(0, "export"), "GET", api_export(c));
  ROUTE(n == 1 && IS(0, "annotations"), "GET, HEAD, POST",
        api_annotations(c, NULL));
  ROUTE(n == 2 && IS(0, "annotations"), "PATCH, DELETE",
        api_annotations(c, seg[1]));
#undef ROUTE
#undef IS
  api_errorf(rs, 404, "not_found", "no API endpoint %.200s", rq->path);
}

void api_handle(struct app *a, const struct api_request *rq,
                struct api_response *rs) {
  struct api_ctx c = {
      a, rq, rs, NULL, NULL, false, {rq->arg, rq->arg_ctx, api_bad_param, rs}};
  api_route(&c);
}

void api_handle_db(struct app *a, sqlite3 *db, const struct api_request *rq,
                   struct api_response *rs) {
  struct api_ctx c = {
      a, rq, rs, NULL, db, true, {rq->arg, rq->arg_ctx, api_bad_param, rs}};
  api_route(&c);
}
