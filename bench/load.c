/* load.c -- a load client for a running neuron-explorer-server.
 *
 *   load [--port 3001] [--clients 100] [--seconds 60] [--no-hostile]
 *        [--seed N]
 *
 * Learns the profile from the server (/profile, /tracks, a few zoomed-in
 * /slices answers for event keys and names), then runs --clients keep-alive
 * connections, each sending requests back to back for --seconds:
 * 60% /api/v1/slices (30 tracks, a window at a random zoom level from the
 * whole profile down to 4^-10 of it, 512..3840 px, mostly the viewer's
 * 1024 px tiles), 20% /api/v1/search
 * (an event name's substring, pages 1..3, half of them in a window), 20%
 * /api/v1/events/{key} (keys taken from the slices answers).  Meanwhile,
 * unless --no-hostile, two hostile clients stay connected: one that
 * connects and sends nothing (reconnecting whenever the server drops it),
 * one that sends request headers forever, one byte per 100 ms.
 *
 * Prints, per endpoint, requests, requests/s, p50/p90/p99/max latency and
 * failed requests (anything but a complete 200 answer), then what the
 * hostile clients saw.  Exit status 1 if any request failed.
 *
 *   load --crowd N [--kinds slow,silent,keepalive,ws,export,sql]
 *        [--port 3001] [--seconds 60] [--pid PID]
 *        [--p99-target MS] [--rss-target MIB]
 *
 * instead measures the page's window queries with N hostile and heavy
 * clients connected (load_crowd.c), after the same measure on the idle
 * server; exit status 1 if an answer was missed or a given target was.
 *
 * Ownership: everything is owned by main(); each client thread owns its
 * connection and latency arrays until joined.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

enum { LOAD_SLICES, LOAD_SEARCH, LOAD_EVENTS, LOAD_N_KINDS };
static const char *const load_kind_names[] = {"slices", "search",
                                              "events/{key}"};

struct load_client {
  pthread_t th;
  const struct load_profile *p;
  uint64_t rng;
  int64_t stop_at;
  struct load_lat lat[LOAD_N_KINDS];
  char first_error[256];
};

struct load_hostile {
  pthread_t th;
  int port;
  bool slow; /* sends a header byte every 100 ms; else sends nothing */
  atomic_bool stop;
  uint64_t connects, bytes;
  int64_t longest_ns; /* longest time a connection stayed open */
};

int64_t load_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

uint64_t load_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

void load_lat_add(struct load_lat *l, int64_t ns) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4096;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    if (!l->v) {
      perror("load");
      exit(2);
    }
  }
  l->v[l->n++] = ns;
}

/* ---------------------------------------------------------------- HTTP */

int load_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  struct timeval tv = {LOAD_RECV_TIMEOUT_S, 0};
  int one = 1;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}


int load_fill(struct load_conn *c) {
  if (c->cap - c->len < 65536) {
    c->cap = c->cap ? c->cap * 2 : 1 << 20;
    c->buf = realloc(c->buf, c->cap);
    if (!c->buf) {
      perror("load");
      exit(2);
    }
  }
  ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
  if (n <= 0)
    return -1;
  c->len += (size_t)n;
  return 0;
}

/* Sends one GET on c (reconnecting if needed) and reads the whole answer.
 * Returns the status, or -1 on a connection failure (why in err).  *body
 * points into c->buf until the next call. */
int load_get(struct load_conn *c, const char *target, char **body,
                    size_t *body_len, char *err, size_t errlen) {
  char req[8192];
  int n =
      snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost:%d\r\n\r\n",
               target, c->port);
  if (n < 0 || (size_t)n >= sizeof req) {
    snprintf(err, errlen, "request too long");
    return -1;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c->fd < 0 && (c->fd = load_connect(c->port)) < 0) {
      snprintf(err, errlen, "connect: %s", strerror(errno));
      return -1;
    }
    if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) == n)
      break;
    close(c->fd); /* the server closed an idle keep-alive: retry once */
    c->fd = -1;
    if (attempt) {
      snprintf(err, errlen, "send: %s", strerror(errno));
      return -1;
    }
  }
  c->len = 0;
  char *end = NULL;
  while (!(end = memmem(c->buf ? c->buf : "", c->len, "\r\n\r\n", 4)))
    if (load_fill(c) < 0)
      goto broken;
  size_t head = (size_t)(end - c->buf) + 4;
  int status = 0;
  if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1)
    goto broken;
  /* headers: Content-Length, chunked, Connection: close */
  long long clen = -1;
  bool chunked = false, close_after = false;
  for (char *l = strstr(c->buf, "\r\n"); l && l < end;
       l = strstr(l + 2, "\r\n")) {
    if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
      clen = atoll(l + 17);
    else if (strncasecmp(l + 2, "Transfer-Encoding: chunked", 26) == 0)
      chunked = true;
    else if (strncasecmp(l + 2, "Connection: close", 17) == 0)
      close_after = true;
  }
  if (chunked) {
    size_t pos = head, out = head; /* de-chunk in place */
    for (;;) {
      char *eol;
      while (!(eol = memmem(c->buf + pos, c->len - pos, "\r\n", 2)))
        if (load_fill(c) < 0)
          goto broken;
      size_t size = strtoull(c->buf + pos, NULL, 16);
      pos = (size_t)(eol - c->buf) + 2;
      while (c->len < pos + size + 2)
        if (load_fill(c) < 0)
          goto broken;
      memmove(c->buf + out, c->buf + pos, size);
      out += size;
      pos += size + 2;
      if (size == 0)
        break;
    }
    *body_len = out - head;
  } else if (clen >= 0) {
    while (c->len < head + (size_t)clen)
      if (load_fill(c) < 0)
        goto broken;
    *body_len = (size_t)clen;
  } else {
    while (load_fill(c) == 0)
      ;
    *body_len = c->len - head;
    close_after = true;
  }
  *body = c->buf + head;
  if (close_after) {
    close(c->fd);
    c->fd = -1;
  }
  return status;
broken:
  snprintf(err, errlen, "connection broken after %zu bytes: %s", c->len,
           errno ? strerror(errno) : "closed");
  close(c->fd);
  c->fd = -1;
  return -1;
}

/* GET that must answer 200 with JSON (setup only). */
json_t *load_json(struct load_conn *c, const char *target) {
  char *body, err[160];
  size_t len;
  int st = load_get(c, target, &body, &len, err, sizeof err);
  json_error_t je;
  json_t *j = st == 200 ? json_loadb(body, len, 0, &je) : NULL;
  if (!j) {
    fprintf(stderr, "load: GET %s: %s\n", target,
            st < 0      ? err
            : st == 200 ? je.text
                        : "not 200");
    exit(2);
  }
  return j;
}

/* ---------------------------------------------------------------- setup */

static char *load_strdup(const char *s) {
  char *d = strdup(s);
  if (!d) {
    perror("load");
    exit(2);
  }
  return d;
}

static void load_push(char ***v, size_t *n, const char *s) {
  *v = realloc(*v, (*n + 1) * sizeof **v);
  if (!*v) {
    perror("load");
    exit(2);
  }
  (*v)[(*n)++] = load_strdup(s);
}

/* Base track ids of a window of tracks as a comma list, into out. */
void load_track_list(const struct load_profile *p, size_t first,
                            size_t n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && first + i < p->n_tracks; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? "," : "",
                            (long long)p->tracks[first + i]);
}

/* Keys and names from zoomed-in slices answers (raw events: count 1). */
static void load_learn_keys(struct load_profile *p, struct load_conn *c) {
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  int64_t span = p->end - p->start;
  for (int round = 0; round < 64 && p->n_keys < LOAD_MAX_KEYS; round++) {
    char tracks[LOAD_TRACKS_PER_REQ * 24], target[8192];
    size_t first = load_rand(&rng) % p->n_tracks;
    load_track_list(p, first, LOAD_TRACKS_PER_REQ, tracks, sizeof tracks);
    int64_t w = span / 4096 > 1000 ? span / 4096 : 1000;
    int64_t s = p->start + (int64_t)(load_rand(&rng) % (uint64_t)span);
    snprintf(target, sizeof target,
             "/api/v1/slices?tracks=%s&start=%lld&end=%lld&px=2000", tracks,
             (long long)s, (long long)(s + w));
    json_t *j = load_json(c, target);
    int64_t base =
        strtoll(json_string_value(json_object_get(j, "base")), NULL, 10);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(j, "names"), k, v) {
      if (p->n_names < 512)
        load_push(&p->names, &p->n_names, json_string_value(v));
    }
    size_t i, li, x;
    json_t *t, *l;
    json_array_foreach(json_object_get(j, "tracks"), i, t) {
      const char *track = json_string_value(json_object_get(t, "track"));
      json_array_foreach(json_object_get(t, "lanes"), li, l) {
        json_t *ts = json_object_get(l, "ts"),
               *cnt = json_object_get(l, "count");
        json_int_t lane = json_integer_value(json_object_get(l, "lane"));
        for (x = 0; x < json_array_size(ts) && p->n_keys < LOAD_MAX_KEYS; x++) {
          if (json_integer_value(json_array_get(cnt, x)) != 1)
            continue;
          char key[96];
          snprintf(
              key, sizeof key, "%s:%lld:%lld", track, (long long)lane,
              (long long)(base + json_integer_value(json_array_get(ts, x))));
          load_push(&p->keys, &p->n_keys, key);
        }
      }
    }
    json_decref(j);
  }
}

void load_setup(struct load_profile *p) {
  struct load_conn c = {.fd = -1, .port = p->port};
  for (int i = 0;; i++) {
    json_t *h = load_json(&c, "/api/v1/health");
    bool ready =
        strcmp(json_string_value(json_object_get(h, "state")), "ready") == 0;
    json_decref(h);
    if (ready)
      break;
    if (i == 6000) {
      fprintf(stderr, "load: the server is not ready after 10 minutes\n");
      exit(2);
    }
    usleep(100000);
  }
  json_t *pr = load_json(&c, "/api/v1/profile");
  p->start = strtoll(json_string_value(json_object_get(pr, "start")), NULL, 10);
  p->end = strtoll(json_string_value(json_object_get(pr, "end")), NULL, 10) + 1;
  json_decref(pr);
  json_t *tr = load_json(&c, "/api/v1/tracks?grouping=default");
  size_t i, bi;
  json_t *t, *b;
  json_array_foreach(json_object_get(tr, "tracks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "kind")), "slices") != 0)
      continue;
    json_array_foreach(json_object_get(t, "base"), bi, b) {
      p->tracks = realloc(p->tracks, (p->n_tracks + 1) * sizeof *p->tracks);
      p->tracks[p->n_tracks++] =
          strtoll(json_string_value(json_object_get(b, "id")), NULL, 10);
    }
  }
  json_decref(tr);
  if (!p->n_tracks) {
    fprintf(stderr, "load: the profile has no slice tracks\n");
    exit(2);
  }
  load_learn_keys(p, &c);
  if (!p->n_keys || !p->n_names) {
    fprintf(stderr, "load: no event keys found in the slices answers\n");
    exit(2);
  }
  close(c.fd);
  free(c.buf);
}

void load_profile_free(struct load_profile *p) {
  for (size_t i = 0; i < p->n_keys; i++)
    free(p->keys[i]);
  for (size_t i = 0; i < p->n_names; i++)
    free(p->names[i]);
  free(p->keys);
  free(p->names);
  free(p->tracks);
}

/* ---------------------------------------------------------------- clients */

/* A URL-safe substring (3..8 bytes) of a random event name, into out. */
static void load_search_text(const struct load_profile *p, uint64_t *rng,
                             char *out, size_t cap) {
  const char *name = p->names[load_rand(rng) % p->n_names];
  size_t n = 0, len = strlen(name);
  size_t from = len > 3 ? load_rand(rng) % (len - 3) : 0;
  size_t want = 3 + load_rand(rng) % 6;
  for (size_t i = from; i < len && n < want && n + 4 < cap; i++) {
    unsigned char ch = (unsigned char)name[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
        (ch >= '0' && ch <= '9') || ch == '_')
      out[n++] = (char)ch;
  }
  if (!n)
    out[n++] = 'n';
  out[n] = '\0';
}

static void *load_client_run(void *arg) {
  struct load_client *cl = arg;
  const struct load_profile *p = cl->p;
  struct load_conn c = {.fd = -1, .port = p->port};
  int64_t span = p->end - p->start;
  while (load_now() < cl->stop_at) {
    char target[8192], tracks[LOAD_TRACKS_PER_REQ * 24], text[16], err[160];
    unsigned dice = (unsigned)(load_rand(&cl->rng) % 10);
    int kind = dice < 6 ? LOAD_SLICES : dice < 8 ? LOAD_SEARCH : LOAD_EVENTS;
    int64_t w = span >> (2 * (load_rand(&cl->rng) % 11));
    if (w < 1000)
      w = 1000;
    int64_t s =
        p->start +
        (w < span ? (int64_t)(load_rand(&cl->rng) % (uint64_t)(span - w)) : 0);
    if (kind == LOAD_SLICES) {
      /* the viewer asks for 1024 px tiles; whole views are wider */
      static const int pxs[] = {1024, 1024, 512, 1920, 3840};
      load_track_list(p, load_rand(&cl->rng) % p->n_tracks, LOAD_TRACKS_PER_REQ,
                      tracks, sizeof tracks);
      snprintf(target, sizeof target,
               "/api/v1/slices?tracks=%s&start=%lld&end=%lld&px=%d", tracks,
               (long long)s, (long long)(s + w), pxs[load_rand(&cl->rng) % 5]);
    } else if (kind == LOAD_SEARCH) {
      load_search_text(p, &cl->rng, text, sizeof text);
      int page = 1 + (int)(load_rand(&cl->rng) % 3);
      if (load_rand(&cl->rng) % 2)
        snprintf(target, sizeof target,
                 "/api/v1/search?q=%s&page=%d&per_page=50&start=%lld&end=%lld",
                 text, page, (long long)s, (long long)(s + w));
      else
        snprintf(target, sizeof target,
                 "/api/v1/search?q=%s&page=%d&per_page=50", text, page);
    } else {
      snprintf(target, sizeof target, "/api/v1/events/%s",
               p->keys[load_rand(&cl->rng) % p->n_keys]);
    }
    char *body;
    size_t len;
    int64_t t0 = load_now();
    int st = load_get(&c, target, &body, &len, err, sizeof err);
    int64_t t1 = load_now();
    if (st == 200 && len > 0) {
      load_lat_add(&cl->lat[kind], t1 - t0);
    } else {
      cl->lat[kind].failed++;
      if (!cl->first_error[0])
        snprintf(cl->first_error, sizeof cl->first_error, "%.80s: %s", target,
                 st < 0 ? err : "status not 200");
    }
  }
  if (c.fd >= 0)
    close(c.fd);
  free(c.buf);
  return NULL;
}

/* ---------------------------------------------------------------- hostile */

static void *load_hostile_run(void *arg) {
  struct load_hostile *h = arg;
  static const char slow[] =
      "GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n"
      "X-Slow: ";
  while (!atomic_load(&h->stop)) {
    int fd = load_connect(h->port);
    if (fd < 0) {
      usleep(100000);
      continue;
    }
    h->connects++;
    int64_t t0 = load_now();
    size_t i = 0;
    struct timeval tv = {0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (!atomic_load(&h->stop)) {
      char b;
      if (h->slow) {
        /* the request line, then one endless header */
        char ch = i < sizeof slow - 1 ? slow[i] : 'x';
        if (send(fd, &ch, 1, MSG_NOSIGNAL) != 1)
          break;
        h->bytes++;
        i++;
      }
      ssize_t n = recv(fd, &b, 1, 0); /* waits 100 ms */
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        break; /* dropped by the server */
    }
    int64_t held = load_now() - t0;
    if (held > h->longest_ns)
      h->longest_ns = held;
    close(fd);
  }
  return NULL;
}

/* ---------------------------------------------------------------- report */

int load_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

double load_pct(const struct load_lat *l, double q) {
  if (!l->n)
    return 0;
  size_t i = (size_t)(q * (double)(l->n - 1) + 0.5);
  return (double)l->v[i] / 1e6;
}

static void load_report_row(const char *name, struct load_lat *l, double secs) {
  qsort(l->v, l->n, sizeof *l->v, load_cmp);
  printf("%-14s %9zu %9.0f %8.2f %8.2f %8.2f %9.2f %7llu\n", name, l->n,
         (double)l->n / secs, load_pct(l, 0.5), load_pct(l, 0.9),
         load_pct(l, 0.99), load_pct(l, 1.0), (unsigned long long)l->failed);
}

static void load_usage(FILE *f) {
  fputs("usage: load [--port 3001] [--clients 100] [--seconds 60] "
        "[--no-hostile] [--seed N]\n"
        "       load --crowd N [--kinds slow,silent,keepalive,ws,export,sql]\n"
        "            [--port 3001] [--seconds 60] [--pid PID]\n"
        "            [--p99-target MS] [--rss-target MIB]\n",
        f);
}

int main(int argc, char **argv) {
  static const struct option longs[] = {
      {"port", required_argument, NULL, 'p'},
      {"clients", required_argument, NULL, 'c'},
      {"seconds", required_argument, NULL, 's'},
      {"no-hostile", no_argument, NULL, 'n'},
      {"seed", required_argument, NULL, 'r'},
      {"crowd", required_argument, NULL, 'C'},
      {"kinds", required_argument, NULL, 'K'},
      {"pid", required_argument, NULL, 'P'},
      {"p99-target", required_argument, NULL, 'T'},
      {"rss-target", required_argument, NULL, 'R'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct load_profile p = {.port = 3001};
  int clients = 100, seconds = 60, hostile = 1, crowd = 0, pid = 0, opt;
  double p99_target = 0, rss_target = 0;
  const char *kinds = NULL;
  uint64_t seed = 1;
  while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (opt) {
    case 'p':
      p.port = atoi(optarg);
      break;
    case 'c':
      clients = atoi(optarg);
      break;
    case 's':
      seconds = atoi(optarg);
      break;
    case 'n':
      hostile = 0;
      break;
    case 'r':
      seed = strtoull(optarg, NULL, 10);
      break;
    case 'C':
      crowd = atoi(optarg);
      break;
    case 'K':
      kinds = optarg;
      break;
    case 'P':
      pid = atoi(optarg);
      break;
    case 'T':
      p99_target = atof(optarg);
      break;
    case 'R':
      rss_target = atof(optarg);
      break;
    case 'h':
      load_usage(stdout);
      return 0;
    default:
      load_usage(stderr);
      return 2;
    }
  }
  if (clients < 1 || seconds < 1 || crowd < 0 || p.port < 1 ||
      p.port > 65535) {
    load_usage(stderr);
    return 2;
  }
  load_setup(&p);
  printf("profile: %zu slice tracks, %.3f s, %zu event keys, %zu names\n",
         p.n_tracks, (double)(p.end - p.start) / 1e9, p.n_keys, p.n_names);
  if (crowd) {
    int rc = load_crowd_run(&p, crowd, kinds, seconds, pid, p99_target,
                            rss_target);
    load_profile_free(&p);
    return rc;
  }

  struct load_hostile hs[2] = {{.port = p.port, .slow = false},
                               {.port = p.port, .slow = true}};
  if (hostile) {
    for (int i = 0; i < 2; i++)
      pthread_create(&hs[i].th, NULL, load_hostile_run, &hs[i]);
    usleep(300000); /* both connected before the load starts */
  }
  struct load_client *cl = calloc((size_t)clients, sizeof *cl);
  int64_t t0 = load_now(), stop_at = t0 + (int64_t)seconds * 1000000000LL;
  for (int i = 0; i < clients; i++) {
    cl[i].p = &p;
    cl[i].rng =
        (seed * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)(i + 1) * 2654435761u;
    cl[i].stop_at = stop_at;
    if (pthread_create(&cl[i].th, NULL, load_client_run, &cl[i]) != 0) {
      perror("load: pthread_create");
      return 2;
    }
  }
  struct load_lat all[LOAD_N_KINDS] = {0}, total = {0};
  for (int i = 0; i < clients; i++) {
    pthread_join(cl[i].th, NULL);
    for (int k = 0; k < LOAD_N_KINDS; k++) {
      for (size_t x = 0; x < cl[i].lat[k].n; x++) {
        load_lat_add(&all[k], cl[i].lat[k].v[x]);
        load_lat_add(&total, cl[i].lat[k].v[x]);
      }
      all[k].failed += cl[i].lat[k].failed;
      total.failed += cl[i].lat[k].failed;
      free(cl[i].lat[k].v);
    }
    if (cl[i].first_error[0])
      fprintf(stderr, "client %d: first failure: %s\n", i, cl[i].first_error);
  }
  double secs = (double)(load_now() - t0) / 1e9;
  if (hostile) {
    for (int i = 0; i < 2; i++) {
      atomic_store(&hs[i].stop, true);
      pthread_join(hs[i].th, NULL);
    }
  }
  printf("%d keep-alive clients, %.1f s%s\n", clients, secs,
         hostile ? ", with a silent and a slow-header client connected" : "");
  printf("%-14s %9s %9s %8s %8s %8s %9s %7s\n", "endpoint", "requests", "req/s",
         "p50 ms", "p90 ms", "p99 ms", "max ms", "failed");
  for (int k = 0; k < LOAD_N_KINDS; k++)
    load_report_row(load_kind_names[k], &all[k], secs);
  load_report_row("all", &total, secs);
  if (hostile) {
    printf("silent client: %llu connections, longest %.1f s (the server "
           "drops a silent connection after 10 s)\n",
           (unsigned long long)hs[0].connects, (double)hs[0].longest_ns / 1e9);
    printf("slow-header client: %llu connections, %llu header bytes sent, "
           "longest connection %.1f s\n",
           (unsigned long long)hs[1].connects, (unsigned long long)hs[1].bytes,
           (double)hs[1].longest_ns / 1e9);
  }
  for (int k = 0; k < LOAD_N_KINDS; k++)
    free(all[k].v);
  free(total.v);
  free(cl);
  load_profile_free(&p);
  return total.failed ? 1 : 0;
}
