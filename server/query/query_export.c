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
  int64_t lane;    /* current lane */
  bool merged;     /* a track's lanes in one (ts, lane) walk */
  sqlite3_stmt *s; /* rows of (track, lane) or of the track, or NULL */
};

int query_export_open(sqlite3 *db, int64_t start, int64_t end, bool merged,
                      struct query_export **out, struct query_err *e) {
  struct query_export *x = xcalloc(1, sizeof *x);
  x->merged = merged;
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
          "flow_id) FROM slice_flow f WHERE f.track = s.track AND f.lane = "
          "s.lane AND f.ts = s.ts AND f.id = s.id), (SELECT group_concat("
          "f.flow_id || ':' || EXISTS (SELECT 1 FROM flow g WHERE g.flow_id = "
          "f.flow_id AND (g.ts, g.track, g.lane, g.id) < (f.ts, f.track, "
          "f.lane, f.id)) || EXISTS (SELECT 1 FROM flow g WHERE g.flow_id = "
          "f.flow_id AND (g.ts, g.track, g.lane, g.id) > (f.ts, f.track, "
          "f.lane, f.id)) || NOT EXISTS (SELECT 1 FROM flow g JOIN slice_flow "
          "h ON h.track = g.track AND h.lane = g.lane AND h.ts = g.ts AND "
          "h.id = g.id AND h.flow_id <> g.flow_id WHERE g.flow_id = "
          "f.flow_id)) FROM slice_flow f WHERE f.track = s.track AND f.lane = "
          "s.lane AND f.ts = s.ts AND f.id = s.id), s.lane FROM slice s JOIN "
          "str n ON n.id = s.name WHERE s.track=?1 AND s.lane>=?2 AND "
          "s.lane<=?5 AND s.ts>=?3 AND s.ts<?4 ORDER BY s.ts, s.lane",
          e);
      if (!x->s)
        return -EIO;
      sqlite3_bind_int64(x->s, 1, x->t.r[x->track].id);
      sqlite3_bind_int64(x->s, 2, x->lane);
      sqlite3_bind_int64(x->s, 3, x->start);
      sqlite3_bind_int64(x->s, 4, x->end);
      sqlite3_bind_int64(x->s, 5, x->merged ? INT64_MAX : x->lane);
    }
    int rc = sqlite3_step(x->s);
    if (rc == SQLITE_ROW) {
      ev->track = &x->t.r[x->track];
      ev->lane = sqlite3_column_int64(x->s, 7);
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
      query_util_db_fail(e, x->db);
    sqlite3_reset(x->s);
    x->s = NULL;
    if (rc != SQLITE_DONE)
      return -EIO;
    x->lane = x->merged ? INT64_MAX : x->lane + 1;
  }
}

void query_export_close(struct query_export *x) {
  if (!x)
    return;
  if (x->s)
    sqlite3_reset(x->s);
  query_tracks_rows_free(&x->t);
  free(x);
}
