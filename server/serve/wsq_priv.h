/* wsq_priv.h -- what the parts of the WebSocket queries share: the jobs,
 * connections and workers of wsq.c, and the queues of wsq_sched.c, which
 * decide which phase a worker runs next.
 *
 * Threads: fields marked q->mu are read and written under the wsq's mutex;
 * the others belong to the service thread, or are constant.
 * Ownership: wsq.c allocates and frees all of these.
 */
#ifndef NEX_WSQ_PRIV_H
#define NEX_WSQ_PRIV_H

#include "store.h"
#include "util.h"
#include "wsq.h"
#include "wsq_msg.h"
#include "wsq_out.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Unread bytes from which a connection is behind, and the most phases a
 * light connection has queued (wsq_sched.c). */
#define WSQ_BEHIND (256u << 10)
#define WSQ_LIGHT_PHASES 8

struct wsq_job {
  struct wsq_conn *conn;         /* constant */
  struct wsq_job *hnext, *lnext; /* in its connection's queues (q->mu) */
  struct wsq_job *cnext;         /* in conn->jobs (service thread) */
  struct wsq_req req;            /* constant */
  int phases;                    /* phases not ended (q->mu) */
  atomic_bool exact;             /* the coarse answer was the final one */
  bool answered; /* service thread: its final answer was queued */
  atomic_bool cancel;
  _Atomic int64_t cancel_ns; /* when cancel was set */
};

struct wsq_conn {
  struct wsq *q;
  struct lws *wsi; /* NULL once closed */
  struct wsq_job *jobs;
  size_t n_jobs;
  struct wsq_out out; /* answers waiting */
  struct wsbin_names *names;
  struct sbuf rx;
  bool rx_skip; /* the message is too long: dropped */
  bool paused;  /* not read: too much in work or waiting */
  /* under q->mu */
  struct wsq_job *hi, *hi_tail, *lo, *lo_tail; /* queued jobs */
  struct wsq_conn *rnext; /* in q's rotation of connections with jobs */
  bool in_rotation;
  bool stalled; /* its answers wait unread: run none of its jobs */
  bool behind;  /* WSQ_BEHIND unread */
  size_t n_queued; /* phases queued */
};

struct wsq_worker {
  struct wsq *q;
  pthread_t thread;
  struct store_pool *app_pool; /* held while `own` reads its store */
  struct store_pool *own;      /* one connection */
  sqlite3 *db;
};

struct wsq {
  struct app *app;
  struct lws_context *ctx;
  pthread_mutex_t mu; /* queues, rotation, done, stop, counts */
  pthread_cond_t cv;
  struct wsq_conn *rot, *rot_tail; /* connections with queued jobs */
  size_t queued, running;
  int running_heavy; /* phases in work of heavy connections */
  struct wsq_msg *done; /* posts, newest first */
  bool stop;
  struct wsq_mem mem; /* service thread: the answers waiting */
  struct wsq_worker workers[WSQ_WORKERS];
  int n_workers;
  /* counters for the "stats" message */
  _Atomic uint64_t requests, answers, coarse, errors, cancelled, interrupted,
      skipped, discarded, superseded, frames, bytes, pauses;
  _Atomic int64_t cancel_max_ns, cancel_sum_ns, cancel_n;
};

/* Queues the phases of a new job (under no lock; takes q->mu): a
 * progressive window's coarse phase (high) and final phase (low); else
 * one phase, high for small lookups. */
void wsq_sched_enqueue(struct wsq *q, struct wsq_job *j);
/* The next phase to run (under q->mu), or NULL; *high says from which
 * queue, *heavy whether its connection was heavy (count it in
 * q->running_heavy while it runs). */
struct wsq_job *wsq_sched_next(struct wsq *q, bool *high, bool *heavy);
/* Takes the first job of c's high or low queue (under q->mu), or NULL. */
struct wsq_job *wsq_sched_pop(struct wsq_conn *c, bool high);

#endif
