/* ingest_sink.h -- what a reader of server/ingest/ writes through: the
 * sink.  A reader (ingest_system.c, ingest_chrome.c, ingest_chrome_bind.c,
 * ingest_device.c, ingest_vjson.c, ingest_nrtjson.c, ingest_perfetto.c,
 * ingest_perfetto_neuron.c) sees `struct ing` and `struct itrack` only as
 * opaque handles and calls these functions: base tracks, slices, counter
 * samples, the args JSON of the next slice, warnings, progress, the
 * current context (instance and pid), ids, the process and thread tables,
 * and its own per-run state.  ingest.c implements it; ingest_core.h (the
 * core's own header) defines the structs.  Not a public interface: only
 * server/ingest/ and its unit tests include it.
 *
 * Ownership: struct ing belongs to ingest_run(); tracks belong to it until
 * the end of the run.  Strings passed to these functions are borrowed
 * (copied when kept); strings returned are borrowed from the sink.
 */
#ifndef NEX_INGEST_SINK_H
#define NEX_INGEST_SINK_H

#include "discover.h"
#include "ingest.h"
#include "lanes.h"
#include "store.h"
#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ing;
struct itrack;

/* ------------------------------------------------------------ run */

/* The options of the run (borrowed for the run). */
const struct ingest_opts *ingest_opts(const struct ing *g);
/* The discovery of --dir (borrowed for the run). */
const struct discover_result *ingest_discovery(const struct ing *g);
/* The path of rel, a file of --dir (malloc'd, the caller frees it). */
char *ingest_path(const struct ing *g, const char *rel);
/* Counts n records or files that could not be used (ingest_stats). */
void ingest_skipped(struct ing *g, uint64_t n);
/* The profile's display name: the base name of --dir (malloc'd, the
 * caller frees it). */
char *ingest_profile_base(const char *dir);

/* ------------------------------------------------------------ context */

/* Makes (instance, pid) the current process: the one the system and
 * device records read next belong to.  instance is copied; NULL and -1:
 * none. */
void ingest_context_set(struct ing *g, const char *instance, int64_t pid);
/* The current process's instance (NULL when none; valid until the next
 * ingest_context_set) and pid (-1 when none). */
const char *ingest_context_instance(const struct ing *g);
int64_t ingest_context_pid(const struct ing *g);
/* Whether the instance filter keeps the current process's instance (there
 * is a current process). */
bool ingest_context_kept(const struct ing *g);

/* ------------------------------------------------------------ per-run state
 * A reader keeps what it needs across files (sync points, Chrome groups,
 * the flow binding) in a state of its own, registered under a key (the
 * address of a static object of the reader): the core frees it with the
 * reader's function at the end of the run and knows nothing else of it. */

/* The state registered under key, or NULL. */
void *ingest_state(const struct ing *g, const void *key);
/* The state under key, created on first use: size bytes of zeros, freed
 * by free_fn (NULL: free()) at the end of the run. */
void *ingest_state_make(struct ing *g, const void *key, size_t size,
                        void (*free_fn)(void *state));
/* Registers state under key (freed by free_fn, which may be NULL, at the
 * end of the run); the state registered before under key, if any, is freed
 * first.  state NULL just frees what key held. */
void ingest_state_set(struct ing *g, const void *key, void *state,
                      void (*free_fn)(void *state));

/* ------------------------------------------------------------ warnings */

/* Records a Warning row (category 'Missing Data', 'Corrupt Data' or
 * 'Clock', a literal), prints it on stderr (the first 100) and tells the
 * listener.  file may be NULL.  Only the first 1000 of a file (or of no
 * file) are recorded; the rest are counted for one summary row at the end
 * of the run. */
void ingest_warn(struct ing *g, const char *category, const char *file,
                 uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ------------------------------------------------------------ progress */

/* The file of --dir being read begins (rel borrowed until its end) and
 * ends (size: its bytes); between them, ingest_file_pos() says how far the
 * reader is in it (bytes). */
void ingest_file_begin(struct ing *g, const char *rel);
void ingest_file_pos(struct ing *g, uint64_t pos);
void ingest_file_end(struct ing *g, uint64_t size);

/* The reader is at byte pos of the current file (ingest_file_pos) with an
 * event named name: returns whether the event filter keeps it. */
bool ingest_keep_event(struct ing *g, uint64_t pos, const char *name);

/* ------------------------------------------------------------ tracks */

/* A track description with every optional field unset. */
struct store_track ingest_desc(const char *kind, const char *domain,
                               const char *source, const char *instance);
/* The base track with this description, created on first use; its slices
 * of equal start and duration are placed in the order they were added. */
struct itrack *ingest_track(struct ing *g, const struct store_track *d);
/* The same with that order chosen at creation (lanes.h): LANES_KEY_ORDER
 * orders them by the caller's lanes_item.order.  An existing track keeps
 * the order it was created with. */
struct itrack *ingest_track_ordered(struct ing *g, const struct store_track *d,
                                    enum lanes_order order);
/* A track's store id, and how many slices or samples it was given so far. */
int64_t ingest_track_id(const struct itrack *t);
int64_t ingest_track_count(const struct itrack *t);
/* The span of what it was given so far: the first start, the last end
 * (of a slice; the last time of a sample). */
void ingest_track_span(const struct itrack *t, int64_t *first, int64_t *last);
/* Its description (strings owned by the track). */
const struct store_track *ingest_track_desc(const struct itrack *t);
/* The tracks created so far, in creation order: ingest_track_at(g, i) for
 * i < ingest_track_n(g). */
size_t ingest_track_n(const struct ing *g);
struct itrack *ingest_track_at(const struct ing *g, size_t i);

/* What a reader keeps per track (the Chrome flow binding: the history of
 * the slices it binds to): told of every slice the track places, in
 * (ts, lane) order within a drain (lanes.h), and freed with the track. */
struct ingest_hook {
  void (*placed)(struct ing *g, struct itrack *t, int64_t lane,
                 const struct lanes_item *it);
  /* every slice read is placed (the reading is over); NULL: nothing */
  void (*finished)(struct ing *g, struct itrack *t);
  void (*free)(void *state);
};
/* Gives a track a reader's hook and state (owned by the track from then:
 * freed by hook->free). */
void ingest_track_hook(struct itrack *t, const struct ingest_hook *hook,
                       void *state);
/* Whether track t has a hook. */
bool ingest_track_hooked(const struct itrack *t);
/* The state of track t if it has this hook, else NULL. */
void *ingest_track_hook_state(const struct itrack *t,
                              const struct ingest_hook *hook);

/* Places the slices waiting in the sorters of the device profile dp_id's
 * tracks created since index `from` (it was read to the end). */
void ingest_drain_device(struct ing *g, size_t from, int64_t dp_id);

/* ------------------------------------------------------------ slices */

/* Adds a slice to a track (a copy of it->args and it->flows: the caller
 * keeps its own; a negative duration becomes 0). */
void ingest_slice(struct ing *g, struct itrack *t, struct lanes_item *it);

/* A slice of a trace format (Chrome JSON, Perfetto): cat and the flags
 * first in its args, then the members of args_json spliced in beside them
 * when it is a JSON object, else args_json as "args"; its flow ids made
 * int64; a synthetic id. */
struct ingest_trace_slice {
  int64_t ts, dur;
  const char *name, *cat, *args_json; /* cat, args_json may be NULL */
  bool instant, incomplete;
  const uint64_t *flow_ids;
  size_t n_flow_ids;
  uint64_t order; /* the key of a LANES_KEY_ORDER track */
};
void ingest_trace_slice(struct ing *g, struct itrack *t,
                        const struct ingest_trace_slice *s);

/* ------------------------------------------------------------ counters */

/* Adds a counter sample; series 0 first for each sample.  A value that is
 * not a number is left out and counted as skipped (one Warning per
 * track). */
void ingest_counter(struct ing *g, struct itrack *t, int series, int64_t ts,
                    double v);

/* ------------------------------------------------------------ args JSON */

/* The buffer the args JSON object of the next slice is built in, with
 * argtext.h's builders (argtext_begin, members, then ingest_args_take). */
struct sbuf *ingest_args_text(struct ing *g);
/* Closes the object and points the item at its text, NULL when it has no
 * member: the text stays until the next argtext_begin on the buffer, and
 * ingest_slice() copies it. */
void ingest_args_take(struct ing *g, struct lanes_item *it);
/* Points the item at the n flow ids ids[] as the store keeps them (int64:
 * the top bit dropped), in g's memory until the next call (ingest_slice()
 * copies them). */
void ingest_item_flows(struct ing *g, struct lanes_item *it,
                       const uint64_t *ids, size_t n);

/* ------------------------------------------------------------ store */

/* An event id for the store: the given one, or a synthetic one when it is
 * 0 or does not fit an int64. */
int64_t ingest_id(struct ing *g, uint64_t id);
/* The id of a string in the store's string table. */
int64_t ingest_intern(struct ing *g, const char *s);
/* The event (track, lane, ts, id) is an end of flow flow_id: kept for the
 * flow table, which is written in its key order at the end of the ingest
 * (the slice's own block and slice_flow are the caller's). */
void ingest_flow_end(struct ing *g, int64_t flow_id, int64_t track,
                     int64_t lane, int64_t ts, int64_t id);
/* The store being written, for a reader's metadata rows and queries
 * (store_writer_exec, store_writer_query, store_writer_flow); slices,
 * counters and tracks go through the functions above. */
struct store_writer *ingest_writer(struct ing *g);

/* A row of the process table (upsert). */
void ingest_process(struct ing *g, const char *instance, int64_t pid,
                    const char *name, const char *dir);
/* The process and thread rows of a trace format's process (chrome = 1,
 * named when it has a name) or thread (named = 1).  A name (NULL: none)
 * fills a missing one, or with rename replaces the stored one (a process
 * then stays named once it was). */
void ingest_trace_process(struct ing *g, const char *instance, int64_t pid,
                          const char *name, bool rename);
void ingest_trace_thread(struct ing *g, const char *instance, int64_t pid,
                         int64_t tid, const char *name, bool rename);

#endif
