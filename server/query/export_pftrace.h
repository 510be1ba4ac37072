/* export_pftrace.h -- the pftrace export: a Perfetto protobuf Trace of the
 * system slices of a window, written packet by packet (each a
 * length-delimited field 1 of Trace) on one packet sequence with interned
 * event names and categories.
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

/* A new writer (free it with export_pftrace_free()). */
struct export_pftrace *export_pftrace_new(void);
/* Appends the TrackDescriptors of the n slice tracks r (a process track
 * per process, a thread track per track, a child track per further lane)
 * named as the JSON perfetto export names them; procs: export_procs(). */
void export_pftrace_head(struct export_pftrace *p, const struct tracks_row *r,
                         size_t n, const int64_t *procs, struct sbuf *out);
/* Appends the SLICE_BEGIN and SLICE_END packets of ev on the track of its
 * lane, track k of the head: interned name and category, its flows and
 * its args as debug annotations. */
void export_pftrace_event(struct export_pftrace *p,
                          const struct query_export_event *ev, size_t k,
                          struct sbuf *out);
/* Frees the writer (NULL allowed). */
void export_pftrace_free(struct export_pftrace *p);

#endif
