/* store.c -- the SQLite writer; see store.h.  (The read-only pool lives in
 * store_pool.c.) */
#include "store.h"
#include "log.h"
#include "store_counters.h"
#include "store_flows.h"
#include "store_intern.h"
#include "store_json.h"
#include "store_slices.h"
#include "store_vtab.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char store_schema_sql[]; /* schema.sql, generated at build */

#define STORE_BATCH_ROWS 32         /* rows per multi-row INSERT */
#define STORE_CHUNK_ROWS 2048       /* rows per hand-off to the writer thread */
#define STORE_CHUNK_BYTES (4 << 20) /* text and blob bytes per hand-off */
#define STORE_QUEUE_MAX 16          /* chunks waiting for the writer thread */
/* and their text and blob bytes: with the writer's page cache (8 MiB, in
 * store_writer_open) half what they were, the 115 M-event ingest's peak
 * RSS fell from 248 - 259 to 239 - 240 MiB, no slower (bench/README.md) */
#define STORE_QUEUE_BYTES (8 << 20)
#define STORE_WRITEBACK_CHUNKS 64

/* Up to STORE_CHUNK_ROWS rows of one table, on their way to SQLite.  A
 * text cell keeps its bytes in `text` (offset in ints[cell], -1 for NULL;
 * length in lens[cell]): one buffer per chunk, no allocation per row. */
struct store_rows {
  struct store_batch *table;
  int n;
  int64_t *ints;
  double *reals;
  size_t *lens;
  struct sbuf text;
  int *order; /* rows in key order (store_rows_sort) */
  struct store_rows *next;
};

/* One table written through a multi-row INSERT.  Column types: 'i' int64,
 * 'I' int64 or NULL if <= 0, 'N' int64 or NULL if < 0, 'n' int64 or NULL
 * if INT64_MIN, 'r' double, 't' text or NULL, 'b' blob. */
struct store_batch {
  const char *table;
  const char *types;
  int ncols;
  int nkey; /* leading int columns that form the primary key */
  sqlite3_stmt *multi, *single;
  struct store_rows *cur; /* being filled by the ingest thread */
};

/* The ingest thread fills row buffers; a writer thread binds and steps
 * them, so SQLite's work overlaps decoding.  Anything else that touches
 * the connection (exec, query, finish) first waits for the queue to drain:
 * the connection is never used by two threads at once. */
struct store_writer {
  sqlite3 *db;
  char *path, *tmp;
  struct store_batch str, track, slice, slice_args, arg_set, counter, slice_lod,
      counter_lod, flow, slice_flow, name_stat, dep, dep_rev;
  struct store_counters *counters; /* the open counter blocks */
  struct store_flows *flows;       /* the open flow block */
  int64_t blocks;                  /* slice_block ids given */
  struct store_intern strs;
  struct store_slices *slices; /* the open slice blocks */
  int64_t tracks;
  sqlite3_stmt *track_upd;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_space, cv_idle;
  struct store_rows *head, *tail, *spare;
  int queued, busy, stop;
  size_t queued_bytes;
  int hold;    /* store_writer_query() is stepping: the writer thread waits */
  int sync_fd; /* the temporary file, to start its writeback early */
  unsigned chunks;
  char *error; /* first SQLite error: the store is abandoned at finish */
};

static struct store_batch *store_tables(struct store_writer *w, int i) {
  struct store_batch *t[] = {&w->str,        &w->track,       &w->slice,
                             &w->slice_args, &w->arg_set,     &w->counter,
                             &w->slice_lod,  &w->counter_lod, &w->flow,
                             &w->slice_flow, &w->name_stat,   &w->dep,
                             &w->dep_rev};
  return i < (int)(sizeof t / sizeof *t) ? t[i] : NULL;
}

/* SQLite's message for the last error on db, plus the system error behind
 * it when there is one: "unable to open database file (Read-only file
 * system)", "disk I/O error (File too large)".  Returns a malloc'd string. */
static char *store_errmsg(sqlite3 *db) {
  int e = db ? sqlite3_system_errno(db) : 0;
  const char *msg = db ? sqlite3_errmsg(db) : "out of memory";
  if (db && !e) /* a failed write at COMMIT leaves it only on the file */
    sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &e);
  return e ? xasprintf("%s (%s)", msg, strerror(e)) : xstrdup(msg);
}

/* Records the first error (any thread, lock held or not: only the writer
 * thread or the ingest thread with the queue drained call it). */
static void store_error(struct store_writer *w, const char *what) {
  if (!w->error) {
    char *msg = store_errmsg(w->db);
    w->error = xasprintf("%s: %s", what, msg);
    free(msg);
  }
}

static int store_ok(int rc) {
  return rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW;
}

static sqlite3_stmt *store_prepare(struct store_writer *w, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
    fatal("store: cannot prepare %s: %s", sql, sqlite3_errmsg(w->db));
  return st;
}

static struct store_rows *store_rows_new(struct store_writer *w,
                                         struct store_batch *b) {
  pthread_mutex_lock(&w->mu);
  struct store_rows *r = NULL, **pp = &w->spare;
  for (; *pp; pp = &(*pp)->next)
    if ((*pp)->table == b) {
      r = *pp;
      *pp = r->next;
      break;
    }
  pthread_mutex_unlock(&w->mu);
  if (!r) {
    size_t cells = (size_t)(b->ncols * STORE_CHUNK_ROWS);
    r = xcalloc(1, sizeof *r);
    r->table = b;
    r->ints = xcalloc(cells, sizeof *r->ints);
    r->reals = xcalloc(cells, sizeof *r->reals);
    r->lens = xcalloc(cells, sizeof *r->lens);
    r->order = xcalloc(STORE_CHUNK_ROWS, sizeof *r->order);
  }
  r->n = 0;
  r->text.len = 0;
  r->next = NULL;
  return r;
}

static void store_rows_free(struct store_rows *r) {
  free(r->ints);
  free(r->reals);
  free(r->lens);
  free(r->order);
  sbuf_free(&r->text);
  free(r);
}

/* Sets text cell `cell` of rows to a copy of s (len bytes; NULL: SQL
 * NULL). */
static void store_rows_text(struct store_rows *rows, int cell, const char *s,
                            size_t len) {
  rows->ints[cell] = s ? (int64_t)rows->text.len : -1;
  rows->lens[cell] = len;
  if (s)
    sbuf_add(&rows->text, s, len);
}

static void store_batch_init(struct store_writer *w, struct store_batch *b,
                             const char *table, const char *cols,
                             const char *types, int nkey) {
  b->table = table;
  b->types = types;
  b->ncols = (int)strlen(types);
  b->nkey = nkey;
  struct sbuf sql = {0}, one = {0};
  /* a flow may be named twice (args.flow_id and a v2 bind_id): once is
   * enough; name statistics are written per process and add up */
  const char *tail = strcmp(table, "name_stat") == 0
                         ? " ON CONFLICT (name, track) DO UPDATE SET count = "
                           "count + excluded.count, total_dur = total_dur + "
                           "excluded.total_dur"
                         : "";
  int once = strcmp(table, "slice_flow") == 0;
  sbuf_printf(&sql, "INSERT %sINTO %s (%s) VALUES ", once ? "OR IGNORE " : "",
              table, cols);
  for (int r = 0; r < STORE_BATCH_ROWS; r++) {
    sbuf_adds(&sql, r ? ",(" : "(");
    for (int c = 0; c < b->ncols; c++)
      sbuf_adds(&sql, c ? ",?" : "?");
    sbuf_addc(&sql, ')');
    if (r == 0)
      sbuf_printf(&one, "%s%s", sql.s, tail);
  }
  sbuf_adds(&sql, tail);
  b->single = store_prepare(w, one.s);
  b->multi = store_prepare(w, sql.s);
  sbuf_free(&sql);
  sbuf_free(&one);
}

/* Binds row r of rows to statement st starting at parameter base. */
static void store_rows_bind(struct store_rows *rows, sqlite3_stmt *st, int r,
                            int base) {
  const struct store_batch *b = rows->table;
  for (int c = 0; c < b->ncols; c++) {
    int cell = r * b->ncols + c, p = base + c + 1;
    int64_t v = rows->ints[cell];
    switch (b->types[c]) {
    case 'i':
      sqlite3_bind_int64(st, p, v);
      break;
    case 'I':
    case 'N':
    case 'n':
      if (b->types[c] == 'I'   ? v > 0
          : b->types[c] == 'N' ? v >= 0
                               : v != INT64_MIN)
        sqlite3_bind_int64(st, p, v);
      else
        sqlite3_bind_null(st, p);
      break;
    case 'r':
      sqlite3_bind_double(st, p, rows->reals[cell]);
      break;
    case 'b': /* the chunk outlives the step that reads it */
      sqlite3_bind_blob(st, p, rows->text.s + v, (int)rows->lens[cell],
                        SQLITE_STATIC);
      break;
    default:
      if (v >= 0)
        sqlite3_bind_text(st, p, rows->text.s + v, (int)rows->lens[cell],
                          SQLITE_STATIC);
      else
        sqlite3_bind_null(st, p);
    }
  }
}

/* Writes a row buffer (writer thread, or ingest thread with the queue
 * drained). */
static void store_rows_write(struct store_writer *w, struct store_rows *rows) {
  struct store_batch *b = rows->table;
  if (w->error)
    return;
  int r = 0;
  for (; r + STORE_BATCH_ROWS <= rows->n; r += STORE_BATCH_ROWS) {
    for (int k = 0; k < STORE_BATCH_ROWS; k++)
      store_rows_bind(rows, b->multi, rows->order[r + k], k * b->ncols);
    if (!store_ok(sqlite3_step(b->multi)))
      store_error(w, b->table);
    sqlite3_reset(b->multi);
  }
  for (; r < rows->n; r++) {
    store_rows_bind(rows, b->single, rows->order[r], 0);
    if (!store_ok(sqlite3_step(b->single)))
      store_error(w, b->table);
    sqlite3_reset(b->single);
  }
}

static void *store_writer_thread(void *arg) {
  struct store_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while ((!w->head || w->hold) && !w->stop)
      pthread_cond_wait(&w->cv_work, &w->mu);
    if (!w->head)
      break;
    struct store_rows *r = w->head;
    w->head = r->next;
    if (!w->head)
      w->tail = NULL;
    w->queued--;
    w->queued_bytes -= r->text.len;
    w->busy = 1;
    pthread_cond_signal(&w->cv_space);
    pthread_mutex_unlock(&w->mu);
    store_rows_write(w, r);
    /* Start writing the pages SQLite has handed to the kernel so far, so
     * that the fsync at the end does not wait for the whole store. */
    if (++w->chunks % STORE_WRITEBACK_CHUNKS == 0 && w->sync_fd >= 0)
      sync_file_range(w->sync_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    pthread_mutex_lock(&w->mu);
    r->next = w->spare;
    w->spare = r;
    w->busy = 0;
    if (!w->head)
      pthread_cond_broadcast(&w->cv_idle);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static int store_rows_cmp(const void *a, const void *b, void *arg) {
  const struct store_rows *rows = arg;
  const int64_t *x = rows->ints + *(const int *)a * rows->table->ncols;
  const int64_t *y = rows->ints + *(const int *)b * rows->table->ncols;
  for (int k = 0; k < rows->table->nkey; k++)
    if (x[k] != y[k])
      return x[k] < y[k] ? -1 : 1;
  return 0;
}

/* Puts the rows in primary key order: the writer's inserts then walk the
 * B-tree in order, each one next to the last instead of anywhere. */
static void store_rows_sort(struct store_rows *rows) {
  for (int r = 0; r < rows->n; r++)
    rows->order[r] = r;
  if (rows->table->nkey)
    qsort_r(rows->order, (size_t)rows->n, sizeof *rows->order, store_rows_cmp,
            rows);
}

/* Hands the batch's current buffer to the writer thread (sorted here, on
 * the ingest thread, which has time to spare). */
static void store_batch_send(struct store_writer *w, struct store_batch *b) {
  struct store_rows *r = b->cur;
  if (!r || r->n == 0)
    return;
  b->cur = NULL;
  store_rows_sort(r);
  pthread_mutex_lock(&w->mu);
  while (
      (w->queued >= STORE_QUEUE_MAX || w->queued_bytes >= STORE_QUEUE_BYTES) &&
      !w->hold) /* held: grows */
    pthread_cond_wait(&w->cv_space, &w->mu);
  if (w->tail)
    w->tail->next = r;
  else
    w->head = r;
  w->tail = r;
  w->queued++;
  w->queued_bytes += r->text.len;
  pthread_cond_signal(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
}

/* Closes the open slice blocks, sends every partial buffer and waits until
 * the writer thread is idle: the ingest thread may then use the connection. */
static void store_drain(struct store_writer *w) {
  store_slices_flush(w->slices);
  store_counters_flush(w->counters);
  store_flows_flush(w->flows);
  for (int i = 0; store_tables(w, i); i++)
    store_batch_send(w, store_tables(w, i));
  pthread_mutex_lock(&w->mu);
  while (w->head || w->busy)
    pthread_cond_wait(&w->cv_idle, &w->mu);
  pthread_mutex_unlock(&w->mu);
  store_slices_error(w->slices, &w->error); /* ingest thread, like this */
  store_counters_error(w->counters, &w->error);
  store_flows_error(w->flows, &w->error);
}

/* Returns the first cell of a new row of table b. */
static int store_batch_row(struct store_writer *w, struct store_batch *b) {
  if (b->cur &&
      (b->cur->n == STORE_CHUNK_ROWS || b->cur->text.len >= STORE_CHUNK_BYTES))
    store_batch_send(w, b);
  if (!b->cur)
    b->cur = store_rows_new(w, b);
  return b->cur->n++ * b->ncols;
}

/* Queues one encoded block in table b: its nk integers, then its data. */
static void store_batch_block(struct store_writer *w, struct store_batch *b,
                              int nk, const int64_t *key,
                              const unsigned char *data, size_t len) {
  int c = store_batch_row(w, b);
  memcpy(b->cur->ints + c, key, (size_t)nk * sizeof *key);
  store_rows_text(b->cur, c + nk, (const char *)data, len);
}

/* Queues one encoded slice block (store_slices' emit): its data in
 * slice_block, its args, unless it has none, in slice_args under the same
 * id.  Ids count the blocks in the order emitted, so both tables are
 * written in key order. */
static void store_writer_block(void *ud, int64_t track, int64_t lane,
                               int64_t ts0, int64_t id0, int64_t n,
                               const unsigned char *data, size_t len,
                               const unsigned char *args, size_t args_len) {
  struct store_writer *w = ud;
  int64_t block = ++w->blocks;
  store_batch_block(w, &w->slice, 6,
                    (int64_t[]){block, track, lane, ts0, id0, n}, data, len);
  if (args_len)
    store_batch_block(w, &w->slice_args, 1, &block, args, args_len);
}

/* Queues one args set (store_slices' emit_set). */
static void store_writer_argset(void *ud, int64_t id, const char *tpl,
                                size_t len) {
  store_batch_block(ud, &((struct store_writer *)ud)->arg_set, 1, &id,
                    (const unsigned char *)tpl, len);
}

/* Queues one encoded counter block (store_counters' emit). */
static void store_writer_cblock(void *ud, int64_t track, int64_t series,
                                int64_t ts0, int64_t seq0, int64_t n,
                                const unsigned char *data, size_t len) {
  struct store_writer *w = ud;
  store_batch_block(w, &w->counter, 5, (int64_t[]){track, series, ts0, seq0, n},
                    data, len);
}

/* Queues one encoded flow block (store_flows' emit). */
static void store_writer_fblock(void *ud, int64_t flow0, int64_t n,
                                const unsigned char *data, size_t len) {
  struct store_writer *w = ud;
  store_batch_block(w, &w->flow, 2, (int64_t[]){flow0, n}, data, len);
}

void store_writer_dep_block(struct store_writer *w, int rev, int64_t track,
                            int64_t lane, int64_t ts0, int64_t n,
                            const unsigned char *data, size_t len) {
  store_batch_block(w, rev ? &w->dep_rev : &w->dep, 4,
                    (int64_t[]){track, lane, ts0, n}, data, len);
}

int store_writer_open(const char *path, struct store_writer **out,
                      char **cause) {
  struct store_writer *w = xcalloc(1, sizeof *w);
  w->path = xstrdup(path);
  w->tmp = xasprintf("%s.tmp", path);
  unlink(w->tmp);
  char *err = NULL;
  /* Unusable locations are found now, with the system's reason, rather
   * than as SQLite's "unable to open database file" or by the rename after
   * the whole ingest. */
  struct stat st;
  int fd = -1, e = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (!e &&
      (fd = open(w->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
    e = errno;
  if (fd >= 0)
    close(fd);
  if (e) {
    *cause = xasprintf("cannot create store %s: %s",
                       e == EISDIR ? path : w->tmp, strerror(e));
    free(w->path);
    free(w->tmp);
    free(w);
    return -e;
  }
  if (sqlite3_open_v2(w->tmp, &w->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK ||
      store_vtab_register(w->db) != SQLITE_OK ||
      store_json_register(w->db) != SQLITE_OK ||
      sqlite3_exec(w->db,
                   "PRAGMA page_size=8192; PRAGMA journal_mode=OFF;"
                   "PRAGMA synchronous=OFF; PRAGMA cache_size=-8192;"
                   "PRAGMA secure_delete=OFF;",
                   NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(w->db, store_schema_sql, NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(w->db, "BEGIN", NULL, NULL, &err) != SQLITE_OK) {
    char *msg = store_errmsg(w->db);
    *cause = xasprintf("cannot create store %s: %s", w->tmp, msg);
    free(msg);
    sqlite3_free(err);
    sqlite3_close(w->db);
    unlink(w->tmp);
    free(w->path);
    free(w->tmp);
    free(w);
    return -EIO;
  }
  store_batch_init(w, &w->str, "str", "id,s", "it", 0);
  store_batch_init(w, &w->track, "track",
                   "id,kind,domain,source,instance_id,pid,tid,nc_idx,"
                   "pcore_idx,worker_gid,stream_id,device_idx,hbm_idx,cpu_id,"
                   "device_profile_id,label",
                   "ittttnnNNNNNNtIt", 0);
  store_batch_init(w, &w->slice, "slice_block", "id,track,lane,ts0,id0,n,data",
                   "iiiiiib", 1);
  store_batch_init(w, &w->slice_args, "slice_args", "block,args", "ib", 1);
  store_batch_init(w, &w->arg_set, "arg_set", "id,tpl", "ib", 1);
  w->slices = store_slices_new(store_writer_block, store_writer_argset, w);
  store_batch_init(w, &w->counter, "counter_block",
                   "track,series,ts0,seq0,n,data", "iiiiib", 4);
  w->counters = store_counters_new(store_writer_cblock, w);
  store_batch_init(w, &w->slice_lod, "slice_lod",
                   "track,level,lane,bucket,n,count,rows", "iiiiiib", 4);
  store_batch_init(w, &w->counter_lod, "counter_lod",
                   "track,series,level,bucket,ts,min,max,last,count",
                   "iiiiirrri", 4);
  store_batch_init(w, &w->flow, "flow_block", "flow0,n,data", "iib", 0);
  w->flows = store_flows_new(store_writer_fblock, w);
  store_batch_init(w, &w->slice_flow, "slice_flow", "track,lane,ts,id,flow_id",
                   "iiiii", 5);
  store_batch_init(w, &w->name_stat, "name_stat", "name,track,count,total_dur",
                   "iiii", 2);
  store_batch_init(w, &w->dep, "inst_dep_block", "track,lane,ts0,n,data",
                   "iiiib", 0);
  store_batch_init(w, &w->dep_rev, "inst_dep_rev_block",
                   "track,lane,ts0,n,data", "iiiib", 0);
  w->track_upd = store_prepare(
      w, "UPDATE track SET lanes=?, max_dur=?, event_count=?, first_ts=?, "
         "last_ts=?, lod_min_level=? WHERE id=?");
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv_work, NULL);
  pthread_cond_init(&w->cv_space, NULL);
  pthread_cond_init(&w->cv_idle, NULL);
  w->sync_fd = open(w->tmp, O_RDONLY | O_CLOEXEC);
  if (pthread_create(&w->th, NULL, store_writer_thread, w) != 0)
    fatal("store: cannot start the writer thread");
  *out = w;
  return 0;
}

/* Sets text cell `cell` of the batch's current chunk to a copy of the
 * NUL-terminated s (NULL: SQL NULL). */
static void store_batch_text(struct store_batch *b, int cell, const char *s) {
  store_rows_text(b->cur, cell, s, s ? strlen(s) : 0);
}

int64_t store_writer_intern(struct store_writer *w, const char *s) {
  size_t len = strlen(s);
  int added;
  int64_t id = store_intern_get(&w->strs, s, len, &added);
  if (added) {
    int c = store_batch_row(w, &w->str);
    w->str.cur->ints[c] = id;
    store_rows_text(w->str.cur, c + 1, s, len);
  }
  return id;
}

int64_t store_writer_track(struct store_writer *w,
                           const struct store_track *t) {
  int c = store_batch_row(w, &w->track);
  struct store_rows *r = w->track.cur;
  int64_t id = ++w->tracks;
  const char *texts[] = {t->kind, t->domain, t->source,
                         t->instance_id ? t->instance_id : ""};
  r->ints[c] = id;
  for (int i = 0; i < 4; i++)
    store_batch_text(&w->track, c + 1 + i, texts[i]);
  r->ints[c + 5] = t->has_pid ? t->pid : INT64_MIN;
  r->ints[c + 6] = t->has_tid ? t->tid : INT64_MIN;
  int64_t ints[] = {t->nc_idx,    t->pcore_idx,  t->worker_gid,
                    t->stream_id, t->device_idx, t->hbm_idx};
  for (int i = 0; i < 6; i++)
    r->ints[c + 7 + i] = ints[i];
  store_batch_text(&w->track, c + 13, t->cpu_id);
  r->ints[c + 14] = t->device_profile_id;
  store_batch_text(&w->track, c + 15, t->label);
  return id;
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

void store_writer_track_stats(struct store_writer *w, int64_t track,
                              const struct store_track_stats *s) {
  store_drain(w);
  if (w->error)
    return;
  sqlite3_stmt *st = w->track_upd;
  sqlite3_bind_int64(st, 1, s->lanes);
  sqlite3_bind_int64(st, 2, s->max_dur);
  sqlite3_bind_int64(st, 3, s->event_count);
  store_bind_opt_int(st, 4, s->first_ts, s->event_count > 0);
  store_bind_opt_int(st, 5, s->last_ts, s->event_count > 0);
  store_bind_opt_int(st, 6, s->lod_min_level, s->lod_min_level >= 0);
  sqlite3_bind_int64(st, 7, track);
  if (!store_ok(sqlite3_step(st)))
    store_error(w, "track stats");
  sqlite3_reset(st);
}

void store_writer_slice_flows(struct store_writer *w, int64_t track,
                              int64_t lane, int64_t ts, int64_t id, int64_t dur,
                              int64_t name, int64_t grp, const char *args,
                              size_t args_len, const int64_t *flows,
                              int n_flows) {
  store_slices_add(w->slices, track, lane, ts, id, dur, name, grp, args,
                   args_len, flows, n_flows);
}

void store_writer_counter(struct store_writer *w, int64_t track, int series,
                          int64_t ts, int64_t seq, double value) {
  store_counters_add(w->counters, track, series, ts, seq, value);
}

void store_writer_slice_lod(struct store_writer *w, int64_t track, int level,
                            int64_t lane, int64_t bucket, int64_t n,
                            int64_t count, const void *rows, size_t len) {
  store_batch_block(w, &w->slice_lod, 6,
                    (int64_t[]){track, level, lane, bucket, n, count}, rows,
                    len);
}

void store_writer_counter_lod(struct store_writer *w, int64_t track, int series,
                              int level, int64_t bucket, int64_t ts, double min,
                              double max, double last, int64_t count) {
  int c = store_batch_row(w, &w->counter_lod);
  struct store_rows *r = w->counter_lod.cur;
  r->ints[c] = track, r->ints[c + 1] = series, r->ints[c + 2] = level,
  r->ints[c + 3] = bucket, r->ints[c + 4] = ts;
  r->reals[c + 5] = min, r->reals[c + 6] = max, r->reals[c + 7] = last;
  r->ints[c + 8] = count;
}

void store_writer_flow(struct store_writer *w, unsigned tables, int64_t flow_id,
                       int64_t track, int64_t lane, int64_t ts, int64_t id) {
  if (tables & STORE_FLOW_BY_ID)
    store_flows_add(w->flows, flow_id, track, lane, ts, id);
  if (tables & STORE_FLOW_BY_SLICE) {
    const int64_t row[5] = {track, lane, ts, id, flow_id};
    int c = store_batch_row(w, &w->slice_flow);
    memcpy(w->slice_flow.cur->ints + c, row, sizeof row);
  }
}

void store_writer_name_stat(struct store_writer *w, int64_t name, int64_t track,
                            int64_t count, int64_t total_dur) {
  const int64_t row[4] = {name, track, count, total_dur};
  int c = store_batch_row(w, &w->name_stat);
  memcpy(w->name_stat.cur->ints + c, row, sizeof row);
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

/* Drains the queue and prepares sql for store_writer_exec() and _query():
 * NULL once the writer has failed, or when sql does not prepare (then that
 * is the error). */
static sqlite3_stmt *store_writer_stmt(struct store_writer *w,
                                       const char *sql) {
  sqlite3_stmt *st = NULL;
  store_drain(w);
  if (w->error)
    return NULL;
  if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
    store_error(w, sql);
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

int64_t store_writer_exec(struct store_writer *w, const char *sql,
                          const char *types, ...) {
  sqlite3_stmt *st = store_writer_stmt(w, sql);
  if (!st)
    return -EIO;
  va_list ap;
  va_start(ap, types);
  store_bind_va(st, types, ap);
  va_end(ap);
  int rc = sqlite3_step(st);
  if (!store_ok(rc))
    store_error(w, sql);
  sqlite3_finalize(st);
  return store_ok(rc) ? sqlite3_last_insert_rowid(w->db) : -EIO;
}

int store_writer_query(struct store_writer *w,
                       int (*row)(void *ud, sqlite3_stmt *st), void *ud,
                       const char *sql, const char *types, ...) {
  sqlite3_stmt *st = store_writer_stmt(w, sql);
  if (!st)
    return -EIO;
  va_list ap;
  va_start(ap, types);
  store_bind_va(st, types, ap);
  va_end(ap);
  /* `row` may add rows (a derived counter per slice read): they queue up
   * until the statement is done, for the connection must not be used by
   * the writer thread meanwhile. */
  pthread_mutex_lock(&w->mu);
  w->hold = 1;
  pthread_mutex_unlock(&w->mu);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (row(ud, st))
      break;
  if (!store_ok(rc))
    store_error(w, sql);
  sqlite3_finalize(st);
  pthread_mutex_lock(&w->mu);
  w->hold = 0;
  pthread_cond_signal(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
  return store_ok(rc) ? 0 : -EIO;
}

/* Stops the writer thread and frees everything but the file. */
static void store_writer_free(struct store_writer *w) {
  store_drain(w);
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_signal(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->th, NULL);
  for (struct store_rows *r = w->spare, *n; r; r = n) {
    n = r->next;
    store_rows_free(r);
  }
  for (int i = 0; store_tables(w, i); i++) {
    struct store_batch *b = store_tables(w, i);
    if (b->cur)
      store_rows_free(b->cur);
    sqlite3_finalize(b->multi);
    sqlite3_finalize(b->single);
  }
  sqlite3_finalize(w->track_upd);
  store_slices_free(w->slices);
  store_counters_free(w->counters);
  store_flows_free(w->flows);
  store_intern_free(&w->strs);
  if (w->sync_fd >= 0)
    close(w->sync_fd);
  sqlite3_close(w->db);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv_work);
  pthread_cond_destroy(&w->cv_space);
  pthread_cond_destroy(&w->cv_idle);
  free(w->error);
  free(w->path);
  free(w->tmp);
  free(w);
}

void store_writer_abort(struct store_writer *w) {
  if (!w)
    return;
  char *tmp = xstrdup(w->tmp);
  store_writer_free(w);
  unlink(tmp);
  free(tmp);
}

int store_writer_finish(struct store_writer *w, char **cause) {
  store_drain(w);
  char *sql = xasprintf(
      "INSERT OR REPLACE INTO store_info VALUES ('generation', '%016" PRIx64
      "'), ('state', 'complete'); COMMIT;"
      /* statistics from a sample, not a whole read of the store again */
      "PRAGMA analysis_limit=1000; ANALYZE;",
      store_generation_new());
  if (!w->error && sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    store_error(w, "commit"); /* its message is the connection's */
  free(sql);
  if (w->error) {
    *cause = xasprintf("cannot complete store %s: %s", w->tmp, w->error);
    store_writer_abort(w);
    return -EIO;
  }
  char *tmp = xstrdup(w->tmp), *path = xstrdup(w->path);
  store_writer_free(w);
  /* The store must be on disk before its name says it is complete. */
  int rc = util_rename_durable(tmp, path, cause);
  if (rc)
    unlink(tmp);
  free(tmp);
  free(path);
  return rc;
}
