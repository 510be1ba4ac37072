/* query_annot.c -- annotations as JSON, their tracks and events mapped to
 * the current store (see query_annot.h).
 */
#include "query_annot.h"
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A track's path: its identifying columns joined by '/'; the same text
 * names the same track in every store built from the same profile. */
#define QUERY_ANNOT_PATH                                                       \
  "(kind||'/'||domain||'/'||source||'/'||instance_id||'/'||ifnull(pid,'')||"   \
  "'/'||ifnull(tid,'')||'/'||ifnull(nc_idx,'')||'/'||ifnull(pcore_idx,'')||"   \
  "'/'||ifnull(worker_gid,'')||'/'||ifnull(stream_id,'')||'/'||"               \
  "ifnull(device_idx,'')||'/'||ifnull(hbm_idx,'')||'/'||ifnull(cpu_id,'')||"   \
  "'/'||ifnull(device_profile_id,'')||'/'||ifnull(label,''))"

/* Maps an annot.h error code and its cause to e; frees cause. */
static int query_annot_fail(struct query_err *e, int rc, char *cause) {
  if (rc == -EINVAL)
    query_fail(e, rc, 400, "bad_parameter", "%s", cause);
  else if (rc == -ENOENT)
    query_fail(e, rc, 404, "not_found", "%s", cause);
  else if (rc == -ENOSPC)
    query_fail(e, rc, 409, "too_many_annotations", "%s", cause);
  else
    query_fail(e, rc, 500, "annotations_error", "%s", cause);
  free(cause);
  return rc;
}

/* The store's tracks by path, read once per answer. */
struct query_annot_track {
  char *path;
  int64_t id, lanes;
};
struct query_annot_map {
  struct query_annot_track *t;
  size_t n;
};

static int query_annot_track_cmp(const void *a, const void *b) {
  return strcmp(((const struct query_annot_track *)a)->path,
                ((const struct query_annot_track *)b)->path);
}

static void query_annot_map_free(struct query_annot_map *m) {
  for (size_t i = 0; i < m->n; i++)
    free(m->t[i].path);
  free(m->t);
}

/* Reads every track's path into m (sorted).  Returns 0 or -EIO. */
static int query_annot_map_load(sqlite3 *db, struct query_annot_map *m,
                                struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db, "SELECT " QUERY_ANNOT_PATH ", id, lanes FROM track ORDER BY id", e);
  size_t cap = 0;
  int rc;
  memset(m, 0, sizeof *m);
  if (!s)
    return -EIO;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (m->n == cap)
      m->t = xrealloc(m->t, (cap = cap ? 2 * cap : 64) * sizeof *m->t);
    m->t[m->n].path = query_util_dup_col(s, 0);
    m->t[m->n].id = sqlite3_column_int64(s, 1);
    m->t[m->n++].lanes = sqlite3_column_int64(s, 2);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    query_annot_map_free(m);
    return query_util_db_fail(e, db);
  }
  qsort(m->t, m->n, sizeof *m->t, query_annot_track_cmp);
  return 0;
}

/* The current track at `path`, or NULL when there is none. */
static const struct query_annot_track *
query_annot_track_at(const struct query_annot_map *m, const char *path) {
  struct query_annot_track k = {(char *)(uintptr_t)path, 0, 0};
  return path ? bsearch(&k, m->t, m->n, sizeof *m->t, query_annot_track_cmp)
              : NULL;
}

/* The current key of r's event on track t: the event named r->event_name
 * starting at r->ts in the lowest lane that has one; NULL when none
 * (malloc'd).  One primary-key lookup per lane. */
static char *query_annot_event_key(sqlite3 *db,
                                   const struct query_annot_track *t,
                                   const struct annot_rec *r) {
  struct query_err e;
  char *key = NULL;
  sqlite3_stmt *s = t && r->event_name
                        ? query_stmt(db,
                                     "SELECT (SELECT s FROM str WHERE id = "
                                     "name) FROM slice WHERE track = ?1 AND "
                                     "lane = ?2 AND ts = ?3",
                                     &e)
                        : NULL;
  for (int64_t l = 0; s && !key && l < (t->lanes > 0 ? t->lanes : 1); l++) {
    query_util_bind_i64(s, (int64_t[]){t->id, l, r->ts}, 3);
    while (!key && sqlite3_step(s) == SQLITE_ROW) {
      const char *name = (const char *)sqlite3_column_text(s, 0);
      if (name && strcmp(name, r->event_name) == 0)
        key = query_util_key(t->id, l, r->ts);
    }
    sqlite3_reset(s);
  }
  return key;
}

static json_t *query_annot_opt(const char *s) {
  return s ? query_json_text(s) : json_null();
}

/* r as the API shows it (a new reference), its track found in m. */
static json_t *query_annot_json(sqlite3 *db, const struct query_annot_map *m,
                                const struct annot_rec *r) {
  const struct query_annot_track *t = query_annot_track_at(m, r->track);
  char *key = query_annot_event_key(db, t, r);
  json_t *o = json_pack(
      "{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
      query_util_id(r->id), "kind", r->kind, "ts", query_util_id(r->ts), "end",
      query_util_id(r->end), "track", t ? query_util_id(t->id) : json_null(),
      "track_path", query_annot_opt(r->track), "event", query_annot_opt(key),
      "event_name", query_annot_opt(r->event_name), "text",
      query_annot_opt(r->text), "color", query_annot_opt(r->color));
  free(key);
  return o;
}

/* The answer of one annotation r into *out.  Returns 0 or -EIO. */
static int query_annot_one(sqlite3 *db, const struct annot_rec *r, json_t **out,
                           struct query_err *e) {
  struct query_annot_map m;
  if (query_annot_map_load(db, &m, e) < 0)
    return -EIO;
  *out = query_annot_json(db, &m, r);
  query_annot_map_free(&m);
  return 0;
}

static int query_annot_list(sqlite3 *db, struct annot *a, json_t **out,
                            struct query_err *e) {
  struct annot_rec *recs;
  size_t n;
  char *cause = NULL;
  struct query_annot_map m;
  int rc = annot_list(a, &recs, &n, &cause);
  if (rc < 0)
    return query_annot_fail(e, rc, cause);
  if (query_annot_map_load(db, &m, e) < 0) {
    annot_list_free(recs, n);
    return -EIO;
  }
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(list, query_annot_json(db, &m, &recs[i]));
  query_annot_map_free(&m);
  annot_list_free(recs, n);
  *out = json_pack("{s:o, s:o}", "file", query_json_text(annot_path(a)),
                   "annotations", list);
  return 0;
}

/* An integer field (a time in ns, a track id): an integer or a string of
 * digits. */
static int query_annot_time(json_t *v, const char *key, int64_t *out,
                            struct query_err *e) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 0;
  }
  if (json_is_string(v) && util_parse_i64(json_string_value(v), out) == 0)
    return 0;
  return query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field '%s' must be an integer or a string of digits", key);
}

/* A string-or-null field into *out (replacing it). */
static int query_annot_str(json_t *v, const char *key, char **out,
                           struct query_err *e) {
  if (!json_is_string(v) && !json_is_null(v))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field '%s' must be a string or null", key);
  free(*out);
  *out = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
  return 0;
}

/* Track `id`'s path into r->track; -EINVAL (400) for an unknown id. */
static int query_annot_track_path(sqlite3 *db, int64_t id, struct annot_rec *r,
                                  struct query_err *e) {
  sqlite3_stmt *s =
      query_stmt(db, "SELECT " QUERY_ANNOT_PATH " FROM track WHERE id = ?1", e);
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, id);
  int rc = sqlite3_step(s);
  free(r->track);
  r->track = rc == SQLITE_ROW ? query_util_dup_col(s, 0) : NULL;
  sqlite3_reset(s);
  if (rc == SQLITE_DONE)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'track': no track with id %lld", (long long)id);
  return rc == SQLITE_ROW ? 0 : query_util_db_fail(e, db);
}

/* The track id field v (or null) as its path into r->track. */
static int query_annot_track(sqlite3 *db, json_t *v, struct annot_rec *r,
                             struct query_err *e) {
  int64_t id;
  if (json_is_null(v)) {
    free(r->track);
    r->track = NULL;
    return 0;
  }
  return query_annot_time(v, "track", &id, e) < 0
             ? -EINVAL
             : query_annot_track_path(db, id, r, e);
}

/* The event key field v into r: its track, start, end and name. */
static int query_annot_event(sqlite3 *db, json_t *v, struct annot_rec *r,
                             struct query_err *e) {
  int64_t k[3];
  free(r->event_name);
  r->event_name = NULL;
  if (json_is_null(v))
    return 0;
  if (!json_is_string(v) ||
      query_parse_key(json_string_value(v), &k[0], &k[1], &k[2]) < 0)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'event' must be an event key "
                      "\"<track>:<lane>:<ts>\" or null");
  sqlite3_stmt *s = query_stmt(db,
                               "SELECT dur, (SELECT s FROM str WHERE id = "
                               "name) FROM slice WHERE track = ?1 AND lane = "
                               "?2 AND ts = ?3 ORDER BY id LIMIT 1",
                               e);
  if (!s)
    return -EIO;
  query_util_bind_i64(s, k, 3);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    r->end = k[2] + sqlite3_column_int64(s, 0);
    r->event_name = query_util_dup_col(s, 1);
  }
  sqlite3_reset(s);
  if (rc == SQLITE_DONE)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'event': no event with key %s",
                      json_string_value(v));
  if (rc != SQLITE_ROW)
    return query_util_db_fail(e, db);
  r->ts = k[2];
  return query_annot_track_path(db, k[0], r, e);
}

/* Applies the fields of body to r (the event last: its times win). */
static int query_annot_apply(sqlite3 *db, json_t *body, struct annot_rec *r,
                             struct query_err *e) {
  const char *key;
  json_t *v;
  if (!json_is_object(body))
    return query_fail(e, -EINVAL, 400, "bad_request",
                      "the body must be a JSON object");
  json_object_foreach(body, key, v) {
    int rc = 0;
    if (strcmp(key, "kind") == 0) {
      if (!json_is_string(v))
        return query_fail(e, -EINVAL, 400, "bad_parameter",
                          "field 'kind' must be flag, note or area");
      snprintf(r->kind, sizeof r->kind, "%.7s", json_string_value(v));
    } else if (strcmp(key, "ts") == 0) {
      rc = query_annot_time(v, key, &r->ts, e);
    } else if (strcmp(key, "end") == 0) {
      rc = query_annot_time(v, key, &r->end, e);
    } else if (strcmp(key, "text") == 0) {
      rc = query_annot_str(v, key, &r->text, e);
    } else if (strcmp(key, "color") == 0) {
      rc = query_annot_str(v, key, &r->color, e);
    } else if (strcmp(key, "track") == 0) {
      json_t *ev = json_object_get(body, "event");
      if (!ev || json_is_null(ev))
        rc = query_annot_track(db, v, r, e);
    } else if (strcmp(key, "event") != 0) {
      return query_fail(e, -EINVAL, 400, "bad_parameter",
                        "unknown field '%.64s': kind, ts, end, event, track, "
                        "text and color are",
                        key);
    }
    if (rc < 0)
      return rc;
  }
  v = json_object_get(body, "event");
  return v ? query_annot_event(db, v, r, e) : 0;
}

/* The kind's rules: a flag is a time; an area a range. */
static int query_annot_rules(struct annot_rec *r, struct query_err *e) {
  if (strcmp(r->kind, "flag") == 0 ||
      (strcmp(r->kind, "note") == 0 && !r->event_name && r->end < r->ts))
    r->end = r->ts;
  if (strcmp(r->kind, "area") == 0 && r->end <= r->ts)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "an area needs 'end' after 'ts'");
  return 0;
}

static int query_annot_add(sqlite3 *db, struct annot *a, json_t *body,
                           json_t **out, struct query_err *e) {
  struct annot_rec r = {.ts = INT64_MIN, .end = INT64_MIN};
  char *cause = NULL;
  int rc = query_annot_apply(db, body, &r, e);
  if (rc == 0 && !json_object_get(body, "kind"))
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'kind' is required: flag, note or area");
  else if (rc == 0 && r.ts == INT64_MIN)
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'ts' (or 'event') is required");
  if (rc == 0)
    rc = query_annot_rules(&r, e);
  if (rc == 0 && (rc = annot_add(a, &r, &r.id, &cause)) < 0)
    query_annot_fail(e, rc, cause);
  if (rc == 0)
    rc = query_annot_one(db, &r, out, e);
  annot_rec_free(&r);
  return rc;
}

static int query_annot_update(sqlite3 *db, struct annot *a, int64_t id,
                              json_t *body, json_t **out, struct query_err *e) {
  struct annot_rec r;
  char *cause = NULL;
  int rc = annot_get(a, id, &r, &cause);
  if (rc < 0)
    return query_annot_fail(e, rc, cause);
  rc = query_annot_apply(db, body, &r, e);
  if (rc == 0)
    rc = query_annot_rules(&r, e);
  if (rc == 0 && (rc = annot_update(a, &r, &cause)) < 0)
    query_annot_fail(e, rc, cause);
  if (rc == 0)
    rc = query_annot_one(db, &r, out, e);
  annot_rec_free(&r);
  return rc;
}

static int query_annot_delete(struct annot *a, int64_t id, json_t **out,
                              struct query_err *e) {
  char *cause = NULL;
  int rc = annot_delete(a, id, &cause);
  if (rc < 0)
    return query_annot_fail(e, rc, cause);
  *out = json_pack("{s:o}", "deleted", query_util_id(id));
  return 0;
}

int query_annot(sqlite3 *db, struct annot *a, const char *method, int64_t id,
                const char *body, size_t body_len, json_t **out,
                struct query_err *e) {
  json_error_t jerr;
  json_t *j = NULL;
  int rc;
  if (strcmp(method, "DELETE") == 0)
    return query_annot_delete(a, id, out, e);
  if (strcmp(method, "POST") != 0 && strcmp(method, "PATCH") != 0)
    return query_annot_list(db, a, out, e);
  j = body ? json_loadb(body, body_len, 0, &jerr) : NULL;
  if (!json_is_object(j))
    rc = query_fail(e, -EINVAL, 400, "bad_request",
                    "the body must be a JSON object%s%s", j ? "" : ": ",
                    j      ? ""
                    : body ? jerr.text
                           : "none was sent");
  else if (strcmp(method, "POST") == 0)
    rc = query_annot_add(db, a, j, out, e);
  else
    rc = query_annot_update(db, a, id, j, out, e);
  json_decref(j);
  return rc;
}
