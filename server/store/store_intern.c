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

int64_t store_intern_get(struct store_intern *t, const char *s, size_t len,
                         int *added) {
  if (t->n * 2 >= t->cap)
    store_intern_grow(t);
  size_t j = util_hash(s, len) & (t->cap - 1);
  *added = 0;
  for (; t->keys[j]; j = (j + 1) & (t->cap - 1))
    if (strcmp(t->keys[j], s) == 0)
      return t->ids[j];
  t->keys[j] = xstrdup(s);
  t->ids[j] = (int64_t)++t->n;
  *added = 1;
  return t->ids[j];
}

void store_intern_free(struct store_intern *t) {
  for (size_t i = 0; i < t->cap; i++)
    free(t->keys[i]);
  free(t->keys);
  free(t->ids);
  *t = (struct store_intern){0};
}
