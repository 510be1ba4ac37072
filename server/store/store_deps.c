/* store_deps.c -- see store_deps.h. */
#include "store_deps.h"
#include "store_block.h"
#include "util.h"

#include <stdlib.h>

struct store_deps {
  store_deps_emit_fn *emit;
  void *ud;
  struct store_block b; /* the open block */
  int64_t track, lane;  /* its (track, lane), when b.n > 0 */
};

struct store_deps *store_deps_new(store_deps_emit_fn *emit, void *ud) {
  struct store_deps *s = xcalloc(1, sizeof *s);
  s->emit = emit;
  s->ud = ud;
  return s;
}

void store_deps_flush(struct store_deps *s) {
  if (!s->b.n)
    return;
  size_t len;
  unsigned char *data = store_block_encode_dep(&s->b, &len);
  s->emit(s->ud, s->track, s->lane, s->b.row[0].ts, s->b.n, data, len);
  free(data);
  store_block_clear(&s->b);
}

void store_deps_add(struct store_deps *s, const int64_t key[4], int64_t seq,
                    const int64_t other[4], int found) {
  if (s->b.n && (key[0] != s->track || key[1] != s->lane))
    store_deps_flush(s);
  s->track = key[0], s->lane = key[1];
  store_block_add_dep(&s->b, key[2], key[3], seq, other, found);
  if (s->b.n == STORE_DBLOCK_ROWS)
    store_deps_flush(s);
}

void store_deps_free(struct store_deps *s) {
  if (!s)
    return;
  store_block_free(&s->b);
  free(s);
}
