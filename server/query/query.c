/* query.c -- the read side's SQL (see query.h).
 *
 * Window queries follow one rule: the answer is bounded by pixels, never by
 * events.  A request (start, end, px) has resolution r = (end-start)/px ns;
 * level L is the largest with 64*4^L <= r.  Below the track's finest LOD
 * level (or when it has none) events are read raw, lane by lane -- the only
 * slice that can straddle `start` in a lane is the last one starting at or
 * before it, because lanes never overlap -- with a limit of 4*px+1 rows; a
 * lane that hits the limit makes the track answer from its finest LOD level
 * instead.  Otherwise buckets [start>>s, (end-1)>>s] of level L are read,
 * plus the last bucket before them if its events reach into the window.
 */
#include "query.h"
#include "lod_block.h"
#include "log.h"
#include "store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ */
/* small helpers */

int query_fail(struct query_err *e, int rc, int status, const char *code,
               const char *fmt, ...) {
  va_list ap;
  e->status = status;
  snprintf(e->code, sizeof e->code, "%s", code);
  va_start(ap, fmt);
  vsnprintf(e->detail, sizeof e->detail, fmt, ap);
  va_end(ap);
  return rc;
}

/* A store error on db. */
static int query_db_fail(struct query_err *e, sqlite3 *db) {
  return query_fail(e, -EIO, 500, "store_error", "store query failed: %s",
                    sqlite3_errmsg(db));
}

sqlite3_stmt *query_stmt(sqlite3 *db, const char *sql, struct query_err *e) {
  sqlite3_stmt *s;
  for (s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s))
    if (!sqlite3_stmt_busy(s) && strcmp(sqlite3_sql(s), sql) == 0) {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      return s;
    }
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) !=
      SQLITE_OK) {
    query_db_fail(e, db);
    return NULL;
  }
  return s;
}

/* Binds the parameters ?1..?n of s to v[0..n-1]. */
static void query_bind_i64(sqlite3_stmt *s, const int64_t *v, int n) {
  for (int i = 0; i < n; i++)
    sqlite3_bind_int64(s, i + 1, v[i]);
}

/* A statement that is not cached (finalize it): for the many cursors of one
 * merge, which must not share a cached statement. */
static sqlite3_stmt *query_stmt_once(sqlite3 *db, const char *sql,
                                     struct query_err *e) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
    query_db_fail(e, db);
    return NULL;
  }
  return s;
}

void query_add_i64_str(struct sbuf *b, int64_t v) {
  sbuf_addc(b, '"');
  sbuf_add_i64(b, v);
  sbuf_addc(b, '"');
}

/* A double as a JSON number (null for NaN and infinities). */
static void query_add_double(struct sbuf *b, double v) {
  if (!isfinite(v))
    sbuf_adds(b, "null");
  else if (v == (double)(int64_t)v && fabs(v) < 9.007199254740992e15)
    sbuf_add_i64(b, (int64_t)v);
  else
    sbuf_printf(b, "%.15g", v);
}

json_t *query_json_text(const char *s) {
  if (!s)
    return json_null();
  json_t *j = json_string(s);
  if (j)
    return j;
  struct sbuf b = {0};
  sbuf_add_json_str(&b, s, strlen(s));
  j = json_loads(b.s, JSON_DECODE_ANY, NULL);
  sbuf_free(&b);
  return j ? j : json_string("");
}

/* A JSON value for an id: a string, as every id leaves the server. */
static json_t *query_id(int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return json_string(buf);
}

/* Column i as an id string, or null. */
static json_t *query_col_id(sqlite3_stmt *s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL)
    return json_null();
  if (sqlite3_column_type(s, i) == SQLITE_INTEGER)
    return query_id(sqlite3_column_int64(s, i));
  return query_json_text((const char *)sqlite3_column_text(s, i));
}

/* Column i as an integer, or null. */
static json_t *query_col_int(sqlite3_stmt *s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL)
    return json_null();
  return json_integer(sqlite3_column_int64(s, i));
}

static json_t *query_col_text(sqlite3_stmt *s, int i) {
  return query_json_text((const char *)sqlite3_column_text(s, i));
}

/* Whether an integer is exact in a JavaScript number. */
static bool query_js_safe(int64_t v) {
  return v <= 9007199254740992LL && v >= -9007199254740992LL;
}

/* Any column as JSON: integers beyond 2^53 become strings. */
static json_t *query_col_any(sqlite3_stmt *s, int i) {
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_INTEGER: {
    int64_t v = sqlite3_column_int64(s, i);
    return query_js_safe(v) ? json_integer(v) : query_id(v);
  }
  case SQLITE_FLOAT: {
    double d = sqlite3_column_double(s, i);
    return isfinite(d) ? json_real(d) : json_null();
  }
  case SQLITE_TEXT:
    return query_col_text(s, i);
  case SQLITE_BLOB: {
    const unsigned char *p = sqlite3_column_blob(s, i);
    int n = sqlite3_column_bytes(s, i);
    struct sbuf b = {0};
    sbuf_adds(&b, "x'");
    for (int k = 0; k < n; k++)
      sbuf_printf(&b, "%02x", p[k]);
    sbuf_addc(&b, '\'');
    json_t *j = json_string(b.s);
    sbuf_free(&b);
    return j;
  }
  default:
    return json_null();
  }
}

/* The current row as an object keyed by column name. */
static json_t *query_row_object(sqlite3_stmt *s) {
  json_t *o = json_object();
  for (int i = 0; i < sqlite3_column_count(s); i++)
    json_object_set_new(o, sqlite3_column_name(s, i), query_col_any(s, i));
  return o;
}

/* Appends args text s with its integers beyond 2^53 quoted; every other
 * byte stays as the trace wrote it. */
static void query_args_norm(struct sbuf *b, const char *s) {
  bool in_str = false;
  for (const char *p = s; *p;) {
    if (in_str) {
      if (*p == '\\' && p[1]) {
        sbuf_add(b, p, 2);
        p += 2;
        continue;
      }
      if (*p == '"')
        in_str = false;
      sbuf_addc(b, *p++);
      continue;
    }
    if (*p == '"') {
      in_str = true;
      sbuf_addc(b, *p++);
      continue;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      const char *q = p + (*p == '-');
      size_t digits = strspn(q, "0123456789");
      const char *end = q + digits;
      size_t n = strcspn(end, ",]} \t\r\n");
      bool integer = n == 0;
      if (integer &&
          (digits > 16 ||
           (digits == 16 && strncmp(q, "9007199254740992", 16) > 0))) {
        sbuf_addc(b, '"');
        sbuf_add(b, p, (size_t)(end - p));
        sbuf_addc(b, '"');
      } else {
        sbuf_add(b, p, (size_t)(end - p) + n);
        end += n;
      }
      p = end;
      continue;
    }
    sbuf_addc(b, *p++);
  }
}

/* Parses args text s into *text (the normalized text, malloc'd) and a
 * new object; NULL (and *text NULL) if s is not an object. */
static json_t *query_args_both(const char *s, char **text) {
  *text = NULL;
  if (!s)
    return NULL;
  struct sbuf b = {0};
  query_args_norm(&b, s);
  json_t *j = b.s ? json_loads(b.s, 0, NULL) : NULL;
  if (j && !json_is_object(j)) {
    json_decref(j);
    j = NULL;
  }
  if (j)
    *text = b.s;
  else
    sbuf_free(&b);
  return j;
}

json_t *query_args(const char *s) {
  char *text;
  json_t *j = query_args_both(s, &text);
  free(text);
  return j;
}

int query_parse_key(const char *key, int64_t *track, int64_t *lane,
                    int64_t *ts) {
  int64_t v[3];
  const char *p = key;
  for (int i = 0; i < 3; i++) {
    size_t n = strcspn(p, ":");
    if ((i < 2 && p[n] != ':') || (i == 2 && p[n] != '\0') || n == 0 || n > 20)
      return -EINVAL;
    char buf[24];
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (util_parse_i64(buf, &v[i]) < 0)
      return -EINVAL;
    p += n + 1;
  }
  *track = v[0];
  *lane = v[1];
  *ts = v[2];
  return 0;
}

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

/* ------------------------------------------------------------------ */
/* a set of string ids, for the names map of an answer */

struct query_ids {
  int64_t *v; /* open addressing; 0 = empty (0 is never a str id) */
  size_t n, cap;
};

/* The slot of key (> 0) in the open-addressing table keys[cap] (cap a power
 * of two, the table never full); claims it, counting it in *n, when key is
 * absent. */
static size_t query_slot(int64_t *keys, size_t cap, size_t *n, int64_t key) {
  size_t i = (size_t)util_hash(&key, sizeof key) & (cap - 1);
  while (keys[i] && keys[i] != key)
    i = (i + 1) & (cap - 1);
  if (!keys[i]) {
    keys[i] = key;
    (*n)++;
  }
  return i;
}

static void query_ids_add(struct query_ids *s, int64_t id) {
  if (id <= 0)
    return;
  if ((s->n + 1) * 2 > s->cap) {
    struct query_ids t = {xcalloc(s->cap ? s->cap * 2 : 64, sizeof(int64_t)), 0,
                          s->cap ? s->cap * 2 : 64};
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i])
        query_ids_add(&t, s->v[i]);
    free(s->v);
    *s = t;
  }
  query_slot(s->v, s->cap, &s->n, id);
}

/* Adds "<id>":"<string>" to the names map being written to out, or gives
 * the pair to the sink when there is one. */
static void query_name(int64_t id, const char *t, struct sbuf *out,
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
static int query_ids_names(sqlite3 *db, const struct store_names *names,
                           const struct query_ids *s, struct sbuf *out,
                           const struct query_sink *sk, struct query_err *e) {
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
        query_name(s->v[i], t, out, sk, &first);
      continue;
    }
    sqlite3_bind_int64(st, 1, s->v[i]);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      query_name(s->v[i], t ? t : "", out, sk, &first);
    }
    sqlite3_reset(st);
  }
  if (!sk)
    sbuf_addc(out, '}');
  return 0;
}

/* ------------------------------------------------------------------ */
/* track rows */

struct query_track {
  int64_t id, lanes, lod_min; /* lod_min -1: no LOD */
  int64_t events, first_ts, last_ts;
  char kind[16], domain[16], source[64];
};

static void query_copy(char *dst, size_t n, const unsigned char *s) {
  snprintf(dst, n, "%s", s ? (const char *)s : "");
}

/* Reads one track; -ENOENT (naming `param`) when it does not exist. */
static int query_track_get(sqlite3 *db, int64_t id, const char *param,
                           struct query_track *t, struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db,
                               "SELECT kind, domain, source, lanes, "
                               "lod_min_level, event_count, "
                               "coalesce(first_ts, 0), coalesce(last_ts, 0) "
                               "FROM track WHERE id=?1",
                               e);
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, id);
  int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
      return query_db_fail(e, db);
    return query_fail(e, -ENOENT, 404, "not_found",
                      "parameter '%s': no track with id %lld", param,
                      (long long)id);
  }
  t->id = id;
  query_copy(t->kind, sizeof t->kind, sqlite3_column_text(s, 0));
  query_copy(t->domain, sizeof t->domain, sqlite3_column_text(s, 1));
  query_copy(t->source, sizeof t->source, sqlite3_column_text(s, 2));
  t->lanes = sqlite3_column_int64(s, 3);
  t->lod_min = sqlite3_column_type(s, 4) == SQLITE_NULL
                   ? -1
                   : sqlite3_column_int64(s, 4);
  t->events = sqlite3_column_int64(s, 5);
  t->first_ts = sqlite3_column_int64(s, 6);
  t->last_ts = sqlite3_column_int64(s, 7);
  sqlite3_reset(s);
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /slices */

/* (end - start) / px, at least 1 (the window is checked: no overflow). */
int64_t query_resolution(const struct query_window *w) {
  int64_t r = (w->end - w->start) / (w->px > 0 ? w->px : 1);
  return r > 0 ? r : 1;
}

/* Lanes and counter series are kept as QUERY_COLS parallel columns of
 * 8-byte values (int64_t or double) that grow together: each struct names
 * its columns in a union with the array col[] that query_cols_* handle. */
#define QUERY_COLS 5
_Static_assert(sizeof(double) == sizeof(int64_t), "8-byte columns");

/* One value of a row. */
union query_val {
  int64_t i;
  double d;
};

/* Appends row[] (row[i] to column i) as row *n of the columns col[] of
 * capacity *cap, which double when full (first 1024 rows). */
static void query_cols_push(void *col[QUERY_COLS], size_t *n, size_t *cap,
                            const union query_val row[QUERY_COLS]) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 1024;
    for (int i = 0; i < QUERY_COLS; i++)
      col[i] = xrealloc(col[i], *cap * sizeof *row);
  }
  for (int i = 0; i < QUERY_COLS; i++)
    memcpy((char *)col[i] + *n * sizeof *row, &row[i], sizeof *row);
  (*n)++;
}

static void query_cols_free(void *col[QUERY_COLS]) {
  for (int i = 0; i < QUERY_COLS; i++)
    free(col[i]);
}

/* The rows of one lane, before they are written column by column.
 * longest: the longest event's duration in the last row (LOD merging). */
struct query_lane {
  union {
    struct {
      int64_t *ts, *dur, *name, *grp, *count;
    };
    void *col[QUERY_COLS];
  };
  size_t n, cap;
  int64_t longest;
};

static void query_lane_push(struct query_lane *l, int64_t ts, int64_t dur,
                            int64_t name, int64_t grp, int64_t count) {
  union query_val row[] = {
      {.i = ts}, {.i = dur}, {.i = name}, {.i = grp}, {.i = count}};
  query_cols_push(l->col, &l->n, &l->cap, row);
}

/* The points of one counter series (columns: see query_cols_push). */
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

static void query_points_push(struct query_points *p, int64_t ts, double mn,
                              double mx, double last, int64_t count) {
  union query_val row[] = {
      {.i = ts}, {.i = count}, {.d = mn}, {.d = mx}, {.d = last}};
  query_cols_push(p->col, &p->n, &p->cap, row);
}

/* What the tracks of one window answer share: the sink (NULL: JSON), the
 * row buffers, and the names the slices use. */
struct query_run {
  const struct query_sink *sk;
  struct query_lane lane;
  struct query_points points;
  struct query_ids names;
};

static void query_run_free(struct query_run *run) {
  query_cols_free(run->lane.col);
  query_cols_free(run->points.col);
  free(run->names.v);
}

static void query_add_column(struct sbuf *b, const char *key, const int64_t *v,
                             size_t n, int64_t base) {
  sbuf_adds(b, ",\"");
  sbuf_adds(b, key);
  sbuf_adds(b, "\":[");
  sbuf_add_i64s(b, v, n, base);
  sbuf_addc(b, ']');
}

/* Records the names a lane's rows use. */
static void query_lane_names(const struct query_lane *l,
                             struct query_ids *names) {
  for (size_t i = 0; i < l->n; i++) {
    query_ids_add(names, l->name[i]);
    query_ids_add(names, l->grp[i]);
  }
}

/* Writes one lane object and records its names. */
static void query_lane_write(struct sbuf *b, int64_t lane,
                             const struct query_lane *l, int64_t base,
                             bool truncated, struct query_ids *names) {
  sbuf_adds(b, "{\"lane\":");
  sbuf_add_i64(b, lane);
  query_add_column(b, "ts", l->ts, l->n, base);
  query_add_column(b, "dur", l->dur, l->n, 0);
  query_add_column(b, "name", l->name, l->n, 0);
  query_add_column(b, "grp", l->grp, l->n, 0);
  query_add_column(b, "count", l->count, l->n, 0);
  if (truncated)
    sbuf_adds(b, ",\"truncated\":true");
  sbuf_addc(b, '}');
  query_lane_names(l, names);
}

#define QUERY_SQL_RAW_LANE                                                     \
  "SELECT ts, dur, name, coalesce(grp, 0) FROM slice WHERE track=?1 AND "      \
  "lane=?2 AND ts >= coalesce((SELECT ts FROM slice WHERE track=?1 AND "       \
  "lane=?2 AND ts<=?3 ORDER BY ts DESC LIMIT 1), ?3) AND ts < ?4 AND "         \
  "(ts >= ?3 OR ts + dur > ?3) ORDER BY ts LIMIT ?5"

/* Reads one lane raw; returns 1 if the limit was hit, 0, or <0. */
static int query_lane_raw(sqlite3 *db, int64_t track, int64_t lane,
                          const struct query_window *w, struct query_lane *l,
                          struct query_err *e) {
  int64_t limit = 4 * (int64_t)w->px;
  sqlite3_stmt *s = query_stmt(db, QUERY_SQL_RAW_LANE, e);
  int rc;
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){track, lane, w->start, w->end, limit + 1}, 5);
  l->n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if ((int64_t)l->n == limit) {
      sqlite3_reset(s);
      return 1;
    }
    query_lane_push(l, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                    sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3), 1);
  }
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
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
 * negative). */
static int64_t query_pixel(int64_t ts, int64_t start, int64_t r) {
  int64_t d = ts - start;
  return d >= 0 ? d / r : -((-d + r - 1) / r);
}

/* Appends LOD row `row` to l if it reaches into the window.  A row starting in
 * the same pixel column as the previous one merges into it (the level's buckets
 * are 1/2 to 2 pixels wide), and so does a row that continues the previous
 * one's name and grp after a gap under a pixel: at most about one row per
 * pixel, one row for a run of the same event, named after the longest event. */
static void query_lod_row(const struct lod_row *row, int64_t start, int64_t r,
                          struct query_lane *l) {
  if (row->ts < start && row->end <= start)
    return;
  size_t k = l->n - 1;
  if (l->n &&
      (query_pixel(l->ts[k], start, r) == query_pixel(row->ts, start, r) ||
       (l->name[k] == row->name && l->grp[k] == row->grp &&
        row->ts - (l->ts[k] + l->dur[k]) < r))) {
    if (row->end > l->ts[k] + l->dur[k])
      l->dur[k] = row->end - l->ts[k];
    l->count[k] += row->count;
    if (row->dur > l->longest) {
      l->longest = row->dur;
      l->name[k] = row->name;
      l->grp[k] = row->grp;
    }
    return;
  }
  query_lane_push(l, row->ts, row->end - row->ts, row->name, row->grp,
                  row->count);
  l->longest = row->dur;
}

/* Adds the rows of the block in the current row of s (bucket, rows) up to
 * bucket b1 to l.  Returns 0 or -EIO for a block that does not decode. */
static int query_lod_block(sqlite3_stmt *s, int level, int64_t b1,
                           const struct query_window *w, int64_t r,
                           struct query_lane *l, struct query_err *e) {
  struct lod_block b;
  struct lod_row row;
  int rc;
  lod_block_init(&b, level, sqlite3_column_int64(s, 0),
                 sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1));
  while ((rc = lod_block_next(&b, &row)) == 1 && row.bucket <= b1)
    query_lod_row(&row, w->start, r, l);
  if (rc < 0)
    return query_fail(e, -EIO, 500, "store_error",
                      "a level-of-detail block of level %d does not decode",
                      level);
  return 0;
}

/* Reads one lane from LOD level `level`. */
static int query_lane_lod(sqlite3 *db, int64_t track, int64_t lane, int level,
                          const struct query_window *w, struct query_lane *l,
                          struct query_err *e) {
  int shift = LOD_SHIFT(level), rc = 0;
  int64_t b0 = w->start >> shift, b1 = (w->end - 1) >> shift;
  int64_t r = query_resolution(w);
  const char *sql[] = {QUERY_SQL_LOD_FIRST, QUERY_SQL_LOD_LANE};
  l->n = 0;
  for (int i = 0; i < 2; i++) {
    sqlite3_stmt *s = query_stmt(db, sql[i], e);
    if (!s)
      return -EIO;
    query_bind_i64(s, (int64_t[]){track, level, lane, b0, b1}, i ? 5 : 4);
    int step;
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW)
      rc = query_lod_block(s, level, b1, w, r, l, e);
    sqlite3_reset(s);
    if (rc < 0)
      return rc;
    if (step != SQLITE_DONE)
      return query_db_fail(e, db);
  }
  return 0;
}

/* True when the track's average density puts more than one event per
 * pixel per lane in w: reading the raw lanes would only end at the raw
 * limit, so the answer comes from the finest LOD level at once. */
static bool query_dense(const struct query_track *t,
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
static int query_slice_track(sqlite3 *db, const struct query_track *t,
                             const struct query_window *w, int level,
                             struct sbuf *b, struct query_run *run,
                             struct query_err *e) {
  struct query_lane *l = &run->lane;
  const struct query_sink *sk = run->sk;
  struct query_ids *names = &run->names;
  bool raw = t->lod_min < 0 ||
             ((level < 0 || level < t->lod_min) && !query_dense(t, w));
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
      rc = raw ? query_lane_raw(db, t->id, lane, w, l, e)
               : query_lane_lod(db, t->id, lane, used, w, l, e);
      if (rc < 0)
        return rc;
      if (rc == 1 && t->lod_min >= 0) {
        raw = false; /* too many events: answer from the finest LOD */
        again = true;
        break;
      }
      if (sk) {
        sk->lane(sk->ud, lane, l->ts, l->dur, l->name, l->grp, l->count, l->n,
                 rc == 1);
        query_lane_names(l, names);
        continue;
      }
      if (lane)
        sbuf_addc(b, ',');
      query_lane_write(b, lane, l, w->start, rc == 1, names);
    }
    if (!again)
      break;
  }
  if (!sk)
    sbuf_adds(b, "]}");
  return 0;
}

/* Checks the common window parameters against the store. */
static int query_window_check(const struct query_window *w,
                              struct query_err *e) {
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

/* One track's part of a window answer (query_slice_track(),
 * query_counter_track()). */
typedef int (*query_track_fn)(sqlite3 *db, const struct query_track *t,
                              const struct query_window *w, int level,
                              struct sbuf *b, struct query_run *run,
                              struct query_err *e);

/* Runs fn on each track of the (checked) window, which must be of `kind`
 * (else 400 pointing to /api/v1/<other>); tb gets the JSON array of their
 * objects.  Returns 0 or the first error. */
static int query_window_tracks(sqlite3 *db, const struct query_window *w,
                               const char *kind, const char *other,
                               query_track_fn fn, struct query_run *run,
                               struct sbuf *tb, struct query_err *e) {
  int rc = 0;
  int level = query_level(query_resolution(w));
  sbuf_addc(tb, '[');
  for (size_t i = 0; i < w->n_tracks && rc == 0; i++) {
    struct query_track t;
    rc = query_track_get(db, w->tracks[i], "tracks", &t, e);
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

static void query_add_doubles(struct sbuf *b, const char *key, const double *v,
                              size_t n) {
  sbuf_printf(b, ",\"%s\":[", key);
  for (size_t i = 0; i < n; i++) {
    if (i)
      sbuf_addc(b, ',');
    query_add_double(b, v[i]);
  }
  sbuf_addc(b, ']');
}

/* The last raw sample before `before`, as a point. */
static int query_counter_before(sqlite3 *db, int64_t track, int64_t series,
                                int64_t before, struct query_points *p,
                                struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, value FROM counter WHERE track=?1 AND series=?2 AND ts<?3 "
      "ORDER BY ts DESC, seq DESC LIMIT 1",
      e);
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){track, series, before}, 3);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    double v = sqlite3_column_double(s, 1);
    query_points_push(p, sqlite3_column_int64(s, 0), v, v, v, 1);
  }
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* Raw samples of one series; returns 1 if the limit was hit. */
static int query_counter_raw(sqlite3 *db, int64_t track, int64_t series,
                             const struct query_window *w,
                             struct query_points *p, struct query_err *e) {
  int64_t limit = 4 * (int64_t)w->px;
  int rc;
  p->n = 0;
  if ((rc = query_counter_before(db, track, series, w->start, p, e)) < 0)
    return rc;
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, value FROM counter WHERE track=?1 AND series=?2 AND ts>=?3 "
      "AND ts<?4 ORDER BY ts, seq LIMIT ?5",
      e);
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){track, series, w->start, w->end, limit + 1}, 5);
  int64_t got = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (got++ == limit) {
      sqlite3_reset(s);
      return 1;
    }
    double v = sqlite3_column_double(s, 1);
    query_points_push(p, sqlite3_column_int64(s, 0), v, v, v, 1);
  }
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* One series from counter_lod at `level`. */
static int query_counter_lod(sqlite3 *db, int64_t track, int64_t series,
                             int level, const struct query_window *w,
                             struct query_points *p, struct query_err *e) {
  int shift = LOD_SHIFT(level), rc;
  int64_t b0 = w->start >> shift, b1 = (w->end - 1) >> shift;
  p->n = 0;
  if ((rc = query_counter_before(db, track, series, b0 << shift, p, e)) < 0)
    return rc;
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ts, min, max, last, count FROM counter_lod WHERE track=?1 AND "
      "series=?2 AND level=?3 AND bucket>=?4 AND bucket<=?5 ORDER BY bucket",
      e);
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){track, series, level, b0, b1}, 5);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    query_points_push(p, sqlite3_column_int64(s, 0),
                      sqlite3_column_double(s, 1), sqlite3_column_double(s, 2),
                      sqlite3_column_double(s, 3), sqlite3_column_int64(s, 4));
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* The series (number, name, unit) of a counter source. */
struct query_series {
  int64_t series;
  char name[64], unit[16];
};

static int query_series_of(sqlite3 *db, const char *source,
                           struct query_series *out, int max,
                           struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db,
                               "SELECT series, name, unit FROM counter_series "
                               "WHERE source=?1 ORDER BY series",
                               e);
  int n = 0, rc;
  if (!s)
    return -EIO;
  sqlite3_bind_text(s, 1, source, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < max) {
    out[n].series = sqlite3_column_int64(s, 0);
    query_copy(out[n].name, sizeof out[n].name, sqlite3_column_text(s, 1));
    query_copy(out[n].unit, sizeof out[n].unit, sqlite3_column_text(s, 2));
    n++;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    return query_db_fail(e, db);
  if (n == 0) { /* a source without a series table: one main value */
    out[0].series = 0;
    snprintf(out[0].name, sizeof out[0].name, "value");
    out[0].unit[0] = '\0';
    n = 1;
  }
  return n;
}

/* Writes one counter track with every series, or gives the series to the
 * sink sk when there is one (b unused). */
static int query_counter_track(sqlite3 *db, const struct query_track *t,
                               const struct query_window *w, int level,
                               struct sbuf *b, struct query_run *run,
                               struct query_err *e) {
  struct query_points *p = &run->points;
  const struct query_sink *sk = run->sk;
  struct query_series ser[64];
  int n = query_series_of(db, t->source, ser, 64, e), rc = 0;
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
    rc = lvl < 0 ? query_counter_raw(db, t->id, ser[i].series, w, p, e)
                 : query_counter_lod(db, t->id, ser[i].series, lvl, w, p, e);
    if (rc == 1 && t->lod_min >= 0) {
      lvl = (int)t->lod_min;
      rc = query_counter_lod(db, t->id, ser[i].series, lvl, w, p, e);
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
    query_add_column(b, "ts", p->ts, p->n, w->start);
    query_add_doubles(b, "min", p->min, p->n);
    query_add_doubles(b, "max", p->max, p->n);
    query_add_doubles(b, "last", p->last, p->n);
    query_add_column(b, "count", p->count, p->n, 0);
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
                                    query_slice_track, &run, tb, e)
              : query_window_tracks(db, w, "counter", "slices",
                                    query_counter_track, &run, tb, e);
  if (rc == 0 && slices) {
    if (!sk)
      sbuf_adds(out, ",\"names\":");
    rc = query_ids_names(db, w->names, &run.names, sk ? NULL : out, sk, e);
  }
  if (rc == 0 && !sk)
    sbuf_addc(out, '}');
  query_run_free(&run);
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

/* ------------------------------------------------------------------ */
/* GET /tracks */

/* Track rows (see query_rows_load()) with owned strings; free with
 * query_rows_free(). */
struct query_rows {
  struct tracks_row *r;
  size_t n;
  json_t *series; /* source -> array of series names */
  json_t *units;  /* source -> unit of series 0 */
};

static char *query_dup_col(sqlite3_stmt *s, int i) {
  const unsigned char *t = sqlite3_column_text(s, i);
  return t ? xstrdup((const char *)t) : NULL;
}

static int64_t query_int_col(sqlite3_stmt *s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? TRACKS_NONE
                                                  : sqlite3_column_int64(s, i);
}

static void query_rows_free(struct query_rows *q) {
  for (size_t i = 0; i < q->n; i++) {
    free((char *)q->r[i].kind);
    free((char *)q->r[i].domain);
    free((char *)q->r[i].source);
    free((char *)q->r[i].instance_id);
    free((char *)q->r[i].cpu_id);
    free((char *)q->r[i].label);
    free((char *)q->r[i].pname);
    free((char *)q->r[i].plabels);
    free((char *)q->r[i].tname);
  }
  free(q->r);
  json_decref(q->series);
  json_decref(q->units);
}

/* The names of the series of each counter source in q. */
static int query_rows_series(sqlite3 *db, struct query_rows *q,
                             struct query_err *e) {
  q->series = json_object();
  q->units = json_object();
  for (size_t i = 0; i < q->n; i++) {
    struct tracks_row *r = &q->r[i];
    if (strcmp(r->kind, "counter") != 0)
      continue;
    if (!json_object_get(q->series, r->source)) {
      struct query_series ser[64];
      int n = query_series_of(db, r->source, ser, 64, e);
      if (n < 0)
        return n;
      json_t *names = json_array();
      for (int k = 0; k < n; k++)
        json_array_append_new(names, query_json_text(ser[k].name));
      json_object_set_new(q->series, r->source, names);
      json_object_set_new(q->units, r->source, query_json_text(ser[0].unit));
    }
    r->series = json_object_get(q->series, r->source);
    r->unit = json_string_value(json_object_get(q->units, r->source));
  }
  return 0;
}

/* For thread mode: a hardware track without a thread takes the thread that
 * ran nrt_execute on its NeuronCore. */
static int query_rows_hw_threads(sqlite3 *db, struct query_rows *q,
                                 struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT t.tid FROM track t JOIN name_stat ns ON ns.track = t.id "
      "WHERE ns.name IN (SELECT id FROM str WHERE s = 'nrt_execute') "
      "AND t.source = 'neuron_rt' AND t.instance_id = ?1 AND t.pid = ?2 "
      "AND t.nc_idx = ?3 AND t.tid IS NOT NULL ORDER BY ns.count DESC LIMIT 1",
      e);
  if (!s)
    return -EIO;
  for (size_t i = 0; i < q->n; i++) {
    struct tracks_row *r = &q->r[i];
    if (strcmp(r->source, "neuron_hw") != 0 || r->tid != TRACKS_NONE)
      continue;
    sqlite3_bind_text(s, 1, r->instance_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, r->pid);
    sqlite3_bind_int64(s, 3, r->nc);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
      r->tid = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return query_db_fail(e, db);
  }
  return 0;
}

/* The track's process and thread rows (Chrome names). */
#define QUERY_TRACK_P(col)                                                     \
  "(SELECT " col " FROM process p WHERE p.instance_id = track.instance_id "    \
  "AND p.pid = track.pid)"
#define QUERY_TRACK_T(col)                                                     \
  "(SELECT " col " FROM thread h WHERE h.instance_id = track.instance_id "     \
  "AND h.pid = track.pid AND h.tid = track.tid)"
#define QUERY_TRACK_COLS                                                       \
  "id, kind, domain, source, instance_id, cpu_id, label, pid, tid, nc_idx, "   \
  "pcore_idx, worker_gid, stream_id, device_idx, hbm_idx, lanes, "             \
  "event_count, " QUERY_TRACK_P("name") ", " QUERY_TRACK_P(                    \
      "labels") ", " QUERY_TRACK_P("sort_index") ", " QUERY_TRACK_P("named")   \
      ", " QUERY_TRACK_P("chrome") ", " QUERY_TRACK_T(                         \
          "name") ", " QUERY_TRACK_T("sort_index") ", " QUERY_TRACK_T("named")
#define QUERY_TRACK_NCOLS 25

static void query_track_row(sqlite3_stmt *s, struct tracks_row *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(s, 0);
  r->kind = query_dup_col(s, 1);
  r->domain = query_dup_col(s, 2);
  r->source = query_dup_col(s, 3);
  r->instance_id = query_dup_col(s, 4);
  r->cpu_id = query_dup_col(s, 5);
  r->label = query_dup_col(s, 6);
  r->pid = query_int_col(s, 7);
  r->tid = query_int_col(s, 8);
  r->nc = query_int_col(s, 9);
  r->pcore = query_int_col(s, 10);
  r->worker = query_int_col(s, 11);
  r->stream = query_int_col(s, 12);
  r->device = query_int_col(s, 13);
  r->hbm = query_int_col(s, 14);
  r->lanes = sqlite3_column_int64(s, 15);
  r->event_count = sqlite3_column_int64(s, 16);
  r->pname = query_dup_col(s, 17);
  r->plabels = query_dup_col(s, 18);
  r->psort = query_int_col(s, 19);
  r->pnamed = sqlite3_column_int(s, 20);
  r->chrome = sqlite3_column_int(s, 21);
  r->tname = query_dup_col(s, 22);
  r->tsort = query_int_col(s, 23);
  r->tnamed = sqlite3_column_int(s, 24);
  if (!r->kind)
    r->kind = xstrdup("slices");
  if (!r->domain)
    r->domain = xstrdup("system");
  if (!r->source)
    r->source = xstrdup("");
}

/* The rows of the system view (profile -1), of its event tracks only
 * (profile -2: the SystemProfileEvents sources) or of a device profile. */
static int query_rows_load(sqlite3 *db, int64_t profile, struct query_rows *q,
                           struct query_err *e) {
  sqlite3_stmt *s =
      profile == -1
          ? query_stmt(db,
                       "SELECT " QUERY_TRACK_COLS
                       " FROM track WHERE domain = 'system' ORDER BY id",
                       e)
      : profile == -2
          ? query_stmt(db,
                       "SELECT " QUERY_TRACK_COLS
                       " FROM track WHERE domain = 'system' AND kind = "
                       "'slices' AND source IN ('neuron_rt', 'neuron_hw', "
                       "'framework') ORDER BY id",
                       e)
          : query_stmt(db,
                       "SELECT " QUERY_TRACK_COLS
                       " FROM track WHERE domain = 'device' AND "
                       "device_profile_id = ?1 ORDER BY id",
                       e);
  size_t cap = 0;
  int rc;
  memset(q, 0, sizeof *q);
  if (!s)
    return -EIO;
  if (profile >= 0)
    sqlite3_bind_int64(s, 1, profile);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (q->n == cap) {
      cap = cap ? cap * 2 : 64;
      q->r = xrealloc(q->r, cap * sizeof *q->r);
    }
    query_track_row(s, &q->r[q->n++]);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE)
    return query_db_fail(e, db);
  return query_rows_series(db, q, e);
}

int query_tracks(sqlite3 *db, enum tracks_mode m, json_t **out,
                 struct query_err *e) {
  struct query_rows q;
  int rc = query_rows_load(db, -1, &q, e);
  if (rc == 0 && m == TRACKS_THREAD)
    rc = query_rows_hw_threads(db, &q, e);
  if (rc == 0)
    *out = json_pack("{s:s, s:o}", "grouping", tracks_mode_name(m), "tracks",
                     tracks_group(q.r, q.n, m));
  query_rows_free(&q);
  return rc;
}

/* Whether a device profile exists; -ENOENT naming the id otherwise. */
static int query_profile_exists(sqlite3 *db, int64_t id, struct query_err *e) {
  sqlite3_stmt *s =
      query_stmt(db, "SELECT 1 FROM DeviceProfileList WHERE id=?1", e);
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, id);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_ROW)
    return 0;
  if (rc != SQLITE_DONE)
    return query_db_fail(e, db);
  return query_fail(e, -ENOENT, 404, "not_found",
                    "no device profile with id %lld", (long long)id);
}

int query_device_tracks(sqlite3 *db, int64_t profile, json_t **out,
                        struct query_err *e) {
  struct query_rows q;
  int rc = query_profile_exists(db, profile, e);
  if (rc < 0)
    return rc;
  rc = query_rows_load(db, profile, &q, e);
  if (rc == 0)
    *out = json_pack("{s:s, s:o, s:o}", "grouping", "device", "device_profile",
                     query_id(profile), "tracks",
                     tracks_group(q.r, q.n, TRACKS_DEVICE));
  query_rows_free(&q);
  return rc;
}

/* ------------------------------------------------------------------ */
/* small aggregate helpers */

/* Runs a one-row query; *out gets column 0 as int64 (def when NULL). */
static int query_scalar(sqlite3 *db, const char *sql, int64_t def, int64_t *out,
                        struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, sql, e);
  if (!s)
    return -EIO;
  int rc = sqlite3_step(s);
  *out = (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
             ? sqlite3_column_int64(s, 0)
             : def;
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* Every row of a query as an array of objects (small tables only). */
static int query_all_rows(sqlite3 *db, const char *sql, json_t **out,
                          struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, sql, e);
  int rc;
  if (!s)
    return -EIO;
  *out = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(*out, query_row_object(s));
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(*out);
    return query_db_fail(e, db);
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /profile */

int query_profile(sqlite3 *db, json_t **out, struct query_err *e) {
  int64_t start, end, warnings, events, profiles;
  json_t *instances = NULL, *processes = NULL, *metadata = NULL;
  int rc;
  if ((rc = query_scalar(db,
                         "SELECT min(first_ts) FROM track WHERE domain = "
                         "'system'",
                         0, &start, e)) < 0 ||
      (rc = query_scalar(db,
                         "SELECT max(last_ts) FROM track WHERE domain = "
                         "'system'",
                         0, &end, e)) < 0 ||
      (rc = query_scalar(db, "SELECT count(*) FROM Warning", 0, &warnings, e)) <
          0 ||
      (rc = query_scalar(db,
                         "SELECT sum(event_count) FROM track WHERE kind = "
                         "'slices'",
                         0, &events, e)) < 0 ||
      (rc = query_scalar(db, "SELECT count(*) FROM DeviceProfileList", 0,
                         &profiles, e)) < 0)
    return rc;
  if ((rc = query_all_rows(db,
                           "SELECT DISTINCT instance_id FROM track WHERE "
                           "domain = 'system' ORDER BY instance_id",
                           &instances, e)) < 0)
    return rc;
  /* a list of names rather than of one-key objects */
  json_t *names = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(instances, i, v)
      json_array_append(names, json_object_get(v, "instance_id"));
  json_decref(instances);
  if ((rc = query_all_rows(db,
                           "SELECT instance_id, pid, name, dir FROM process "
                           "ORDER BY instance_id, pid",
                           &processes, e)) < 0 ||
      (rc = query_all_rows(db, "SELECT * FROM SystemProfileMetadata", &metadata,
                           e)) < 0) {
    json_decref(names);
    json_decref(processes);
    return rc;
  }
  *out = json_pack("{s:o, s:o, s:o, s:o, s:I, s:o, s:I, s:I}", "start",
                   query_id(start), "end", query_id(end), "instances", names,
                   "processes", processes, "warnings", (json_int_t)warnings,
                   "metadata", metadata, "event_count", (json_int_t)events,
                   "device_profiles", (json_int_t)profiles);
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /events/{key} */

struct query_event {
  int64_t track, lane, ts, id, dur, profile; /* profile: device tracks */
  char *name, *grp;
  json_t *args;        /* object, or NULL */
  char *args_text;     /* its text, numbers as the trace wrote them */
  struct query_rows t; /* the event's track, one row */
};

static void query_event_free(struct query_event *ev) {
  free(ev->name);
  free(ev->grp);
  free(ev->args_text);
  json_decref(ev->args);
  query_rows_free(&ev->t);
}

/* Loads the event named by key; -EINVAL for a malformed key, -ENOENT for an
 * unknown one. */
static int query_event_load(sqlite3 *db, const char *key,
                            struct query_event *ev, struct query_err *e) {
  memset(ev, 0, sizeof *ev);
  if (query_parse_key(key, &ev->track, &ev->lane, &ev->ts) < 0)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "event key must be \"<track>:<lane>:<ts>\" (integers)");
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT id, dur, (SELECT s FROM str WHERE id = name), (SELECT s FROM "
      "str WHERE id = grp), args FROM slice WHERE track=?1 AND lane=?2 AND "
      "ts=?3 ORDER BY id LIMIT 1",
      e);
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){ev->track, ev->lane, ev->ts}, 3);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    ev->id = sqlite3_column_int64(s, 0);
    ev->dur = sqlite3_column_int64(s, 1);
    ev->name = query_dup_col(s, 2);
    ev->grp = query_dup_col(s, 3);
    ev->args =
        query_args_both((const char *)sqlite3_column_text(s, 4), &ev->args_text);
  }
  sqlite3_reset(s);
  if (rc == SQLITE_DONE)
    return query_fail(e, -ENOENT, 404, "not_found", "no event with key %s",
                      key);
  if (rc != SQLITE_ROW)
    return query_db_fail(e, db);
  s = query_stmt(db,
                 "SELECT " QUERY_TRACK_COLS
                 ", coalesce(device_profile_id, -1) FROM track WHERE id=?1",
                 e);
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, ev->track);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    ev->t.r = xcalloc(1, sizeof *ev->t.r);
    query_track_row(s, ev->t.r);
    ev->t.n = 1;
    ev->profile = sqlite3_column_int64(s, QUERY_TRACK_NCOLS);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_ROW)
    return rc == SQLITE_DONE
               ? query_fail(e, -ENOENT, 404, "not_found",
                            "event %s names an unknown track", key)
               : query_db_fail(e, db);
  return 0;
}

/* An int64 column of a track row as an id string, or null. */
static json_t *query_opt_id(int64_t v) {
  return v == TRACKS_NONE ? json_null() : query_id(v);
}

static char *query_key(int64_t track, int64_t lane, int64_t ts) {
  return xasprintf("%lld:%lld:%lld", (long long)track, (long long)lane,
                   (long long)ts);
}

/* Data-flow order of event sources, for upstream/downstream. */
static int query_source_rank(const char *s) {
  if (strcmp(s, "framework") == 0)
    return 0;
  if (strcmp(s, "neuron_rt") == 0)
    return 1;
  if (strcmp(s, "neuron_hw") == 0)
    return 2;
  return 3;
}

/* One event of a dependency chain. */
struct query_link {
  int64_t track, lane, ts, id, dur;
  int rank;
  char *name, *source;
  struct sbuf flows; /* "a,b" */
};

static int query_link_cmp(const void *pa, const void *pb) {
  const struct query_link *a = pa, *b = pb;
  if (a->rank != b->rank)
    return a->rank - b->rank;
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  return a->track < b->track ? -1 : a->track > b->track;
}

#define QUERY_MAX_LINKS 1000

/* Adds the events of flow `flow` to links (deduplicated). */
static int query_flow_links(sqlite3 *db, int64_t flow, struct query_link *links,
                            size_t *n, struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT f.track, f.lane, f.ts, f.id, t.source, (SELECT s FROM str "
      "WHERE id = s.name), s.dur FROM flow f JOIN slice s ON s.track = "
      "f.track AND s.lane = f.lane AND s.ts = f.ts AND s.id = f.id JOIN "
      "track t ON t.id = f.track WHERE f.flow_id = ?1 LIMIT 1000",
      e);
  int rc;
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, flow);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t track = sqlite3_column_int64(s, 0),
            lane = sqlite3_column_int64(s, 1), ts = sqlite3_column_int64(s, 2),
            id = sqlite3_column_int64(s, 3);
    size_t i;
    for (i = 0; i < *n; i++)
      if (links[i].track == track && links[i].lane == lane &&
          links[i].ts == ts && links[i].id == id)
        break;
    if (i == *n) {
      if (*n == QUERY_MAX_LINKS)
        continue;
      struct query_link *l = &links[(*n)++];
      memset(l, 0, sizeof *l);
      l->track = track;
      l->lane = lane;
      l->ts = ts;
      l->id = id;
      l->source = query_dup_col(s, 4);
      if (!l->source)
        l->source = xstrdup("");
      l->name = query_dup_col(s, 5);
      l->dur = sqlite3_column_int64(s, 6);
      l->rank = query_source_rank(l->source);
    }
    if (links[i].flows.len)
      sbuf_addc(&links[i].flows, ',');
    sbuf_add_i64(&links[i].flows, flow);
  }
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

static json_t *query_link_json(const struct query_link *l) {
  char *key = query_key(l->track, l->lane, l->ts);
  json_t *o = json_pack(
      "{s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o}", "key", key, "id",
      query_id(l->id), "name", query_json_text(l->name ? l->name : ""),
      "trace_event_source", query_json_text(l->source), "flow_id",
      l->flows.s ? l->flows.s : "", "start_ts", query_id(l->ts), "duration_ns",
      query_id(l->dur), "track", query_id(l->track));
  free(key);
  return o;
}

/* flow_ids, upstream and downstream of ev. */
static int query_event_flows(sqlite3 *db, const struct query_event *ev,
                             json_t *o, struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db,
                               "SELECT flow_id FROM flow WHERE track=?1 AND "
                               "lane=?2 AND ts=?3 AND id=?4 ORDER BY flow_id",
                               e);
  int64_t flows[64];
  size_t nf = 0, n = 0;
  int rc;
  if (!s)
    return -EIO;
  query_bind_i64(s, (int64_t[]){ev->track, ev->lane, ev->ts, ev->id}, 4);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW && nf < 64)
    flows[nf++] = sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    return query_db_fail(e, db);
  json_t *ids = json_array(), *up = json_array(), *down = json_array();
  struct query_link *links = xcalloc(QUERY_MAX_LINKS, sizeof *links);
  rc = 0;
  for (size_t i = 0; i < nf && rc == 0; i++) {
    json_array_append_new(ids, query_id(flows[i]));
    rc = query_flow_links(db, flows[i], links, &n, e);
  }
  qsort(links, n, sizeof *links, query_link_cmp);
  int my_rank = query_source_rank(ev->t.r->source);
  for (size_t i = 0; i < n; i++) {
    const struct query_link *l = &links[i];
    if (l->track == ev->track && l->lane == ev->lane && l->ts == ev->ts &&
        l->id == ev->id)
      continue;
    bool before = l->rank < my_rank || (l->rank == my_rank && l->ts < ev->ts);
    json_array_append_new(before ? up : down, query_link_json(l));
  }
  for (size_t i = 0; i < n; i++) {
    free(links[i].name);
    free(links[i].source);
    sbuf_free(&links[i].flows);
  }
  free(links);
  json_object_set_new(o, "flow_ids", ids);
  json_object_set_new(o, "upstream", up);
  json_object_set_new(o, "downstream", down);
  return rc;
}

/* ------------------------------------------------------------------ */
/* device-profile matching (drill-down) */

#define QUERY_DP_COLS                                                          \
  "id, device_profile_name, instance_id, process_id, nc_id, pcore_idx, "       \
  "session_id, model_id, model_name, ntff_file, neff_file, time_offset_ns, "   \
  "first_ts, last_ts, instruction_count, dma_count, total_flops, hbm_bytes, "  \
  "peak_flops, hbm_ddr_bandwidth"

/* The current DeviceProfileList row (QUERY_DP_COLS) as the API object. */
static json_t *query_dp_object(sqlite3_stmt *s) {
  json_t *o = json_object();
  int64_t first = sqlite3_column_int64(s, 12),
          last = sqlite3_column_int64(s, 13);
  json_object_set_new(o, "id", query_col_id(s, 0));
  json_object_set_new(o, "name", query_col_text(s, 1));
  json_object_set_new(o, "instance_id", query_col_text(s, 2));
  json_object_set_new(o, "process_id", query_col_id(s, 3));
  json_object_set_new(o, "nc_id", query_col_int(s, 4));
  json_object_set_new(o, "pcore_idx", query_col_int(s, 5));
  json_object_set_new(o, "session_id", query_col_id(s, 6));
  json_object_set_new(o, "model_id", query_col_id(s, 7));
  json_object_set_new(o, "model_name", query_col_text(s, 8));
  json_object_set_new(o, "ntff_file", query_col_text(s, 9));
  json_object_set_new(o, "neff_file", query_col_text(s, 10));
  json_object_set_new(o, "time_offset_ns", query_col_id(s, 11));
  json_object_set_new(o, "start", query_col_id(s, 12));
  json_object_set_new(o, "end", query_col_id(s, 13));
  json_object_set_new(o, "duration_ns", query_id(last - first));
  json_object_set_new(o, "instruction_count", query_col_int(s, 14));
  json_object_set_new(o, "dma_count", query_col_int(s, 15));
  json_object_set_new(o, "total_flops", query_col_any(s, 16));
  json_object_set_new(o, "hbm_bytes", query_col_any(s, 17));
  json_object_set_new(o, "peak_flops", query_col_any(s, 18));
  json_object_set_new(o, "hbm_ddr_bandwidth", query_col_any(s, 19));
  return o;
}

/* An attribute of ev as text (numbers in decimal), or NULL; borrowed from
 * buf or from ev. */
static const char *query_attr(const struct query_event *ev, const char *key,
                              char *buf, size_t n) {
  json_t *v = ev->args ? json_object_get(ev->args, key) : NULL;
  if (json_is_integer(v)) {
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  return json_is_string(v) ? json_string_value(v) : NULL;
}

struct query_target {
  json_t *profile;                     /* the DeviceProfileList object */
  int64_t start, end, execution_index; /* -1: none */
};

/* Finds the device profile of a system event: same instance, process and
 * NeuronCore, and the same model (model mode) or a session covering it
 * (session mode); the ExecutionInfo row with the event's exec_id gives the
 * window.  Returns 0, or -ENOENT (no_device_profile). */
static int query_drill(sqlite3 *db, const struct query_event *ev,
                       struct query_target *tg, struct query_err *e) {
  const struct tracks_row *t = ev->t.r;
  char mbuf[32], xbuf[32];
  const char *model = query_attr(ev, "model_id", mbuf, sizeof mbuf);
  const char *exec = query_attr(ev, "exec_id", xbuf, sizeof xbuf);
  int64_t exec_id = -1;
  memset(tg, 0, sizeof *tg);
  tg->execution_index = -1;
  if (exec && util_parse_i64(exec, &exec_id) < 0)
    exec_id = -1;
  if (strcmp(t->domain, "system") != 0 || t->nc == TRACKS_NONE)
    return query_fail(e, -ENOENT, 404, "no_device_profile",
                      "event %lld:%lld:%lld is not a NeuronCore event",
                      (long long)ev->track, (long long)ev->lane,
                      (long long)ev->ts);
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT " QUERY_DP_COLS ", (SELECT execution_index FROM ExecutionInfo "
      "x WHERE x.device_profile_id = d.id AND x.exec_id = ?4 ORDER BY "
      "execution_index LIMIT 1), (SELECT execution_start_ts FROM "
      "ExecutionInfo x WHERE x.device_profile_id = d.id AND x.exec_id = ?4 "
      "ORDER BY execution_index LIMIT 1), (SELECT execution_end_ts FROM "
      "ExecutionInfo x WHERE x.device_profile_id = d.id AND x.exec_id = ?4 "
      "ORDER BY execution_index LIMIT 1) FROM DeviceProfileList d WHERE "
      "instance_id = ?1 AND process_id = ?2 AND nc_id = ?3 ORDER BY id",
      e);
  int rc, best = 0; /* 3 exec match, 2 model, 1 session covering ts */
  if (!s)
    return -EIO;
  sqlite3_bind_text(s, 1, t->instance_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, t->pid);
  sqlite3_bind_int64(s, 3, t->nc);
  sqlite3_bind_int64(s, 4, exec_id);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *m = (const char *)sqlite3_column_text(s, 7);
    bool session = sqlite3_column_type(s, 6) != SQLITE_NULL;
    bool same_model = model && m && strcmp(model, m) == 0;
    bool has_exec = sqlite3_column_type(s, 20) != SQLITE_NULL;
    int64_t off = sqlite3_column_int64(s, 11);
    bool covers = sqlite3_column_type(s, 11) != SQLITE_NULL &&
                  ev->ts >= sqlite3_column_int64(s, 12) + off &&
                  ev->ts <= sqlite3_column_int64(s, 13) + off;
    int score = 0;
    if (!same_model && !session)
      continue;
    if (has_exec)
      score = 3;
    else if (same_model)
      score = 2;
    else if (covers)
      score = 1;
    if (score <= best)
      continue;
    best = score;
    json_decref(tg->profile);
    tg->profile = query_dp_object(s);
    if (has_exec) {
      tg->execution_index = sqlite3_column_int64(s, 20);
      tg->start = sqlite3_column_type(s, 21) == SQLITE_NULL
                      ? sqlite3_column_int64(s, 12)
                      : sqlite3_column_int64(s, 21);
      tg->end = sqlite3_column_type(s, 22) == SQLITE_NULL
                    ? sqlite3_column_int64(s, 13)
                    : sqlite3_column_int64(s, 22);
    } else {
      tg->start = sqlite3_column_int64(s, 12);
      tg->end = sqlite3_column_int64(s, 13);
    }
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(tg->profile);
    return query_db_fail(e, db);
  }
  if (!tg->profile)
    return query_fail(e, -ENOENT, 404, "no_device_profile",
                      "no device profile matches event %lld:%lld:%lld "
                      "(instance %s, process %lld, NeuronCore %lld)",
                      (long long)ev->track, (long long)ev->lane,
                      (long long)ev->ts, t->instance_id, (long long)t->pid,
                      (long long)t->nc);
  return 0;
}

int query_event(sqlite3 *db, const char *key, struct sbuf *out,
                struct query_err *e) {
  struct query_event ev;
  int rc = query_event_load(db, key, &ev, e);
  if (rc < 0) {
    query_event_free(&ev);
    return rc;
  }
  const struct tracks_row *t = ev.t.r;
  char *k = query_key(ev.track, ev.lane, ev.ts);
  json_t *o = json_object();
  json_object_set_new(o, "key", json_string(k));
  json_object_set_new(o, "id", query_id(ev.id));
  json_object_set_new(o, "name", query_json_text(ev.name ? ev.name : ""));
  json_object_set_new(o, "start_ts", query_id(ev.ts));
  json_object_set_new(o, "end_ts", query_id(ev.ts + ev.dur));
  json_object_set_new(o, "duration_ns", query_id(ev.dur));
  json_object_set_new(o, "trace_event_source", query_json_text(t->source));
  json_object_set_new(o, "domain", query_json_text(t->domain));
  json_object_set_new(o, "instance_id", query_json_text(t->instance_id));
  json_object_set_new(o, "process_id", query_opt_id(t->pid));
  json_object_set_new(o, "thread_id", query_opt_id(t->tid));
  json_object_set_new(o, "nc_idx", query_opt_id(t->nc));
  json_object_set_new(o, "pcore_idx", query_opt_id(t->pcore));
  json_object_set_new(o, "worker_gid", query_opt_id(t->worker));
  json_object_set_new(o, "framework_stream_id", query_opt_id(t->stream));
  json_object_set_new(o, "track", query_id(ev.track));
  json_object_set_new(o, "lane", json_integer(ev.lane));
  if (t->label)
    json_object_set_new(o, "label", query_json_text(t->label));
  if (ev.grp)
    json_object_set_new(o, "group", query_json_text(ev.grp));
  if (ev.profile >= 0)
    json_object_set_new(o, "device_profile_id", query_id(ev.profile));
  free(k);
  rc = query_event_flows(db, &ev, o, e);
  if (rc == 0) {
    struct query_target tg;
    int d = query_drill(db, &ev, &tg, e);
    if (d == 0) {
      json_object_set_new(o, "device_profile",
                          json_pack("{s:O, s:O}", "id",
                                    json_object_get(tg.profile, "id"), "name",
                                    json_object_get(tg.profile, "name")));
      json_decref(tg.profile);
    } else if (d == -ENOENT) {
      json_object_set_new(o, "device_profile", json_null());
    } else {
      rc = d;
    }
  }
  if (rc == 0) {
    /* the members of o, then the attributes as stored: their numbers
     * keep the trace's own text (a double would be printed anew) */
    char *members = json_dumps(o, JSON_COMPACT | JSON_EMBED);
    sbuf_addc(out, '{');
    if (members && *members) {
      sbuf_adds(out, members);
      sbuf_addc(out, ',');
    }
    sbuf_adds(out, "\"attributes\":");
    sbuf_adds(out, ev.args_text ? ev.args_text : "{}");
    sbuf_addc(out, '}');
    free(members);
  }
  query_event_free(&ev);
  json_decref(o);
  return rc;
}

int query_event_device_profile(sqlite3 *db, const char *key, json_t **out,
                               struct query_err *e) {
  struct query_event ev;
  struct query_target tg;
  int rc = query_event_load(db, key, &ev, e);
  if (rc == 0)
    rc = query_drill(db, &ev, &tg, e);
  query_event_free(&ev);
  if (rc < 0)
    return rc;
  *out = json_pack(
      "{s:o, s:o, s:o, s:o}", "device_profile", tg.profile, "start",
      query_id(tg.start), "end", query_id(tg.end), "execution_index",
      tg.execution_index < 0 ? json_null() : json_integer(tg.execution_index));
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /device-profiles */

int query_device_profiles(sqlite3 *db, const char *filter, int64_t page,
                          int64_t per_page, json_t **out, struct query_err *e) {
  const char *f = filter ? filter : "";
  sqlite3_stmt *s = query_stmt(db,
                               "SELECT count(*) FROM DeviceProfileList WHERE "
                               "instr(lower(device_profile_name), lower(?1))",
                               e);
  int64_t total = 0;
  int rc;
  if (!s)
    return -EIO;
  sqlite3_bind_text(s, 1, f, -1, SQLITE_STATIC);
  if ((rc = sqlite3_step(s)) == SQLITE_ROW)
    total = sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  if (rc != SQLITE_ROW)
    return query_db_fail(e, db);
  s = query_stmt(db,
                 "SELECT " QUERY_DP_COLS " FROM DeviceProfileList WHERE "
                 "instr(lower(device_profile_name), lower(?1)) ORDER BY id "
                 "LIMIT ?2 OFFSET ?3",
                 e);
  if (!s)
    return -EIO;
  sqlite3_bind_text(s, 1, f, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, per_page);
  sqlite3_bind_int64(s, 3, (page - 1) * per_page);
  json_t *items = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(items, query_dp_object(s));
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(items);
    return query_db_fail(e, db);
  }
  *out = json_pack("{s:I, s:I, s:I, s:o}", "total", (json_int_t)total, "page",
                   (json_int_t)page, "per_page", (json_int_t)per_page, "items",
                   items);
  return 0;
}

/* ------------------------------------------------------------------ */
/* engine active time: the union of the instruction intervals of a track,
 * merged across its lanes (each lane is sorted and never overlaps itself) */

struct query_cursor_lane {
  sqlite3_stmt *s;
  int64_t ts, end;
};

/* A min-heap of lane cursors keyed by ts. */
static void query_heap_down(struct query_cursor_lane **h, size_t n, size_t i) {
  for (;;) {
    size_t m = i, l = 2 * i + 1, r = l + 1;
    if (l < n && h[l]->ts < h[m]->ts)
      m = l;
    if (r < n && h[r]->ts < h[m]->ts)
      m = r;
    if (m == i)
      return;
    struct query_cursor_lane *t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

/* Steps a lane cursor: 1 row, 0 done, <0 error. */
static int query_lane_step(sqlite3 *db, struct query_cursor_lane *c,
                           struct query_err *e) {
  int rc = sqlite3_step(c->s);
  if (rc == SQLITE_ROW) {
    c->ts = sqlite3_column_int64(c->s, 0);
    c->end = c->ts + sqlite3_column_int64(c->s, 1);
    return 1;
  }
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

static int query_active_ns(sqlite3 *db, int64_t track, int64_t lanes,
                           int64_t *active, struct query_err *e) {
  struct query_cursor_lane *c = xcalloc(lanes ? (size_t)lanes : 1, sizeof *c);
  struct query_cursor_lane **h = xcalloc(lanes ? (size_t)lanes : 1, sizeof *h);
  size_t n = 0;
  int rc = 0;
  int64_t cur_start = 0, cur_end = 0, sum = 0;
  bool open = false;
  for (int64_t l = 0; l < lanes && rc >= 0; l++) {
    c[l].s = query_stmt_once(db,
                             "SELECT ts, dur FROM slice WHERE track=?1 AND "
                             "lane=?2 ORDER BY ts",
                             e);
    if (!c[l].s) {
      rc = -EIO;
      break;
    }
    sqlite3_bind_int64(c[l].s, 1, track);
    sqlite3_bind_int64(c[l].s, 2, l);
    rc = query_lane_step(db, &c[l], e);
    if (rc == 1)
      h[n++] = &c[l];
  }
  for (size_t i = n; i-- > 0;)
    query_heap_down(h, n, i);
  while (rc >= 0 && n > 0) {
    struct query_cursor_lane *top = h[0];
    if (open && top->ts <= cur_end) {
      if (top->end > cur_end)
        cur_end = top->end;
    } else {
      if (open)
        sum += cur_end - cur_start;
      cur_start = top->ts;
      cur_end = top->end;
      open = true;
    }
    rc = query_lane_step(db, top, e);
    if (rc == 0)
      h[0] = h[--n];
    query_heap_down(h, n, 0);
  }
  if (open)
    sum += cur_end - cur_start;
  for (int64_t l = 0; l < lanes; l++)
    sqlite3_finalize(c[l].s);
  free(c);
  free(h);
  *active = sum;
  return rc < 0 ? rc : 0;
}

/* Summary keys of the engine rows. */
static const char *query_engine_key(const char *label) {
  static const char *const map[][2] = {
      {"Tensor", "tensor"}, {"TensorMatrix", "tensor_matrix"},
      {"Vector", "vector"}, {"Scalar", "scalar"},
      {"GpSimd", "gpsimd"}, {"Sync", "sync"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (label && strcmp(label, map[i][0]) == 0)
      return map[i][1];
  return label ? label : "engine";
}

/* Engine figures are costly (every instruction is read once), and a store
 * never changes: they are cached per (store file, profile). */
struct query_engines_cache {
  char *path;
  dev_t dev;
  ino_t ino;
  int64_t profile;
  json_t *engines;
  struct query_engines_cache *next;
};
static pthread_mutex_t query_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct query_engines_cache *query_cache;

static json_t *query_cache_get(const char *path, const struct stat *st,
                               int64_t profile) {
  json_t *j = NULL;
  pthread_mutex_lock(&query_cache_mu);
  for (struct query_engines_cache *c = query_cache; c; c = c->next)
    if (c->profile == profile && c->dev == st->st_dev && c->ino == st->st_ino &&
        strcmp(c->path, path) == 0) {
      j = json_incref(c->engines);
      break;
    }
  pthread_mutex_unlock(&query_cache_mu);
  return j;
}

static void query_cache_put(const char *path, const struct stat *st,
                            int64_t profile, json_t *engines) {
  struct query_engines_cache *c = xcalloc(1, sizeof *c);
  c->path = xstrdup(path);
  c->dev = st->st_dev;
  c->ino = st->st_ino;
  c->profile = profile;
  c->engines = json_incref(engines);
  pthread_mutex_lock(&query_cache_mu);
  c->next = query_cache;
  query_cache = c;
  pthread_mutex_unlock(&query_cache_mu);
}

/* {"tensor":{"active_ns":"..","active_percent":..,"instruction_count":..}}
 * for the engine tracks of a device profile. */
static int query_engines(sqlite3 *db, int64_t profile, int64_t duration,
                         json_t **out, struct query_err *e) {
  const char *path = sqlite3_db_filename(db, "main");
  struct stat st;
  bool cacheable = path && *path && stat(path, &st) == 0;
  json_t *engines = cacheable ? query_cache_get(path, &st, profile) : NULL;
  if (!engines) {
    struct query_rows q;
    int rc = query_rows_load(db, profile, &q, e);
    engines = json_object();
    for (size_t i = 0; i < q.n && rc == 0; i++) {
      const struct tracks_row *r = &q.r[i];
      int64_t active = 0;
      if (strcmp(r->source, "engine") != 0)
        continue;
      rc = query_active_ns(db, r->id, r->lanes, &active, e);
      const char *k = query_engine_key(r->label);
      json_t *prev = json_object_get(engines, k);
      if (prev) { /* two pcores: add up */
        active += atoll(json_string_value(json_object_get(prev, "active_ns")));
        json_object_set_new(prev, "instruction_count",
                            json_integer(json_integer_value(json_object_get(
                                             prev, "instruction_count")) +
                                         r->event_count));
        json_object_set_new(prev, "active_ns", query_id(active));
      } else {
        json_object_set_new(engines, k,
                            json_pack("{s:o, s:I}", "active_ns",
                                      query_id(active), "instruction_count",
                                      (json_int_t)r->event_count));
      }
    }
    query_rows_free(&q);
    if (rc < 0) {
      json_decref(engines);
      return rc;
    }
    if (cacheable)
      query_cache_put(path, &st, profile, engines);
  }
  /* percentages depend only on the duration, computed per call */
  json_t *copy = json_deep_copy(engines);
  const char *k;
  json_t *v;
  json_object_foreach(copy, k, v) {
    int64_t a = atoll(json_string_value(json_object_get(v, "active_ns")));
    json_object_set_new(v, "active_percent",
                        duration > 0
                            ? json_real(100.0 * (double)a / (double)duration)
                            : json_null());
  }
  json_decref(engines);
  *out = copy;
  return 0;
}

/* The summary of one device profile row (QUERY_DP_COLS + calls). */
static int query_dp_summary(sqlite3 *db, sqlite3_stmt *s, json_t **out,
                            struct query_err *e) {
  int64_t id = sqlite3_column_int64(s, 0);
  int64_t duration = sqlite3_column_int64(s, 13) - sqlite3_column_int64(s, 12);
  double secs = (double)duration / 1e9;
  double flops = sqlite3_column_double(s, 16),
         bytes = sqlite3_column_double(s, 17);
  json_t *engines;
  int rc = query_engines(db, id, duration, &engines, e);
  if (rc < 0)
    return rc;
  json_t *mfu = json_null(), *mbu = json_null();
  if (sqlite3_column_type(s, 18) != SQLITE_NULL &&
      sqlite3_column_double(s, 18) > 0 && secs > 0)
    mfu = json_real(100.0 * flops / (sqlite3_column_double(s, 18) * secs));
  if (sqlite3_column_type(s, 19) != SQLITE_NULL &&
      sqlite3_column_double(s, 19) > 0 && secs > 0)
    mbu = json_real(100.0 * bytes / (sqlite3_column_double(s, 19) * secs));
  *out = json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o}", "id",
                   query_id(id), "name", query_col_text(s, 1), "lnc",
                   query_col_int(s, 4), "duration_ns", query_id(duration),
                   "calls", (json_int_t)sqlite3_column_int64(s, 20),
                   "instruction_count", (json_int_t)sqlite3_column_int64(s, 14),
                   "mfu_percent", mfu, "hfu_percent", json_null(),
                   "mbu_percent", mbu, "engines", engines);
  return 0;
}

#define QUERY_SQL_DP_SUMMARY                                                   \
  "SELECT " QUERY_DP_COLS ", (SELECT count(*) FROM ExecutionInfo x WHERE "     \
  "x.device_profile_id = d.id) FROM DeviceProfileList d"

int query_device_profile(sqlite3 *db, int64_t id, json_t **out,
                         struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, QUERY_SQL_DP_SUMMARY " WHERE id=?1", e);
  json_t *o = NULL, *summary = NULL, *execs = NULL, *meta = NULL;
  int rc;
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, id);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    o = query_dp_object(s);
    rc = query_dp_summary(db, s, &summary, e);
  } else if (rc == SQLITE_DONE) {
    rc = query_fail(e, -ENOENT, 404, "not_found",
                    "no device profile with id %lld", (long long)id);
  } else {
    rc = query_db_fail(e, db);
  }
  sqlite3_reset(s);
  if (rc < 0) {
    json_decref(o);
    return rc;
  }
  /* small per-profile tables: rows as objects */
  s = query_stmt(db,
                 "SELECT execution_index, neff_name, execution_start_ts, "
                 "execution_end_ts, num_subgraphs, row_count, exec_id FROM "
                 "ExecutionInfo WHERE device_profile_id=?1 ORDER BY "
                 "execution_index",
                 e);
  if (!s) {
    json_decref(o);
    json_decref(summary);
    return -EIO;
  }
  sqlite3_bind_int64(s, 1, id);
  execs = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(execs, query_row_object(s));
  sqlite3_reset(s);
  if (rc == SQLITE_DONE) {
    s = query_stmt(db, "SELECT * FROM Metadata WHERE device_profile_id=?1", e);
    rc = s ? SQLITE_DONE : SQLITE_ERROR;
    if (s) {
      sqlite3_bind_int64(s, 1, id);
      if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        meta = query_row_object(s);
      sqlite3_reset(s);
    }
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    json_decref(o);
    json_decref(summary);
    json_decref(execs);
    return s ? query_db_fail(e, db) : -EIO;
  }
  json_object_set_new(o, "executions", execs);
  json_object_set_new(o, "metadata", meta ? meta : json_null());
  json_object_set_new(o, "summary", summary);
  *out = o;
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /summary */

int query_summary(sqlite3 *db, json_t **out, struct query_err *e) {
  int64_t instances, processes, start, end;
  int rc;
  if ((rc = query_scalar(db,
                         "SELECT count(DISTINCT instance_id) FROM track WHERE "
                         "domain = 'system'",
                         0, &instances, e)) < 0 ||
      (rc = query_scalar(db, "SELECT count(*) FROM process", 0, &processes,
                         e)) < 0 ||
      (rc = query_scalar(db,
                         "SELECT min(first_ts) FROM track WHERE domain = "
                         "'system'",
                         0, &start, e)) < 0 ||
      (rc = query_scalar(db,
                         "SELECT max(last_ts) FROM track WHERE domain = "
                         "'system'",
                         0, &end, e)) < 0)
    return rc;
  sqlite3_stmt *s = query_stmt(db, QUERY_SQL_DP_SUMMARY " ORDER BY id", e);
  if (!s)
    return -EIO;
  json_t *list = json_array();
  int64_t runtime = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    json_t *one;
    runtime += sqlite3_column_int64(s, 13) - sqlite3_column_int64(s, 12);
    if (query_dp_summary(db, s, &one, e) < 0) {
      rc = SQLITE_ERROR;
      break;
    }
    json_array_append_new(list, one);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(list);
    return rc == SQLITE_ERROR ? -EIO : query_db_fail(e, db);
  }
  json_t *tracks;
  if ((rc = query_tracks(db, TRACKS_DEFAULT, &tracks, e)) < 0) {
    json_decref(list);
    return rc;
  }
  json_t *hbm = json_array(), *t;
  size_t i;
  json_array_foreach(json_object_get(tracks, "tracks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "source")),
               "neuron_hbm_usage") != 0)
      continue;
    json_array_append_new(
        hbm, json_pack("{s:O, s:O}", "track",
                       json_object_get(
                           json_array_get(json_object_get(t, "base"), 0), "id"),
                       "name", json_object_get(t, "name")));
  }
  json_decref(tracks);
  *out = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "instances",
                   (json_int_t)instances, "processes", (json_int_t)processes,
                   "system_profile_time_ns", query_id(end - start),
                   "total_device_runtime_ns", query_id(runtime),
                   "device_profiles", list, "hbm", hbm);
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /search */

#define QUERY_SEARCH_MAX_OFFSET 100000

/* The tracks holding names that match, with those names. */
struct query_match {
  int64_t track, lanes, count;
  bool covered;      /* the window holds the whole track */
  struct sbuf names; /* JSON array of str ids */
};

static int query_search_matches(sqlite3 *db, const struct query_search *q,
                                struct query_match **out, size_t *n,
                                struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT ns.track, ns.name, ns.count, t.lanes, coalesce(t.first_ts, 0), "
      "coalesce(t.last_ts, 0) FROM name_stat ns JOIN track t ON t.id = "
      "ns.track WHERE ns.name IN (SELECT id FROM str WHERE "
      "instr(lower(s), lower(?1))) AND t.domain = ?2 AND t.kind = 'slices' "
      "AND (?3 < 0 OR t.device_profile_id = ?3) ORDER BY ns.track, ns.name",
      e);
  size_t cap = 0;
  int rc;
  *out = NULL;
  *n = 0;
  if (!s)
    return -EIO;
  sqlite3_bind_text(s, 1, q->q, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, q->domain, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, q->profile);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t track = sqlite3_column_int64(s, 0);
    struct query_match *m = *n ? &(*out)[*n - 1] : NULL;
    if (!m || m->track != track) {
      if (*n == cap) {
        cap = cap ? cap * 2 : 16;
        *out = xrealloc(*out, cap * sizeof **out);
      }
      m = &(*out)[(*n)++];
      memset(m, 0, sizeof *m);
      m->track = track;
      m->lanes = sqlite3_column_int64(s, 3);
      m->covered = q->start <= sqlite3_column_int64(s, 4) &&
                   sqlite3_column_int64(s, 5) < q->end;
      sbuf_addc(&m->names, '[');
    } else {
      sbuf_addc(&m->names, ',');
    }
    sbuf_add_i64(&m->names, sqlite3_column_int64(s, 1));
    m->count += sqlite3_column_int64(s, 2);
  }
  sqlite3_reset(s);
  for (size_t i = 0; i < *n; i++)
    sbuf_addc(&(*out)[i].names, ']');
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* Matching events of one track starting in the window (a partial window:
 * counted lane by lane). */
static int query_search_count(sqlite3 *db, const struct query_search *q,
                              const struct query_match *m, int64_t *count,
                              struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT count(*) FROM slice WHERE track=?1 AND lane=?2 AND ts>=?3 AND "
      "ts<?4 AND name IN (SELECT value FROM json_each(?5))",
      e);
  if (!s)
    return -EIO;
  *count = 0;
  for (int64_t l = 0; l < m->lanes; l++) {
    query_bind_i64(s, (int64_t[]){m->track, l, q->start, q->end}, 4);
    sqlite3_bind_text(s, 5, m->names.s, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
      *count += sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW)
      return query_db_fail(e, db);
  }
  return 0;
}

/* One search hit from the current row of a lane cursor. */
static json_t *query_search_item(sqlite3 *db, sqlite3_stmt *c, int64_t track,
                                 int64_t lane, struct query_err *e) {
  int64_t ts = sqlite3_column_int64(c, 0);
  sqlite3_stmt *s = query_stmt(db, "SELECT s FROM str WHERE id=?1", e);
  json_t *name = NULL;
  if (!s)
    return NULL;
  sqlite3_bind_int64(s, 1, sqlite3_column_int64(c, 2));
  if (sqlite3_step(s) == SQLITE_ROW)
    name = query_col_text(s, 0);
  sqlite3_reset(s);
  char *key = query_key(track, lane, ts);
  json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "key", key, "id",
                        query_id(sqlite3_column_int64(c, 3)), "name",
                        name ? name : json_string(""), "start_ts", query_id(ts),
                        "duration_ns", query_id(sqlite3_column_int64(c, 1)),
                        "track", query_id(track));
  free(key);
  return o;
}

struct query_search_lane {
  struct query_cursor_lane c; /* first member: heap entries point here */
  int64_t track, lane;
};

int query_search(sqlite3 *db, const struct query_search *q, json_t **out,
                 struct query_err *e) {
  struct query_match *m;
  size_t nm, nl = 0;
  int64_t total = 0, offset = (q->page - 1) * q->per_page;
  if (offset > QUERY_SEARCH_MAX_OFFSET)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'page': at most %d results can be skipped; "
                      "narrow the search with start/end",
                      QUERY_SEARCH_MAX_OFFSET);
  int rc = query_search_matches(db, q, &m, &nm, e);
  for (size_t i = 0; i < nm && rc == 0; i++) {
    int64_t c = m[i].count;
    if (!m[i].covered)
      rc = query_search_count(db, q, &m[i], &c, e);
    total += c;
    nl += (size_t)m[i].lanes;
  }
  struct query_search_lane *lanes = xcalloc(nl ? nl : 1, sizeof *lanes);
  struct query_cursor_lane **h = xcalloc(nl ? nl : 1, sizeof *h);
  size_t n = 0, k = 0;
  for (size_t i = 0; i < nm && rc == 0 && offset < total; i++)
    for (int64_t l = 0; l < m[i].lanes && rc == 0; l++) {
      struct query_search_lane *sl = &lanes[k++];
      sl->track = m[i].track;
      sl->lane = l;
      sl->c.s = query_stmt_once(
          db,
          "SELECT ts, dur, name, id FROM slice WHERE track=?1 AND lane=?2 "
          "AND ts>=?3 AND ts<?4 AND name IN (SELECT value FROM json_each(?5)) "
          "ORDER BY ts",
          e);
      if (!sl->c.s) {
        rc = -EIO;
        break;
      }
      sqlite3_bind_int64(sl->c.s, 1, m[i].track);
      sqlite3_bind_int64(sl->c.s, 2, l);
      sqlite3_bind_int64(sl->c.s, 3, q->start);
      sqlite3_bind_int64(sl->c.s, 4, q->end);
      sqlite3_bind_text(sl->c.s, 5, m[i].names.s, -1, SQLITE_TRANSIENT);
      rc = query_lane_step(db, &sl->c, e);
      if (rc == 1) {
        h[n++] = &sl->c;
        rc = 0;
      }
    }
  for (size_t i = n; i-- > 0;)
    query_heap_down(h, n, i);
  json_t *items = json_array();
  for (int64_t seen = 0; rc == 0 && n > 0 && seen < offset + q->per_page;
       seen++) {
    struct query_search_lane *top = (struct query_search_lane *)h[0];
    if (seen >= offset) {
      json_t *it = query_search_item(db, top->c.s, top->track, top->lane, e);
      if (!it) {
        rc = -EIO;
        break;
      }
      json_array_append_new(items, it);
    }
    rc = query_lane_step(db, &top->c, e);
    if (rc == 0)
      h[0] = h[--n];
    if (rc >= 0) {
      rc = 0;
      query_heap_down(h, n, 0);
    }
  }
  for (size_t i = 0; i < k; i++)
    sqlite3_finalize(lanes[i].c.s);
  for (size_t i = 0; i < nm; i++)
    sbuf_free(&m[i].names);
  free(m);
  free(lanes);
  free(h);
  if (rc < 0) {
    json_decref(items);
    return rc;
  }
  *out = json_pack("{s:I, s:I, s:I, s:o}", "total", (json_int_t)total, "page",
                   (json_int_t)q->page, "per_page", (json_int_t)q->per_page,
                   "items", items);
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /range-summary */

#define QUERY_RANGE_MAX_EVENTS 5000000

/* One event of a lane, clipped to the window. */
struct query_span {
  int64_t cs, ce, name, self;
};

struct query_spans {
  struct query_span *v;
  size_t n, cap;
};

/* Per-name totals: open addressing on the name id. */
struct query_totals {
  int64_t *name, *count, *total, *self;
  size_t n, cap;
};

static size_t query_totals_slot(struct query_totals *t, int64_t name) {
  if ((t->n + 1) * 2 > t->cap) {
    struct query_totals g = {0};
    g.cap = t->cap ? t->cap * 2 : 64;
    g.name = xcalloc(g.cap, sizeof(int64_t));
    g.count = xcalloc(g.cap, sizeof(int64_t));
    g.total = xcalloc(g.cap, sizeof(int64_t));
    g.self = xcalloc(g.cap, sizeof(int64_t));
    for (size_t i = 0; i < t->cap; i++)
      if (t->name[i]) {
        size_t j = query_totals_slot(&g, t->name[i]);
        g.count[j] = t->count[i];
        g.total[j] = t->total[i];
        g.self[j] = t->self[i];
      }
    free(t->name);
    free(t->count);
    free(t->total);
    free(t->self);
    *t = g;
  }
  return query_slot(t->name, t->cap, &t->n, name);
}

static void query_totals_add(struct query_totals *t,
                             const struct query_spans *s) {
  for (size_t i = 0; i < s->n; i++) {
    size_t k = query_totals_slot(t, s->v[i].name ? s->v[i].name : -1);
    t->count[k]++;
    t->total[k] += s->v[i].ce - s->v[i].cs;
    t->self[k] += s->v[i].self;
  }
}

/* Reads one lane's events overlapping the window into s. */
static int query_range_lane(sqlite3 *db, int64_t track, int64_t lane,
                            const struct query_window *w, struct query_spans *s,
                            int64_t *budget, struct query_err *e) {
  sqlite3_stmt *st = query_stmt(
      db,
      "SELECT ts, dur, name FROM slice WHERE track=?1 AND lane=?2 AND ts >= "
      "coalesce((SELECT ts FROM slice WHERE track=?1 AND lane=?2 AND ts<=?3 "
      "ORDER BY ts DESC LIMIT 1), ?3) AND ts < ?4 AND (ts >= ?3 OR ts + dur > "
      "?3) ORDER BY ts",
      e);
  int rc;
  if (!st)
    return -EIO;
  query_bind_i64(st, (int64_t[]){track, lane, w->start, w->end}, 4);
  s->n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (--*budget < 0) {
      sqlite3_reset(st);
      return query_fail(e, -EINVAL, 400, "bad_parameter",
                        "parameters 'start'/'end': the selection holds more "
                        "than %d events; select a shorter window or fewer "
                        "tracks",
                        QUERY_RANGE_MAX_EVENTS);
    }
    int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
    if (s->n == s->cap) {
      s->cap = s->cap ? s->cap * 2 : 1024;
      s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    struct query_span *sp = &s->v[s->n++];
    sp->cs = ts < w->start ? w->start : ts;
    sp->ce = ts + dur > w->end ? w->end : ts + dur;
    if (sp->ce < sp->cs)
      sp->ce = sp->cs;
    sp->name = sqlite3_column_int64(st, 2);
    sp->self = sp->ce - sp->cs;
  }
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : query_db_fail(e, db);
}

/* Takes each child's time off the parent (the event of the lane above that
 * contains it). */
static void query_range_nest(struct query_spans *parents,
                             const struct query_spans *children) {
  size_t p = 0;
  for (size_t i = 0; i < children->n; i++) {
    const struct query_span *c = &children->v[i];
    while (p + 1 < parents->n && parents->v[p + 1].cs <= c->cs)
      p++;
    if (p < parents->n && parents->v[p].cs <= c->cs &&
        c->ce <= parents->v[p].ce)
      parents->v[p].self -= c->ce - c->cs;
  }
}

static int query_range_cmp(const void *pa, const void *pb) {
  const int64_t *a = pa, *b = pb; /* {total, slot} */
  return a[0] != b[0] ? (a[0] > b[0] ? -1 : 1) : (a[1] > b[1]) - (a[1] < b[1]);
}

int query_range_summary(sqlite3 *db, const struct query_window *w, json_t **out,
                        struct query_err *e) {
  int rc = query_window_check(w, e);
  struct query_spans a = {0}, b = {0};
  struct query_totals t = {0};
  int64_t budget = QUERY_RANGE_MAX_EVENTS;
  for (size_t i = 0; i < w->n_tracks && rc == 0; i++) {
    struct query_track tr;
    rc = query_track_get(db, w->tracks[i], "tracks", &tr, e);
    if (rc == 0 && strcmp(tr.kind, "slices") != 0)
      rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'tracks': track %lld is a %s track",
                      (long long)tr.id, tr.kind);
    struct query_spans *prev = &a, *cur = &b;
    prev->n = 0;
    for (int64_t l = 0; rc == 0 && l < tr.lanes; l++) {
      rc = query_range_lane(db, tr.id, l, w, cur, &budget, e);
      if (rc < 0)
        break;
      query_range_nest(prev, cur);
      query_totals_add(&t, prev);
      struct query_spans *x = prev;
      prev = cur;
      cur = x;
    }
    if (rc == 0)
      query_totals_add(&t, prev);
  }
  if (rc == 0) {
    int64_t(*order)[2] = xcalloc(t.n ? t.n : 1, sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < t.cap; i++)
      if (t.name[i]) {
        order[n][0] = t.total[i];
        order[n][1] = (int64_t)i;
        n++;
      }
    qsort(order, n, sizeof *order, query_range_cmp);
    json_t *rows = json_array();
    sqlite3_stmt *s = query_stmt(db, "SELECT s FROM str WHERE id=?1", e);
    for (size_t k = 0; k < n && s; k++) {
      size_t i = (size_t)order[k][1];
      json_t *name = NULL;
      sqlite3_bind_int64(s, 1, t.name[i]);
      if (sqlite3_step(s) == SQLITE_ROW)
        name = query_col_text(s, 0);
      sqlite3_reset(s);
      json_array_append_new(rows, json_pack("{s:o, s:I, s:o, s:o}", "name",
                                            name ? name : json_string(""),
                                            "count", (json_int_t)t.count[i],
                                            "total_ns", query_id(t.total[i]),
                                            "self_ns", query_id(t.self[i])));
    }
    free(order);
    if (!s) {
      json_decref(rows);
      rc = -EIO;
    } else {
      *out = json_pack("{s:o, s:o, s:o}", "start", query_id(w->start), "end",
                       query_id(w->end), "rows", rows);
    }
  }
  free(a.v);
  free(b.v);
  free(t.name);
  free(t.count);
  free(t.total);
  free(t.self);
  return rc;
}

/* ------------------------------------------------------------------ */
/* POST /db/{name}/_search: the SQL endpoint */

/* Bounds on what one answer of the SQL endpoint may hold, besides
 * QUERY_SQL_MAX_ROWS: any one value (SQLITE_LIMIT_LENGTH), and all the text
 * and blob bytes of the rows (then "truncated"). */
#define QUERY_SQL_MAX_VALUE (16 * 1024 * 1024)
#define QUERY_SQL_MAX_BYTES ((size_t)64 * 1024 * 1024)

struct query_guard {
  int64_t deadline_ns;
  bool timed_out;
  char denied[96]; /* what the authorizer refused */
};

static const char *query_action_name(int action) {
  switch (action) {
  case SQLITE_ATTACH:
    return "ATTACH";
  case SQLITE_DETACH:
    return "DETACH";
  case SQLITE_PRAGMA:
    return "PRAGMA";
  case SQLITE_INSERT:
    return "INSERT";
  case SQLITE_UPDATE:
    return "UPDATE";
  case SQLITE_DELETE:
    return "DELETE";
  case SQLITE_TRANSACTION:
    return "a transaction";
  case SQLITE_RECURSIVE:
    return "a recursive WITH";
  default:
    return "this statement";
  }
}

/* Only reads, SELECTs and harmless functions pass. */
static int query_sql_authorize(void *ud, int action, const char *a1,
                               const char *a2, const char *dbname,
                               const char *trigger) {
  struct query_guard *g = ud;
  if (action == SQLITE_SELECT || action == SQLITE_READ)
    return SQLITE_OK;
  if (action == SQLITE_FUNCTION && a2 &&
      strcasecmp(a2, "load_extension") != 0 &&
      strcasecmp(a2, "fts3_tokenizer") != 0)
    return SQLITE_OK;
  if (!g->denied[0]) {
    if (action == SQLITE_FUNCTION)
      snprintf(g->denied, sizeof g->denied, "function %s()", a2 ? a2 : "?");
    else
      snprintf(g->denied, sizeof g->denied, "%s", query_action_name(action));
  }
  return SQLITE_DENY;
}

static int query_sql_progress(void *ud) {
  struct query_guard *g = ud;
  if (util_now_ns() > g->deadline_ns) {
    g->timed_out = true;
    return 1;
  }
  return 0;
}

/* The error of a failed prepare or step on the SQL endpoint. */
static int query_sql_fail(sqlite3 *db, const struct query_guard *g,
                          struct query_err *e) {
  if (g->denied[0])
    return query_fail(e, -EPERM, 403, "refused",
                      "%s is not allowed: the SQL endpoint runs one read-only "
                      "SELECT",
                      g->denied);
  if (g->timed_out)
    return query_fail(e, -EINVAL, 400, "sql_timeout",
                      "the query ran longer than %d ms and was stopped",
                      QUERY_SQL_TIMEOUT_MS);
  return query_fail(e, -EINVAL, 400, "sql_error", "%s", sqlite3_errmsg(db));
}

/* Refuses anything after the first statement but comments and ';'. */
static int query_sql_single(sqlite3 *db, const char *tail,
                            struct query_err *e) {
  while (tail && *tail) {
    sqlite3_stmt *s = NULL;
    const char *next = NULL;
    int rc = sqlite3_prepare_v2(db, tail, -1, &s, &next);
    sqlite3_finalize(s);
    if (rc != SQLITE_OK || s)
      return query_fail(e, -EINVAL, 400, "sql_error",
                        "the SQL endpoint runs exactly one statement; remove "
                        "everything after the first ';'");
    if (next == tail)
      break;
    tail = next;
  }
  return 0;
}

int query_sql(const char *path, const char *sql, json_t **out,
              struct query_err *e) {
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  const char *tail = NULL;
  struct query_guard g = {0};
  int rc;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    rc = query_fail(e, -EIO, 500, "store_error", "cannot open the store: %s",
                    db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return rc;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, QUERY_SQL_MAX_VALUE);
  sqlite3_busy_timeout(db, 2000);
  sqlite3_exec(db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
  sqlite3_set_authorizer(db, query_sql_authorize, &g);
  g.deadline_ns = util_now_ns() + (int64_t)QUERY_SQL_TIMEOUT_MS * 1000000;
  sqlite3_progress_handler(db, 1000, query_sql_progress, &g);
  rc = sqlite3_prepare_v2(db, sql, -1, &s, &tail);
  if (rc != SQLITE_OK) {
    rc = query_sql_fail(db, &g, e);
  } else if (!s) {
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'query' holds no SQL statement");
  } else if (!sqlite3_stmt_readonly(s)) {
    rc = query_fail(e, -EPERM, 403, "refused",
                    "only read-only SELECT statements are allowed");
  } else {
    rc = query_sql_single(db, tail, e);
  }
  if (rc == 0) {
    int ncol = sqlite3_column_count(s), step;
    json_t *cols = json_array(), *rows = json_array();
    bool truncated = false;
    size_t bytes = 0;
    for (int i = 0; i < ncol; i++)
      json_array_append_new(cols, query_json_text(sqlite3_column_name(s, i)));
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      if (json_array_size(rows) == QUERY_SQL_MAX_ROWS ||
          bytes > QUERY_SQL_MAX_BYTES) {
        truncated = true;
        break;
      }
      json_t *row = json_array();
      for (int i = 0; i < ncol; i++) {
        int type = sqlite3_column_type(s, i);
        json_array_append_new(row, query_col_any(s, i));
        if (type == SQLITE_TEXT || type == SQLITE_BLOB)
          bytes += (size_t)sqlite3_column_bytes(s, i);
      }
      json_array_append_new(rows, row);
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
      rc = query_sql_fail(db, &g, e);
      json_decref(cols);
      json_decref(rows);
    } else {
      *out = json_pack("{s:o, s:o, s:b}", "columns", cols, "rows", rows,
                       "truncated", truncated);
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rc;
}

int query_table_schema(sqlite3 *db, json_t **out, struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
      "AND name NOT LIKE 'sqlite_%' ORDER BY name",
      e);
  sqlite3_stmt *c = query_stmt(
      db, "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid", e);
  int rc = SQLITE_DONE;
  if (!s || !c)
    return -EIO;
  json_t *tables = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    json_t *cols = json_array();
    sqlite3_bind_text(c, 1, (const char *)sqlite3_column_text(s, 0), -1,
                      SQLITE_TRANSIENT);
    while (sqlite3_step(c) == SQLITE_ROW)
      json_array_append_new(cols, json_pack("{s:o, s:o}", "name",
                                            query_col_text(c, 0), "type",
                                            query_col_text(c, 1)));
    sqlite3_reset(c);
    json_array_append_new(
        tables, json_pack("{s:o, s:o, s:o}", "name", query_col_text(s, 0),
                          "type", query_col_text(s, 1), "columns", cols));
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(tables);
    return query_db_fail(e, db);
  }
  *out = json_pack("{s:o}", "tables", tables);
  return 0;
}

/* ------------------------------------------------------------------ */
/* export cursor: the system slices of a window, track by track */

struct query_export {
  sqlite3 *db;
  struct query_rows t; /* system slice tracks */
  int64_t start, end;
  size_t track;    /* current track index */
  int64_t lane;    /* current lane */
  sqlite3_stmt *s; /* rows of (track, lane), or NULL */
};

int query_export_open(sqlite3 *db, int64_t start, int64_t end,
                      struct query_export **out, struct query_err *e) {
  struct query_export *x = xcalloc(1, sizeof *x);
  int rc = query_rows_load(db, -2, &x->t, e);
  if (rc < 0) {
    query_rows_free(&x->t);
    free(x);
    return rc;
  }
  x->db = db;
  x->start = start;
  x->end = end;
  *out = x;
  return 0;
}

const struct tracks_row *query_export_tracks(const struct query_export *x,
                                             size_t *n) {
  *n = x->t.n;
  return x->t.r;
}

int query_export_next(struct query_export *x, struct query_export_event *ev,
                      struct query_err *e) {
  for (;;) {
    if (!x->s) {
      while (x->track < x->t.n &&
             (strcmp(x->t.r[x->track].kind, "slices") != 0 ||
              x->lane >= x->t.r[x->track].lanes)) {
        x->track++;
        x->lane = 0;
      }
      if (x->track >= x->t.n)
        return 0;
      x->s = query_stmt(
          x->db,
          "SELECT s.ts, s.dur, s.id, n.s, s.args, (SELECT group_concat("
          "flow_id) FROM flow f WHERE f.track = s.track AND f.lane = s.lane "
          "AND f.ts = s.ts AND f.id = s.id), (SELECT group_concat(f.flow_id "
          "|| ':' || EXISTS (SELECT 1 FROM flow g WHERE g.flow_id = "
          "f.flow_id AND (g.ts, g.track, g.lane, g.id) < (f.ts, f.track, "
          "f.lane, f.id)) || EXISTS (SELECT 1 FROM flow g WHERE g.flow_id = "
          "f.flow_id AND (g.ts, g.track, g.lane, g.id) > (f.ts, f.track, "
          "f.lane, f.id)) || NOT EXISTS (SELECT 1 FROM flow g JOIN flow h ON "
          "h.track = g.track AND h.lane = g.lane AND h.ts = g.ts AND h.id = "
          "g.id AND h.flow_id <> g.flow_id WHERE g.flow_id = f.flow_id)) "
          "FROM flow f WHERE f.track = s.track AND f.lane = "
          "s.lane AND f.ts = s.ts AND f.id = s.id) FROM slice s JOIN str n "
          "ON n.id = s.name WHERE s.track=?1 AND s.lane=?2 AND s.ts>=?3 AND "
          "s.ts<?4 ORDER BY s.ts",
          e);
      if (!x->s)
        return -EIO;
      sqlite3_bind_int64(x->s, 1, x->t.r[x->track].id);
      sqlite3_bind_int64(x->s, 2, x->lane);
      sqlite3_bind_int64(x->s, 3, x->start);
      sqlite3_bind_int64(x->s, 4, x->end);
    }
    int rc = sqlite3_step(x->s);
    if (rc == SQLITE_ROW) {
      ev->track = &x->t.r[x->track];
      ev->lane = x->lane;
      ev->ts = sqlite3_column_int64(x->s, 0);
      ev->dur = sqlite3_column_int64(x->s, 1);
      ev->id = sqlite3_column_int64(x->s, 2);
      ev->name = (const char *)sqlite3_column_text(x->s, 3);
      ev->args = (const char *)sqlite3_column_text(x->s, 4);
      ev->flows = (const char *)sqlite3_column_text(x->s, 5);
      ev->flow_ends = (const char *)sqlite3_column_text(x->s, 6);
      if (!ev->name)
        ev->name = "";
      return 1;
    }
    if (rc != SQLITE_DONE)
      query_db_fail(e, x->db);
    sqlite3_reset(x->s);
    x->s = NULL;
    if (rc != SQLITE_DONE)
      return -EIO;
    x->lane++;
  }
}

void query_export_close(struct query_export *x) {
  if (!x)
    return;
  if (x->s)
    sqlite3_reset(x->s);
  query_rows_free(&x->t);
  free(x);
}
