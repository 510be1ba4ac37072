/* viewport.c -- viewport benchmark of a running neuron-explorer-server.
 *
 *   bench/viewport --port P --db STORE [--tracks 50] [--px 2000]
 *                  [--windows 20] [--clients 50] [--seconds 30]
 *                  [--server-pid PID]
 *
 * Picks the --tracks system slice tracks with the most events from STORE
 * (opened read-only), then:
 *  1. zoom sweep: for every zoom level from the whole profile down to 1 us
 *     (4x steps), --windows random windows: GET /api/v1/slices with all the
 *     tracks at --px pixels over one keep-alive connection; p50/p99 latency
 *     and answer size per level;
 *  2. baselines, in-process on the same store and windows: (a) a naive
 *     query over the raw slice table (track IN (...) AND ts < end AND
 *     ts + dur > start), (b) the lane-indexed raw query without LOD; each
 *     capped at 30 s per window;
 *  3. load: --clients threads, each with its own connection, send random
 *     viewport requests for --seconds; throughput and p50/p99.
 * With --server-pid, the server's CPU time per request is shown too: a
 * figure that other load on the machine barely changes.  Prints
 * plain-text tables.  Not part of make check.
 */
#include "store_vtab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_TRACKS 200
#define BASELINE_CAP_NS (30LL * 1000000000)

static int opt_port, opt_tracks = 50, opt_px = 2000, opt_windows = 20,
                     opt_clients = 50, opt_seconds = 30, opt_pid;
static const char *opt_db;
static int64_t tracks[MAX_TRACKS];
static int n_tracks;
static int64_t prof_start, prof_end;
static char track_list[MAX_TRACKS * 24];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time (user + system) of process pid in ms, or 0 when unknown: the
 * server's cost per request, independent of other load on the machine. */
static double cpu_ms(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = pid ? fopen(path, "r") : NULL;
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the fields after the command name */
  unsigned long long ut = 0, st = 0;
  if (p)
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
           &st);
  return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static void die(const char *what) {
  fprintf(stderr, "viewport: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* ---- a minimal keep-alive HTTP/1.1 client ---- */

struct conn {
  int fd;
  char *buf;
  size_t len, cap;
};

static void conn_open(struct conn *c) {
  struct sockaddr_in sa = {0};
  int one = 1;
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)opt_port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
    die("connect");
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->len = 0;
}

static void conn_fill(struct conn *c) {
  if (c->cap - c->len < 65536) {
    c->cap = c->cap ? c->cap * 2 : 1 << 20;
    c->buf = realloc(c->buf, c->cap);
  }
  ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
  if (n <= 0)
    die("recv");
  c->len += (size_t)n;
}

/* GETs path; returns the status, *body_len gets the body size (the body
 * is read and dropped; Content-Length or chunked). */
static int conn_get(struct conn *c, const char *path, size_t *body_len) {
  char req[8192];
  int n =
      snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost:%d\r\n\r\n",
               path, opt_port);
  if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
    die("send");
  char *end;
  while (!(end = memmem(c->buf ? c->buf : "", c->len, "\r\n\r\n", 4)))
    conn_fill(c);
  size_t head = (size_t)(end - c->buf) + 4;
  int status = atoi(c->buf + 9);
  char *cl = memmem(c->buf, head, "Content-Length: ", 16);
  size_t total;
  if (cl) {
    size_t blen = strtoull(cl + 16, NULL, 10);
    while (c->len < head + blen)
      conn_fill(c);
    total = head + blen;
    *body_len = blen;
  } else { /* chunked */
    size_t off = head, blen = 0;
    for (;;) {
      char *crlf;
      while (!(crlf = memmem(c->buf + off, c->len - off, "\r\n", 2)))
        conn_fill(c);
      size_t sz = strtoull(c->buf + off, NULL, 16);
      off = (size_t)(crlf - c->buf) + 2;
      while (c->len < off + sz + 2)
        conn_fill(c);
      off += sz + 2;
      blen += sz;
      if (sz == 0)
        break;
    }
    total = off;
    *body_len = blen;
  }
  memmove(c->buf, c->buf + total, c->len - total);
  c->len -= total;
  return status;
}

/* ---- windows ---- */

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A random window of `span` ns inside the profile. */
static void pick_window(uint64_t *s, int64_t span, int64_t *start,
                        int64_t *end) {
  int64_t room = prof_end - prof_start - span;
  *start = prof_start + (room > 0 ? (int64_t)(rng(s) % (uint64_t)room) : 0);
  *end = *start + span;
}

static void slices_path(char *out, size_t n, int64_t start, int64_t end) {
  snprintf(out, n, "/api/v1/slices?tracks=%s&start=%lld&end=%lld&px=%d",
           track_list, (long long)start, (long long)end, opt_px);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int64_t pct(int64_t *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_i64);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* ---- baselines ---- */

static int progress_cap(void *ud) { return now_ns() > *(int64_t *)ud; }

/* Runs sql over the window; returns rows, or -1 when capped. */
static int64_t baseline_run(sqlite3 *db, sqlite3_stmt *st, int64_t start,
                            int64_t end, int per_lane) {
  int64_t rows = 0, deadline = now_ns() + BASELINE_CAP_NS;
  sqlite3_progress_handler(db, 10000, progress_cap, &deadline);
  for (int t = 0; t < n_tracks; t++) {
    int lanes = 1;
    if (per_lane) {
      sqlite3_stmt *q;
      sqlite3_prepare_v2(db, "SELECT lanes FROM track WHERE id=?", -1, &q,
                         NULL);
      sqlite3_bind_int64(q, 1, tracks[t]);
      if (sqlite3_step(q) == SQLITE_ROW)
        lanes = sqlite3_column_int(q, 0);
      sqlite3_finalize(q);
    }
    for (int l = 0; l < lanes; l++) {
      int rc;
      if (per_lane) {
        sqlite3_bind_int64(st, 1, tracks[t]);
        sqlite3_bind_int64(st, 2, l);
      }
      sqlite3_bind_int64(st, 3, start);
      sqlite3_bind_int64(st, 4, end);
      while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        rows++;
      sqlite3_reset(st);
      if (rc == SQLITE_INTERRUPT)
        return -1;
    }
    if (!per_lane)
      break; /* the naive query takes every track at once */
  }
  return rows;
}

/* ---- load ---- */

struct worker {
  pthread_t th;
  uint64_t seed;
  int64_t deadline;
  int64_t *lat;
  int n, cap, errors;
};

static void *worker_run(void *arg) {
  struct worker *w = arg;
  struct conn c = {0};
  char path[8192];
  conn_open(&c);
  while (now_ns() < w->deadline) {
    int zoom = (int)(rng(&w->seed) % 12);
    int64_t span = (prof_end - prof_start) >> (2 * zoom), s, e;
    if (span < 1000)
      span = 1000;
    pick_window(&w->seed, span, &s, &e);
    slices_path(path, sizeof path, s, e);
    size_t len;
    int64_t t0 = now_ns();
    int st = conn_get(&c, path, &len);
    if (st != 200)
      w->errors++;
    if (w->n == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 4096;
      w->lat = realloc(w->lat, (size_t)w->cap * sizeof *w->lat);
    }
    w->lat[w->n++] = now_ns() - t0;
  }
  close(c.fd);
  free(c.buf);
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--port"))
      opt_port = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--db"))
      opt_db = argv[i + 1];
    else if (!strcmp(argv[i], "--tracks"))
      opt_tracks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--px"))
      opt_px = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--windows"))
      opt_windows = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--clients"))
      opt_clients = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds"))
      opt_seconds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--server-pid"))
      opt_pid = atoi(argv[i + 1]);
  }
  if (!opt_port || !opt_db || opt_tracks < 1 || opt_tracks > MAX_TRACKS) {
    fprintf(stderr, "usage: viewport --port P --db STORE [--tracks N<=200] "
                    "[--px N] [--windows N] [--clients N] [--seconds N] "
                    "[--server-pid PID]\n");
    return 2;
  }
  sqlite3 *db;
  if (sqlite3_open_v2(opt_db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "viewport: %s: %s\n", opt_db, sqlite3_errmsg(db));
    return 1;
  }
  store_vtab_register(db);
  sqlite3_exec(db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
  sqlite3_stmt *st;
  int64_t events = 0, all_events = 0;
  sqlite3_prepare_v2(db,
                     "SELECT id, event_count FROM track WHERE domain = "
                     "'system' AND kind = 'slices' ORDER BY event_count "
                     "DESC LIMIT ?",
                     -1, &st, NULL);
  sqlite3_bind_int(st, 1, opt_tracks);
  size_t off = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    tracks[n_tracks++] = sqlite3_column_int64(st, 0);
    events += sqlite3_column_int64(st, 1);
    off += (size_t)snprintf(track_list + off, sizeof track_list - off, "%s%lld",
                            n_tracks > 1 ? "," : "",
                            (long long)sqlite3_column_int64(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db,
                     "SELECT min(first_ts), max(last_ts), sum(event_count) "
                     "FROM track WHERE kind = 'slices' AND domain = 'system'",
                     -1, &st, NULL);
  sqlite3_step(st);
  prof_start = sqlite3_column_int64(st, 0);
  prof_end = sqlite3_column_int64(st, 1);
  all_events = sqlite3_column_int64(st, 2);
  sqlite3_finalize(st);
  printf("store %s: %lld system events; %d tracks holding %lld events; "
         "profile %.3f s; %d px\n\n",
         opt_db, (long long)all_events, n_tracks, (long long)events,
         (double)(prof_end - prof_start) / 1e9, opt_px);

  /* 1 + 2: zoom sweep with baselines */
  sqlite3_stmt *naive, *lanes;
  sqlite3_prepare_v2(db,
                     "SELECT ts, dur, name FROM slice WHERE track IN (SELECT "
                     "value FROM json_each(?1)) AND ts < ?4 AND ts + dur > ?3",
                     -1, &naive, NULL);
  sqlite3_prepare_v2(db,
                     "SELECT ts, dur, name FROM slice WHERE track=?1 AND "
                     "lane=?2 AND ts >= coalesce((SELECT ts FROM slice WHERE "
                     "track=?1 AND lane=?2 AND ts<=?3 ORDER BY ts DESC LIMIT "
                     "1), ?3) AND ts < ?4 AND (ts >= ?3 OR ts + dur > ?3)",
                     -1, &lanes, NULL);
  char json_tracks[MAX_TRACKS * 24 + 2];
  snprintf(json_tracks, sizeof json_tracks, "[%s]", track_list);
  printf("%-12s %9s %9s %9s %9s %9s | %12s %12s | %12s %12s\n", "window",
         "p50 ms", "p99 ms", "cpu ms", "KiB p50", "KiB max", "naive ms",
         "naive rows", "lanes ms", "lanes rows");
  struct conn c = {0};
  conn_open(&c);
  char path[8192];
  int64_t *lat = calloc((size_t)opt_windows, sizeof *lat);
  int64_t *size = calloc((size_t)opt_windows, sizeof *size);
  int64_t all[4096];
  int n_all = 0;
  for (int zoom = 0;; zoom++) {
    int64_t span = (prof_end - prof_start) >> (2 * zoom);
    if (span < 1000)
      span = 1000;
    int64_t s = prof_start, e = prof_end;
    double cpu0 = cpu_ms(opt_pid);
    for (int i = 0; i < opt_windows; i++) {
      size_t len;
      pick_window(&rng_state, span, &s, &e);
      slices_path(path, sizeof path, s, e);
      int64_t t0 = now_ns();
      if (conn_get(&c, path, &len) != 200) {
        fprintf(stderr, "viewport: %s failed\n", path);
        return 1;
      }
      lat[i] = now_ns() - t0;
      size[i] = (int64_t)len;
      if (n_all < 4096)
        all[n_all++] = lat[i];
    }
    double cpu = (cpu_ms(opt_pid) - cpu0) / opt_windows;
    int64_t smax = 0;
    for (int i = 0; i < opt_windows; i++)
      smax = size[i] > smax ? size[i] : smax;
    /* baselines on the last window of this level (one window each: the
     * whole-profile ones read every event) */
    int64_t t0 = now_ns();
    sqlite3_bind_text(naive, 1, json_tracks, -1, SQLITE_STATIC);
    int64_t nrows = baseline_run(db, naive, s, e, 0);
    int64_t tn = now_ns() - t0;
    t0 = now_ns();
    int64_t lrows = baseline_run(db, lanes, s, e, 1);
    int64_t tl = now_ns() - t0;
    char label[32], nb[32], lb[32];
    if (span >= 1000000000)
      snprintf(label, sizeof label, "%.3f s", span / 1e9);
    else if (span >= 1000000)
      snprintf(label, sizeof label, "%.3f ms", span / 1e6);
    else
      snprintf(label, sizeof label, "%.3f us", span / 1e3);
    snprintf(nb, sizeof nb, nrows < 0 ? ">30000" : "%.2f", tn / 1e6);
    snprintf(lb, sizeof lb, lrows < 0 ? ">30000" : "%.2f", tl / 1e6);
    printf("%-12s %9.2f %9.2f %9.2f %9.1f %9.1f | %12s %12lld | %12s %12lld\n",
           label, pct(lat, opt_windows, 0.5) / 1e6,
           pct(lat, opt_windows, 0.99) / 1e6, cpu,
           pct(size, opt_windows, 0.5) / 1024.0, smax / 1024.0, nb,
           (long long)nrows, lb, (long long)lrows);
    fflush(stdout);
    if (span <= 1000)
      break;
  }
  printf("all zoom levels: %d requests, p50 %.2f ms, p99 %.2f ms\n\n", n_all,
         pct(all, n_all, 0.5) / 1e6, pct(all, n_all, 0.99) / 1e6);
  close(c.fd);
  free(c.buf);
  sqlite3_finalize(naive);
  sqlite3_finalize(lanes);
  sqlite3_close(db);

  /* 3: concurrent clients */
  struct worker *w = calloc((size_t)opt_clients, sizeof *w);
  int64_t deadline = now_ns() + (int64_t)opt_seconds * 1000000000;
  for (int i = 0; i < opt_clients; i++) {
    w[i].seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
    w[i].deadline = deadline;
    pthread_create(&w[i].th, NULL, worker_run, &w[i]);
  }
  double cpu0 = cpu_ms(opt_pid);
  int total = 0, errors = 0;
  for (int i = 0; i < opt_clients; i++) {
    pthread_join(w[i].th, NULL);
    total += w[i].n;
    errors += w[i].errors;
  }
  int64_t *l = malloc((size_t)(total ? total : 1) * sizeof *l);
  int k = 0;
  for (int i = 0; i < opt_clients; i++) {
    memcpy(l + k, w[i].lat, (size_t)w[i].n * sizeof *l);
    k += w[i].n;
    free(w[i].lat);
  }
  printf("%d clients for %d s: %d requests (%.1f/s), %d errors, "
         "p50 %.2f ms, p99 %.2f ms, server cpu %.2f ms/request\n",
         opt_clients, opt_seconds, total, (double)total / opt_seconds, errors,
         total ? pct(l, total, 0.5) / 1e6 : 0.0,
         total ? pct(l, total, 0.99) / 1e6 : 0.0,
         total ? (cpu_ms(opt_pid) - cpu0) / total : 0.0);
  free(l);
  free(w);
  free(lat);
  free(size);
  return 0;
}
