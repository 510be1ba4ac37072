/* sqlite_baseline.c -- the raw SQLite insert rate on this machine: N rows
 * of the store's slice shape (track, lane, ts, id, dur, name, grp, args)
 * into a WITHOUT ROWID table, one transaction, journal off, one prepared
 * single-row INSERT -- the floor our ingest is compared with.
 *
 *   sqlite_baseline N FILE   prints "rows=N seconds=S rows_per_s=R"
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s ROWS FILE\n", argv[0]);
    return 2;
  }
  long long n = atoll(argv[1]);
  sqlite3 *db;
  unlink(argv[2]);
  if (sqlite3_open(argv[2], &db) != SQLITE_OK)
    return 1;
  sqlite3_exec(db,
               "PRAGMA page_size=8192; PRAGMA journal_mode=OFF;"
               "PRAGMA synchronous=OFF; PRAGMA cache_size=-131072;"
               "CREATE TABLE slice (track INT, lane INT, ts INT, id INT, "
               "dur INT, name INT, grp INT, args TEXT, "
               "PRIMARY KEY (track, lane, ts, id)) WITHOUT ROWID; BEGIN;",
               NULL, NULL, NULL);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "INSERT INTO slice VALUES (?,?,?,?,?,?,?,?)", -1, &st,
                     NULL);
  static const char args[] = "{\"exec_id\":12,\"model_name\":\"/tmp/m.neff\"}";
  double t0 = now();
  long long ts = 1766072157000000000LL;
  for (long long i = 0; i < n; i++) {
    ts += 1000 + (i % 7) * 100;
    sqlite3_bind_int64(st, 1, i % 64);
    sqlite3_bind_int64(st, 2, 0);
    sqlite3_bind_int64(st, 3, ts);
    sqlite3_bind_int64(st, 4, 1125899906842624LL + i);
    sqlite3_bind_int64(st, 5, 800);
    sqlite3_bind_int64(st, 6, i % 20);
    sqlite3_bind_null(st, 7);
    sqlite3_bind_text(st, 8, args, sizeof args - 1, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  double secs = now() - t0;
  sqlite3_close(db);
  printf("rows=%lld seconds=%.3f rows_per_s=%.0f\n", n, secs, (double)n / secs);
  return 0;
}
