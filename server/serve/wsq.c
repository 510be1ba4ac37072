/* wsq.c -- queries over the WebSocket (see wsq.h).
 *
 * A request becomes a job of one or two phases, queued on its connection
 * and taken by the workers in the order wsq_sched.c decides.  If the
 * coarse rows of a progressive window are exact (raw events, nothing cut)
 * they are sent as the final answer and the final phase is skipped; a
 * coarse answer that comes after the final one is dropped.  The waiting
 * answers and the memory caps over them are wsq_out.c's.
 *
 * Every phase ends with a post; the last one of a job is "terminal" (the
 * count and the post are made under one lock, so it is the last one to
 * arrive).  The service thread then unlinks the job from its connection
 * and frees it.  Jobs are only freed there, so a worker may use a job until
 * its phase has posted.  Parsing the client's messages and building the
 * answers is wsq_msg.c's.
 */
#include "wsq.h"
#include "api.h"
#include "app.h"
#include "log.h"
#include "query.h"
#include "store.h"
#include "util.h"
#include "wsbin.h"
#include "wsq_msg.h"
#include "wsq_out.h"
#include "wsq_priv.h"

#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQLite virtual-machine steps between two looks at the cancel flag. */
#define WSQ_PROGRESS_OPS 1000

/* ------------------------------------------------------------------ */
/* workers */

static void wsq_job_free(struct wsq_job *j) {
  wsq_msg_req_clear(&j->req);
  free(j);
}

/* Ends a phase of job j: hands its message m (or none) to the service
 * thread; the last phase's post is terminal. */
static void wsq_post(struct wsq *q, struct wsq_job *j, struct wsq_msg *m) {
  if (!m)
    m = xcalloc(1, sizeof *m);
  m->job = j;
  pthread_mutex_lock(&q->mu);
  m->terminal = --j->phases == 0;
  bool wake = q->done == NULL; /* else a wake-up is on its way */
  m->next = q->done;
  q->done = m;
  pthread_mutex_unlock(&q->mu);
  if (wake)
    lws_cancel_service(q->ctx);
}

static int wsq_progress(void *ud) {
  struct wsq_job *j = ud;
  return atomic_load_explicit(&j->cancel, memory_order_relaxed);
}

/* The job was cancelled while it ran: `stopped` if its query was cut short
 * (then the time since the cancel is recorded), else its answer is thrown
 * away. */
static void wsq_cancelled_in_work(struct wsq *q, struct wsq_job *j,
                                  bool stopped) {
  if (!stopped) {
    atomic_fetch_add(&q->discarded, 1);
    return;
  }
  atomic_fetch_add(&q->interrupted, 1);
  int64_t t = atomic_load(&j->cancel_ns);
  if (t <= 0)
    return;
  int64_t d = util_now_ns() - t, m = atomic_load(&q->cancel_max_ns);
  while (d > m && !atomic_compare_exchange_weak(&q->cancel_max_ns, &m, d))
    ;
  atomic_fetch_add(&q->cancel_sum_ns, d);
  atomic_fetch_add(&q->cancel_n, 1);
}

static void wsq_worker_close(struct wsq_worker *wk) {
  if (wk->own) {
    store_pool_put(wk->own, wk->db);
    store_pool_close(wk->own);
  }
  if (wk->app_pool)
    app_release_pool(wk->q->app, wk->app_pool);
  wk->own = NULL;
  wk->db = NULL;
  wk->app_pool = NULL;
}

/* The worker's connection to the current store (reopened when a new store
 * was published), or NULL with e filled. */
static sqlite3 *wsq_worker_db(struct wsq_worker *wk, struct query_err *e) {
  struct app *a = wk->q->app;
  struct store_pool *p = app_acquire_pool(a);
  char *cause = NULL;
  if (!p) {
    bool failed = app_phase(a, NULL) == APP_FAILED;
    query_fail(e, -EAGAIN, 503, failed ? "failed" : "loading", "%s",
               failed ? "the profile could not be loaded; see the server log"
                      : "the profile is still loading; retry when the "
                        "WebSocket says ready");
    return NULL;
  }
  if (p == wk->app_pool) {
    app_release_pool(a, p); /* we hold it already */
    return wk->db;
  }
  wsq_worker_close(wk);
  if (store_pool_open(store_pool_path(p), 1, &wk->own, &cause) < 0) {
    query_fail(e, -EIO, 500, "store_error", "%s", cause);
    log_warn("ws queries: %s", cause);
    free(cause);
    app_release_pool(a, p);
    return NULL;
  }
  wk->app_pool = p;
  wk->db = store_pool_get(wk->own);
  return wk->db;
}

/* One phase of a window job: the coarse or the final answer. */
static void wsq_run_window(struct wsq_worker *wk, struct wsq_job *j,
                           sqlite3 *db, bool coarse) {
  struct wsq *q = wk->q;
  const struct wsq_req *r = &j->req;
  struct query_window w = {r->tracks, r->n_tracks,
                           r->start,  r->end,
                           r->px,     store_pool_names(wk->app_pool, db)};
  struct query_err e = {0};
  if (coarse)
    w.px = r->px / WSQ_COARSE_DIV;
  struct wsbin *b =
      wsbin_new(r->kind == WSQ_SLICES ? WSBIN_SLICES : WSBIN_COUNTERS);
  int rc = r->kind == WSQ_SLICES
               ? query_slices_rows(db, &w, wsbin_sink(b), &e)
               : query_counters_rows(db, &w, wsbin_sink(b), &e);
  if (atomic_load(&j->cancel)) {
    wsq_cancelled_in_work(q, j, rc < 0);
    wsbin_free(b);
    wsq_post(q, j, NULL);
    return;
  }
  if (rc == 0 && coarse && wsbin_exact(b)) {
    coarse = false; /* these rows are the final answer */
    w.px = r->px;
    atomic_store(&j->exact, true);
  }
  if (rc == 0)
    rc = wsbin_finish(b, r->id, coarse ? WSBIN_COARSE : WSBIN_FINAL, &w,
                      r->deflate, &e);
  if (rc < 0) {
    wsbin_free(b);
    if (e.status >= 500)
      log_warn("ws query: %s", e.detail);
    wsq_post(q, j, wsq_msg_error(true, r->id, &e));
    return;
  }
  struct wsq_msg *m = xcalloc(1, sizeof *m);
  m->bin = b;
  m->coarse = coarse;
  wsq_post(q, j, m);
}

static void wsq_run_api(struct wsq_worker *wk, struct wsq_job *j, sqlite3 *db) {
  struct api_request rq = {.method = "GET",
                           .path = j->req.path,
                           .arg = wsq_msg_arg,
                           .arg_ctx = &j->req};
  struct api_response rs;
  api_handle_db(wk->q->app, db, &rq, &rs);
  if (atomic_load(&j->cancel)) {
    wsq_cancelled_in_work(wk->q, j, rs.status >= 500);
    wsq_post(wk->q, j, NULL);
  } else {
    wsq_post(wk->q, j,
             wsq_msg_result(true, j->req.id, rs.status, rs.body, rs.len));
  }
  api_response_free(&rs);
}

/* Runs one phase of job j (`high`: taken from the high queue). */
static void wsq_run(struct wsq_worker *wk, struct wsq_job *j, bool high) {
  struct query_err e = {0};
  bool coarse = j->req.progressive && high;
  if (atomic_load(&j->cancel)) {
    atomic_fetch_add(&wk->q->skipped, 1);
    wsq_post(wk->q, j, NULL);
    return;
  }
  if (j->req.progressive && !high && atomic_load(&j->exact)) {
    wsq_post(wk->q, j, NULL); /* the coarse phase answered it */
    return;
  }
  sqlite3 *db = wsq_worker_db(wk, &e);
  if (!db) {
    wsq_post(wk->q, j, coarse ? NULL : wsq_msg_error(true, j->req.id, &e));
    return;
  }
  const char *gen = wsq_msg_arg(&j->req, "gen");
  char *stale = gen && j->req.kind != WSQ_API /* api.c checks its own */
                    ? api_stale(gen, store_pool_generation(wk->app_pool))
                    : NULL;
  if (stale) {
    wsq_post(wk->q, j,
             coarse ? NULL
                    : wsq_msg_result(true, j->req.id, 409, stale,
                                     strlen(stale)));
    free(stale);
    return;
  }
  sqlite3_progress_handler(db, WSQ_PROGRESS_OPS, wsq_progress, j);
  if (j->req.kind == WSQ_API)
    wsq_run_api(wk, j, db);
  else
    wsq_run_window(wk, j, db, coarse);
  sqlite3_progress_handler(db, 0, NULL, NULL);
}

static void *wsq_worker_main(void *arg) {
  struct wsq_worker *wk = arg;
  struct wsq *q = wk->q;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    struct wsq_job *j = NULL;
    bool high = false, heavy = false;
    while (!q->stop && !(j = wsq_sched_next(q, &high, &heavy)))
      pthread_cond_wait(&q->cv, &q->mu);
    if (!j)
      break;
    q->running++;
    q->running_heavy += heavy;
    pthread_mutex_unlock(&q->mu);
    wsq_run(wk, j, high);
    pthread_mutex_lock(&q->mu);
    q->running--;
    q->running_heavy -= heavy;
  }
  pthread_mutex_unlock(&q->mu);
  wsq_worker_close(wk);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* connections (service thread) */

/* Back-pressure.  A connection with its cap of unread bytes (WSQ_MAX_QUEUED,
 * or 1/32 of it while the total is over 3/4 of its cap), or whose answers
 * were dropped, is stalled (none of its jobs runs) until half of them are
 * written; one that is stalled or has WSQ_MAX_JOBS requests in work is not
 * read until both are down to half. */
static void wsq_conn_flow_one(struct wsq_conn *c) {
  struct wsq *q = c->q;
  size_t cap = wsq_mem_stall_at(&q->mem), b = wsq_out_bytes(&c->out);
  bool stall =
      c->wsi && (c->out.overflow || (c->stalled ? b > cap / 2 : b >= cap));
  bool behind = c->wsi && b >= WSQ_BEHIND;
  if (stall != c->stalled || behind != c->behind) {
    pthread_mutex_lock(&q->mu); /* only this thread writes both */
    c->stalled = stall;
    c->behind = behind;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
  }
  if (!c->wsi)
    return;
  if (!c->paused && (stall || c->n_jobs >= WSQ_MAX_JOBS)) {
    c->paused = true;
    atomic_fetch_add(&q->pauses, 1);
    lws_rx_flow_control(c->wsi, 0);
  } else if (c->paused && !stall && c->n_jobs <= WSQ_MAX_JOBS / 2) {
    c->paused = false;
    lws_rx_flow_control(c->wsi, 1);
  }
}

/* Looks at every connection's flow again when the total's "full" state
 * changed; wakes the service thread to give memory back if asked. */
static void wsq_flow_all(struct wsq *q) {
  if (wsq_mem_update(&q->mem))
    for (struct wsq_out *o = q->mem.live; o; o = o->next)
      wsq_conn_flow_one(o->owner);
  if (q->mem.trim)
    lws_cancel_service(q->ctx);
}

static void wsq_conn_flow(struct wsq_conn *c) {
  wsq_flow_all(c->q);
  wsq_conn_flow_one(c);
}

/* Removes the waiting messages of request `id` (has_id) or of group
 * `group` -- only the coarse ones when coarse_only -- counting them in
 * *counter. */
static void wsq_conn_remove(struct wsq_conn *c, bool has_id, uint32_t id,
                            const char *group, bool coarse_only,
                            _Atomic uint64_t *counter) {
  atomic_fetch_add(counter, wsq_out_remove(&c->q->mem, &c->out, has_id, id,
                                           group, coarse_only));
}

/* Queues m for writing.  A final answer replaces the coarse one of the
 * same request if it still waits; past the memory caps the oldest answers
 * are dropped. */
static void wsq_conn_push(struct wsq_conn *c, struct wsq_msg *m) {
  if (m->has_id && !m->coarse)
    wsq_conn_remove(c, true, m->id, NULL, true, &c->q->superseded);
  wsq_out_push(&c->q->mem, &c->out, m);
  if (c->wsi)
    lws_callback_on_writable(c->wsi);
  wsq_conn_flow(c);
}

/* Drops waiting answers of request `id` (has_id) or of group `group`. */
static void wsq_conn_drop(struct wsq_conn *c, bool has_id, uint32_t id,
                          const char *group) {
  wsq_conn_remove(c, has_id, id, group, false, &c->q->discarded);
}

static void wsq_job_cancel(struct wsq *q, struct wsq_job *j) {
  if (!atomic_exchange(&j->cancel, true)) {
    atomic_store(&j->cancel_ns, util_now_ns());
    atomic_fetch_add(&q->cancelled, 1);
  }
}

static void wsq_conn_free(struct wsq_conn *c) {
  wsbin_names_free(c->names);
  sbuf_free(&c->rx);
  free(c);
}

/* The end of job j: unlinks and frees it; frees a closed connection with
 * no job left. */
static void wsq_job_end(struct wsq_conn *c, struct wsq_job *j) {
  for (struct wsq_job **pp = &c->jobs; *pp; pp = &(*pp)->cnext)
    if (*pp == j) {
      *pp = j->cnext;
      break;
    }
  c->n_jobs--;
  wsq_job_free(j);
  if (!c->wsi && c->n_jobs == 0)
    wsq_conn_free(c);
  else
    wsq_conn_flow(c);
}

void wsq_service(struct wsq *q) {
  if (!q)
    return;
  pthread_mutex_lock(&q->mu);
  struct wsq_msg *list = q->done, *fifo = NULL;
  q->done = NULL;
  pthread_mutex_unlock(&q->mu);
  while (list) { /* newest first: reverse */
    struct wsq_msg *m = list;
    list = m->next;
    m->next = fifo;
    fifo = m;
  }
  while (fifo) {
    struct wsq_msg *m = fifo;
    struct wsq_job *j = m->job;
    struct wsq_conn *c = j->conn;
    bool terminal = m->terminal;
    fifo = m->next;
    m->job = NULL;
    if (!m->bin && !m->text) {
      wsq_msg_free(m);
    } else if (atomic_load(&j->cancel) || !c->wsi) {
      atomic_fetch_add(&q->discarded, 1);
      wsq_msg_free(m);
    } else if (j->answered) { /* the final answer went first */
      atomic_fetch_add(&q->superseded, 1);
      wsq_msg_free(m);
    } else {
      m->has_id = true;
      m->id = j->req.id;
      m->final = !m->coarse;
      j->answered = m->final;
      m->group = j->req.group ? xstrdup(j->req.group) : NULL;
      wsq_conn_push(c, m);
    }
    if (terminal)
      wsq_job_end(c, j);
  }
  wsq_mem_trim(&q->mem);
}

struct wsq_conn *wsq_conn_new(struct wsq *q, struct lws *wsi) {
  struct wsq_conn *c = xcalloc(1, sizeof *c);
  c->q = q;
  c->wsi = wsi;
  c->names = wsbin_names_new();
  wsq_out_open(&q->mem, &c->out, c);
  return c;
}

bool wsq_conn_pending(const struct wsq_conn *c) { return c && c->out.head; }

void wsq_conn_flushed(struct wsq_conn *c) {
  if (c && c->out.inflight) {
    wsq_out_written(&c->q->mem, &c->out, 0);
    wsq_conn_flow(c);
  }
}

int wsq_conn_write(struct wsq_conn *c) {
  struct wsq_msg *m = c ? wsq_out_pop(&c->q->mem, &c->out) : NULL;
  unsigned char *buf;
  size_t len;
  enum lws_write_protocol type;
  if (!m)
    return 0;
  if (m->bin) {
    buf = wsbin_write(m->bin, c->names, LWS_PRE, &len);
    type = LWS_WRITE_BINARY;
    atomic_fetch_add(&c->q->frames, 1);
  } else {
    buf = m->text;
    m->text = NULL;
    len = m->len;
    type = LWS_WRITE_TEXT;
  }
  if (m->final)
    atomic_fetch_add(&c->q->answers, 1);
  else if (m->coarse)
    atomic_fetch_add(&c->q->coarse, 1);
  atomic_fetch_add(&c->q->bytes, len);
  int n = lws_write(c->wsi, buf + LWS_PRE, len, type);
  free(buf); /* lws keeps what the socket did not take */
  wsq_msg_free(m);
  if (n < (int)len)
    return -1;
  wsq_out_written(&c->q->mem, &c->out, lws_partial_buffered(c->wsi) ? len : 0);
  wsq_conn_flow(c);
  if (c->out.head || c->out.inflight) /* the next turn: lws wrote it all */
    lws_callback_on_writable(c->wsi);
  return 0;
}

void wsq_conn_close(struct wsq_conn *c) {
  if (!c)
    return;
  struct wsq *q = c->q;
  c->wsi = NULL;
  for (struct wsq_job *j = c->jobs; j; j = j->cnext)
    wsq_job_cancel(q, j);
  wsq_out_close(&q->mem, &c->out);
  if (c->n_jobs == 0)
    wsq_conn_free(c);
  else
    wsq_conn_flow(c); /* unstalls it: its cancelled jobs end */
  wsq_flow_all(q);
}

/* ------------------------------------------------------------------ */
/* requests (service thread) */

/* Queues the error answer e to a request. */
static void wsq_reject(struct wsq_conn *c, bool has_id, uint32_t id,
                       const struct query_err *e) {
  atomic_fetch_add(&c->q->errors, 1);
  wsq_conn_push(c, wsq_msg_error(has_id, id, e));
}

/* Cancels the requests of group `group` and drops their waiting answers. */
static void wsq_cancel_group(struct wsq_conn *c, const char *group) {
  for (struct wsq_job *j = c->jobs; j; j = j->cnext)
    if (j->req.group && strcmp(j->req.group, group) == 0)
      wsq_job_cancel(c->q, j);
  wsq_conn_drop(c, false, 0, group);
}

static void wsq_cancel_id(struct wsq_conn *c, uint32_t id) {
  for (struct wsq_job *j = c->jobs; j; j = j->cnext)
    if (j->req.id == id)
      wsq_job_cancel(c->q, j);
  wsq_conn_drop(c, true, id, NULL);
}

/* The "stats" message: the counters of q and of connection c. */
static void wsq_on_stats(struct wsq_conn *c, uint32_t id) {
  struct wsq *q = c->q;
  size_t queued, running;
  wsq_service(q); /* answers already posted are counted as waiting */
  pthread_mutex_lock(&q->mu);
  queued = q->queued;
  running = q->running;
  pthread_mutex_unlock(&q->mu);
  int64_t n = atomic_load(&q->cancel_n);
  json_t *o = json_pack(
      "{s:s, s:I, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
      "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:{s:I, s:I, s:I, s:I, "
      "s:b}}",
      "type", "stats", "id", (json_int_t)id, "workers", q->n_workers, "queued",
      (json_int_t)queued, "running", (json_int_t)running, "requests",
      (json_int_t)atomic_load(&q->requests), "answers",
      (json_int_t)atomic_load(&q->answers), "coarse",
      (json_int_t)atomic_load(&q->coarse), "errors",
      (json_int_t)atomic_load(&q->errors), "cancelled",
      (json_int_t)atomic_load(&q->cancelled), "interrupted",
      (json_int_t)atomic_load(&q->interrupted), "skipped",
      (json_int_t)atomic_load(&q->skipped), "discarded",
      (json_int_t)atomic_load(&q->discarded), "superseded",
      (json_int_t)atomic_load(&q->superseded), "frames",
      (json_int_t)atomic_load(&q->frames), "bytes",
      (json_int_t)atomic_load(&q->bytes), "pauses",
      (json_int_t)atomic_load(&q->pauses), "dropped",
      (json_int_t)q->mem.dropped, "waiting_bytes", (json_int_t)q->mem.total,
      "waiting_cap", (json_int_t)q->mem.total_cap, "cancel_max_ms",
      (double)atomic_load(&q->cancel_max_ns) / 1e6, "cancel_mean_ms",
      n ? (double)atomic_load(&q->cancel_sum_ns) / (double)n / 1e6 : 0.0,
      "connection", "jobs", (json_int_t)c->n_jobs, "waiting",
      (json_int_t)c->out.n, "waiting_bytes", (json_int_t)wsq_out_bytes(&c->out),
      "waiting_cap", (json_int_t)q->mem.conn_cap, "paused", c->paused);
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  wsq_conn_push(c, wsq_msg_text(id, t));
  free(t);
}

/* A query request (r's contents move into its job): queued. */
static void wsq_on_request(struct wsq_conn *c, struct wsq_req *r) {
  for (struct wsq_job *o = c->jobs; o; o = o->cnext)
    if (o->req.id == r->id && !atomic_load(&o->cancel)) {
      struct query_err e;
      query_fail(&e, -EINVAL, 400, "duplicate_id",
                 "request id %u is still in work on this connection", r->id);
      wsq_reject(c, true, r->id, &e);
      return;
    }
  if (r->replace)
    wsq_cancel_group(c, r->group);
  struct wsq_job *j = xcalloc(1, sizeof *j);
  j->req = *r;
  memset(r, 0, sizeof *r);
  j->conn = c;
  j->cnext = c->jobs;
  c->jobs = j;
  c->n_jobs++;
  atomic_fetch_add(&c->q->requests, 1);
  wsq_sched_enqueue(c->q, j);
  wsq_conn_flow(c);
}

/* One whole client message. */
static void wsq_on_message(struct wsq_conn *c, const char *text, size_t len) {
  struct wsq_req r;
  struct query_err e;
  if (wsq_msg_parse(text, len, &r, &e) < 0) {
    wsq_reject(c, r.has_id, r.id, &e);
  } else if (r.type == WSQ_MSG_CANCEL) {
    for (size_t i = 0; i < r.n_ids; i++)
      wsq_cancel_id(c, r.ids[i]);
    if (r.group)
      wsq_cancel_group(c, r.group);
  } else if (r.type == WSQ_MSG_STATS) {
    wsq_on_stats(c, r.id);
  } else {
    wsq_on_request(c, &r);
  }
  wsq_msg_req_clear(&r);
}

int wsq_conn_receive(struct wsq_conn *c, const void *in, size_t len, bool last,
                     bool binary) {
  if (!c)
    return 0;
  if (!c->rx_skip && c->rx.len + len > WSQ_MAX_MESSAGE) {
    c->rx_skip = true;
    sbuf_reset(&c->rx);
  }
  if (!c->rx_skip)
    sbuf_add(&c->rx, in, len);
  if (!last)
    return 0;
  struct query_err e;
  if (c->rx_skip) {
    query_fail(&e, -EMSGSIZE, 413, "too_large",
               "a request message is at most %d bytes", WSQ_MAX_MESSAGE);
    wsq_reject(c, false, 0, &e);
  } else if (binary) {
    query_fail(&e, -EINVAL, 400, "bad_request",
               "requests are JSON text messages, not binary");
    wsq_reject(c, false, 0, &e);
  } else {
    wsq_on_message(c, c->rx.s ? c->rx.s : "", c->rx.len);
  }
  c->rx_skip = false;
  sbuf_reset(&c->rx);
  return 0;
}

/* ------------------------------------------------------------------ */
/* start and stop */

int wsq_start(struct app *a, struct lws_context *ctx, struct wsq **out,
              char **cause) {
  struct wsq *q = xcalloc(1, sizeof *q);
  q->app = a;
  q->ctx = ctx;
  wsq_mem_init(&q->mem, WSQ_MAX_QUEUED, WSQ_MAX_QUEUED_TOTAL);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  for (int i = 0; i < WSQ_WORKERS; i++) {
    struct wsq_worker *wk = &q->workers[i];
    wk->q = q;
    if (pthread_create(&wk->thread, NULL, wsq_worker_main, wk) != 0) {
      *cause = xstrdup("cannot start the WebSocket query workers");
      wsq_stop(q);
      wsq_free(q);
      return -EAGAIN;
    }
    q->n_workers++;
  }
  *out = q;
  return 0;
}

void wsq_stop(struct wsq *q) {
  if (!q)
    return;
  pthread_mutex_lock(&q->mu);
  q->stop = true;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  for (int i = 0; i < q->n_workers; i++)
    pthread_join(q->workers[i].thread, NULL);
  q->n_workers = 0;
  /* phases never run end here */
  for (struct wsq_conn *c = q->rot; c; c = c->rnext) {
    struct wsq_job *j;
    while ((j = wsq_sched_pop(c, true)) || (j = wsq_sched_pop(c, false))) {
      struct wsq_msg *m = xcalloc(1, sizeof *m);
      m->job = j;
      m->terminal = --j->phases == 0;
      m->next = q->done;
      q->done = m;
    }
    c->in_rotation = false;
  }
  q->rot = q->rot_tail = NULL;
  q->queued = 0;
}

void wsq_free(struct wsq *q) {
  if (!q)
    return;
  wsq_service(q); /* every connection is closed: this frees the rest */
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  free(q);
}
