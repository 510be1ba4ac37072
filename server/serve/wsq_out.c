/* wsq_out.c -- waiting answers and the memory caps over them (see
 * wsq_out.h). */
#include "wsq_out.h"
#include "log.h"
#include "query.h"
#include "util.h"
#include "wsq_msg.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* A byte count from environment variable `name`, or `dflt`. */
static size_t wsq_out_env(const char *name, size_t dflt) {
  const char *v = getenv(name);
  int64_t n;
  if (!v)
    return dflt;
  if (util_parse_i64(v, &n) < 0 || n <= 0) {
    log_warn("%s=%s is not a byte count; using %zu", name, v, dflt);
    return dflt;
  }
  return (size_t)n;
}

void wsq_mem_init(struct wsq_mem *m, size_t conn_cap, size_t total_cap) {
  m->conn_cap = wsq_out_env("NEX_WSQ_CONN_BYTES", conn_cap);
  m->total_cap = wsq_out_env("NEX_WSQ_TOTAL_BYTES", total_cap);
}

/* Asks for a trim: the peak starts over. */
static void wsq_mem_want_trim(struct wsq_mem *m) {
  m->trim = true;
  m->peak = m->total;
}

bool wsq_mem_update(struct wsq_mem *m) {
  bool full =
      m->full ? m->total > m->total_cap / 2 : m->total >= m->total_cap / 4 * 3;
  if (m->peak >= WSQ_TRIM_MIN && m->total <= m->peak / 4)
    wsq_mem_want_trim(m);
  if (full == m->full)
    return false;
  m->full = full;
  wsq_mem_want_trim(m);
  return true;
}

size_t wsq_mem_stall_at(const struct wsq_mem *m) {
  return m->full ? m->conn_cap / 32 : m->conn_cap;
}

void wsq_mem_trim(struct wsq_mem *m) {
  if (m->trim) {
    m->trim = false;
    malloc_trim(0);
  }
}

void wsq_out_open(struct wsq_mem *m, struct wsq_out *o, void *owner) {
  o->owner = owner;
  o->next = m->live;
  if (m->live)
    m->live->prev = o;
  m->live = o;
}

void wsq_out_close(struct wsq_mem *m, struct wsq_out *o) {
  while (o->head) {
    struct wsq_msg *x = o->head;
    o->head = x->next;
    wsq_msg_free(x);
  }
  m->total -= wsq_out_bytes(o);
  if (o->prev)
    o->prev->next = o->next;
  else
    m->live = o->next;
  if (o->next)
    o->next->prev = o->prev;
  *o = (struct wsq_out){0};
}

size_t wsq_out_bytes(const struct wsq_out *o) { return o->bytes + o->inflight; }

/* Counts x in (add) or out of o and the total. */
static void wsq_out_count(struct wsq_mem *m, struct wsq_out *o,
                          const struct wsq_msg *x, bool add) {
  size_t n = wsq_msg_size(x);
  if (add) {
    o->n++;
    o->bytes += n;
    m->total += n;
    if (m->total > m->peak)
      m->peak = m->total;
  } else {
    o->n--;
    o->bytes -= n;
    m->total -= n;
  }
}

/* Unlinks x, whose predecessor is prev (NULL: x is the head). */
static void wsq_out_unlink(struct wsq_mem *m, struct wsq_out *o,
                           struct wsq_msg *prev, struct wsq_msg *x) {
  if (prev)
    prev->next = x->next;
  else
    o->head = x->next;
  if (o->tail == x)
    o->tail = prev;
  wsq_out_count(m, o, x, false);
}

static void wsq_out_append(struct wsq_mem *m, struct wsq_out *o,
                           struct wsq_msg *x) {
  x->next = NULL;
  x->seq = m->seq++;
  if (o->tail)
    o->tail->next = x;
  else
    o->head = x;
  o->tail = x;
  wsq_out_count(m, o, x, true);
}

/* Whether x may be dropped: an answer of a query (coarse or final), not
 * an error or stats message of the connection's own (those are small, and
 * a connection that does not read them is not read either). */
static bool wsq_out_droppable(const struct wsq_msg *x,
                              const struct wsq_msg *keep) {
  return x != keep && (x->final || x->coarse);
}

/* The first message of o that may be dropped, or NULL; *prev is set to the
 * one before it. */
static struct wsq_msg *wsq_out_first_droppable(struct wsq_out *o,
                                               const struct wsq_msg *keep,
                                               struct wsq_msg **prev) {
  *prev = NULL;
  for (struct wsq_msg *x = o->head; x; *prev = x, x = x->next)
    if (wsq_out_droppable(x, keep))
      return x;
  return NULL;
}

/* Drops the oldest answer of o but `keep`; a dropped final answer becomes
 * a 503 "dropped" error.  Returns whether there was one. */
static bool wsq_out_drop_oldest(struct wsq_mem *m, struct wsq_out *o,
                                const struct wsq_msg *keep) {
  struct wsq_msg *prev, *x = wsq_out_first_droppable(o, keep, &prev);
  if (!x)
    return false;
  wsq_out_unlink(m, o, prev, x);
  o->overflow = true;
  m->dropped++;
  if (x->final) {
    struct query_err e;
    query_fail(&e, -ENOMEM, 503, "dropped",
               "this answer was dropped unread: the server keeps at most "
               "%zu bytes of unread answers per connection and %zu in all; "
               "read the socket, or ask again",
               m->conn_cap, m->total_cap);
    wsq_out_append(m, o, wsq_msg_error(true, x->id, &e));
  }
  wsq_msg_free(x);
  return true;
}

/* The open queue whose first droppable answer is the oldest, or NULL. */
static struct wsq_out *wsq_out_oldest(struct wsq_mem *m,
                                      const struct wsq_msg *keep) {
  struct wsq_out *best = NULL;
  uint64_t seq = UINT64_MAX;
  for (struct wsq_out *o = m->live; o; o = o->next) {
    struct wsq_msg *prev, *x = wsq_out_first_droppable(o, keep, &prev);
    if (x && x->seq < seq) {
      seq = x->seq;
      best = o;
    }
  }
  return best;
}

void wsq_out_push(struct wsq_mem *m, struct wsq_out *o, struct wsq_msg *msg) {
  struct wsq_out *v;
  wsq_out_append(m, o, msg);
  while (wsq_out_bytes(o) > m->conn_cap && wsq_out_drop_oldest(m, o, msg))
    ;
  while (m->total > m->total_cap && (v = wsq_out_oldest(m, msg)))
    wsq_out_drop_oldest(m, v, msg);
}

struct wsq_msg *wsq_out_pop(struct wsq_mem *m, struct wsq_out *o) {
  struct wsq_msg *x = o->head;
  if (x)
    wsq_out_unlink(m, o, NULL, x);
  return x;
}

size_t wsq_out_remove(struct wsq_mem *m, struct wsq_out *o, bool has_id,
                      uint32_t id, const char *group, bool coarse_only) {
  struct wsq_msg *prev = NULL, *x = o->head;
  size_t n = 0;
  while (x) {
    struct wsq_msg *next = x->next;
    bool hit = (!coarse_only || x->coarse) &&
               ((has_id && x->has_id && x->id == id) ||
                (group && x->group && strcmp(group, x->group) == 0));
    if (hit) {
      wsq_out_unlink(m, o, prev, x);
      wsq_msg_free(x);
      n++;
    } else {
      prev = x;
    }
    x = next;
  }
  return n;
}

void wsq_out_written(struct wsq_mem *m, struct wsq_out *o, size_t inflight) {
  m->total = m->total - o->inflight + inflight;
  o->inflight = inflight;
  o->overflow = false;
}
