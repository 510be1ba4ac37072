/* store_counters.h -- the writer's open counter blocks (store_block.h):
 * one per series of the counter track being written, closed when full
 * and whenever the writer's connection is used (a track's statistics, a
 * statement, the end), encoded at once (no compression: a block is a few
 * hundred bytes of varints) and handed to `emit`.
 *
 * The samples of a counter track come in one run (no other track's
 * between them), in (ts, seq) order, the series of one seq in any order
 * (the ingest sorts each track's samples when the track is complete).  A
 * sample that is not after the last one of its series, or a track that
 * comes again after another one, is an error: it is not written, and the
 * error is kept (store_counters_error()).
 *
 * Ownership: store_counters_new() returns an object freed by
 * store_counters_free().  Encoded blocks are handed to `emit`, borrowed
 * for the call.
 */
#ifndef NEX_STORE_COUNTERS_H
#define NEX_STORE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* Receives one encoded block: its key (track, series, first ts and seq),
 * n samples and its data blob. */
typedef void store_counters_emit_fn(void *ud, int64_t track, int64_t series,
                                    int64_t ts0, int64_t seq0, int64_t n,
                                    const unsigned char *data, size_t len);

struct store_counters;

/* Returns a new set of open blocks that hands closed ones to emit(ud,...). */
struct store_counters *store_counters_new(store_counters_emit_fn *emit,
                                          void *ud);
/* Adds one sample of series `series` (>= 0) of counter track `track`
 * (>= 0).  A sample out of order is not added: the error is kept. */
void store_counters_add(struct store_counters *s, int64_t track, int series,
                        int64_t ts, int64_t seq, double value);
/* Closes and emits every open block. */
void store_counters_flush(struct store_counters *s);
/* Hands the first error kept since the last call (a malloc'd message) to
 * *error when that is NULL (the caller frees it), else drops it. */
void store_counters_error(struct store_counters *s, char **error);
/* Frees s and its open blocks, unwritten.  NULL allowed. */
void store_counters_free(struct store_counters *s);

#endif
