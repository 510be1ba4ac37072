/* store_argcache.c -- see store_argcache.h. */
#ifdef NEX_SQLITE_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#endif
#include "store_argcache.h"
#include "store_argset.h"

#include <stdlib.h>
#include <string.h>

/* Templates kept at most (bytes): past it the cache starts again (a
 * writer keeps fewer: STORE_ARGSETS_BYTES). */
#define STORE_ARGCACHE_BYTES (16 << 20)

struct store_argcache {
  sqlite3 *db;
  char **tpl; /* tpl[id], NULL: not read yet */
  size_t *len;
  int64_t cap;  /* ids below it have a slot */
  size_t bytes; /* of the templates kept */
};

struct store_argcache *store_argcache_new(sqlite3 *db) {
  struct store_argcache *c = sqlite3_malloc(sizeof *c);
  if (c) {
    memset(c, 0, sizeof *c);
    c->db = db;
  }
  return c;
}

/* Forgets every template. */
static void store_argcache_clear(struct store_argcache *c) {
  for (int64_t i = 0; i < c->cap; i++) {
    sqlite3_free(c->tpl[i]);
    c->tpl[i] = NULL;
  }
  c->bytes = 0;
}

/* Reads template id from the store into its slot (id < c->cap).  Returns 0
 * or -1. */
static int store_argcache_read(struct store_argcache *c, int64_t id) {
  sqlite3_stmt *st = NULL;
  int rc = -1;
  if (sqlite3_prepare_v2(c->db, "SELECT tpl FROM arg_set WHERE id = ?", -1, &st,
                         NULL) != SQLITE_OK) {
    sqlite3_finalize(st);
    return -1;
  }
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const void *p = sqlite3_column_blob(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    char *t = n <= STORE_ARGSET_TPL_MAX ? sqlite3_malloc(n + 1) : NULL;
    if (t) {
      if (c->bytes + (size_t)n > STORE_ARGCACHE_BYTES)
        store_argcache_clear(c);
      memcpy(t, p ? p : "", (size_t)n);
      t[n] = '\0';
      c->tpl[id] = t;
      c->len[id] = (size_t)n;
      c->bytes += (size_t)n;
      rc = 0;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

int store_argcache_get(void *ud, int64_t id, const char **tpl, size_t *len) {
  struct store_argcache *c = ud;
  if (id < 1 || id > STORE_ARGSETS_MAX)
    return -1;
  if (id >= c->cap) {
    int64_t cap = c->cap ? c->cap : 64;
    while (cap <= id)
      cap *= 2;
    char **t = sqlite3_realloc64(c->tpl, (sqlite3_uint64)cap * sizeof *t);
    if (t)
      c->tpl = t;
    size_t *l =
        t ? sqlite3_realloc64(c->len, (sqlite3_uint64)cap * sizeof *l) : NULL;
    if (!l)
      return -1;
    c->len = l;
    memset(c->tpl + c->cap, 0, (size_t)(cap - c->cap) * sizeof *t);
    c->cap = cap;
  }
  if (!c->tpl[id] && store_argcache_read(c, id) < 0)
    return -1;
  *tpl = c->tpl[id];
  *len = c->len[id];
  return 0;
}

void store_argcache_free(struct store_argcache *c) {
  if (!c)
    return;
  store_argcache_clear(c);
  sqlite3_free(c->tpl);
  sqlite3_free(c->len);
  sqlite3_free(c);
}
