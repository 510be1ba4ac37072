/* store_slices.h -- the writer's open slice blocks: one per (track, lane)
 * being written, closed when full and whenever the writer's connection is
 * used (a track's statistics, a statement, the end).  A closed block is
 * encoded (store_block.h: varints, args sets, zstd) on an encoder thread
 * of its own while the caller goes on; the encoded blocks are handed to
 * `emit` on the caller's thread, in the order they were closed, at most a
 * few dozen blocks later and all of them by store_slices_flush().
 *
 * Slices of a (track, lane) come in (ts, id) order (the lane assignment
 * hands them out so); within the open block any order is sorted, but a
 * slice before the last one of a block already closed, or one equal to
 * another, is an error (the one-row-per-slice table refused duplicates
 * too).
 *
 * Ownership: store_slices_new() returns an object freed by
 * store_slices_free().
 * Encoded blocks are handed to `emit`, borrowed for the call.
 */
#ifndef NEX_STORE_SLICES_H
#define NEX_STORE_SLICES_H

#include <stddef.h>
#include <stdint.h>

/* Receives one encoded block: its key (track, lane, first ts and id), n
 * slices, its data and args blobs. */
typedef void store_slices_emit_fn(void *ud, int64_t track, int64_t lane,
                                  int64_t ts0, int64_t id0, int64_t n,
                                  const unsigned char *data, size_t len,
                                  const unsigned char *args, size_t args_len);

/* Receives one args set (store_argset.h) given an id by the blocks'
 * encoding, before the first block that uses it: id (1, 2, ... in
 * order) and its template (len bytes). */
typedef void store_slices_set_fn(void *ud, int64_t id, const char *tpl,
                                 size_t len);

struct store_slices;

/* Returns a new set of open blocks that hands closed ones to emit(ud,...)
 * and the args sets they use to emit_set(ud, ...). */
struct store_slices *store_slices_new(store_slices_emit_fn *emit,
                                      store_slices_set_fn *emit_set, void *ud);
/* Adds one slice (args and its n_flows flow ids copied; NULL allowed).  A
 * slice out of order is not added: the error is kept
 * (store_slices_error()). */
void store_slices_add(struct store_slices *s, int64_t track, int64_t lane,
                      int64_t ts, int64_t id, int64_t dur, int64_t name,
                      int64_t grp, const char *args, size_t args_len,
                      const int64_t *flows, int n_flows);
/* Closes every open block and emits every block closed so far.  A block
 * that holds one slice twice is not written: the error is kept. */
void store_slices_flush(struct store_slices *s);
/* Hands the first error kept since the last call (a malloc'd message) to
 * *error when that is NULL (the caller frees it), else drops it. */
void store_slices_error(struct store_slices *s, char **error);
/* Frees s and its open blocks, unwritten.  NULL allowed. */
void store_slices_free(struct store_slices *s);

#endif
