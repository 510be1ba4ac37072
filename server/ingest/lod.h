/* lod.h -- level-of-detail rows built while slices and samples stream in.
 *
 * Level L groups by bucket = ts >> (6 + 2L): buckets of 64 * 4^L ns, L up
 * to LOD_MAX_LEVEL.  A track stores levels min_level..LOD_MAX_LEVEL, with
 * min_level chosen from its event density (lod_pick_level) so that the
 * finest stored level already merges several events per bucket and the
 * LOD rows stay a fraction of the events.  Per (level, lane, bucket) a
 * slice row keeps the earliest start, the latest end, the longest slice's
 * id/name/grp/dur, the count and the busy time (the sum of the durations); a row runs on over the next buckets while
 * their slices carry its name and grp and follow with a gap under half a
 * bucket (under a pixel at any zoom that reads the level), so a lane
 * busy with one kind of event is a few rows, not one per bucket.  The slice
 * rows of a (lane, level) are stored packed, up to LOD_BLOCK_ROWS to a
 * slice_lod row (store/lod_block.h): a window query steps
 * one SQLite row per block instead of one per bucket.  Per (series, level,
 * bucket) a counter row keeps the first ts, min, max, last and count.
 *
 * Slices of one lane must come in start order (lanes.c guarantees it).
 * Counter samples should come in time order; a sample older than its
 * series' current bucket is folded into that bucket.
 *
 * Ownership: lod_* objects are freed with lod_free / lod_counter_free, after
 * the matching flush.
 */
#ifndef NEX_LOD_H
#define NEX_LOD_H

#include <stddef.h>
#include <stdint.h>

#include "lod_block.h"

struct store_writer;

/* The finest level worth storing for `n` events spanning `span` ns: the
 * smallest L >= 1 whose bucket holds at least ~2 events on average (so
 * that a window dense enough to need more than a few raw rows per pixel is
 * answered from LOD: packed rows are cheap to store). */
int lod_pick_level(int64_t span, int64_t n);

struct lod;
struct lod *lod_new(int64_t track, int min_level);
void lod_slice(struct lod *l, struct store_writer *w, int64_t lane, int64_t ts,
               int64_t dur, int64_t id, int64_t name, int64_t grp);
/* Writes the open buckets of every lane and level. */
void lod_flush(struct lod *l, struct store_writer *w);
void lod_free(struct lod *l);

struct lod_counter;
struct lod_counter *lod_counter_new(int64_t track, int min_level);
void lod_counter_sample(struct lod_counter *c, struct store_writer *w,
                        int series, int64_t ts, double value);
void lod_counter_flush(struct lod_counter *c, struct store_writer *w);
void lod_counter_free(struct lod_counter *c);

#endif
