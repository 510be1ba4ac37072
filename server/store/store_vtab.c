/* store_vtab.c -- the module every virtual table over packed blocks
 * shares: the seeks, the cursor, the rows (store_vtab_kinds.c says what
 * each table holds); see store_vtab.h. */
#ifdef NEX_SQLITE_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#endif
#include "store_argcache.h"
#include "store_block.h"
#include "store_vtab_priv.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index in blocks[] of the statement for a direction and columns. */
#define STORE_VTAB_BLOCKS(desc, cols)                                          \
  ((desc) | ((cols)&STORE_BLOCK_ARGS ? 2 : 0))

/* The statements a cursor reads blocks with. */
struct store_vtab_stmts {
  sqlite3_stmt *pairs; /* the next (track, lane) after a given one */
  /* the blocks of one (track, lane) in a ts range, [STORE_VTAB_BLOCKS()]:
   * in (ts, id) order or backwards, with the args blob (slice_args) or
   * without it */
  sqlite3_stmt *blocks[4];
  struct store_vtab_stmts *next;
};

/* The connection's table, with the statements of closed cursors kept for
 * the next ones (a window query opens cursors by the hundred: preparing
 * would cost more than reading). */
struct store_vtab {
  sqlite3_vtab base;
  sqlite3 *db;
  const struct store_vtab_kind *kind;
  struct store_vtab_stmts *spare;
  /* one sequence of blocks (flows): the block a cursor read last, whole;
   * a key strictly between its first and last rows' has all its rows in
   * it (the export looks flows up one after the other, often in one) */
  struct store_block cache;
  struct store_argcache *sets; /* the args sets' templates (slice) */
};

/* A bound [lo, hi] of one column; lo > hi: no row. */
struct store_vtab_range {
  int64_t lo, hi;
};

struct store_vtab_cursor {
  sqlite3_vtab_cursor base;
  struct store_vtab_stmts *st;
  struct store_vtab_range r[STORE_VTAB_SEEK_COLS];
  int cols;            /* the block columns read (STORE_BLOCK_* bits) */
  int desc;            /* rows backwards (one (track, lane) only) */
  int one_block;       /* the block is the table's cache: no statement */
  int started;         /* a (track, lane) was read */
  int64_t track, lane; /* the (track, lane) being read */
  struct store_block block;
  int i; /* row of block */
  int eof;
  sqlite3_int64 rowid;
};

static int store_vtab_connect(sqlite3 *db, void *aux, int argc,
                              const char *const *argv, sqlite3_vtab **out,
                              char **err) {
  (void)argc, (void)argv, (void)err;
  const struct store_vtab_kind *kind = aux;
  int rc = sqlite3_declare_vtab(db, kind->decl);
  if (rc != SQLITE_OK)
    return rc;
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  struct store_vtab *v = sqlite3_malloc(sizeof *v);
  if (!v)
    return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  v->db = db;
  v->kind = kind;
  if (kind->args && !(v->sets = store_argcache_new(db))) {
    sqlite3_free(v);
    return SQLITE_NOMEM;
  }
  *out = &v->base;
  return SQLITE_OK;
}

/* Finalizes st's statements that db still holds (a connection's owner may
 * have finalized every statement of db before closing it). */
static void store_vtab_stmts_free(sqlite3 *db, struct store_vtab_stmts *st) {
  sqlite3_stmt *mine[] = {st->pairs, st->blocks[0], st->blocks[1],
                          st->blocks[2], st->blocks[3]};
  for (sqlite3_stmt *p = sqlite3_next_stmt(db, NULL), *n; p; p = n) {
    n = sqlite3_next_stmt(db, p);
    for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
      if (p == mine[i])
        sqlite3_finalize(p);
  }
  sqlite3_free(st);
}

static int store_vtab_disconnect(sqlite3_vtab *vt) {
  struct store_vtab *v = (struct store_vtab *)vt;
  for (struct store_vtab_stmts *st = v->spare, *n; st; st = n) {
    n = st->next;
    store_vtab_stmts_free(v->db, st);
  }
  store_block_free(&v->cache);
  store_argcache_free(v->sets);
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* The seek column (VT_TRACK .. VT_ID) declared column col is, or -1. */
static int store_vtab_role(const struct store_vtab_kind *kind, int col) {
  if (col < 0 || col >= 64)
    return -1;
  if (kind->role)
    return kind->role[col];
  return col < STORE_VTAB_SEEK_COLS ? col : -1;
}

/* The operator letter of a usable constraint in idxStr, 0 for one that is
 * not pushed down (col: a seek column or -1). */
static char store_vtab_op(int col, unsigned char op) {
  if (col < 0 || col >= STORE_VTAB_SEEK_COLS)
    return 0;
  switch (op) {
  case SQLITE_INDEX_CONSTRAINT_EQ:
    return '=';
  case SQLITE_INDEX_CONSTRAINT_GT:
    return col == VT_ID ? 0 : '>';
  case SQLITE_INDEX_CONSTRAINT_GE:
    return col == VT_ID ? 0 : 'g';
  case SQLITE_INDEX_CONSTRAINT_LT:
    return col == VT_ID ? 0 : '<';
  case SQLITE_INDEX_CONSTRAINT_LE:
    return col == VT_ID ? 0 : 'l';
  default:
    return 0;
  }
}

/* 1 when the ORDER BY is (track, lane, ts, id) ascending, in that order,
 * with any of them held equal by a constraint left out; 2 when it is that
 * descending with track and lane held equal (one run read backwards); 0
 * otherwise. */
static int store_vtab_ordered(const struct store_vtab_kind *kind,
                              const sqlite3_index_info *info, const int *eq) {
  int next = 0, desc = info->nOrderBy > 0 && info->aOrderBy[0].desc;
  if (desc && !(eq[VT_TRACK] && eq[VT_LANE]))
    return 0;
  for (int k = 0; k < info->nOrderBy; k++) {
    int col = store_vtab_role(kind, info->aOrderBy[k].iColumn);
    if (info->aOrderBy[k].desc != desc || col < 0 ||
        col >= STORE_VTAB_SEEK_COLS)
      return 0;
    while (next < col && eq[next])
      next++;
    if (col != next && !(col < next && eq[col]))
      return 0;
    if (col == next)
      next++;
  }
  return desc ? 2 : 1;
}

int store_vtab_cols(sqlite3_uint64 used, const int *ranged) {
  static const int bit[] = {
      [VT_TS] = STORE_BLOCK_TS,      [VT_ID] = STORE_BLOCK_ID,
      [VT_DUR] = STORE_BLOCK_DUR,    [VT_NAME] = STORE_BLOCK_NAME,
      [VT_GRP] = STORE_BLOCK_GRP,    [VT_ARGS] = STORE_BLOCK_ARGS,
      [VT_FLOWS] = STORE_BLOCK_FLOWS};
  int cols = STORE_BLOCK_TS | (ranged[VT_ID] ? STORE_BLOCK_ID : 0);
  for (int c = VT_TS; c <= VT_FLOWS; c++)
    if (used & ((sqlite3_uint64)1 << c))
      cols |= bit[c];
  return cols;
}

static int store_vtab_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  const struct store_vtab_kind *kind = ((struct store_vtab *)vt)->kind;
  char ops[2 * 64 + 1];
  int n = 0, eq[STORE_VTAB_SEEK_COLS] = {0}, ranged[STORE_VTAB_SEEK_COLS] = {0};
  for (int i = 0; i < info->nConstraint && n < 64; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    int role = store_vtab_role(kind, c->iColumn);
    char op = c->usable ? store_vtab_op(role, c->op) : 0;
    if (!op)
      continue;
    ops[2 * n] = (char)('0' + role);
    ops[2 * n + 1] = op;
    info->aConstraintUsage[i].argvIndex = ++n;
    info->aConstraintUsage[i].omit = 1; /* exact: store_vtab_bound() */
    /* an IN list may come in any order: no = for the ORDER BY rule */
    if (op == '=' && !sqlite3_vtab_in(info, i, -1))
      eq[role] = 1;
    ranged[role] = 1;
  }
  ops[2 * n] = '\0';
  info->idxStr = sqlite3_mprintf("%s", ops);
  info->needToFreeIdxStr = 1;
  /* one sequence of blocks: as if track and lane were held */
  int held[STORE_VTAB_SEEK_COLS];
  memcpy(held, eq, sizeof held);
  if (!kind->run)
    held[VT_TRACK] = held[VT_LANE] = 1;
  int order = store_vtab_ordered(kind, info, held);
  info->orderByConsumed = order > 0;
  /* idxNum: bit 0 backwards, then the block columns to decode */
  info->idxNum = (order == 2) | kind->cols(info->colUsed, ranged) << 1;
  /* a guess of the rows read: 10^7 slices, a thousandth per track (a
   * store holds hundreds: a join from the tracks a query keeps must cost
   * less than reading every slice), a hundredth per lane, a tenth per
   * range bound, almost none with the id too */
  const double eq_share[STORE_VTAB_SEEK_COLS] = {[VT_TRACK] = 1e3,
                                                 [VT_LANE] = 100,
                                                 [VT_TS] = kind->key_share,
                                                 [VT_ID] = 1e4};
  double rows = 1e7;
  for (int c = 0; c < STORE_VTAB_SEEK_COLS; c++)
    if (ranged[c])
      rows /= eq[c] ? eq_share[c] : 10;
  if (rows < 1)
    rows = 1;
  info->estimatedRows = (sqlite3_int64)rows;
  info->estimatedCost = rows;
  return SQLITE_OK;
}

/* A new set of statements (NULL with the error in vt when one does not
 * prepare). */
static struct store_vtab_stmts *store_vtab_stmts_new(struct store_vtab *v) {
  const struct store_vtab_kind *kind = v->kind;
  struct store_vtab_stmts *st = sqlite3_malloc(sizeof *st);
  if (!st)
    return NULL;
  memset(st, 0, sizeof *st);
  int rc = SQLITE_OK;
  char *sql = NULL, *in_run = NULL;
  if (kind->run) {
    sql = sqlite3_mprintf("SELECT track, %s FROM %s WHERE (track, %s) > (?1, "
                          "?2) AND track <= ?3 ORDER BY track, %s LIMIT 1",
                          kind->run, kind->table, kind->run, kind->run);
    rc = sql ? sqlite3_prepare_v3(v->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                  &st->pairs, NULL)
             : SQLITE_NOMEM;
    sqlite3_free(sql);
    in_run = sqlite3_mprintf("track = ?1 AND %s = ?2 AND", kind->run);
  } else { /* one sequence: ?1 and ?2 are bound, not used */
    in_run = sqlite3_mprintf("%s", "");
  }
  for (int k = 0; k < (kind->args ? 4 : 2) && rc == SQLITE_OK; k++) {
    const char *dir = k & 1 ? "DESC" : "";
    sql = in_run
              ? sqlite3_mprintf(
                    "SELECT b.%s, b.data%s FROM %s b%s WHERE %s b.%s >= "
                    "coalesce((SELECT max(%s) FROM %s WHERE %s %s < ?3), ?3) "
                    "AND b.%s <= ?4 ORDER BY b.%s %s, b.%s %s",
                    kind->key0, k & 2 ? ", a.args" : "", kind->table,
                    k & 2 ? " LEFT JOIN slice_args a ON a.block = b.id" : "",
                    in_run, kind->key0, kind->key0, kind->table, in_run,
                    kind->key0, kind->key0, kind->key0, dir, kind->tie, dir)
              : NULL;
    rc = sql ? sqlite3_prepare_v3(v->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                  &st->blocks[k], NULL)
             : SQLITE_NOMEM;
    sqlite3_free(sql);
  }
  sqlite3_free(in_run);
  if (rc != SQLITE_OK) {
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(v->db));
    store_vtab_stmts_free(v->db, st);
    return NULL;
  }
  return st;
}

/* Resets st's statements (NULL ones are no-ops). */
static void store_vtab_stmts_reset(struct store_vtab_stmts *st) {
  sqlite3_reset(st->pairs);
  for (int k = 0; k < 4; k++)
    sqlite3_reset(st->blocks[k]);
}

static int store_vtab_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  struct store_vtab *v = (struct store_vtab *)vt;
  struct store_vtab_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c)
    return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  if (v->sets) {
    c->block.argset = store_argcache_get;
    c->block.argset_ud = v->sets;
  }
  if ((c->st = v->spare) != NULL)
    v->spare = c->st->next;
  else if (!(c->st = store_vtab_stmts_new(v))) {
    sqlite3_free(c);
    return SQLITE_ERROR;
  }
  *out = &c->base;
  return SQLITE_OK;
}

/* Keeps the cursor's block, read whole, as its table's cache (one
 * sequence of blocks only): their buffers swap. */
static void store_vtab_keep(struct store_vtab_cursor *c) {
  struct store_vtab *v = (struct store_vtab *)c->base.pVtab;
  if (v->kind->run || c->block.n == 0)
    return;
  struct store_block t = v->cache;
  v->cache = c->block;
  c->block = t;
}

/* Gives the statements back to the table and frees the cursor. */
static int store_vtab_close(sqlite3_vtab_cursor *cur) {
  struct store_vtab_cursor *c = (struct store_vtab_cursor *)cur;
  struct store_vtab *v = (struct store_vtab *)cur->pVtab;
  store_vtab_keep(c);
  store_vtab_stmts_reset(c->st);
  c->st->next = v->spare;
  v->spare = c->st;
  store_block_free(&c->block);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The integers v with `v op d` (op as in idxStr, d a real that is no
 * NaN), as [*lo, *hi] (lo > hi: none).  2^63 and -2^63 are exact
 * doubles; every int64 is below the one and not below the other. */
static void store_vtab_real(char op, double d, int64_t *lo, int64_t *hi) {
  const double top = 9223372036854775808.0;
  double f = floor(d), c = ceil(d);
  if (op == '=') {
    if (f == d && d >= -top && d < top)
      *lo = *hi = (int64_t)d;
    else
      *lo = 1, *hi = 0;
  } else if (op == '>' || op == 'g') { /* from the first integer above */
    double first = op == '>' ? f + 1 : c;
    if (first >= top)
      *lo = 1, *hi = 0;
    else if (first > -top)
      *lo = (int64_t)first;
  } else { /* up to the last integer below */
    double last = op == '<' ? c - 1 : f;
    if (last < -top)
      *lo = 1, *hi = 0;
    else if (last < top)
      *hi = (int64_t)last;
  }
}

/* Narrows r by `value op` (op as in idxStr) exactly, as SQLite compares
 * an INTEGER column with the value (numeric affinity first; integers
 * sort before text and blobs; NULL and NaN hold for no row): the
 * constraints are omitted, SQLite does not check them again. */
static void store_vtab_bound(struct store_vtab_range *r, char op,
                             sqlite3_value *value) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (sqlite3_value_numeric_type(value)) {
  case SQLITE_INTEGER: {
    int64_t v = sqlite3_value_int64(value);
    if (op == '>' && v == INT64_MAX)
      lo = 1, hi = 0;
    else if (op == '<' && v == INT64_MIN)
      lo = 1, hi = 0;
    else if (op == '=')
      lo = hi = v;
    else if (op == '>' || op == 'g')
      lo = op == '>' ? v + 1 : v;
    else
      hi = op == '<' ? v - 1 : v;
    break;
  }
  case SQLITE_FLOAT: {
    double d = sqlite3_value_double(value);
    if (isnan(d))
      lo = 1, hi = 0;
    else
      store_vtab_real(op, d, &lo, &hi);
    break;
  }
  case SQLITE_NULL: /* a comparison with NULL holds for no row */
    lo = 1, hi = 0;
    break;
  default: /* text, blob: above every integer */
    if (op != '<' && op != 'l')
      lo = 1, hi = 0;
    break;
  }
  if (lo > r->lo)
    r->lo = lo;
  if (hi < r->hi)
    r->hi = hi;
}

/* 1 when the range holds no value. */
static int store_vtab_empty(const struct store_vtab_range *r) {
  return r->lo > r->hi;
}

/* Moves to the next (track, lane) in range after the current one and
 * starts its blocks.  Returns an SQLite code; sets eof at the end. */
static int store_vtab_next_pair(struct store_vtab_cursor *c) {
  const struct store_vtab_range *t = &c->r[VT_TRACK], *l = &c->r[VT_LANE];
  const struct store_vtab_kind *kind =
      ((struct store_vtab *)c->base.pVtab)->kind;
  for (;;) {
    if (c->started && (!kind->run || (c->track == t->hi && c->lane == l->hi)))
      break;
    if (!kind->run) { /* one sequence of blocks */
      c->track = c->lane = 0;
    } else if (t->lo == t->hi && l->lo == l->hi) { /* one run: no search */
      c->track = t->lo, c->lane = l->lo;
    } else {
      sqlite3_bind_int64(c->st->pairs, 1, c->track);
      sqlite3_bind_int64(c->st->pairs, 2, c->lane);
      sqlite3_bind_int64(c->st->pairs, 3, t->hi);
      int rc = sqlite3_step(c->st->pairs);
      int64_t track = sqlite3_column_int64(c->st->pairs, 0);
      int64_t lane = sqlite3_column_int64(c->st->pairs, 1);
      sqlite3_reset(c->st->pairs);
      if (rc == SQLITE_DONE)
        break;
      if (rc != SQLITE_ROW)
        return rc;
      if (lane < l->lo) { /* on to (track, l->lo) */
        c->track = track, c->lane = l->lo - 1;
        continue;
      }
      if (lane > l->hi) { /* on to the next track */
        if (track == INT64_MAX)
          break;
        c->track = track + 1,
        c->lane = l->lo == INT64_MIN ? INT64_MIN : l->lo - 1;
        continue;
      }
      c->track = track, c->lane = lane;
    }
    c->started = 1;
    sqlite3_stmt *b = c->st->blocks[STORE_VTAB_BLOCKS(c->desc, c->cols)];
    sqlite3_reset(b);
    sqlite3_bind_int64(b, 1, c->track);
    sqlite3_bind_int64(b, 2, c->lane);
    sqlite3_bind_int64(b, 3, c->r[VT_TS].lo);
    sqlite3_bind_int64(b, 4, c->r[VT_TS].hi);
    return SQLITE_OK;
  }
  c->eof = 1;
  return SQLITE_OK;
}

/* Reads the next block of the current (track, lane): returns SQLITE_ROW
 * with it decoded, SQLITE_DONE after the last, or an error code. */
static int store_vtab_next_block(struct store_vtab_cursor *c) {
  sqlite3_stmt *b = c->st->blocks[STORE_VTAB_BLOCKS(c->desc, c->cols)];
  int rc = sqlite3_step(b);
  if (rc != SQLITE_ROW)
    return rc;
  const void *data = sqlite3_column_blob(b, 1);
  size_t len = (size_t)sqlite3_column_bytes(b, 1);
  const void *args =
      c->cols & STORE_BLOCK_ARGS ? sqlite3_column_blob(b, 2) : NULL;
  size_t args_len = args ? (size_t)sqlite3_column_bytes(b, 2) : 0;
  const struct store_vtab_kind *kind =
      ((struct store_vtab *)c->base.pVtab)->kind;
  if (kind->decode(&c->block, sqlite3_column_int64(b, 0), data, len, args,
                   args_len, c->cols) < 0) {
    sqlite3_free(c->base.pVtab->zErrMsg);
    c->base.pVtab->zErrMsg =
        kind->run ? sqlite3_mprintf("%s of track %lld %s %lld: not a block",
                                    kind->table, (long long)c->track, kind->run,
                                    (long long)c->lane)
                  : sqlite3_mprintf("%s at %s %lld: not a block", kind->table,
                                    kind->key0,
                                    (long long)sqlite3_column_int64(b, 0));
    return SQLITE_CORRUPT;
  }
  c->i = c->desc ? c->block.n : -1;
  return SQLITE_ROW;
}

/* 1 when row i of the block is in the ts and id ranges. */
static int store_vtab_match(const struct store_vtab_cursor *c, int i) {
  const struct store_block_row *r = &c->block.row[i];
  return r->ts >= c->r[VT_TS].lo && r->ts <= c->r[VT_TS].hi &&
         r->id >= c->r[VT_ID].lo && r->id <= c->r[VT_ID].hi;
}

/* Moves to the next row of the block in the cursor's direction.  Returns
 * 1 on a row in range, 0 at the end of the block, -1 past the ts range
 * (the rest of this (track, lane) is outside it). */
static int store_vtab_step_row(struct store_vtab_cursor *c) {
  const struct store_vtab_range *ts = &c->r[VT_TS];
  for (;;) {
    c->i += c->desc ? -1 : 1;
    if (c->i < 0 || c->i >= c->block.n)
      return 0;
    int64_t t = c->block.row[c->i].ts;
    if (c->desc ? t < ts->lo : t > ts->hi)
      return -1;
    if (store_vtab_match(c, c->i))
      return 1;
  }
}

static int store_vtab_next(sqlite3_vtab_cursor *cur) {
  struct store_vtab_cursor *c = (struct store_vtab_cursor *)cur;
  c->rowid++;
  while (!c->eof) {
    int r = store_vtab_step_row(c);
    if (r > 0)
      return SQLITE_OK;
    int rc = r < 0 || c->one_block ? SQLITE_DONE : store_vtab_next_block(c);
    if (rc == SQLITE_ROW)
      continue;
    store_vtab_keep(c);
    store_block_clear(&c->block);
    c->i = -1;
    if (rc != SQLITE_DONE)
      return rc;
    if ((rc = store_vtab_next_pair(c)) != SQLITE_OK)
      return rc;
  }
  return SQLITE_OK;
}

static int store_vtab_filter(sqlite3_vtab_cursor *cur, int idx_num,
                             const char *idx_str, int argc,
                             sqlite3_value **argv) {
  struct store_vtab_cursor *c = (struct store_vtab_cursor *)cur;
  for (int k = 0; k < STORE_VTAB_SEEK_COLS; k++)
    c->r[k] = (struct store_vtab_range){INT64_MIN, INT64_MAX};
  for (int k = 0; k < argc && idx_str[2 * k]; k++)
    store_vtab_bound(&c->r[idx_str[2 * k] - '0'], idx_str[2 * k + 1], argv[k]);
  c->desc = idx_num & 1;
  c->cols = idx_num >> 1;
  c->eof = 0;
  c->rowid = 0;
  c->i = -1;
  store_vtab_keep(c); /* a lookup may have stopped before its end */
  store_block_clear(&c->block);
  store_vtab_stmts_reset(c->st);
  for (int k = 0; k < STORE_VTAB_SEEK_COLS; k++)
    if (store_vtab_empty(&c->r[k])) {
      c->eof = 1;
      return SQLITE_OK;
    }
  /* the first pair is searched after (track lo, lane lo) - 1 */
  c->track = c->r[VT_TRACK].lo;
  c->lane = c->r[VT_LANE].lo == INT64_MIN ? INT64_MIN : c->r[VT_LANE].lo - 1;
  c->started = 0;
  struct store_vtab *v = (struct store_vtab *)cur->pVtab;
  const struct store_block *k = &v->cache;
  int64_t key = c->r[VT_TS].lo;
  c->one_block = !v->kind->run && key == c->r[VT_TS].hi && k->n &&
                 k->row[0].ts < key && key < k->row[k->n - 1].ts;
  if (c->one_block) { /* all its rows are in the cache: swapped in */
    struct store_block emptied = c->block;
    c->block = v->cache;
    v->cache = emptied;
    c->started = 1;
    c->i = c->desc ? c->block.n : -1;
    return store_vtab_next(cur);
  }
  int rc = store_vtab_next_pair(c);
  return rc == SQLITE_OK ? store_vtab_next(cur) : rc;
}

static int store_vtab_eof(sqlite3_vtab_cursor *cur) {
  return ((struct store_vtab_cursor *)cur)->eof;
}

static int store_vtab_column(sqlite3_vtab_cursor *cur, sqlite3_context *cx,
                             int col) {
  const struct store_vtab_cursor *c = (const struct store_vtab_cursor *)cur;
  const struct store_block_row *r = &c->block.row[c->i];
  const struct store_vtab_kind *kind = ((struct store_vtab *)cur->pVtab)->kind;
  switch (store_vtab_role(kind, col)) {
  case VT_TRACK:
    sqlite3_result_int64(cx, c->track);
    break;
  case VT_LANE:
    sqlite3_result_int64(cx, c->lane);
    break;
  case VT_TS:
    sqlite3_result_int64(cx, r->ts);
    break;
  case VT_ID:
    sqlite3_result_int64(cx, r->id);
    break;
  default:
    kind->column(cx, &c->block, r, col);
  }
  return SQLITE_OK;
}

static int store_vtab_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
  *out = ((struct store_vtab_cursor *)cur)->rowid;
  return SQLITE_OK;
}

/* Read-only: no xUpdate, so INSERT, UPDATE and DELETE fail. */
const sqlite3_module store_vtab_module = {
    .iVersion = 0,
    .xCreate = store_vtab_connect,
    .xConnect = store_vtab_connect,
    .xBestIndex = store_vtab_best_index,
    .xDisconnect = store_vtab_disconnect,
    .xDestroy = store_vtab_disconnect,
    .xOpen = store_vtab_open,
    .xClose = store_vtab_close,
    .xFilter = store_vtab_filter,
    .xNext = store_vtab_next,
    .xEof = store_vtab_eof,
    .xColumn = store_vtab_column,
    .xRowid = store_vtab_rowid,
};
