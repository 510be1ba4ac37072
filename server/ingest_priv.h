/* ingest_priv.h -- what the ingest modules share: ingest.c (the run,
 * tracks, slices, counters, system traces, derived rows), ingest_chrome.c
 * (Chrome JSON) and ingest_device.c (NTFF/NEFF).  Not a public interface:
 * only those three files include it.
 *
 * Ownership: struct ing belongs to ingest_run(); tracks belong to it until
 * the end of the run.  Strings passed to these functions are borrowed
 * (copied when kept).
 */
#ifndef NEX_INGEST_PRIV_H
#define NEX_INGEST_PRIV_H

#include "discover.h"
#include "fmt_pb.h"
#include "ingest.h"
#include "lanes.h"
#include "store.h"
#include "util.h"

#include "common.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INGEST_WINDOW 256          /* reorder window per track */
#define INGEST_STDERR_WARNINGS 100 /* warning lines printed before summing up  \
                                    */
#define INGEST_SYNTHETIC_ID (1LL << 62)
#define INGEST_SYNTHETIC_PID (1LL << 40)
#define INGEST_DMA_BUCKETS 20000 /* DMA throughput samples per profile */

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
  int level; /* -2 undecided, -1 no LOD, else the finest LOD level */
  int64_t count, max_dur, first_ts, last_ts, seq;
  /* counters: samples held until the LOD level is decided */
  struct csample {
    int64_t ts;
    int series;
    double value;
  } * cbuf;
  int ncbuf;
};

/* A timestamp_sync_point: the same instant on both clocks. */
struct isync {
  int nc;
  int64_t exec_id, cpu, dev;
};

/* A Chrome flow endpoint waiting for its slice. */
struct iflow {
  const char *file; /* borrowed from the discovery result */
  uint64_t offset;
  int64_t flow_id, track, ts;
  char phase;
  int enclosing;
};

/* Per (track, name): count and total duration. */
struct istat {
  int64_t track, name, count, dur;
};

struct ing {
  const struct ingest_opts *o;
  struct store_writer *w;
  struct discover_result *d;
  struct ingest_stats *st;
  /* tracks by key */
  struct itrack **tracks;
  size_t tcap, tn;
  struct itrack **order; /* creation order */
  /* name statistics */
  struct istat *stats;
  size_t scap, sn;
  /* sync points of the process being read, sorted by (nc, exec_id) */
  struct isync *syncs;
  size_t nsync, capsync;
  struct iflow *flows;
  size_t nflows, capflows;
  /* Chrome pid/tid texts that are not numbers */
  char **synth_names;
  size_t nsynth;
  int64_t next_id;
  /* progress */
  const char *file; /* relative path being read */
  uint64_t bytes_before, file_pos;
  uint64_t files_done;
  int64_t t0, last_report;
  int bar_drawn;
  uint64_t warned_stderr;
  /* context of the file being read */
  const char *instance;
  int64_t pid;
  int64_t dp_id; /* device profile being read */
  uint64_t clock_missing;
  struct sbuf args;
};

/* Records a Warning row (category 'Missing Data', 'Corrupt Data' or
 * 'Clock'), prints it on stderr (the first 100) and tells the listener.
 * file may be NULL. */
void ingest_warn(struct ing *g, const char *category, const char *file,
                 uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A track description with every optional field unset. */
struct store_track ingest_desc(const char *kind, const char *domain,
                               const char *source, const char *instance);
/* The base track with this description, created on first use. */
struct itrack *ingest_track(struct ing *g, const struct store_track *d);
/* Adds a slice to a track (takes ownership of it->args and it->flows). */
void ingest_slice(struct ing *g, struct itrack *t, struct lanes_item *it);
/* Adds a counter sample; series 0 first for each sample. */
void ingest_counter(struct ing *g, struct itrack *t, int series, int64_t ts,
                    double v);
/* An event id for the store: the given one, or a synthetic one when it is
 * 0 or does not fit an int64. */
int64_t ingest_id(struct ing *g, uint64_t id);

/* Building the args JSON object of the next slice: begin, then keys and
 * values, then take (moves the text into the item; NULL when empty). */
void ingest_args_begin(struct ing *g);
void ingest_args_key(struct ing *g, const char *key);
void ingest_args_str(struct ing *g, const char *key, const char *v);
void ingest_args_i64(struct ing *g, const char *key, int64_t v);
void ingest_args_attrs(struct ing *g, Nex__Attribute **a, size_t n);
void ingest_args_take(struct ing *g, struct lanes_item *it);

/* Rows of the process and thread tables (upserts). */
void ingest_process(struct ing *g, const char *instance, int64_t pid,
                    const char *name, const char *dir);
void ingest_thread(struct ing *g, const char *instance, int64_t pid,
                   int64_t tid, const char *name);

/* Opens a capture file of --dir; on failure records the warning and
 * returns NULL.  ingest_pb_error records a fmt_pb_next() failure. */
struct fmt_pb *ingest_pb_open(struct ing *g, const char *rel,
                              const char *magic);
void ingest_pb_error(struct ing *g, const char *rel, int rc, uint64_t off);

/* The profile's display name: the base name of --dir (malloc'd). */
char *ingest_profile_base(const char *dir);

/* ingest_chrome.c: reads one Chrome trace; instance/pid name the process
 * it belongs to, or NULL/-1 for a standalone trace (grouped by rank or
 * file name).  bind_flows binds the flow endpoints once all slices
 * exist. */
void ingest_chrome_read(struct ing *g, const char *rel, const char *instance,
                        int64_t pid);
void ingest_chrome_bind_flows(struct ing *g);

/* ingest_device.c: reads one NTFF (and its NEFF header) as a device
 * profile of the current process (g->instance, g->pid). */
void ingest_device_read(struct ing *g, const struct discover_device *dev,
                        const char *profile_base);

#endif
