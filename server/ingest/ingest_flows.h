/* ingest_flows.h -- the endpoints of every flow of the ingest, on their
 * way to the flow blocks (store_flows.h), which take them in (flow id,
 * track, lane, ts, id) order: gathered in batches, each sorted and kept
 * as a run (ingest_runs.h: in memory within INGEST_FLOWS_BUDGET, else in a
 * spill file beside the store), merged into the store at the end.
 *
 * Ownership: ingest_flows_new() returns an object freed by
 * ingest_flows_free().
 */
#ifndef NEX_INGEST_FLOWS_H
#define NEX_INGEST_FLOWS_H

#include <stdint.h>

struct store_writer;
struct ingest_flows;

/* Bytes of endpoints held in memory: the batch being gathered, its sort's
 * buffer, and runs up to a quarter of it before runs are spilled. */
#define INGEST_FLOWS_BUDGET (4u << 20)

/* A new set of endpoints; its spill file goes beside the store at
 * store_path when one is needed. */
struct ingest_flows *ingest_flows_new(const char *store_path);
/* Adds the endpoint (track, lane, ts, id) of flow flow_id. */
void ingest_flows_add(struct ingest_flows *f, int64_t flow_id, int64_t track,
                      int64_t lane, int64_t ts, int64_t id);
/* Writes every endpoint added to w's flow table, in its key order, and
 * forgets them.  Returns 0, or the negative errno of a spill file that
 * could not be read back (the endpoints after it are missing). */
int ingest_flows_write(struct ingest_flows *f, struct store_writer *w);
/* Frees f and its spill file (NULL allowed). */
void ingest_flows_free(struct ingest_flows *f);

#endif
