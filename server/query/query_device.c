/* query_device.c -- device profiles: GET /device-profiles,
 * /device-profiles/{id}, the per-profile summary with the engines' active
 * time and the FLOPs utilization, and the instruction dependencies (an
 * instruction's details, the arrows of a window; see query.h).
 */
#include "query_priv.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The current DeviceProfileList row (QUERY_DP_COLS) as the API object. */
json_t *query_device_object(sqlite3_stmt *s) {
  json_t *o = json_object();
  int64_t first = sqlite3_column_int64(s, 12),
          last = sqlite3_column_int64(s, 13);
  json_object_set_new(o, "id", query_util_col_id(s, 0));
  json_object_set_new(o, "name", query_util_col_text(s, 1));
  json_object_set_new(o, "instance_id", query_util_col_text(s, 2));
  json_object_set_new(o, "process_id", query_util_col_id(s, 3));
  json_object_set_new(o, "nc_id", query_util_col_int(s, 4));
  json_object_set_new(o, "pcore_idx", query_util_col_int(s, 5));
  json_object_set_new(o, "session_id", query_util_col_id(s, 6));
  json_object_set_new(o, "model_id", query_util_col_id(s, 7));
  json_object_set_new(o, "model_name", query_util_col_text(s, 8));
  json_object_set_new(o, "ntff_file", query_util_col_text(s, 9));
  json_object_set_new(o, "neff_file", query_util_col_text(s, 10));
  json_object_set_new(o, "time_offset_ns", query_util_col_id(s, 11));
  json_object_set_new(o, "start", query_util_col_id(s, 12));
  json_object_set_new(o, "end", query_util_col_id(s, 13));
  json_object_set_new(o, "duration_ns", query_util_id(last - first));
  json_object_set_new(o, "instruction_count", query_util_col_int(s, 14));
  json_object_set_new(o, "dma_count", query_util_col_int(s, 15));
  json_object_set_new(o, "total_flops", query_util_col_any(s, 16));
  json_object_set_new(o, "hbm_bytes", query_util_col_any(s, 17));
  json_object_set_new(o, "peak_flops", query_util_col_any(s, 18));
  json_object_set_new(o, "hbm_ddr_bandwidth", query_util_col_any(s, 19));
  return o;
}

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
    return query_util_db_fail(e, db);
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
    json_array_append_new(items, query_device_object(s));
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(items);
    return query_util_db_fail(e, db);
  }
  *out = json_pack("{s:I, s:I, s:I, s:o}", "total", (json_int_t)total, "page",
                   (json_int_t)page, "per_page", (json_int_t)per_page, "items",
                   items);
  return 0;
}

/* The engine active time of a track: the union of its instruction
 * intervals, merged across its lanes (each lane is sorted and never
 * overlaps itself) with a heap of lane cursors. */
static int query_device_active_ns(sqlite3 *db, int64_t track, int64_t lanes,
                                  int64_t *active, struct query_err *e) {
  struct query_cursor_lane *c = xcalloc(lanes ? (size_t)lanes : 1, sizeof *c);
  struct query_cursor_lane **h = xcalloc(lanes ? (size_t)lanes : 1, sizeof *h);
  size_t n = 0;
  int rc = 0;
  int64_t cur_start = 0, cur_end = 0, sum = 0;
  bool open = false;
  for (int64_t l = 0; l < lanes && rc >= 0; l++) {
    c[l].s =
        query_util_stmt_once(db,
                             "SELECT ts, dur FROM slice WHERE track=?1 AND "
                             "lane=?2 ORDER BY ts",
                             e);
    if (!c[l].s) {
      rc = -EIO;
      break;
    }
    sqlite3_bind_int64(c[l].s, 1, track);
    sqlite3_bind_int64(c[l].s, 2, l);
    rc = query_util_lane_step(db, &c[l], e);
    if (rc == 1)
      h[n++] = &c[l];
  }
  for (size_t i = n; i-- > 0;)
    query_util_heap_down(h, n, i);
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
    rc = query_util_lane_step(db, top, e);
    if (rc == 0)
      h[0] = h[--n];
    query_util_heap_down(h, n, 0);
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
static const char *query_device_engine_key(const char *label) {
  static const char *const map[][2] = {
      {"Tensor", "tensor"}, {"TensorMatrix", "tensor_matrix"},
      {"Vector", "vector"}, {"Scalar", "scalar"},
      {"GpSimd", "gpsimd"}, {"Sync", "sync"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (label && strcmp(label, map[i][0]) == 0)
      return map[i][1];
  return label ? label : "engine";
}

/* {"tensor":{"active_ns":"..","active_percent":..,"instruction_count":..}}
 * for the engine tracks of a device profile.  Reading every instruction is
 * costly and a store never changes: the figures are kept in the memo of
 * db's pool (store.h), freed with the pool. */
static int query_device_engines(sqlite3 *db, int64_t profile, int64_t duration,
                                json_t **out, struct query_err *e) {
  char key[48];
  snprintf(key, sizeof key, "engines/%lld", (long long)profile);
  const char *kept = store_pool_memo_get(db, key);
  json_t *engines = kept ? json_loads(kept, 0, NULL) : NULL;
  if (!engines) {
    struct query_rows q;
    int rc = query_tracks_rows_load(db, profile, &q, e);
    engines = json_object();
    for (size_t i = 0; i < q.n && rc == 0; i++) {
      const struct tracks_row *r = &q.r[i];
      int64_t active = 0;
      if (strcmp(r->source, "engine") != 0)
        continue;
      rc = query_device_active_ns(db, r->id, r->lanes, &active, e);
      const char *k = query_device_engine_key(r->label);
      json_t *prev = json_object_get(engines, k);
      if (prev) { /* two pcores: add up */
        active += atoll(json_string_value(json_object_get(prev, "active_ns")));
        json_object_set_new(prev, "instruction_count",
                            json_integer(json_integer_value(json_object_get(
                                             prev, "instruction_count")) +
                                         r->event_count));
        json_object_set_new(prev, "active_ns", query_util_id(active));
      } else {
        json_object_set_new(
            engines, k,
            json_pack("{s:o, s:I}", "active_ns", query_util_id(active),
                      "instruction_count", (json_int_t)r->event_count));
      }
    }
    query_tracks_rows_free(&q);
    if (rc < 0) {
      json_decref(engines);
      return rc;
    }
    char *text = json_dumps(engines, JSON_COMPACT);
    if (text)
      store_pool_memo_put(db, key, text);
    free(text);
  }
  /* percentages depend only on the duration, computed per call */
  const char *k;
  json_t *v;
  json_object_foreach(engines, k, v) {
    int64_t a = atoll(json_string_value(json_object_get(v, "active_ns")));
    json_object_set_new(v, "active_percent",
                        duration > 0
                            ? json_real(100.0 * (double)a / (double)duration)
                            : json_null());
  }
  *out = engines;
  return 0;
}

/* The summary of one device profile row (QUERY_DP_COLS + calls). */
int query_device_summary(sqlite3 *db, sqlite3_stmt *s, json_t **out,
                         struct query_err *e) {
  int64_t id = sqlite3_column_int64(s, 0);
  int64_t duration = sqlite3_column_int64(s, 13) - sqlite3_column_int64(s, 12);
  double secs = (double)duration / 1e9;
  double flops = sqlite3_column_double(s, 16),
         bytes = sqlite3_column_double(s, 17);
  json_t *engines;
  int rc = query_device_engines(db, id, duration, &engines, e);
  if (rc < 0)
    return rc;
  /* HFU counts every FLOP the tensor engine did, MFU leaves out the
   * transposes (doc/api.md) */
  json_t *mfu = json_null(), *hfu = json_null(), *mbu = json_null();
  double transpose = sqlite3_column_double(s, 21);
  if (sqlite3_column_type(s, 18) != SQLITE_NULL &&
      sqlite3_column_double(s, 18) > 0 && secs > 0) {
    double peak = sqlite3_column_double(s, 18) * secs;
    mfu = json_real(100.0 * (flops - transpose) / peak);
    hfu = json_real(100.0 * flops / peak);
  }
  if (sqlite3_column_type(s, 19) != SQLITE_NULL &&
      sqlite3_column_double(s, 19) > 0 && secs > 0)
    mbu = json_real(100.0 * bytes / (sqlite3_column_double(s, 19) * secs));
  *out = json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o}", "id",
                   query_util_id(id), "name", query_util_col_text(s, 1), "lnc",
                   query_util_col_int(s, 4), "duration_ns",
                   query_util_id(duration), "calls",
                   (json_int_t)sqlite3_column_int64(s, 20), "instruction_count",
                   (json_int_t)sqlite3_column_int64(s, 14), "mfu_percent", mfu,
                   "hfu_percent", hfu, "mbu_percent", mbu, "engines", engines);
  return 0;
}

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
    o = query_device_object(s);
    rc = query_device_summary(db, s, &summary, e);
  } else if (rc == SQLITE_DONE) {
    rc = query_fail(e, -ENOENT, 404, "not_found",
                    "no device profile with id %lld", (long long)id);
  } else {
    rc = query_util_db_fail(e, db);
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
    json_array_append_new(execs, query_util_row_object(s));
  sqlite3_reset(s);
  if (rc == SQLITE_DONE) {
    s = query_stmt(db, "SELECT * FROM Metadata WHERE device_profile_id=?1", e);
    rc = s ? SQLITE_DONE : SQLITE_ERROR;
    if (s) {
      sqlite3_bind_int64(s, 1, id);
      if ((rc = sqlite3_step(s)) == SQLITE_ROW)
        meta = query_util_row_object(s);
      sqlite3_reset(s);
    }
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    json_decref(o);
    json_decref(summary);
    json_decref(execs);
    return s ? query_util_db_fail(e, db) : -EIO;
  }
  json_object_set_new(o, "executions", execs);
  json_object_set_new(o, "metadata", meta ? meta : json_null());
  json_object_set_new(o, "summary", summary);
  *out = o;
  return 0;
}

/* ------------------------------------------------------------ dependencies */

/* The current row (id, track, lane, ts, dur, name, label) as one end of a
 * dependency; track NULL: not in the profile. */
static json_t *query_device_dep_json(sqlite3_stmt *s) {
  bool found = sqlite3_column_type(s, 1) != SQLITE_NULL;
  char *key = found ? query_util_key(sqlite3_column_int64(s, 1),
                                     sqlite3_column_int64(s, 2),
                                     sqlite3_column_int64(s, 3))
                    : NULL;
  json_t *o = json_pack(
      "{s:o, s:o, s:o, s:o, s:o, s:o}", "key",
      key ? json_string(key) : json_null(), "id", query_util_col_id(s, 0),
      "name", query_util_col_text(s, 5), "label", query_util_col_text(s, 6),
      "start_ts", query_util_col_id(s, 3), "duration_ns",
      query_util_col_id(s, 4));
  free(key);
  return o;
}

/* Runs sql (bound to track, lane, ts, id) and sets o's member to its rows
 * as dependency ends. */
static int query_device_dep_list(sqlite3 *db, const char *sql, const int64_t *v,
                                 const char *member, json_t *o,
                                 struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, sql, e);
  int rc;
  if (!s)
    return -EIO;
  query_util_bind_i64(s, v, 4);
  json_t *list = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(list, query_device_dep_json(s));
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(list);
    return query_util_db_fail(e, db);
  }
  json_object_set_new(o, member, list);
  return 0;
}

int query_device_deps(sqlite3 *db, int64_t track, int64_t lane, int64_t ts,
                      int64_t id, json_t *o, struct query_err *e) {
  const int64_t v[4] = {track, lane, ts, id};
  int rc = query_device_dep_list(
      db,
      "SELECT d.dep_id, d.dep_track, d.dep_lane, d.dep_ts, x.dur, (SELECT s "
      "FROM str WHERE id = x.name), t.label FROM inst_dep d LEFT JOIN slice "
      "x ON x.track = d.dep_track AND x.lane = d.dep_lane AND x.ts = "
      "d.dep_ts AND x.id = d.dep_id LEFT JOIN track t ON t.id = d.dep_track "
      "WHERE d.track = ?1 AND d.ts = ?3 AND d.lane = ?2 AND d.id = ?4 ORDER "
      "BY d.seq",
      v, "dependencies", o, e);
  if (rc == 0)
    rc = query_device_dep_list(
        db,
        "SELECT d.id, d.track, d.lane, d.ts, x.dur, (SELECT s FROM str "
        "WHERE id = x.name), t.label FROM inst_dep_rev d JOIN slice x ON "
        "x.track = d.track AND x.lane = d.lane AND x.ts = d.ts AND x.id = "
        "d.id JOIN track t ON t.id = d.track WHERE d.dep_track = ?1 AND "
        "d.dep_ts = ?3 AND d.dep_lane = ?2 AND d.dep_id = ?4 ORDER BY d.ts, "
        "d.track, d.lane LIMIT 1000",
        v, "dependents", o, e);
  return rc;
}

/* The arrows of a window: the dependencies whose dependent starts in it
 * (inst_dep, sought by dependent), then those whose dependency starts in
 * it and dependent outside (inst_dep_rev, sought by dependency). */
#define QUERY_DEVICE_ARROW_COLS                                                \
  "SELECT d.dep_track, d.dep_lane, d.dep_ts, d.dep_ts + x.dur, d.dep_id, "     \
  "d.track, d.lane, d.ts, d.id FROM "
#define QUERY_DEVICE_ARROW_JOIN                                                \
  " d JOIN slice x ON x.track = d.dep_track AND x.lane = d.dep_lane AND "      \
  "x.ts = d.dep_ts AND x.id = d.dep_id WHERE "
#define QUERY_DEVICE_ENGINES                                                   \
  " IN (SELECT id FROM track WHERE device_profile_id = ?1 AND source = "       \
  "'engine')"

int query_device_arrows(sqlite3 *db, int64_t id, int64_t start, int64_t end,
                        int64_t limit, json_t **out, struct query_err *e) {
  sqlite3_stmt *s =
      query_stmt(db, "SELECT 1 FROM DeviceProfileList WHERE id = ?1", e);
  int64_t n = 0;
  int rc;
  if (!s)
    return -EIO;
  sqlite3_bind_int64(s, 1, id);
  rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_DONE)
    return query_fail(e, -ENOENT, 404, "not_found",
                      "no device profile with id %lld", (long long)id);
  if (rc != SQLITE_ROW)
    return query_util_db_fail(e, db);
  s = query_stmt(
      db,
      QUERY_DEVICE_ARROW_COLS
      "inst_dep" QUERY_DEVICE_ARROW_JOIN "d.track" QUERY_DEVICE_ENGINES
      " AND d.ts >= ?2 AND d.ts < ?3 AND "
      "d.dep_track IS NOT NULL UNION ALL " QUERY_DEVICE_ARROW_COLS
      "inst_dep_rev" QUERY_DEVICE_ARROW_JOIN "d.dep_track" QUERY_DEVICE_ENGINES
      " AND d.dep_ts >= ?2 AND d.dep_ts < ?3 AND (d.ts < ?2 OR "
      "d.ts >= ?3) LIMIT ?4",
      e);
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){id, start, end, limit + 1}, 4);
  json_t *arrows = json_array();
  n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW && n++ < limit) {
    char *from =
        query_util_key(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                       sqlite3_column_int64(s, 2));
    char *to =
        query_util_key(sqlite3_column_int64(s, 5), sqlite3_column_int64(s, 6),
                       sqlite3_column_int64(s, 7));
    json_array_append_new(arrows,
                          json_pack("{s:s, s:o, s:s, s:o, s:o}", "from", from,
                                    "from_end", query_util_col_id(s, 3), "to",
                                    to, "from_id", query_util_col_id(s, 4),
                                    "to_id", query_util_col_id(s, 8)));
    free(from);
    free(to);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    json_decref(arrows);
    return query_util_db_fail(e, db);
  }
  *out = json_pack("{s:o, s:b}", "arrows", arrows, "truncated", n > limit);
  return 0;
}
