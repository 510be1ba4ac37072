/* ingest_deps.h -- the instruction dependencies of a device profile: one
 * per entry of an instruction's inst_dep_ids, with where the instruction
 * it names lies (schema.sql: inst_dep, and inst_dep_rev for the found ones
 * seen from the dependency).
 *
 * The profile's engine tracks get a hook that sees each instruction as it
 * is placed: where it lies, by id, and its dependencies, read from the
 * args text (`"inst_dep_ids":[...]`, as argtext_list() writes it).  Once
 * the profile is placed they are resolved in memory, sorted by dependent
 * and written as dependency blocks (store_deps.h), then the found ones
 * turned around, sorted by dependency and written again.  What that takes
 * is bounded (half the sort budget): a profile beyond it is resolved in
 * SQL over the stored slices instead, into a temporary table read back in
 * each order, slower but with no bound.  Both give the same rows: where an
 * id is on several instructions, the dependency lies at the first in
 * (track, lane, ts) order.
 *
 * Ownership: the state is the device reader's (ingest_deps_free).
 */
#ifndef NEX_INGEST_DEPS_H
#define NEX_INGEST_DEPS_H

#include "ingest_sink.h"

struct ingest_deps;

/* A state for one device profile after another, remembering at most about
 * `budget` bytes. */
struct ingest_deps *ingest_deps_new(size_t budget);
void ingest_deps_free(struct ingest_deps *d);

/* Gives an engine track of the profile the hook, before it is placed. */
void ingest_deps_watch(struct ingest_deps *d, struct itrack *t);

/* The profile is placed: writes its dependencies and forgets it. */
void ingest_deps_write(struct ing *g, struct ingest_deps *d, int64_t dp_id);

#endif
