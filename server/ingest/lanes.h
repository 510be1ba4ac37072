/* lanes.h -- lane assignment for the slices of one base track.
 *
 * Slices arrive roughly in start order (a capture writes an enclosing event
 * after the ones it contains).  A small reorder window (a min-heap by start,
 * longer first on ties) puts them back in order; each slice leaving the
 * window goes to the first lane that is free at its start, so slices never
 * overlap within a lane and nested slices stack like call depth.  A
 * zero-length slice occupies 1 ns, so (lane, start) names a slice uniquely.
 * A slice that arrives later than the window allows still gets a lane (a
 * new one if needed): nothing is ever dropped.
 *
 * Ownership: lanes_push() takes ownership of item->args and item->flows;
 * items handed back by lanes_push()/lanes_pop() belong to the caller, who
 * frees them with lanes_item_clear().
 */
#ifndef NEX_LANES_H
#define NEX_LANES_H

#include <stddef.h>
#include <stdint.h>

struct lanes_item {
  int64_t ts, dur, id, name, grp;
  char *args;       /* JSON object text or NULL */
  size_t args_len;
  uint64_t *flows;  /* flow ids or NULL */
  int n_flows;
};

struct lanes;

/* A lane assigner whose reorder window holds `window` slices (>= 1). */
struct lanes *lanes_new(int window);
void lanes_free(struct lanes *l);

/* Adds `in`.  When the window is full, hands back the earliest slice in
 * *out with its lane in *lane and returns 1; else returns 0. */
int lanes_push(struct lanes *l, struct lanes_item *in, struct lanes_item *out,
               int64_t *lane);
/* Hands back the earliest buffered slice (returns 1), or returns 0 when the
 * window is empty.  Call until 0 at the end of the track. */
int lanes_pop(struct lanes *l, struct lanes_item *out, int64_t *lane);

/* Number of buffered slices, and the earliest and latest start among them
 * (only meaningful when the count is > 0). */
int lanes_buffered(const struct lanes *l, int64_t *min_ts, int64_t *max_ts);
/* Number of lanes used so far. */
int64_t lanes_count(const struct lanes *l);

void lanes_item_clear(struct lanes_item *it);

#endif
