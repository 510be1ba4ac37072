/* teststore.h -- the small stores the unit tests and the API fuzz target
 * build (tests/unit/test_api.c, test_query.c, test_store.c,
 * tests/fuzz/fuzz_api.c): a writer that aborts on failure, track
 * descriptions with every optional field unset, runs of slices and counter
 * samples with their LOD rows and track statistics.  No cmocka: the fuzz
 * target links it too.
 *
 * Ownership: teststore_open() returns a writer that teststore_finish()
 * completes and frees.  Strings passed are borrowed.
 */
#ifndef NEX_TESTSTORE_H
#define NEX_TESTSTORE_H

#include "store.h"

#include <sqlite3.h>
#include <stdint.h>

/* A writer for a new store at path; aborts (with the cause on stderr) if
 * it cannot be created. */
struct store_writer *teststore_open(const char *path);

/* Completes the store (renamed to its path); aborts if that fails. */
void teststore_finish(struct store_writer *w);

/* A track of `kind` ("slices" or "counter") and `source` in domain
 * "system", instance "i-1", process 10 and thread 11, NeuronCore 0; every
 * other optional field unset. */
struct store_track teststore_track(const char *kind, const char *source);

/* n slices named `name` on track: slice i starts at ts0 + i * step, lasts
 * dur, has id id0 + i, lies on lane i % lanes and carries args (JSON text,
 * or NULL).  With lod_level >= 0 the LOD rows from that level are written
 * too.  Ends with the track's statistics. */
struct teststore_slices {
  const char *name, *args;
  int n, lanes, lod_level;
  int64_t ts0, step, dur, id0;
};
void teststore_slices(struct store_writer *w, int64_t track,
                      const struct teststore_slices *s);

/* n samples of series 0 on counter track: value i at ts0 + i * 1000 ns,
 * LOD rows from lod_level, then the track's statistics. */
void teststore_counter(struct store_writer *w, int64_t track, int n,
                       int64_t ts0, int lod_level);

/* The text of the first column of the one-row query sql on db, "" for
 * NULL (malloc'd, the caller frees it); aborts with the error when the
 * query gives no row. */
char *teststore_one(sqlite3 *db, const char *sql);
/* 1 when the query plan of sql on db sorts (a B-TREE for an ORDER BY),
 * else 0; aborts when sql does not prepare. */
int teststore_sorts(sqlite3 *db, const char *sql);
/* Runs `damage` (a statement that spoils a block) then the first step of
 * `query`: the error message when that step gives SQLITE_CORRUPT
 * (malloc'd, the caller frees it), else NULL. */
char *teststore_corrupt(sqlite3 *db, const char *damage, const char *query);
/* A connection to the store at path with the virtual tables registered
 * and an in-memory plain copy of table `vt` as `ref` (columns `cols`, as
 * in CREATE TABLE); aborts on failure.  The caller closes it. */
sqlite3 *teststore_open_ref(const char *path, const char *vt, const char *cols);
/* Aborts, with both answers on stderr, unless the query fmt (its first
 * "%s" stands for a table name, its second for a WHERE clause) gives the
 * same text on table vt and on `ref` for each of the n clauses where[]. */
void teststore_same_as_ref(sqlite3 *db, const char *fmt, const char *vt,
                           const char *const *where, size_t n);
/* Closes db, removes the store at path and frees path. */
void teststore_close(sqlite3 *db, char *path);
/* 1 when each of the n statements fails on db with "may not be modified"
 * (a write to a read-only virtual table), else 0. */
int teststore_read_only(sqlite3 *db, const char *const *sql, int n);

#endif
