/* store_vtab_kinds.c -- the block tables the module of store_vtab.c
 * reads: their columns, blocks and decoding; their registration, and the
 * loadable extension's entry point.  See store_vtab.h. */
#ifdef NEX_SQLITE_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#endif
#include "store_vtab.h"
#include "store_vtab_priv.h"

#include <stdint.h>
#include <stdio.h>

/* The flows of row r as a JSON array text ("[5,7]"), NULL when none. */
static void store_vtab_flows(sqlite3_context *cx, const struct store_block *b,
                             const struct store_block_row *r) {
  if (r->n_flows == 0)
    return;
  char *t = sqlite3_malloc64((sqlite3_uint64)r->n_flows * 21 + 2), *p = t;
  if (!t) {
    sqlite3_result_error_nomem(cx);
    return;
  }
  *p++ = '[';
  for (int k = 0; k < r->n_flows; k++)
    p += sprintf(p, k ? ",%lld" : "%lld",
                 (long long)b->flows[r->flows_off + (size_t)k]);
  *p++ = ']';
  sqlite3_result_text(cx, t, (int)(p - t), sqlite3_free);
}

/* The slice columns after the seek columns. */
static void store_vtab_slice_column(sqlite3_context *cx,
                                    const struct store_block *b,
                                    const struct store_block_row *r, int col) {
  switch (col) {
  case VT_DUR:
    sqlite3_result_int64(cx, r->dur);
    break;
  case VT_NAME:
    sqlite3_result_int64(cx, r->name);
    break;
  case VT_GRP:
    if (r->grp > 0)
      sqlite3_result_int64(cx, r->grp);
    break; /* else NULL */
  case VT_ARGS:
    if (r->args_len >= 0)
      sqlite3_result_text(cx, b->args + r->args_off, (int)r->args_len,
                          SQLITE_TRANSIENT);
    break;
  default:
    store_vtab_flows(cx, b, r);
  }
}

/* The counter's value column. */
static void store_vtab_counter_column(sqlite3_context *cx,
                                      const struct store_block *b,
                                      const struct store_block_row *r,
                                      int col) {
  (void)b, (void)col;
  sqlite3_result_double(cx, r->value);
}

/* A counter block's decode (no args, every column). */
static int store_vtab_counter_decode(struct store_block *b, int64_t ts0,
                                     const void *data, size_t len,
                                     const void *args, size_t args_len,
                                     int cols) {
  (void)args, (void)args_len, (void)cols;
  return store_block_decode_counter(b, ts0, data, len);
}

/* The block columns of a counter or flow statement: their decode reads
 * them all. */
static int store_vtab_all_cols(sqlite3_uint64 used, const int *ranged) {
  (void)used, (void)ranged;
  return STORE_BLOCK_TS;
}

/* A flow block's decode (no args, every column). */
static int store_vtab_flow_decode(struct store_block *b, int64_t flow0,
                                  const void *data, size_t len,
                                  const void *args, size_t args_len, int cols) {
  (void)args, (void)args_len, (void)cols;
  return store_block_decode_flow(b, flow0, data, len);
}

/* The flow's columns after flow_id: track, lane, ts, id of the endpoint. */
static void store_vtab_flow_column(sqlite3_context *cx,
                                   const struct store_block *b,
                                   const struct store_block_row *r, int col) {
  size_t i = (size_t)(r - b->row);
  sqlite3_result_int64(cx, b->ends[4 * i + (size_t)(col - 1)]);
}

/* The flow table's columns: flow_id is the blocks' key, the others are
 * not sought. */
static const signed char store_vtab_flow_role[64] = {VT_TS, -1, -1, -1, -1};

/* A dependency block's decode (no args, every column). */
static int store_vtab_dep_decode(struct store_block *b, int64_t ts0,
                                 const void *data, size_t len, const void *args,
                                 size_t args_len, int cols) {
  (void)args, (void)args_len, (void)cols;
  return store_block_decode_dep(b, ts0, data, len);
}

/* The columns of inst_dep and inst_dep_rev that are not sought: seq, and
 * the other instruction's (NULL when it was not found, but its id). */
static void store_vtab_dep_column(sqlite3_context *cx,
                                  const struct store_block *b,
                                  const struct store_block_row *r, int col) {
  /* the place in ends of each column's value (-1: seq) */
  static const signed char end[9] = {0, 2, 1, 3, -1, 3, 0, 1, 2};
  const int64_t *e = b->ends + 4 * (size_t)(r - b->row);
  if (col < 0 || col > 8)
    return;
  if (end[col] < 0)
    sqlite3_result_int64(cx, r->dur);
  else if (r->grp || end[col] == 3)
    sqlite3_result_int64(cx, e[end[col]]);
}

/* inst_dep's columns (track, ts, lane, id, seq, dep_id, dep_track,
 * dep_lane, dep_ts): the dependent is sought, or the dependency. */
static const signed char store_vtab_dep_role[64] = {
    VT_TRACK, VT_TS, VT_LANE, VT_ID, -1, -1, -1, -1, -1};
static const signed char store_vtab_dep_rev_role[64] = {
    -1, -1, -1, -1, -1, VT_ID, VT_TRACK, VT_LANE, VT_TS};
#define STORE_VTAB_DEP_DECL                                                    \
  "CREATE TABLE x(track INTEGER, ts INTEGER, lane INTEGER, id INTEGER, seq "   \
  "INTEGER, dep_id INTEGER, dep_track INTEGER, dep_lane INTEGER, dep_ts "      \
  "INTEGER)"

static const struct store_vtab_kind store_vtab_kinds[] = {
    {STORE_VTAB_MODULE,
     "CREATE TABLE x(track INTEGER, lane INTEGER, ts INTEGER, id INTEGER, "
     "dur INTEGER, name INTEGER, grp INTEGER, args TEXT, flows TEXT)",
     "slice_block", "lane", "ts0", "id0", NULL, 100, 1, store_vtab_cols,
     store_block_decode, store_vtab_slice_column},
    {STORE_VTAB_COUNTER_MODULE,
     "CREATE TABLE x(track INTEGER, series INTEGER, ts INTEGER, seq INTEGER, "
     "value REAL)",
     "counter_block", "series", "ts0", "seq0", NULL, 100, 0,
     store_vtab_all_cols, store_vtab_counter_decode, store_vtab_counter_column},
    /* a flow has a few endpoints among millions */
    {STORE_VTAB_FLOW_MODULE,
     "CREATE TABLE x(flow_id INTEGER, track INTEGER, lane INTEGER, ts "
     "INTEGER, id INTEGER)",
     "flow_block", NULL, "flow0", "id", store_vtab_flow_role, 1e6, 0,
     store_vtab_all_cols, store_vtab_flow_decode, store_vtab_flow_column},
    {STORE_VTAB_DEP_MODULE, STORE_VTAB_DEP_DECL, "inst_dep_block", "lane",
     "ts0", "id", store_vtab_dep_role, 100, 0, store_vtab_all_cols,
     store_vtab_dep_decode, store_vtab_dep_column},
    {STORE_VTAB_DEP_REV_MODULE, STORE_VTAB_DEP_DECL, "inst_dep_rev_block",
     "lane", "ts0", "id", store_vtab_dep_rev_role, 100, 0, store_vtab_all_cols,
     store_vtab_dep_decode, store_vtab_dep_column},
};

int store_vtab_register(sqlite3 *db) {
  int rc = SQLITE_OK;
  for (size_t k = 0; k < sizeof store_vtab_kinds / sizeof *store_vtab_kinds &&
                     rc == SQLITE_OK;
       k++)
    rc = sqlite3_create_module(db, store_vtab_kinds[k].name, &store_vtab_module,
                               (void *)(uintptr_t)&store_vtab_kinds[k]);
  return rc;
}

#ifdef NEX_SQLITE_EXTENSION
/* The entry point of nexstore.so (SQLite derives its name from the
 * file's): registers the module on db. */
__attribute__((visibility("default"))) int
sqlite3_nexstore_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);
int sqlite3_nexstore_init(sqlite3 *db, char **err,
                          const sqlite3_api_routines *api) {
  (void)err;
  SQLITE_EXTENSION_INIT2(api);
  return store_vtab_register(db);
}
#endif
