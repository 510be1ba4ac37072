/* arena.h -- a chunked bump allocator for memory that dies together
 * (the message of one decoded record, reset after its callback).
 *
 * Ownership: everything arena_alloc() hands out belongs to the arena and is
 * released at once by arena_reset() or arena_free(); never free() it.
 */
#ifndef NEX_ARENA_H
#define NEX_ARENA_H

#include <stddef.h>
#include <string.h>

struct arena_chunk;

/* Zero-initialise to start: struct arena a = {0}. */
struct arena {
  struct arena_chunk *head;
};

/* n bytes aligned for any type (64 KiB chunks, larger for a larger n).
 * Never NULL (out of memory is fatal). */
void *arena_alloc(struct arena *a, size_t n);
/* A NUL-terminated copy of the n bytes at s. */
char *arena_strdup(struct arena *a, const char *s, size_t n);
/* Room for element n of the array *arr of `size`-byte elements that grows
 * in the arena (capacity 4, then the powers of two: *arr moves to a
 * bigger copy when n reaches one, the old copy staying until the reset).
 * Returns the element's address; the caller counts the elements. */
static inline void *arena_push(struct arena *a, void **arr, size_t n,
                               size_t size) {
  if (n == 0 || (n >= 4 && !(n & (n - 1)))) {
    void *grown = arena_alloc(a, size * (n ? 2 * n : 4));
    if (n)
      memcpy(grown, *arr, size * n);
    *arr = grown;
  }
  return (char *)*arr + size * n;
}
/* Forgets every allocation, keeping the newest chunk for reuse. */
void arena_reset(struct arena *a);
/* Frees every chunk; the arena is empty and reusable afterwards. */
void arena_free(struct arena *a);

#endif
