/* store_flows.h -- the writer's open flow block (store_block.h): the
 * endpoints of every flow, in (flow id, track, lane, ts, id) order, closed
 * when full and whenever the writer's connection is used (a statement, the
 * end), encoded at once and handed to `emit`.
 *
 * The endpoints come in key order (the ingest sorts them); one equal to
 * the one before is dropped (a flow named twice, as the flow table's
 * INSERT OR IGNORE did); one before it is an error: not written, and the
 * error is kept (store_flows_error()).
 *
 * Ownership: store_flows_new() returns an object freed by
 * store_flows_free().  Encoded blocks are handed to `emit`, borrowed for
 * the call.
 */
#ifndef NEX_STORE_FLOWS_H
#define NEX_STORE_FLOWS_H

#include <stddef.h>
#include <stdint.h>

/* Receives one encoded block: its first flow id, n endpoints, its data. */
typedef void store_flows_emit_fn(void *ud, int64_t flow0, int64_t n,
                                 const unsigned char *data, size_t len);

struct store_flows;

/* Returns a new open block that hands closed ones to emit(ud, ...). */
struct store_flows *store_flows_new(store_flows_emit_fn *emit, void *ud);
/* Adds the endpoint (track, lane, ts, id) of flow flow_id. */
void store_flows_add(struct store_flows *s, int64_t flow_id, int64_t track,
                     int64_t lane, int64_t ts, int64_t id);
/* Closes and emits the open block. */
void store_flows_flush(struct store_flows *s);
/* Hands the first error kept since the last call (a malloc'd message) to
 * *error when that is NULL (the caller frees it), else drops it. */
void store_flows_error(struct store_flows *s, char **error);
/* Frees s and its open block, unwritten.  NULL allowed. */
void store_flows_free(struct store_flows *s);

#endif
