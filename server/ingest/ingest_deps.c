/* ingest_deps.c -- instruction dependencies resolved as the instructions
 * are placed.  See ingest_deps.h. */
#include "ingest_deps.h"
#include "sort.h"
#include "store_deps.h"
#include "util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Where an instruction lies (track 0: a free slot of the map).  Tracks,
 * lanes and places in a list are kept in 32 bits (a profile with one
 * beyond them is resolved in SQL): a profile of 250 k instructions and
 * 300 k dependencies then fits half the default sort budget. */
struct ingest_deps_at {
  int64_t id, ts;
  int32_t track, lane;
};

/* A dependency seen from one end: that instruction's key (track, lane,
 * ts, id), the place in the dependent's inst_dep_ids, the other end's key
 * (its id only, track 0, until found). */
struct ingest_deps_row {
  int64_t ts, id, ots, oid;
  int32_t track, lane, otrack, olane, seq;
};

struct ingest_deps {
  size_t budget;
  bool over;                 /* beyond the budget: resolved in SQL */
  struct ingest_deps_at *at; /* by id, open addressing */
  size_t cap, n;
  struct ingest_deps_row *rows;
  size_t nrows, rows_cap;
};

struct ingest_deps *ingest_deps_new(size_t budget) {
  struct ingest_deps *d = xcalloc(1, sizeof *d);
  d->budget = budget;
  return d;
}

/* Forgets the profile: the map, the rows, and being over. */
static void ingest_deps_reset(struct ingest_deps *d) {
  free(d->at);
  free(d->rows);
  *d = (struct ingest_deps){.budget = d->budget};
}

void ingest_deps_free(struct ingest_deps *d) {
  if (!d)
    return;
  ingest_deps_reset(d);
  free(d);
}

/* Makes d over (resolved in SQL) and empty. */
static void ingest_deps_over(struct ingest_deps *d) {
  ingest_deps_reset(d);
  d->over = true;
}

/* Whether d holds more than its budget (it is then over, and empty). */
static bool ingest_deps_full(struct ingest_deps *d) {
  if (sizeof *d->at * d->cap + sizeof *d->rows * d->rows_cap <= d->budget)
    return false;
  ingest_deps_over(d);
  return true;
}

/* Makes room for one more row: twice the rows, or what the budget leaves
 * beside the map.  Returns false when d went over. */
static bool ingest_deps_room(struct ingest_deps *d) {
  if (d->nrows < d->rows_cap)
    return true;
  size_t map = sizeof *d->at * d->cap;
  size_t left = d->budget > map ? (d->budget - map) / sizeof *d->rows : 0;
  size_t cap = d->rows_cap ? d->rows_cap * 2 : 1024;
  if (cap > left)
    cap = left;
  if (cap <= d->nrows) {
    ingest_deps_over(d);
    return false;
  }
  d->rows_cap = cap;
  d->rows = xrealloc(d->rows, sizeof *d->rows * d->rows_cap);
  return true;
}

/* The slot of id: its entry, or the free slot where it goes. */
static size_t ingest_deps_slot(const struct ingest_deps *d, int64_t id) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
  size_t i = (size_t)(h ^ (h >> 29)) & (d->cap - 1);
  while (d->at[i].track && d->at[i].id != id)
    i = (i + 1) & (d->cap - 1);
  return i;
}

/* Remembers that instruction id lies at (track, lane, ts), unless it lies
 * at an earlier key already.  Returns false when d went over. */
static bool ingest_deps_put(struct ingest_deps *d, int64_t id, int32_t track,
                            int32_t lane, int64_t ts) {
  if ((d->n + 1) * 2 > d->cap) {
    struct ingest_deps_at *old = d->at;
    size_t n = d->cap;
    d->cap = d->cap ? d->cap * 2 : 1024;
    d->at = xcalloc(d->cap, sizeof *d->at);
    for (size_t k = 0; k < n; k++)
      if (old[k].track)
        d->at[ingest_deps_slot(d, old[k].id)] = old[k];
    free(old);
    if (ingest_deps_full(d))
      return false;
  }
  struct ingest_deps_at *a = &d->at[ingest_deps_slot(d, id)];
  if (!a->track) {
    *a = (struct ingest_deps_at){id, ts, track, lane};
    d->n++;
  } else if (track < a->track ||
             (track == a->track &&
              (lane < a->lane || (lane == a->lane && ts < a->ts)))) {
    *a = (struct ingest_deps_at){id, ts, track, lane};
  }
  return true;
}

/* The instruction's dependencies, from its args text. */
static void ingest_deps_rows(struct ingest_deps *d, int32_t track, int32_t lane,
                             const struct lanes_item *it) {
  static const char key[] = "\"inst_dep_ids\":[";
  const char *p =
      it->args ? memmem(it->args, it->args_len, key, sizeof key - 1) : NULL;
  if (!p)
    return;
  p += sizeof key - 1;
  for (int32_t seq = 0; *p != ']'; seq++) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p)
      return; /* not as argtext_list() writes ids */
    if (seq == INT32_MAX) {
      ingest_deps_over(d);
      return;
    }
    if (!ingest_deps_room(d))
      return;
    d->rows[d->nrows++] = (struct ingest_deps_row){.ts = it->ts,
                                                   .id = it->id,
                                                   .oid = v,
                                                   .track = track,
                                                   .lane = lane,
                                                   .seq = seq};
    if (*end != ',' && *end != ']')
      return;
    p = *end == ',' ? end + 1 : end;
  }
}

static const struct ingest_hook ingest_deps_hook;

static void ingest_deps_placed(struct ing *g, struct itrack *t, int64_t lane,
                               const struct lanes_item *it) {
  (void)g;
  struct ingest_deps *d = ingest_track_hook_state(t, &ingest_deps_hook);
  int64_t track = ingest_track_id(t);
  if (d->over)
    return;
  if (track > INT32_MAX || lane > INT32_MAX || lane < 0) {
    ingest_deps_over(d);
    return;
  }
  if (ingest_deps_put(d, it->id, (int32_t)track, (int32_t)lane, it->ts))
    ingest_deps_rows(d, (int32_t)track, (int32_t)lane, it);
}

/* The state is the device reader's, not the track's. */
static void ingest_deps_keep(void *state) { (void)state; }

static const struct ingest_hook ingest_deps_hook = {ingest_deps_placed, NULL,
                                                    ingest_deps_keep};

void ingest_deps_watch(struct ingest_deps *d, struct itrack *t) {
  ingest_track_hook(t, &ingest_deps_hook, d);
}

/* -1, 0 or 1 as x is below, equal to or above y. */
static int ingest_deps_order(int64_t x, int64_t y) { return (x > y) - (x < y); }

/* Orders rows by key, then seq, then the other end's key. */
static inline int ingest_deps_cmp(const void *pa, const void *pb) {
  const struct ingest_deps_row *a = pa, *b = pb;
  int c;
  if ((c = ingest_deps_order(a->track, b->track)) ||
      (c = ingest_deps_order(a->lane, b->lane)) ||
      (c = ingest_deps_order(a->ts, b->ts)) ||
      (c = ingest_deps_order(a->id, b->id)) ||
      (c = ingest_deps_order(a->seq, b->seq)) ||
      (c = ingest_deps_order(a->otrack, b->otrack)) ||
      (c = ingest_deps_order(a->olane, b->olane)) ||
      (c = ingest_deps_order(a->ots, b->ots)))
    return c;
  return ingest_deps_order(a->oid, b->oid);
}

/* store_deps' emit for each side: the blocks go to the store writer. */
static void ingest_deps_emit_fwd(void *w, int64_t track, int64_t lane,
                                 int64_t ts0, int64_t n,
                                 const unsigned char *data, size_t len) {
  store_writer_dep_block(w, 0, track, lane, ts0, n, data, len);
}

static void ingest_deps_emit_rev(void *w, int64_t track, int64_t lane,
                                 int64_t ts0, int64_t n,
                                 const unsigned char *data, size_t len) {
  store_writer_dep_block(w, 1, track, lane, ts0, n, data, len);
}

/* A row of an ordered SELECT of dependencies (ingest_deps_sql): key,
 * seq, then the other end's track, lane, ts (NULL: not found) and id. */
static int ingest_deps_sql_row(void *side, sqlite3_stmt *st) {
  int64_t v[9];
  for (int k = 0; k < 9; k++)
    v[k] = sqlite3_column_int64(st, k);
  store_deps_add(side, v, v[4], v + 5,
                 sqlite3_column_type(st, 5) != SQLITE_NULL);
  return 0;
}

/* The profile's dependencies in SQL over its stored engine slices: the
 * instructions by id through a temporary table, the dependencies in
 * another, read back in the order of each side; both dropped after.
 * CROSS JOIN: the profile's tracks first, then their slices (without
 * statistics the planner would read every slice of the store for each
 * profile). */
static void ingest_deps_sql(struct ing *g, int64_t dp_id,
                            struct store_deps *side[2]) {
  struct store_writer *w = ingest_writer(g);
  store_writer_exec(w,
                    "CREATE TEMP TABLE inst_at (id INTEGER PRIMARY KEY, "
                    "track INTEGER, lane INTEGER, ts INTEGER)",
                    "");
  store_writer_exec(
      w,
      "INSERT OR IGNORE INTO temp.inst_at SELECT s.id, s.track, "
      "s.lane, s.ts FROM track t CROSS JOIN slice s ON s.track = t.id "
      "WHERE t.device_profile_id = ?1 AND t.source = 'engine'",
      "i", dp_id);
  store_writer_exec(
      w,
      "CREATE TEMP TABLE inst_deps AS SELECT s.track, s.lane, s.ts, s.id, "
      "j.key AS seq, j.value AS dep_id, a.track AS dep_track, a.lane AS "
      "dep_lane, a.ts AS dep_ts FROM track t CROSS JOIN slice s ON s.track = "
      "t.id JOIN json_each(s.args, '$.inst_dep_ids') j LEFT JOIN "
      "temp.inst_at a ON a.id = j.value WHERE t.device_profile_id = ?1 AND "
      "t.source = 'engine' AND instr(s.args, '\"inst_dep_ids\"')",
      "i", dp_id);
  store_writer_query(w, ingest_deps_sql_row, side[0],
                     "SELECT track, lane, ts, id, seq, dep_track, dep_lane, "
                     "dep_ts, dep_id FROM temp.inst_deps ORDER BY 1, 2, 3, 4, "
                     "5",
                     "");
  store_writer_query(w, ingest_deps_sql_row, side[1],
                     "SELECT dep_track, dep_lane, dep_ts, dep_id, seq, track, "
                     "lane, ts, id FROM temp.inst_deps WHERE dep_track IS NOT "
                     "NULL ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
                     "");
  store_writer_exec(w, "DROP TABLE temp.inst_deps", "");
  store_writer_exec(w, "DROP TABLE temp.inst_at", "");
}

/* Adds row r to the dependency blocks of one side (the other end found
 * when it has a track). */
static void ingest_deps_add(struct store_deps *side,
                            const struct ingest_deps_row *r) {
  const int64_t key[4] = {r->track, r->lane, r->ts, r->id},
                other[4] = {r->otrack, r->olane, r->ots, r->oid};
  store_deps_add(side, key, r->seq, other, r->otrack != 0);
}

/* Writes the profile's dependencies from memory: found where they lie,
 * in the order of the dependents, then those found again seen from the
 * dependencies (the rows turned around in place). */
static void ingest_deps_mem(struct ingest_deps *d, struct store_deps *side[2]) {
  size_t found = 0;
  for (size_t k = 0; k < d->nrows; k++) {
    struct ingest_deps_row *r = &d->rows[k];
    const struct ingest_deps_at *a = &d->at[ingest_deps_slot(d, r->oid)];
    if (a->track) {
      r->otrack = a->track, r->olane = a->lane, r->ots = a->ts;
      found++;
    }
  }
  struct ingest_deps_row *tmp = xmalloc(sizeof *tmp * d->nrows);
  sort_stable(d->rows, d->nrows, sizeof *d->rows, tmp, ingest_deps_cmp);
  size_t n = 0;
  for (size_t k = 0; k < d->nrows; k++) {
    struct ingest_deps_row r = d->rows[k];
    ingest_deps_add(side[0], &r);
    if (r.otrack) /* the found ones first, turned around */
      d->rows[n++] = (struct ingest_deps_row){
          r.ots, r.oid, r.ts, r.id, r.otrack, r.olane, r.track, r.lane, r.seq};
  }
  sort_stable(d->rows, found, sizeof *d->rows, tmp, ingest_deps_cmp);
  free(tmp);
  for (size_t k = 0; k < found; k++)
    ingest_deps_add(side[1], &d->rows[k]);
}

void ingest_deps_write(struct ing *g, struct ingest_deps *d, int64_t dp_id) {
  struct store_writer *w = ingest_writer(g);
  struct store_deps *side[2] = {store_deps_new(ingest_deps_emit_fwd, w),
                                store_deps_new(ingest_deps_emit_rev, w)};
  if (d->over)
    ingest_deps_sql(g, dp_id, side);
  else if (d->nrows)
    ingest_deps_mem(d, side);
  for (int k = 0; k < 2; k++) {
    store_deps_flush(side[k]);
    store_deps_free(side[k]);
  }
  ingest_deps_reset(d);
}
