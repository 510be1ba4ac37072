/* ingest_priv.h -- what the ingest modules share: the core (ingest.c:
 * tracks, slices, counters, args, warnings, progress), the run
 * (ingest_run.c) and the readers: ingest_system.c (Neuron system traces
 * and the derived rows), ingest_chrome.c (Chrome JSON and its flow
 * binding), ingest_device.c (NTFF/NEFF), ingest_vjson.c (vendor JSON
 * exports).  Not a public interface: only those files (and their unit
 * tests) include it.
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
#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INGEST_LOD_MIN 256 /* fewer slices or samples: no LOD rows */
#define INGEST_SORT_BUDGET (64u << 20) /* slices held for their sort */
#define INGEST_STDERR_WARNINGS                                                 \
  100 /* warning lines printed before summing up                               \
       */
#define INGEST_FILE_WARNINGS 1000 /* Warning rows of one file, then a sum */
#define INGEST_SYNTHETIC_ID (1LL << 62)
#define INGEST_RATE_BUCKETS 20000 /* samples of a bandwidth counter */

enum { TRACK_SLICES, TRACK_COUNTER };

struct ingest_chrome_bind_state;
struct ing;
struct itrack;

/* What a reader keeps per track (the Chrome flow binding: the history of
 * the slices it binds to): told of every slice the track places, in
 * (ts, lane) order within a drain (lanes.h), and freed with the track. */
struct ingest_hook {
  void (*placed)(struct ing *g, struct itrack *t, int64_t lane,
                 const struct lanes_item *it);
  void (*free)(void *state);
};

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
  int64_t count, max_dur, first_ts, last_ts, seq;
  int last_series; /* counters: the series written last (in sample seq) */
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

/* Per (track, name): count and total duration. */
struct istat {
  int64_t track, name, count, dur;
};

/* Totals of the device profile being read; exec_id/exec_index: its first
 * execution that names an exec_id (exec_id 0: none yet). */
struct ingest_device_totals {
  int pcore, nc;
  int64_t instructions, dmas, first, last;
  int64_t inst_deps;               /* entries of the inst_dep_ids read */
  double flops, transpose_flops, hbm; /* transpose: of TRANSPOSE opcodes */
  int64_t exec_id, exec_index;
  size_t first_track; /* tracks created since then may be its own */
};

/* Where a device profile's first execution ran on the system clock: the
 * cpu time of its timestamp_sync_point (finds its nc_exec_running fast). */
struct idevhint {
  int64_t dp_id, cpu_ts;
};

struct ing {
  const struct ingest_opts *o;
  struct store_writer *w;
  struct discover_result *d;
  struct ingest_stats *st;
  /* tracks by key */
  struct itrack **tracks;
  size_t tcap, tn;
  struct itrack **order;    /* creation order */
  struct lanes_pool *lanes; /* the sorters' memory budget and spill file */
  int failed; /* a negative errno that fails the ingest (a spill file could
                 not be read back), or 0 */
  /* name statistics */
  struct istat *stats;
  size_t scap, sn;
  /* sync points of the process being read, sorted by (nc, exec_id) */
  struct isync *syncs;
  size_t nsync, capsync;
  /* Chrome flow endpoints: how many were read, and where they wait for
   * the binding (ingest_chrome.c; NULL before the first Chrome trace and
   * after the binding) */
  size_t nflows;
  struct ingest_chrome_bind_state *chrome;
  const char **chrome_files; /* borrowed from the discovery */
  size_t nchrome_files;
  /* Chrome pid/tid texts that are not numbers: text k is -(k + 1) */
  char **synth_names;
  size_t nsynth;
  /* standalone Chrome traces: the group (instance) each was read as */
  struct ingest_chrome_group {
    char *name;
    const char *rel; /* borrowed from the discovery */
  } * groups;
  size_t ngroups;
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
  /* context of the file being read */
  const char *instance;
  int64_t pid;
  int64_t dp_id; /* device profile being read */
  struct ingest_device_totals dev;
  struct idevhint *hints;
  size_t nhints;
  uint64_t clock_missing;
  struct sbuf args;
  /* JSON files read as vendor exports (borrowed from the discovery) */
  const char **vjson;
  int n_vjson;
};

/* Records a Warning row (category 'Missing Data', 'Corrupt Data' or
 * 'Clock', a literal), prints it on stderr (the first 100) and tells the
 * listener.  file may be NULL.  Only the first INGEST_FILE_WARNINGS of a
 * file (or of no file) are recorded; the rest are counted for the summary
 * row of ingest_warn_flush(). */
void ingest_warn(struct ing *g, const char *category, const char *file,
                 uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Records one Warning row per file that had more than INGEST_FILE_WARNINGS
 * warnings (their count, at the offset of the first not recorded) and
 * frees the counts.  Called once at the end of the run. */
void ingest_warn_flush(struct ing *g);

/* A track description with every optional field unset. */
struct store_track ingest_desc(const char *kind, const char *domain,
                               const char *source, const char *instance);
/* The base track with this description, created on first use. */
struct itrack *ingest_track(struct ing *g, const struct store_track *d);
/* Gives a track a reader's hook and state (owned by the track from then:
 * freed by hook->free). */
void ingest_track_hook(struct itrack *t, const struct ingest_hook *hook,
                       void *state);
/* Adds a slice to a track (takes ownership of it->args and it->flows). */
void ingest_slice(struct ing *g, struct itrack *t, struct lanes_item *it);
/* Reports progress (at most every 100 ms unless force): the bar or lines
 * on stderr and the listener's callback. */
void ingest_progress(struct ing *g, bool force);
/* Writes the name statistics gathered so far and empties the table. */
void ingest_stats_flush(struct ing *g);
/* Places the slices waiting in the sorters of the current process's own
 * tracks created since index `from` (ingest_run.c: the process was read). */
void ingest_drain_tracks(struct ing *g, size_t from);
/* Finishes the tracks created since index `from` (places what waits,
 * flushes the LOD, writes the track statistics); returns the new end. */
size_t ingest_finish_tracks(struct ing *g, size_t from);
/* Frees every track (after the run). */
void ingest_tracks_free(struct ing *g);
/* Places the slices waiting in the sorters of the device profile dp_id's
 * tracks created since index `from` (it was read to the end). */
void ingest_drain_device(struct ing *g, size_t from, int64_t dp_id);
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
/* A list of ids as a JSON array of signed 64-bit numbers (their bits: the
 * vendor's ids are int64); nothing when n is 0. */
void ingest_args_ids(struct ing *g, const char *key, const uint64_t *ids,
                     size_t n);
void ingest_args_take(struct ing *g, struct lanes_item *it);

/* A row of the process table (upsert). */
void ingest_process(struct ing *g, const char *instance, int64_t pid,
                    const char *name, const char *dir);

/* ingest_system.c: the system traces of a process and the derived rows.
 *
 * Opens a capture file of --dir (system trace or NTFF); on failure records
 * the warning and returns NULL (close with fmt_pb_close).
 * ingest_system_pb_error records a fmt_pb_next() failure. */
struct fmt_pb *ingest_system_pb_open(struct ing *g, const char *rel,
                                     const char *magic);
void ingest_system_pb_error(struct ing *g, const char *rel, int rc,
                            uint64_t off);
/* Reads one file of the current process (g->instance, g->pid): ntrace.pb
 * (its timestamp_sync_points first, then its events and HBM samples),
 * cpu_util.pb, host_mem.pb.  Problems become Warning rows. */
void ingest_system_ntrace(struct ing *g, const char *rel);
void ingest_system_cpu_util(struct ing *g, const char *rel);
void ingest_system_host_mem(struct ing *g, const char *rel);
/* Reads p's trace_info.pb: sets *instance (malloc'd, the caller frees it)
 * and *pid, writes the SystemProfileMetadata row.  Returns false if the
 * instance is filtered out (no row then). */
bool ingest_system_trace_info(struct ing *g, const struct discover_process *p,
                              char **instance, int64_t *pid);
/* The rows derived from what is stored, once every file was read:
 * transfer bandwidth and DMA throughput counters, device time offsets. */
void ingest_system_derived(struct ing *g);

/* One system event of the current process (g->instance, g->pid).
 * device_clock: hardware events carry the raw device clock and are
 * aligned through the timestamp_sync_points of g->syncs; else their
 * timestamps are on the CPU clock already (vendor exports). */
void ingest_system_event(struct ing *g, const Nex__SystemEvent *e,
                         bool device_clock);
/* Samples of the current instance (g->instance). */
void ingest_system_hbm(struct ing *g, const Nex__HbmUsage *h);
void ingest_system_cpu_sample(struct ing *g, const Nex__CpuUsage *c);
void ingest_system_mem_sample(struct ing *g, const Nex__HostMemUsage *m);
/* A SystemProfileMetadata row (ti may be NULL); file names the source of
 * the dropped-events warning. */
void ingest_system_metadata(struct ing *g, const char *instance, int64_t pid,
                            const Nex__TraceInfo *ti, const char *dir,
                            const char *file);

/* Progress accounting around the reading of one file of --dir. */
void ingest_file_begin(struct ing *g, const char *rel);
void ingest_file_end(struct ing *g, uint64_t size);

/* The profile's display name: the base name of --dir (malloc'd). */
char *ingest_profile_base(const char *dir);

/* ingest_chrome.c: reads one Chrome trace; instance/pid name the process
 * it belongs to, or NULL/-1 for a standalone trace (grouped by rank or
 * file name). */
void ingest_chrome_read(struct ing *g, const char *rel, const char *instance,
                        int64_t pid);

/* ingest_chrome_bind.c: the flow endpoints of the Chrome traces, bound to
 * slices once all slices exist.  What the binding needs is kept per track
 * in bounded memory: beyond a budget it goes to an unlinked spill file
 * beside the store.
 *
 * A Chrome file begins (returns its number; rel is borrowed until the
 * binding) and ends (max_offset: the largest offset of its endpoints). */
uint32_t ingest_chrome_bind_file(struct ing *g, const char *rel);
void ingest_chrome_bind_file_end(struct ing *g, uint64_t max_offset);
/* A track that has flow endpoints or may have slices they bind to: it
 * keeps the history of its slices from now on. */
void ingest_chrome_bind_track(struct itrack *t);
/* An endpoint on track t (made a binding track first): phase 's', 't' or
 * 'f', enclosing for an 'f' with bp:"e". */
void ingest_chrome_bind_endpoint(struct ing *g, struct itrack *t, uint32_t file,
                                 uint64_t offset, int64_t ts, int64_t flow_id,
                                 char phase, bool enclosing);
/* Binds the endpoints, writes the flows (or their warnings) in file order
 * and frees g->chrome.  Returns 0, or a negative errno when the spill file
 * or the store could not be read back (the flows are then incomplete: the
 * ingest fails). */
int ingest_chrome_bind_flows(struct ing *g);

/* ingest_perfetto.c: reads one Perfetto trace of --dir as a standalone
 * trace (grouped by its file name). */
void ingest_perfetto_read(struct ing *g, const char *rel);

/* ingest_perfetto_neuron.c: a Perfetto trace written by the Neuron tools
 * (recognised by its naming and debug arguments) into the tables of a
 * native capture; a system export also reads the device exports beside
 * it.  Returns false, having read nothing, for any other trace. */
bool ingest_perfetto_neuron_read(struct ing *g, const char *rel);

/* ingest_device.c: reads one NTFF (and its NEFF header) as a device
 * profile of the current process (g->instance, g->pid). */
void ingest_device_read(struct ing *g, const struct discover_device *dev,
                        const char *profile_base);

/* A device profile from any source: begin (a DeviceProfileList row, and
 * Metadata when there is a header), records, end (totals).  Strings are
 * borrowed; NULL ones are stored as NULL; session < 0: model mode. */
struct ingest_device_info {
  const char *name, *ntff_file, *neff_file, *model_name, *model_id;
  int nc, pcore;
  int64_t session;
  const Nex__NtffHeader *header; /* may be NULL */
};
void ingest_device_begin(struct ing *g, const struct ingest_device_info *d);
void ingest_device_record(struct ing *g, const Nex__NtffRecord *rec);
void ingest_device_end(struct ing *g);
/* After every device profile: indexes the instruction dependencies by
 * dependency (one sort rather than an index grown row by row). */
void ingest_device_finish(struct ing *g);

/* The cpu time of the timestamp_sync_point of (nc, exec_id) of the
 * process being read; 0 when it has none. */
int64_t ingest_system_sync_cpu(struct ing *g, int nc, int64_t exec_id);

/* ingest_vjson.c: the vendor's JSON exports (system_profile.json and the
 * device JSON), through the same functions as the capture files.  Reads
 * every system export of the list first (their device_profile_list names
 * the instance, process and NeuronCore of each device JSON), then the
 * device ones.  Returns how many of the files were vendor exports; the
 * others are left for the Chrome reader and flagged in *handled. */
int ingest_vjson_read_all(struct ing *g, char **rels, int n, bool *handled);
/* ingest_nrtjson.c: the runtime's JSON event dumps among the files not
 * handled yet (recognised by content), each as the system trace of its
 * process folder (or of the profile); flags them in *handled and returns
 * how many. */
int ingest_nrtjson_read_all(struct ing *g, char **rels, int n, bool *handled);

#endif
