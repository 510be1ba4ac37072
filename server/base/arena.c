/* arena.c -- see arena.h. */
#include "arena.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct arena_chunk {
  struct arena_chunk *next;
  size_t used, cap;
  max_align_t data[];
};

void *arena_alloc(struct arena *a, size_t n) {
  n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  if (!a->head || a->head->cap - a->head->used < n) {
    size_t cap = n > (64u << 10) ? n : 64u << 10;
    struct arena_chunk *c = xmalloc(sizeof *c + cap);
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = (char *)a->head->data + a->head->used;
  a->head->used += n;
  return p;
}

char *arena_strdup(struct arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void arena_reset(struct arena *a) {
  if (!a->head)
    return;
  for (struct arena_chunk *c = a->head->next, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  a->head->next = NULL;
  a->head->used = 0;
}

void arena_free(struct arena *a) {
  arena_reset(a);
  free(a->head);
  a->head = NULL;
}
