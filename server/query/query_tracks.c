/* query_tracks.c -- track rows: GET /tracks, /device-profiles/{id}/tracks
 * and /profile (see query.h); the grouping itself is tracks.c's.
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void query_tracks_copy(char *dst, size_t n, const unsigned char *s) {
  snprintf(dst, n, "%s", s ? (const char *)s : "");
}

/* Reads one track; -ENOENT (naming `param`) when it does not exist. */
int query_tracks_get(sqlite3 *db, int64_t id, const char *param,
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
      return query_util_db_fail(e, db);
    return query_fail(e, -ENOENT, 404, "not_found",
                      "parameter '%s': no track with id %lld", param,
                      (long long)id);
  }
  t->id = id;
  query_tracks_copy(t->kind, sizeof t->kind, sqlite3_column_text(s, 0));
  query_tracks_copy(t->domain, sizeof t->domain, sqlite3_column_text(s, 1));
  query_tracks_copy(t->source, sizeof t->source, sqlite3_column_text(s, 2));
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

int query_tracks_series(sqlite3 *db, const char *source,
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
    query_tracks_copy(out[n].name, sizeof out[n].name,
                      sqlite3_column_text(s, 1));
    query_tracks_copy(out[n].unit, sizeof out[n].unit,
                      sqlite3_column_text(s, 2));
    n++;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    return query_util_db_fail(e, db);
  if (n == 0) { /* a source without a series table: one main value */
    out[0].series = 0;
    snprintf(out[0].name, sizeof out[0].name, "value");
    out[0].unit[0] = '\0';
    n = 1;
  }
  return n;
}

/* Frees a string of a row: tracks_row's strings are const for its readers,
 * the rows of a query_rows own them. */
static void query_tracks_free_str(const char *s) { free((void *)(uintptr_t)s); }

void query_tracks_rows_free(struct query_rows *q) {
  for (size_t i = 0; i < q->n; i++) {
    query_tracks_free_str(q->r[i].kind);
    query_tracks_free_str(q->r[i].domain);
    query_tracks_free_str(q->r[i].source);
    query_tracks_free_str(q->r[i].instance_id);
    query_tracks_free_str(q->r[i].cpu_id);
    query_tracks_free_str(q->r[i].label);
    query_tracks_free_str(q->r[i].pname);
    query_tracks_free_str(q->r[i].plabels);
    query_tracks_free_str(q->r[i].tname);
  }
  free(q->r);
  json_decref(q->series);
  json_decref(q->units);
}

/* The names of the series of each counter source in q. */
static int query_tracks_rows_series(sqlite3 *db, struct query_rows *q,
                                    struct query_err *e) {
  q->series = json_object();
  q->units = json_object();
  for (size_t i = 0; i < q->n; i++) {
    struct tracks_row *r = &q->r[i];
    if (strcmp(r->kind, "counter") != 0)
      continue;
    if (!json_object_get(q->series, r->source)) {
      struct query_series ser[64];
      int n = query_tracks_series(db, r->source, ser, 64, e);
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
static int query_tracks_hw_threads(sqlite3 *db, struct query_rows *q,
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
      return query_util_db_fail(e, db);
  }
  return 0;
}

void query_tracks_row(sqlite3_stmt *s, struct tracks_row *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(s, 0);
  r->kind = query_util_dup_col(s, 1);
  r->domain = query_util_dup_col(s, 2);
  r->source = query_util_dup_col(s, 3);
  r->instance_id = query_util_dup_col(s, 4);
  r->cpu_id = query_util_dup_col(s, 5);
  r->label = query_util_dup_col(s, 6);
  r->pid = query_util_int_col(s, 7);
  r->tid = query_util_int_col(s, 8);
  r->nc = query_util_int_col(s, 9);
  r->pcore = query_util_int_col(s, 10);
  r->worker = query_util_int_col(s, 11);
  r->stream = query_util_int_col(s, 12);
  r->device = query_util_int_col(s, 13);
  r->hbm = query_util_int_col(s, 14);
  r->lanes = sqlite3_column_int64(s, 15);
  r->event_count = sqlite3_column_int64(s, 16);
  r->pname = query_util_dup_col(s, 17);
  r->plabels = query_util_dup_col(s, 18);
  r->psort = query_util_int_col(s, 19);
  r->pnamed = sqlite3_column_int(s, 20);
  r->chrome = sqlite3_column_int(s, 21);
  r->tname = query_util_dup_col(s, 22);
  r->tsort = query_util_int_col(s, 23);
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
int query_tracks_rows_load(sqlite3 *db, int64_t profile, struct query_rows *q,
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
    query_tracks_row(s, &q->r[q->n++]);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE)
    return query_util_db_fail(e, db);
  return query_tracks_rows_series(db, q, e);
}

int query_tracks(sqlite3 *db, enum tracks_mode m, json_t **out,
                 struct query_err *e) {
  struct query_rows q;
  int rc = query_tracks_rows_load(db, -1, &q, e);
  if (rc == 0 && m == TRACKS_THREAD)
    rc = query_tracks_hw_threads(db, &q, e);
  if (rc == 0)
    *out = json_pack("{s:s, s:o}", "grouping", tracks_mode_name(m), "tracks",
                     tracks_group(q.r, q.n, m));
  query_tracks_rows_free(&q);
  return rc;
}

/* Whether a device profile exists; -ENOENT naming the id otherwise. */
static int query_tracks_profile_exists(sqlite3 *db, int64_t id,
                                       struct query_err *e) {
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
    return query_util_db_fail(e, db);
  return query_fail(e, -ENOENT, 404, "not_found",
                    "no device profile with id %lld", (long long)id);
}

int query_device_tracks(sqlite3 *db, int64_t profile, json_t **out,
                        struct query_err *e) {
  struct query_rows q;
  int rc = query_tracks_profile_exists(db, profile, e);
  if (rc < 0)
    return rc;
  rc = query_tracks_rows_load(db, profile, &q, e);
  if (rc == 0)
    *out = json_pack("{s:s, s:o, s:o}", "grouping", "device", "device_profile",
                     query_util_id(profile), "tracks",
                     tracks_group(q.r, q.n, TRACKS_DEVICE));
  query_tracks_rows_free(&q);
  return rc;
}

int query_tracks_span(sqlite3 *db, int64_t *start, int64_t *end,
                      struct query_err *e) {
  int rc = query_util_scalar(
      db, "SELECT min(first_ts) FROM track WHERE domain = 'system'", 0, start,
      e);
  if (rc == 0)
    rc = query_util_scalar(
        db, "SELECT max(last_ts) FROM track WHERE domain = 'system'", 0, end,
        e);
  return rc;
}

int query_profile(sqlite3 *db, json_t **out, struct query_err *e) {
  int64_t start, end, warnings, events, profiles;
  json_t *instances = NULL, *processes = NULL, *metadata = NULL;
  int rc;
  if ((rc = query_tracks_span(db, &start, &end, e)) < 0 ||
      (rc = query_util_scalar(db, "SELECT count(*) FROM Warning", 0, &warnings,
                              e)) < 0 ||
      (rc = query_util_scalar(db,
                              "SELECT coalesce(sum(event_count), 0) FROM track",
                              0, &events, e)) < 0 ||
      (rc = query_util_scalar(db, "SELECT count(*) FROM DeviceProfileList", 0,
                              &profiles, e)) < 0)
    return rc;
  if ((rc = query_util_all_rows(db,
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
  if ((rc = query_util_all_rows(
           db,
           "SELECT instance_id, pid, name, dir FROM process "
           "ORDER BY instance_id, pid",
           &processes, e)) < 0 ||
      (rc = query_util_all_rows(db, "SELECT * FROM SystemProfileMetadata",
                                &metadata, e)) < 0) {
    json_decref(names);
    json_decref(processes);
    return rc;
  }
  *out = json_pack("{s:o, s:o, s:o, s:o, s:I, s:o, s:I, s:I}", "start",
                   query_util_id(start), "end", query_util_id(end), "instances",
                   names, "processes", processes, "warnings",
                   (json_int_t)warnings, "metadata", metadata, "event_count",
                   (json_int_t)events, "device_profiles", (json_int_t)profiles);
  return 0;
}
