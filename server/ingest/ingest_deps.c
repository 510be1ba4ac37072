/* ingest_deps.c -- instruction dependencies resolved as the instructions
 * are placed.  See ingest_deps.h. */
#include "ingest_deps.h"
#include "util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Where an instruction lies (track 0: a free slot of the map). */
struct ingest_deps_at {
  int64_t id, track, lane, ts;
};

/* A dependency: the dependent's key, the position in its inst_dep_ids and
 * the id it waits for. */
struct ingest_deps_row {
  int64_t track, ts, lane, id, seq, dep_id;
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

/* Whether d holds more than its budget (it is then over, and empty). */
static bool ingest_deps_full(struct ingest_deps *d) {
  if (sizeof *d->at * d->cap + sizeof *d->rows * d->rows_cap <= d->budget)
    return false;
  ingest_deps_reset(d);
  d->over = true;
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
static bool ingest_deps_put(struct ingest_deps *d, int64_t id, int64_t track,
                            int64_t lane, int64_t ts) {
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
    *a = (struct ingest_deps_at){id, track, lane, ts};
    d->n++;
  } else if (track < a->track ||
             (track == a->track &&
              (lane < a->lane || (lane == a->lane && ts < a->ts)))) {
    *a = (struct ingest_deps_at){id, track, lane, ts};
  }
  return true;
}

/* The instruction's dependencies, from its args text. */
static void ingest_deps_rows(struct ingest_deps *d, int64_t track, int64_t lane,
                             const struct lanes_item *it) {
  static const char key[] = "\"inst_dep_ids\":[";
  const char *p =
      it->args ? memmem(it->args, it->args_len, key, sizeof key - 1) : NULL;
  if (!p)
    return;
  p += sizeof key - 1;
  for (int64_t seq = 0; *p != ']'; seq++) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p)
      return; /* not as argtext_list() writes ids */
    if (d->nrows == d->rows_cap) {
      d->rows_cap = d->rows_cap ? d->rows_cap * 2 : 1024;
      d->rows = xrealloc(d->rows, sizeof *d->rows * d->rows_cap);
      if (ingest_deps_full(d))
        return;
    }
    d->rows[d->nrows++] =
        (struct ingest_deps_row){track, it->ts, lane, it->id, seq, v};
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
  if (d->over || !ingest_deps_put(d, it->id, ingest_track_id(t), lane, it->ts))
    return;
  ingest_deps_rows(d, ingest_track_id(t), lane, it);
}

/* The state is the device reader's, not the track's. */
static void ingest_deps_keep(void *state) { (void)state; }

static const struct ingest_hook ingest_deps_hook = {ingest_deps_placed, NULL,
                                                    ingest_deps_keep};

void ingest_deps_watch(struct ing *g, struct ingest_deps *d, size_t from,
                       int64_t dp_id) {
  ingest_deps_reset(d);
  for (size_t i = from; i < ingest_track_n(g); i++) {
    struct itrack *t = ingest_track_at(g, i);
    const struct store_track *s = ingest_track_desc(t);
    if (s->device_profile_id == dp_id && strcmp(s->kind, "slices") == 0 &&
        s->source && strcmp(s->source, "engine") == 0)
      ingest_track_hook(t, &ingest_deps_hook, d);
  }
}

/* The profile's rows in SQL over its stored engine slices: the instructions
 * by id through a temporary table, dropped after.  CROSS JOIN: the
 * profile's tracks first, then their slices (without statistics the
 * planner would read every slice of the store for each profile). */
static void ingest_deps_sql(struct ing *g, int64_t dp_id) {
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
      "INSERT INTO inst_dep (track, ts, lane, id, seq, dep_id, dep_track, "
      "dep_lane, dep_ts) SELECT s.track, s.ts, s.lane, s.id, j.key, j.value, "
      "a.track, a.lane, a.ts FROM track t CROSS JOIN slice s ON s.track = t.id "
      "JOIN json_each(s.args, '$.inst_dep_ids') j LEFT JOIN temp.inst_at a "
      "ON a.id = j.value WHERE t.device_profile_id = ?1 AND t.source = "
      "'engine' AND instr(s.args, '\"inst_dep_ids\"')",
      "i", dp_id);
  store_writer_exec(w, "DROP TABLE temp.inst_at", "");
}

void ingest_deps_write(struct ing *g, struct ingest_deps *d, int64_t dp_id) {
  if (d->over) {
    ingest_deps_sql(g, dp_id);
  } else {
    for (size_t k = 0; k < d->nrows; k++) {
      const struct ingest_deps_row *r = &d->rows[k];
      const struct ingest_deps_at *a =
          d->cap ? &d->at[ingest_deps_slot(d, r->dep_id)] : NULL;
      bool found = a && a->track;
      const int64_t row[9] = {r->track,
                              r->ts,
                              r->lane,
                              r->id,
                              r->seq,
                              r->dep_id,
                              found ? a->track : INT64_MIN,
                              found ? a->lane : INT64_MIN,
                              found ? a->ts : INT64_MIN};
      store_writer_inst_dep(ingest_writer(g), row);
    }
  }
  ingest_deps_reset(d);
}
