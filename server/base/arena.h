/* arena.h -- a chunked bump allocator for memory that dies together
 * (the message of one decoded record, reset after its callback).
 *
 * Ownership: everything arena_alloc() hands out belongs to the arena and is
 * released at once by arena_reset() or arena_free(); never free() it.
 */
#ifndef NEX_ARENA_H
#define NEX_ARENA_H

#include <stddef.h>

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
/* Forgets every allocation, keeping the newest chunk for reuse. */
void arena_reset(struct arena *a);
/* Frees every chunk; the arena is empty and reusable afterwards. */
void arena_free(struct arena *a);

#endif
