/* store_intern.c -- see store_intern.h. */
#include "store_intern.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define STORE_INTERN_MIN 1024

/* Doubles t's slots (at least STORE_INTERN_MIN). */
static void store_intern_grow(struct store_intern *t) {
  size_t cap = t->cap ? t->cap * 2 : STORE_INTERN_MIN;
  char **keys = xcalloc(cap, sizeof *keys);
  int64_t *ids = xcalloc(cap, sizeof *ids);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->keys[i])
      continue;
    size_t j = util_hash(t->keys[i], strlen(t->keys[i])) & (cap - 1);
    while (keys[j])
      j = (j + 1) & (cap - 1);
    keys[j] = t->keys[i];
    ids[j] = t->ids[i];
  }
  free(t->keys);
  free(t->ids);
  t->keys = keys;
  t->ids = ids;
  t->cap = cap;
}

/* The slot of the len bytes of s: the one holding them, or the free slot
 * they would take (t has slots). */
static size_t store_intern_slot(const struct store_intern *t, const char *s,
                                size_t len) {
  size_t j = util_hash(s, len) & (t->cap - 1);
  while (t->keys[j] && strcmp(t->keys[j], s) != 0)
    j = (j + 1) & (t->cap - 1);
  return j;
}

int64_t store_intern_find(const struct store_intern *t, const char *s,
                          size_t len) {
  if (!t->cap)
    return 0;
  size_t j = store_intern_slot(t, s, len);
  return t->keys[j] ? t->ids[j] : 0;
}

int64_t store_intern_get(struct store_intern *t, const char *s, size_t len,
                         int *added) {
  if (t->n * 2 >= t->cap)
    store_intern_grow(t);
  size_t j = store_intern_slot(t, s, len);
  *added = !t->keys[j];
  if (*added) {
    t->keys[j] = xstrdup(s);
    t->ids[j] = (int64_t)++t->n;
  }
  return t->ids[j];
}

void store_intern_free(struct store_intern *t) {
  for (size_t i = 0; i < t->cap; i++)
    free(t->keys[i]);
  free(t->keys);
  free(t->ids);
  *t = (struct store_intern){0};
}
