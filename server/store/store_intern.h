/* store_intern.h -- the writer's interned strings: each distinct text gets
 * an id, 1, 2, ... in the order first seen (the rows of table str).
 *
 * Ownership: the table keeps a copy of every text; store_intern_free()
 * frees them (the struct itself is the caller's, zeroed to start).
 */
#ifndef NEX_STORE_INTERN_H
#define NEX_STORE_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct store_intern {
  char **keys; /* open addressing; NULL: a free slot */
  int64_t *ids;
  size_t cap, n;
};

/* The id of the len bytes of s (NUL-terminated at len): the one it got
 * before (*added 0), or the next one (*added 1). */
int64_t store_intern_get(struct store_intern *t, const char *s, size_t len,
                         int *added);
/* The id of the len bytes of s (NUL-terminated at len), 0 when it has
 * none. */
int64_t store_intern_find(const struct store_intern *t, const char *s,
                          size_t len);
/* Frees t's texts and slots (t itself is the caller's). */
void store_intern_free(struct store_intern *t);

#endif
