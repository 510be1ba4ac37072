/* store_deps.h -- an open dependency block (store_block.h) of one side:
 * the instruction dependencies seen from the instructions of one (track,
 * lane) at a time, in (track, lane, ts, id, seq) order, closed when full,
 * when the (track, lane) changes and on store_deps_flush(), encoded at
 * once and handed to `emit`.
 *
 * The caller adds them in that order (the ingest sorts them); one before
 * the last is not checked for, and would make a block a reader refuses.
 *
 * Ownership: store_deps_new() returns an object freed by store_deps_free().
 * Encoded blocks are handed to `emit`, borrowed for the call.
 */
#ifndef NEX_STORE_DEPS_H
#define NEX_STORE_DEPS_H

#include <stddef.h>
#include <stdint.h>

/* Receives one encoded block: its (track, lane), its first ts, n
 * dependencies, its data. */
typedef void store_deps_emit_fn(void *ud, int64_t track, int64_t lane,
                                int64_t ts0, int64_t n,
                                const unsigned char *data, size_t len);

struct store_deps;

/* Returns a new open block that hands closed ones to emit(ud, ...). */
struct store_deps *store_deps_new(store_deps_emit_fn *emit, void *ud);
/* Adds a dependency seen from instruction key[] = (track, lane, ts, id):
 * the seq-th of the dependent's inst_dep_ids, and the instruction at the
 * other end, other[] = its track, lane, ts and id (only its id when
 * !found: no instruction has the id the dependent names). */
void store_deps_add(struct store_deps *s, const int64_t key[4], int64_t seq,
                    const int64_t other[4], int found);
/* Closes and emits the open block. */
void store_deps_flush(struct store_deps *s);
/* Frees s and its open block, unwritten.  NULL allowed. */
void store_deps_free(struct store_deps *s);

#endif
