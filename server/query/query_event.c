/* query_event.c -- GET /events/{key}: the event, its flows with the
 * events upstream and downstream, and the device profile it drills down to
 * (see query.h).
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  query_tracks_rows_free(&ev->t);
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
  query_util_bind_i64(s, (int64_t[]){ev->track, ev->lane, ev->ts}, 3);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    ev->id = sqlite3_column_int64(s, 0);
    ev->dur = sqlite3_column_int64(s, 1);
    ev->name = query_util_dup_col(s, 2);
    ev->grp = query_util_dup_col(s, 3);
    ev->args = query_util_args((const char *)sqlite3_column_text(s, 4),
                               &ev->args_text);
  }
  sqlite3_reset(s);
  if (rc == SQLITE_DONE)
    return query_fail(e, -ENOENT, 404, "not_found", "no event with key %s",
                      key);
  if (rc != SQLITE_ROW)
    return query_util_db_fail(e, db);
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
    query_tracks_row(s, ev->t.r);
    ev->t.n = 1;
    ev->profile = sqlite3_column_int64(s, QUERY_TRACK_NCOLS);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_ROW)
    return rc == SQLITE_DONE
               ? query_fail(e, -ENOENT, 404, "not_found",
                            "event %s names an unknown track", key)
               : query_util_db_fail(e, db);
  return 0;
}

/* An int64 column of a track row as an id string, or null. */
static json_t *query_event_opt_id(int64_t v) {
  return v == TRACKS_NONE ? json_null() : query_util_id(v);
}

/* Data-flow order of event sources, for upstream/downstream. */
static int query_event_source_rank(const char *s) {
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

static int query_event_link_cmp(const void *pa, const void *pb) {
  const struct query_link *a = pa, *b = pb;
  if (a->rank != b->rank)
    return a->rank - b->rank;
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  return a->track < b->track ? -1 : a->track > b->track;
}

#define QUERY_MAX_LINKS 1000

/* Adds the events of flow `flow` to links (deduplicated). */
static int query_event_flow_links(sqlite3 *db, int64_t flow,
                                  struct query_link *links, size_t *n,
                                  struct query_err *e) {
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
      l->source = query_util_dup_col(s, 4);
      if (!l->source)
        l->source = xstrdup("");
      l->name = query_util_dup_col(s, 5);
      l->dur = sqlite3_column_int64(s, 6);
      l->rank = query_event_source_rank(l->source);
    }
    if (links[i].flows.len)
      sbuf_addc(&links[i].flows, ',');
    sbuf_add_i64(&links[i].flows, flow);
  }
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

static json_t *query_event_link_json(const struct query_link *l) {
  char *key = query_util_key(l->track, l->lane, l->ts);
  json_t *o = json_pack(
      "{s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o}", "key", key, "id",
      query_util_id(l->id), "name", query_json_text(l->name ? l->name : ""),
      "trace_event_source", query_json_text(l->source), "flow_id",
      l->flows.s ? l->flows.s : "", "start_ts", query_util_id(l->ts),
      "duration_ns", query_util_id(l->dur), "track", query_util_id(l->track));
  free(key);
  return o;
}

/* flow_ids, upstream and downstream of ev: its flows are those of its
 * block and those bound to it later (slice_flow). */
static int query_event_flows(sqlite3 *db, const struct query_event *ev,
                             json_t *o, struct query_err *e) {
  sqlite3_stmt *s =
      query_stmt(db,
                 "SELECT j.value FROM slice s, json_each(s.flows) j WHERE "
                 "s.track=?1 AND s.lane=?2 AND s.ts=?3 AND s.id=?4 UNION "
                 "SELECT flow_id FROM slice_flow WHERE track=?1 AND "
                 "lane=?2 AND ts=?3 AND id=?4 ORDER BY 1",
                 e);
  int64_t flows[64];
  size_t nf = 0, n = 0;
  int rc;
  if (!s)
    return -EIO;
  query_util_bind_i64(s, (int64_t[]){ev->track, ev->lane, ev->ts, ev->id}, 4);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW && nf < 64)
    flows[nf++] = sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    return query_util_db_fail(e, db);
  json_t *ids = json_array(), *up = json_array(), *down = json_array();
  struct query_link *links = xcalloc(QUERY_MAX_LINKS, sizeof *links);
  rc = 0;
  for (size_t i = 0; i < nf && rc == 0; i++) {
    json_array_append_new(ids, query_util_id(flows[i]));
    rc = query_event_flow_links(db, flows[i], links, &n, e);
  }
  qsort(links, n, sizeof *links, query_event_link_cmp);
  int my_rank = query_event_source_rank(ev->t.r->source);
  for (size_t i = 0; i < n; i++) {
    const struct query_link *l = &links[i];
    if (l->track == ev->track && l->lane == ev->lane && l->ts == ev->ts &&
        l->id == ev->id)
      continue;
    bool before = l->rank < my_rank || (l->rank == my_rank && l->ts < ev->ts);
    json_array_append_new(before ? up : down, query_event_link_json(l));
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

/* An attribute of ev as text (numbers in decimal), or NULL; borrowed from
 * buf or from ev. */
static const char *query_event_attr(const struct query_event *ev,
                                    const char *key, char *buf, size_t n) {
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
static int query_event_drill(sqlite3 *db, const struct query_event *ev,
                             struct query_target *tg, struct query_err *e) {
  const struct tracks_row *t = ev->t.r;
  char mbuf[32], xbuf[32];
  const char *model = query_event_attr(ev, "model_id", mbuf, sizeof mbuf);
  const char *exec = query_event_attr(ev, "exec_id", xbuf, sizeof xbuf);
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
    tg->profile = query_device_object(s);
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
    return query_util_db_fail(e, db);
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
  char *k = query_util_key(ev.track, ev.lane, ev.ts);
  json_t *o = json_object();
  json_object_set_new(o, "key", json_string(k));
  json_object_set_new(o, "id", query_util_id(ev.id));
  json_object_set_new(o, "name", query_json_text(ev.name ? ev.name : ""));
  json_object_set_new(o, "start_ts", query_util_id(ev.ts));
  json_object_set_new(o, "end_ts", query_util_id(ev.ts + ev.dur));
  json_object_set_new(o, "duration_ns", query_util_id(ev.dur));
  json_object_set_new(o, "trace_event_source", query_json_text(t->source));
  json_object_set_new(o, "domain", query_json_text(t->domain));
  json_object_set_new(o, "instance_id", query_json_text(t->instance_id));
  json_object_set_new(o, "process_id", query_event_opt_id(t->pid));
  json_object_set_new(o, "thread_id", query_event_opt_id(t->tid));
  json_object_set_new(o, "nc_idx", query_event_opt_id(t->nc));
  json_object_set_new(o, "pcore_idx", query_event_opt_id(t->pcore));
  json_object_set_new(o, "worker_gid", query_event_opt_id(t->worker));
  json_object_set_new(o, "framework_stream_id", query_event_opt_id(t->stream));
  json_object_set_new(o, "track", query_util_id(ev.track));
  json_object_set_new(o, "lane", json_integer(ev.lane));
  if (t->label)
    json_object_set_new(o, "label", query_json_text(t->label));
  if (ev.grp)
    json_object_set_new(o, "group", query_json_text(ev.grp));
  if (ev.profile >= 0)
    json_object_set_new(o, "device_profile_id", query_util_id(ev.profile));
  free(k);
  rc = query_event_flows(db, &ev, o, e);
  if (rc == 0 && strcmp(t->source, "engine") == 0 && ev.profile >= 0)
    rc = query_device_deps(db, ev.track, ev.lane, ev.ts, ev.id, o, e);
  if (rc == 0) {
    struct query_target tg;
    int d = query_event_drill(db, &ev, &tg, e);
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
    rc = query_event_drill(db, &ev, &tg, e);
  query_event_free(&ev);
  if (rc < 0)
    return rc;
  *out = json_pack(
      "{s:o, s:o, s:o, s:o}", "device_profile", tg.profile, "start",
      query_util_id(tg.start), "end", query_util_id(tg.end), "execution_index",
      tg.execution_index < 0 ? json_null() : json_integer(tg.execution_index));
  return 0;
}
