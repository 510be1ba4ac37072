/* wsq_sched.c -- the order in which the workers run the phases of the
 * WebSocket queries (see wsq_priv.h).
 *
 * Each connection has two queues: the high one holds the coarse phase of
 * progressive windows (px / WSQ_COARSE_DIV, from a coarser LOD level) and
 * the small lookups (event, device-profile), the low one final phases of
 * windows and searches.  Workers take the next high phase of the
 * connections in turn, and a low one only when no high phase waits, so
 * that every window's first picture comes before anyone's refinement and a
 * busy connection delays another by at most one phase per worker.  A
 * progressive window queues both phases at once: an idle server computes
 * them side by side.  A connection whose answers pile up unread
 * (WSQ_MAX_QUEUED) is stalled: none of its phases runs until it drains.  A
 * connection with WSQ_BEHIND bytes unread or more than WSQ_LIGHT_PHASES
 * phases queued is heavy: the phases of light connections (a page that
 * reads its answers and asks for a few windows at a time) go first, and
 * those of heavy ones take at most WSQ_WORKERS - 1 workers, so that clients
 * that never read or that ask for many windows at once cannot make a page
 * wait for the whole pool.
 */
#include "wsq_priv.h"

/* The two queues of a connection link jobs through hnext and lnext. */
static void wsq_sched_push(struct wsq_conn *c, struct wsq_job *j, bool high) {
  struct wsq_job **head = high ? &c->hi : &c->lo;
  struct wsq_job **tail = high ? &c->hi_tail : &c->lo_tail;
  c->n_queued++;
  *(high ? &j->hnext : &j->lnext) = NULL;
  if (*tail)
    *(high ? &(*tail)->hnext : &(*tail)->lnext) = j;
  else
    *head = j;
  *tail = j;
}

struct wsq_job *wsq_sched_pop(struct wsq_conn *c, bool high) {
  struct wsq_job **head = high ? &c->hi : &c->lo;
  struct wsq_job *j = *head;
  if (j && !(*head = high ? j->hnext : j->lnext))
    *(high ? &c->hi_tail : &c->lo_tail) = NULL;
  c->n_queued -= j != NULL;
  return j;
}

/* Puts c at the end of the rotation (under q->mu). */
static void wsq_sched_rot_append(struct wsq *q, struct wsq_conn *c) {
  c->rnext = NULL;
  if (q->rot_tail)
    q->rot_tail->rnext = c;
  else
    q->rot = c;
  q->rot_tail = c;
}

void wsq_sched_enqueue(struct wsq *q, struct wsq_job *j) {
  struct wsq_conn *c = j->conn;
  bool prog = j->req.progressive, high = j->req.high;
  pthread_mutex_lock(&q->mu);
  j->phases = prog ? 2 : 1;
  if (prog || high)
    wsq_sched_push(c, j, true);
  if (prog || !high)
    wsq_sched_push(c, j, false);
  q->queued += (size_t)j->phases;
  if (!c->in_rotation) {
    c->in_rotation = true;
    wsq_sched_rot_append(q, c);
  }
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static bool wsq_sched_heavy(const struct wsq_conn *c) {
  return c->behind || c->n_queued > WSQ_LIGHT_PHASES;
}

/* The next phase to run (under q->mu), or NULL: the first high phase of
 * the rotation, else its first low one (*high says which), of a light
 * connection, else of a heavy one while fewer than WSQ_WORKERS - 1 such
 * phases run (*heavy says which); its connection moves to the end of the
 * rotation, or leaves it with nothing queued. */
struct wsq_job *wsq_sched_next(struct wsq *q, bool *high, bool *heavy) {
  for (int pass = 0; pass < 4; pass++) {
    bool hv = pass >= 2, h = pass % 2 == 0;
    struct wsq_conn *prev = NULL;
    if (hv && q->running_heavy >= WSQ_WORKERS - 1)
      break;
    for (struct wsq_conn *c = q->rot; c; prev = c, c = c->rnext) {
      struct wsq_job *j =
          c->stalled || wsq_sched_heavy(c) != hv ? NULL : wsq_sched_pop(c, h);
      if (!j)
        continue;
      *high = h;
      *heavy = hv;
      if (prev) /* unlink c */
        prev->rnext = c->rnext;
      else
        q->rot = c->rnext;
      if (q->rot_tail == c)
        q->rot_tail = prev;
      if (c->hi || c->lo) /* to the end */
        wsq_sched_rot_append(q, c);
      else
        c->in_rotation = false;
      q->queued--;
      return j;
    }
  }
  return NULL;
}
