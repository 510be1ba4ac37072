/* store_pool.c -- the read-only connection pool of store.h.
 *
 * n connections opened SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, handed
 * out under a mutex: a connection is used by one thread at a time, so the
 * statements cached on it (query.c) need no locking either.
 */
#include "store.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct store_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *path;
  int n;
  sqlite3 **db;
  bool *busy;
};

/* "file:<path>?immutable=1" with the URI's special characters escaped.  A
 * complete store never changes (a new one replaces it by rename), so
 * readers skip file locking and change detection: without this, every
 * statement of a window query pays fcntl() locks and an fstat(). */
static char *store_pool_uri(const char *path) {
  struct sbuf b = {0};
  sbuf_adds(&b, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++)
    if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20)
      sbuf_printf(&b, "%%%02X", *p);
    else
      sbuf_addc(&b, (char)*p);
  sbuf_adds(&b, "?immutable=1");
  return b.s;
}

/* Opens one reader with the settings every reader gets. */
static int store_pool_open_one(const char *path, sqlite3 **out, char **cause) {
  sqlite3 *db = NULL;
  char *uri = store_pool_uri(path);
  int rc = sqlite3_open_v2(
      uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
      NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    *cause =
        xasprintf("%s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return -EIO;
  }
  sqlite3_busy_timeout(db, 2000);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  /* mmap shares the OS page cache between the connections. */
  rc = sqlite3_exec(db,
                    "PRAGMA mmap_size=2147418112; PRAGMA cache_size=-32768;"
                    "PRAGMA query_only=1; PRAGMA temp_store=MEMORY;",
                    NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, "SELECT count(*) FROM track", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    *cause = xasprintf("%s: not a neuron-explorer store: %s", path,
                       sqlite3_errmsg(db));
    sqlite3_close(db);
    return -EINVAL;
  }
  *out = db;
  return 0;
}

/* Finalizes every statement cached on db, then closes it. */
static void store_pool_close_one(sqlite3 *db) {
  sqlite3_stmt *s;
  while ((s = sqlite3_next_stmt(db, NULL)) != NULL)
    sqlite3_finalize(s);
  sqlite3_close(db);
}

int store_pool_open(const char *path, int n, struct store_pool **out,
                    char **cause) {
  if (n < 1)
    n = 1;
  struct store_pool *p = xcalloc(1, sizeof *p);
  p->path = xstrdup(path);
  p->db = xcalloc((size_t)n, sizeof *p->db);
  p->busy = xcalloc((size_t)n, sizeof *p->busy);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (int i = 0; i < n; i++) {
    int rc = store_pool_open_one(path, &p->db[i], cause);
    if (rc < 0) {
      p->n = i;
      store_pool_close(p);
      return rc;
    }
  }
  p->n = n;
  *out = p;
  return 0;
}

sqlite3 *store_pool_get(struct store_pool *p) {
  pthread_mutex_lock(&p->mu);
  for (;;) {
    for (int i = 0; i < p->n; i++)
      if (!p->busy[i]) {
        p->busy[i] = true;
        pthread_mutex_unlock(&p->mu);
        return p->db[i];
      }
    pthread_cond_wait(&p->cv, &p->mu);
  }
}

void store_pool_put(struct store_pool *p, sqlite3 *db) {
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < p->n; i++)
    if (p->db[i] == db)
      p->busy[i] = false;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

const char *store_pool_path(const struct store_pool *p) { return p->path; }

void store_pool_close(struct store_pool *p) {
  if (!p)
    return;
  for (int i = 0; i < p->n; i++)
    store_pool_close_one(p->db[i]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p->db);
  free(p->busy);
  free(p->path);
  free(p);
}
