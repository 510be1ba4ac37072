/* store_vtab_priv.h -- what the block module (store_vtab.c) and the
 * tables it reads (store_vtab_kinds.c) share: the seek columns and a
 * table's description.  See store_vtab.h. */
#ifndef NEX_STORE_VTAB_PRIV_H
#define NEX_STORE_VTAB_PRIV_H

#ifdef NEX_SQLITE_EXTENSION
#include <sqlite3ext.h>
#else
#include <sqlite3.h>
#endif
#include <stdint.h>

#include "store_block.h"

/* The columns of `slice`; a counter's are track, series (VT_LANE), ts,
 * seq (VT_ID) and value; a flow's are mapped by its role table. */
enum {
  VT_TRACK,
  VT_LANE,
  VT_TS,
  VT_ID,
  VT_DUR,
  VT_NAME,
  VT_GRP,
  VT_ARGS,
  VT_FLOWS
};
#define STORE_VTAB_SEEK_COLS 4 /* track, lane, ts, id */

/* What a module reads: its block table (keyed by track, `run`, `key0`
 * and `tie`; without a run, one sequence of blocks keyed by `key0` and
 * `tie`), its columns and how a block is decoded. */
struct store_vtab_kind {
  const char *name;  /* the module's */
  const char *decl;  /* its columns, as CREATE TABLE x(...) */
  const char *table; /* the block table */
  const char *run, *key0, *tie;
  /* the seek column each declared column is (VT_TRACK .. VT_ID, -1: none);
   * NULL: the first four are, in that order */
  const signed char *role;
  double key_share; /* the rows an = on the key0 column keeps: 1 in ... */
  int args;         /* slice_args is joined when the args column is read */
  /* the block columns a statement needs (colUsed, the ranged columns) */
  int (*cols)(sqlite3_uint64 used, const int *ranged);
  int (*decode)(struct store_block *b, int64_t ts0, const void *data,
                size_t len, const void *args, size_t args_len, int cols);
  /* sets the value of column col (not a seek column) of row r */
  void (*column)(sqlite3_context *cx, const struct store_block *b,
                 const struct store_block_row *r, int col);
};

/* The module of every block table (aux: its struct store_vtab_kind). */
extern const sqlite3_module store_vtab_module;

/* A slice statement's block columns (STORE_BLOCK_* bits): those it reads
 * (colUsed) and id when it is constrained (ranged[VT_ID]); ts always. */
int store_vtab_cols(sqlite3_uint64 used, const int *ranged);

#endif
