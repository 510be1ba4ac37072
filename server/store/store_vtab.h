/* store_vtab.h -- the virtual table `slice` over the packed blocks of
 * slice_block (store_block.h), read-only, with the columns track, lane,
 * ts, id, dur, name, grp, args and flows (the flow ids kept in the block,
 * a JSON array text such as "[5,7]", NULL when none; schema.sql says where
 * the others are); and `counter` over counter_block, the same way, with
 * the columns track, series, ts, seq and value (series in the place of
 * lane, seq in that of id: what is said of those below holds for these);
 * and `flow` over flow_block, with the columns flow_id, track, lane, ts
 * and id, rows in that order, flow_id sought as ts is in a run (the only
 * run: the blocks are one sequence), the others checked by SQLite; the
 * table keeps the flow block read last, and answers a flow id strictly
 * inside it from it; `inst_dep` and `inst_dep_rev` over inst_dep_block
 * and inst_dep_rev_block, with the columns track, ts, lane, id, seq,
 * dep_id, dep_track, dep_lane and dep_ts: the first seeks the dependents'
 * track, lane, ts and id as `slice` does, the second the dependencies'.
 *
 * Constraints pushed down (doc/storage.md): track and lane (=, <, <=, >,
 * >=) pick the (track, lane) runs of blocks, ts (the same operators) seeks
 * the first block that can hold the range and stops after it, id = is
 * checked while decoding.  Every one is applied exactly as SQLite would
 * compare an INTEGER column (reals, NULL, text and blobs too), so all are
 * omitted: SQLite does not check them again on each row.  Rows come in (track,
 * lane, ts, id) order, so an ORDER BY on those columns (those with an =
 * constraint may be left out) costs no sort.
 *
 * The same code builds the loadable extension nexstore.so
 * (NEX_SQLITE_EXTENSION: SQLite's API through the extension's table), for
 * `sqlite3 STORE -cmd '.load nexstore'`.
 */
#ifndef NEX_STORE_VTAB_H
#define NEX_STORE_VTAB_H

#include <sqlite3.h>

/* The modules' names in CREATE VIRTUAL TABLE (schema.sql). */
#define STORE_VTAB_MODULE "nex_slice"
#define STORE_VTAB_COUNTER_MODULE "nex_counter"
#define STORE_VTAB_FLOW_MODULE "nex_flow"
#define STORE_VTAB_DEP_MODULE "nex_inst_dep"
#define STORE_VTAB_DEP_REV_MODULE "nex_inst_dep_rev"

/* Registers the modules on db; every connection that reads a store calls it
 * before its first statement.  Returns an SQLite result code. */
int store_vtab_register(sqlite3 *db);

#endif
