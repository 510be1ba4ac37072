/* store_pool.c -- the read-only side of store.h: the connection pool,
 * the store's generation and store_is_current().
 *
 * n connections opened SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, handed
 * out under a mutex: a connection is used by one thread at a time, so the
 * statements cached on it (query_stmt(), query_util.c) need no locking either.
 *
 * Every open pool is on one list, so that store_pool_memo_get() and _put()
 * find the pool of a connection; a pool leaves the list when it is closed,
 * and its memo goes with it.
 */
#include "store.h"
#include "store_vtab.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct store_names {
  char *text;    /* every string, NUL-terminated */
  uint32_t *off; /* [id]: offset in text, UINT32_MAX: no such id */
  int64_t max_id;
};

/* One text of a pool's memo. */
struct store_pool_memo {
  char *key, *text;
  struct store_pool_memo *next;
};

struct store_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *path;
  int n;
  sqlite3 **db;
  bool *busy;
  pthread_mutex_t names_mu;
  bool names_read;
  struct store_names *names;
  struct store_pool_memo *memo; /* guarded by mu */
  struct store_pool *next;      /* the list of open pools */
  char gen[STORE_GEN_LEN + 1];  /* the store's generation */
};

/* The open pools. */
static pthread_mutex_t store_pool_list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct store_pool *store_pool_list;

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

/* POSIX regex behind SQL REGEXP (search terms name~/re/), registered once
 * on every reader; the compiled pattern is cached per statement as the
 * auxiliary data of argument 0. */
static void store_pool_regfree(void *p) {
  regfree(p);
  free(p);
}

static void store_pool_regexp(sqlite3_context *cx, int argc,
                                sqlite3_value **argv) {
  (void)argc;
  regex_t *re = sqlite3_get_auxdata(cx, 0);
  const char *s = (const char *)sqlite3_value_text(argv[1]);
  if (!re) {
    const char *pat = (const char *)sqlite3_value_text(argv[0]);
    re = xcalloc(1, sizeof *re);
    if (!pat || regcomp(re, pat, REG_EXTENDED | REG_NOSUB | REG_ICASE) != 0) {
      free(re);
      sqlite3_result_error(cx, "bad regular expression", -1);
      return;
    }
    sqlite3_set_auxdata(cx, 0, re, store_pool_regfree);
    re = sqlite3_get_auxdata(cx, 0);
    if (!re) /* SQLite dropped it: compile again next row */
      return sqlite3_result_int(cx, 0);
  }
  sqlite3_result_int(cx, s && regexec(re, s, 0, NULL, 0) == 0);
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
  /* No memory map: pages come through the OS page cache, shared by every
   * connection and not counted in the server's RSS (a map of the store per
   * connection counted it once per connection: 827 MiB VmHWM against 490
   * under bench/load --crowd 1000, window latencies the same). */
  rc = sqlite3_exec(db,
                    "PRAGMA mmap_size=0; PRAGMA cache_size=-8192;"
                    "PRAGMA query_only=1; PRAGMA temp_store=MEMORY;",
                    NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = store_vtab_register(db);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "regexp", 2,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                 store_pool_regexp, NULL, NULL);
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

void store_generation(sqlite3 *db, char out[STORE_GEN_LEN + 1]) {
  sqlite3_stmt *st = NULL;
  snprintf(out, STORE_GEN_LEN + 1, "0");
  if (sqlite3_prepare_v2(db,
                         "SELECT value FROM store_info WHERE key = "
                         "'generation'",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(out, STORE_GEN_LEN + 1, "%s",
             (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

uint64_t store_generation_new(void) {
  uint64_t g;
  if (getrandom(&g, sizeof g, 0) == (ssize_t)sizeof g)
    return g;
  int64_t seed[2] = {util_now_ns(), (int64_t)getpid()};
  return util_hash(seed, sizeof seed);
}

const char *store_pool_generation(const struct store_pool *p) { return p->gen; }

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
  pthread_mutex_init(&p->names_mu, NULL);
  for (int i = 0; i < n; i++) {
    int rc = store_pool_open_one(path, &p->db[i], cause);
    if (rc < 0) {
      p->n = i;
      store_pool_close(p);
      return rc;
    }
  }
  p->n = n;
  store_generation(p->db[0], p->gen);
  pthread_mutex_lock(&store_pool_list_mu);
  p->next = store_pool_list;
  store_pool_list = p;
  pthread_mutex_unlock(&store_pool_list_mu);
  *out = p;
  return 0;
}

sqlite3 *store_pool_get_wait(struct store_pool *p, int wait_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (wait_ms >= 0) {
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
  }
  bool late = false;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    for (int i = 0; i < p->n; i++)
      if (!p->busy[i]) {
        p->busy[i] = true;
        pthread_mutex_unlock(&p->mu);
        return p->db[i];
      }
    if (late)
      break;
    if (wait_ms < 0)
      pthread_cond_wait(&p->cv, &p->mu);
    else
      late = pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

sqlite3 *store_pool_get(struct store_pool *p) {
  return store_pool_get_wait(p, -1);
}

void store_pool_put(struct store_pool *p, sqlite3 *db) {
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < p->n; i++)
    if (p->db[i] == db)
      p->busy[i] = false;
  pthread_cond_broadcast(&p->cv); /* a timed waiter may have left */
  pthread_mutex_unlock(&p->mu);
}

const char *store_pool_path(const struct store_pool *p) { return p->path; }

int store_pool_size(const struct store_pool *p) { return p->n; }

static void store_names_free(struct store_names *n) {
  if (!n)
    return;
  free(n->text);
  free(n->off);
  free(n);
}

/* Reads the str table with db, or returns NULL (too big, sparse ids or a
 * read error). */
static struct store_names *store_names_read(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  struct store_names *n = NULL;
  int64_t count = 0, bytes = 0, max_id = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT count(*), coalesce(sum(length(CAST(s AS "
                         "BLOB))), 0), coalesce(max(id), 0) FROM str",
                         -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW)
    goto out;
  count = sqlite3_column_int64(st, 0);
  bytes = sqlite3_column_int64(st, 1) + count;
  max_id = sqlite3_column_int64(st, 2);
  sqlite3_finalize(st);
  st = NULL;
  if (bytes > STORE_NAMES_MAX_BYTES || max_id < 0 || max_id > 2 * count + 1024)
    goto out;
  n = xcalloc(1, sizeof *n);
  n->max_id = max_id;
  n->text = xmalloc((size_t)bytes + 1);
  n->off = xmalloc(((size_t)max_id + 1) * sizeof *n->off);
  memset(n->off, 0xff, ((size_t)max_id + 1) * sizeof *n->off);
  size_t used = 0;
  int rc;
  if (sqlite3_prepare_v2(db, "SELECT id, s FROM str", -1, &st, NULL) !=
      SQLITE_OK)
    goto fail;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    const char *s = (const char *)sqlite3_column_text(st, 1);
    size_t len = (size_t)sqlite3_column_bytes(st, 1);
    if (id < 0 || id > max_id || used + len + 1 > (size_t)bytes + 1)
      goto fail; /* changed under us: not an immutable store */
    n->off[id] = (uint32_t)used;
    memcpy(n->text + used, s ? s : "", len);
    n->text[used + len] = '\0';
    used += len + 1;
  }
  if (rc == SQLITE_DONE)
    goto out;
fail:
  store_names_free(n);
  n = NULL;
out:
  sqlite3_finalize(st);
  return n;
}

const struct store_names *store_pool_names(struct store_pool *p, sqlite3 *db) {
  if (!p)
    return NULL;
  pthread_mutex_lock(&p->names_mu);
  if (!p->names_read) {
    p->names = store_names_read(db);
    p->names_read = true;
  }
  pthread_mutex_unlock(&p->names_mu);
  return p->names;
}

const char *store_names_get(const struct store_names *n, int64_t id) {
  if (id < 0 || id > n->max_id || n->off[id] == UINT32_MAX)
    return NULL;
  return n->text + n->off[id];
}

/* The open pool db belongs to, or NULL. */
static struct store_pool *store_pool_of(sqlite3 *db) {
  struct store_pool *found = NULL;
  pthread_mutex_lock(&store_pool_list_mu);
  for (struct store_pool *p = store_pool_list; p && !found; p = p->next)
    for (int i = 0; i < p->n; i++)
      if (p->db[i] == db)
        found = p;
  pthread_mutex_unlock(&store_pool_list_mu);
  return found;
}

const char *store_pool_memo_get(sqlite3 *db, const char *key) {
  struct store_pool *p = store_pool_of(db);
  const char *text = NULL;
  if (!p)
    return NULL;
  pthread_mutex_lock(&p->mu);
  for (struct store_pool_memo *m = p->memo; m && !text; m = m->next)
    if (strcmp(m->key, key) == 0)
      text = m->text;
  pthread_mutex_unlock(&p->mu);
  return text;
}

void store_pool_memo_put(sqlite3 *db, const char *key, const char *text) {
  struct store_pool *p = store_pool_of(db);
  struct store_pool_memo *m;
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  for (m = p->memo; m; m = m->next)
    if (strcmp(m->key, key) == 0)
      break;
  if (!m) {
    m = xcalloc(1, sizeof *m);
    m->key = xstrdup(key);
    m->text = xstrdup(text);
    m->next = p->memo;
    p->memo = m;
  }
  pthread_mutex_unlock(&p->mu);
}

void store_pool_close(struct store_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&store_pool_list_mu);
  for (struct store_pool **pp = &store_pool_list; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&store_pool_list_mu);
  while (p->memo) {
    struct store_pool_memo *m = p->memo;
    p->memo = m->next;
    free(m->key);
    free(m->text);
    free(m);
  }
  for (int i = 0; i < p->n; i++)
    store_pool_close_one(p->db[i]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->names_mu);
  store_names_free(p->names);
  free(p->db);
  free(p->busy);
  free(p->path);
  free(p);
}

/* Read-side check of the ingest (store.h): a store is reused when complete
 * and of the same fingerprint. */
int store_is_current(const char *path, const char *fingerprint,
                     uint64_t *events, uint64_t *warnings) {
  sqlite3 *db;
  int ok = 0;
  if (access(path, R_OK) != 0)
    return 0;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT (SELECT value FROM store_info WHERE key='fingerprint'), "
            "(SELECT value FROM store_info WHERE key='state'), "
            "(SELECT coalesce(sum(event_count), 0) FROM track), "
            "(SELECT count(*) FROM Warning)",
            -1, &st, NULL) == SQLITE_OK) {
      if (sqlite3_step(st) == SQLITE_ROW) {
        const char *fp = (const char *)sqlite3_column_text(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        ok = fp && state && strcmp(fp, fingerprint) == 0 &&
             strcmp(state, "complete") == 0;
        *events = (uint64_t)sqlite3_column_int64(st, 2);
        *warnings = (uint64_t)sqlite3_column_int64(st, 3);
      }
      sqlite3_finalize(st);
    }
  }
  sqlite3_close(db);
  return ok;
}
