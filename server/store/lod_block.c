/* lod_block.c -- see lod_block.h. */
#include "lod_block.h"

#include "varint.h"

#include <errno.h>

static int64_t lod_block_sub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int64_t lod_block_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* The row before a block's first row. */
struct lod_row lod_block_origin(int level, int64_t bucket) {
  return (struct lod_row){
      .bucket = bucket, .ts = (int64_t)((uint64_t)bucket << LOD_SHIFT(level))};
}

unsigned char *lod_block_varint(unsigned char *p, int64_t v) {
  return p + varint_put(p, varint_zig(v));
}

int lod_block_varint_get(const unsigned char **p, const unsigned char *end,
                         int64_t *v) {
  uint64_t z = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p == end)
      return -EINVAL;
    unsigned char c = *(*p)++;
    z |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = varint_unzig(z);
      return 0;
    }
  }
  return -EINVAL;
}

void lod_block_init(struct lod_block *b, int level, int64_t bucket,
                    const void *rows, size_t len) {
  b->p = rows;
  b->end = b->p + (rows ? len : 0);
  b->prev = lod_block_origin(level, bucket);
}

int lod_block_next(struct lod_block *b, struct lod_row *r) {
  if (b->p == b->end)
    return 0;
  int64_t v[9];
  for (int i = 0; i < 9; i++)
    if (lod_block_varint_get(&b->p, b->end, &v[i]) < 0)
      return -EINVAL;
  r->bucket = lod_block_add(b->prev.bucket, v[0]);
  r->ts = lod_block_add(b->prev.ts, v[1]);
  r->end = lod_block_add(r->ts, v[2]);
  r->id = lod_block_add(b->prev.id, v[3]);
  r->name = v[4], r->grp = v[5], r->dur = v[6], r->count = v[7];
  r->busy = v[8];
  b->prev = *r;
  return 1;
}

unsigned char *lod_block_put(unsigned char *p, struct lod_row *prev,
                             const struct lod_row *r) {
  p = lod_block_varint(p, lod_block_sub(r->bucket, prev->bucket));
  p = lod_block_varint(p, lod_block_sub(r->ts, prev->ts));
  p = lod_block_varint(p, lod_block_sub(r->end, r->ts));
  p = lod_block_varint(p, lod_block_sub(r->id, prev->id));
  p = lod_block_varint(p, r->name);
  p = lod_block_varint(p, r->grp > 0 ? r->grp : 0);
  p = lod_block_varint(p, r->dur);
  p = lod_block_varint(p, r->count);
  p = lod_block_varint(p, r->busy);
  *prev = (struct lod_row){.bucket = r->bucket, .ts = r->ts, .id = r->id};
  return p;
}
