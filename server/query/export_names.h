/* export_names.h -- the vendor's process and thread naming of the
 * Perfetto exports, shared by the JSON (export.c) and the protobuf
 * (export_pftrace.c) writer.
 *
 * Ownership: the track rows stay the caller's; names are appended to the
 * caller's sbufs; export_names_procs() returns a new array.
 */
#ifndef NEX_EXPORT_NAMES_H
#define NEX_EXPORT_NAMES_H

#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The written pid of each of the n tracks r: a standalone Chrome trace's
 * process keeps its pid while no other has it; the others are numbered
 * from 1 in track order with numbers no such process has.  Returns a new
 * array of n (the caller frees it). */
int64_t *export_names_procs(const struct tracks_row *r, size_t n);
/* Whether track k is the first of its process in procs. */
bool export_names_first(const int64_t *procs, size_t k);
/* Appends the process name (a Chrome trace's own, else
 * "<instance>-pid<pid>") of track r to pname, its thread name (the trace's
 * own, "Stream N", "Thread N" or "gid..-nc..-tid..-<source>") to tname;
 * nothing for a name the trace did not give. */
void export_names_track(const struct tracks_row *r, struct sbuf *pname,
                        struct sbuf *tname);

#endif
