/* query.h -- all SQL of the read side: windows at a resolution, event
 * details and flows, search, summaries, device-profile matching, range
 * summaries and the guarded SQL endpoint.  One file per concern implements
 * it (query_window.c, query_tracks.c, query_event.c, query_device.c,
 * query_search.c, query_sql.c, query_export.c, helpers in query_util.c;
 * their shared internals: query_priv.h).
 *
 * Every function takes a pooled read-only connection (store.h), used by the
 * calling thread only; prepared statements are cached on it.  Results are
 * JSON documents as described in doc/api.md: big columnar answers are
 * appended to a struct sbuf, small ones returned as json_t.
 *
 * Errors: functions return 0, or a negative errno-style code after filling
 * *err with the HTTP status, a short code and a sentence naming the
 * parameter (-ENOENT unknown id -> 404, -EINVAL bad parameter -> 400,
 * -EPERM refused -> 403, -EIO store error -> 500).
 *
 * Ownership: json_t ** results are new references for the caller; strings
 * passed in are borrowed.
 */
#ifndef NEX_QUERY_H
#define NEX_QUERY_H

#include "tracks.h"
#include "util.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct query_err {
  int status;    /* HTTP status */
  char code[32]; /* "bad_parameter", "not_found" ... */
  char detail[512];
};

/* Fills e and returns `rc` (a negative errno-style code). */
int query_fail(struct query_err *e, int rc, int status, const char *code,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Most base tracks one window request may name. */
#define QUERY_MAX_TRACKS 200
/* Most pixels of one window request. */
#define QUERY_MAX_PX 10000

/* A window request: base track ids, [start, end) in ns, width in pixels;
 * names: the store's strings in memory (store_pool_names) or NULL (then
 * the names of the answer are read from the str table). */
struct query_window {
  const int64_t *tracks;
  size_t n_tracks;
  int64_t start, end;
  int px;
  const struct store_names *names;
};

/* The LOD level for a resolution of r ns per pixel: the largest L with
 * 64 * 4^L <= 2r (at most LOD_MAX_LEVEL), i.e. buckets of half a pixel to
 * two pixels; -1 when r < 32. */
int query_level(int64_t r);

/* The resolution of a window: (end - start) / px ns per pixel, at least 1
 * (the "resolution_ns" of an answer). */
int64_t query_resolution(const struct query_window *w);

/* Reads the coarsest LOD levels of every slice track, level by level from
 * the coarsest, until about max_bytes of blocks were read: the pages the
 * first wide windows need are then in the OS page cache (after a reboot a
 * whole-profile answer of a 15 GB store otherwise waits ~180 ms for the
 * disk).  Returns the bytes read, or a negative errno-style code. */
int64_t query_warm(sqlite3 *db, int64_t max_bytes);

/* GET /slices: appends the answer object to out.  Per lane at most about
 * one LOD row per pixel (rows starting in one pixel column merge) or 4 * px
 * raw events, whatever the number of events. */
int query_slices(sqlite3 *db, const struct query_window *w, struct sbuf *out,
                 struct query_err *e);
/* GET /counters: appends the answer object to out. */
int query_counters(sqlite3 *db, const struct query_window *w, struct sbuf *out,
                   struct query_err *e);

/* The same window answers as rows instead of JSON (the WebSocket's binary
 * frames, wsbin.c): query_slices_rows() and query_counters_rows() call the
 * sink in answer order.  Arrays are borrowed for the call; times are
 * absolute ns.  Same checks, errors and rows as query_slices() and
 * query_counters(). */
struct query_sink {
  void *ud;
  /* A track starts, answered at `level` (counters: the level asked for).  A
   * slice track that falls back to its finest LOD level starts again
   * (`restart` set): the lanes given since its previous call are void. */
  void (*track)(void *ud, int64_t track, int level, const char *source,
                bool restart);
  /* One lane of the current slice track, lanes in order (busy: the ns of
   * each row its events cover). */
  void (*lane)(void *ud, int64_t lane, const int64_t *ts, const int64_t *dur,
               const int64_t *name, const int64_t *grp, const int64_t *count,
               const int64_t *busy, size_t n, bool truncated);
  /* One series of the current counter track. */
  void (*series)(void *ud, int64_t series, int level, const char *name,
                 const char *unit, const int64_t *ts, const double *min,
                 const double *max, const double *last, const int64_t *count,
                 size_t n, bool truncated);
  /* Slices only, after the tracks: the text of each string id the rows use
   * (name and grp), once per id. */
  void (*name)(void *ud, int64_t id, const char *text);
};
int query_slices_rows(sqlite3 *db, const struct query_window *w,
                      const struct query_sink *sk, struct query_err *e);
int query_counters_rows(sqlite3 *db, const struct query_window *w,
                        const struct query_sink *sk, struct query_err *e);

/* GET /tracks: the system tracks grouped in mode m. */
int query_tracks(sqlite3 *db, enum tracks_mode m, json_t **out,
                 struct query_err *e);
/* GET /device-profiles/{id}/tracks. */
int query_device_tracks(sqlite3 *db, int64_t profile, json_t **out,
                        struct query_err *e);

/* GET /profile: the store's part (start, end, instances, processes,
 * warnings, metadata, event_count, device_profiles). */
int query_profile(sqlite3 *db, json_t **out, struct query_err *e);

/* GET /events/{key}: every attribute, flows, upstream/downstream events and
 * the matching device profile, appended to out as JSON text (attributes
 * as stored: numbers keep the trace's own text). */
int query_event(sqlite3 *db, const char *key, struct sbuf *out,
                struct query_err *e);
/* GET /events/{key}/device-profile: the drill-down target. */
int query_event_device_profile(sqlite3 *db, const char *key, json_t **out,
                               struct query_err *e);

/* GET /device-profiles: filter (case-insensitive substring, may be NULL),
 * page >= 1, per_page 1..500. */
int query_device_profiles(sqlite3 *db, const char *filter, int64_t page,
                          int64_t per_page, json_t **out, struct query_err *e);
/* GET /device-profiles/{id}. */
int query_device_profile(sqlite3 *db, int64_t id, json_t **out,
                         struct query_err *e);
/* GET /device-profiles/{id}/dependencies: the dependency arrows of device
 * profile `id` with an end starting in [start, end) (device timeline):
 * {"arrows":[{"from":key,"from_end":ns,"to":key,"from_id":..,"to_id":..}],
 * "truncated":bool}, at most `limit` arrows.  -ENOENT (404) for an unknown
 * profile. */
int query_device_arrows(sqlite3 *db, int64_t id, int64_t start, int64_t end,
                        int64_t limit, json_t **out, struct query_err *e);

/* GET /search. */
struct query_search {
  const char *q;          /* 1..256 bytes */
  int64_t start, end;     /* window; INT64_MIN / INT64_MAX when absent */
  int64_t page, per_page; /* page >= 1, per_page 1..500 */
  const char *domain;     /* "system" | "device" */
  int64_t profile;        /* device profile id, or -1 for all */
  int64_t offset;         /* hits skipped after (page-1)*per_page; >= 0 */
  int64_t buckets;        /* 0, or 1..QUERY_SEARCH_MAX_BUCKETS: histogram */
};
#define QUERY_SEARCH_MAX_BUCKETS 10000
/* q is terms joined by AND: a word (name substring, case-insensitive),
 * name~REGEX (POSIX ERE on the name), dur>2ms / dur<=10us (ns, us, ms, s),
 * instance:/pid:/tid:/nc:/source: VALUE (track fields), any other KEY:VALUE
 * (an attribute of the event's args).  *out (caller frees with json_decref):
 * total, per-track counts, the page of hits by start; a bad term gives 400.
 * With buckets > 0 (start and end must be given), each track also has the
 * counts of its hits in `buckets` equal buckets of bucket_ns ns from start
 * (the last one cut at end). */
int query_search(sqlite3 *db, const struct query_search *s, json_t **out,
                 struct query_err *e);

/* GET /summary: the System Profile Summary. */
int query_summary(sqlite3 *db, json_t **out, struct query_err *e);

/* GET /range-summary (w->px unused). */
int query_range_summary(sqlite3 *db, const struct query_window *w, json_t **out,
                        struct query_err *e);

/* POST /db/{name}/_search, type databaseExplorerQuery: runs one read-only
 * SELECT on its own fresh SQLITE_OPEN_READONLY connection to the store file
 * at `path` (no pooled one) with an authorizer (only READ, SELECT, FUNCTION
 * and the table-valued pragma functions), no extensions.  Appends the
 * answer {"columns", "rows", "truncated"[, "reason"]} as JSON text to *out
 * (the caller's buffer, freed by the caller): at most QUERY_SQL_MAX_ROWS
 * rows and QUERY_SQL_MAX_BYTES of JSON, and whatever was written when
 * timeout_ms (QUERY_SQL_TIMEOUT_MS for the endpoint) of wall clock
 * (query and serialization) ran out;
 * any of the three ends the rows with "truncated": true and a "reason".
 * Returns 0, or a negative code with e filled (and *out unchanged) when the
 * statement is refused or fails before its first row. */
#define QUERY_SQL_MAX_ROWS 10000
#define QUERY_SQL_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define QUERY_SQL_TIMEOUT_MS 5000
int query_sql(const char *path, const char *sql, int timeout_ms,
              struct sbuf *out, struct query_err *e);
/* type tableSchema: every table and view with its columns. */
int query_table_schema(sqlite3 *db, json_t **out, struct query_err *e);

/* Export cursor: the SystemProfileEvents rows (framework, neuron_rt and
 * neuron_hw slices) starting in [start, end), track by track, lane by
 * lane, in time order within a lane.  The cursor keeps using db until
 * closed. */
struct query_export;
struct query_export_event {
  const struct tracks_row *track; /* borrowed from the cursor */
  int64_t lane, ts, dur, id;
  const char *name;  /* borrowed until the next call */
  const char *args;  /* raw JSON object text, or NULL; borrowed */
  const char *flows; /* "id,id" of the flows, or NULL; borrowed */
  /* the same flows as "id:PNS,id:PNS": P (N) is 1 when the flow has an
   * endpoint before (after) this one in (ts, track, lane, id) order, S
   * when none of its endpoints is on an event with another flow */
  const char *flow_ends;
};
/* Opens a cursor over [start, end) in *out (close it with
 * query_export_close()): track by track, each track's slices lane by lane
 * in start order, or with `merged` all its lanes together in (start, lane)
 * order (a parent before the slices it holds).  Returns 0 or a negative
 * code with e filled. */
int query_export_open(sqlite3 *db, int64_t start, int64_t end, bool merged,
                      struct query_export **out, struct query_err *e);
/* The event tracks the cursor walks; *n gets the count. */
const struct tracks_row *query_export_tracks(const struct query_export *x,
                                             size_t *n);
/* The next event: returns 1 with *ev filled, 0 at the end, <0 on error. */
int query_export_next(struct query_export *x, struct query_export_event *ev,
                      struct query_err *e);
/* The end of ev's slice: its start plus its duration, INT64_MAX when that
 * overflows (a store's times are not trusted to be small). */
int64_t query_export_end(const struct query_export_event *ev);
/* Closes the cursor (NULL allowed); db stays the caller's. */
void query_export_close(struct query_export *x);

/* Parses an event key "<track>:<lane>:<ts>".  Returns 0 or -EINVAL. */
int query_parse_key(const char *key, int64_t *track, int64_t *lane,
                    int64_t *ts);

/* A prepared statement for sql cached on db (one not in use is reused,
 * reset, bindings cleared); NULL with e filled on a prepare error.  The
 * caller resets it when done; use a statement fully (step to the end or
 * reset it) before asking for the same SQL again. */
sqlite3_stmt *query_stmt(sqlite3 *db, const char *sql, struct query_err *e);

/* Appends an int64 as a JSON string ("123"). */
void query_add_i64_str(struct sbuf *b, int64_t v);
/* A JSON string for text that may not be valid UTF-8 (bad bytes become
 * U+FFFD); a new reference. */
json_t *query_json_text(const char *s);
/* Parses an args JSON object; integers too large for a double (above
 * 2^53) become strings.  Returns a new object, or NULL if s is not one. */
json_t *query_args(const char *s);

#endif
