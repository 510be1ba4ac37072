/* load.h -- what the load client's two parts share: load.c (keep-alive
 * clients, setup, HTTP) and load_crowd.c (a crowd of hostile and heavy
 * clients while one page-like client measures its window queries).
 *
 * Ownership: a load_profile is filled by load_setup() and owned by main();
 * a load_conn owns its buffer (free it and close its fd when done); a
 * load_lat owns its array.
 */
#ifndef NEX_BENCH_LOAD_H
#define NEX_BENCH_LOAD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define LOAD_TRACKS_PER_REQ 30
#define LOAD_MAX_KEYS 4096
#define LOAD_RECV_TIMEOUT_S 30

struct load_profile {
  int port;
  int64_t start, end;
  int64_t *tracks; /* base ids of system slice tracks */
  size_t n_tracks;
  char **keys; /* event keys */
  size_t n_keys;
  char **names; /* event names */
  size_t n_names;
};

/* Latencies (ns) of one kind of request. */
struct load_lat {
  int64_t *v;
  size_t n, cap;
  uint64_t failed;
};

/* A keep-alive connection with its receive buffer. */
struct load_conn {
  int fd, port;
  char *buf;
  size_t len, cap;
};

/* CLOCK_MONOTONIC in ns. */
int64_t load_now(void);
/* The next value of the xorshift state *s. */
uint64_t load_rand(uint64_t *s);
/* Appends ns to l (exits on out of memory). */
void load_lat_add(struct load_lat *l, int64_t ns);
/* qsort comparison of int64_t. */
int load_cmp(const void *a, const void *b);
/* Quantile q of the sorted latencies of l, in ms (0 with none). */
double load_pct(const struct load_lat *l, double q);
/* A blocking TCP connection to 127.0.0.1:port, or -1 (errno set). */
int load_connect(int port);
/* Reads what c's socket has into c->buf (growing it).  Returns 0, or -1
 * when the connection broke or closed. */
int load_fill(struct load_conn *c);
/* Sends one GET on c (reconnecting if needed) and reads the whole answer.
 * Returns the status, or -1 on a connection failure (why in err).  *body
 * points into c->buf until the next call. */
int load_get(struct load_conn *c, const char *target, char **body,
             size_t *body_len, char *err, size_t errlen);
/* GET that must answer 200 with JSON; exits otherwise.  The caller owns
 * the result. */
json_t *load_json(struct load_conn *c, const char *target);
/* Base track ids first.. of p as a comma list, into out. */
void load_track_list(const struct load_profile *p, size_t first, size_t n,
                     char *out, size_t cap);
/* Waits for the server at p->port to be ready and learns its profile. */
void load_setup(struct load_profile *p);
/* Frees what load_setup() put in p. */
void load_profile_free(struct load_profile *p);

/* The crowd run (load_crowd.c): `crowd` hostile and heavy connections of
 * six kinds (or those of the comma list `kinds`: slow, silent, keepalive,
 * ws, export, sql) while a page-like client measures its window queries for
 * `seconds`, first on the idle server (the baseline), then with the crowd;
 * `pid` (0: unknown) is the server's, for its peak RSS.  Returns the exit
 * status: 0, or 1 if the measuring client missed an answer or a target
 * (p99 <= p99_ms, peak RSS <= rss_mb) was missed. */
int load_crowd_run(const struct load_profile *p, int crowd, const char *kinds,
                   int seconds, int pid, double p99_ms, double rss_mb);

#endif
