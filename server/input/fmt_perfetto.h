/* fmt_perfetto.h -- streaming decoder for Perfetto protobuf traces
 * (*.pftrace, *.perfetto-trace, and their .gz).
 *
 * A trace is `repeated TracePacket packet = 1`: the decoder reads one
 * packet frame at a time from the (decompressed) stream and unpacks it with
 * protobuf-c against the subset of Perfetto's public protos in
 * proto/perfetto_*.proto.  It keeps, per packet sequence
 * (trusted_packet_sequence_id), the incremental state: interned event
 * names, categories, debug annotation names and string values, packet
 * defaults, incremental counter values and clocks; and per track the
 * slices still open.  It reports normalized records through callbacks:
 * tracks, whole slices (begin/end pairs matched per track, legacy X events,
 * instants), counter samples and nothing of SQLite.
 *
 * Timestamps are converted to the trace clock (BOOTTIME unless a
 * ClockSnapshot names another primary_trace_clock) through the latest
 * ClockSnapshot holding both clocks; builtin clocks 1..63 and
 * sequence-scoped clocks 64..127, incremental clocks and unit multipliers
 * are supported.  A clock without such a snapshot is used as it is (and
 * said once through the warning callback).
 *
 * Memory: one packet at a time, plus the state above, bounded by
 * FMT_PERFETTO_MAX_* (beyond a bound the decoder warns and drops the new
 * state: interned strings fall back to "iid:<n>").
 *
 * Ownership: every pointer inside a record passed to a callback is borrowed
 * and valid only during that callback; copy what you keep.
 */
#ifndef NEX_FMT_PERFETTO_H
#define NEX_FMT_PERFETTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest packet accepted: a longer frame is treated as corruption. */
#define FMT_PERFETTO_MAX_PACKET (64u << 20)
/* Bytes of interned strings kept over all sequences. */
#define FMT_PERFETTO_MAX_INTERNED (64u << 20)
/* Tracks (descriptors and implied ones), sequences, open slices per
 * track, clocks. */
#define FMT_PERFETTO_MAX_TRACKS (1u << 20)
#define FMT_PERFETTO_MAX_SEQUENCES (1u << 16)
#define FMT_PERFETTO_MAX_DEPTH 4096
#define FMT_PERFETTO_MAX_CLOCKS 4096

/* The implicit trace-global track of events with no track: uuid 0. */
#define FMT_PERFETTO_DEFAULT_TRACK 0u

/* A track, from a TrackDescriptor or implied by events (the default track
 * uuid 0, legacy async ids, legacy thread descriptors).  pid/tid are the
 * track's own or inherited from its parents (-1 when none): a thread track
 * has both, a process track and its children a pid. */
struct fmt_perfetto_track {
  uint64_t uuid;
  uint64_t parent_uuid; /* 0: none */
  const char *name;     /* name or static_name; NULL when absent */
  int64_t pid, tid;
  const char *process_name; /* of the process descriptor, or NULL */
  const char *thread_name;  /* of the thread descriptor, or NULL */
  int is_process, is_thread, is_counter;
  /* counter tracks */
  const char *counter_name; /* builtin name ("thread_time",
                               "thread_instruction_count") or NULL */
  const char *unit;         /* "ns", "count", "bytes" or NULL */
  int64_t unit_multiplier;  /* >= 1 */
  int incremental;
};

/* Timestamps of track events (slices, instants, samples) are held within
 * +-FMT_PERFETTO_TS_LIMIT ns (73 years around the clock's zero): a
 * slice's end minus its start, and a start plus a duration, fit in an
 * int64.  A timestamp beyond (a bad clock, a corrupt varint) is set to the
 * limit. */
#define FMT_PERFETTO_TS_LIMIT ((int64_t)1 << 61)

/* A whole slice or instant.  Args of a begin/end pair are merged (objects
 * merged key by key, arrays appended, the end's scalars win). */
struct fmt_perfetto_slice {
  const struct fmt_perfetto_track *track; /* never NULL */
  const char *name;                       /* never NULL ("" when absent) */
  const char *cat;       /* categories joined by ","; NULL when none */
  int64_t ts_ns;         /* within +-FMT_PERFETTO_TS_LIMIT */
  int64_t dur_ns;        /* >= 0 */
  int instant;           /* TYPE_INSTANT, legacy i/I/R/n/T/p */
  int incomplete;        /* begun, never ended: dur up to the last
                            timestamp of the trace */
  int64_t pid, tid;      /* legacy pid/tid overrides, else the track's */
  const char *args_json; /* debug annotations as a JSON object, or NULL
                            (also when they come packed instead) */
  /* When the callbacks asked for it (packed_args) and every annotation of
   * the slice is a name and a scalar value (or legacy JSON that is a flat
   * array: FMT_PERFETTO_ARG_JSON), one event's (not a begin and an end
   * merged): the annotations packed, read with fmt_perfetto_arg_next;
   * args_json is then NULL.  NULL (length 0) otherwise. */
  const uint8_t *args_packed;
  size_t args_packed_len;
  const uint64_t *flow_ids; /* flows through this slice (flow_ids,
                               terminating_flow_ids, legacy bind_id and
                               v1 s/t/f flow events bound to it); an id
                               reused after its flow was terminated gets a
                               new value */
  size_t n_flow_ids;
  uint32_t sequence; /* trusted_packet_sequence_id of its begin */
  uint64_t offset;   /* byte offset of its (begin) packet frame */
};

/* One counter sample (TYPE_COUNTER, extra counter values, legacy thread
 * time and instruction count), already multiplied by the unit multiplier
 * and summed for incremental counters. */
struct fmt_perfetto_counter {
  const struct fmt_perfetto_track *track; /* the counter track (for legacy
                                             thread counters: the thread's) */
  const char *name; /* track name, builtin name, or for an unnamed
                       counter "counter <uuid>"; never NULL */
  const char *unit; /* NULL when unknown */
  int64_t ts_ns;
  double value;
  uint64_t offset;
};

struct fmt_perfetto_cb {
  void *ud;
  /* Each returns 0 to go on, non-zero to stop reading (the read then
   * returns that value).  NULL callbacks are allowed. */
  int (*track)(void *ud, const struct fmt_perfetto_track *t);
  int (*slice)(void *ud, const struct fmt_perfetto_slice *s);
  int (*counter)(void *ud, const struct fmt_perfetto_counter *c);
  /* Something that could not be used: skipped, counted, reading goes on. */
  void (*warning)(void *ud, uint64_t offset, const char *msg);
  /* Non-zero: slices whose annotations are all plain get them packed
   * (args_packed) rather than as JSON. */
  int packed_args;
};

/* A debug annotation of a slice's packed args: its name and scalar value,
 * as the JSON text would hold them (an interned name or string resolved,
 * "iid:<n>" when it is missing; a text cut at its first NUL) but not
 * escaped: a text may hold any other byte, invalid UTF-8 included. */
enum {
  FMT_PERFETTO_ARG_NULL, /* no value */
  FMT_PERFETTO_ARG_BOOL, /* u: 0 or 1 */
  FMT_PERFETTO_ARG_UINT, /* u */
  FMT_PERFETTO_ARG_INT,  /* i */
  FMT_PERFETTO_ARG_DOUBLE,
  FMT_PERFETTO_ARG_STRING,
  FMT_PERFETTO_ARG_POINTER, /* u */
  FMT_PERFETTO_ARG_JSON     /* s: legacy JSON, a flat array (or a lone value)
                               of integers and strings of printable ASCII */
};
/* The type byte of a packed argument: the type in its low bits, and
 * whether the name (the string value) is its own JSON string (no control
 * byte, no byte >= 0x80, no quote, no backslash: util_json_plain), which
 * the decoder learns once per interned string. */
#define FMT_PERFETTO_ARG_TYPE 0x3f
#define FMT_PERFETTO_ARG_KEY_PLAIN 0x40
#define FMT_PERFETTO_ARG_TEXT_PLAIN 0x80
struct fmt_perfetto_arg {
  int type;
  const char *key; /* key[0, key_len), not NUL-terminated */
  size_t key_len;
  bool key_plain, s_plain; /* key, s (a string's) are their own JSON text */
  uint64_t u;
  int64_t i;
  double d;
  const char *s; /* strings, JSON: s[0, n), not NUL-terminated */
  size_t n;
};

/* Reads the annotation at *p of packed args (before end) into *a and
 * advances *p; false at the end (or on a cut one: the decoder packs them
 * whole).  a's texts point into the packed bytes. */
bool fmt_perfetto_arg_next(const uint8_t **p, const uint8_t *end,
                           struct fmt_perfetto_arg *a);
/* Appends a's value as JSON, as args_json would hold it. */
struct sbuf;
void fmt_perfetto_arg_json(struct sbuf *b, const struct fmt_perfetto_arg *a);
/* Appends packed args p[0, n) as the JSON object args_json would be. */
void fmt_perfetto_args_json(struct sbuf *b, const uint8_t *p, size_t n);

struct fmt_perfetto_stats {
  uint64_t bytes;    /* bytes of the trace read (after gunzip) */
  uint64_t packets;  /* packet frames read */
  uint64_t events;   /* track events used */
  uint64_t unknown;  /* packets of kinds not read (ftrace, ...) */
  uint64_t skipped;  /* packets or events given to warning */
  uint64_t no_state; /* packets skipped because their sequence had
                        no valid incremental state */
};

/* Reads the trace at `path` (gzip detected by magic bytes) and calls `cb`
 * for every record.  Returns 0 when the file was read to its end (even
 * with skipped packets), a negative errno-style code when it could not be
 * opened, is empty, or its framing is corrupt (*cause then says why and
 * names the byte offset; free it; the records before were delivered), or
 * the non-zero value a callback returned.  `st` may be NULL. */
int fmt_perfetto_read(const char *path, const struct fmt_perfetto_cb *cb,
                      struct fmt_perfetto_stats *st, char **cause);

#endif
