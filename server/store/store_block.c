/* store_block.c -- see store_block.h. */
#include "store_block.h"
#include "lod_block.h"
#include "log.h"
#include "store_argset.h"
#include "store_block_args.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int64_t store_block_sub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* Makes room for row n. */
static void store_block_row_room(struct store_block *b) {
  if (b->n < b->cap)
    return;
  b->cap = b->cap ? b->cap * 2 : 64;
  b->row = xrealloc(b->row, (size_t)b->cap * sizeof *b->row);
}

/* Makes room for n more flow ids. */
static void store_block_flows_room(struct store_block *b, size_t n) {
  if (b->flows_n + n <= b->flows_cap)
    return;
  size_t cap = b->flows_cap ? b->flows_cap : 64;
  while (cap < b->flows_n + n)
    cap *= 2;
  b->flows = xrealloc(b->flows, cap * sizeof *b->flows);
  b->flows_cap = cap;
}

static int store_block_id_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

void store_block_add(struct store_block *b, int64_t ts, int64_t id, int64_t dur,
                     int64_t name, int64_t grp, const char *args,
                     size_t args_len, const int64_t *flows, int n_flows) {
  store_block_row_room(b);
  struct store_block_row *r = &b->row[b->n++];
  *r = (struct store_block_row){.ts = ts,
                                .id = id,
                                .dur = dur,
                                .name = name,
                                .grp = grp > 0 ? grp : 0,
                                .args_len = args ? (int64_t)args_len : -1,
                                .args_off = b->args_size,
                                .flows_off = b->flows_n};
  if (args && args_len) {
    store_block_args_room(b, args_len);
    memcpy(b->args + b->args_size, args, args_len);
    b->args_size += args_len;
  }
  if (n_flows > 0) { /* ascending, each once */
    store_block_flows_room(b, (size_t)n_flows);
    int64_t *f = b->flows + b->flows_n;
    memcpy(f, flows, (size_t)n_flows * sizeof *f);
    qsort(f, (size_t)n_flows, sizeof *f, store_block_id_cmp);
    int k = 1;
    for (int i = 1; i < n_flows; i++)
      if (f[i] != f[k - 1])
        f[k++] = f[i];
    r->n_flows = k;
    b->flows_n += (size_t)k;
  }
}

static int store_block_cmp(const void *x, const void *y) {
  const struct store_block_row *a = x, *b = y;
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  if (a->id != b->id)
    return a->id < b->id ? -1 : 1;
  return a->args_off < b->args_off ? -1 : a->args_off > b->args_off;
}

void store_block_sort(struct store_block *b) {
  for (int i = 1; i < b->n; i++)
    if (store_block_cmp(&b->row[i - 1], &b->row[i]) > 0) {
      qsort(b->row, (size_t)b->n, sizeof *b->row, store_block_cmp);
      return;
    }
}

/* Writes the flows part of b's data at p (nothing when no slice has a
 * flow); returns its end. */
static unsigned char *store_block_encode_flows(const struct store_block *b,
                                               unsigned char *p) {
  if (!b->flows_n)
    return p;
  const struct store_block_row *r = b->row;
  for (int i = 0; i < b->n; i++)
    p = lod_block_varint(p, r[i].n_flows);
  int64_t prev = 0;
  for (int i = 0; i < b->n; i++)
    for (int k = 0; k < r[i].n_flows; k++) {
      int64_t f = b->flows[r[i].flows_off + (size_t)k];
      p = lod_block_varint(p, store_block_sub(f, prev));
      prev = f;
    }
  return p;
}

/* The number row i stores in column c (STORE_BLOCK_* order): ts and id
 * as the difference from the row before (the first: 0 and the id), its
 * args set ref[i] (0: NULL, 1: kept as it is, k + 1: set k). */
static int64_t store_block_value(const struct store_block *b, int c, int i,
                                 const int64_t *ref) {
  const struct store_block_row *r = b->row;
  switch (c) {
  case 0:
    return store_block_sub(r[i].ts, i ? r[i - 1].ts : r[0].ts);
  case 1:
    return r[i].dur;
  case 2:
    return store_block_sub(r[i].id, i ? r[i - 1].id : 0);
  case 3:
    return r[i].name;
  case 4:
    return r[i].grp;
  default:
    return ref[i];
  }
}

/* Writes the n values of one column at p (room for 10 per value), or the
 * first once when they are all the same; *clen gets its length, negated
 * for one value.  Returns the end of the written bytes. */
static unsigned char *store_block_put_column(unsigned char *p, const int64_t *v,
                                             int n, int64_t *clen) {
  unsigned char *start = p;
  int same = n > 1; /* one value for all: written once */
  for (int i = 1; i < n && same; i++)
    same = v[i] == v[0];
  for (int i = 0; i < (same ? 1 : n); i++)
    p = lod_block_varint(p, v[i]);
  *clen = same ? -(p - start) : p - start;
  return p;
}

void store_block_enc_init(struct store_block_enc *e) {
  *e = (struct store_block_enc){0};
  if (!(e->zc = ZSTD_createCCtx()))
    fatal("store: cannot make a zstd compression context");
  e->sets = store_argsets_new();
  e->split = xmalloc(sizeof *e->split);
  sbuf_grow(&e->ints, 64); /* never NULL, even with nothing in it */
  sbuf_grow(&e->texts, 64);
}

void store_block_enc_free(struct store_block_enc *e) {
  ZSTD_freeCCtx(e->zc);
  store_argsets_free(e->sets);
  free(e->split);
  sbuf_free(&e->ints);
  sbuf_free(&e->texts);
  sbuf_free(&e->part);
  *e = (struct store_block_enc){0};
}

unsigned char *store_block_encode(struct store_block *b,
                                  struct store_block_enc *e, size_t *len,
                                  size_t *args_at) {
  int64_t ref[STORE_BLOCK_ROWS];
  store_block_args_split(b, e, ref);
  size_t room = 10 * (STORE_BLOCK_COLS + 1); /* n and the column lengths */
  size_t cap = room + (size_t)b->n * (STORE_BLOCK_COLS + 1) * 10 +
               b->flows_n * 10 + 1 + 10 + ZSTD_compressBound(e->part.len);
  unsigned char *out = xmalloc(cap), *p = out + room,
                *col[STORE_BLOCK_COLS + 1];
  int64_t clen[STORE_BLOCK_COLS], v[STORE_BLOCK_ROWS];
  for (int c = 0; c < STORE_BLOCK_COLS; c++) {
    col[c] = p;
    for (int i = 0; i < b->n; i++)
      v[i] = store_block_value(b, c, i, ref);
    p = store_block_put_column(p, v, b->n, &clen[c]);
  }
  col[STORE_BLOCK_COLS] = p;
  p = store_block_encode_flows(b, p);
  unsigned char *h = lod_block_varint(out, b->n);
  for (int c = 0; c < STORE_BLOCK_COLS; c++)
    h = lod_block_varint(h, clen[c]);
  memmove(h, col[0], (size_t)(p - col[0]));
  p = h + (p - col[0]);
  *args_at = (size_t)(p - out);
  int any = 0; /* no args part when every args is NULL */
  for (int i = 0; i < b->n && !any; i++)
    any = ref[i] != 0;
  if (any)
    p = store_block_args_put(p, out + cap, e->zc,
                             (const unsigned char *)e->part.s, e->part.len);
  *len = (size_t)(p - out);
  return out;
}

/* Reads n zigzag varints of one column (lod_block_varint()'s coding), or
 * one that every row has when `same`, to field, field + stride, ...
 * Returns 0 or -EINVAL. */
static int store_block_column(const unsigned char **p, const unsigned char *end,
                              char *field, size_t stride, int n, int same) {
  const unsigned char *q = *p;
  int64_t v = 0;
  for (int i = 0; i < n; i++, field += stride) {
    if (same && i) {
      memcpy(field, &v, sizeof v);
      continue;
    }
    uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      if (q == end || shift > 63)
        return -EINVAL;
      unsigned char c = *q++;
      z |= (uint64_t)(c & 0x7f) << shift;
      if (c < 0x80)
        break;
    }
    v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    memcpy(field, &v, sizeof v);
  }
  *p = q;
  return 0;
}

/* Makes the n deltas at field, field + stride, ... absolute (the first
 * from origin); a field holds the 64 bits of an int64 whatever its
 * type. */
static void store_block_undelta(char *field, size_t stride, int n,
                                int64_t origin) {
  uint64_t acc = (uint64_t)origin, v;
  for (int i = 0; i < n; i++, field += stride) {
    memcpy(&v, field, sizeof v);
    acc += v;
    memcpy(field, &acc, sizeof acc);
  }
}

/* The column starts of data p..end after the header's values before the
 * lengths of ncols columns: col[c] for c < ncols, col[ncols] the part
 * after them, col[ncols + 1] = end; bit c of *same set when column c is
 * one value for every row (its length written negated).  Returns 0 or
 * -EINVAL. */
static int store_block_columns(const unsigned char *p, const unsigned char *end,
                               int ncols, const unsigned char **col,
                               int *same) {
  int64_t len[STORE_BLOCK_MAX_COLS];
  *same = 0;
  for (int c = 0; c < ncols; c++) {
    if (lod_block_varint_get(&p, end, &len[c]) < 0 || len[c] == INT64_MIN)
      return -EINVAL;
    if (len[c] < 0) {
      len[c] = -len[c];
      *same |= 1 << c;
    }
  }
  col[0] = p;
  for (int c = 0; c < ncols; c++) {
    if (len[c] > end - col[c])
      return -EINVAL;
    col[c + 1] = col[c] + len[c];
  }
  col[ncols + 1] = end;
  return 0;
}

/* Reads n (1 to STORE_BLOCK_ROWS) at *p and makes room for n rows in b
 * (b->n = n).  Returns 0 or -EINVAL. */
static int store_block_start(struct store_block *b, const unsigned char **p,
                             const unsigned char *end) {
  int64_t n;
  b->n = 0;
  b->args_size = 0;
  b->flows_n = 0;
  if (lod_block_varint_get(p, end, &n) < 0 || n < 1 || n > STORE_BLOCK_ROWS)
    return -EINVAL;
  if (b->cap < n) {
    b->cap = (int)n;
    b->row = xrealloc(b->row, (size_t)b->cap * sizeof *b->row);
  }
  b->n = (int)n;
  return 0;
}

/* Reads the flows part p..end (empty: no slice has a flow) into b's rows.
 * Returns 0 or -EINVAL. */
static int store_block_read_flows(struct store_block *b, const unsigned char *p,
                                  const unsigned char *end) {
  b->flows_n = 0;
  for (int i = 0; i < b->n; i++)
    b->row[i].n_flows = 0;
  if (p == end)
    return 0;
  size_t total = 0;
  for (int i = 0; i < b->n; i++) {
    int64_t k;
    if (lod_block_varint_get(&p, end, &k) < 0 || k < 0 ||
        k > (int64_t)(end - p))
      return -EINVAL;
    b->row[i].flows_off = total;
    b->row[i].n_flows = (int)k;
    total += (size_t)k;
  }
  if (total > (size_t)(end - p))
    return -EINVAL;
  store_block_flows_room(b, total);
  uint64_t acc = 0;
  for (size_t k = 0; k < total; k++) {
    int64_t d;
    if (lod_block_varint_get(&p, end, &d) < 0)
      return -EINVAL;
    acc += (uint64_t)d;
    b->flows[k] = (int64_t)acc;
  }
  b->flows_n = total;
  return p == end ? 0 : -EINVAL;
}

int store_block_decode(struct store_block *b, int64_t ts0, const void *data,
                       size_t len, const void *args, size_t args_len,
                       int cols) {
  const unsigned char *p = data, *end = p + (data ? len : 0);
  const unsigned char *col[STORE_BLOCK_COLS + 2];
  int same;
  if (store_block_start(b, &p, end) < 0 ||
      store_block_columns(p, end, STORE_BLOCK_COLS, col, &same) < 0) {
    b->n = 0;
    return -EINVAL;
  }
  static const size_t field[STORE_BLOCK_COLS] = {
      offsetof(struct store_block_row, ts),
      offsetof(struct store_block_row, dur),
      offsetof(struct store_block_row, id),
      offsetof(struct store_block_row, name),
      offsetof(struct store_block_row, grp),
      offsetof(struct store_block_row, args_len)};
  /* no args blob (a NULL or empty column of a damaged store): no args,
   * whatever the caller asked */
  cols = (cols & ~STORE_BLOCK_ARGS) | STORE_BLOCK_TS |
         (args ? STORE_BLOCK_ARGS : 0);
  if ((cols & STORE_BLOCK_ALL) != STORE_BLOCK_ALL) /* the others stay 0 */
    memset(b->row, 0, (size_t)b->n * sizeof *b->row);
  for (int c = 0; c < STORE_BLOCK_COLS; c++) {
    const unsigned char *q = col[c];
    if ((cols & (1 << c)) &&
        (store_block_column(&q, col[c + 1], (char *)b->row + field[c],
                            sizeof *b->row, b->n, same >> c & 1) < 0 ||
         q != col[c + 1])) {
      b->n = 0;
      return -EINVAL;
    }
  }
  store_block_undelta((char *)&b->row->ts, sizeof *b->row, b->n, ts0);
  store_block_undelta((char *)&b->row->id, sizeof *b->row, b->n, 0);
  for (int i = 0; i < b->n; i++)
    b->row[i].args_len--; /* -1 (NULL) when not read */
  if (store_block_read_flows(b, col[STORE_BLOCK_COLS],
                             cols & STORE_BLOCK_FLOWS
                                 ? col[STORE_BLOCK_COLS + 1]
                                 : col[STORE_BLOCK_COLS]) < 0) {
    b->n = 0;
    return -EINVAL;
  }
  const unsigned char *a = args;
  if (args && store_block_args_read(b, a, a + args_len) < 0) {
    b->n = 0;
    return -EINVAL;
  }
  return 0;
}

/* ------------------------------------------------------------ counters */

void store_block_add_sample(struct store_block *b, int64_t ts, int64_t seq,
                            double value) {
  store_block_row_room(b);
  b->row[b->n++] = (struct store_block_row){
      .ts = ts, .id = seq, .args_len = -1, .value = value};
}

static const double store_block_pow10[STORE_CBLOCK_BITS] = {1,   10,  100, 1e3,
                                                            1e4, 1e5, 1e6};

/* v as an integer over 10^scale, into *i: 1 when the decoder's division
 * gives v back exactly (-0.0 becomes 0.0, as SQLite keeps a REAL), else
 * 0. */
static int store_block_scaled(double v, int scale, int64_t *i) {
  double x = v * store_block_pow10[scale];
  if (!(x > -9007199254740992.0 && x < 9007199254740992.0)) /* 2^53; NaN */
    return 0;
  *i = llround(x);
  return (double)*i / store_block_pow10[scale] == v;
}

/* Encodes a block of n rows: the nh header values hv (n first), then the
 * lengths of the ncols columns v[c] (n values each, changed here into
 * the differences from the value before, the first from origin[c]),
 * then the columns.  Returns a malloc'd buffer of *len bytes. */
static unsigned char *store_block_put_deltas(const int64_t *hv, int nh,
                                             int ncols, int n,
                                             int64_t (*v)[STORE_BLOCK_ROWS],
                                             const int64_t *origin,
                                             size_t *len) {
  size_t room = 10 * (size_t)(nh + ncols);
  unsigned char *out = xmalloc(room + 10 * (size_t)(ncols * n));
  unsigned char *col = out + room, *p = col;
  int64_t clen[STORE_BLOCK_MAX_COLS];
  for (int c = 0; c < ncols; c++) {
    for (int i = n - 1; i >= 0; i--)
      v[c][i] = store_block_sub(v[c][i], i ? v[c][i - 1] : origin[c]);
    p = store_block_put_column(p, v[c], n, &clen[c]);
  }
  unsigned char *h = out;
  for (int k = 0; k < nh; k++)
    h = lod_block_varint(h, hv[k]);
  for (int c = 0; c < ncols; c++)
    h = lod_block_varint(h, clen[c]);
  memmove(h, col, (size_t)(p - col));
  *len = (size_t)(h - out) + (size_t)(p - col);
  return out;
}

unsigned char *store_block_encode_counter(const struct store_block *b,
                                          size_t *len) {
  const struct store_block_row *r = b->row;
  int64_t v[3][STORE_BLOCK_ROWS];
  int scale = 0; /* the smallest that keeps every value */
  for (; scale < STORE_CBLOCK_BITS; scale++) {
    int i = 0;
    while (i < b->n && store_block_scaled(r[i].value, scale, &v[2][i]))
      i++;
    if (i == b->n)
      break;
  }
  for (int i = 0; i < b->n; i++) {
    double x = r[i].value == 0 ? 0.0 : r[i].value; /* -0.0 too */
    if (scale == STORE_CBLOCK_BITS)
      memcpy(&v[2][i], &x, sizeof v[2][i]);
    v[0][i] = r[i].ts;
    v[1][i] = r[i].id;
  }
  return store_block_put_deltas((int64_t[]){b->n, scale}, 2, 3, b->n, v,
                                (int64_t[]){r[0].ts, 0, 0}, len);
}

/* Reads the ncols columns of data p..end (their lengths first, then each
 * a delta column: store_block_put_deltas()) to base[c], base[c] +
 * stride[c], ..., each made absolute from origin[c]; nothing may follow
 * them.  Returns 0 or -EINVAL. */
static int store_block_read_deltas(struct store_block *b,
                                   const unsigned char *p,
                                   const unsigned char *end, int ncols,
                                   char *const *base, const size_t *stride,
                                   const int64_t *origin) {
  const unsigned char *col[STORE_BLOCK_MAX_COLS + 2];
  int same;
  if (store_block_columns(p, end, ncols, col, &same) < 0 || col[ncols] != end)
    return -EINVAL;
  for (int c = 0; c < ncols; c++) {
    const unsigned char *q = col[c];
    if (store_block_column(&q, col[c + 1], base[c], stride[c], b->n,
                           same >> c & 1) < 0 ||
        q != col[c + 1])
      return -EINVAL;
    store_block_undelta(base[c], stride[c], b->n, origin[c]);
  }
  return 0;
}

int store_block_decode_counter(struct store_block *b, int64_t ts0,
                               const void *data, size_t len) {
  const unsigned char *p = data, *end = p + (data ? len : 0);
  int64_t scale;
  /* ts, id and value are set below, args_len too; nothing else is read */
  if (store_block_start(b, &p, end) < 0 ||
      lod_block_varint_get(&p, end, &scale) < 0 || scale < 0 ||
      scale > STORE_CBLOCK_BITS ||
      store_block_read_deltas(
          b, p, end, 3,
          (char *[]){(char *)&b->row->ts, (char *)&b->row->id,
                     (char *)&b->row->value},
          (size_t[]){sizeof *b->row, sizeof *b->row, sizeof *b->row},
          (int64_t[]){ts0, 0, 0}) < 0) {
    b->n = 0;
    return -EINVAL;
  }
  for (int i = 0; i < b->n; i++) {
    struct store_block_row *r = &b->row[i];
    r->args_len = -1;
    if (scale < STORE_CBLOCK_BITS) {
      int64_t k;
      memcpy(&k, &r->value, sizeof k);
      r->value = (double)k / store_block_pow10[scale];
    }
  }
  return 0;
}

/* ------------------------------------------------------------ flows */

/* Makes room for the ends of b->cap rows. */
static void store_block_ends_room(struct store_block *b) {
  if (b->ends_cap >= b->cap)
    return;
  b->ends_cap = b->cap;
  b->ends = xrealloc(b->ends, sizeof *b->ends * 4 * (size_t)b->ends_cap);
}

void store_block_add_endpoint(struct store_block *b, int64_t flow_id,
                              const int64_t end[4]) {
  store_block_row_room(b);
  store_block_ends_room(b);
  b->row[b->n] = (struct store_block_row){.ts = flow_id, .args_len = -1};
  memcpy(b->ends + 4 * (size_t)b->n++, end, 4 * sizeof *end);
}

unsigned char *store_block_encode_flow(const struct store_block *b,
                                       size_t *len) {
  int64_t v[5][STORE_BLOCK_ROWS];
  for (int i = 0; i < b->n; i++) {
    v[0][i] = b->row[i].ts;
    for (int k = 0; k < 4; k++)
      v[1 + k][i] = b->ends[4 * (size_t)i + (size_t)k];
  }
  return store_block_put_deltas((int64_t[]){b->n}, 1, 5, b->n, v,
                                (int64_t[]){b->row[0].ts, 0, 0, 0, 0}, len);
}

/* Decodes a block of nr row columns (the fields `field[]` of a row, the
 * first from k0, the others from 0) then the four ends of each row, into
 * b (every args NULL).  Returns 0, or -EINVAL with b->n 0. */
static int store_block_decode_ends(struct store_block *b, int64_t k0,
                                   const void *data, size_t len, int nr,
                                   const size_t *field) {
  const unsigned char *p = data, *end = p + (data ? len : 0);
  if (store_block_start(b, &p, end) < 0) /* leaves b->n 0 */
    return -EINVAL;
  store_block_ends_room(b);
  char *base[STORE_BLOCK_MAX_COLS];
  size_t stride[STORE_BLOCK_MAX_COLS];
  int64_t origin[STORE_BLOCK_MAX_COLS] = {k0};
  for (int c = 0; c < nr + 4; c++) {
    base[c] = c < nr ? (char *)b->row + field[c] : (char *)(b->ends + c - nr);
    stride[c] = c < nr ? sizeof *b->row : 4 * sizeof *b->ends;
  }
  if (store_block_read_deltas(b, p, end, nr + 4, base, stride, origin) < 0) {
    b->n = 0;
    return -EINVAL;
  }
  for (int i = 0; i < b->n; i++)
    b->row[i].args_len = -1;
  return 0;
}

int store_block_decode_flow(struct store_block *b, int64_t flow0,
                            const void *data, size_t len) {
  const size_t field[] = {offsetof(struct store_block_row, ts)};
  return store_block_decode_ends(b, flow0, data, len, 1, field);
}

/* ------------------------------------------------------------ dependencies */

void store_block_add_dep(struct store_block *b, int64_t ts, int64_t id,
                         int64_t seq, const int64_t other[4], int found) {
  store_block_row_room(b);
  store_block_ends_room(b);
  b->row[b->n] = (struct store_block_row){
      .ts = ts, .id = id, .dur = seq, .grp = found != 0, .args_len = -1};
  int64_t *e = b->ends + 4 * (size_t)b->n++;
  if (found)
    memcpy(e, other, 4 * sizeof *other);
  else
    e[0] = e[1] = e[2] = 0, e[3] = other[3];
}

unsigned char *store_block_encode_dep(const struct store_block *b,
                                      size_t *len) {
  int64_t v[7][STORE_BLOCK_ROWS];
  for (int i = 0; i < b->n; i++) {
    const struct store_block_row *r = &b->row[i];
    const int64_t *e = b->ends + 4 * (size_t)i;
    v[0][i] = r->ts, v[1][i] = r->id, v[2][i] = r->dur;
    /* the other's track + 1, 0 when it was not found (wrapping) */
    v[3][i] = r->grp ? (int64_t)((uint64_t)e[0] + 1) : 0;
    for (int k = 1; k < 4; k++)
      v[3 + k][i] = e[k];
  }
  return store_block_put_deltas((int64_t[]){b->n}, 1, 7, b->n, v,
                                (int64_t[]){b->row[0].ts, 0, 0, 0, 0, 0, 0},
                                len);
}

int store_block_decode_dep(struct store_block *b, int64_t ts0, const void *data,
                           size_t len) {
  const size_t field[] = {offsetof(struct store_block_row, ts),
                          offsetof(struct store_block_row, id),
                          offsetof(struct store_block_row, dur)};
  if (store_block_decode_ends(b, ts0, data, len, 3, field) < 0)
    return -EINVAL;
  int64_t *e = b->ends;
  for (int i = 0; i < b->n; i++, e += 4) {
    b->row[i].grp = e[0] != 0;
    e[0] = (int64_t)((uint64_t)e[0] - 1);
  }
  return 0;
}

void store_block_clear(struct store_block *b) {
  b->n = 0;
  b->args_size = 0;
  b->flows_n = 0;
}

void store_block_free(struct store_block *b) {
  free(b->row);
  free(b->args);
  free(b->flows);
  free(b->ends);
  free(b->raw);
  free(b->last);
  free(b->tpl);
  free(b->pieces);
  ZSTD_freeDCtx(b->zd);
  *b = (struct store_block){0};
}
