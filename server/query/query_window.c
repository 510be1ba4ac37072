/* query_window.c -- GET /slices and /counters (see query.h).
 *
 * Window queries follow one rule: the answer is bounded by pixels, never by
 * events.  A request (start, end, px) has resolution r = (end-start)/px ns;
 * level L is query_level(r), the largest with 64*4^L <= 2r: buckets of half
 * a pixel to two pixels.  Below the track's finest LOD level (or when it
 * has none) events are read raw, lane by lane -- the only slice that can
 * straddle `start` in a lane is the last one starting at or before it,
 * because lanes never overlap -- with a limit of 4*px+1 rows; a lane that
 * hits the limit makes the track answer from its finest LOD level instead.
 * Otherwise the blocks of buckets [start>>s, (end-1)>>s] of level L are
 * read, plus the last block before them if its events reach into the
 * window.
 */
#include "lod_block.h"
#include "query_priv.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int query_level(int64_t r) {
  int level = -1;
  /* 2r: buckets of half a pixel to two pixels, about one row a pixel */
  while (level < LOD_MAX_LEVEL && r >= (int64_t)1 << (LOD_SHIFT(level + 1) - 1))
    level++;
  return level;
}

int64_t query_warm(sqlite3 *db, int64_t max_bytes) {
  sqlite3_stmt *st;
  int64_t bytes = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT coalesce(sum(length(l.rows)), 0) FROM track t "
                         "CROSS JOIN slice_lod l ON l.track = t.id AND "
                         "l.level = ?1 WHERE t.kind = 'slices'",
                         -1, &st, NULL) != SQLITE_OK)
    return -EIO;
  for (int level = LOD_MAX_LEVEL; level >= 0 && bytes < max_bytes; level--) {
    sqlite3_bind_int(st, 1, level);
    if (sqlite3_step(st) != SQLITE_ROW) {
      sqlite3_finalize(st);
      return -EIO;
    }
    bytes += sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return bytes;
}

/* A set of string ids, for the names map of an answer. */
struct query_ids {
  int64_t *v; /* open addressing; 0 = empty (0 is never a str id) */
  size_t n, cap;
};

static void query_window_ids_add(struct query_ids *s, int64_t id) {
  if (id <= 0)
    return;
  if ((s->n + 1) * 2 > s->cap) {
    struct query_ids t = {xcalloc(s->cap ? s->cap * 2 : 64, sizeof(int64_t)), 0,
                          s->cap ? s->cap * 2 : 64};
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i])
        query_window_ids_add(&t, s->v[i]);
    free(s->v);
    *s = t;
  }
  query_util_slot(s->v, s->cap, &s->n, id);
}

/* Adds "<id>":"<string>" to the names map being written to out, or gives
 * the pair to the sink when there is one. */
static void query_window_name(int64_t id, const char *t, struct sbuf *out,
                              const struct query_sink *sk, bool *first) {
  if (sk) {
    sk->name(sk->ud, id, t);
    return;
  }
  if (!*first)
    sbuf_addc(out, ',');
  *first = false;
  sbuf_addc(out, '"');
  sbuf_add_i64(out, id);
  sbuf_adds(out, "\":");
  sbuf_add_json_str(out, t, strlen(t));
}

/* Appends {"<id>":"<string>",...} for every id of the set, or gives each
 * to the sink when there is one; from `names` when the store's strings are
 * in memory, else from the str table. */
static int query_window_ids_names(sqlite3 *db, const struct store_names *names,
                                  const struct query_ids *s, struct sbuf *out,
                                  const struct query_sink *sk,
                                  struct query_err *e) {
  sqlite3_stmt *st = NULL;
  bool first = true;
  if (!names && !(st = query_stmt(db, "SELECT s FROM str WHERE id=?1", e)))
    return -EIO;
  if (!sk)
    sbuf_addc(out, '{');
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->v[i])
      continue;
    if (names) {
      const char *t = store_names_get(names, s->v[i]);
      if (t)
        query_window_name(s->v[i], t, out, sk, &first);
      continue;
    }
    sqlite3_bind_int64(st, 1, s->v[i]);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      query_window_name(s->v[i], t ? t : "", out, sk, &first);
    }
    sqlite3_reset(st);
  }
  if (!sk)
    sbuf_addc(out, '}');
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /slices */

/* (end - start) / px, at least 1 (the window is checked: no overflow). */
int64_t query_resolution(const struct query_window *w) {
  int64_t r = (w->end - w->start) / (w->px > 0 ? w->px : 1);
  return r > 0 ? r : 1;
}

/* Lanes and counter series are kept as up to QUERY_COLS parallel columns
 * of 8-byte values (int64_t or double) that grow together: each struct
 * names its columns in a union with the array col[] that query_cols_*
 * handle. */
#define QUERY_COLS 6
_Static_assert(sizeof(double) == sizeof(int64_t), "8-byte columns");

/* One value of a row. */
union query_val {
  int64_t i;
  double d;
};

/* Appends row[] (row[i] to column i) as row *n of the ncols columns col[]
 * of capacity *cap, which double when full (first 1024 rows). */
static void query_window_cols_push(void *col[QUERY_COLS], int ncols, size_t *n,
                                   size_t *cap, const union query_val *row) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 1024;
    for (int i = 0; i < ncols; i++)
      col[i] = xrealloc(col[i], *cap * sizeof *row);
  }
  for (int i = 0; i < ncols; i++)
    memcpy((char *)col[i] + *n * sizeof *row, &row[i], sizeof *row);
  (*n)++;
}

static void query_window_cols_free(void *col[QUERY_COLS]) {
  for (int i = 0; i < QUERY_COLS; i++)
    free(col[i]);
}

/* The rows of one lane, before they are written column by column.
 * busy: the ns of the row its events cover (raw: dur).  longest: the
 * longest event's duration in the last row (LOD merging). */
struct query_lane {
  union {
    struct {
      int64_t *ts, *dur, *name, *grp, *count, *busy;
    };
    void *col[QUERY_COLS];
  };
  size_t n, cap;
  int64_t longest;
};

static void query_window_lane_push(struct query_lane *l, int64_t ts,
                                   int64_t dur, int64_t name, int64_t grp,
                                   int64_t count, int64_t busy) {
  union query_val row[] = {{.i = ts},  {.i = dur},   {.i = name},
                           {.i = grp}, {.i = count}, {.i = busy}};
  query_window_cols_push(l->col, 6, &l->n, &l->cap, row);
}

/* The points of one counter series (columns: see query_window_cols_push). */
struct query_points {
  union {
    struct {
      int64_t *ts, *count;
      double *min, *max, *last;
    };
    void *col[QUERY_COLS];
  };
  size_t n, cap;
};

static void query_window_points_push(struct query_points *p, int64_t ts,
                                     double mn, double mx, double last,
                                     int64_t count) {
  union query_val row[] = {
      {.i = ts}, {.i = count}, {.d = mn}, {.d = mx}, {.d = last}};
  query_window_cols_push(p->col, 5, &p->n, &p->cap, row);
}

/* What the tracks of one window answer share: the sink (NULL: JSON), the
 * row buffers, and the names the slices use. */
struct query_run {
  const struct query_sink *sk;
  struct query_lane lane;
  struct query_points points;
  struct query_ids names;
};

static void query_window_run_free(struct query_run *run) {
  query_window_cols_free(run->lane.col);
  query_window_cols_free(run->points.col);
  free(run->names.v);
}

static void query_window_add_column(struct sbuf *b, const char *key,
                                    const int64_t *v, size_t n, int64_t base) {
  sbuf_adds(b, ",\"");
  sbuf_adds(b, key);
  sbuf_adds(b, "\":[");
  sbuf_add_i64s(b, v, n, base);
  sbuf_addc(b, ']');
}

/* Records the names a lane's rows use. */
static void query_window_lane_names(const struct query_lane *l,
                                    struct query_ids *names) {
  for (size_t i = 0; i < l->n; i++) {
    query_window_ids_add(names, l->name[i]);
    query_window_ids_add(names, l->grp[i]);
  }
}

/* Writes one lane object and records its names. */
static void query_window_lane_write(struct sbuf *b, int64_t lane,
                                    const struct query_lane *l, int64_t base,
                                    bool truncated, struct query_ids *names) {
  sbuf_adds(b, "{\"lane\":");
  sbuf_add_i64(b, lane);
  query_window_add_column(b, "ts", l->ts, l->n, base);
  query_window_add_column(b, "dur", l->dur, l->n, 0);
  query_window_add_column(b, "name", l->name, l->n, 0);
  query_window_add_column(b, "grp", l->grp, l->n, 0);
  query_window_add_column(b, "count", l->count, l->n, 0);
  query_window_add_column(b, "busy", l->busy, l->n, 0);
  if (truncated)
    sbuf_adds(b, ",\"truncated\":true");
  sbuf_addc(b, '}');
  query_window_lane_names(l, names);
}

#define QUERY_SQL_RAW_LANE                                                     \
  "SELECT ts, dur, name, coalesce(grp, 0) FROM slice WHERE track=?1 AND "      \
  "lane=?2 AND ts >= coalesce((SELECT ts FROM slice WHERE track=?1 AND "       \
  "lane=?2 AND ts<=?3 ORDER BY ts DESC LIMIT 1), ?3) AND ts < ?4 AND "         \
  "(ts >= ?3 OR ts + dur > ?3) ORDER BY ts LIMIT ?5"

/* Reads one lane raw; returns 1 if the limit was hit, 0, or <0. */
static int query_window_lane_raw(sqlite3 *db, int64_t track, int64_t lane,
                                 const struct query_window *w,
                                 struct query_lane *l, struct query_err *e) {
  int64_t limit = 4 * (int64_t)w->px;
  sqlite3_stmt *s = query_stmt(db, QUERY_SQL_RAW_LANE, e);
  int rc;
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){track, lane, w->start, w->end, limit + 1},
                      5);
  l->n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if ((int64_t)l->n == limit) {
      sqlite3_reset(s);
      return 1;
    }
    query_window_lane_push(
        l, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
        sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3), 1,
        sqlite3_column_int64(s, 1));
  }
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* The block holding bucket ?4 (or the last one before it), then the
 * blocks starting in (?4, ?5]. */
#define QUERY_SQL_LOD_FIRST                                                    \
  "SELECT bucket, rows FROM slice_lod WHERE track=?1 AND level=?2 AND "        \
  "lane=?3 AND bucket<=?4 ORDER BY bucket DESC LIMIT 1"
#define QUERY_SQL_LOD_LANE                                                     \
  "SELECT bucket, rows FROM slice_lod WHERE track=?1 AND level=?2 AND "        \
  "lane=?3 AND bucket>?4 AND bucket<=?5 ORDER BY bucket"

/* The pixel column of ts (floor division: columns left of the window are
 * negative; a distance beyond int64 counts as the farthest). */
static int64_t query_window_pixel(int64_t ts, int64_t start, int64_t r) {
  int64_t d;
  if (__builtin_sub_overflow(ts, start, &d))
    d = ts > start ? INT64_MAX : INT64_MIN;
  int64_t q = d / r;
  return d % r < 0 ? q - 1 : q;
}

/* Appends LOD row `row` to l if it reaches into the window.  A row starting in
 * the same pixel column as the previous one merges into it (the level's buckets
 * are 1/2 to 2 pixels wide), and so does a row that continues the previous
 * one's name and grp after a gap under a pixel: at most about one row per
 * pixel, one row for a run of the same event, named after the longest event,
 * busy the sum of the rows' busy times (never more than its span).  A row
 * starting before the window stays as stored (nothing merges into it): the
 * answer of the window before holds it whole, so a client joining the two
 * can drop it from this one. */
static void query_window_lod_row(const struct lod_row *row, int64_t start,
                                 int64_t r, struct query_lane *l) {
  if (row->ts < start && row->end <= start)
    return;
  size_t k = l->n - 1;
  if (l->n && l->ts[k] >= start &&
      (query_window_pixel(l->ts[k], start, r) ==
           query_window_pixel(row->ts, start, r) ||
       (l->name[k] == row->name && l->grp[k] == row->grp &&
        row->ts - (l->ts[k] + l->dur[k]) < r))) {
    if (row->end > l->ts[k] + l->dur[k])
      l->dur[k] = row->end - l->ts[k];
    l->count[k] += row->count;
    l->busy[k] += row->busy;
    if (l->busy[k] > l->dur[k])
      l->busy[k] = l->dur[k];
    if (row->dur > l->longest) {
      l->longest = row->dur;
      l->name[k] = row->name;
      l->grp[k] = row->grp;
    }
    return;
  }
  int64_t span = row->end - row->ts;
  query_window_lane_push(l, row->ts, span, row->name, row->grp, row->count,
                         row->busy < span ? row->busy : span);
  l->longest = row->dur;
}

/* Adds the rows of the block in the current row of s (bucket, rows) up to
 * bucket b1 to l.  Returns 0 or -EIO for a block that does not decode. */
static int query_window_lod_block(sqlite3_stmt *s, int level, int64_t b1,
                                  const struct query_window *w, int64_t r,
                                  struct query_lane *l, struct query_err *e) {
  struct lod_block b;
  struct lod_row row;
  int rc;
  lod_block_init(&b, level, sqlite3_column_int64(s, 0),
                 sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1));
  while ((rc = lod_block_next(&b, &row)) == 1 && row.bucket <= b1)
    query_window_lod_row(&row, w->start, r, l);
  if (rc < 0)
    return query_fail(e, -EIO, 500, "store_error",
                      "a level-of-detail block of level %d does not decode",
                      level);
  return 0;
}

/* Reads one lane from LOD level `level`. */
static int query_window_lane_lod(sqlite3 *db, int64_t track, int64_t lane,
                                 int level, const struct query_window *w,
                                 struct query_lane *l, struct query_err *e) {
  int shift = LOD_SHIFT(level), rc = 0;
  int64_t b0 = w->start >> shift, b1 = (w->end - 1) >> shift;
  int64_t r = query_resolution(w);
  const char *sql[] = {QUERY_SQL_LOD_FIRST, QUERY_SQL_LOD_LANE};
  l->n = 0;
  for (int i = 0; i < 2; i++) {
    sqlite3_stmt *s = query_stmt(db, sql[i], e);
    if (!s)
      return -EIO;
    query_util_bind_i64(s, (int64_t[]){track, level, lane, b0, b1}, i ? 5 : 4);
    int step;
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW)
      rc = query_window_lod_block(s, level, b1, w, r, l, e);
    sqlite3_reset(s);
    if (rc < 0)
      return rc;
    if (step != SQLITE_DONE)
      return query_util_db_fail(e, db);
  }
  return 0;
}

/* True when the track's average density puts more than one event per
 * pixel per lane in w: reading the raw lanes would only end at the raw
 * limit, so the answer comes from the finest LOD level at once. */
static bool query_window_dense(const struct query_track *t,
                               const struct query_window *w) {
  int64_t lo = w->start > t->first_ts ? w->start : t->first_ts;
  int64_t hi = w->end < t->last_ts ? w->end : t->last_ts;
  if (hi <= lo || t->last_ts <= t->first_ts || t->lanes < 1)
    return false;
  double in = (double)t->events * (double)(hi - lo) /
              (double)(t->last_ts - t->first_ts);
  return in / (double)t->lanes > (double)w->px;
}

/* Writes {"track":..,"level":..,"lanes":[..]} for one slice track, or
 * gives the rows to the sink sk when there is one (b unused). */
static int query_window_slice_track(sqlite3 *db, const struct query_track *t,
                                    const struct query_window *w, int level,
                                    struct sbuf *b, struct query_run *run,
                                    struct query_err *e) {
  struct query_lane *l = &run->lane;
  const struct query_sink *sk = run->sk;
  struct query_ids *names = &run->names;
  bool raw = t->lod_min < 0 ||
             ((level < 0 || level < t->lod_min) && !query_window_dense(t, w));
  size_t mark = sk ? 0 : b->len;
  int rc;
  for (bool restart = false;; restart = true) {
    int used = raw ? -1 : (level > t->lod_min ? level : (int)t->lod_min);
    bool again = false;
    if (sk) {
      sk->track(sk->ud, t->id, used, t->source, restart);
    } else {
      b->len = mark;
      sbuf_adds(b, "{\"track\":");
      query_add_i64_str(b, t->id);
      sbuf_printf(b, ",\"level\":%d,\"lanes\":[", used);
    }
    for (int64_t lane = 0; lane < t->lanes; lane++) {
      rc = raw ? query_window_lane_raw(db, t->id, lane, w, l, e)
               : query_window_lane_lod(db, t->id, lane, used, w, l, e);
      if (rc < 0)
        return rc;
      if (rc == 1 && t->lod_min >= 0) {
        raw = false; /* too many events: answer from the finest LOD */
        again = true;
        break;
      }
      if (sk) {
        sk->lane(sk->ud, lane, l->ts, l->dur, l->name, l->grp, l->count,
                 l->busy, l->n, rc == 1);
        query_window_lane_names(l, names);
        continue;
      }
      if (lane)
        sbuf_addc(b, ',');
      query_window_lane_write(b, lane, l, w->start, rc == 1, names);
    }
    if (!again)
      break;
  }
  if (!sk)
    sbuf_adds(b, "]}");
  return 0;
}

/* Checks the common window parameters against the store. */
int query_window_check(const struct query_window *w, struct query_err *e) {
  if (w->n_tracks < 1 || w->n_tracks > QUERY_MAX_TRACKS)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'tracks' must list 1 to %d track ids",
                      QUERY_MAX_TRACKS);
  if (w->end <= w->start)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'end' must be greater than 'start'");
  if (w->start < 0 && w->end > INT64_MAX + w->start)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameters 'start'/'end': the window is wider than "
                      "2^63-1 ns");
  return 0;
}

/* Starts an answer: base, start, end, px, resolution_ns. */
static void query_window_head(struct sbuf *out, const struct query_window *w,
                              int64_t r) {
  sbuf_adds(out, "{\"base\":");
  query_add_i64_str(out, w->start);
  sbuf_adds(out, ",\"start\":");
  query_add_i64_str(out, w->start);
  sbuf_adds(out, ",\"end\":");
  query_add_i64_str(out, w->end);
  sbuf_printf(out, ",\"px\":%d,\"resolution_ns\":", w->px);
  sbuf_add_i64(out, r);
}

/* One track's part of a window answer (query_window_slice_track(),
 * query_window_counter_track()). */
typedef int (*query_window_track_fn)(sqlite3 *db, const struct query_track *t,
                                     const struct query_window *w, int level,
                                     struct sbuf *b, struct query_run *run,
                                     struct query_err *e);

/* Runs fn on each track of the (checked) window, which must be of `kind`
 * (else 400 pointing to /api/v1/<other>); tb gets the JSON array of their
 * objects.  Returns 0 or the first error. */
static int query_window_tracks(sqlite3 *db, const struct query_window *w,
                               const char *kind, const char *other,
                               query_window_track_fn fn, struct query_run *run,
                               struct sbuf *tb, struct query_err *e) {
  int rc = 0;
  int level = query_level(query_resolution(w));
  sbuf_addc(tb, '[');
  for (size_t i = 0; i < w->n_tracks && rc == 0; i++) {
    struct query_track t;
    rc = query_tracks_get(db, w->tracks[i], "tracks", &t, e);
    if (rc == 0 && strcmp(t.kind, kind) != 0)
      rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'tracks': track %lld is a %s track; use "
                      "/api/v1/%s",
                      (long long)t.id, t.kind, other);
    if (rc == 0) {
      if (i)
        sbuf_addc(tb, ',');
      rc = fn(db, &t, w, level, tb, run, e);
    }
  }
  sbuf_addc(tb, ']');
  return rc;
}

/* ------------------------------------------------------------------ */
/* GET /counters */

/* A double as a JSON number (null for NaN and infinities). */
static void query_window_add_double(struct sbuf *b, double v) {
  if (!isfinite(v))
    sbuf_adds(b, "null");
  else if (v == (double)(int64_t)v && fabs(v) < 9.007199254740992e15)
    sbuf_add_i64(b, (int64_t)v);
  else
    sbuf_printf(b, "%.15g", v);
}

static void query_window_add_doubles(struct sbuf *b, const char *key,
                                     const double *v, size_t n) {
  sbuf_printf(b, ",\"%s\":[", key);
  for (size_t i = 0; i < n; i++) {
    if (i)
      sbuf_addc(b, ',');
    query_window_add_double(b, v[i]);
  }
  sbuf_addc(b, ']');
}

/* The last raw sample before `before`, as a point. */
static int query_window_counter_before(sqlite3 *db, int64_t track,
                                       int64_t series, int64_t before,
                                       struct query_points *p,
                                       struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, value FROM counter WHERE track=?1 AND series=?2 AND ts<?3 "
      "ORDER BY ts DESC, seq DESC LIMIT 1",
      e);
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){track, series, before}, 3);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    double v = sqlite3_column_double(s, 1);
    query_window_points_push(p, sqlite3_column_int64(s, 0), v, v, v, 1);
  }
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* Puts the points of p in the opposite order. */
static void query_window_points_reverse(struct query_points *p) {
  for (int c = 0; c < 5; c++) {
    union query_val *v = p->col[c];
    for (size_t i = 0, j = p->n; i + 1 < j; i++, j--) {
      union query_val x = v[i];
      v[i] = v[j - 1];
      v[j - 1] = x;
    }
  }
}

/* Raw samples of one series: the last one before the window, then those
 * in it, read backwards from its end in one statement (one block seek of
 * the counter table, not two); returns 1 if the limit was hit. */
static int query_window_counter_raw(sqlite3 *db, int64_t track, int64_t series,
                                    const struct query_window *w,
                                    struct query_points *p,
                                    struct query_err *e) {
  int64_t limit = 4 * (int64_t)w->px, got = 0;
  int rc;
  p->n = 0;
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, value FROM counter WHERE track=?1 AND series=?2 AND ts<?3 "
      "ORDER BY ts DESC, seq DESC",
      e);
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){track, series, w->end}, 3);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t ts = sqlite3_column_int64(s, 0);
    if (ts >= w->start && got++ == limit) {
      sqlite3_reset(s);
      return 1;
    }
    double v = sqlite3_column_double(s, 1);
    query_window_points_push(p, ts, v, v, v, 1);
    if (ts < w->start) /* the one before the window */
      break;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return query_util_db_fail(e, db);
  query_window_points_reverse(p);
  return 0;
}

/* One series from counter_lod at `level`. */
static int query_window_counter_lod(sqlite3 *db, int64_t track, int64_t series,
                                    int level, const struct query_window *w,
                                    struct query_points *p,
                                    struct query_err *e) {
  int shift = LOD_SHIFT(level), rc;
  int64_t b0 = w->start >> shift, b1 = (w->end - 1) >> shift;
  p->n = 0;
  /* the first bucket's start: b0 * 2^shift >= INT64_MIN, as b0 is the
   * floor of start / 2^shift (b0 << shift is undefined for b0 < 0) */
  if ((rc = query_window_counter_before(db, track, series,
                                        b0 * ((int64_t)1 << shift), p, e)) < 0)
    return rc;
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, min, max, last, count FROM counter_lod WHERE track=?1 AND "
      "series=?2 AND level=?3 AND bucket>=?4 AND bucket<=?5 ORDER BY bucket",
      e);
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){track, series, level, b0, b1}, 5);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    query_window_points_push(
        p, sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1),
        sqlite3_column_double(s, 2), sqlite3_column_double(s, 3),
        sqlite3_column_int64(s, 4));
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* Writes one counter track with every series, or gives the series to the
 * sink sk when there is one (b unused). */
static int query_window_counter_track(sqlite3 *db, const struct query_track *t,
                                      const struct query_window *w, int level,
                                      struct sbuf *b, struct query_run *run,
                                      struct query_err *e) {
  struct query_points *p = &run->points;
  const struct query_sink *sk = run->sk;
  struct query_series ser[64];
  int n = query_tracks_series(db, t->source, ser, 64, e), rc = 0;
  if (n < 0)
    return n;
  bool raw = level < 0 || t->lod_min < 0 || level < t->lod_min;
  int used = raw ? -1 : level;
  if (sk) {
    sk->track(sk->ud, t->id, used, t->source, false);
  } else {
    sbuf_adds(b, "{\"track\":");
    query_add_i64_str(b, t->id);
    sbuf_adds(b, ",\"source\":");
    sbuf_add_json_str(b, t->source, strlen(t->source));
    sbuf_adds(b, ",\"series\":[");
  }
  for (int i = 0; i < n; i++) {
    int lvl = used;
    rc = lvl < 0
             ? query_window_counter_raw(db, t->id, ser[i].series, w, p, e)
             : query_window_counter_lod(db, t->id, ser[i].series, lvl, w, p, e);
    if (rc == 1 && t->lod_min >= 0) {
      lvl = (int)t->lod_min;
      rc = query_window_counter_lod(db, t->id, ser[i].series, lvl, w, p, e);
    }
    if (rc < 0)
      return rc;
    if (sk) {
      sk->series(sk->ud, ser[i].series, lvl, ser[i].name, ser[i].unit, p->ts,
                 p->min, p->max, p->last, p->count, p->n, rc == 1);
      continue;
    }
    if (i)
      sbuf_addc(b, ',');
    sbuf_printf(b, "{\"series\":%lld,\"level\":%d,\"name\":",
                (long long)ser[i].series, lvl);
    sbuf_add_json_str(b, ser[i].name, strlen(ser[i].name));
    sbuf_adds(b, ",\"unit\":");
    sbuf_add_json_str(b, ser[i].unit, strlen(ser[i].unit));
    query_window_add_column(b, "ts", p->ts, p->n, w->start);
    query_window_add_doubles(b, "min", p->min, p->n);
    query_window_add_doubles(b, "max", p->max, p->n);
    query_window_add_doubles(b, "last", p->last, p->n);
    query_window_add_column(b, "count", p->count, p->n, 0);
    if (rc == 1)
      sbuf_adds(b, ",\"truncated\":true");
    sbuf_addc(b, '}');
  }
  if (!sk)
    sbuf_adds(b, "]}");
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /slices and /counters */

/* query_slices(), query_counters() (sk NULL) and their _rows() forms (out
 * NULL): the answer for the slice tracks of w, else its counter tracks. */
static int query_window_do(sqlite3 *db, const struct query_window *w,
                           bool slices, struct sbuf *out,
                           const struct query_sink *sk, struct query_err *e) {
  struct query_run run = {.sk = sk};
  struct sbuf brackets = {0}; /* with a sink: all the tracks text there is */
  struct sbuf *tb = sk ? &brackets : out;
  int rc = query_window_check(w, e);
  if (rc < 0)
    return rc;
  if (!sk) { /* the tracks go straight into the answer, the names after */
    query_window_head(out, w, query_resolution(w));
    sbuf_adds(out, ",\"tracks\":");
  }
  rc = slices ? query_window_tracks(db, w, "slices", "counters",
                                    query_window_slice_track, &run, tb, e)
              : query_window_tracks(db, w, "counter", "slices",
                                    query_window_counter_track, &run, tb, e);
  if (rc == 0 && slices) {
    if (!sk)
      sbuf_adds(out, ",\"names\":");
    rc = query_window_ids_names(db, w->names, &run.names, sk ? NULL : out, sk,
                                e);
  }
  if (rc == 0 && !sk)
    sbuf_addc(out, '}');
  query_window_run_free(&run);
  sbuf_free(&brackets);
  return rc;
}

int query_slices(sqlite3 *db, const struct query_window *w, struct sbuf *out,
                 struct query_err *e) {
  return query_window_do(db, w, true, out, NULL, e);
}

int query_slices_rows(sqlite3 *db, const struct query_window *w,
                      const struct query_sink *sk, struct query_err *e) {
  return query_window_do(db, w, true, NULL, sk, e);
}

int query_counters(sqlite3 *db, const struct query_window *w, struct sbuf *out,
                   struct query_err *e) {
  return query_window_do(db, w, false, out, NULL, e);
}

int query_counters_rows(sqlite3 *db, const struct query_window *w,
                        const struct query_sink *sk, struct query_err *e) {
  return query_window_do(db, w, false, NULL, sk, e);
}
