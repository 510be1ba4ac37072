/* arena.h -- memory for one record's message at a time: allocations that
 * are all given back at once (arena_reset), in chunks of 64 KiB or more.
 *
 * Ownership: the struct is the caller's, zeroed before first use;
 * arena_free() releases its memory.  Pointers from arena_alloc() and
 * arena_strdup() are valid until the next arena_reset() or arena_free().
 */
#ifndef NEX_ARENA_H
#define NEX_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
  struct arena_chunk *head;
};

/* Returns n bytes aligned for any type (never NULL). */
void *arena_alloc(struct arena *a, size_t n);
/* Returns a NUL-terminated copy of the n bytes at s. */
char *arena_strdup(struct arena *a, const char *s, size_t n);
/* Gives back every allocation; keeps the newest chunk for the next record. */
void arena_reset(struct arena *a);
/* Releases all of a's memory (it can be used again). */
void arena_free(struct arena *a);

#endif
