/* lanes.h -- lane assignment for the slices of one base track: nesting
 * depth by containment, whatever order the slices were written in.
 *
 * A track's slices are held until the track can receive no more of them
 * (its process was read, or every file was); lanes_pop() then hands them
 * back sorted by start, the longer first on equal starts, then in the
 * order they were pushed, and gives each its lane in that one pass:
 *   - its parent is, of the slices placed last in each lane, the one that
 *     contains it (starts at or before it, ends at or after its end) and
 *     started last (the deeper on equal starts);
 *   - its lane is the first lane below its parent's (from lane 0 without
 *     a parent) that is free at its start.
 * Nested slices thus get their nesting depth, a child one lane below the
 * innermost slice containing it, as Perfetto and Chrome DevTools draw
 * them; consecutive slices share a lane; a slice that overlaps another
 * without nesting in it goes to the next free lane (never dropped).  A
 * zero-length slice occupies 1 ns, so (lane, start) names a slice
 * uniquely.  Within a track, slices come back in (start, lane) order.
 *
 * Memory: the sorters of one pool share a budget.  Past it, the largest
 * buffers are handed to the pool's own thread until half of the budget is
 * left; that thread sorts them and writes them as runs to the pool's spill
 * file beside the store (spill.h) while the caller goes on pushing (what
 * waits for it is at most half of the budget plus the buffer handed over
 * last: lanes_push() waits when it is behind).  lanes_pop() waits for the
 * track's runs to be written, then merges them and its buffer.  Without a
 * usable spill file everything stays in memory (a buffer that could not be
 * written goes back to its sorter).  Slices pushed after a track was drained
 * get the first lanes that are free at their start after what was placed. Every
 * call is made by one thread, the pool's thread being internal.
 *
 * Ownership: lanes_push() copies item->args and item->flows (into memory
 * of the sorter's that dies with the buffer or run holding them: no
 * allocation per slice); the caller keeps its own.  The args and flows of
 * an item handed back by lanes_pop() belong to the sorter and stay valid
 * until the next lanes_pop() or lanes_free() on it (args NUL-terminated).
 * A pool is freed after all its sorters.
 */
#ifndef NEX_LANES_H
#define NEX_LANES_H

#include <stddef.h>
#include <stdint.h>

struct lanes_item {
  int64_t ts, dur, id, name, grp;
  const char *args; /* JSON object text (args_len bytes) or NULL */
  size_t args_len;
  const uint64_t *flows; /* n_flows flow ids or NULL */
  int n_flows;
  /* The order of slices with equal start and duration (the first one
   * encloses the next): set by lanes_push in a LANES_PUSH_ORDER sorter,
   * the caller's key in a LANES_KEY_ORDER one. */
  uint64_t order;
};

/* How a sorter orders slices of equal start and duration: in the order
 * they were pushed, or by the caller's lanes_item.order (the file position
 * of a Chrome event's begin). */
enum lanes_order { LANES_PUSH_ORDER, LANES_KEY_ORDER };

struct lanes_pool;
struct lanes;

/* A pool whose sorters hold at most about `budget` bytes of slices in
 * memory; its spill file goes beside the store at store_path. */
struct lanes_pool *lanes_pool_new(const char *store_path, size_t budget);
/* Frees the pool and closes its spill file (NULL allowed). */
void lanes_pool_free(struct lanes_pool *p);

/* A sorter for one track, drawing on pool p, ordering equal slices by
 * `order`. */
struct lanes *lanes_new(struct lanes_pool *p, enum lanes_order order);
/* Frees the sorter and the slices it still holds (NULL allowed). */
void lanes_free(struct lanes *l);

/* Adds `in` (its order is set in a LANES_PUSH_ORDER sorter).  Must not be called while a drain is under
 * way (lanes_pop() has handed back some slices but not returned 0). */
void lanes_push(struct lanes *l, struct lanes_item *in);
/* Hands back the next slice in order with its lane: returns 1, or 0 when
 * every slice pushed was handed back, or -EIO (or a read error) when the
 * spill file cannot be read: the slices not handed back are then lost
 * (lanes_pending() before the drain says how many there were). */
int lanes_pop(struct lanes *l, struct lanes_item *out, int64_t *lane);

/* Slices pushed and not handed back yet, and the earliest and latest
 * start among them (only meaningful when the count is > 0). */
int64_t lanes_pending(const struct lanes *l, int64_t *min_ts, int64_t *max_ts);
/* Number of lanes used so far. */
int64_t lanes_count(const struct lanes *l);

#endif
