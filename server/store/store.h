/* store.h -- the SQLite store: schema, bulk writer, read-only pool.
 *
 * Writer: one thread builds a new store in "<path>.tmp" (schema.sql,
 * journal_mode=OFF, one transaction) and store_writer_finish() renames it to
 * <path> when complete, so no half-written store is ever opened by readers.
 * Readers: a pool of read-only connections (SQLITE_OPEN_READONLY |
 * SQLITE_OPEN_NOMUTEX), each used by one thread at a time.
 *
 * Ownership: store_pool_open() and store_writer_open() hand the caller an
 * object that it closes (store_pool_close()) or finishes
 * (store_writer_finish()); every other pointer returned is borrowed, for as
 * long as each function says; *cause strings are malloc'd, the caller frees
 * them.
 */
#ifndef NEX_STORE_H
#define NEX_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* ---- read-only pool ---- */
struct store_pool;

/* Opens `n` read-only connections to the complete store at `path`, each
 * with the SQL function regexp(pattern, text) (POSIX extended, case-blind)
 * behind `text REGEXP pattern`.  Returns 0 or a negative errno-style code with
 * *cause set. */
int store_pool_open(const char *path, int n, struct store_pool **out,
                    char **cause);
/* Takes a connection, waiting while all are in use.  Never NULL. */
sqlite3 *store_pool_get(struct store_pool *p);
/* Takes a connection, waiting at most wait_ms while all are in use (< 0:
 * without end).  Returns it, or NULL when none was given back in time. */
sqlite3 *store_pool_get_wait(struct store_pool *p, int wait_ms);
/* Gives a connection back (statements reset by the caller). */
void store_pool_put(struct store_pool *p, sqlite3 *db);
/* Path of the store file (borrowed). */
const char *store_pool_path(const struct store_pool *p);
/* The number of connections of p. */
int store_pool_size(const struct store_pool *p);
/* Closes every connection; all must have been put back.  NULL allowed. */
void store_pool_close(struct store_pool *p);

/* A store's generation: 16 hex digits drawn at random by every ingest
 * (store_info key "generation"), so ids of one store (tracks, events) are
 * known to be stale in another; "0" for a store without one. */
#define STORE_GEN_LEN 16
/* Writes db's generation (a NUL-terminated string) to out. */
void store_generation(sqlite3 *db, char out[STORE_GEN_LEN + 1]);
/* A new store's generation: 64 random bits (the clock and the process id
 * hashed when the system gives none). */
uint64_t store_generation_new(void);
/* p's generation (borrowed: valid until store_pool_close(p)). */
const char *store_pool_generation(const struct store_pool *p);

/* The store's interned strings (table str) in memory. */
struct store_names;
/* p's strings, read with db (a connection to the same store that the
 * caller holds) on the first call and shared by every user of p until
 * store_pool_close(p).  NULL when the table is too big to keep
 * (STORE_NAMES_MAX_BYTES) or could not be read, or p is NULL (db is no
 * pool's): read str then. */
const struct store_names *store_pool_names(struct store_pool *p, sqlite3 *db);
/* The string of str id `id` (borrowed), or NULL for an unknown id. */
const char *store_names_get(const struct store_names *n, int64_t id);
#define STORE_NAMES_MAX_BYTES (32 << 20)

/* The pool's memo: figures that cost a full read of the store (the engines'
 * active time of a device profile), kept as text under a key.  A store
 * never changes, so they stay valid until the pool is closed, which frees
 * them: one set per store, not one per store ever opened.  db is any
 * connection of the pool, held by the caller. */
/* The text kept under key in db's pool (borrowed: valid while the caller
 * holds db), or NULL when none is kept or db is not a pool's connection. */
const char *store_pool_memo_get(sqlite3 *db, const char *key);
/* Keeps a copy of text under key in db's pool, unless a text is kept there
 * already (the first one stays); nothing when db is not a pool's. */
void store_pool_memo_put(sqlite3 *db, const char *key, const char *text);

/* ---- writer (the ingest thread only) ---- */
struct store_writer;

/* A base track, as in schema.sql's track table.  Negative ints and NULL
 * strings are stored as SQL NULL (except pid/tid, stored as given when
 * has_pid/has_tid are set). */
struct store_track {
  const char *kind, *domain, *source, *instance_id;
  int64_t pid, tid;
  int has_pid, has_tid;
  int nc_idx, pcore_idx, worker_gid;
  int64_t stream_id; /* < 0: NULL */
  int device_idx, hbm_idx;
  const char *cpu_id, *label;
  int64_t device_profile_id; /* <= 0: NULL */
};

/* What ingest learned about a track once all its rows were written. */
struct store_track_stats {
  int64_t lanes, max_dur, event_count, first_ts, last_ts;
  int lod_min_level; /* < 0: NULL */
};

/* Creates "<path>.tmp" (replacing a stale one), applies the schema and
 * begins the one transaction.  Returns 0 or a negative errno-style code
 * with *cause set. */
int store_writer_open(const char *path, struct store_writer **out,
                      char **cause);

/* Interns a string; returns its str id (> 0). */
int64_t store_writer_intern(struct store_writer *w, const char *s);

/* Inserts a base track; returns its id (> 0). */
int64_t store_writer_track(struct store_writer *w, const struct store_track *t);
/* Sets the statistics of track `track` once all its rows were written. */
void store_writer_track_stats(struct store_writer *w, int64_t track,
                              const struct store_track_stats *st);

/* Timeline rows, queued for the writer thread (errors surface at
 * store_writer_finish()).  store_writer_slice_flows: `args` (may be NULL)
 * is a JSON object text of args_len bytes, copied; the slice's n_flows
 * flow ids are kept in its block (the `flows` column of slice; the flow
 * table's rows are the caller's: store_writer_flow); store_writer_slice:
 * one without flows; store_writer_counter: one sample of series
 * `series`. */
void store_writer_slice_flows(struct store_writer *w, int64_t track,
                              int64_t lane, int64_t ts, int64_t id, int64_t dur,
                              int64_t name, int64_t grp, const char *args,
                              size_t args_len, const int64_t *flows,
                              int n_flows);
static inline void store_writer_slice(struct store_writer *w, int64_t track,
                                      int64_t lane, int64_t ts, int64_t id,
                                      int64_t dur, int64_t name, int64_t grp,
                                      const char *args, size_t args_len) {
  store_writer_slice_flows(w, track, lane, ts, id, dur, name, grp, args,
                           args_len, NULL, 0);
}
void store_writer_counter(struct store_writer *w, int64_t track, int series,
                          int64_t ts, int64_t seq, double value);
/* A block of n packed LOD rows (see lod.h) whose first row is in `bucket`
 * and whose rows stand for `count` slices; `rows` (len bytes) is copied. */
void store_writer_slice_lod(struct store_writer *w, int64_t track, int level,
                            int64_t lane, int64_t bucket, int64_t n,
                            int64_t count, const void *rows, size_t len);
/* One LOD point of a counter series: bucket `bucket` of `level`. */
void store_writer_counter_lod(struct store_writer *w, int64_t track, int series,
                              int level, int64_t bucket, int64_t ts, double min,
                              double max, double last, int64_t count);
/* The tables of store_writer_flow(): flow (the flow blocks, keyed by
 * flow id) and slice_flow (keyed by slice: the flows not in the slice's
 * block, and those of a slice of two flows or more; schema.sql). */
enum { STORE_FLOW_BY_ID = 1, STORE_FLOW_BY_SLICE = 2 };
/* The event (track, lane, ts, id) is an end of flow `flow_id`: a row in
 * each table of `tables` (a row given twice is kept once).  The ends of
 * STORE_FLOW_BY_ID come in (flow_id, track, lane, ts, id) order
 * (store_flows.h: one out of order fails the store); a slice_flow row that
 * comes in its key order is appended to the B-tree, so writers that can
 * give it that order do. */
void store_writer_flow(struct store_writer *w, unsigned tables, int64_t flow_id,
                       int64_t track, int64_t lane, int64_t ts, int64_t id);
/* Adds count events of name `name` lasting total_dur ns to the track's
 * statistics (rows for one (name, track) add up). */
void store_writer_name_stat(struct store_writer *w, int64_t name, int64_t track,
                            int64_t count, int64_t total_dur);
/* Queues one encoded dependency block (store_deps.h's emit, the ud being
 * w): in inst_dep_rev_block when rev (seen from the dependencies), else in
 * inst_dep_block (from the dependents).  The blocks of a (track, lane)
 * come in key order. */
void store_writer_dep_block(struct store_writer *w, int rev, int64_t track,
                            int64_t lane, int64_t ts0, int64_t n,
                            const unsigned char *data, size_t len);

/* Small tables.  Each takes a statement text with ? placeholders and a
 * type string: one char per parameter, 'i' int64, 'I' int64 or NULL when
 * negative, 'r' double, 't' text (NULL pointer -> NULL), then the values
 * (int64_t, double, const char *).  Returns the new rowid, or -EIO when the
 * writer has failed (a statement that does not prepare or run, a write
 * that fails: this call or an earlier one).  Used for process, thread,
 * SystemProfileMetadata, DeviceProfileList, ExecutionInfo, Metadata,
 * NeffHeader, Warning, store_info. */
int64_t store_writer_exec(struct store_writer *w, const char *sql,
                          const char *types, ...);

/* Runs a read query inside the writer's transaction: calls `row` for every
 * result row (stop early by returning non-zero).  `row` may add rows
 * (store_writer_slice, _counter, ...; written after the query) but must not
 * call store_writer_exec, _query or _track_stats.  Types as above for the
 * parameters.  Returns 0, or -EIO when the writer has failed (then `row`
 * may have seen only some rows, or none). */
int store_writer_query(struct store_writer *w,
                       int (*row)(void *ud, sqlite3_stmt *st), void *ud,
                       const char *sql, const char *types, ...);

/* Commits, builds the indexes, analyses, closes and renames the temporary
 * file to the final path.  Returns 0 or a negative errno-style code with
 * *cause set, naming the first error of the writer (the temporary file is
 * then removed and the final path left as it was).  Frees w either way.
 *
 * Errors are sticky: after the first failed statement or write, rows are
 * dropped, store_writer_exec() and _query() fail at once, and this call
 * reports that first error. */
int store_writer_finish(struct store_writer *w, char **cause);

/* Abandons the store (an ingest that cannot complete): stops the writer
 * thread, removes the temporary file and frees w.  NULL allowed. */
void store_writer_abort(struct store_writer *w);

/* Returns 1 if `path` is a complete store whose store_info has key
 * "fingerprint" equal to `fingerprint` (and then sets *events to the sum of
 * its tracks' event counts and *warnings to its Warning rows), else 0. */
int store_is_current(const char *path, const char *fingerprint,
                     uint64_t *events, uint64_t *warnings);

#endif
