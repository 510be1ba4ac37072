/* annot.c -- the annotations database beside the store (see annot.h).
 *
 * One table, one connection (opened read-write on first use, created on
 * the first write), one mutex held for each call.  Statements are prepared
 * per call: the file sees a few writes a minute, not a query load.
 */
#include "annot.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ANNOT_SCHEMA                                                           \
  "CREATE TABLE IF NOT EXISTS annotation (id INTEGER PRIMARY KEY, kind TEXT "  \
  "NOT NULL, ts INTEGER NOT NULL, end_ts INTEGER NOT NULL, track TEXT, "       \
  "event_name TEXT, text TEXT, color TEXT)"
#define ANNOT_COLS "id, kind, ts, end_ts, track, event_name, text, color"

struct annot {
  pthread_mutex_t mu;
  char *path;
  sqlite3 *db; /* NULL until first used */
};

struct annot *annot_new(const char *path) {
  struct annot *a = xcalloc(1, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  a->path = xstrdup(path);
  return a;
}

void annot_free(struct annot *a) {
  if (!a)
    return;
  sqlite3_close(a->db);
  pthread_mutex_destroy(&a->mu);
  free(a->path);
  free(a);
}

const char *annot_path(const struct annot *a) { return a->path; }

/* Sets *cause to "<what>: <SQLite's message>" and returns -EIO. */
static int annot_fail(struct annot *a, const char *what, char **cause) {
  *cause = xasprintf("annotations %s (%s): %s", what, a->path,
                     a->db ? sqlite3_errmsg(a->db) : "cannot open");
  return -EIO;
}

/* Opens the connection (a->mu held).  Returns 1 when open, 0 when the file
 * does not exist and `create` is false, -EIO with *cause set. */
static int annot_open(struct annot *a, bool create, char **cause) {
  if (a->db)
    return 1;
  if (!create && access(a->path, F_OK) != 0)
    return 0;
  int rc = sqlite3_open_v2(
      a->path, &a->db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(a->db, 2000);
    rc = sqlite3_exec(a->db, ANNOT_SCHEMA, NULL, NULL, NULL);
  }
  if (rc != SQLITE_OK) {
    int r = annot_fail(a, "cannot be opened", cause);
    sqlite3_close(a->db);
    a->db = NULL;
    return r;
  }
  return 1;
}

static char *annot_col(sqlite3_stmt *s, int i) {
  const char *t = (const char *)sqlite3_column_text(s, i);
  return t ? xstrdup(t) : NULL;
}

static void annot_read_row(sqlite3_stmt *s, struct annot_rec *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(s, 0);
  const char *k = (const char *)sqlite3_column_text(s, 1);
  snprintf(r->kind, sizeof r->kind, "%s", k ? k : "");
  r->ts = sqlite3_column_int64(s, 2);
  r->end = sqlite3_column_int64(s, 3);
  r->track = annot_col(s, 4);
  r->event_name = annot_col(s, 5);
  r->text = annot_col(s, 6);
  r->color = annot_col(s, 7);
}

void annot_rec_free(struct annot_rec *r) {
  free(r->track);
  free(r->event_name);
  free(r->text);
  free(r->color);
  memset(r, 0, sizeof *r);
}

void annot_list_free(struct annot_rec *recs, size_t n) {
  for (size_t i = 0; i < n; i++)
    annot_rec_free(&recs[i]);
  free(recs);
}

/* Reads the rows of `sql` (one optional int64 parameter `id`, < 0: none)
 * into a new array (a->mu held).  Returns 0 or -EIO with *cause set. */
static int annot_rows(struct annot *a, const char *sql, int64_t id,
                      struct annot_rec **out, size_t *n, char **cause) {
  sqlite3_stmt *s = NULL;
  size_t cap = 0;
  int rc = annot_open(a, false, cause);
  *out = NULL;
  *n = 0;
  if (rc <= 0)
    return rc;
  if (sqlite3_prepare_v2(a->db, sql, -1, &s, NULL) != SQLITE_OK)
    return annot_fail(a, "cannot be read", cause);
  if (id >= 0)
    sqlite3_bind_int64(s, 1, id);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (*n == cap)
      *out = xrealloc(*out, (cap = cap ? 2 * cap : 16) * sizeof **out);
    annot_read_row(s, &(*out)[(*n)++]);
  }
  sqlite3_finalize(s);
  if (rc == SQLITE_DONE)
    return 0;
  annot_list_free(*out, *n);
  *out = NULL;
  *n = 0;
  return annot_fail(a, "cannot be read", cause);
}

int annot_list(struct annot *a, struct annot_rec **out, size_t *n,
               char **cause) {
  pthread_mutex_lock(&a->mu);
  int rc =
      annot_rows(a, "SELECT " ANNOT_COLS " FROM annotation ORDER BY ts, id", -1,
                 out, n, cause);
  pthread_mutex_unlock(&a->mu);
  return rc;
}

int annot_get(struct annot *a, int64_t id, struct annot_rec *out,
              char **cause) {
  struct annot_rec *rows;
  size_t n;
  pthread_mutex_lock(&a->mu);
  int rc = annot_rows(a, "SELECT " ANNOT_COLS " FROM annotation WHERE id = ?1",
                      id, &rows, &n, cause);
  pthread_mutex_unlock(&a->mu);
  if (rc < 0)
    return rc;
  if (n == 0) {
    *cause = xasprintf("no annotation with id %lld", (long long)id);
    return -ENOENT;
  }
  *out = rows[0];
  free(rows);
  return 0;
}

/* Checks r against the limits.  Returns 0 or -EINVAL with *cause set. */
static int annot_check(const struct annot_rec *r, char **cause) {
  if (strcmp(r->kind, "flag") != 0 && strcmp(r->kind, "note") != 0 &&
      strcmp(r->kind, "area") != 0)
    *cause = xstrdup("'kind' must be flag, note or area");
  else if (r->end < r->ts)
    *cause = xstrdup("'end' must not be before 'ts'");
  else if (r->text && strlen(r->text) > ANNOT_MAX_TEXT)
    *cause = xasprintf("'text' is longer than %d bytes", ANNOT_MAX_TEXT);
  else if (r->color && strlen(r->color) > ANNOT_MAX_COLOR)
    *cause = xasprintf("'color' is longer than %d bytes", ANNOT_MAX_COLOR);
  else
    return 0;
  return -EINVAL;
}

static void annot_bind_text(sqlite3_stmt *s, int i, const char *v) {
  if (v)
    sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(s, i);
}

/* Runs one write: `sql` with r's fields as ?1..?7 and, when `id` >= 0, ?8
 * = id (a->mu held).  Returns the rows changed, or -EIO with *cause set. */
static int annot_write(struct annot *a, const char *sql,
                       const struct annot_rec *r, int64_t id, char **cause) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(a->db, sql, -1, &s, NULL) != SQLITE_OK)
    return annot_fail(a, "cannot be written", cause);
  if (r) {
    annot_bind_text(s, 1, r->kind);
    sqlite3_bind_int64(s, 2, r->ts);
    sqlite3_bind_int64(s, 3, r->end);
    annot_bind_text(s, 4, r->track);
    annot_bind_text(s, 5, r->event_name);
    annot_bind_text(s, 6, r->text);
    annot_bind_text(s, 7, r->color);
  }
  if (id >= 0)
    sqlite3_bind_int64(s, 8, id);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE)
    return annot_fail(a, "cannot be written", cause);
  return sqlite3_changes(a->db);
}

/* The number of annotations (a->mu held, a->db open), or -EIO. */
static int64_t annot_count(struct annot *a, char **cause) {
  sqlite3_stmt *s = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(a->db, "SELECT count(*) FROM annotation", -1, &s,
                         NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return n < 0 ? annot_fail(a, "cannot be read", cause) : n;
}

int annot_add(struct annot *a, const struct annot_rec *r, int64_t *id,
              char **cause) {
  int64_t rc = annot_check(r, cause);
  if (rc < 0)
    return (int)rc;
  pthread_mutex_lock(&a->mu);
  rc = annot_open(a, true, cause);
  if (rc > 0)
    rc = annot_count(a, cause);
  if (rc >= ANNOT_MAX_COUNT) {
    *cause = xasprintf("there are %d annotations already, the most one "
                       "profile keeps; delete some first",
                       ANNOT_MAX_COUNT);
    rc = -ENOSPC;
  } else if (rc >= 0) {
    rc = annot_write(a,
                     "INSERT INTO annotation (kind, ts, end_ts, track, "
                     "event_name, text, color) VALUES (?1, ?2, ?3, ?4, ?5, "
                     "?6, ?7)",
                     r, -1, cause);
    if (rc >= 0)
      *id = sqlite3_last_insert_rowid(a->db);
  }
  pthread_mutex_unlock(&a->mu);
  return rc < 0 ? (int)rc : 0;
}

/* Runs a write of annotation `id` (update when r, else delete).  Returns 0,
 * -ENOENT or -EIO with *cause set. */
static int annot_change(struct annot *a, const struct annot_rec *r, int64_t id,
                        char **cause) {
  pthread_mutex_lock(&a->mu);
  int rc = annot_open(a, false, cause);
  if (rc > 0)
    rc = annot_write(a,
                     r ? "UPDATE annotation SET kind = ?1, ts = ?2, end_ts = "
                         "?3, track = ?4, event_name = ?5, text = ?6, color "
                         "= ?7 WHERE id = ?8"
                       : "DELETE FROM annotation WHERE id = ?8",
                     r, id, cause);
  pthread_mutex_unlock(&a->mu);
  if (rc == 0) {
    *cause = xasprintf("no annotation with id %lld", (long long)id);
    return -ENOENT;
  }
  return rc < 0 ? rc : 0;
}

int annot_update(struct annot *a, const struct annot_rec *r, char **cause) {
  int rc = annot_check(r, cause);
  return rc < 0 ? rc : annot_change(a, r, r->id, cause);
}

int annot_delete(struct annot *a, int64_t id, char **cause) {
  return annot_change(a, NULL, id, cause);
}
