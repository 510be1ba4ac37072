/* synth_pftrace.h -- the Perfetto writer of --format pftrace
 * (synth_pftrace_out.c), used by its converter (synth_pftrace.c).
 *
 * Ownership: a struct synth_pftrace_out owns its tracks and buffer
 * (synth_pftrace_out_free; the caller closes its FILE); debug annotations
 * borrow the strings given to them unless said otherwise, until
 * synth_pftrace_out_args_free.
 */
#ifndef NEX_SYNTH_PFTRACE_H
#define NEX_SYNTH_PFTRACE_H

#include "synth.h"

#include "perfetto_trace.pb-c.h"

#define SYNTH_PFTRACE_MAX_ARGS 64

/* A track of an output file: a row (thread) or a counter. */
struct synth_pftrace_out_track {
  char *name;
  uint64_t uuid, parent;
  int64_t end; /* rows: the end of the last slice placed on it */
};

struct synth_pftrace_out {
  FILE *f;
  struct synth_pftrace_out_track *t;
  size_t n;
  uint64_t next_uuid;
  int started;
  unsigned char *buf;
  size_t cap;
};

/* Debug annotations being built for one event. */
struct synth_pftrace_out_args {
  Perfetto__Protos__DebugAnnotation a[SYNTH_PFTRACE_MAX_ARGS];
  Perfetto__Protos__DebugAnnotation *p[SYNTH_PFTRACE_MAX_ARGS];
  char *owned[SYNTH_PFTRACE_MAX_ARGS]; /* texts to free */
  size_t n;
};

/* A new process track named `name` (pid: the Perfetto pid); returns its
 * uuid. */
uint64_t synth_pftrace_out_process(struct synth_pftrace_out *o, int32_t pid,
                                   const char *name);
/* The track named `name` under `parent` (a thread of Perfetto pid `pid`),
 * or with parent 0 a counter track; written on first use. */
struct synth_pftrace_out_track *
synth_pftrace_out_track(struct synth_pftrace_out *o, const char *name,
                        uint64_t parent, int32_t pid);
/* The first row "<base> - Row <k>" under parent free at ts (stacked rows
 * for overlapping slices); it is taken until end. */
struct synth_pftrace_out_track *
synth_pftrace_out_row(struct synth_pftrace_out *o, const char *base,
                      uint64_t parent, int32_t pid, int64_t ts, int64_t end);
/* A sample of the counter track named `name`. */
void synth_pftrace_out_counter(struct synth_pftrace_out *o, const char *name,
                               int64_t ts, double v);
/* A slice (begin and end) or, with instant, an instant on track uuid with
 * the debug annotations a and the flows given. */
void synth_pftrace_out_slice(struct synth_pftrace_out *o, uint64_t uuid,
                             const char *name, int64_t ts, int64_t dur,
                             int instant, struct synth_pftrace_out_args *a,
                             const uint64_t *flows, size_t nflows);
/* Debug annotations: an integer; a string (own: s is malloc'd and freed
 * with the args); a JSON text (malloc'd, freed with the args); the fields
 * of m (the scalars that are not proto3
 * defaults, repeated integers as a JSON array of int64, attributes under
 * their own keys); freeing what they own. */
void synth_pftrace_out_i64(struct synth_pftrace_out_args *a, const char *name,
                           int64_t v);
void synth_pftrace_out_str(struct synth_pftrace_out_args *a, const char *name,
                           const char *s, int own);
void synth_pftrace_out_json(struct synth_pftrace_out_args *a, const char *name,
                            char *json);
void synth_pftrace_out_fields(struct synth_pftrace_out_args *a,
                              const ProtobufCMessage *m);
void synth_pftrace_out_args_free(struct synth_pftrace_out_args *a);
/* Frees the tracks and buffer of o (not its FILE). */
void synth_pftrace_out_free(struct synth_pftrace_out *o);

#endif
