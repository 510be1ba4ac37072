/* query_export.c -- the export cursor over the system slices of a window,
 * track by track (see query.h).
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct query_export {
  sqlite3 *db;
  struct query_rows t; /* system slice tracks */
  int64_t start, end;
  size_t track;    /* current track index */
  int64_t lane;    /* current lane (lane by lane) */
  sqlite3_stmt *s; /* rows of (track, lane), or NULL (lane by lane) */
  /* merged: one statement per lane of the current track (NULL once done,
   * `ls` NULL between tracks), the start of each one's current row, and
   * the lane whose row was handed out last (stepped at the next call) */
  bool merged;
  sqlite3_stmt **ls;
  int64_t *lts, emitted;
  struct sbuf flows; /* the current event's flow ids, "id,id" */
};

/* A track of more lanes is walked merged by one statement that sorts its
 * slices (SQLite's sorter spills to disk) rather than by a statement per
 * lane (each holds a decoded block). */
#define QUERY_EXPORT_MERGE_MAX 64

/* The slices of the window of one track's lanes ?2 to ?5 in (start, lane)
 * order, with the ends of their flows (flow_ends of struct
 * query_export_event; the flow ids are read from them): the flows of their
 * blocks and those bound to them later (slice_flow), each with three
 * figures from one read of the flow's endpoints (an endpoint before the
 * slice, one after it, none that carries another flow).  A slice of two
 * flows or more has them in slice_flow too (ingest_place), where the last
 * one is looked up. */
#define QUERY_EXPORT_SQL                                                       \
  "SELECT s.ts, s.dur, s.id, n.s, s.args, (SELECT group_concat(u.v || ':' || " \
  "(SELECT coalesce(max((g.ts, g.track, g.lane, g.id) < (s.ts, s.track, "      \
  "s.lane, s.id)), 0) || coalesce(max((g.ts, g.track, g.lane, g.id) > (s.ts, " \
  "s.track, s.lane, s.id)), 0) || NOT coalesce(max(EXISTS (SELECT 1 FROM "     \
  "slice_flow h WHERE h.track = g.track AND h.lane = g.lane AND h.ts = g.ts "  \
  "AND h.id = g.id AND h.flow_id <> g.flow_id)), 0) FROM flow g WHERE "        \
  "g.flow_id = u.v)) FROM (SELECT value AS v FROM json_each(s.flows) UNION "   \
  "SELECT flow_id FROM slice_flow f WHERE f.track = s.track AND f.lane = "     \
  "s.lane AND f.ts = s.ts AND f.id = s.id ORDER BY 1) u), s.lane FROM slice "  \
  "s JOIN str n ON n.id = s.name WHERE s.track=?1 AND s.lane>=?2 AND "         \
  "s.lane<=?5 AND s.ts>=?3 AND s.ts<?4 ORDER BY s.ts, s.lane"

int query_export_open(sqlite3 *db, int64_t start, int64_t end, bool merged,
                      struct query_export **out, struct query_err *e) {
  struct query_export *x = xcalloc(1, sizeof *x);
  x->merged = merged;
  x->emitted = -1;
  int rc = query_tracks_rows_load(db, -2, &x->t, e);
  if (rc < 0) {
    query_tracks_rows_free(&x->t);
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

/* Binds s to lanes lo to hi of the current track and the window. */
static void query_export_bind(struct query_export *x, sqlite3_stmt *s,
                              int64_t lo, int64_t hi) {
  query_util_bind_i64(
      s, (int64_t[]){x->t.r[x->track].id, lo, x->start, x->end, hi}, 5);
}

/* The flow ids of flow_ends ("id:PNS,id:PNS") as "id,id" in b, or NULL
 * when there are none. */
static const char *query_export_flow_ids(struct sbuf *b, const char *ends) {
  if (!ends)
    return NULL;
  sbuf_reset(b);
  for (const char *p = ends; *p;) {
    size_t n = strcspn(p, ":,");
    if (b->len)
      sbuf_addc(b, ',');
    sbuf_add(b, p, n);
    p += n;
    p += strcspn(p, ",");
    p += *p == ',';
  }
  return b->len ? b->s : NULL;
}

/* Fills ev from the current row of s, of the current track. */
static void query_export_fill(struct query_export *x, sqlite3_stmt *s,
                              struct query_export_event *ev) {
  ev->track = &x->t.r[x->track];
  ev->lane = sqlite3_column_int64(s, 6);
  ev->ts = sqlite3_column_int64(s, 0);
  ev->dur = sqlite3_column_int64(s, 1);
  ev->id = sqlite3_column_int64(s, 2);
  ev->name = (const char *)sqlite3_column_text(s, 3);
  ev->args = (const char *)sqlite3_column_text(s, 4);
  ev->flow_ends = (const char *)sqlite3_column_text(s, 5);
  ev->flows = query_export_flow_ids(&x->flows, ev->flow_ends);
  if (!ev->name)
    ev->name = "";
}

/* Whether track k holds slices to walk. */
static bool query_export_walks(const struct query_export *x, size_t k) {
  return strcmp(x->t.r[k].kind, "slices") == 0 && x->t.r[k].lanes > 0;
}

/* The statements of the merged walk of the current track: one per lane,
 * or one for all past QUERY_EXPORT_MERGE_MAX lanes. */
static int64_t query_export_nls(const struct query_export *x) {
  int64_t n = x->t.r[x->track].lanes;
  return n > QUERY_EXPORT_MERGE_MAX ? 1 : n;
}

/* Finalizes the lane statements of the merged walk of a track. */
static void query_export_lanes_end(struct query_export *x) {
  for (int64_t l = 0; x->ls && l < query_export_nls(x); l++)
    sqlite3_finalize(x->ls[l]);
  free(x->ls);
  free(x->lts);
  x->ls = NULL;
  x->lts = NULL;
  x->emitted = -1;
}

/* Steps lane l of the merged walk: its next row's start, or its statement
 * finalized at the end.  Returns 0, or -EIO with e filled. */
static int query_export_lane_step(struct query_export *x, int64_t l,
                                  struct query_err *e) {
  int rc = sqlite3_step(x->ls[l]);
  if (rc == SQLITE_ROW) {
    x->lts[l] = sqlite3_column_int64(x->ls[l], 0);
    return 0;
  }
  if (rc != SQLITE_DONE)
    return query_util_db_fail(e, x->db);
  sqlite3_finalize(x->ls[l]);
  x->ls[l] = NULL;
  return 0;
}

/* The merged walk: each track's lanes together, a statement per lane (no
 * sort: each comes in start order), the earliest row next, the lower
 * lane first on equal starts; past QUERY_EXPORT_MERGE_MAX lanes one
 * statement that sorts them. */
static int query_export_merged(struct query_export *x,
                               struct query_export_event *ev,
                               struct query_err *e) {
  for (;;) {
    if (!x->ls) {
      while (x->track < x->t.n && !query_export_walks(x, x->track))
        x->track++;
      if (x->track >= x->t.n)
        return 0;
      int64_t n = query_export_nls(x);
      x->ls = xcalloc((size_t)n, sizeof *x->ls);
      x->lts = xcalloc((size_t)n, sizeof *x->lts);
      for (int64_t l = 0; l < n; l++) {
        if (!(x->ls[l] = query_util_stmt_once(x->db, QUERY_EXPORT_SQL, e)))
          return -EIO;
        query_export_bind(x, x->ls[l], n == 1 ? 0 : l, n == 1 ? INT64_MAX : l);
        if (query_export_lane_step(x, l, e) < 0)
          return -EIO;
      }
    } else if (x->emitted >= 0 && x->ls[x->emitted] &&
               query_export_lane_step(x, x->emitted, e) < 0) {
      return -EIO;
    }
    int64_t best = -1;
    for (int64_t l = 0; l < query_export_nls(x); l++)
      if (x->ls[l] && (best < 0 || x->lts[l] < x->lts[best]))
        best = l;
    if (best >= 0) {
      query_export_fill(x, x->ls[best], ev);
      x->emitted = best;
      return 1;
    }
    query_export_lanes_end(x);
    x->track++;
  }
}

int query_export_next(struct query_export *x, struct query_export_event *ev,
                      struct query_err *e) {
  if (x->merged)
    return query_export_merged(x, ev, e);
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
      if (!(x->s = query_stmt(x->db, QUERY_EXPORT_SQL, e)))
        return -EIO;
      query_export_bind(x, x->s, x->lane, x->lane);
    }
    int rc = sqlite3_step(x->s);
    if (rc == SQLITE_ROW) {
      query_export_fill(x, x->s, ev);
      return 1;
    }
    if (rc != SQLITE_DONE)
      query_util_db_fail(e, x->db);
    sqlite3_reset(x->s);
    x->s = NULL;
    if (rc != SQLITE_DONE)
      return -EIO;
    x->lane++;
  }
}

int64_t query_export_end(const struct query_export_event *ev) {
  int64_t end;
  return __builtin_add_overflow(ev->ts, ev->dur, &end) ? INT64_MAX : end;
}

void query_export_close(struct query_export *x) {
  if (!x)
    return;
  if (x->s)
    sqlite3_reset(x->s);
  if (x->track < x->t.n)
    query_export_lanes_end(x);
  query_tracks_rows_free(&x->t);
  sbuf_free(&x->flows);
  free(x);
}
