/* ws.c -- libwebsockets: the "nex.v1" push channel (see ws.h), which also
 * carries the queries of wsq.c. */
#include "ws.h"
#include "app.h"
#include "budget.h"
#include "hostcheck.h"
#include "log.h"
#include "util.h"
#include "wsq.h"

#include <errno.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define WS_RING 256 /* messages kept for clients that lag behind */

struct ws_msg {
  enum app_event ev;
  char *text;
  size_t len;
};

struct ws {
  struct app *app;
  struct budget *budget;
  char *bind;
  struct lws_context *ctx;
  struct lws_vhost *vh;
  pthread_t thread;
  bool running;
  atomic_bool stop;
  pthread_mutex_t mu; /* guards everything below */
  int *pending;       /* sockets to adopt */
  size_t n_pending, cap_pending;
  struct ws_msg ring[WS_RING]; /* message seq lives at ring[seq % WS_RING] */
  uint64_t head;               /* next seq */
  uint64_t last_progress;      /* seq of the newest progress + 1, or 0 */
  uint64_t woken_head;         /* head when clients were last asked to write */
  struct wsq *wsq;             /* queries over the socket (wsq.h) */
};

/* Per connection. */
struct ws_pss {
  uint64_t next; /* next ring seq to send */
  json_t *hello; /* messages to send first, or NULL */
  size_t hello_i;
  struct wsq_conn *q; /* its queries and their answers */
  uint64_t budget_id; /* its entry in the connection budget */
};

static const struct lws_protocols ws_protocols[];

/* ---- producer side (any thread) ---- */

static void ws_on_app_event(void *ud, enum app_event ev, json_t *msg) {
  struct ws *w = ud;
  char *text = json_dumps(msg, JSON_COMPACT);
  if (!text)
    return;
  pthread_mutex_lock(&w->mu);
  struct ws_msg *m = &w->ring[w->head % WS_RING];
  free(m->text);
  m->ev = ev;
  m->text = text;
  m->len = strlen(text);
  w->head++;
  if (ev == APP_EV_PROGRESS)
    w->last_progress = w->head;
  pthread_mutex_unlock(&w->mu);
  lws_cancel_service(w->ctx);
}

void ws_adopt(struct ws *w, int fd) {
  pthread_mutex_lock(&w->mu);
  if (w->n_pending == w->cap_pending) {
    w->cap_pending = w->cap_pending ? 2 * w->cap_pending : 16;
    w->pending = xrealloc(w->pending, w->cap_pending * sizeof *w->pending);
  }
  w->pending[w->n_pending++] = fd;
  pthread_mutex_unlock(&w->mu);
  lws_cancel_service(w->ctx);
}

/* ---- service thread ---- */

/* Origin must be http(s)://<Host>, and Host must name this server. */
static bool ws_origin_ok(struct ws *w, struct lws *wsi) {
  char host[256], origin[300];
  if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0 ||
      lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
    return false;
  const char *o = origin;
  if (strncasecmp(o, "http://", 7) == 0)
    o += 7;
  else if (strncasecmp(o, "https://", 8) == 0)
    o += 8;
  else
    return false;
  return strcasecmp(o, host) == 0 && hostcheck_allowed(host, w->bind);
}

/* Sends one message to wsi; asks for another WRITEABLE if more wait. */
static int ws_write_one(struct ws *w, struct lws *wsi, struct ws_pss *pss) {
  unsigned char *buf = NULL;
  size_t len = 0;
  bool more;
  if (pss->hello) {
    char *t =
        json_dumps(json_array_get(pss->hello, pss->hello_i++), JSON_COMPACT);
    len = t ? strlen(t) : 0;
    buf = xmalloc(LWS_PRE + len);
    memcpy(buf + LWS_PRE, t ? t : "", len);
    free(t);
    if (pss->hello_i >= json_array_size(pss->hello)) {
      json_decref(pss->hello);
      pss->hello = NULL;
    }
  } else {
    bool resync = false;
    pthread_mutex_lock(&w->mu);
    if (w->head - pss->next > WS_RING) {
      resync = true; /* fell behind the ring: start over from a hello */
      pss->next = w->head;
    }
    while (pss->next < w->head &&
           w->ring[pss->next % WS_RING].ev == APP_EV_PROGRESS &&
           pss->next + 1 < w->last_progress)
      pss->next++; /* superseded by a newer progress message */
    if (!resync && pss->next < w->head) {
      const struct ws_msg *m = &w->ring[pss->next++ % WS_RING];
      len = m->len;
      buf = xmalloc(LWS_PRE + len);
      memcpy(buf + LWS_PRE, m->text, len);
    }
    pthread_mutex_unlock(&w->mu);
    if (resync) {
      pss->hello = app_hello_messages(w->app);
      pss->hello_i = 0;
      lws_callback_on_writable(wsi);
      return 0;
    }
  }
  if (!buf) /* no push waits: a query answer, if any */
    return wsq_conn_write(pss->q);
  int n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT);
  free(buf);
  if (n < (int)len)
    return -1;
  pthread_mutex_lock(&w->mu);
  more = pss->hello || pss->next < w->head || wsq_conn_pending(pss->q);
  pthread_mutex_unlock(&w->mu);
  if (more)
    lws_callback_on_writable(wsi);
  return 0;
}

/* Adopts the sockets net.c queued. */
static void ws_adopt_pending(struct ws *w) {
  int fds[64];
  size_t n;
  do {
    pthread_mutex_lock(&w->mu);
    n = w->n_pending < 64 ? w->n_pending : 64;
    for (size_t i = 0; i < n; i++)
      fds[i] = w->pending[w->n_pending - n + i];
    w->n_pending -= n;
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < n; i++)
      if (!lws_adopt_socket_vhost(w->vh, fds[i]))
        log_warn("ws: could not adopt a connection"); /* lws closed it */
  } while (n == 64);
}

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason,
                       void *user, void *in, size_t len) {
  struct ws *w = lws_context_user(lws_get_context(wsi));
  struct ws_pss *pss = user;
  switch (reason) {
  case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
    if (!ws_origin_ok(w, wsi)) {
      log_info("ws: refused an upgrade whose Origin does not match Host");
      return -1;
    }
    return 0;
  case LWS_CALLBACK_ESTABLISHED:
    pss->budget_id = budget_find(w->budget, lws_get_socket_fd(wsi));
    if (budget_set(w->budget, pss->budget_id, BUDGET_WS) < 0) {
      log_warn("ws: too many WebSockets; closing the newest");
      budget_leave(w->budget, pss->budget_id);
      pss->budget_id = 0;
      return -1;
    }
    pss->hello = app_hello_messages(w->app);
    pss->hello_i = 0;
    pthread_mutex_lock(&w->mu);
    pss->next = w->head;
    pthread_mutex_unlock(&w->mu);
    pss->q = wsq_conn_new(w->wsq, wsi);
    lws_callback_on_writable(wsi);
    return 0;
  case LWS_CALLBACK_RECEIVE:
    return wsq_conn_receive(pss->q, in, len,
                            lws_is_final_fragment(wsi) &&
                                !lws_remaining_packet_payload(wsi),
                            lws_frame_is_binary(wsi));
  case LWS_CALLBACK_SERVER_WRITEABLE:
    wsq_conn_flushed(pss->q);
    return ws_write_one(w, wsi, pss);
  case LWS_CALLBACK_CLOSED:
    json_decref(pss->hello);
    pss->hello = NULL;
    wsq_conn_close(pss->q);
    pss->q = NULL;
    budget_leave(w->budget, pss->budget_id);
    pss->budget_id = 0;
    return 0;
  case LWS_CALLBACK_EVENT_WAIT_CANCELLED: {
    if (!w || atomic_load(&w->stop))
      return 0;
    ws_adopt_pending(w);
    wsq_service(w->wsq);
    pthread_mutex_lock(&w->mu);
    bool fresh = w->head != w->woken_head; /* new pushes for everyone */
    w->woken_head = w->head;
    pthread_mutex_unlock(&w->mu);
    if (fresh)
      lws_callback_on_writable_all_protocol(w->ctx, &ws_protocols[1]);
    return 0;
  }
  default:
    return 0;
  }
}

/* protocols[0] serves the adopted socket until it upgrades: plain HTTP on
 * /ws gets lws's default answers, and an upgrade that does not name our
 * subprotocol is refused. */
static int ws_http_callback(struct lws *wsi, enum lws_callback_reasons reason,
                            void *user, void *in, size_t len) {
  if (reason == LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION) {
    log_info("ws: refused an upgrade without subprotocol " WS_SUBPROTOCOL);
    return -1;
  }
  return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols ws_protocols[] = {
    {"http", ws_http_callback, 0, 0, 0, NULL, 0},
    {WS_SUBPROTOCOL, ws_callback, sizeof(struct ws_pss), 4096, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

/* No permessage-deflate: the service thread would compress every answer,
 * one connection after the other; the big messages, window frames, are
 * compressed by the query workers instead (wsq.c, wsbin.c). */

/* Pings idle clients after 30 s, drops dead ones after 60 s. */
static const lws_retry_bo_t ws_retry = {.secs_since_valid_ping = 30,
                                        .secs_since_valid_hangup = 60};

static void ws_lws_log(int level, const char *line) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", line);
  msg[strcspn(msg, "\n")] = '\0';
  if (level & LLL_ERR)
    log_warn("lws: %s", msg);
  else
    log_debug("lws: %s", msg);
}

static void *ws_thread(void *arg) {
  struct ws *w = arg;
  while (!atomic_load(&w->stop))
    if (lws_service(w->ctx, 0) < 0)
      break;
  return NULL;
}

int ws_start(struct app *a, const char *bind, struct budget *budget,
             struct ws **out, char **cause) {
  struct ws *w = xcalloc(1, sizeof *w);
  struct lws_context_creation_info info;
  w->app = a;
  w->budget = budget;
  w->bind = xstrdup(bind ? bind : "127.0.0.1");
  pthread_mutex_init(&w->mu, NULL);
  lws_set_log_level(LLL_ERR | LLL_WARN, ws_lws_log);
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
  info.protocols = ws_protocols;
  info.max_http_header_data = 16384;
  info.gid = -1;
  info.uid = -1;
  info.user = w;
  info.timeout_secs = 10;
  info.retry_and_idle_policy = &ws_retry;
  info.options = LWS_SERVER_OPTION_VALIDATE_UTF8;
  w->ctx = lws_create_context(&info);
  if (!w->ctx) {
    *cause = xstrdup("cannot create the WebSocket context (libwebsockets)");
    ws_stop(w);
    return -EIO;
  }
  w->vh = lws_get_vhost_by_name(w->ctx, "default");
  if (w->vh && wsq_start(a, w->ctx, &w->wsq, cause) < 0) {
    ws_stop(w);
    return -EAGAIN;
  }
  if (!w->vh || pthread_create(&w->thread, NULL, ws_thread, w) != 0) {
    *cause = xstrdup("cannot start the WebSocket service thread");
    ws_stop(w);
    return -EIO;
  }
  w->running = true;
  app_set_listener(a, ws_on_app_event, w);
  *out = w;
  return 0;
}

void ws_stop(struct ws *w) {
  if (!w)
    return;
  if (w->running) {
    app_set_listener(w->app, NULL, NULL);
    atomic_store(&w->stop, true);
    lws_cancel_service(w->ctx);
    pthread_join(w->thread, NULL);
  }
  wsq_stop(w->wsq); /* no worker wakes the context after this */
  if (w->ctx)
    lws_context_destroy(w->ctx);
  wsq_free(w->wsq);
  for (size_t i = 0; i < w->n_pending; i++)
    close(w->pending[i]);
  for (int i = 0; i < WS_RING; i++)
    free(w->ring[i].text);
  free(w->pending);
  free(w->bind);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
