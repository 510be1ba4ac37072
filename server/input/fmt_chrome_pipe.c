/* fmt_chrome_pipe.c -- the Chrome decoder on its own thread, its records
 * handed over in batches.  See fmt_chrome_pipe.h. */
#include "fmt_chrome_pipe.h"
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
  PIPE_BATCH = 1 << 20, /* bytes of records in a batch */
  PIPE_QUEUE = 6,       /* full batches waiting at most */
  PIPE_STRS = 5         /* strings of a record at most */
};

enum pipe_kind { PIPE_SLICE, PIPE_COUNTER, PIPE_FLOW, PIPE_META, PIPE_WARNING };

/* A record in a batch: this header, the record's struct, then what its
 * pointers point to; `size` is a multiple of the header's alignment. */
struct pipe_record {
  uint32_t kind, size;
  unsigned char body[]; /* at offset 8: aligned for any record */
};

struct pipe_warning {
  uint64_t offset;
  const char *msg;
};

struct pipe_batch {
  struct pipe_batch *next;
  size_t len, cap;
  unsigned char data[]; /* at offset 24: aligned as malloc's */
};

struct pipe {
  pthread_mutex_t mu;
  pthread_cond_t filled, emptied;
  struct pipe_batch *head, *tail; /* full batches, in order */
  size_t queued;
  struct pipe_batch *spare; /* emptied batches of PIPE_BATCH bytes */
  bool done, stop;          /* the decoding ended; the caller wants no more */
  /* the decoder thread's */
  struct pipe_batch *open;
  const char *path;
  struct fmt_chrome_cb cb;
  struct fmt_chrome_stats st;
  char *cause;
  int rc;
};

/* ------------------------------------------------------------ decoder side */

/* Queues the open batch, waiting while the queue is full. */
static void fmt_chrome_pipe_push(struct pipe *p) {
  struct pipe_batch *b = p->open;
  p->open = NULL;
  if (!b)
    return;
  pthread_mutex_lock(&p->mu);
  while (p->queued >= PIPE_QUEUE && !p->stop)
    pthread_cond_wait(&p->emptied, &p->mu);
  b->next = NULL;
  if (p->tail)
    p->tail->next = b;
  else
    p->head = b;
  p->tail = b;
  p->queued++;
  pthread_cond_signal(&p->filled);
  pthread_mutex_unlock(&p->mu);
}

/* Room for a record of `size` bytes of body in the open batch (a new
 * batch when it does not fit); returns its body. */
static void *fmt_chrome_pipe_rec(struct pipe *p, enum pipe_kind kind,
                                 size_t size) {
  size_t need = (sizeof(struct pipe_record) + size + 7) & ~(size_t)7;
  if (p->open && p->open->len + need > p->open->cap)
    fmt_chrome_pipe_push(p);
  if (!p->open) {
    pthread_mutex_lock(&p->mu);
    struct pipe_batch *b = need <= PIPE_BATCH ? p->spare : NULL;
    if (b)
      p->spare = b->next;
    pthread_mutex_unlock(&p->mu);
    if (!b) {
      size_t cap = need > PIPE_BATCH ? need : PIPE_BATCH;
      b = xmalloc(sizeof *b + cap);
      b->cap = cap;
    }
    b->len = 0;
    p->open = b;
  }
  struct pipe_record *r = (struct pipe_record *)(p->open->data + p->open->len);
  r->kind = kind;
  r->size = (uint32_t)need;
  p->open->len += need;
  return r->body;
}

/* Bytes the strings *f[0..n) take with their NULs (NULL takes none); each
 * one's in len[i]. */
static size_t fmt_chrome_pipe_strs_len(const char **const f[], int n,
                                       size_t *len) {
  size_t total = 0;
  for (int i = 0; i < n; i++)
    total += len[i] = *f[i] ? strlen(*f[i]) + 1 : 0;
  return total;
}

/* Copies the strings *f[0..n) (len[i] bytes each) to w and points each
 * *f[i] at its copy. */
static void fmt_chrome_pipe_strs_copy(char *w, const char **const f[], int n,
                                      const size_t *len) {
  for (int i = 0; i < n; i++) {
    if (!*f[i])
      continue;
    memcpy(w, *f[i], len[i]);
    *f[i] = w;
    w += len[i];
  }
}

/* What the decoder's callbacks return: 1 (stop) once the caller stopped,
 * else 0. */
static int fmt_chrome_pipe_going(struct pipe *p) {
  return __atomic_load_n(&p->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

static int fmt_chrome_pipe_slice(void *ud, const struct fmt_chrome_slice *s) {
  struct pipe *p = ud;
  struct fmt_chrome_slice c = *s;
  const char **const f[PIPE_STRS] = {&c.name, &c.cat, &c.pid, &c.tid,
                                     &c.args_json};
  size_t flows = sizeof *c.flow_ids * c.n_flow_ids, len[PIPE_STRS];
  unsigned char *w = fmt_chrome_pipe_rec(
      p, PIPE_SLICE, sizeof c + flows + fmt_chrome_pipe_strs_len(f, 5, len));
  if (flows) {
    memcpy(w + sizeof c, s->flow_ids, flows);
    c.flow_ids = (const uint64_t *)(w + sizeof c);
  }
  fmt_chrome_pipe_strs_copy((char *)w + sizeof c + flows, f, 5, len);
  memcpy(w, &c, sizeof c);
  return fmt_chrome_pipe_going(p);
}

/* Queues record c (a copy of size bytes whose string fields are
 * *f[0..n), n <= PIPE_STRS): the strings go after it, the fields point at
 * them. */
static void fmt_chrome_pipe_put(struct pipe *p, enum pipe_kind kind, void *c,
                                size_t size, const char **const f[], int n) {
  size_t len[PIPE_STRS];
  unsigned char *w =
      fmt_chrome_pipe_rec(p, kind, size + fmt_chrome_pipe_strs_len(f, n, len));
  fmt_chrome_pipe_strs_copy((char *)w + size, f, n, len);
  memcpy(w, c, size);
}

static int fmt_chrome_pipe_counter(void *ud,
                                   const struct fmt_chrome_counter *k) {
  struct fmt_chrome_counter c = *k;
  const char **const f[] = {&c.pid, &c.name, &c.series};
  fmt_chrome_pipe_put(ud, PIPE_COUNTER, &c, sizeof c, f, 3);
  return fmt_chrome_pipe_going(ud);
}

static int fmt_chrome_pipe_flow(void *ud, const struct fmt_chrome_flow *fl) {
  struct fmt_chrome_flow c = *fl;
  const char **const f[] = {&c.id, &c.pid, &c.tid};
  fmt_chrome_pipe_put(ud, PIPE_FLOW, &c, sizeof c, f, 3);
  return fmt_chrome_pipe_going(ud);
}

static int fmt_chrome_pipe_meta(void *ud, const struct fmt_chrome_meta *m) {
  struct fmt_chrome_meta c = *m;
  const char **const f[] = {&c.kind, &c.pid, &c.tid, &c.value};
  fmt_chrome_pipe_put(ud, PIPE_META, &c, sizeof c, f, 4);
  return fmt_chrome_pipe_going(ud);
}

static void fmt_chrome_pipe_warning(void *ud, uint64_t offset,
                                    const char *msg) {
  struct pipe_warning c = {offset, msg};
  const char **const f[] = {&c.msg};
  fmt_chrome_pipe_put(ud, PIPE_WARNING, &c, sizeof c, f, 1);
}

static void *fmt_chrome_pipe_thread(void *arg) {
  struct pipe *p = arg;
  p->rc = fmt_chrome_read(p->path, &p->cb, &p->st, &p->cause);
  fmt_chrome_pipe_push(p);
  pthread_mutex_lock(&p->mu);
  p->done = true;
  pthread_cond_signal(&p->filled);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ------------------------------------------------------------ caller side */

/* Makes the callbacks of batch b's records; returns the first non-zero
 * value one returned, else 0. */
static int fmt_chrome_pipe_replay(const struct fmt_chrome_cb *cb,
                                  const struct pipe_batch *b) {
  int rc = 0;
  for (size_t off = 0; off < b->len && !rc;) {
    const struct pipe_record *r = (const struct pipe_record *)(b->data + off);
    const void *body = r->body;
    off += r->size;
    switch ((enum pipe_kind)r->kind) {
    case PIPE_SLICE:
      rc = cb->slice(cb->ud, body);
      break;
    case PIPE_COUNTER:
      rc = cb->counter(cb->ud, body);
      break;
    case PIPE_FLOW:
      rc = cb->flow(cb->ud, body);
      break;
    case PIPE_META:
      rc = cb->meta(cb->ud, body);
      break;
    case PIPE_WARNING: {
      const struct pipe_warning *w = body;
      cb->warning(cb->ud, w->offset, w->msg);
      break;
    }
    }
  }
  return rc;
}

/* The next full batch, or NULL when the decoding has ended and every
 * batch was taken. */
static struct pipe_batch *fmt_chrome_pipe_take(struct pipe *p) {
  pthread_mutex_lock(&p->mu);
  while (!p->head && !p->done)
    pthread_cond_wait(&p->filled, &p->mu);
  struct pipe_batch *b = p->head;
  if (b) {
    p->head = b->next;
    if (!p->head)
      p->tail = NULL;
    p->queued--;
  }
  pthread_mutex_unlock(&p->mu);
  return b;
}

/* Gives an emptied batch back to the decoder (or frees an outsized one);
 * stop: the caller wants no more records. */
static void fmt_chrome_pipe_give_back(struct pipe *p, struct pipe_batch *b,
                                      bool stop) {
  pthread_mutex_lock(&p->mu);
  if (b->cap == PIPE_BATCH) {
    b->next = p->spare;
    p->spare = b;
    b = NULL;
  }
  if (stop)
    __atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
  pthread_cond_signal(&p->emptied);
  pthread_mutex_unlock(&p->mu);
  free(b);
}

int fmt_chrome_pipe_read(const char *path, const struct fmt_chrome_cb *cb,
                         struct fmt_chrome_stats *st, char **cause) {
  if (!cb) /* nothing to hand over */
    return fmt_chrome_read(path, cb, st, cause);
  struct pipe *p = xcalloc(1, sizeof *p);
  p->path = path;
  /* the decoder makes only the calls the caller would receive */
  p->cb = (struct fmt_chrome_cb){p,
                                 cb->slice ? fmt_chrome_pipe_slice : NULL,
                                 cb->counter ? fmt_chrome_pipe_counter : NULL,
                                 cb->flow ? fmt_chrome_pipe_flow : NULL,
                                 cb->meta ? fmt_chrome_pipe_meta : NULL,
                                 cb->warning ? fmt_chrome_pipe_warning : NULL};
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->filled, NULL);
  pthread_cond_init(&p->emptied, NULL);
  pthread_t th;
  int rc = 0;
  if (pthread_create(&th, NULL, fmt_chrome_pipe_thread, p) != 0) {
    rc = fmt_chrome_read(path, cb, st, cause);
  } else {
    struct pipe_batch *b;
    while ((b = fmt_chrome_pipe_take(p))) {
      if (!rc)
        rc = fmt_chrome_pipe_replay(cb, b);
      fmt_chrome_pipe_give_back(p, b, rc != 0);
    }
    pthread_join(th, NULL);
    if (!rc && cause) { /* else the decoder's cause is not the answer */
      *cause = p->cause;
      p->cause = NULL;
    }
    if (!rc)
      rc = p->rc;
    free(p->cause);
    if (st)
      *st = p->st;
  }
  while (p->spare) {
    struct pipe_batch *b = p->spare;
    p->spare = b->next;
    free(b);
  }
  pthread_cond_destroy(&p->filled);
  pthread_cond_destroy(&p->emptied);
  pthread_mutex_destroy(&p->mu);
  free(p);
  return rc;
}
