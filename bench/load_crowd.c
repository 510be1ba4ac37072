/* load_crowd.c -- the crowd run of bench/load (see load.h): `--crowd N`
 * hostile and heavy connections at once, six kinds in turn, all driven by
 * one poll() thread:
 *   slow headers   send a request's headers one byte per 500 ms, forever
 *   silent         connect and say nothing
 *   keep-alive     GET /api/v1/profile once a second on one connection
 *   WS non-reader  a WebSocket that asks 16 whole-profile windows at
 *                  10,000 px and never reads (4 KiB receive buffer)
 *   slow export    GET /api/v1/export?format=csv read 1 KiB per 250 ms
 *                  (4 KiB receive buffer)
 *   SQL hog        POST a three-way cross join to the SQL endpoint, again
 *                  as soon as it is answered
 * A connection the server closes is opened again 200 ms later.  Meanwhile
 * one page-like client measures the page's window queries, one at a time
 * every 20 ms, alternately GET /api/v1/slices and the same window over the
 * WebSocket (a "slices" request, answered by a binary frame): first for
 * `seconds` on the idle server (the baseline), then for `seconds` with the
 * crowd connected.  The server's peak RSS (VmHWM, reset with clear_refs
 * before each phase where allowed) is read from /proc/PID/status.
 *
 * Ownership: load_crowd_run() owns the crowd, its thread and the measuring
 * client's connections.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "load.h"

enum {
  CROWD_SLOW,
  CROWD_SILENT,
  CROWD_KEEPALIVE,
  CROWD_WS,
  CROWD_EXPORT,
  CROWD_SQL,
  CROWD_N_KINDS
};
static const char *const load_crowd_names[] = {
    "slow headers", "silent",       "keep-alive REST",
    "WS non-reader", "slow export", "SQL hog"};

#define LOAD_CROWD_REOPEN_NS (200 * 1000000LL)
#define LOAD_CROWD_SLOW_NS (500 * 1000000LL)
#define LOAD_CROWD_EXPORT_NS (250 * 1000000LL)
#define LOAD_CROWD_KEEPALIVE_NS (1000 * 1000000LL)
#define LOAD_CROWD_WS_QUERIES 16
#define LOAD_CROWD_PROBE_GAP_US 20000

struct load_crowd_conn {
  int kind, fd;
  bool connecting, upgraded;
  int64_t next_at; /* reopen, next slow byte, next read or request */
  char out[8192];  /* to send */
  size_t out_len, out_off;
  char head[4096]; /* an answer's headers (keep-alive, WS upgrade) */
  size_t head_len;
  long long body_left; /* keep-alive: body bytes still to read */
  size_t slow_pos;
};

struct load_crowd_stats {
  uint64_t connects, closed, answers, bytes;
};

struct load_crowd {
  const struct load_profile *p;
  struct load_crowd_conn *c;
  int n;
  atomic_bool stop;
  pthread_t th;
  struct load_crowd_stats st[CROWD_N_KINDS];
  char ws_queries[LOAD_CROWD_WS_QUERIES][2048];
  char sql[512];
};

/* ------------------------------------------------------------ WebSocket */

static const char load_crowd_ws_upgrade[] =
    "GET /ws HTTP/1.1\r\nHost: localhost:%d\r\nOrigin: http://localhost:%d\r\n"
    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: nex.v1\r\n\r\n";

/* A masked client frame of `op` carrying len bytes of payload, into out
 * (cap bytes).  Returns its size, or 0 if it does not fit. */
static size_t load_crowd_ws_frame(int op, const char *payload, size_t len,
                                  char *out, size_t cap) {
  static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  size_t h = len < 126 ? 2 : 4;
  if (len > 65535 || h + 4 + len > cap)
    return 0;
  out[0] = (char)(0x80 | op);
  if (len < 126) {
    out[1] = (char)(0x80 | len);
  } else {
    out[1] = (char)(0x80 | 126);
    out[2] = (char)(len >> 8);
    out[3] = (char)(len & 0xff);
  }
  memcpy(out + h, mask, 4);
  for (size_t i = 0; i < len; i++)
    out[h + 4 + i] = (char)(payload[i] ^ mask[i % 4]);
  return h + 4 + len;
}

/* A "slices" request for the window [s, e) of n tracks from `first`. */
static void load_crowd_ws_query(const struct load_profile *p, uint32_t id,
                                size_t first, size_t n, int64_t s, int64_t e,
                                int px, bool progressive, char *out,
                                size_t cap) {
  size_t len = (size_t)snprintf(out, cap, "{\"type\":\"slices\",\"id\":%u,"
                                          "\"tracks\":[",
                                id);
  for (size_t i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s\"%lld\"", i ? "," : "",
                            (long long)p->tracks[(first + i) % p->n_tracks]);
  if (len < cap)
    snprintf(out + len, cap - len,
             "],\"start\":\"%lld\",\"end\":\"%lld\",\"px\":%d,"
             "\"progressive\":%s,\"deflate\":%s}",
             (long long)s, (long long)e, px, progressive ? "true" : "false",
             progressive ? "true" : "false");
}

/* ------------------------------------------------------------ the crowd */

static void load_crowd_close(struct load_crowd *cr, struct load_crowd_conn *c,
                             bool by_server) {
  if (c->fd >= 0)
    close(c->fd);
  if (by_server)
    cr->st[c->kind].closed++;
  c->fd = -1;
  c->next_at = load_now() + LOAD_CROWD_REOPEN_NS;
}

static void load_crowd_queue(struct load_crowd_conn *c, const char *data,
                             size_t len) {
  if (c->out_len + len > sizeof c->out)
    return; /* never: requests are small */
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
}

/* The request that starts a connection of c's kind. */
static void load_crowd_start(struct load_crowd *cr, struct load_crowd_conn *c) {
  int port = cr->p->port, n = 0;
  char req[2048];
  c->out_len = c->out_off = c->head_len = c->slow_pos = 0;
  c->upgraded = false;
  c->body_left = -1;
  c->next_at = load_now();
  switch (c->kind) {
  case CROWD_KEEPALIVE:
    n = snprintf(req, sizeof req,
                 "GET /api/v1/profile HTTP/1.1\r\nHost: localhost:%d\r\n\r\n",
                 port);
    c->next_at = INT64_MAX; /* the next one once this is answered */
    break;
  case CROWD_WS:
    n = snprintf(req, sizeof req, load_crowd_ws_upgrade, port, port);
    break;
  case CROWD_EXPORT:
    n = snprintf(req, sizeof req,
                 "GET /api/v1/export?format=csv HTTP/1.1\r\n"
                 "Host: localhost:%d\r\n\r\n",
                 port);
    c->next_at += LOAD_CROWD_EXPORT_NS;
    break;
  case CROWD_SQL:
    n = snprintf(req, sizeof req,
                 "POST /api/v1/db/system/_search HTTP/1.1\r\n"
                 "Host: localhost:%d\r\nContent-Type: application/json\r\n"
                 "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                 port, strlen(cr->sql), cr->sql);
    break;
  default:
    break;
  }
  if (n > 0)
    load_crowd_queue(c, req, (size_t)n);
}

static void load_crowd_open(struct load_crowd *cr, struct load_crowd_conn *c) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)cr->p->port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int small = 4096;
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    c->next_at = load_now() + LOAD_CROWD_REOPEN_NS;
    return;
  }
  if (c->kind == CROWD_WS || c->kind == CROWD_EXPORT)
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0 &&
      errno != EINPROGRESS) {
    load_crowd_close(cr, c, false);
    return;
  }
  cr->st[c->kind].connects++;
  c->connecting = true;
}

/* The WebSocket was upgraded: asks its windows, then reads nothing. */
static void load_crowd_ws_ask(struct load_crowd *cr,
                              struct load_crowd_conn *c) {
  char frame[2100];
  c->upgraded = true;
  for (int i = 0; i < LOAD_CROWD_WS_QUERIES; i++) {
    size_t n = load_crowd_ws_frame(1, cr->ws_queries[i],
                                   strlen(cr->ws_queries[i]), frame,
                                   sizeof frame);
    load_crowd_queue(c, frame, n);
  }
}

/* Reads what c's kind reads; false when the server closed it. */
static bool load_crowd_read(struct load_crowd *cr, struct load_crowd_conn *c) {
  char buf[16384];
  size_t want = c->kind == CROWD_EXPORT ? 1024 : sizeof buf;
  if (c->kind == CROWD_WS || c->kind == CROWD_KEEPALIVE)
    want = sizeof c->head - 1 - c->head_len; /* headers first */
  if (c->kind == CROWD_KEEPALIVE && c->body_left >= 0)
    want = sizeof buf;
  ssize_t n = recv(c->fd, c->kind == CROWD_WS || (c->kind == CROWD_KEEPALIVE &&
                                                  c->body_left < 0)
                              ? c->head + c->head_len
                              : buf,
                   want, 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
    if (c->kind == CROWD_EXPORT || c->kind == CROWD_SQL)
      cr->st[c->kind].answers++; /* read to its end */
    return false;
  }
  if (n < 0)
    return true;
  cr->st[c->kind].bytes += (uint64_t)n;
  if (c->kind == CROWD_EXPORT)
    c->next_at = load_now() + LOAD_CROWD_EXPORT_NS;
  if (c->kind == CROWD_WS || (c->kind == CROWD_KEEPALIVE && c->body_left < 0)) {
    c->head_len += (size_t)n;
    c->head[c->head_len] = '\0';
    char *end = strstr(c->head, "\r\n\r\n");
    if (!end)
      return c->head_len < sizeof c->head - 1;
    if (c->kind == CROWD_WS) {
      if (strncmp(c->head, "HTTP/1.1 101", 12) != 0)
        return false;
      cr->st[c->kind].answers++;
      load_crowd_ws_ask(cr, c);
      return true;
    }
    char *cl = strcasestr(c->head, "\r\nContent-Length:");
    if (!cl || strncmp(c->head, "HTTP/1.1 200", 12) != 0)
      return false;
    size_t have = c->head_len - (size_t)(end + 4 - c->head);
    c->body_left = atoll(cl + 17) - (long long)have;
  } else if (c->kind == CROWD_KEEPALIVE) {
    c->body_left -= n;
  }
  if (c->kind == CROWD_KEEPALIVE && c->body_left == 0) { /* the next one */
    cr->st[c->kind].answers++;
    c->head_len = 0;
    c->body_left = -1;
    c->next_at = load_now() + LOAD_CROWD_KEEPALIVE_NS;
  }
  return true;
}

/* Sends what waits, and the next slow byte or keep-alive request when
 * due; false when the server closed c. */
static bool load_crowd_write(struct load_crowd *cr, struct load_crowd_conn *c,
                             int64_t now) {
  static const char slow[] =
      "GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
  if (c->kind == CROWD_SLOW && now >= c->next_at) {
    char ch = c->slow_pos < sizeof slow - 1 ? slow[c->slow_pos] : 'x';
    c->slow_pos++;
    load_crowd_queue(c, &ch, 1);
    c->next_at = now + LOAD_CROWD_SLOW_NS;
  }
  if (c->kind == CROWD_KEEPALIVE && c->out_len == 0 && c->body_left < 0 &&
      c->head_len == 0 && now >= c->next_at) {
    char req[256];
    int n = snprintf(
        req, sizeof req,
        "GET /api/v1/profile HTTP/1.1\r\nHost: localhost:%d\r\n\r\n",
        cr->p->port);
    load_crowd_queue(c, req, (size_t)n);
    c->next_at = INT64_MAX;
  }
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK;
    c->out_off += (size_t)n;
  }
  c->out_len = c->out_off = 0;
  return true;
}

/* The events c waits for. */
static short load_crowd_events(const struct load_crowd_conn *c, int64_t now) {
  if (c->connecting || c->out_len)
    return POLLOUT;
  switch (c->kind) {
  case CROWD_WS:
    return c->upgraded ? 0 : POLLIN;
  case CROWD_EXPORT:
    return now >= c->next_at ? POLLIN : 0;
  default:
    return POLLIN;
  }
}

static void *load_crowd_main(void *arg) {
  struct load_crowd *cr = arg;
  struct pollfd *pf = calloc((size_t)cr->n, sizeof *pf);
  int64_t t0 = load_now();
  for (int i = 0; i < cr->n; i++) /* all at once, within a second */
    cr->c[i].next_at = t0 + (int64_t)i * 1000000000LL / cr->n;
  while (!atomic_load(&cr->stop)) {
    int64_t now = load_now(), wake = now + 50000000LL;
    for (int i = 0; i < cr->n; i++) {
      struct load_crowd_conn *c = &cr->c[i];
      if (c->fd < 0 && now >= c->next_at)
        load_crowd_open(cr, c);
      if (c->fd >= 0 && !c->connecting && !load_crowd_write(cr, c, now))
        load_crowd_close(cr, c, true);
      pf[i].fd = c->fd;
      pf[i].events = c->fd >= 0 ? load_crowd_events(c, now) : 0;
      pf[i].revents = 0;
      if (c->next_at > now && c->next_at < wake)
        wake = c->next_at;
    }
    int ms = (int)((wake - now) / 1000000) + 1;
    if (poll(pf, (nfds_t)cr->n, ms) <= 0)
      continue;
    for (int i = 0; i < cr->n; i++) {
      struct load_crowd_conn *c = &cr->c[i];
      short re = pf[i].revents;
      if (c->fd < 0 || !re)
        continue;
      if (c->connecting) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        c->connecting = false;
        if (err)
          load_crowd_close(cr, c, true);
        else
          load_crowd_start(cr, c);
        continue;
      }
      if ((re & POLLIN) || ((re & (POLLHUP | POLLERR)) && !(re & POLLOUT))) {
        if (!load_crowd_read(cr, c))
          load_crowd_close(cr, c, true);
      }
    }
  }
  for (int i = 0; i < cr->n; i++)
    if (cr->c[i].fd >= 0)
      close(cr->c[i].fd);
  free(pf);
  return NULL;
}

/* ------------------------------------------------------------ the probe */

/* The page-like client: a keep-alive HTTP connection and a WebSocket. */
struct load_probe {
  const struct load_profile *p;
  struct load_conn http, ws;
  uint64_t rng;
  uint32_t next_id;
  struct load_lat rest, wsq;
  char first_error[256];
  int pid;                      /* the server's, or 0 */
  uint64_t retries;             /* REST requests asked again */
  double pss_peak, anon_peak;   /* MiB, sampled once a second */
};

/* Makes sure n bytes wait in the WebSocket's buffer; -1 if it broke. */
static int load_probe_need(struct load_conn *c, size_t n) {
  while (c->len < n)
    if (load_fill(c) < 0)
      return -1;
  return 0;
}

/* Reads one frame: its opcode, payload at *data (in c->buf, valid until the
 * next read) of *len bytes; consumed with load_probe_consume().  -1 if the
 * connection broke. */
static int load_probe_frame(struct load_conn *c, int *op, char **data,
                            size_t *len, size_t *frame) {
  if (load_probe_need(c, 2) < 0)
    return -1;
  unsigned char *b = (unsigned char *)c->buf;
  size_t h = 2, n = b[1] & 0x7f;
  if (n == 126)
    h = 4;
  else if (n == 127)
    h = 10;
  if (load_probe_need(c, h) < 0)
    return -1;
  b = (unsigned char *)c->buf;
  if (h > 2) {
    n = 0;
    for (size_t i = 2; i < h; i++)
      n = n << 8 | b[i];
  }
  if (load_probe_need(c, h + n) < 0)
    return -1;
  *op = c->buf[0] & 0x0f;
  *data = c->buf + h;
  *len = n;
  *frame = h + n;
  return 0;
}

static void load_probe_consume(struct load_conn *c, size_t n) {
  memmove(c->buf, c->buf + n, c->len - n);
  c->len -= n;
}

/* Opens the WebSocket; 0 or -1. */
static int load_probe_ws_open(struct load_probe *pr) {
  char req[1024];
  int port = pr->p->port;
  int n = snprintf(req, sizeof req, load_crowd_ws_upgrade, port, port);
  pr->ws.len = 0;
  if ((pr->ws.fd = load_connect(port)) < 0 ||
      send(pr->ws.fd, req, (size_t)n, MSG_NOSIGNAL) != n)
    return -1;
  char *end;
  while (!(end = memmem(pr->ws.buf ? pr->ws.buf : "", pr->ws.len, "\r\n\r\n",
                        4)))
    if (load_probe_need(&pr->ws, pr->ws.len + 1) < 0)
      return -1;
  if (strncmp(pr->ws.buf, "HTTP/1.1 101", 12) != 0)
    return -1;
  load_probe_consume(&pr->ws, (size_t)(end + 4 - pr->ws.buf));
  return 0;
}

/* One window over the WebSocket, to its final frame: 0, or -1 with why in
 * err. */
static int load_probe_ws_window(struct load_probe *pr, const char *query,
                                uint32_t id, char *err, size_t errlen) {
  char frame[4096];
  size_t fl = load_crowd_ws_frame(1, query, strlen(query), frame, sizeof frame);
  for (int attempt = 0;; attempt++) {
    if (pr->ws.fd >= 0 && send(pr->ws.fd, frame, fl, MSG_NOSIGNAL) == (ssize_t)fl)
      break;
    if (pr->ws.fd >= 0)
      close(pr->ws.fd);
    pr->ws.fd = -1;
    if (attempt || load_probe_ws_open(pr) < 0) {
      snprintf(err, errlen, "WebSocket: cannot connect: %s", strerror(errno));
      return -1;
    }
  }
  for (;;) {
    int op;
    char *data;
    size_t len, whole;
    if (load_probe_frame(&pr->ws, &op, &data, &len, &whole) < 0) {
      snprintf(err, errlen, "WebSocket broken: %s",
               errno ? strerror(errno) : "closed");
      close(pr->ws.fd);
      pr->ws.fd = -1;
      return -1;
    }
    if (op == 9) { /* ping: pong */
      char pong[256];
      size_t pl = load_crowd_ws_frame(10, data, len < 125 ? len : 0, pong,
                                      sizeof pong);
      send(pr->ws.fd, pong, pl, MSG_NOSIGNAL);
    } else if (op == 2 && len >= 10) {
      uint32_t fid;
      memcpy(&fid, data + 4, 4); /* little-endian, as this host */
      bool final = data[9] & 1;
      load_probe_consume(&pr->ws, whole);
      if (fid == id && final)
        return 0;
      continue;
    } else if (op == 1) {
      char idtext[32];
      snprintf(idtext, sizeof idtext, "\"id\":%u,", id);
      if (memmem(data, len, idtext, strlen(idtext))) {
        snprintf(err, errlen, "WebSocket error answer: %.*s",
                 (int)(len < 160 ? len : 160), data);
        load_probe_consume(&pr->ws, whole);
        return -1;
      }
    } else if (op == 8) {
      snprintf(err, errlen, "WebSocket closed by the server");
      close(pr->ws.fd);
      pr->ws.fd = -1;
      return -1;
    }
    load_probe_consume(&pr->ws, whole);
  }
}

/* A REST window, as a browser gets it: a keep-alive connection the server
 * closed before answering is opened again, and a 503 busy (too many
 * connections) is asked again after its Retry-After (1 s); both are
 * counted in pr->retries, at most 3 attempts.  0, or -1 with why in err. */
static int load_probe_rest_window(struct load_probe *pr, const char *target,
                                  char *err, size_t errlen) {
  for (int attempt = 0; attempt < 3; attempt++) {
    char *body;
    size_t len;
    if (attempt)
      pr->retries++;
    int st = load_get(&pr->http, target, &body, &len, err, errlen);
    if (st == 200 && len > 0)
      return 0;
    if (st >= 0)
      snprintf(err, errlen, "status %d: %.*s", st,
               (int)(len < 120 ? len : 120), body);
    if (st == 503) {
      close(pr->http.fd);
      pr->http.fd = -1;
      sleep(1);
    } else if (st >= 0 || pr->http.len > 0) {
      return -1; /* an answer, or a connection cut in an answer */
    }
  }
  return -1;
}

/* The server's memory in MiB from /proc: `key` of status or smaps_rollup
 * (-1: unknown). */
static double load_crowd_proc(int pid, const char *file, const char *key) {
  char path[64], line[256];
  size_t kl = strlen(key);
  double v = -1;
  snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
  FILE *f = pid > 0 ? fopen(path, "r") : NULL;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':')
      v = atof(line + kl + 1) / 1024;
  if (f)
    fclose(f);
  return v;
}

static void load_probe_sample(struct load_probe *pr) {
  double pss = load_crowd_proc(pr->pid, "smaps_rollup", "Pss");
  double anon = load_crowd_proc(pr->pid, "status", "RssAnon");
  if (pss > pr->pss_peak)
    pr->pss_peak = pss;
  if (anon > pr->anon_peak)
    pr->anon_peak = anon;
}

/* Measures window queries for `seconds`, alternately REST and WebSocket. */
static void load_probe_run(struct load_probe *pr, int seconds) {
  const struct load_profile *p = pr->p;
  int64_t span = p->end - p->start, stop_at = load_now() + seconds * 1000000000LL;
  int64_t sample_at = 0;
  pr->pss_peak = pr->anon_peak = -1;
  for (int i = 0; load_now() < stop_at; i++) {
    if (load_now() >= sample_at) {
      load_probe_sample(pr);
      sample_at = load_now() + 1000000000LL;
    }
    char tracks[LOAD_TRACKS_PER_REQ * 24], target[8192], err[256], q[4096];
    size_t first = load_rand(&pr->rng) % p->n_tracks;
    int64_t w = span >> (2 * (load_rand(&pr->rng) % 6));
    int64_t s = p->start + (w < span ? (int64_t)(load_rand(&pr->rng) %
                                                 (uint64_t)(span - w))
                                     : 0);
    int64_t t0 = load_now();
    int rc;
    struct load_lat *l = i % 2 ? &pr->wsq : &pr->rest;
    if (i % 2) {
      uint32_t id = ++pr->next_id;
      load_crowd_ws_query(p, id, first, LOAD_TRACKS_PER_REQ, s, s + w, 1024,
                          true, q, sizeof q);
      rc = load_probe_ws_window(pr, q, id, err, sizeof err);
    } else {
      load_track_list(p, first, LOAD_TRACKS_PER_REQ, tracks, sizeof tracks);
      snprintf(target, sizeof target,
               "/api/v1/slices?tracks=%s&start=%lld&end=%lld&px=1024", tracks,
               (long long)s, (long long)(s + w));
      rc = load_probe_rest_window(pr, target, err, sizeof err);
    }
    if (rc == 0) {
      load_lat_add(l, load_now() - t0);
    } else {
      l->failed++;
      if (!pr->first_error[0])
        snprintf(pr->first_error, sizeof pr->first_error, "%s", err);
    }
    usleep(LOAD_CROWD_PROBE_GAP_US);
  }
}

/* ------------------------------------------------------------ report */

/* The server's VmHWM and VmRSS in MiB (-1: unknown). */
static void load_crowd_rss(int pid, double *hwm, double *rss) {
  *hwm = load_crowd_proc(pid, "status", "VmHWM");
  *rss = load_crowd_proc(pid, "status", "VmRSS");
}

/* Resets the server's VmHWM to its RSS (clear_refs 5); false if not
 * allowed. */
static bool load_crowd_reset_hwm(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", pid);
  FILE *f = pid > 0 ? fopen(path, "w") : NULL;
  bool ok = f && fputs("5", f) >= 0;
  if (f && fclose(f) != 0)
    ok = false;
  return ok;
}

/* Prints a phase's figures; returns the p99 of both kinds together. */
static double load_crowd_report(const char *phase, struct load_probe *pr,
                                int pid, bool hwm_reset) {
  struct load_lat all = {0};
  struct load_lat *ls[2] = {&pr->rest, &pr->wsq};
  static const char *const names[2] = {"REST /slices", "WS slices"};
  double hwm, rss;
  load_crowd_rss(pid, &hwm, &rss);
  for (int k = 0; k < 2; k++) {
    qsort(ls[k]->v, ls[k]->n, sizeof *ls[k]->v, load_cmp);
    printf("%-6s %-13s %6zu answers %4llu failed  p50 %7.2f ms  p99 %7.2f ms"
           "  max %7.2f ms\n",
           phase, names[k], ls[k]->n, (unsigned long long)ls[k]->failed,
           load_pct(ls[k], 0.5), load_pct(ls[k], 0.99), load_pct(ls[k], 1.0));
    for (size_t i = 0; i < ls[k]->n; i++)
      load_lat_add(&all, ls[k]->v[i]);
  }
  qsort(all.v, all.n, sizeof *all.v, load_cmp);
  double p99 = load_pct(&all, 0.99);
  printf("%-6s %-13s %6zu answers %4llu failed  p50 %7.2f ms  p99 %7.2f ms"
         "  (REST retries %llu)\n",
         phase, "both", all.n,
         (unsigned long long)(pr->rest.failed + pr->wsq.failed),
         load_pct(&all, 0.5), p99, (unsigned long long)pr->retries);
  if (pid > 0)
    printf("%-6s server peak RSS (VmHWM%s) %.0f MiB, RSS now %.0f MiB; "
           "sampled peaks: PSS %.0f MiB, anonymous %.0f MiB\n",
           phase, hwm_reset ? " since the phase began" : " since its start",
           hwm, rss, pr->pss_peak, pr->anon_peak);
  free(all.v);
  return p99;
}

/* The kinds named in the comma list `kinds` (NULL: all) as a bit mask, or
 * 0 if one is unknown. */
static unsigned load_crowd_kinds(const char *kinds) {
  static const char *const keys[] = {"slow", "silent", "keepalive",
                                     "ws",   "export", "sql"};
  unsigned mask = 0;
  if (!kinds)
    return (1u << CROWD_N_KINDS) - 1;
  for (const char *k = kinds; *k;) {
    size_t n = strcspn(k, ","), i = 0;
    while (i < CROWD_N_KINDS && (strlen(keys[i]) != n || strncmp(k, keys[i], n)))
      i++;
    if (i == CROWD_N_KINDS)
      return 0;
    mask |= 1u << i;
    k += n + (k[n] == ',');
  }
  return mask;
}

int load_crowd_run(const struct load_profile *p, int crowd, const char *kinds,
                   int seconds, int pid, double p99_ms, double rss_mb) {
  unsigned mask = load_crowd_kinds(kinds);
  int order[CROWD_N_KINDS], n_order = 0;
  for (int k = 0; k < CROWD_N_KINDS; k++)
    if (mask & (1u << k))
      order[n_order++] = k;
  if (!n_order) {
    fprintf(stderr, "load: --kinds is a comma list of slow, silent, "
                    "keepalive, ws, export, sql\n");
    return 2;
  }
  struct load_probe pr = {.p = p,
                          .pid = pid,
                          .http = {.fd = -1, .port = p->port},
                          .ws = {.fd = -1, .port = p->port},
                          .rng = 0x2545f4914f6cdd1dULL};
  bool reset = load_crowd_reset_hwm(pid);
  load_probe_run(&pr, seconds);
  double base_p99 = load_crowd_report("idle", &pr, pid, reset);
  uint64_t failed = pr.rest.failed + pr.wsq.failed;
  (void)base_p99;
  free(pr.rest.v);
  free(pr.wsq.v);
  pr.rest = pr.wsq = (struct load_lat){0};
  pr.retries = 0;

  struct load_crowd *cr = calloc(1, sizeof *cr);
  cr->p = p;
  cr->n = crowd;
  cr->c = calloc((size_t)crowd, sizeof *cr->c);
  for (int i = 0; i < crowd; i++) {
    cr->c[i].kind = order[i % n_order];
    cr->c[i].fd = -1;
  }
  for (uint32_t i = 0; i < LOAD_CROWD_WS_QUERIES; i++)
    load_crowd_ws_query(p, i + 1, 0, LOAD_TRACKS_PER_REQ, p->start, p->end,
                        10000, false, cr->ws_queries[i],
                        sizeof cr->ws_queries[i]);
  snprintf(cr->sql, sizeof cr->sql,
           "{\"type\":\"databaseExplorerQuery\",\"query\":\"SELECT count(*) "
           "FROM slice a, slice b, slice c\"}");
  reset = load_crowd_reset_hwm(pid);
  pthread_create(&cr->th, NULL, load_crowd_main, cr);
  sleep(2); /* every connection opened, the first ones evicted */
  load_probe_run(&pr, seconds);
  double p99 = load_crowd_report("crowd", &pr, pid, reset);
  double hwm, rss;
  load_crowd_rss(pid, &hwm, &rss);
  atomic_store(&cr->stop, true);
  pthread_join(cr->th, NULL);
  printf("crowd of %d, %d s:\n", crowd, seconds + 2);
  printf("  %-16s %9s %9s %9s %12s\n", "kind", "connects", "closed", "answers",
         "bytes read");
  for (int k = 0; k < CROWD_N_KINDS; k++)
    printf("  %-16s %9llu %9llu %9llu %12llu\n", load_crowd_names[k],
           (unsigned long long)cr->st[k].connects,
           (unsigned long long)cr->st[k].closed,
           (unsigned long long)cr->st[k].answers,
           (unsigned long long)cr->st[k].bytes);
  failed += pr.rest.failed + pr.wsq.failed;
  if (pr.first_error[0])
    fprintf(stderr, "load: first failure of the measuring client: %s\n",
            pr.first_error);
  int status = 0;
  if (failed) {
    printf("FAIL: the measuring client missed %llu answers\n",
           (unsigned long long)failed);
    status = 1;
  }
  if (p99_ms > 0 && p99 > p99_ms) {
    printf("FAIL: p99 %.1f ms over the target of %.0f ms\n", p99, p99_ms);
    status = 1;
  }
  if (rss_mb > 0 && hwm > rss_mb) {
    printf("FAIL: peak RSS %.0f MiB over the target of %.0f MiB\n", hwm,
           rss_mb);
    status = 1;
  }
  if (pr.http.fd >= 0)
    close(pr.http.fd);
  if (pr.ws.fd >= 0)
    close(pr.ws.fd);
  free(pr.http.buf);
  free(pr.ws.buf);
  free(pr.rest.v);
  free(pr.wsq.v);
  free(cr->c);
  free(cr);
  return status;
}
