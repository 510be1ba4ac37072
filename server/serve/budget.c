/* budget.c -- see budget.h.  A small table scanned under one mutex: it
 * holds a few hundred entries at most. */
#include "budget.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct budget_entry {
  uint64_t id; /* 0: free */
  int fd;
  enum budget_state state;
  bool loopback;
  bool served;   /* it has had a request answered */
  int64_t since; /* when it last started waiting */
};

struct budget {
  pthread_mutex_t mu;
  int max, reserve, max_ws;
  int live, ws;
  uint64_t next_id;
  struct budget_entry *e; /* max entries */
};

struct budget *budget_new(int max, int reserve, int max_ws) {
  struct budget *b = xcalloc(1, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
  b->max = max;
  b->reserve = reserve;
  b->max_ws = max_ws;
  b->e = xcalloc((size_t)max, sizeof *b->e);
  return b;
}

void budget_free(struct budget *b) {
  if (!b)
    return;
  pthread_mutex_destroy(&b->mu);
  free(b->e);
  free(b);
}

static bool budget_loopback(const struct sockaddr *sa) {
  static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) ==
           127;
  if (sa->sa_family != AF_INET6)
    return false;
  const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(a) ||
         (memcmp(a->s6_addr, v4mapped, 12) == 0 && a->s6_addr[12] == 127);
}

/* Removes entry x (under mu). */
static void budget_drop(struct budget *b, struct budget_entry *x) {
  if (x->state == BUDGET_WS)
    b->ws--;
  b->live--;
  x->id = 0;
}

/* Whether waiting entry x goes before y: one that never had a request
 * answered (silent, slow headers) before an idle keep-alive, then the one
 * that has waited longest. */
static bool budget_older(const struct budget_entry *x,
                         const struct budget_entry *y) {
  if (x->served != y->served)
    return !x->served;
  return x->since < y->since;
}

/* Evicts the first waiting connection in budget_older()'s order -- a
 * non-loopback one only, when `any` is false (under mu).  Returns false
 * if none waits. */
static bool budget_evict(struct budget *b, bool any) {
  struct budget_entry *old = NULL;
  for (int i = 0; i < b->max; i++) {
    struct budget_entry *x = &b->e[i];
    if (x->id && x->state == BUDGET_WAITING && (any || !x->loopback) &&
        (!old || budget_older(x, old)))
      old = x;
  }
  if (!old)
    return false;
  /* Its owner sees the peer gone and closes it; the entry goes now, so
   * that the slot is free at once. */
  shutdown(old->fd, SHUT_RDWR);
  budget_drop(b, old);
  return true;
}

uint64_t budget_admit(struct budget *b, int fd, const struct sockaddr *sa) {
  bool loop = budget_loopback(sa);
  struct budget_entry *slot = NULL;
  uint64_t id = 0;
  pthread_mutex_lock(&b->mu);
  for (int i = 0; i < b->max; i++) {
    struct budget_entry *x = &b->e[i];
    if (x->id && x->fd == fd) /* its socket was closed: fd is reused */
      budget_drop(b, x);
  }
  int cap = loop ? b->max : b->max - b->reserve;
  if (b->live >= cap && !budget_evict(b, loop))
    goto out;
  for (int i = 0; i < b->max && !slot; i++)
    if (!b->e[i].id)
      slot = &b->e[i];
  *slot = (struct budget_entry){.id = ++b->next_id,
                                .fd = fd,
                                .state = BUDGET_WAITING,
                                .loopback = loop,
                                .since = util_now_ns()};
  b->live++;
  id = slot->id;
out:
  pthread_mutex_unlock(&b->mu);
  return id;
}

/* The entry of id (under mu), or NULL. */
static struct budget_entry *budget_entry(struct budget *b, uint64_t id) {
  for (int i = 0; id && i < b->max; i++)
    if (b->e[i].id == id)
      return &b->e[i];
  return NULL;
}

uint64_t budget_find(struct budget *b, int fd) {
  uint64_t id = 0;
  pthread_mutex_lock(&b->mu);
  for (int i = 0; i < b->max && !id; i++)
    if (b->e[i].id && b->e[i].fd == fd)
      id = b->e[i].id;
  pthread_mutex_unlock(&b->mu);
  return id;
}

int budget_set(struct budget *b, uint64_t id, enum budget_state s) {
  int rc = 0;
  pthread_mutex_lock(&b->mu);
  struct budget_entry *x = budget_entry(b, id);
  if (x && x->state != s) {
    if (s == BUDGET_WS && b->ws >= b->max_ws) {
      rc = -EBUSY;
    } else {
      b->ws += (s == BUDGET_WS) - (x->state == BUDGET_WS);
      if (s == BUDGET_WAITING) {
        x->served |= x->state == BUDGET_BUSY;
        x->since = util_now_ns();
      }
      x->state = s;
    }
  }
  pthread_mutex_unlock(&b->mu);
  return rc;
}

bool budget_ws_full(struct budget *b) {
  pthread_mutex_lock(&b->mu);
  bool full = b->ws >= b->max_ws;
  pthread_mutex_unlock(&b->mu);
  return full;
}

void budget_leave(struct budget *b, uint64_t id) {
  pthread_mutex_lock(&b->mu);
  struct budget_entry *x = budget_entry(b, id);
  if (x)
    budget_drop(b, x);
  pthread_mutex_unlock(&b->mu);
}
