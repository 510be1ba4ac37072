/* query_search.c -- GET /summary, /search and /range-summary (see
 * query.h).
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <regex.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* GET /summary */

int query_summary(sqlite3 *db, json_t **out, struct query_err *e) {
  int64_t instances, processes, start, end;
  int rc;
  if ((rc = query_util_scalar(
           db,
           "SELECT count(DISTINCT instance_id) FROM track WHERE "
           "domain = 'system'",
           0, &instances, e)) < 0 ||
      (rc = query_util_scalar(db, "SELECT count(*) FROM process", 0, &processes,
                              e)) < 0 ||
      (rc = query_tracks_span(db, &start, &end, e)) < 0)
    return rc;
  sqlite3_stmt *s = query_stmt(db, QUERY_SQL_DP_SUMMARY " ORDER BY id", e);
  if (!s)
    return -EIO;
  json_t *list = json_array();
  int64_t runtime = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    json_t *one;
    runtime += sqlite3_column_int64(s, 13) - sqlite3_column_int64(s, 12);
    if (query_device_summary(db, s, &one, e) < 0) {
      rc = SQLITE_ERROR;
      break;
    }
    json_array_append_new(list, one);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(list);
    return rc == SQLITE_ERROR ? -EIO : query_util_db_fail(e, db);
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
                   "system_profile_time_ns", query_util_id(end - start),
                   "total_device_runtime_ns", query_util_id(runtime),
                   "device_profiles", list, "hbm", hbm);
  return 0;
}

/* ------------------------------------------------------------------ */
/* GET /search */

#define QUERY_SEARCH_MAX_OFFSET 100000
#define QUERY_SEARCH_MAX_TERMS 16

/* One term of the query; term i binds the parameters ?(10+2i), ?(11+2i). */
enum query_term_kind { QT_WORD, QT_REGEX, QT_TRACK, QT_ARG, QT_DUR };
struct query_term {
  enum query_term_kind kind;
  const char *col;    /* QT_TRACK: track column; QT_DUR: the operator */
  char *text, *path;  /* owned: value text; QT_ARG: JSON path of the key */
  int64_t num;        /* QT_DUR, integer QT_TRACK */
  bool is_num;
};
struct query_terms {
  struct query_term v[QUERY_SEARCH_MAX_TERMS];
  size_t n;
  struct sbuf name, track, slice; /* SQL conditions: " AND ..." */
};

static const struct {
  const char *key, *col;
  bool num;
} query_search_track_keys[] = {
    {"instance", "t.instance_id", false}, {"pid", "t.pid", true},
    {"tid", "t.tid", true},               {"nc", "t.nc_idx", true},
    {"neuroncore", "t.nc_idx", true},     {"source", "t.source", false},
};

static int query_search_bad(struct query_err *e, const char *term,
                            const char *why) {
  return query_fail(e, -EINVAL, 400, "bad_parameter",
                    "parameter 'q': term '%.64s': %s", term, why);
}

/* Parses "2ms", "10us", "1.5s", "300" (ns) into ns. */
static int query_search_dur(const char *v, int64_t *ns) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (end == v || errno || d < 0)
    return -EINVAL;
  static const struct {
    const char *u;
    double f;
  } units[] = {{"", 1},   {"ns", 1},  {"us", 1e3},
               {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strcmp(end, units[i].u) == 0 && d * units[i].f < 9e18) {
      *ns = (int64_t)(d * units[i].f + 0.5);
      return 0;
    }
  return -EINVAL;
}

/* A term "key:value" with key an identifier and a value not starting with
 * ':' (so "aten::mm" stays a word); returns the length of key or 0. */
static size_t query_search_keylen(const char *w) {
  size_t k = 0;
  while (w[k] == '_' || w[k] == '.' || w[k] == '-' ||
         (w[k] >= 'a' && w[k] <= 'z') || (w[k] >= 'A' && w[k] <= 'Z') ||
         (k > 0 && w[k] >= '0' && w[k] <= '9'))
    k++;
  return k > 0 && w[k] == ':' && w[k + 1] && w[k + 1] != ':' ? k : 0;
}

/* One whitespace-free term into t->v[t->n] and its SQL condition. */
static int query_search_term(struct query_terms *t, char *w,
                             struct query_err *e) {
  struct query_term *q = &t->v[t->n];
  int p = 10 + 2 * (int)t->n;
  size_t k;
  memset(q, 0, sizeof *q);
  if (strncmp(w, "name~", 5) == 0) {
    regex_t re;
    if (!w[5] || regcomp(&re, w + 5, REG_EXTENDED | REG_NOSUB | REG_ICASE))
      return query_search_bad(e, w, "not a valid regular expression");
    regfree(&re);
    q->kind = QT_REGEX;
    q->text = xstrdup(w + 5);
    sbuf_printf(&t->name, " AND s REGEXP ?%d", p);
  } else if (strncmp(w, "dur", 3) == 0 && strchr("<>=", w[3]) && w[3]) {
    size_t n = strspn(w + 3, "<>=");
    static const char *ops[] = {">", "<", ">=", "<=", "="};
    q->kind = QT_DUR;
    for (size_t i = 0; i < 5; i++)
      if (strlen(ops[i]) == n && strncmp(w + 3, ops[i], n) == 0)
        q->col = ops[i];
    if (!q->col)
      return query_search_bad(e, w, "the operator must be >, <, >=, <= or =");
    if (query_search_dur(w + 3 + n, &q->num) < 0)
      return query_search_bad(
          e, w, "the duration must be a number with unit ns, us, ms or s");
    sbuf_printf(&t->slice, " AND dur %s ?%d", q->col, p);
  } else if ((k = query_search_keylen(w)) > 0) {
    char *v = w + k + 1;
    w[k] = '\0';
    for (size_t i = 0; i < sizeof query_search_track_keys /
                               sizeof *query_search_track_keys;
         i++)
      if (strcasecmp(w, query_search_track_keys[i].key) == 0) {
        q->kind = QT_TRACK;
        q->col = query_search_track_keys[i].col;
        q->is_num = query_search_track_keys[i].num;
      }
    if (q->kind == QT_TRACK && q->is_num &&
        util_parse_i64(v, &q->num) < 0) {
      w[k] = ':';
      return query_search_bad(e, w, "the value must be an integer");
    }
    q->text = xstrdup(v);
    if (q->kind == QT_TRACK) {
      sbuf_printf(&t->track, " AND %s = ?%d", q->col, p);
    } else {
      q->kind = QT_ARG;
      struct sbuf path = {0};
      sbuf_adds(&path, "$.");
      sbuf_add_json_str(&path, w, k);
      q->path = path.s;
      /* args that are not JSON (a capture attribute flagged as a number
       * whose text JSON does not take) have no attributes to match */
      sbuf_printf(&t->slice,
                  " AND CAST(CASE WHEN json_valid(args) THEN "
                  "json_extract(args, ?%d) END AS TEXT) = ?%d",
                  p, p + 1);
    }
  } else {
    q->kind = QT_WORD;
    q->text = xstrdup(w);
    sbuf_printf(&t->name, " AND instr(lower(s), lower(?%d))", p);
  }
  t->n++;
  return 0;
}

/* Splits the query on blanks into terms (combined with AND). */
static int query_search_parse(const char *text, struct query_terms *t,
                              struct query_err *e) {
  char *copy = xstrdup(text), *save = NULL, *w;
  int rc = 0;
  memset(t, 0, sizeof *t);
  for (w = strtok_r(copy, " \t\r\n", &save); w && rc == 0;
       w = strtok_r(NULL, " \t\r\n", &save))
    rc = t->n == QUERY_SEARCH_MAX_TERMS
             ? query_search_bad(e, w, "at most 16 terms")
             : query_search_term(t, w, e);
  if (rc == 0 && t->n == 0)
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "parameter 'q': no search term");
  free(copy);
  sbuf_adds(&t->name, "");
  sbuf_adds(&t->track, "");
  sbuf_adds(&t->slice, "");
  return rc;
}

static void query_search_terms_free(struct query_terms *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->v[i].text);
    free(t->v[i].path);
  }
  sbuf_free(&t->name);
  sbuf_free(&t->track);
  sbuf_free(&t->slice);
}

/* Binds every term's parameters that s holds. */
static void query_search_bind(sqlite3_stmt *s, const struct query_terms *t) {
  int n = sqlite3_bind_parameter_count(s);
  for (size_t i = 0; i < t->n; i++) {
    const struct query_term *q = &t->v[i];
    int p = 10 + 2 * (int)i;
    if (p > n)
      break;
    if (q->kind == QT_DUR || (q->kind == QT_TRACK && q->is_num))
      sqlite3_bind_int64(s, p, q->num);
    else if (q->kind == QT_ARG) {
      sqlite3_bind_text(s, p, q->path, -1, SQLITE_STATIC);
      sqlite3_bind_text(s, p + 1, q->text, -1, SQLITE_STATIC);
    } else
      sqlite3_bind_text(s, p, q->text, -1, SQLITE_STATIC);
  }
}

/* The tracks holding names that match, with those names. */
struct query_match {
  int64_t track, lanes, count;
  bool covered;      /* the window holds the whole track */
  struct sbuf names; /* JSON array of str ids */
};

static int query_search_matches(sqlite3 *db, const struct query_search *q,
                                const struct query_terms *t,
                                struct query_match **out, size_t *n,
                                struct query_err *e) {
  struct sbuf sql = {0};
  sbuf_printf(&sql,
              "SELECT ns.track, ns.name, ns.count, t.lanes, "
              "coalesce(t.first_ts, 0), coalesce(t.last_ts, 0) FROM name_stat "
              "ns JOIN track t ON t.id = ns.track WHERE ns.name IN (SELECT id "
              "FROM str WHERE 1%s) AND t.domain = ?2 AND t.kind = 'slices' AND "
              "(?3 < 0 OR t.device_profile_id = ?3)%s ORDER BY ns.track, "
              "ns.name",
              t->name.s, t->track.s);
  sqlite3_stmt *s = query_util_stmt_once(db, sql.s, e);
  size_t cap = 0;
  int rc;
  *out = NULL;
  *n = 0;
  sbuf_free(&sql);
  if (!s)
    return -EIO;
  query_search_bind(s, t);
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
      m->covered = !t->slice.s[0] && q->start <= sqlite3_column_int64(s, 4) &&
                   sqlite3_column_int64(s, 5) < q->end;
      sbuf_addc(&m->names, '[');
    } else {
      sbuf_addc(&m->names, ',');
    }
    sbuf_add_i64(&m->names, sqlite3_column_int64(s, 1));
    m->count += sqlite3_column_int64(s, 2);
  }
  sqlite3_finalize(s);
  for (size_t i = 0; i < *n; i++)
    sbuf_addc(&(*out)[i].names, ']');
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* Matching events of one track starting in the window, lane by lane: the
 * columns `what` of SQL ending with `tail` (ORDER BY, GROUP BY or ""). */
static sqlite3_stmt *query_search_slices(sqlite3 *db, const char *what,
                                         const char *tail,
                                         const struct query_terms *t,
                                         struct query_err *e) {
  struct sbuf sql = {0};
  sbuf_printf(&sql,
              "SELECT %s FROM slice WHERE track=?1 AND lane=?2 AND ts>=?3 AND "
              "ts<?4 AND name IN (SELECT value FROM json_each(?5))%s%s",
              what, t->slice.s, tail);
  sqlite3_stmt *s = query_util_stmt_once(db, sql.s, e);
  sbuf_free(&sql);
  if (s)
    query_search_bind(s, t);
  return s;
}

static int query_search_count(sqlite3 *db, const struct query_search *q,
                              const struct query_terms *t,
                              const struct query_match *m, int64_t *count,
                              struct query_err *e) {
  sqlite3_stmt *s = query_search_slices(db, "count(*)", "", t, e);
  if (!s)
    return -EIO;
  *count = 0;
  for (int64_t l = 0; l < m->lanes; l++) {
    query_util_bind_i64(s, (int64_t[]){m->track, l, q->start, q->end}, 4);
    sqlite3_bind_text(s, 5, m->names.s, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
      *count += sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW) {
      rc = query_util_db_fail(e, db);
      sqlite3_finalize(s);
      return rc;
    }
  }
  sqlite3_finalize(s);
  return 0;
}

/* The hits of track m per bucket: *out gets a JSON array of q->buckets
 * counts, bucket i counting the hits starting in [q->start + i * width,
 * q->start + (i + 1) * width), and *count their sum. */
static int query_search_hist(sqlite3 *db, const struct query_search *q,
                             const struct query_terms *t,
                             const struct query_match *m, int64_t width,
                             json_t **out, int64_t *count,
                             struct query_err *e) {
  sqlite3_stmt *s =
      query_search_slices(db, "(ts - ?3) / ?6, count(*)", " GROUP BY 1", t, e);
  if (!s)
    return -EIO;
  int64_t *v = xcalloc((size_t)q->buckets, sizeof *v);
  int rc = SQLITE_DONE;
  *count = 0;
  for (int64_t l = 0; l < m->lanes && rc == SQLITE_DONE; l++) {
    query_util_bind_i64(s, (int64_t[]){m->track, l, q->start, q->end}, 4);
    sqlite3_bind_text(s, 5, m->names.s, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, width);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      int64_t b = sqlite3_column_int64(s, 0), n = sqlite3_column_int64(s, 1);
      if (b >= 0 && b < q->buckets) {
        v[b] += n;
        *count += n;
      }
    }
    sqlite3_reset(s);
  }
  if (rc == SQLITE_DONE) {
    *out = json_array();
    for (int64_t i = 0; i < q->buckets; i++)
      json_array_append_new(*out, json_integer(v[i]));
  }
  free(v);
  rc = rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
  sqlite3_finalize(s);
  return rc;
}

/* The width of the q->buckets buckets of the search window, or < 0 with e
 * filled when the window is not bounded. */
static int64_t query_search_width(const struct query_search *q,
                                  struct query_err *e) {
  if (q->start == INT64_MIN || q->end == INT64_MAX ||
      (q->start < 0 && q->end > INT64_MAX + q->start))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'buckets' needs 'start' and 'end' less than "
                      "2^63 ns apart");
  int64_t span = q->end - q->start;
  return span / q->buckets + (span % q->buckets != 0);
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
    name = query_util_col_text(s, 0);
  sqlite3_reset(s);
  char *key = query_util_key(track, lane, ts);
  json_t *o =
      json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "key", key, "id",
                query_util_id(sqlite3_column_int64(c, 3)), "name",
                name ? name : json_string(""), "start_ts", query_util_id(ts),
                "duration_ns", query_util_id(sqlite3_column_int64(c, 1)),
                "track", query_util_id(track));
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
  struct query_terms t;
  int64_t total = 0, offset = (q->page - 1) * q->per_page + q->offset;
  if (offset > QUERY_SEARCH_MAX_OFFSET)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'page'/'offset': at most %d results can be "
                      "skipped; narrow the search with start/end",
                      QUERY_SEARCH_MAX_OFFSET);
  int64_t width = q->buckets > 0 ? query_search_width(q, e) : 0;
  if (width < 0)
    return (int)width;
  int rc = query_search_parse(q->q, &t, e);
  if (rc < 0) {
    query_search_terms_free(&t);
    return rc;
  }
  rc = query_search_matches(db, q, &t, &m, &nm, e);
  json_t *per_track = json_array();
  for (size_t i = 0; i < nm && rc == 0; i++) {
    json_t *hist = NULL;
    if (width > 0)
      rc = query_search_hist(db, q, &t, &m[i], width, &hist, &m[i].count, e);
    else if (!m[i].covered)
      rc = query_search_count(db, q, &t, &m[i], &m[i].count, e);
    total += m[i].count;
    nl += (size_t)m[i].lanes;
    if (m[i].count > 0) {
      json_t *o = json_pack("{s:o, s:I}", "track", query_util_id(m[i].track),
                            "count", (json_int_t)m[i].count);
      if (hist)
        json_object_set(o, "buckets", hist);
      json_array_append_new(per_track, o);
    }
    json_decref(hist);
  }
  struct query_search_lane *lanes = xcalloc(nl ? nl : 1, sizeof *lanes);
  struct query_cursor_lane **h = xcalloc(nl ? nl : 1, sizeof *h);
  size_t n = 0, k = 0;
  for (size_t i = 0; i < nm && rc == 0 && offset < total; i++)
    for (int64_t l = 0; l < m[i].lanes && rc == 0; l++) {
      struct query_search_lane *sl = &lanes[k++];
      sl->track = m[i].track;
      sl->lane = l;
      sl->c.s =
          query_search_slices(db, "ts, dur, name, id", " ORDER BY ts", &t, e);
      if (!sl->c.s) {
        rc = -EIO;
        break;
      }
      sqlite3_bind_int64(sl->c.s, 1, m[i].track);
      sqlite3_bind_int64(sl->c.s, 2, l);
      sqlite3_bind_int64(sl->c.s, 3, q->start);
      sqlite3_bind_int64(sl->c.s, 4, q->end);
      sqlite3_bind_text(sl->c.s, 5, m[i].names.s, -1, SQLITE_TRANSIENT);
      rc = query_util_lane_step(db, &sl->c, e);
      if (rc == 1) {
        h[n++] = &sl->c;
        rc = 0;
      }
    }
  for (size_t i = n; i-- > 0;)
    query_util_heap_down(h, n, i);
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
    rc = query_util_lane_step(db, &top->c, e);
    if (rc == 0)
      h[0] = h[--n];
    if (rc >= 0) {
      rc = 0;
      query_util_heap_down(h, n, 0);
    }
  }
  for (size_t i = 0; i < k; i++)
    sqlite3_finalize(lanes[i].c.s);
  for (size_t i = 0; i < nm; i++)
    sbuf_free(&m[i].names);
  free(m);
  free(lanes);
  free(h);
  query_search_terms_free(&t);
  if (rc < 0) {
    json_decref(items);
    json_decref(per_track);
    return rc;
  }
  *out = json_pack("{s:I, s:I, s:I, s:I, s:o, s:o}", "total", (json_int_t)total,
                   "page", (json_int_t)q->page, "per_page",
                   (json_int_t)q->per_page, "offset", (json_int_t)offset,
                   "tracks", per_track, "items", items);
  if (width > 0)
    json_object_set_new(*out, "bucket_ns", query_util_id(width));
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

static size_t query_search_totals_slot(struct query_totals *t, int64_t name) {
  if ((t->n + 1) * 2 > t->cap) {
    struct query_totals g = {0};
    g.cap = t->cap ? t->cap * 2 : 64;
    g.name = xcalloc(g.cap, sizeof(int64_t));
    g.count = xcalloc(g.cap, sizeof(int64_t));
    g.total = xcalloc(g.cap, sizeof(int64_t));
    g.self = xcalloc(g.cap, sizeof(int64_t));
    for (size_t i = 0; i < t->cap; i++)
      if (t->name[i]) {
        size_t j = query_search_totals_slot(&g, t->name[i]);
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
  return query_util_slot(t->name, t->cap, &t->n, name);
}

static void query_search_totals_add(struct query_totals *t,
                                    const struct query_spans *s) {
  for (size_t i = 0; i < s->n; i++) {
    size_t k = query_search_totals_slot(t, s->v[i].name ? s->v[i].name : -1);
    t->count[k]++;
    t->total[k] += s->v[i].ce - s->v[i].cs;
    t->self[k] += s->v[i].self;
  }
}

/* Reads one lane's events overlapping the window into s. */
static int query_search_range_lane(sqlite3 *db, int64_t track, int64_t lane,
                                   const struct query_window *w,
                                   struct query_spans *s, int64_t *budget,
                                   struct query_err *e) {
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
  query_util_bind_i64(st, (int64_t[]){track, lane, w->start, w->end}, 4);
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
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* Takes each child's time off the parent (the event of the lane above that
 * contains it). */
static void query_search_range_nest(struct query_spans *parents,
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

static int query_search_range_cmp(const void *pa, const void *pb) {
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
    rc = query_tracks_get(db, w->tracks[i], "tracks", &tr, e);
    if (rc == 0 && strcmp(tr.kind, "slices") != 0)
      rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'tracks': track %lld is a %s track",
                      (long long)tr.id, tr.kind);
    struct query_spans *prev = &a, *cur = &b;
    prev->n = 0;
    for (int64_t l = 0; rc == 0 && l < tr.lanes; l++) {
      rc = query_search_range_lane(db, tr.id, l, w, cur, &budget, e);
      if (rc < 0)
        break;
      query_search_range_nest(prev, cur);
      query_search_totals_add(&t, prev);
      struct query_spans *x = prev;
      prev = cur;
      cur = x;
    }
    if (rc == 0)
      query_search_totals_add(&t, prev);
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
    qsort(order, n, sizeof *order, query_search_range_cmp);
    json_t *rows = json_array();
    sqlite3_stmt *s = query_stmt(db, "SELECT s FROM str WHERE id=?1", e);
    for (size_t k = 0; k < n && s; k++) {
      size_t i = (size_t)order[k][1];
      json_t *name = NULL;
      sqlite3_bind_int64(s, 1, t.name[i]);
      if (sqlite3_step(s) == SQLITE_ROW)
        name = query_util_col_text(s, 0);
      sqlite3_reset(s);
      json_array_append_new(rows,
                            json_pack("{s:o, s:I, s:o, s:o}", "name",
                                      name ? name : json_string(""), "count",
                                      (json_int_t)t.count[i], "total_ns",
                                      query_util_id(t.total[i]), "self_ns",
                                      query_util_id(t.self[i])));
    }
    free(order);
    if (!s) {
      json_decref(rows);
      rc = -EIO;
    } else {
      *out = json_pack("{s:o, s:o, s:o}", "start", query_util_id(w->start),
                       "end", query_util_id(w->end), "rows", rows);
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
