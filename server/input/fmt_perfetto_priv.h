/* fmt_perfetto_priv.h -- what the five files of the Perfetto decoder
 * share, each calling only those below it: fmt_perfetto.c (the stream,
 * packets, sequences, clocks, descriptors), fmt_perfetto_event.c (track
 * events: slices, flows, counters), fmt_perfetto_args.c (debug annotations
 * as JSON), fmt_perfetto_state.c (maps, text, warnings, interned
 * strings, tracks) and fmt_perfetto_wire.c (track event packets read
 * without protobuf-c's unpacker).  Not a public interface: only those
 * files include it, and the fuzz target, which checks the wire walker
 * against protobuf-c.
 *
 * Ownership: the reader owns every map, sequence and track; strings in
 * them are malloc'd and freed with their owner.
 */
#ifndef NEX_FMT_PERFETTO_PRIV_H
#define NEX_FMT_PERFETTO_PRIV_H

#include "fmt_perfetto.h"
#include "pbwire.h"
#include "util.h"

#include "perfetto_trace.pb-c.h"

#include <stdbool.h>

/* A hash map from uint64 keys to non-NULL pointers. */
struct fmt_perfetto_map {
  uint64_t *keys;
  void **vals;
  size_t cap, n;
};

/* The value of key k, or NULL. */
void *fmt_perfetto_state_map_get(const struct fmt_perfetto_map *m, uint64_t k);
/* The slot of key k, created (holding NULL) when absent: the caller
 * stores a non-NULL value in it. */
void **fmt_perfetto_state_map_slot(struct fmt_perfetto_map *m, uint64_t k);
/* Frees every value with fr (may be NULL) and empties the map. */
void fmt_perfetto_state_map_clear(struct fmt_perfetto_map *m,
                                  void (*fr)(void *));

/* Interned string kinds (a key of a sequence's index is iid * 4 + kind). */
enum {
  FMT_PERFETTO_IID_CATEGORY,
  FMT_PERFETTO_IID_EVENT_NAME,
  FMT_PERFETTO_IID_ARG_NAME,
  FMT_PERFETTO_IID_ARG_STRING
};

/* A slice not yet reported: begun (end < 0 means unknown: a begin event)
 * or complete but possibly enclosing later events of its track. */
struct fmt_perfetto_open {
  const char *name, *cat, *args; /* NULL, or in text */
  size_t args_len;               /* args: JSON text, or packed args */
  bool packed;                   /* (fmt_perfetto.h) when packed */
  char *text;                    /* one block holding the three */
  int64_t ts, end, pid, tid;
  uint64_t *flows;
  size_t nflows;
  uint32_t seq;
  uint64_t offset;
};

struct fmt_perfetto_trk {
  struct fmt_perfetto_track pub; /* its strings are the three below */
  char *name, *process_name, *thread_name;
  uint64_t resolved; /* the reader's tgen when pid/tid were
                        inherited */
  int64_t own_pid, own_tid;
  struct fmt_perfetto_open *stack;
  size_t depth, cap;
  uint64_t *pending; /* legacy 'f' flow ids waiting for the next slice */
  size_t npending;
};

/* A clock: builtin (seq 0) or sequence-scoped (64..127). */
struct fmt_perfetto_clock {
  uint32_t seq, id;
  int has_snap, incremental;
  int64_t snap, trace; /* at the latest snapshot: this clock (ns), the
                          trace clock */
  int64_t mult;        /* ns per unit */
  int64_t last;        /* incremental: the last value, in units */
  int warned;
};

/* The incremental state of a packet sequence. */
struct fmt_perfetto_seq {
  uint32_t id;
  bool valid;
  struct fmt_perfetto_map interned; /* iid * 4 + kind -> fmt_perfetto_str */
  struct fmt_perfetto_map counters; /* counter uuid -> double * */
  /* TracePacketDefaults (kept across clears, as Perfetto does) */
  bool has_clock, has_track;
  uint32_t clock_id;
  uint64_t track_uuid;
  uint64_t *extra, *extra_double;
  size_t nextra, nextra_double;
  /* legacy ThreadDescriptor packets */
  bool has_thread;
  uint64_t thread_uuid;
  int64_t ref_us; /* reference_timestamp_us, advanced by deltas */
  int64_t thread_time_ns;
  int64_t instructions;
  int64_t last_ts;              /* timestamp of its latest packet */
  struct fmt_perfetto_trk *trk; /* the track of its latest event (tracks
                                   live as long as the reader) */
};

struct fmt_perfetto {
  const struct fmt_perfetto_cb *cb;
  struct fmt_perfetto_stats *st;
  struct fmt_perfetto_map seqs;    /* id -> struct fmt_perfetto_seq * */
  struct fmt_perfetto_seq *seq;    /* the latest packet's */
  struct fmt_perfetto_map tracks;  /* uuid -> struct fmt_perfetto_trk * */
  struct fmt_perfetto_map flowgen; /* terminated flow id -> generation */
  uint64_t tgen;                   /* bumped by every descriptor */
  struct fmt_perfetto_clock *clocks;
  size_t nclocks;
  uint32_t trace_clock;
  size_t interned_bytes;
  bool warned_interned, warned_tracks, warned_flowgen;
  int64_t max_ts;
  uint64_t offset; /* of the packet being read */
  int rc;          /* non-zero: a callback asked to stop */
  struct sbuf args, cat, name, scratch;
  bool args_packed;        /* args holds packed args, not JSON */
  struct sbuf unpacked[2]; /* packed args as JSON: a begin's, an end's */
  bool walked; /* the packet was read by the walker: its annotations */
  const struct fmt_perfetto_ann *ann;
  size_t nann;
  uint64_t *flows;
  size_t nflows, capflows;
};

/* Text of a trace as valid UTF-8: s itself when it is ASCII, else a
 * repaired copy in b (invalid bytes become U+FFFD).  _dup: a malloc'd
 * copy. */
const char *fmt_perfetto_state_clean(struct sbuf *b, const char *s, size_t n);
char *fmt_perfetto_state_dup(const char *s, size_t n);

/* Reports a warning at the current packet and counts it as skipped. */
void fmt_perfetto_state_warn(struct fmt_perfetto *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* a + b * k, wrapping modulo 2^64 rather than overflowing: the clocks'
 * arithmetic and the legacy microseconds (a trace's numbers may not fit in
 * nanoseconds; a wrong time, never undefined behaviour). */
static inline int64_t fmt_perfetto_wrap(int64_t a, int64_t b, int64_t k) {
  return (int64_t)((uint64_t)a + (uint64_t)b * (uint64_t)k);
}

/* An interned string of a sequence (the map's value, one allocation):
 * its text as fmt_perfetto_state_dup cleans it, its length, and whether it
 * is its own JSON string (util_json_plain: a reader of the packed args
 * then needs no check). */
struct fmt_perfetto_str {
  size_t len;
  bool plain;
  char s[];
};
/* A new interned string of s[0, n) (cleaned), to free(). */
struct fmt_perfetto_str *fmt_perfetto_state_str(const char *s, size_t n);
/* The interned string (kind, iid) of a sequence, or NULL. */
const struct fmt_perfetto_str *
fmt_perfetto_state_interned_str(const struct fmt_perfetto_seq *q, int kind,
                                uint64_t iid);
/* Its text, or NULL. */
const char *fmt_perfetto_state_interned(const struct fmt_perfetto_seq *q,
                                        int kind, uint64_t iid);

/* The track of a uuid, created blank (and reported) when unknown; NULL
 * when the track limit is reached.  fmt_perfetto_state_track_resolve fills the
 * inherited pid/tid of its public record. */
struct fmt_perfetto_trk *fmt_perfetto_state_track(struct fmt_perfetto *r,
                                                  uint64_t uuid);
void fmt_perfetto_state_track_resolve(struct fmt_perfetto *r,
                                      struct fmt_perfetto_trk *t);
/* Reports a track through the callback (after resolving it). */
void fmt_perfetto_state_track_report(struct fmt_perfetto *r,
                                     struct fmt_perfetto_trk *t);

/* fmt_perfetto_event.c: one TrackEvent of sequence q at ts; the end of the
 * trace (reports the slices still open); a track's state freed. */
void fmt_perfetto_event(struct fmt_perfetto *r, struct fmt_perfetto_seq *q,
                        const Perfetto__Protos__TrackEvent *e, int64_t ts);
void fmt_perfetto_event_finish(struct fmt_perfetto *r);
void fmt_perfetto_event_free(struct fmt_perfetto_trk *t);

/* A scalar value of a debug annotation: the case of its `value` oneof
 * (PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_*: bool, uint, int, double,
 * string, interned string, pointer, and from the walker a plain legacy
 * JSON value; 0: none) and what it holds (u: the integers, bool and iid;
 * d: a double; s[0, n): a string, which ends at its first NUL if it has
 * one, as protobuf-c's do, or the JSON). */
struct fmt_perfetto_scalar {
  uint32_t c;
  uint64_t u;
  double d;
  const char *s;
  size_t n;
};

/* A debug annotation of a packet the wire walker took: m, protobuf-c's
 * struct (read by the walker), or when it is plain -- a name or name iid
 * and at most scalar values or legacy JSON that is a flat array of
 * integers and plain strings, nothing else -- NULL and what it says, its
 * texts pointing into the packet's bytes p[0, n). */
struct fmt_perfetto_ann {
  Perfetto__Protos__DebugAnnotation *m;
  const uint8_t *p;
  size_t n;
  int has_iid; /* the name is interned (iid), else name[0, name_len) (up
                  to a NUL) */
  uint64_t iid;
  const char *name; /* NULL: no name */
  size_t name_len;
  struct fmt_perfetto_scalar v;
};

/* fmt_perfetto_args.c: sets r->args to the debug annotations of an event
 * as a JSON object ("" when none): those of r->ann when r->walked (the
 * walker took the packet), else the event's own.  When the callbacks take
 * packed args and the walker found every annotation plain, r->args holds
 * them packed instead (fmt_perfetto.h) and r->args_packed is set. */
void fmt_perfetto_args(struct fmt_perfetto *r, const struct fmt_perfetto_seq *q,
                       const Perfetto__Protos__TrackEvent *e);
/* Reads the DebugAnnotation p[0, n) into *a when it is plain (see struct
 * fmt_perfetto_ann; then as protobuf-c reads it: the last of repeated
 * scalars wins); false otherwise, or when it is not
 * well formed, without a word: the walker then reads it as a struct. */
bool fmt_perfetto_args_plain(const uint8_t *p, size_t n,
                             struct fmt_perfetto_ann *a);
/* Appends "name":value of annotation a to b; q may be an empty sequence. */
void fmt_perfetto_args_ann(struct sbuf *b, const struct fmt_perfetto_seq *q,
                           const struct fmt_perfetto_ann *a);
/* Merges the args of an end event into those of its begin (both JSON
 * object texts, either NULL): objects key by key, arrays appended, the
 * end's scalars win.  Returns a malloc'd text or NULL when both are. */
char *fmt_perfetto_args_merge(const char *begin, const char *end);
/* Whether the debug annotations of the TracePacket bytes nest at most
 * FMT_PERFETTO_ARGS_DEPTH deep (protobuf-c unpacks them recursively). */
#define FMT_PERFETTO_ARGS_DEPTH 64
bool fmt_perfetto_args_depth_ok(const uint8_t *data, size_t len);

/* fmt_perfetto_wire.c: _packet reads the TracePacket of data[0, len)
 * into the arena given to _new (freed with it) when it holds only a
 * TrackEvent and scalar fields and is well formed; it returns NULL when
 * the packet must go to protobuf-c's unpacker instead (which gives the
 * same structs for the packets taken here).  _new indexes the field
 * descriptors once per reader; free it with _free. */
struct arena;
struct fmt_perfetto_wire;
struct fmt_perfetto_wire *fmt_perfetto_wire_new(struct arena *a);
void fmt_perfetto_wire_free(struct fmt_perfetto_wire *w);
Perfetto__Protos__TracePacket *
fmt_perfetto_wire_packet(struct fmt_perfetto_wire *w, const uint8_t *data,
                         size_t len);
/* The debug annotations of the TrackEvent of the last packet _packet took,
 * in order (its struct's debug_annotations stay empty): *n of them, in the
 * arena. */
const struct fmt_perfetto_ann *
fmt_perfetto_wire_annotations(const struct fmt_perfetto_wire *w, size_t *n);

#endif
