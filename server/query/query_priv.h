/* query_priv.h -- what the query_*.c files share behind query.h; not for
 * use outside server/query/.
 *
 * The read side is one file per concern: query_util.c (statements, JSON
 * columns, merge cursors), query_window.c (windows from raw rows or LOD),
 * query_tracks.c (track rows, /tracks, /profile), query_event.c (event
 * details, flows, drill-down), query_device.c (device profiles and engine
 * time), query_search.c (summary, search, range summary), query_sql.c (the
 * SQL endpoint) and query_export.c (the export cursor).
 *
 * Ownership: as in query.h -- json_t * results are new references for the
 * caller, char * results are malloc'd for the caller, strings passed in are
 * borrowed; struct query_rows owns its strings until
 * query_tracks_rows_free().
 */
#ifndef NEX_QUERY_PRIV_H
#define NEX_QUERY_PRIV_H

#include "query.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- query_util.c ---- */

/* Fills e with the store error of db; returns -EIO. */
int query_util_db_fail(struct query_err *e, sqlite3 *db);
/* Binds the parameters ?1..?n of s to v[0..n-1]. */
void query_util_bind_i64(sqlite3_stmt *s, const int64_t *v, int n);
/* A statement that is not cached (the caller finalizes it): for the many
 * cursors of one merge, which must not share a cached statement.  NULL
 * with e filled on a prepare error. */
sqlite3_stmt *query_util_stmt_once(sqlite3 *db, const char *sql,
                                   struct query_err *e);
/* A JSON value for an id: a string, as every id leaves the server. */
json_t *query_util_id(int64_t v);
/* Column i as an id string, or null. */
json_t *query_util_col_id(sqlite3_stmt *s, int i);
/* Column i as an integer, or null. */
json_t *query_util_col_int(sqlite3_stmt *s, int i);
/* Column i as a JSON string (null for SQL NULL). */
json_t *query_util_col_text(sqlite3_stmt *s, int i);
/* Any column as JSON: integers beyond 2^53 become strings, blobs x'..'. */
json_t *query_util_col_any(sqlite3_stmt *s, int i);
/* The current row as an object keyed by column name. */
json_t *query_util_row_object(sqlite3_stmt *s);
/* Parses args text s into a new object and *text, its text with the
 * integers beyond 2^53 quoted and every other byte as stored (malloc'd);
 * NULL and *text NULL if s is not an object. */
json_t *query_util_args(const char *s, char **text);
/* Column i as a malloc'd string, or NULL for SQL NULL. */
char *query_util_dup_col(sqlite3_stmt *s, int i);
/* Column i as an int64, or TRACKS_NONE for SQL NULL. */
int64_t query_util_int_col(sqlite3_stmt *s, int i);
/* The event key "<track>:<lane>:<ts>", malloc'd. */
char *query_util_key(int64_t track, int64_t lane, int64_t ts);
/* The slot of key (> 0) in the open-addressing table keys[cap] (cap a power
 * of two, the table never full); claims it, counting it in *n, when key is
 * absent. */
size_t query_util_slot(int64_t *keys, size_t cap, size_t *n, int64_t key);
/* Runs a one-row query; *out gets column 0 as int64 (def when NULL).
 * Returns 0 or -EIO. */
int query_util_scalar(sqlite3 *db, const char *sql, int64_t def, int64_t *out,
                      struct query_err *e);
/* Every row of a query as an array of objects in *out (small tables only).
 * Returns 0 or -EIO. */
int query_util_all_rows(sqlite3 *db, const char *sql, json_t **out,
                        struct query_err *e);

/* A cursor over one lane of slices (ts, dur, ...), for k-way merges. */
struct query_cursor_lane {
  sqlite3_stmt *s;
  int64_t ts, end;
};
/* Restores the min-heap order (by ts) of h[0..n) below i. */
void query_util_heap_down(struct query_cursor_lane **h, size_t n, size_t i);
/* Steps a lane cursor: 1 row (ts, end set), 0 done, <0 error. */
int query_util_lane_step(sqlite3 *db, struct query_cursor_lane *c,
                         struct query_err *e);

/* ---- query_window.c ---- */

/* Checks the common window parameters (tracks, start < end, width). */
int query_window_check(const struct query_window *w, struct query_err *e);

/* ---- query_tracks.c ---- */

/* One track as window queries need it. */
struct query_track {
  int64_t id, lanes, lod_min; /* lod_min -1: no LOD */
  int64_t events, first_ts, last_ts;
  char kind[16], domain[16], source[64];
};
/* Reads one track; -ENOENT (naming `param`) when it does not exist. */
int query_tracks_get(sqlite3 *db, int64_t id, const char *param,
                     struct query_track *t, struct query_err *e);

/* The series (number, name, unit) of a counter source. */
struct query_series {
  int64_t series;
  char name[64], unit[16];
};
/* Fills out[0..max) with the series of a counter source (one "value"
 * series when it has no series table); returns their count or -EIO. */
int query_tracks_series(sqlite3 *db, const char *source,
                        struct query_series *out, int max, struct query_err *e);

/* Track rows (see query_tracks_rows_load()) with owned strings; free with
 * query_tracks_rows_free(). */
struct query_rows {
  struct tracks_row *r;
  size_t n;
  json_t *series; /* source -> array of series names */
  json_t *units;  /* source -> unit of series 0 */
};
/* The track's process and thread rows (Chrome names). */
#define QUERY_TRACK_P(col)                                                     \
  "(SELECT " col " FROM process p WHERE p.instance_id = track.instance_id "    \
  "AND p.pid = track.pid)"
#define QUERY_TRACK_T(col)                                                     \
  "(SELECT " col " FROM thread h WHERE h.instance_id = track.instance_id "     \
  "AND h.pid = track.pid AND h.tid = track.tid)"
/* The columns query_tracks_row() reads, in its order (QUERY_TRACK_NCOLS of
 * them). */
#define QUERY_TRACK_COLS                                                       \
  "id, kind, domain, source, instance_id, cpu_id, label, pid, tid, nc_idx, "   \
  "pcore_idx, worker_gid, stream_id, device_idx, hbm_idx, lanes, "             \
  "event_count, " QUERY_TRACK_P("name") ", " QUERY_TRACK_P(                    \
      "labels") ", " QUERY_TRACK_P("sort_index") ", " QUERY_TRACK_P("named")   \
      ", " QUERY_TRACK_P("chrome") ", " QUERY_TRACK_T(                         \
          "name") ", " QUERY_TRACK_T("sort_index") ", " QUERY_TRACK_T("named")
#define QUERY_TRACK_NCOLS 25
/* Fills r (owned strings) from the current row of s (QUERY_TRACK_COLS). */
void query_tracks_row(sqlite3_stmt *s, struct tracks_row *r);
/* The rows of the system view (profile -1), of its event tracks only
 * (profile -2: the SystemProfileEvents sources) or of a device profile.
 * Free q with query_tracks_rows_free() whatever the result. */
int query_tracks_rows_load(sqlite3 *db, int64_t profile, struct query_rows *q,
                           struct query_err *e);
void query_tracks_rows_free(struct query_rows *q);
/* The time span of the system tracks: *start the first event, *end the
 * last one's end (0 and 0 without events).  Returns 0 or -EIO. */
int query_tracks_span(sqlite3 *db, int64_t *start, int64_t *end,
                      struct query_err *e);

/* ---- query_device.c ---- */

/* The DeviceProfileList columns query_device_object() reads. */
#define QUERY_DP_COLS                                                          \
  "id, device_profile_name, instance_id, process_id, nc_id, pcore_idx, "       \
  "session_id, model_id, model_name, ntff_file, neff_file, time_offset_ns, "   \
  "first_ts, last_ts, instruction_count, dma_count, total_flops, hbm_bytes, "  \
  "peak_flops, hbm_ddr_bandwidth"
/* QUERY_DP_COLS, the number of executions and the transpose FLOPs:
 * query_device_summary()'s rows. */
#define QUERY_SQL_DP_SUMMARY                                                   \
  "SELECT " QUERY_DP_COLS ", (SELECT count(*) FROM ExecutionInfo x WHERE "     \
  "x.device_profile_id = d.id), transpose_flops FROM DeviceProfileList d"
/* The current DeviceProfileList row (QUERY_DP_COLS) as the API object. */
json_t *query_device_object(sqlite3_stmt *s);
/* The summary of the device profile in the current row of s
 * (QUERY_SQL_DP_SUMMARY) in *out.  Returns 0 or a negative code. */
int query_device_summary(sqlite3 *db, sqlite3_stmt *s, json_t **out,
                         struct query_err *e);
/* Sets o's "dependencies" (the instructions the instruction (track, lane,
 * ts, id) waits for, in inst_dep_ids order) and "dependents" (those that
 * wait for it, at most 1000): arrays of {key, id, name, label, start_ts,
 * duration_ns}, key null for one the profile does not hold.  Returns 0 or
 * -EIO. */
int query_device_deps(sqlite3 *db, int64_t track, int64_t lane, int64_t ts,
                      int64_t id, json_t *o, struct query_err *e);

#endif
