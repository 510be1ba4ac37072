/* lod_block.h -- the packed block codec of level-of-detail rows.
 *
 * Level L groups by bucket = ts >> (6 + 2L): buckets of 64 * 4^L ns, L up
 * to LOD_MAX_LEVEL.  The slice rows of one (track, lane, level) are stored
 * packed, up to LOD_BLOCK_ROWS to a slice_lod row: each row is 9 zigzag
 * varints -- bucket, ts and id as deltas from the row before (the first
 * row's from the block's bucket, its start time and 0), end - ts, name,
 * grp, dur, count, busy.  Deltas are taken modulo 2^64, so any int64 values
 * round-trip.  The ingest encodes (lod_block_put), the read side decodes
 * (lod_block_next).
 *
 * Ownership: a struct lod_block borrows the bytes it reads.
 */
#ifndef NEX_LOD_BLOCK_H
#define NEX_LOD_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#define LOD_MAX_LEVEL 20
#define LOD_SHIFT(level) (6 + 2 * (level))
#define LOD_BLOCK_ROWS 64
#define LOD_ROW_BYTES 90 /* the most one encoded row takes: 9 x 10 bytes */

/* One LOD slice row.  grp 0: none.  dur: the longest event's; busy: the
 * ns of [ts, end) its events cover (the sum of their durations: the events
 * of a lane never overlap). */
struct lod_row {
  int64_t bucket, ts, end, id, name, grp, dur, count, busy;
};

/* A reader of one packed block (slice_lod.rows); borrows the bytes. */
struct lod_block {
  const unsigned char *p, *end;
  struct lod_row prev;
};

/* Starts reading the block of slice_lod row (level, bucket, rows/len). */
void lod_block_init(struct lod_block *b, int level, int64_t bucket,
                    const void *rows, size_t len);
/* Decodes the next row into *r.  Returns 1, 0 at the end of the block, or
 * -EINVAL if the bytes are not a block (truncated or malformed). */
int lod_block_next(struct lod_block *b, struct lod_row *r);

/* The row before the first row of a block starting at `bucket`. */
struct lod_row lod_block_origin(int level, int64_t bucket);
/* Encodes r after *prev at p (room for LOD_ROW_BYTES) and makes r the new
 * *prev.  Returns the end of the written bytes. */
unsigned char *lod_block_put(unsigned char *p, struct lod_row *prev,
                             const struct lod_row *r);

/* The zigzag varint of the blocks, also used by the slice blocks
 * (store_block.h): writes v at p (room for 10 bytes) and returns the end of
 * the written bytes. */
unsigned char *lod_block_varint(unsigned char *p, int64_t v);
/* Reads one varint at *p (not past end) into *v and moves *p past it.
 * Returns 0, or -EINVAL when the bytes end first or it runs over 64 bits. */
int lod_block_varint_get(const unsigned char **p, const unsigned char *end,
                         int64_t *v);

#endif
