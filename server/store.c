/* store.c -- the SQLite writer; see store.h.  (The read-only pool lives in
 * store_pool.c.) */
#include "store.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char store_schema_sql[]; /* schema.sql, generated at build */

#define STORE_BATCH_ROWS 32
#define STORE_INTERN_MIN 1024

/* Rows of one table inserted STORE_BATCH_ROWS at a time through a
 * multi-row INSERT; column types: 'i' int64, 'I' int64 or NULL if <= 0
 * (grp), 'r' double, 't' owned text or NULL. */
struct store_batch {
  const char *table;
  const char *types;
  int ncols, n;
  sqlite3_stmt *multi, *single;
  int64_t *ints;
  double *reals;
  char **texts;
  size_t *lens;
};

struct store_intern {
  char **keys;
  int64_t *ids;
  size_t cap, n;
};

struct store_writer {
  sqlite3 *db;
  char *path, *tmp;
  struct store_batch slice, counter, slice_lod, counter_lod, flow, name_stat;
  struct store_intern strs;
  sqlite3_stmt *str_ins, *track_ins, *track_upd;
};

static int store_fail(sqlite3 *db, const char *what, char **cause) {
  *cause = xasprintf("%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
  return -EIO;
}

static void store_check(struct store_writer *w, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    fatal("store: %s: %s", what, sqlite3_errmsg(w->db));
}

static sqlite3_stmt *store_prepare(struct store_writer *w, const char *sql) {
  sqlite3_stmt *st;
  store_check(w, sqlite3_prepare_v2(w->db, sql, -1, &st, NULL), sql);
  return st;
}

static void store_batch_init(struct store_writer *w, struct store_batch *b,
                             const char *table, const char *cols,
                             const char *types) {
  b->table = table;
  b->types = types;
  b->ncols = (int)strlen(types);
  struct sbuf sql = {0};
  sbuf_printf(&sql, "INSERT INTO %s (%s) VALUES ", table, cols);
  size_t head = sql.len;
  for (int r = 0; r < STORE_BATCH_ROWS; r++) {
    sbuf_adds(&sql, r ? ",(" : "(");
    for (int c = 0; c < b->ncols; c++)
      sbuf_adds(&sql, c ? ",?" : "?");
    sbuf_addc(&sql, ')');
    if (r == 0) {
      b->single = store_prepare(w, sql.s);
      (void)head;
    }
  }
  b->multi = store_prepare(w, sql.s);
  sbuf_free(&sql);
  size_t cells = (size_t)(b->ncols * STORE_BATCH_ROWS);
  b->ints = xcalloc(cells, sizeof *b->ints);
  b->reals = xcalloc(cells, sizeof *b->reals);
  b->texts = xcalloc(cells, sizeof *b->texts);
  b->lens = xcalloc(cells, sizeof *b->lens);
}

/* Binds row r of the buffer to statement st starting at parameter base. */
static void store_batch_bind(struct store_batch *b, sqlite3_stmt *st, int r,
                             int base) {
  for (int c = 0; c < b->ncols; c++) {
    int cell = r * b->ncols + c, p = base + c + 1;
    switch (b->types[c]) {
    case 'i':
      sqlite3_bind_int64(st, p, b->ints[cell]);
      break;
    case 'I':
      if (b->ints[cell] > 0)
        sqlite3_bind_int64(st, p, b->ints[cell]);
      else
        sqlite3_bind_null(st, p);
      break;
    case 'r':
      sqlite3_bind_double(st, p, b->reals[cell]);
      break;
    default:
      if (b->texts[cell])
        sqlite3_bind_text(st, p, b->texts[cell], (int)b->lens[cell], free);
      else
        sqlite3_bind_null(st, p);
      b->texts[cell] = NULL;
    }
  }
}

static void store_batch_flush(struct store_writer *w, struct store_batch *b) {
  if (b->n == STORE_BATCH_ROWS) {
    for (int r = 0; r < b->n; r++)
      store_batch_bind(b, b->multi, r, r * b->ncols);
    store_check(w, sqlite3_step(b->multi), b->table);
    sqlite3_reset(b->multi);
  } else {
    for (int r = 0; r < b->n; r++) {
      store_batch_bind(b, b->single, r, 0);
      store_check(w, sqlite3_step(b->single), b->table);
      sqlite3_reset(b->single);
    }
  }
  b->n = 0;
}

/* Returns the first cell of a new row, flushing a full buffer first. */
static int store_batch_row(struct store_writer *w, struct store_batch *b) {
  if (b->n == STORE_BATCH_ROWS)
    store_batch_flush(w, b);
  return b->n++ * b->ncols;
}

static void store_batch_free(struct store_batch *b) {
  size_t cells = (size_t)(b->ncols * STORE_BATCH_ROWS);
  for (size_t i = 0; b->texts && i < cells; i++)
    free(b->texts[i]);
  sqlite3_finalize(b->multi);
  sqlite3_finalize(b->single);
  free(b->ints);
  free(b->reals);
  free(b->texts);
  free(b->lens);
}

int store_writer_open(const char *path, struct store_writer **out,
                      char **cause) {
  struct store_writer *w = xcalloc(1, sizeof *w);
  w->path = xstrdup(path);
  w->tmp = xasprintf("%s.tmp", path);
  unlink(w->tmp);
  if (sqlite3_open_v2(w->tmp, &w->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    int rc = store_fail(w->db, w->tmp, cause);
    sqlite3_close(w->db);
    free(w->path);
    free(w->tmp);
    free(w);
    return rc;
  }
  char *err = NULL;
  if (sqlite3_exec(w->db,
                   "PRAGMA page_size=8192; PRAGMA journal_mode=OFF;"
                   "PRAGMA synchronous=OFF; PRAGMA cache_size=-131072;"
                   "PRAGMA temp_store=MEMORY; PRAGMA secure_delete=OFF;",
                   NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(w->db, store_schema_sql, NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(w->db, "BEGIN", NULL, NULL, &err) != SQLITE_OK) {
    *cause = xasprintf("cannot create store %s: %s", w->tmp,
                       err ? err : sqlite3_errmsg(w->db));
    sqlite3_free(err);
    sqlite3_close(w->db);
    unlink(w->tmp);
    free(w->path);
    free(w->tmp);
    free(w);
    return -EIO;
  }
  store_batch_init(w, &w->slice, "slice",
                   "track,lane,ts,id,dur,name,grp,args", "iiiiiiIt");
  store_batch_init(w, &w->counter, "counter", "track,series,ts,seq,value",
                   "iiiir");
  store_batch_init(w, &w->slice_lod, "slice_lod",
                   "track,level,lane,bucket,ts,end_ts,id,name,grp,dur,count",
                   "iiiiiiiiIii");
  store_batch_init(w, &w->counter_lod, "counter_lod",
                   "track,series,level,bucket,ts,min,max,last,count",
                   "iiiiirrri");
  store_batch_init(w, &w->flow, "flow", "flow_id,track,lane,ts,id", "iiiii");
  store_batch_init(w, &w->name_stat, "name_stat", "name,track,count,total_dur",
                   "iiii");
  w->str_ins = store_prepare(w, "INSERT INTO str (id, s) VALUES (?, ?)");
  w->track_ins = store_prepare(
      w, "INSERT INTO track (kind, domain, source, instance_id, pid, tid, "
         "nc_idx, pcore_idx, worker_gid, stream_id, device_idx, hbm_idx, "
         "cpu_id, device_profile_id, label) "
         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  w->track_upd = store_prepare(
      w, "UPDATE track SET lanes=?, max_dur=?, event_count=?, first_ts=?, "
         "last_ts=?, lod_min_level=? WHERE id=?");
  *out = w;
  return 0;
}

int64_t store_writer_intern(struct store_writer *w, const char *s) {
  struct store_intern *t = &w->strs;
  if (t->n * 2 >= t->cap) {
    size_t cap = t->cap ? t->cap * 2 : STORE_INTERN_MIN;
    char **keys = xcalloc(cap, sizeof *keys);
    int64_t *ids = xcalloc(cap, sizeof *ids);
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->keys[i])
        continue;
      size_t j = util_hash(t->keys[i], strlen(t->keys[i])) & (cap - 1);
      while (keys[j])
        j = (j + 1) & (cap - 1);
      keys[j] = t->keys[i];
      ids[j] = t->ids[i];
    }
    free(t->keys);
    free(t->ids);
    t->keys = keys;
    t->ids = ids;
    t->cap = cap;
  }
  size_t len = strlen(s);
  size_t j = util_hash(s, len) & (t->cap - 1);
  while (t->keys[j]) {
    if (strcmp(t->keys[j], s) == 0)
      return t->ids[j];
    j = (j + 1) & (t->cap - 1);
  }
  t->keys[j] = xstrdup(s);
  t->ids[j] = (int64_t)++t->n;
  sqlite3_bind_int64(w->str_ins, 1, t->ids[j]);
  sqlite3_bind_text(w->str_ins, 2, s, (int)len, SQLITE_STATIC);
  store_check(w, sqlite3_step(w->str_ins), "str");
  sqlite3_reset(w->str_ins);
  return t->ids[j];
}

static void store_bind_opt_int(sqlite3_stmt *st, int p, int64_t v, int set) {
  if (set)
    sqlite3_bind_int64(st, p, v);
  else
    sqlite3_bind_null(st, p);
}

static void store_bind_opt_text(sqlite3_stmt *st, int p, const char *s) {
  if (s)
    sqlite3_bind_text(st, p, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, p);
}

int64_t store_writer_track(struct store_writer *w,
                           const struct store_track *t) {
  sqlite3_stmt *st = w->track_ins;
  store_bind_opt_text(st, 1, t->kind);
  store_bind_opt_text(st, 2, t->domain);
  store_bind_opt_text(st, 3, t->source);
  store_bind_opt_text(st, 4, t->instance_id ? t->instance_id : "");
  store_bind_opt_int(st, 5, t->pid, t->has_pid);
  store_bind_opt_int(st, 6, t->tid, t->has_tid);
  store_bind_opt_int(st, 7, t->nc_idx, t->nc_idx >= 0);
  store_bind_opt_int(st, 8, t->pcore_idx, t->pcore_idx >= 0);
  store_bind_opt_int(st, 9, t->worker_gid, t->worker_gid >= 0);
  store_bind_opt_int(st, 10, t->stream_id, t->stream_id >= 0);
  store_bind_opt_int(st, 11, t->device_idx, t->device_idx >= 0);
  store_bind_opt_int(st, 12, t->hbm_idx, t->hbm_idx >= 0);
  store_bind_opt_text(st, 13, t->cpu_id);
  store_bind_opt_int(st, 14, t->device_profile_id, t->device_profile_id > 0);
  store_bind_opt_text(st, 15, t->label);
  store_check(w, sqlite3_step(st), "track");
  sqlite3_reset(st);
  return sqlite3_last_insert_rowid(w->db);
}

void store_writer_track_stats(struct store_writer *w, int64_t track,
                              const struct store_track_stats *s) {
  sqlite3_stmt *st = w->track_upd;
  sqlite3_bind_int64(st, 1, s->lanes);
  sqlite3_bind_int64(st, 2, s->max_dur);
  sqlite3_bind_int64(st, 3, s->event_count);
  store_bind_opt_int(st, 4, s->first_ts, s->event_count > 0);
  store_bind_opt_int(st, 5, s->last_ts, s->event_count > 0);
  store_bind_opt_int(st, 6, s->lod_min_level, s->lod_min_level >= 0);
  sqlite3_bind_int64(st, 7, track);
  store_check(w, sqlite3_step(st), "track stats");
  sqlite3_reset(st);
}

void store_writer_slice(struct store_writer *w, int64_t track, int64_t lane,
                        int64_t ts, int64_t id, int64_t dur, int64_t name,
                        int64_t grp, const char *args, size_t args_len) {
  struct store_batch *b = &w->slice;
  int c = store_batch_row(w, b);
  int64_t *v = b->ints + c;
  v[0] = track, v[1] = lane, v[2] = ts, v[3] = id, v[4] = dur, v[5] = name,
  v[6] = grp;
  b->texts[c + 7] = args ? xstrndup(args, args_len) : NULL;
  b->lens[c + 7] = args_len;
}

void store_writer_counter(struct store_writer *w, int64_t track, int series,
                          int64_t ts, int64_t seq, double value) {
  struct store_batch *b = &w->counter;
  int c = store_batch_row(w, b);
  b->ints[c] = track, b->ints[c + 1] = series, b->ints[c + 2] = ts,
  b->ints[c + 3] = seq;
  b->reals[c + 4] = value;
}

void store_writer_slice_lod(struct store_writer *w, int64_t track, int level,
                            int64_t lane, int64_t bucket, int64_t ts,
                            int64_t end_ts, int64_t id, int64_t name,
                            int64_t grp, int64_t dur, int64_t count) {
  struct store_batch *b = &w->slice_lod;
  int64_t *v = b->ints + store_batch_row(w, b);
  v[0] = track, v[1] = level, v[2] = lane, v[3] = bucket, v[4] = ts,
  v[5] = end_ts, v[6] = id, v[7] = name, v[8] = grp, v[9] = dur, v[10] = count;
}

void store_writer_counter_lod(struct store_writer *w, int64_t track,
                              int series, int level, int64_t bucket,
                              int64_t ts, double min, double max, double last,
                              int64_t count) {
  struct store_batch *b = &w->counter_lod;
  int c = store_batch_row(w, b);
  b->ints[c] = track, b->ints[c + 1] = series, b->ints[c + 2] = level,
  b->ints[c + 3] = bucket, b->ints[c + 4] = ts;
  b->reals[c + 5] = min, b->reals[c + 6] = max, b->reals[c + 7] = last;
  b->ints[c + 8] = count;
}

void store_writer_flow(struct store_writer *w, int64_t flow_id, int64_t track,
                       int64_t lane, int64_t ts, int64_t id) {
  struct store_batch *b = &w->flow;
  int64_t *v = b->ints + store_batch_row(w, b);
  v[0] = flow_id, v[1] = track, v[2] = lane, v[3] = ts, v[4] = id;
}

void store_writer_name_stat(struct store_writer *w, int64_t name,
                            int64_t track, int64_t count, int64_t total_dur) {
  struct store_batch *b = &w->name_stat;
  int64_t *v = b->ints + store_batch_row(w, b);
  v[0] = name, v[1] = track, v[2] = count, v[3] = total_dur;
}

/* Binds varargs to st per `types` (see store.h). */
static void store_bind_va(sqlite3_stmt *st, const char *types, va_list ap) {
  for (int i = 0; types[i]; i++) {
    int p = i + 1;
    switch (types[i]) {
    case 'i':
      sqlite3_bind_int64(st, p, va_arg(ap, int64_t));
      break;
    case 'I': {
      int64_t v = va_arg(ap, int64_t);
      store_bind_opt_int(st, p, v, v >= 0);
      break;
    }
    case 'r':
      sqlite3_bind_double(st, p, va_arg(ap, double));
      break;
    default:
      store_bind_opt_text(st, p, va_arg(ap, const char *));
    }
  }
}

int64_t store_writer_exec(struct store_writer *w, const char *sql,
                          const char *types, ...) {
  sqlite3_stmt *st = store_prepare(w, sql);
  va_list ap;
  va_start(ap, types);
  store_bind_va(st, types, ap);
  va_end(ap);
  store_check(w, sqlite3_step(st), sql);
  sqlite3_finalize(st);
  return sqlite3_last_insert_rowid(w->db);
}

static void store_flush_all(struct store_writer *w) {
  store_batch_flush(w, &w->slice);
  store_batch_flush(w, &w->counter);
  store_batch_flush(w, &w->slice_lod);
  store_batch_flush(w, &w->counter_lod);
  store_batch_flush(w, &w->flow);
  store_batch_flush(w, &w->name_stat);
}

int store_writer_query(struct store_writer *w,
                       int (*row)(void *ud, sqlite3_stmt *st), void *ud,
                       const char *sql, const char *types, ...) {
  store_flush_all(w);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
    log_error("store: %s: %s", sql, sqlite3_errmsg(w->db));
    return -EINVAL;
  }
  va_list ap;
  va_start(ap, types);
  store_bind_va(st, types, ap);
  va_end(ap);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (row(ud, st))
      break;
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

static void store_writer_free(struct store_writer *w) {
  store_batch_free(&w->slice);
  store_batch_free(&w->counter);
  store_batch_free(&w->slice_lod);
  store_batch_free(&w->counter_lod);
  store_batch_free(&w->flow);
  store_batch_free(&w->name_stat);
  sqlite3_finalize(w->str_ins);
  sqlite3_finalize(w->track_ins);
  sqlite3_finalize(w->track_upd);
  for (size_t i = 0; i < w->strs.cap; i++)
    free(w->strs.keys[i]);
  free(w->strs.keys);
  free(w->strs.ids);
  sqlite3_close(w->db);
  free(w->path);
  free(w->tmp);
  free(w);
}

int store_writer_finish(struct store_writer *w, char **cause) {
  store_flush_all(w);
  char *err = NULL;
  if (sqlite3_exec(w->db,
                   "CREATE INDEX flow_by_slice ON flow(track, lane, ts, id);"
                   "INSERT OR REPLACE INTO store_info VALUES ('state','complete');"
                   "COMMIT; ANALYZE;",
                   NULL, NULL, &err) != SQLITE_OK) {
    *cause = xasprintf("cannot complete store %s: %s", w->tmp, err);
    sqlite3_free(err);
    unlink(w->tmp);
    store_writer_free(w);
    return -EIO;
  }
  int rc = 0;
  char *tmp = xstrdup(w->tmp), *path = xstrdup(w->path);
  store_writer_free(w);
  /* The store must be on disk before its name says it is complete. */
  int fd = open(tmp, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    rc = -errno;
    *cause = xasprintf("cannot sync %s: %s", tmp, strerror(errno));
  }
  if (fd >= 0)
    close(fd);
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = -errno;
    *cause = xasprintf("cannot rename %s to %s: %s", tmp, path, strerror(errno));
  }
  if (rc)
    unlink(tmp);
  free(tmp);
  free(path);
  return rc;
}

void store_writer_abort(struct store_writer *w) {
  if (!w)
    return;
  char *tmp = xstrdup(w->tmp);
  store_writer_free(w);
  unlink(tmp);
  free(tmp);
}

int store_is_current(const char *path, const char *fingerprint) {
  sqlite3 *db;
  int ok = 0;
  if (access(path, R_OK) != 0)
    return 0;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT value FROM store_info WHERE "
                           "key='fingerprint'), (SELECT value FROM store_info "
                           "WHERE key='state')",
                           -1, &st, NULL) == SQLITE_OK) {
      if (sqlite3_step(st) == SQLITE_ROW) {
        const char *fp = (const char *)sqlite3_column_text(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        ok = fp && state && strcmp(fp, fingerprint) == 0 &&
             strcmp(state, "complete") == 0;
      }
      sqlite3_finalize(st);
    }
  }
  sqlite3_close(db);
  return ok;
}
