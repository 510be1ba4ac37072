/* lanes.c -- see lanes.h. */
#include "lanes.h"
#include "util.h"

#include <stdlib.h>

/* The window: items live in fixed slots; the heap orders slot numbers, so
 * sifting moves 4-byte ints, not whole items. */
struct lanes {
  struct lanes_item *slot;
  int *heap;  /* slot numbers, a min-heap by lanes_before */
  int *free;  /* unused slot numbers */
  int n, cap, nfree;
  int64_t *ends; /* per lane: end of its last slice */
  int64_t nlanes, lanes_cap;
  int64_t max_ts; /* latest start pushed */
};

struct lanes *lanes_new(int window) {
  struct lanes *l = xcalloc(1, sizeof *l);
  l->cap = window > 0 ? window : 1;
  l->slot = xcalloc((size_t)l->cap, sizeof *l->slot);
  l->heap = xcalloc((size_t)l->cap, sizeof *l->heap);
  l->free = xcalloc((size_t)l->cap, sizeof *l->free);
  for (int i = 0; i < l->cap; i++)
    l->free[i] = l->cap - 1 - i;
  l->nfree = l->cap;
  return l;
}

void lanes_item_clear(struct lanes_item *it) {
  free(it->args);
  free(it->flows);
  it->args = NULL;
  it->flows = NULL;
  it->n_flows = 0;
}

void lanes_free(struct lanes *l) {
  if (!l)
    return;
  for (int i = 0; i < l->n; i++)
    lanes_item_clear(&l->slot[l->heap[i]]);
  free(l->slot);
  free(l->heap);
  free(l->free);
  free(l->ends);
  free(l);
}

/* Heap order: earlier start first; on equal starts the longer first, so an
 * enclosing slice takes the lower lane. */
static int lanes_before(const struct lanes *l, int x, int y) {
  const struct lanes_item *a = &l->slot[l->heap[x]], *b = &l->slot[l->heap[y]];
  if (a->ts != b->ts)
    return a->ts < b->ts;
  if (a->dur != b->dur)
    return a->dur > b->dur;
  return a->id < b->id;
}

static void lanes_swap(struct lanes *l, int x, int y) {
  int t = l->heap[x];
  l->heap[x] = l->heap[y];
  l->heap[y] = t;
}

static void lanes_sift_up(struct lanes *l, int i) {
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!lanes_before(l, i, p))
      break;
    lanes_swap(l, i, p);
    i = p;
  }
}

static void lanes_sift_down(struct lanes *l, int i) {
  for (;;) {
    int a = 2 * i + 1, b = a + 1, m = i;
    if (a < l->n && lanes_before(l, a, m))
      m = a;
    if (b < l->n && lanes_before(l, b, m))
      m = b;
    if (m == i)
      return;
    lanes_swap(l, i, m);
    i = m;
  }
}

static int64_t lanes_assign(struct lanes *l, const struct lanes_item *it) {
  int64_t end = it->ts + (it->dur > 0 ? it->dur : 1);
  for (int64_t k = 0; k < l->nlanes; k++)
    if (l->ends[k] <= it->ts) {
      l->ends[k] = end;
      return k;
    }
  if (l->nlanes == l->lanes_cap) {
    l->lanes_cap = l->lanes_cap ? l->lanes_cap * 2 : 4;
    l->ends = xrealloc(l->ends, sizeof *l->ends * (size_t)l->lanes_cap);
  }
  l->ends[l->nlanes] = end;
  return l->nlanes++;
}

int lanes_pop(struct lanes *l, struct lanes_item *out, int64_t *lane) {
  if (l->n == 0)
    return 0;
  int top = l->heap[0];
  *out = l->slot[top];
  l->free[l->nfree++] = top;
  l->heap[0] = l->heap[--l->n];
  lanes_sift_down(l, 0);
  *lane = lanes_assign(l, out);
  return 1;
}

int lanes_push(struct lanes *l, struct lanes_item *in, struct lanes_item *out,
               int64_t *lane) {
  int popped = 0;
  if (l->n == l->cap)
    popped = lanes_pop(l, out, lane);
  if (l->n == 0 || in->ts > l->max_ts)
    l->max_ts = in->ts;
  int s = l->free[--l->nfree];
  l->slot[s] = *in;
  l->heap[l->n] = s;
  lanes_sift_up(l, l->n++);
  in->args = NULL;
  in->flows = NULL;
  return popped;
}

int lanes_buffered(const struct lanes *l, int64_t *min_ts, int64_t *max_ts) {
  if (l->n > 0) {
    *min_ts = l->slot[l->heap[0]].ts;
    *max_ts = l->max_ts;
  }
  return l->n;
}

int64_t lanes_count(const struct lanes *l) { return l->nlanes; }
