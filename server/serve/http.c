/* http.c -- libmicrohttpd: static files and the REST API (see http.h).
 *
 * Keep-alive needs the two-call idiom: a response queued on the first call
 * of a request (headers just parsed) makes MHD answer "Connection: close",
 * so the first call only allocates the per-request state and every answer
 * is queued on a later call.
 */
#include "http.h"
#include "api.h"
#include "app.h"
#include "budget.h"
#include "log.h"
#include "hostcheck.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <strings.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct http {
  struct MHD_Daemon *d;
  struct app *app;
  struct budget *budget;
  char *bind;
  char *root; /* realpath of the web root, or NULL when it does not exist */
  /* connections handed to MHD that its polling thread has not taken in
   * yet (MHD_add_connection only queues them; they are counted once
   * NOTIFY_STARTED says so) */
  atomic_int queued;
};

/* Per request. */
struct http_req {
  struct sbuf body;
  bool too_big;
};

/* Streamed answers: the pieces of an api_stream. */
struct http_stream {
  struct api_response rs;
  struct sbuf buf;
  size_t off;
  bool last;
};

static void http_log(void *cls, const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  msg[strcspn(msg, "\n")] = '\0';
  log_debug("http: %s", msg);
}

static void http_headers(struct MHD_Response *r) {
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

/* Sends r (which it destroys) with the common headers.  A NULL r (the
 * library could not allocate it) closes the connection. */
static enum MHD_Result http_queue(struct MHD_Connection *conn, int status,
                                  struct MHD_Response *r) {
  if (!r) {
    log_warn("http: out of memory for a %d answer: connection closed", status);
    return MHD_NO;
  }
  http_headers(r);
  enum MHD_Result ok = MHD_queue_response(conn, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

/* Sends an API-style JSON error. */
static enum MHD_Result http_error(struct MHD_Connection *conn, int status,
                                  const char *code, const char *detail) {
  struct api_response rs = {0};
  api_error(&rs, status, code, detail);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(rs.len, rs.body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    api_response_free(&rs);
    return http_queue(conn, status, NULL);
  }
  rs.body = NULL;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  return http_queue(conn, status, r);
}

/* ---- API ---- */

static const char *http_arg(void *ctx, const char *key) {
  return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static const char *http_header(void *ctx, const char *name) {
  return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf,
                                size_t max) {
  struct http_stream *s = cls;
  while (s->off == s->buf.len) {
    if (s->last)
      return MHD_CONTENT_READER_END_OF_STREAM;
    sbuf_reset(&s->buf);
    s->off = 0;
    int rc = s->rs.stream.next(s->rs.stream.ctx, &s->buf);
    if (rc < 0)
      return MHD_CONTENT_READER_END_WITH_ERROR;
    s->last = rc == 0;
  }
  size_t n = s->buf.len - s->off < max ? s->buf.len - s->off : max;
  memcpy(buf, s->buf.s + s->off, n);
  s->off += n;
  return (ssize_t)n;
}

static void http_stream_free(void *cls) {
  struct http_stream *s = cls;
  api_response_free(&s->rs);
  sbuf_free(&s->buf);
  free(s);
}

static enum MHD_Result http_api(struct http *h, struct MHD_Connection *conn,
                                const char *url, const char *method,
                                struct http_req *rq) {
  struct api_request q = {method, url,          http_arg,   conn,
                          rq->body.s, rq->body.len, http_header};
  struct api_response rs;
  struct MHD_Response *r;
  api_handle(h->app, &q, &rs);
  if (rs.stream.next) {
    struct http_stream *s = xcalloc(1, sizeof *s);
    s->rs = rs;
    r = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 64 * 1024, http_stream_read, s, http_stream_free);
    if (!r) { /* the library calls the free callback only once it has r */
      http_stream_free(s);
      return http_queue(conn, rs.status, NULL);
    }
  } else {
    r = MHD_create_response_from_buffer(rs.len, rs.body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
      api_response_free(&rs);
      return http_queue(conn, rs.status, NULL);
    }
    rs.body = NULL;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs.content_type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (rs.allow)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs.allow);
  if (rs.retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", rs.retry_after);
    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
  }
  if (rs.filename) {
    char *cd = xasprintf("attachment; filename=\"%s\"", rs.filename);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
    free(cd);
  }
  int status = rs.status;
  if (!rs.stream.next)
    api_response_free(&rs);
  return http_queue(conn, status, r);
}

/* ---- static files ---- */

static const char *http_content_type(const char *path) {
  static const char *const types[][2] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".md", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"}};
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (strcmp(dot, types[i][0]) == 0)
      return types[i][1];
  return "application/octet-stream";
}

/* Whether a decoded URL path may name a file under the root: no ".."
 * segment, no backslash, no NUL, starts with '/'. */
static bool http_path_ok(const char *url) {
  if (url[0] != '/' || strchr(url, '\\'))
    return false;
  for (const char *p = url; *p;) {
    p++;
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return false;
    p += n;
  }
  return true;
}

static enum MHD_Result http_static(struct http *h, struct MHD_Connection *conn,
                                   const char *url) {
  char want[PATH_MAX], real[PATH_MAX];
  struct stat st;
  if (!http_path_ok(url))
    return http_error(conn, 404, "not_found",
                      "paths with '..' or '\\' are refused");
  if (!h->root)
    return http_error(conn, 404, "not_found",
                      "the web root does not exist; start the server with "
                      "--web-root");
  if (snprintf(want, sizeof want, "%s%s%s", h->root, url,
               url[strlen(url) - 1] == '/' ? "index.html" : "") >=
      (int)sizeof want)
    return http_error(conn, 404, "not_found", "path too long");
  if (!realpath(want, real) || strncmp(real, h->root, strlen(h->root)) != 0 ||
      real[strlen(h->root)] != '/')
    return http_error(conn, 404, "not_found", "no such file");
  if (stat(real, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* a folder: its index.html, by redirect so relative URLs work; the
     * leading slashes collapse to one, as "//host/" would name another
     * host to the browser */
    char *loc = xasprintf("/%s/", url + strspn(url, "/"));
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (r)
      MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    return http_queue(conn, 301, r);
  }
  /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular
   * files are served */
  int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    return http_error(conn, 404, "not_found", "no such file");
  }
  char etag[64];
  snprintf(etag, sizeof etag, "\"%llx-%llx\"", (unsigned long long)st.st_size,
           (unsigned long long)st.st_mtim.tv_sec * 1000000000ULL +
               (unsigned long long)st.st_mtim.tv_nsec);
  const char *inm =
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
  struct MHD_Response *r;
  int status = 200;
  if (inm && strstr(inm, etag)) {
    close(fd);
    r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    status = 304;
  } else {
    r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r)
      close(fd); /* the library owns fd only once it has r */
    else
      MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                              http_content_type(real));
  }
  if (!r)
    return http_queue(conn, status, NULL);
  MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  return http_queue(conn, status, r);
}

/* ---- requests ---- */

/* The connection's budget entry (budget.h) follows its requests: its id,
 * found by socket when MHD starts the connection, is kept as the socket
 * context until MHD closes it. */
static void http_on_connection(void *cls, struct MHD_Connection *conn,
                               void **socket_context,
                               enum MHD_ConnectionNotificationCode toe) {
  struct http *h = cls;
  uint64_t *id = *socket_context;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    atomic_fetch_sub(&h->queued, 1);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = id = xmalloc(sizeof *id);
    *id = ci ? budget_find(h->budget, ci->connect_fd) : 0;
  } else if (id) {
    budget_leave(h->budget, *id);
    free(id);
    *socket_context = NULL;
  }
}

static void http_budget_set(struct http *h, struct MHD_Connection *conn,
                            enum budget_state s) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  const uint64_t *id = ci ? ci->socket_context : NULL;
  if (id)
    budget_set(h->budget, *id, s);
}

static enum MHD_Result http_count_header(void *cls, enum MHD_ValueKind kind,
                                         const char *key, const char *value) {
  size_t *n = cls;
  *n += strlen(key) + (value ? strlen(value) : 0) + 4;
  return MHD_YES;
}

/* Counts the Host headers and the Content-Length headers, and notes
 * whether two Content-Length values differ. */
struct http_framing {
  unsigned hosts, lengths;
  const char *length;
  bool lengths_differ;
};

static enum MHD_Result http_framing_header(void *cls, enum MHD_ValueKind kind,
                                           const char *key,
                                           const char *value) {
  struct http_framing *f = cls;
  (void)kind;
  if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
    f->hosts++;
  else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
    if (f->lengths++ && strcmp(f->length, value ? value : "") != 0)
      f->lengths_differ = true;
    f->length = value ? value : "";
  }
  return MHD_YES;
}

/* The request's framing, checked before any body is read: one Host header
 * (a second one could name another host than the one checked), no two
 * different Content-Length values, no transfer coding but chunked (MHD
 * would wait for a body it cannot delimit).  Queues a 400/501 and returns
 * its result, or returns MHD_NO with *refused false when all is well. */
static enum MHD_Result http_framing_check(struct MHD_Connection *conn,
                                          bool *refused) {
  struct http_framing f = {0};
  MHD_get_connection_values(conn, MHD_HEADER_KIND, http_framing_header, &f);
  const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_TRANSFER_ENCODING);
  *refused = true;
  if (f.hosts > 1)
    return http_error(conn, 400, "bad_request",
                      "a request has one Host header");
  if (f.lengths_differ)
    return http_error(conn, 400, "bad_request",
                      "two different Content-Length headers");
  if (te && strcasecmp(te, "chunked") != 0)
    return http_error(conn, 501, "not_implemented",
                      "the only transfer coding understood is chunked");
  *refused = false;
  return MHD_NO;
}

static enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn,
                                       const char *url, const char *method,
                                       const char *version,
                                       const char *upload_data,
                                       size_t *upload_size, void **con_cls) {
  struct http *h = cls;
  struct http_req *rq = *con_cls;
  if (!rq) {
    http_budget_set(h, conn, BUDGET_BUSY);
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    *con_cls = rq = xcalloc(1, sizeof *rq);
    bool refused;
    enum MHD_Result res = http_framing_check(conn, &refused);
    if (refused)
      return res;
    if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY)
      return http_error(conn, 413, "body_too_large",
                        "request bodies are limited to 1 MiB");
    return MHD_YES;
  }
  if (*upload_size) {
    if (rq->body.len + *upload_size > HTTP_MAX_BODY)
      rq->too_big = true;
    else
      sbuf_add(&rq->body, upload_data, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  size_t header_bytes = 0;
  MHD_get_connection_values(conn, MHD_HEADER_KIND, http_count_header,
                            &header_bytes);
  if (header_bytes > HTTP_MAX_HEADERS)
    return http_error(conn, 431, "headers_too_large",
                      "request headers are limited to 16 KiB");
  const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
  if (!host || !hostcheck_allowed(host, h->bind))
    return http_error(conn, 403, "forbidden_host",
                      "the Host header must be localhost, 127.0.0.1 or [::1] "
                      "(DNS rebinding defence)");
  if (rq->too_big)
    return http_error(conn, 413, "body_too_large",
                      "request bodies are limited to 1 MiB");
  if (strncmp(url, "/api/", 5) == 0)
    return http_api(h, conn, url, method, rq);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (r)
      MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return http_queue(conn, 405, r);
  }
  return http_static(h, conn, url);
}

static void http_on_completed(void *cls, struct MHD_Connection *conn,
                              void **con_cls,
                              enum MHD_RequestTerminationCode toe) {
  struct http_req *rq = *con_cls;
  if (!rq)
    return;
  http_budget_set(cls, conn, BUDGET_WAITING);
  sbuf_free(&rq->body);
  free(rq);
  *con_cls = NULL;
}

int http_start(struct app *a, const char *bind, struct budget *budget,
               struct http **out, char **cause) {
  struct http *h = xcalloc(1, sizeof *h);
  char real[PATH_MAX];
  h->app = a;
  h->budget = budget;
  h->bind = xstrdup(bind ? bind : "127.0.0.1");
  if (realpath(app_web_root(a), real))
    h->root = xstrdup(real);
  else
    log_warn("web root %s: %s; only the API is served", app_web_root(a),
             strerror(errno));
  h->d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
          MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_POLL |
          MHD_USE_ERROR_LOG,
      0, NULL, NULL, http_on_request, h, MHD_OPTION_EXTERNAL_LOGGER, http_log,
      h, MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, h,
      MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, h,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(48 * 1024),
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
      MHD_OPTION_END);
  if (!h->d) {
    *cause = xstrdup("cannot start the HTTP daemon (libmicrohttpd)");
    http_stop(h);
    return -EIO;
  }
  *out = h;
  return 0;
}

int http_add_connection(struct http *h, int fd, const struct sockaddr *sa,
                        socklen_t len) {
  /* MHD counts a connection until its polling thread has cleaned it up,
   * after the budget let it go: never let MHD itself refuse one (0.9.75
   * then leaves a mutex of its polling thread locked, and every HTTP
   * connection waits on it for good).  MHD_add_connection only queues a
   * connection for that thread, which counts it later: the ones queued
   * count too (without them a burst of connections, while the thread was
   * slow to take them, went past the limit: hostile_test's flood, about
   * one run in seven under load).  Only this thread adds connections, so
   * the sum can only fall meanwhile. */
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  if (di && di->num_connections + (unsigned)atomic_load(&h->queued) >=
                HTTP_MAX_CONNECTIONS - 1)
    return -EBUSY;
  atomic_fetch_add(&h->queued, 1);
  if (MHD_add_connection(h->d, fd, sa, len) != MHD_YES) {
    atomic_fetch_sub(&h->queued, 1);
    /* libmicrohttpd says ENFILE when its own connection limit is reached */
    if (errno == ENFILE)
      log_warn("http: connection refused: the limit of %d HTTP connections "
               "is reached", HTTP_MAX_CONNECTIONS);
    else
      log_warn("http: cannot take a connection: %s", strerror(errno));
    return -EIO;
  }
  return 0;
}

void http_stop(struct http *h) {
  if (!h)
    return;
  if (h->d)
    MHD_stop_daemon(h->d);
  free(h->bind);
  free(h->root);
  free(h);
}
