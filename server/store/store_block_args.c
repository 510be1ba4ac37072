/* store_block_args.c -- see store_block_args.h. */
#include "store_block_args.h"
#include "lod_block.h"
#include "store_argset.h"

#include <errno.h>
#include <string.h>

void store_block_args_room(struct store_block *b, size_t n) {
  if (b->args_size + n <= b->args_cap)
    return;
  size_t cap = b->args_cap ? b->args_cap : 4096;
  while (cap < b->args_size + n)
    cap *= 2;
  b->args = xrealloc(b->args, cap);
  b->args_cap = cap;
}

/* The args sets met so far in a block being read or written: set k's
 * last integers are b->last[at[k] .. at[k + 1]), and (read) its template
 * is b->pieces[piece[k] .. piece[k + 1]). */
struct store_block_args_sets {
  int n;
  int64_t id[STORE_BLOCK_ROWS];
  int at[STORE_BLOCK_ROWS + 1];
  int piece[STORE_BLOCK_ROWS + 1];
};

/* Appends the pieces of template tpl/len to b's (its literal bytes
 * copied to b->tpl).  Returns the number of its integers. */
static int store_block_args_pieces(struct store_block *b, const char *tpl,
                                   size_t len) {
  const char *t = tpl, *end = tpl + len, *lit;
  size_t lit_len;
  int mark, n_int = 0;
  do {
    mark = store_argset_next(&t, end, &lit, &lit_len);
    if (b->pieces_n == b->pieces_cap) {
      b->pieces_cap = b->pieces_cap * 2 + 16;
      b->pieces = xrealloc(b->pieces, b->pieces_cap * sizeof *b->pieces);
    }
    b->pieces[b->pieces_n++] = (struct store_block_piece){
        .text = b->tpl_size, .len = lit_len, .mark = mark};
    if (!b->tpl || b->tpl_size + lit_len > b->tpl_cap) {
      b->tpl_cap = (b->tpl_size + lit_len) * 2 + 64;
      b->tpl = xrealloc(b->tpl, b->tpl_cap);
    }
    memcpy(b->tpl + b->tpl_size, lit, lit_len);
    b->tpl_size += lit_len;
    n_int += mark == STORE_ARGSET_INT || mark == STORE_ARGSET_UINT;
  } while (mark);
  return n_int;
}

/* Adds set `id` to the sets of the block, with n_int last integers of 0;
 * its pieces (read) are those b gained since the set before's.  Returns
 * its slot. */
static int store_block_args_new_set(struct store_block *b,
                                    struct store_block_args_sets *m, int64_t id,
                                    int n_int) {
  int k = m->n++;
  m->id[k] = id;
  m->piece[k + 1] = (int)b->pieces_n;
  m->at[k + 1] = m->at[k] + n_int;
  if (!b->last || (size_t)m->at[k + 1] > b->last_cap) {
    b->last_cap = (size_t)m->at[k + 1] * 2 + STORE_ARGSET_HOLES;
    b->last = xrealloc(b->last, b->last_cap * sizeof *b->last);
  }
  memset(b->last + m->at[k], 0, (size_t)n_int * sizeof *b->last);
  return k;
}

/* The slot of set `id` among the block's sets, or -1. */
static int store_block_args_set(const struct store_block_args_sets *m,
                                int64_t id) {
  for (int k = 0; k < m->n; k++)
    if (m->id[k] == id)
      return k;
  return -1;
}

/* Writes varint v at the end of buf. */
static void store_block_args_varint(struct sbuf *buf, int64_t v) {
  sbuf_grow(buf, 10);
  buf->len =
      (size_t)((char *)lod_block_varint((unsigned char *)buf->s + buf->len, v) -
               buf->s);
}

void store_block_args_split(struct store_block *b, struct store_block_enc *e,
                            int64_t *ref) {
  struct store_argset_split *sp = e->split;
  struct store_block_args_sets m;
  m.n = m.at[0] = m.piece[0] = 0;
  e->ints.len = e->texts.len = 0;
  for (int i = 0; i < b->n; i++) {
    const struct store_block_row *r = &b->row[i];
    size_t len = r->args_len > 0 ? (size_t)r->args_len : 0;
    const char *text = len ? b->args + r->args_off : "";
    int64_t id = 0;
    if (r->args_len < 0) {
      ref[i] = 0;
      continue;
    }
    if (store_argset_split(text, len, sp) == 0)
      id = store_argsets_intern(e->sets, sp->tpl, sp->tpl_len);
    if (!id) {
      ref[i] = 1;
      store_block_args_varint(&e->texts, (int64_t)len);
      sbuf_add(&e->texts, text, len);
      continue;
    }
    ref[i] = id + 1;
    int slot = store_block_args_set(&m, id);
    if (slot < 0)
      slot = store_block_args_new_set(b, &m, id, sp->n_int);
    int64_t *last = b->last + m.at[slot];
    sbuf_grow(&e->ints, 10 * (size_t)sp->n_int);
    unsigned char *q = (unsigned char *)e->ints.s + e->ints.len;
    for (int k = 0; k < sp->n_int; k++) {
      q = lod_block_varint(
          q, (int64_t)((uint64_t)sp->ints[k] - (uint64_t)last[k]));
      last[k] = sp->ints[k];
    }
    e->ints.len = (size_t)((char *)q - e->ints.s);
    for (int k = 0; k < sp->n_bytes; k++) {
      store_block_args_varint(&e->texts, (int64_t)sp->bytes_len[k]);
      sbuf_add(&e->texts, sp->bytes[k], sp->bytes_len[k]);
    }
  }
  e->part.len = 0; /* the integers' length, the integers, the texts */
  store_block_args_varint(&e->part, (int64_t)e->ints.len);
  sbuf_add(&e->part, e->ints.s, e->ints.len);
  sbuf_add(&e->part, e->texts.s, e->texts.len);
}

unsigned char *store_block_args_put(unsigned char *p, unsigned char *end,
                                    ZSTD_CCtx *zc, const unsigned char *text,
                                    size_t n) {
  unsigned char *flags = p++;
  *flags = 0;
  if (n >= 64) {
    unsigned char *head = lod_block_varint(p, (int64_t)n);
    size_t zlen = ZSTD_compressCCtx(zc, head, (size_t)(end - head), text, n, 1);
    if (!ZSTD_isError(zlen) && (size_t)(head - p) + zlen < n - n / 10) {
      *flags = STORE_BLOCK_ZSTD;
      return head + zlen;
    }
  }
  memcpy(p, text, n);
  return p + n;
}

/* Reads one varint length at *p (before end) and the bytes after it;
 * appends them to b's args.  Returns 0 or -EINVAL. */
static int store_block_args_bytes(struct store_block *b,
                                  const unsigned char **p,
                                  const unsigned char *end) {
  int64_t n;
  if (lod_block_varint_get(p, end, &n) < 0 || n < 0 || n > end - *p)
    return -EINVAL;
  store_block_args_room(b, (size_t)n);
  memcpy(b->args + b->args_size, *p, (size_t)n);
  b->args_size += (size_t)n;
  *p += n;
  return 0;
}

/* Appends the args of a row of set `id` to b's args: its template filled
 * with the integers at *ip (before iend, each the difference from the
 * set's last one) and the texts at *bp (before bend).  Returns 0 or
 * -EINVAL. */
static int store_block_args_fill(struct store_block *b,
                                 struct store_block_args_sets *m, int64_t id,
                                 const unsigned char **ip,
                                 const unsigned char *iend,
                                 const unsigned char **bp,
                                 const unsigned char *bend) {
  int k = store_block_args_set(m, id);
  if (k < 0) {
    const char *tpl;
    size_t tpl_len;
    if (!b->argset || b->argset(b->argset_ud, id, &tpl, &tpl_len) < 0)
      return -EINVAL;
    k = store_block_args_new_set(b, m, id,
                                 store_block_args_pieces(b, tpl, tpl_len));
  }
  int64_t *last = b->last + m->at[k];
  for (int p = m->piece[k]; p < m->piece[k + 1]; p++) {
    const struct store_block_piece *pc = &b->pieces[p];
    store_block_args_room(b, pc->len + 20);
    memcpy(b->args + b->args_size, b->tpl + pc->text, pc->len);
    b->args_size += pc->len;
    int64_t d;
    if (pc->mark == STORE_ARGSET_BYTES) {
      if (store_block_args_bytes(b, bp, bend) < 0)
        return -EINVAL;
    } else if (pc->mark) {
      if (lod_block_varint_get(ip, iend, &d) < 0)
        return -EINVAL;
      *last = (int64_t)((uint64_t)*last + (uint64_t)d);
      b->args_size +=
          store_argset_put_int(b->args + b->args_size, *last++, pc->mark);
    }
  }
  return 0;
}

int store_block_args_read(struct store_block *b, const unsigned char *p,
                          const unsigned char *end) {
  if (p == end || (*p != 0 && *p != STORE_BLOCK_ZSTD))
    return -EINVAL;
  if (*p++) {
    /* the size the frame declares, which a frame cannot exceed 2^16 times
     * its own (a zstd block of 128 KiB takes 3 bytes at best), before
     * anything is allocated for it (a damaged block may claim any size) */
    int64_t raw = 0;
    if (lod_block_varint_get(&p, end, &raw) < 0 || raw < 0 ||
        (uint64_t)raw / 65536 > (uint64_t)(end - p) ||
        ZSTD_getFrameContentSize(p, (size_t)(end - p)) != (uint64_t)raw)
      return -EINVAL;
    if (!b->zd && !(b->zd = ZSTD_createDCtx()))
      return -ENOMEM;
    if ((size_t)raw > b->raw_cap) {
      b->raw_cap = (size_t)raw;
      b->raw = xrealloc(b->raw, b->raw_cap);
    }
    size_t got =
        ZSTD_decompressDCtx(b->zd, b->raw, (size_t)raw, p, (size_t)(end - p));
    if (ZSTD_isError(got) || got != (uint64_t)raw)
      return -EINVAL;
    p = b->raw;
    end = p + raw;
  }
  int64_t n_int;
  if (lod_block_varint_get(&p, end, &n_int) < 0 || n_int < 0 || n_int > end - p)
    return -EINVAL;
  const unsigned char *ip = p, *iend = p + n_int, *bp = iend;
  struct store_block_args_sets m;
  m.n = m.at[0] = m.piece[0] = 0;
  b->args_size = b->tpl_size = b->pieces_n = 0;
  for (int i = 0; i < b->n; i++) {
    struct store_block_row *r = &b->row[i];
    size_t off = b->args_size;
    if (r->args_len < -1) /* a set below 0 */
      return -EINVAL;
    if (r->args_len < 0)
      continue;
    if (r->args_len == 0 ? store_block_args_bytes(b, &bp, end) < 0
                         : store_block_args_fill(b, &m, r->args_len, &ip, iend,
                                                 &bp, end) < 0)
      return -EINVAL;
    r->args_off = off;
    r->args_len = (int64_t)(b->args_size - off);
  }
  return ip == iend && bp == end ? 0 : -EINVAL;
}
