/* ingest_syncs.h -- the timestamp_sync_points of an ntrace.pb, the first
 * pass of its reading: each the same instant on the host's and a
 * NeuronCore's clock, sorted by (nc, exec_id) and found by exec_id.  Pass
 * 1 decodes only the records whose event name (NtraceRecord.event = field
 * 1, SystemEvent.name = field 2) is timestamp_sync_point.
 *
 * Ownership: a struct ingest_syncs owns its array (ingest_syncs_free).
 */
#ifndef NEX_INGEST_SYNCS_H
#define NEX_INGEST_SYNCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A timestamp_sync_point: the same instant on both clocks. */
struct ingest_sync {
  int nc;
  int64_t exec_id, cpu, dev;
};

/* The sync points of one file, sorted by (nc, exec_id). */
struct ingest_syncs {
  struct ingest_sync *v;
  size_t n, cap;
};

/* Reads the sync points of the ntrace.pb at path into *s, replacing what
 * it held.  A file that does not open or read gives those read before the
 * fault (pass 2 reports it). */
void ingest_syncs_read(struct ingest_syncs *s, const char *path);
/* The sync point of (nc, exec_id); else the nearest earlier exec_id of
 * that NC (*exact = false); NULL when the NC has none.  Borrowed from s. */
const struct ingest_sync *ingest_syncs_find(const struct ingest_syncs *s,
                                            int nc, int64_t exec_id,
                                            bool *exact);
/* Frees s's array and empties it (s itself is the caller's). */
void ingest_syncs_free(struct ingest_syncs *s);

#endif
