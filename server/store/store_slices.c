/* store_slices.c -- see store_slices.h. */
#include "store_slices.h"
#include "store_argset.h"
#include "store_block.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Closed blocks handed to the encoder thread and not emitted yet, at most:
 * the ingest thread waits for the oldest beyond it. */
#define STORE_SLICES_INFLIGHT 32

/* One (track, lane) ever written: its open block (a slot of `open`, or
 * -1) and the last slice of its blocks closed so far. */
struct store_slices_lane {
  int64_t track, lane;
  int64_t last_ts, last_id;
  int closed; /* a block was closed: last_* are set */
  int open;   /* index in store_slices.open, -1: none */
};

/* A closed block on its way: sorted and checked by the ingest thread,
 * encoded by the encoder thread, emitted by the ingest thread in the order
 * the blocks were closed. */
struct store_slices_job {
  struct store_slices_job *next;
  int64_t track, lane;
  struct store_block b;
  unsigned char *data; /* store_block_encode()'s, once encoded */
  size_t len, at;
  bool encoded;
  /* the args sets its encoding gave ids to: set0, set0 + 1, ..., their
   * templates one after the other, each NUL-terminated */
  int64_t set0;
  struct sbuf sets;
};

struct store_slices {
  store_slices_emit_fn *emit;
  store_slices_set_fn *emit_set;
  void *ud;
  struct store_slices_lane *map; /* open addressing on (track, lane) */
  size_t cap, n;
  size_t *open;               /* map slots with an open block */
  struct store_block *blocks; /* blocks[i]: the block of open[i] */
  int n_open, cap_open;
  char *error; /* the first error not taken yet */
  /* the encoder thread (none: blocks are encoded as they are closed) */
  bool threaded, stop;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv_todo, cv_done;
  /* the jobs handed over and not emitted, in order: the encoder takes
   * them from `todo` on, the caller emits them from `head` once encoded */
  struct store_slices_job *head, *tail, *todo;
  int inflight;  /* their number */
  struct store_block_enc enc; /* the encoder's context and args sets */
};

void store_slices_error(struct store_slices *s, char **error) {
  util_error_take(&s->error, error);
}

/* Keeps args set id (template tpl, len bytes) with job ud (the sets'
 * drain). */
static void store_slices_keep_set(void *ud, int64_t id, const char *tpl,
                                  size_t len) {
  struct store_slices_job *j = ud;
  if (!j->sets.len)
    j->set0 = id;
  sbuf_add(&j->sets, tpl, len + 1);
}

/* Encodes a job's block (on the encoder thread, or on the caller's when
 * there is none: one thread uses s->enc), with the args sets it made. */
static void store_slices_encode(struct store_slices *s,
                                struct store_slices_job *j) {
  j->data = store_block_encode(&j->b, &s->enc, &j->len, &j->at);
  store_argsets_drain(s->enc.sets, store_slices_keep_set, j);
}

static void *store_slices_thread(void *arg) {
  struct store_slices *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->todo && !s->stop)
      pthread_cond_wait(&s->cv_todo, &s->mu);
    struct store_slices_job *j = s->todo;
    if (!j)
      break;
    s->todo = j->next;
    pthread_mutex_unlock(&s->mu);
    store_slices_encode(s, j);
    pthread_mutex_lock(&s->mu);
    j->encoded = true;
    pthread_cond_signal(&s->cv_done);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

struct store_slices *store_slices_new(store_slices_emit_fn *emit,
                                      store_slices_set_fn *emit_set, void *ud) {
  struct store_slices *s = xcalloc(1, sizeof *s);
  s->emit = emit;
  s->emit_set = emit_set;
  s->ud = ud;
  store_block_enc_init(&s->enc);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_todo, NULL);
  pthread_cond_init(&s->cv_done, NULL);
  s->threaded = pthread_create(&s->th, NULL, store_slices_thread, s) == 0;
  return s;
}

/* Frees a job and what it holds. */
static void store_slices_job_free(struct store_slices_job *j) {
  store_block_free(&j->b);
  sbuf_free(&j->sets);
  free(j->data);
  free(j);
}

/* Emits encoded job j, after the args sets it made, and frees it. */
static void store_slices_emit(struct store_slices *s,
                              struct store_slices_job *j) {
  const struct store_block *b = &j->b;
  int64_t id = j->set0;
  for (size_t off = 0; off < j->sets.len; id++) {
    size_t len = strlen(j->sets.s + off);
    s->emit_set(s->ud, id, j->sets.s + off, len);
    off += len + 1;
  }
  s->emit(s->ud, j->track, j->lane, b->row[0].ts, b->row[0].id, b->n, j->data,
          j->at, j->data + j->at, j->len - j->at);
  store_slices_job_free(j);
}

/* Emits the jobs encoded so far, in order; waits until at most `keep` are
 * left in flight. */
static void store_slices_reap(struct store_slices *s, int keep) {
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->inflight > keep && !s->head->encoded)
      pthread_cond_wait(&s->cv_done, &s->mu);
    struct store_slices_job *j = s->head;
    if (!j || !j->encoded)
      break;
    s->head = j->next;
    if (!s->head)
      s->tail = NULL;
    s->inflight--;
    pthread_mutex_unlock(&s->mu);
    store_slices_emit(s, j);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
}

/* Hands closed block b of (track, lane) over (taking its buffers): to the
 * encoder thread, or encoded and emitted at once without one. */
static void store_slices_send(struct store_slices *s, int64_t track,
                              int64_t lane, struct store_block *b) {
  struct store_slices_job *j = xcalloc(1, sizeof *j);
  j->track = track;
  j->lane = lane;
  j->b = *b;
  *b = (struct store_block){0};
  if (!s->threaded) {
    store_slices_encode(s, j);
    store_slices_emit(s, j);
    return;
  }
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = j;
  else
    s->head = j;
  s->tail = j;
  if (!s->todo)
    s->todo = j;
  s->inflight++;
  pthread_cond_signal(&s->cv_todo);
  pthread_mutex_unlock(&s->mu);
  store_slices_reap(s, STORE_SLICES_INFLIGHT);
}

static size_t store_slices_hash(int64_t track, int64_t lane, size_t cap) {
  int64_t k[2] = {track, lane};
  return util_hash(k, sizeof k) & (cap - 1);
}

/* Doubles the map (slots of open blocks move: open[] follows). */
static void store_slices_grow(struct store_slices *s) {
  size_t cap = s->cap ? s->cap * 2 : 1024;
  struct store_slices_lane *map = xcalloc(cap, sizeof *map);
  for (size_t i = 0; i < cap; i++)
    map[i].open = -2; /* -2: free slot */
  for (size_t i = 0; i < s->cap; i++) {
    const struct store_slices_lane *e = &s->map[i];
    if (e->open == -2)
      continue;
    size_t j = store_slices_hash(e->track, e->lane, cap);
    while (map[j].open != -2)
      j = (j + 1) & (cap - 1);
    map[j] = *e;
    if (e->open >= 0)
      s->open[e->open] = j;
  }
  free(s->map);
  s->map = map;
  s->cap = cap;
}

/* The map slot of (track, lane), made when new. */
static size_t store_slices_find(struct store_slices *s, int64_t track,
                                int64_t lane) {
  if ((s->n + 1) * 2 > s->cap)
    store_slices_grow(s);
  size_t j = store_slices_hash(track, lane, s->cap);
  for (; s->map[j].open != -2; j = (j + 1) & (s->cap - 1))
    if (s->map[j].track == track && s->map[j].lane == lane)
      return j;
  s->map[j] =
      (struct store_slices_lane){.track = track, .lane = lane, .open = -1};
  s->n++;
  return j;
}

/* Gives slot j an open block. */
static void store_slices_open(struct store_slices *s, size_t j) {
  if (s->n_open == s->cap_open) {
    s->cap_open = s->cap_open ? s->cap_open * 2 : 16;
    s->open = xrealloc(s->open, (size_t)s->cap_open * sizeof *s->open);
    s->blocks = xrealloc(s->blocks, (size_t)s->cap_open * sizeof *s->blocks);
  }
  s->open[s->n_open] = j;
  s->blocks[s->n_open] = (struct store_block){0};
  s->map[j].open = s->n_open++;
}

/* Hands open block i over to be encoded and emitted (the last one takes
 * its place); a block holding a slice twice is dropped with an error. */
static void store_slices_close(struct store_slices *s, int i) {
  struct store_slices_lane *e = &s->map[s->open[i]];
  struct store_block *b = &s->blocks[i];
  int rc = 0;
  store_block_sort(b);
  for (int k = 1; k < b->n && !rc; k++)
    if (b->row[k].ts == b->row[k - 1].ts && b->row[k].id == b->row[k - 1].id) {
      util_error_keep(&s->error,
                      xasprintf("slice (track %" PRId64 ", lane %" PRId64
                                ", ts %" PRId64 ", id %" PRId64
                                ") written twice",
                                e->track, e->lane, b->row[k].ts, b->row[k].id));
      rc = -EINVAL;
    }
  if (!rc) {
    e->last_ts = b->row[b->n - 1].ts;
    e->last_id = b->row[b->n - 1].id;
    e->closed = 1;
    store_slices_send(s, e->track, e->lane, b);
  }
  store_block_free(b);
  e->open = -1;
  if (i != --s->n_open) {
    s->open[i] = s->open[s->n_open];
    s->blocks[i] = s->blocks[s->n_open];
    s->map[s->open[i]].open = i;
  }
}

void store_slices_add(struct store_slices *s, int64_t track, int64_t lane,
                      int64_t ts, int64_t id, int64_t dur, int64_t name,
                      int64_t grp, const char *args, size_t args_len,
                      const int64_t *flows, int n_flows) {
  size_t j = store_slices_find(s, track, lane);
  struct store_slices_lane *e = &s->map[j];
  if (e->closed &&
      (ts < e->last_ts || (ts == e->last_ts && id <= e->last_id))) {
    util_error_keep(&s->error,
                    xasprintf("slice (track %" PRId64 ", lane %" PRId64
                              ", ts %" PRId64 ", id %" PRId64
                              ") comes after a later one",
                              track, lane, ts, id));
    return;
  }
  if (e->open < 0)
    store_slices_open(s, j);
  int i = s->map[j].open;
  struct store_block *b = &s->blocks[i];
  store_block_add(b, ts, id, dur, name, grp, args, args_len, flows, n_flows);
  if (b->n == STORE_BLOCK_ROWS || b->args_size >= STORE_BLOCK_ARGS_MAX)
    store_slices_close(s, i);
}

void store_slices_flush(struct store_slices *s) {
  while (s->n_open > 0)
    store_slices_close(s, s->n_open - 1);
  store_slices_reap(s, 0);
}

void store_slices_free(struct store_slices *s) {
  if (!s)
    return;
  if (s->threaded) {
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv_todo);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
  }
  for (struct store_slices_job *j = s->head, *next; j; j = next) {
    next = j->next;
    store_slices_job_free(j);
  }
  store_block_enc_free(&s->enc);
  pthread_cond_destroy(&s->cv_todo);
  pthread_cond_destroy(&s->cv_done);
  pthread_mutex_destroy(&s->mu);
  for (int i = 0; i < s->n_open; i++)
    store_block_free(&s->blocks[i]);
  free(s->blocks);
  free(s->open);
  free(s->map);
  free(s->error);
  free(s);
}
