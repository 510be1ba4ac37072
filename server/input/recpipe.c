/* recpipe.c -- a decoder's records handed to the calling thread in
 * batches.  See recpipe.h. */
#include "recpipe.h"
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
  RECPIPE_BATCH = 1 << 20, /* bytes of records in a batch */
  RECPIPE_QUEUE = 6        /* full batches waiting at most */
};

/* A record in a batch: this header, then its body; `size` is a multiple of
 * the header's alignment. */
struct recpipe_record {
  uint32_t kind, size;
  unsigned char body[]; /* at offset 8: aligned for any record */
};

struct recpipe_batch {
  struct recpipe_batch *next;
  size_t len, cap;
  unsigned char data[]; /* at offset 24: aligned as malloc's */
};

struct recpipe {
  pthread_mutex_t mu;
  pthread_cond_t filled, emptied;
  struct recpipe_batch *head, *tail; /* full batches, in order */
  size_t queued;
  struct recpipe_batch *spare; /* emptied batches of RECPIPE_BATCH bytes */
  bool done, stop; /* the decoding ended; the caller wants no more */
  /* the decoder thread's */
  struct recpipe_batch *open;
  struct recpipe_record *last; /* the record recpipe_begin made */
  recpipe_decode_fn decode;
  void *arg;
  /* without a thread: each record is replayed as soon as it is put */
  bool inline_mode;
  recpipe_replay_fn replay;
  void *ud;
  int rc; /* the first non-zero replay value */
};

/* ------------------------------------------------------------ decoder side */

/* Queues the open batch, waiting while the queue is full. */
static void recpipe_push(struct recpipe *p) {
  struct recpipe_batch *b = p->open;
  p->open = NULL;
  if (!b)
    return;
  pthread_mutex_lock(&p->mu);
  while (p->queued >= RECPIPE_QUEUE && !p->stop)
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
static void *recpipe_rec(struct recpipe *p, uint32_t kind, size_t size) {
  size_t need = (sizeof(struct recpipe_record) + size + 7) & ~(size_t)7;
  if (p->open && p->open->len + need > p->open->cap) {
    if (p->inline_mode) { /* the one batch, grown */
      free(p->open);
      p->open = NULL;
    } else {
      recpipe_push(p);
    }
  }
  if (!p->open) {
    pthread_mutex_lock(&p->mu);
    struct recpipe_batch *b = need <= RECPIPE_BATCH ? p->spare : NULL;
    if (b)
      p->spare = b->next;
    pthread_mutex_unlock(&p->mu);
    if (!b) {
      size_t cap = need > RECPIPE_BATCH ? need : RECPIPE_BATCH;
      b = xmalloc(sizeof *b + cap);
      b->cap = cap;
    }
    b->len = 0;
    p->open = b;
  }
  struct recpipe_record *r =
      (struct recpipe_record *)(p->open->data + p->open->len);
  r->kind = kind;
  r->size = (uint32_t)need;
  p->open->len += need;
  return r->body;
}

void *recpipe_begin(struct recpipe *p, uint32_t kind, size_t max) {
  unsigned char *body = recpipe_rec(p, kind, max);
  p->last = (struct recpipe_record *)(body - sizeof(struct recpipe_record));
  return body;
}

void recpipe_end(struct recpipe *p, size_t used) {
  struct recpipe_record *r = p->last;
  size_t need = (sizeof *r + used + 7) & ~(size_t)7;
  p->open->len -= r->size - need;
  r->size = (uint32_t)need;
  if (p->inline_mode) {
    if (!p->rc)
      p->rc = p->replay(p->ud, r->kind, r->body);
    p->stop = p->rc != 0;
    p->open->len = 0;
  }
}

void recpipe_cancel(struct recpipe *p) { p->open->len -= p->last->size; }

void recpipe_put(struct recpipe *p, uint32_t kind, void *c, size_t size,
                 const struct recpipe_blob *b, int nb, const char **const f[],
                 int n) {
  size_t len[RECPIPE_STRS], total = size;
  for (int i = 0; i < nb; i++)
    total += b[i].len;
  for (int i = 0; i < n; i++)
    total += len[i] = *f[i] ? strlen(*f[i]) + 1 : 0;
  unsigned char *body = recpipe_begin(p, kind, total), *w = body + size;
  for (int i = 0; i < nb; i++) {
    if (!b[i].len)
      continue;
    memcpy(w, *b[i].at, b[i].len);
    *b[i].at = w;
    w += b[i].len;
  }
  for (int i = 0; i < n; i++) {
    if (!*f[i])
      continue;
    memcpy(w, *f[i], len[i]);
    *f[i] = (const char *)w;
    w += len[i];
  }
  memcpy(body, c, size);
  recpipe_end(p, total);
}

void recpipe_put_warning(struct recpipe *p, uint32_t kind, uint64_t offset,
                         const char *msg) {
  struct recpipe_warning c = {offset, msg};
  const char **const f[] = {&c.msg};
  recpipe_put(p, kind, &c, sizeof c, NULL, 0, f, 1);
}

int recpipe_stopped(struct recpipe *p) {
  return __atomic_load_n(&p->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

static void *recpipe_thread(void *arg) {
  struct recpipe *p = arg;
  p->decode(p, p->arg);
  recpipe_push(p);
  pthread_mutex_lock(&p->mu);
  p->done = true;
  pthread_cond_signal(&p->filled);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ------------------------------------------------------------ caller side */

/* Replays batch b's records; returns the first non-zero value one
 * returned, else 0. */
static int recpipe_replay(recpipe_replay_fn replay, void *ud,
                          const struct recpipe_batch *b) {
  int rc = 0;
  for (size_t off = 0; off < b->len && !rc;) {
    const struct recpipe_record *r =
        (const struct recpipe_record *)(b->data + off);
    off += r->size;
    rc = replay(ud, r->kind, r->body);
  }
  return rc;
}

/* The next full batch, or NULL when the decoding has ended and every
 * batch was taken. */
static struct recpipe_batch *recpipe_take(struct recpipe *p) {
  pthread_mutex_lock(&p->mu);
  while (!p->head && !p->done)
    pthread_cond_wait(&p->filled, &p->mu);
  struct recpipe_batch *b = p->head;
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
static void recpipe_give_back(struct recpipe *p, struct recpipe_batch *b,
                              bool stop) {
  pthread_mutex_lock(&p->mu);
  if (b->cap == RECPIPE_BATCH) {
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

int recpipe_run(recpipe_decode_fn decode, void *arg, recpipe_replay_fn replay,
                void *ud) {
  struct recpipe *p = xcalloc(1, sizeof *p);
  p->decode = decode;
  p->arg = arg;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->filled, NULL);
  pthread_cond_init(&p->emptied, NULL);
  p->replay = replay;
  p->ud = ud;
  pthread_t th;
  int rc = 0;
  if (pthread_create(&th, NULL, recpipe_thread, p) == 0) {
    struct recpipe_batch *b;
    while ((b = recpipe_take(p))) {
      if (!rc)
        rc = recpipe_replay(replay, ud, b);
      recpipe_give_back(p, b, rc != 0);
    }
    pthread_join(th, NULL);
  } else { /* no thread: decode here, each record replayed as it comes */
    p->inline_mode = true;
    decode(p, arg);
    free(p->open);
    rc = p->rc;
  }
  while (p->spare) {
    struct recpipe_batch *b = p->spare;
    p->spare = b->next;
    free(b);
  }
  pthread_cond_destroy(&p->filled);
  pthread_cond_destroy(&p->emptied);
  pthread_mutex_destroy(&p->mu);
  free(p);
  return rc;
}

int recpipe_result(int rc, int dec_rc, char **dec_cause, char **cause) {
  if (!rc && cause) { /* else the decoder's cause is not the answer */
    *cause = *dec_cause;
    *dec_cause = NULL;
  }
  free(*dec_cause);
  *dec_cause = NULL;
  return rc ? rc : dec_rc;
}
