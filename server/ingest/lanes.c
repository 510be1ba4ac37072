/* lanes.c -- see lanes.h. */
#include "lanes.h"
#include "arena.h"
#include "log.h"
#include "spill.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A sorter's buffer handed to the pool's thread, which sorts it and writes
 * it to the spill file as the sorter's run number `run`; done, it is off
 * and bytes there, or failed: its slices are still in v (their args and
 * flows in argmem). */
struct lanes_job {
  struct lanes *l;
  struct lanes_item *v;
  struct arena argmem;
  size_t n, mem, run;
  uint64_t off, bytes;
  int failed;
  struct lanes_job *next;
};

/* The ingest thread pushes, hands buffers over and drains; the pool's
 * thread only sorts and writes the buffers handed to it (the spill file is
 * written by it alone and read by the ingest thread, runs whose job was
 * collected).  Fields after mu are shared under it. */
struct lanes_pool {
  size_t budget, mem; /* mem: bytes of the buffers of all sorters */
  struct spill *spill;
  unsigned char *wbuf; /* the pool thread's write buffer, kept */
  size_t wbuf_cap;
  struct lanes *first; /* every sorter of the pool */
  int started;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  struct lanes_job *queue, *done; /* waiting (in order), done */
  size_t inflight;                /* bytes of the jobs not collected yet */
  int stop, failed; /* failed: a write failed, nothing more is handed over */
};

/* A sorted run in the spill file: bytes of records at off. */
struct lanes_run {
  uint64_t off, bytes;
};

/* A slice in a run: this header, then args_len - 1 bytes of args (none
 * when args_len is 0: NULL args), then n_flows flow ids. */
struct lanes_rec {
  int64_t ts, dur, id, name, grp;
  uint64_t order;
  uint32_t args_len, n_flows;
};

/* A source of the merge: the sorted buffer (mem), or a run read through
 * buf[at, len); head is its next slice (a run's: its args point into buf,
 * not NUL-terminated, its flows are the unaligned bytes at flows). */
struct lanes_src {
  int mem;
  unsigned char *buf;
  size_t cap, at, len;
  uint64_t off, left; /* the run's next offset and bytes not read yet */
  struct lanes_item head;
  const unsigned char *flows;
};

struct lanes {
  struct lanes_pool *pool;
  struct lanes *prev, *next;
  size_t jobs; /* buffers handed to the pool's thread, not collected yet */
  /* the buffer: slices in push order (their args and flows in argmem),
   * mem bytes of the pool's budget */
  struct lanes_item *v;
  struct arena argmem;
  size_t n, cap, mem;
  enum lanes_order mode;
  uint64_t pushed; /* LANES_PUSH_ORDER: the order of the next push */
  int64_t pending, min_ts, max_ts;
  struct lanes_run *runs;
  size_t nruns;
  /* the drain: v sorted through idx, the sources in a heap */
  int draining;
  uint32_t *idx;
  size_t vat;
  struct lanes_src *src;
  size_t *heap, nheap, nsrc;
  /* the args and flows of the slice lanes_pop() handed back last, when it
   * came from a run */
  unsigned char *out;
  size_t out_cap;
  /* per lane: start and end of its latest slice; lanes above top are
   * free */
  int64_t *starts, *ends;
  int64_t nlanes, lanes_cap, top;
};

static void lanes_pool_wait(struct lanes_pool *p, const struct lanes *l);

struct lanes_pool *lanes_pool_new(const char *store_path, size_t budget) {
  struct lanes_pool *p = xcalloc(1, sizeof *p);
  p->budget = budget;
  p->spill = spill_new(store_path, "slices waiting for their sort");
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv_work, NULL);
  pthread_cond_init(&p->cv_done, NULL);
  return p;
}

void lanes_pool_free(struct lanes_pool *p) {
  if (!p)
    return;
  if (p->started) { /* every sorter was freed: no job is left */
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv_work);
  pthread_cond_destroy(&p->cv_done);
  spill_free(p->spill);
  free(p->wbuf);
  free(p);
}

struct lanes *lanes_new(struct lanes_pool *p, enum lanes_order order) {
  struct lanes *l = xcalloc(1, sizeof *l);
  l->pool = p;
  l->mode = order;
  l->next = p->first;
  if (p->first)
    p->first->prev = l;
  p->first = l;
  l->top = -1;
  return l;
}

/* Bytes an item's args and flows take in a buffer (with their alignment). */
static size_t lanes_item_mem(const struct lanes_item *it) {
  return (it->args ? it->args_len + 16 : 0) +
         (it->flows ? sizeof *it->flows * (size_t)it->n_flows + 8 : 0);
}

/* Forgets the buffer (its items were handed on or dropped). */
static void lanes_buffer_reset(struct lanes *l) {
  l->pool->mem -= l->mem;
  l->mem = 0;
  free(l->v);
  free(l->idx);
  arena_free(&l->argmem);
  l->v = NULL;
  l->idx = NULL;
  l->n = l->cap = l->vat = 0;
}

/* Ends a drain: frees the sources and the runs. */
static void lanes_drain_end(struct lanes *l) {
  for (size_t k = 0; k < l->nsrc; k++)
    free(l->src[k].buf); /* heads: handed on or cleared */
  free(l->src);
  free(l->heap);
  l->src = NULL;
  l->heap = NULL;
  l->nsrc = l->nheap = 0;
  free(l->runs);
  l->runs = NULL;
  l->nruns = 0;
  l->draining = 0;
}

/* Drops every slice the sorter holds (in its buffer, or at the heads of
 * a drain's sources) and ends the drain; the runs are forgotten. */
static void lanes_drop(struct lanes *l) {
  lanes_pool_wait(l->pool, l); /* failed jobs: their slices come back */
  l->nheap = 0;
  lanes_drain_end(l);
  lanes_buffer_reset(l);
  l->pending = 0;
}

void lanes_free(struct lanes *l) {
  if (!l)
    return;
  lanes_drop(l);
  if (l->prev)
    l->prev->next = l->next;
  else
    l->pool->first = l->next;
  if (l->next)
    l->next->prev = l->prev;
  free(l->starts);
  free(l->ends);
  free(l->out);
  free(l);
}

/* The order of the drain: earlier start first; on equal starts the longer
 * first (an enclosing slice before what it encloses), then push order. */
static int lanes_before(const struct lanes_item *a,
                        const struct lanes_item *b) {
  if (a->ts != b->ts)
    return a->ts < b->ts;
  if (a->dur != b->dur)
    return a->dur > b->dur;
  return a->order < b->order;
}

/* The order of v[0, n) (malloc'd, the caller frees it): a bottom-up merge
 * sort that copies the pairs of blocks already in order (a capture is a
 * few sorted runs). */
static uint32_t *lanes_sort(const struct lanes_item *v, size_t n) {
  uint32_t *a = xmalloc(sizeof *a * (n ? n : 1));
  uint32_t *t = xmalloc(sizeof *t * (n ? n : 1));
  for (size_t i = 0; i < n; i++)
    a[i] = (uint32_t)i;
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n,
             hi = lo + 2 * w < n ? lo + 2 * w : n;
      if (mid == hi || !lanes_before(&v[a[mid]], &v[a[mid - 1]])) {
        memcpy(t + lo, a + lo, sizeof *a * (hi - lo));
        continue;
      }
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        t[k++] = lanes_before(&v[a[j]], &v[a[i]]) ? a[j++] : a[i++];
      while (i < mid)
        t[k++] = a[i++];
      while (j < hi)
        t[k++] = a[j++];
    }
    uint32_t *x = a;
    a = t;
    t = x;
  }
  free(t);
  return a;
}

/* Appends n bytes to the run being written through wb (flushed to the
 * spill file when full).  Returns 0 or -1. */
struct lanes_wbuf {
  struct spill *spill;
  unsigned char *b;
  size_t len, cap;
  uint64_t off, bytes;
};

static int lanes_wbuf_flush(struct lanes_wbuf *w) {
  uint64_t off;
  if (w->len && spill_write(w->spill, w->b, w->len, &off))
    return -1;
  if (w->len && w->bytes == 0)
    w->off = off;
  w->bytes += w->len;
  w->len = 0;
  return 0;
}

static int lanes_wbuf_add(struct lanes_wbuf *w, const void *p, size_t n) {
  if (w->cap - w->len < n && lanes_wbuf_flush(w))
    return -1;
  if (w->cap < n) {
    w->cap = n;
    w->b = xrealloc(w->b, n);
  }
  memcpy(w->b + w->len, p, n);
  w->len += n;
  return 0;
}

/* Writes the job's slices sorted as a run to the spill file (pool
 * thread).  Returns 0, or -1 when they cannot be written. */
static int lanes_job_write(struct lanes_pool *p, struct lanes_job *j) {
  uint32_t *idx = lanes_sort(j->v, j->n);
  if (!p->wbuf) { /* kept, and kept grown for a slice bigger than it */
    size_t cap = p->budget / 8;
    p->wbuf_cap = cap < 256 ? 256 : cap > 1 << 20 ? 1 << 20 : cap;
    p->wbuf = xmalloc(p->wbuf_cap);
  }
  struct lanes_wbuf w = {.spill = p->spill, .b = p->wbuf, .cap = p->wbuf_cap};
  int rc = 0;
  for (size_t k = 0; k < j->n && rc == 0; k++) {
    const struct lanes_item *it = &j->v[idx[k]];
    struct lanes_rec r = {it->ts,
                          it->dur,
                          it->id,
                          it->name,
                          it->grp,
                          it->order,
                          it->args ? (uint32_t)it->args_len + 1 : 0,
                          it->flows ? (uint32_t)it->n_flows : 0};
    rc = lanes_wbuf_add(&w, &r, sizeof r);
    if (rc == 0 && it->args)
      rc = lanes_wbuf_add(&w, it->args, it->args_len);
    if (rc == 0 && it->flows)
      rc = lanes_wbuf_add(&w, it->flows, sizeof *it->flows * r.n_flows);
  }
  if (rc == 0)
    rc = lanes_wbuf_flush(&w);
  p->wbuf = w.b;
  p->wbuf_cap = w.cap;
  free(idx);
  j->off = w.off;
  j->bytes = w.bytes;
  return rc;
}

/* The pool's thread: sorts and writes the buffers handed over, in order;
 * once a write failed, the next ones are given back as they are. */
static void *lanes_pool_thread(void *arg) {
  struct lanes_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->queue && !p->stop)
      pthread_cond_wait(&p->cv_work, &p->mu);
    if (!p->queue)
      break;
    struct lanes_job *j = p->queue;
    p->queue = j->next;
    int failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    if (!failed && lanes_job_write(p, j) == 0) {
      free(j->v);
      j->v = NULL;
      arena_free(&j->argmem);
    } else {
      j->failed = 1;
    }
    pthread_mutex_lock(&p->mu);
    p->failed |= j->failed;
    j->next = p->done;
    p->done = j;
    pthread_cond_broadcast(&p->cv_done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Adds a slice to the buffer (copying its args and flows there). */
static void lanes_buffer_add(struct lanes *l, const struct lanes_item *in) {
  if (l->n == l->cap) {
    if (l->n >= UINT32_MAX)
      fatal("more than 2^32 slices of one track in memory");
    size_t cap = l->cap ? l->cap * 2 : 16;
    l->v = xrealloc(l->v, sizeof *l->v * cap);
    l->mem += sizeof *l->v * (cap - l->cap);
    l->pool->mem += sizeof *l->v * (cap - l->cap);
    l->cap = cap;
  }
  struct lanes_item *it = &l->v[l->n++];
  *it = *in;
  if (in->args)
    it->args = arena_strdup(&l->argmem, in->args, in->args_len);
  if (in->flows && in->n_flows > 0) {
    size_t fb = sizeof *in->flows * (size_t)in->n_flows;
    it->flows = memcpy(arena_alloc(&l->argmem, fb), in->flows, fb);
  } else {
    it->flows = NULL;
    it->n_flows = 0;
  }
  size_t m = lanes_item_mem(it);
  l->mem += m;
  l->pool->mem += m;
}

/* Takes in the jobs done (ingest thread, p->mu held): a written one
 * becomes its sorter's run; the slices of a failed one go back to its
 * sorter's buffer (the drain sorts them all the same: order orders equal
 * slices). */
static void lanes_pool_collect(struct lanes_pool *p) {
  while (p->done) {
    struct lanes_job *j = p->done;
    p->done = j->next;
    p->inflight -= j->mem;
    struct lanes *l = j->l;
    l->jobs--;
    if (j->failed) {
      for (size_t k = 0; k < j->n; k++)
        lanes_buffer_add(l, &j->v[k]);
      free(j->v);
      arena_free(&j->argmem);
    } else {
      l->runs[j->run] = (struct lanes_run){j->off, j->bytes};
    }
    free(j);
  }
}

/* Waits until the pool's thread is done with l's buffers (ingest thread;
 * l may be NULL: until the memory handed over is at most half of the
 * budget). */
static void lanes_pool_wait(struct lanes_pool *p, const struct lanes *l) {
  if (!p->started)
    return;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    lanes_pool_collect(p);
    if (l ? l->jobs == 0 : p->inflight <= p->budget / 2)
      break;
    pthread_cond_wait(&p->cv_done, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
}

/* Hands l's buffer to the pool's thread, to be sorted and written as
 * l's next run. */
static void lanes_hand_over(struct lanes *l) {
  struct lanes_pool *p = l->pool;
  struct lanes_job *j = xcalloc(1, sizeof *j);
  *j = (struct lanes_job){.l = l,
                          .v = l->v,
                          .argmem = l->argmem,
                          .n = l->n,
                          .mem = l->mem,
                          .run = l->nruns};
  l->argmem = (struct arena){0};
  l->runs = xrealloc(l->runs, sizeof *l->runs * (l->nruns + 1));
  l->runs[l->nruns++] = (struct lanes_run){0, 0}; /* set when collected */
  l->jobs++;
  p->mem -= l->mem;
  l->mem = 0;
  free(l->idx);
  l->v = NULL;
  l->idx = NULL;
  l->n = l->cap = 0;
  if (!p->started) {
    if (pthread_create(&p->th, NULL, lanes_pool_thread, p) != 0)
      fatal("cannot start the thread that spills slices");
    p->started = 1;
  }
  pthread_mutex_lock(&p->mu);
  p->inflight += j->mem;
  struct lanes_job **q = &p->queue;
  while (*q)
    q = &(*q)->next;
  *q = j;
  pthread_cond_signal(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
}

/* Hands the largest buffers to the pool's thread until half of the budget
 * is left, once what it has not written yet is at most half of it. */
static void lanes_pool_spill(struct lanes_pool *p) {
  while (p->mem > p->budget / 2) {
    lanes_pool_wait(p, NULL);
    pthread_mutex_lock(&p->mu);
    int failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    if (failed)
      return; /* what is left stays in memory */
    struct lanes *big = NULL;
    for (struct lanes *l = p->first; l; l = l->next)
      if (!l->draining && l->n && (!big || l->mem > big->mem))
        big = l;
    if (!big)
      return;
    lanes_hand_over(big);
  }
}

void lanes_push(struct lanes *l, struct lanes_item *in) {
  if (l->mode == LANES_PUSH_ORDER)
    in->order = l->pushed++;
  lanes_buffer_add(l, in);
  if (l->pending == 0 || in->ts < l->min_ts)
    l->min_ts = in->ts;
  if (l->pending == 0 || in->ts > l->max_ts)
    l->max_ts = in->ts;
  l->pending++;
  if (l->pool->mem > l->pool->budget)
    lanes_pool_spill(l->pool);
}

/* Makes at least n bytes of the run readable at s->buf + s->at.
 * Returns 0, or a negative errno when the spill file cannot be read. */
static int lanes_src_need(struct lanes *l, struct lanes_src *s, size_t n) {
  if (s->len - s->at >= n)
    return 0;
  if (s->len - s->at + s->left < n)
    return -EIO; /* the run is cut short */
  memmove(s->buf, s->buf + s->at, s->len - s->at);
  s->len -= s->at;
  s->at = 0;
  if (s->cap < n) {
    s->cap = n;
    s->buf = xrealloc(s->buf, s->cap);
  }
  size_t get = s->cap - s->len < s->left ? s->cap - s->len : (size_t)s->left;
  int rc = spill_read(l->pool->spill, s->buf + s->len, get, s->off);
  if (rc)
    return rc;
  s->off += get;
  s->left -= get;
  s->len += get;
  return 0;
}

/* Loads the source's next slice into its head.  Returns 1, 0 at its end,
 * or a negative errno. */
static int lanes_src_next(struct lanes *l, struct lanes_src *s) {
  if (s->mem) {
    if (l->vat == l->n)
      return 0;
    s->head = l->v[l->idx[l->vat++]];
    return 1;
  }
  if (s->at == s->len && s->left == 0)
    return 0;
  struct lanes_rec r;
  int rc = lanes_src_need(l, s, sizeof r);
  if (rc)
    return rc;
  memcpy(&r, s->buf + s->at, sizeof r);
  size_t alen = r.args_len ? r.args_len - 1 : 0;
  size_t flen = sizeof(uint64_t) * r.n_flows;
  if ((rc = lanes_src_need(l, s, sizeof r + alen + flen)))
    return rc;
  const unsigned char *p = s->buf + s->at + sizeof r;
  s->head = (struct lanes_item){.ts = r.ts,
                                .dur = r.dur,
                                .id = r.id,
                                .name = r.name,
                                .grp = r.grp,
                                .order = r.order};
  if (r.args_len) {
    s->head.args = (const char *)p;
    s->head.args_len = alen;
  }
  s->head.n_flows = (int)r.n_flows;
  s->flows = p + alen;
  s->at += sizeof r + alen + flen;
  return 1;
}

static int lanes_heap_less(const struct lanes *l, size_t x, size_t y) {
  return lanes_before(&l->src[l->heap[x]].head, &l->src[l->heap[y]].head);
}

static void lanes_heap_down(struct lanes *l, size_t k) {
  for (;;) {
    size_t m = k, a = 2 * k + 1;
    if (a < l->nheap && lanes_heap_less(l, a, m))
      m = a;
    if (a + 1 < l->nheap && lanes_heap_less(l, a + 1, m))
      m = a + 1;
    if (m == k)
      return;
    size_t x = l->heap[k];
    l->heap[k] = l->heap[m];
    l->heap[m] = x;
    k = m;
  }
}

/* Starts a drain: the buffer sorted, one source per run and one for the
 * buffer, each with its first slice, in a heap. */
static int lanes_drain_start(struct lanes *l) {
  lanes_pool_wait(l->pool, l);
  free(l->idx);
  l->idx = lanes_sort(l->v, l->n);
  l->vat = 0;
  l->draining = 1;
  l->nsrc = l->nruns + 1;
  l->src = xcalloc(l->nsrc, sizeof *l->src);
  l->heap = xmalloc(sizeof *l->heap * l->nsrc);
  size_t per = l->pool->budget / 4 / l->nsrc;
  per = per < 256 ? 256 : per > 1 << 20 ? 1 << 20 : per;
  l->src[0].mem = 1;
  for (size_t k = 0; k < l->nruns; k++) {
    struct lanes_src *s = &l->src[k + 1];
    s->off = l->runs[k].off;
    s->left = l->runs[k].bytes;
    s->cap = per;
    s->buf = xmalloc(per);
  }
  for (size_t k = 0; k < l->nsrc; k++) {
    int rc = lanes_src_next(l, &l->src[k]);
    if (rc < 0)
      return rc;
    if (rc)
      l->heap[l->nheap++] = k;
  }
  for (size_t k = l->nheap; k-- > 0;)
    lanes_heap_down(l, k);
  /* lanes above the highest one busy at the first start are free */
  l->top = l->nlanes - 1;
  return 0;
}

/* The lane of the next slice in drain order (see lanes.h). */
static int64_t lanes_assign(struct lanes *l, const struct lanes_item *it) {
  int64_t ts = it->ts, end = ts + (it->dur > 0 ? it->dur : 1);
  while (l->top >= 0 && l->ends[l->top] <= ts)
    l->top--;
  /* the parent: of the lanes' latest slices that contain this one (they
   * start at or before it), the one that started last, the deeper on a
   * tie; nested slices make that the deepest one */
  int64_t parent = -1;
  for (int64_t k = l->top; k >= 0; k--)
    if (l->ends[k] >= end && (parent < 0 || l->starts[k] > l->starts[parent]))
      parent = k;
  int64_t lane = parent + 1;
  while (lane <= l->top && l->ends[lane] > ts)
    lane++;
  if (lane == l->nlanes) {
    if (l->nlanes == l->lanes_cap) {
      l->lanes_cap = l->lanes_cap ? l->lanes_cap * 2 : 8;
      l->ends = xrealloc(l->ends, sizeof *l->ends * (size_t)l->lanes_cap);
      l->starts = xrealloc(l->starts, sizeof *l->starts * (size_t)l->lanes_cap);
    }
    l->nlanes++;
  }
  l->starts[lane] = ts;
  l->ends[lane] = end;
  if (lane > l->top)
    l->top = lane;
  return lane;
}

/* Copies the args and the flows (the unaligned bytes at flows) of it, the
 * head of a run, to l->out: it then holds them until the next pop. */
static void lanes_out(struct lanes *l, struct lanes_item *it,
                      const unsigned char *flows) {
  size_t ab = it->args ? (it->args_len + 8) & ~(size_t)7 : 0;
  size_t fb = sizeof *it->flows * (size_t)it->n_flows;
  if (l->out_cap < ab + fb) {
    l->out_cap = ab + fb;
    free(l->out);
    l->out = xmalloc(l->out_cap);
  }
  if (it->args) {
    memcpy(l->out, it->args, it->args_len);
    l->out[it->args_len] = '\0';
    it->args = (const char *)l->out;
  }
  it->flows = fb ? memcpy(l->out + ab, flows, fb) : NULL;
}

int lanes_pop(struct lanes *l, struct lanes_item *out, int64_t *lane) {
  if (!l->draining) {
    if (l->pending == 0)
      return 0;
    int rc = lanes_drain_start(l);
    if (rc < 0) {
      lanes_drop(l);
      return rc;
    }
  }
  if (l->nheap == 0) { /* every slice was handed back */
    lanes_drain_end(l);
    lanes_buffer_reset(l);
    l->pending = 0;
    return 0;
  }
  struct lanes_src *s = &l->src[l->heap[0]];
  *out = s->head;
  if (!s->mem)
    lanes_out(l, out, s->flows);
  s->head = (struct lanes_item){0};
  l->pending--;
  int rc = lanes_src_next(l, s);
  if (rc < 0) {
    lanes_drop(l);
    return rc;
  }
  if (rc == 0)
    l->heap[0] = l->heap[--l->nheap];
  lanes_heap_down(l, 0);
  *lane = lanes_assign(l, out);
  return 1;
}

int64_t lanes_pending(const struct lanes *l, int64_t *min_ts, int64_t *max_ts) {
  if (l->pending > 0) {
    *min_ts = l->min_ts;
    *max_ts = l->max_ts;
  }
  return l->pending;
}

int64_t lanes_count(const struct lanes *l) { return l->nlanes; }
