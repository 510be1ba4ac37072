/* ingest_core.h -- the sink's own structs (ingest.c) and what the run
 * (ingest_run.c) does with them beyond the sink API of ingest_sink.h.
 * Readers never include it: for them struct ing and struct itrack are
 * opaque (tests/integration/layers_test.py checks it).
 *
 * Ownership: ingest_sink_open() hands the run a sink that
 * ingest_sink_close() frees, with its tracks, the readers' states and the
 * warnings' counts.
 */
#ifndef NEX_INGEST_CORE_H
#define NEX_INGEST_CORE_H

#include "ingest_sink.h"

#define INGEST_LOD_MIN 256 /* fewer slices or samples: no LOD rows */
#define INGEST_STDERR_WARNINGS 100     /* warning lines printed, then a sum */
#define INGEST_FILE_WARNINGS 1000 /* Warning rows of one file, then a sum */
#define INGEST_SYNTHETIC_ID (1LL << 62)
#define INGEST_STATES 8 /* readers with a per-run state */

enum { TRACK_SLICES, TRACK_COUNTER };

/* A base track being written. */
struct itrack {
  struct store_track desc; /* strings owned */
  uint64_t hash;
  int64_t id;
  int kind;
  struct lanes *lanes;
  struct lod *lod;
  struct lod_counter *clod;
  const struct ingest_hook *hook; /* a reader's per-track state, or NULL */
  void *hook_state;
  int level; /* -2 undecided, -1 no LOD, else the finest LOD level */
  int64_t count, max_dur, first_ts, last_ts;
  int64_t samples; /* counters: samples numbered so far (their seq) */
  int64_t nan;     /* counters: samples left out, not a number */
  int last_series; /* counters: the series written last (in that seq) */
  /* counters: samples held until the LOD level is decided */
  struct csample {
    int64_t ts;
    int series;
    double value;
  } * cbuf;
  int ncbuf;
};

/* Per (track, name): count and total duration. */
struct istat {
  int64_t track, name, count, dur;
};

/* Slots of the recently found tracks (a power of two). */
#define INGEST_RECENT 64

struct ing {
  const struct ingest_opts *o;
  struct store_writer *w;
  const struct discover_result *d;
  struct ingest_stats *st;
  /* tracks by key */
  struct itrack **tracks;
  size_t tcap, tn;
  /* the track each recent description found, in the slot of its hash
   * (ingest_track_recent_slot; checked against the whole description) */
  struct itrack *recent[INGEST_RECENT];
  struct itrack **order;    /* creation order */
  struct lanes_pool *lanes; /* the sorters' memory budget and spill file */
  struct ingest_flows *ends; /* every flow endpoint, for the flow blocks */
  int failed; /* a negative errno that fails the ingest (a spill file could
                 not be read back), or 0 */
  /* name statistics */
  struct istat *stats;
  size_t scap, sn;
  int64_t next_id;
  /* progress */
  const char *file; /* relative path being read */
  uint64_t bytes_before, file_pos;
  uint64_t files_done;
  int64_t t0, last_report;
  int bar_drawn;
  uint64_t warned_stderr;
  /* warnings per file (ingest_warn): open addressing, file NULL when free */
  struct ingest_warn_file {
    char *file;             /* "" for the warnings of no file */
    uint64_t n, first_left; /* how many; the offset of the first not kept */
    const char *category;   /* of the first not kept (a literal) */
  } * wfiles;
  size_t nwfiles, capwfiles;
  /* the current process */
  char *instance;
  int64_t pid;
  struct sbuf args;
  uint64_t *flows; /* ingest_item_flows(): flows_cap ids */
  size_t flows_cap;
  /* the readers' per-run states (ingest_state) */
  struct ingest_state {
    const void *key;
    void *state;
    void (*free)(void *state);
  } states[INGEST_STATES];
};

/* A sink writing to w (its sorters' spill file beside o->db_path) for the
 * run of o over discovery d, counting into st (all borrowed until
 * ingest_sink_close); t0: when the run began (util_now_ns). */
struct ing *ingest_sink_open(const struct ingest_opts *o,
                             struct store_writer *w,
                             const struct discover_result *d,
                             struct ingest_stats *st, int64_t t0);
/* Records the summary Warning rows of files with too many warnings, frees
 * the tracks, the readers' states and the sink (NULL allowed). */
void ingest_sink_close(struct ing *g);

/* Frees every reader's state (ingest_sink_close). */
void ingest_states_free(struct ing *g);

/* Reports progress (at most every 100 ms unless force): the bar or lines
 * on stderr and the listener's callback. */
void ingest_progress(struct ing *g, bool force);
/* Writes the name statistics gathered so far and empties the table. */
void ingest_stats_flush(struct ing *g);
/* Writes the flow table: every endpoint of ingest_flow_end(), in its key
 * order (ingest_flows.h).  Returns 0, or the negative errno of a spill
 * file that could not be read back. */
int ingest_flows_flush(struct ing *g);
/* Places the slices waiting in the sorters of the current process's own
 * tracks created since index `from` (the process was read). */
void ingest_drain_tracks(struct ing *g, size_t from);
/* Finishes the tracks created since index `from` (places what waits,
 * flushes the LOD, writes the track statistics); returns the new end. */
size_t ingest_finish_tracks(struct ing *g, size_t from);

#endif
