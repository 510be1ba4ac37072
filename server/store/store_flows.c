/* store_flows.c -- see store_flows.h. */
#include "store_flows.h"
#include "store_block.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct store_flows {
  store_flows_emit_fn *emit;
  void *ud;
  struct store_block b; /* the open block */
  int any;              /* an endpoint was added: last is set */
  int64_t last[5];      /* its key */
  char *error;          /* the first error not taken yet */
};

struct store_flows *store_flows_new(store_flows_emit_fn *emit, void *ud) {
  struct store_flows *s = xcalloc(1, sizeof *s);
  s->emit = emit;
  s->ud = ud;
  return s;
}

void store_flows_error(struct store_flows *s, char **error) {
  util_error_take(&s->error, error);
}

void store_flows_flush(struct store_flows *s) {
  if (!s->b.n)
    return;
  size_t len;
  unsigned char *data = store_block_encode_flow(&s->b, &len);
  s->emit(s->ud, s->b.row[0].ts, s->b.n, data, len);
  free(data);
  store_block_clear(&s->b);
}

void store_flows_add(struct store_flows *s, int64_t flow_id, int64_t track,
                     int64_t lane, int64_t ts, int64_t id) {
  const int64_t key[5] = {flow_id, track, lane, ts, id};
  int cmp = 0; /* key against the last one's */
  for (int k = 0; k < 5 && !cmp; k++)
    cmp = (key[k] > s->last[k]) - (key[k] < s->last[k]);
  if (s->any && cmp == 0) /* the same endpoint again */
    return;
  if (s->any && cmp < 0) {
    util_error_keep(&s->error,
                    xasprintf("flow %" PRId64 " endpoint (track %" PRId64
                              ", lane %" PRId64 ", ts %" PRId64 ", id %" PRId64
                              ") comes after a later one",
                              flow_id, track, lane, ts, id));
    return;
  }
  s->any = 1;
  memcpy(s->last, key, sizeof key);
  store_block_add_endpoint(&s->b, flow_id, key + 1);
  if (s->b.n == STORE_FBLOCK_ROWS)
    store_flows_flush(s);
}

void store_flows_free(struct store_flows *s) {
  if (!s)
    return;
  store_block_free(&s->b);
  free(s->error);
  free(s);
}
