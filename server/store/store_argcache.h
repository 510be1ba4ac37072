/* store_argcache.h -- a connection's args set templates (table arg_set,
 * store_argset.h), read once each as the virtual table `slice` decodes
 * the blocks that use them.
 *
 * Ownership: store_argcache_new() returns an object freed by
 * store_argcache_free(); the connection is borrowed and outlives it.
 */
#ifndef NEX_STORE_ARGCACHE_H
#define NEX_STORE_ARGCACHE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct store_argcache;

/* Returns a new, empty cache of db's sets, or NULL when out of memory. */
struct store_argcache *store_argcache_new(sqlite3 *db);
/* The template of set id (a struct store_block's argset: ud is the cache):
 * *tpl (borrowed until the next call) and *len.  Returns 0, or -1 when
 * db has no such set, or none that a writer could have given. */
int store_argcache_get(void *ud, int64_t id, const char **tpl, size_t *len);
/* Frees c and its templates.  NULL allowed. */
void store_argcache_free(struct store_argcache *c);

#endif
