/* export_pftrace.h -- the pftrace export: a Perfetto protobuf Trace of the
 * system slices of a window, written packet by packet (each a
 * length-delimited field 1 of Trace) on one packet sequence with interned
 * event names and categories; the system counters follow the slices.
 *
 * Ownership: the writer owns its interning tables; packets are appended to
 * the caller's sbuf; the track rows and events stay the cursor's.
 */
#ifndef NEX_EXPORT_PFTRACE_H
#define NEX_EXPORT_PFTRACE_H

#include "query.h"

#include <stddef.h>
#include <stdint.h>

struct export_pftrace;

/* Opens in *out a writer of the counter samples in [start, end) of db and
 * the events of the n tracks r of the export cursor, procs their
 * export_names_procs() (all borrowed until export_pftrace_free()).  Returns 0,
 * or a negative code with e filled. */
int export_pftrace_open(sqlite3 *db, int64_t start, int64_t end,
                        const struct tracks_row *r, size_t n,
                        const int64_t *procs, struct export_pftrace **out,
                        struct query_err *e);
/* Appends the TrackDescriptors: per slice track a process track per
 * process and a thread track, named as the JSON perfetto export names
 * them; per counter track one per series. */
void export_pftrace_head(struct export_pftrace *p, struct sbuf *out);
/* Appends the SLICE_BEGIN packet of ev, an event of a merged cursor (a
 * track's lanes together in (start, lane) order), with its interned name
 * and category, its flows and its args as debug annotations, and the
 * SLICE_END packets due before it.  A slice goes on its track's thread
 * track, nested as its lanes nest it, and ends there once a later slice
 * starts past its end; one that overlaps the innermost open slice without
 * nesting in it (Perfetto's tracks only nest) goes on an overflow track
 * of its lane, a child of the thread track named as it, declared on first
 * use, and ends there at once. */
void export_pftrace_event(struct export_pftrace *p,
                          const struct query_export_event *ev,
                          struct sbuf *out);
/* Appends the SLICE_END packets of the slices still open: after the last
 * event. */
void export_pftrace_flush(struct export_pftrace *p, struct sbuf *out);
/* Appends the COUNTER packet of the next counter sample of the system
 * tracks.  Returns 1 if more may follow, 0 after the last, or a negative
 * code with e filled. */
int export_pftrace_counter(struct export_pftrace *p, struct sbuf *out,
                           struct query_err *e);
/* Frees the writer (NULL allowed); db stays the caller's. */
void export_pftrace_free(struct export_pftrace *p);

#endif
