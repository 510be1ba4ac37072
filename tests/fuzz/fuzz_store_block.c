/* fuzz_store_block.c -- libFuzzer target for the block decoders
 * (store_block.h), which read what a store file holds: a damaged or hostile
 * store must give -EINVAL, never a read out of bounds, an allocation of what a
 * length claims, or a crash.
 *
 * Input: byte 0 the columns to decode (its low 7 bits, STORE_BLOCK_*
 * bits) and, bit 7, whether there is an args blob; bytes 1 and 2 the data
 * blob's length (little endian, cut to what follows); then the data blob,
 * then the args blob.  Each is copied to a buffer of its exact size; the
 * args sets 1 - 4 are fuzz_store_block_set()'s.  A block that decodes with
 * every column is encoded again and decoded from that: the same slices
 * must come back (the encoder's own output always decodes).  The whole
 * input is also the args of slices encoded and decoded: the argument
 * sets must give any bytes back.  The data blob is read as a counter block and
 * as a flow block and as a dependency block too, and one that decodes is
 * encoded and decoded again: the same samples (the value's bits; a -0.0 may
 * come back as 0.0, as SQLite keeps a REAL), the same endpoints, the same
 * dependencies.
 */
#include "fuzz_fmt.h"
#include "store_argset.h"
#include "store_block.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The args sets of the blocks read (a store's arg_set table): 1 - 4,
 * with integers, texts, both, neither. */
static int fuzz_store_block_set(void *ud, int64_t id, const char **tpl,
                                size_t *len) {
  static const char *const sets[] = {"{\"a\":\1}", "[\"\3\"]",
                                     "{\"k\":\"\2\",\"s\":\3,\"t\":[\1,\3]}",
                                     "null"};
  (void)ud;
  if (id < 1 || id > 4)
    return -1;
  *tpl = sets[id - 1];
  *len = strlen(*tpl);
  return 0;
}

/* Aborts unless rows i of a and b hold the same slice (grp as the encoder
 * keeps it, > 0 or 0). */
static void fuzz_store_block_same(const struct store_block *a,
                                  const struct store_block *b, int i) {
  const struct store_block_row *x = &a->row[i], *y = &b->row[i];
  if (x->ts != y->ts || x->id != y->id || x->dur != y->dur ||
      x->name != y->name || (x->grp > 0 ? x->grp : 0) != y->grp ||
      x->args_len != y->args_len ||
      (x->args_len > 0 && memcmp(a->args + x->args_off, b->args + y->args_off,
                                 (size_t)x->args_len) != 0))
    abort();
}

/* Encodes the slices of a (args and flows of its own, as read) with a
 * new encoder and decodes that: the same slices, args byte for byte. */
static void fuzz_store_block_again(const struct store_block *a) {
  struct store_block_enc e;
  store_block_enc_init(&e);
  struct store_block c = {0},
                     d = {.argset = store_argsets_get, .argset_ud = e.sets};
  for (int i = 0; i < a->n; i++) {
    const struct store_block_row *r = &a->row[i];
    store_block_add(&c, r->ts, r->id, r->dur, r->name, r->grp,
                    r->args_len >= 0 ? a->args + r->args_off : NULL,
                    r->args_len >= 0 ? (size_t)r->args_len : 0,
                    r->n_flows ? a->flows + r->flows_off : NULL, r->n_flows);
  }
  size_t len, at;
  unsigned char *out = store_block_encode(&c, &e, &len, &at);
  /* no args part (every args NULL): no slice_args row, read as NULL */
  if (store_block_decode(&d, c.row[0].ts, out, at, at < len ? out + at : NULL,
                         len - at, STORE_BLOCK_ALL | STORE_BLOCK_FLOWS) != 0 ||
      d.n != a->n)
    abort();
  for (int i = 0; i < a->n; i++)
    fuzz_store_block_same(a, &d, i);
  free(out);
  store_block_free(&c);
  store_block_free(&d);
  store_block_enc_free(&e);
}

/* The input as the args of three slices (the whole, its first half, the
 * whole again) goes through the encoder and back: the argument sets give
 * any bytes back exactly. */
static void fuzz_store_block_args(const uint8_t *data, size_t size) {
  struct store_block a = {0};
  const char *text = (const char *)data;
  store_block_add(&a, 1, 1, 0, 1, 0, text, size, NULL, 0);
  store_block_add(&a, 2, 2, 0, 1, 0, text, size / 2, NULL, 0);
  store_block_add(&a, 3, 3, 0, 1, 0, text, size, NULL, 0);
  fuzz_store_block_again(&a);
  store_block_free(&a);
}

/* Reads data/len as a counter block; one that decodes goes through the
 * encoder again and must come back the same. */
static void fuzz_store_block_counter(const unsigned char *data, size_t len) {
  static struct store_block b, d;
  if (store_block_decode_counter(&b, -3, data, len) != 0)
    return;
  size_t elen;
  unsigned char *out = store_block_encode_counter(&b, &elen);
  if (store_block_decode_counter(&d, b.row[0].ts, out, elen) != 0 || d.n != b.n)
    abort();
  for (int i = 0; i < b.n; i++) {
    const struct store_block_row *x = &b.row[i], *y = &d.row[i];
    if (x->ts != y->ts || x->id != y->id ||
        (memcmp(&x->value, &y->value, sizeof x->value) != 0 &&
         !(x->value == 0 && y->value == 0)))
      abort();
  }
  free(out);
}

/* Reads data/len as a flow block; one that decodes goes through the
 * encoder again and must come back the same. */
static void fuzz_store_block_flow(const unsigned char *data, size_t len) {
  static struct store_block b, d;
  if (store_block_decode_flow(&b, 11, data, len) != 0)
    return;
  size_t elen;
  unsigned char *out = store_block_encode_flow(&b, &elen);
  if (store_block_decode_flow(&d, b.row[0].ts, out, elen) != 0 || d.n != b.n ||
      memcmp(d.ends, b.ends, 4 * sizeof *b.ends * (size_t)b.n) != 0)
    abort();
  for (int i = 0; i < b.n; i++)
    if (d.row[i].ts != b.row[i].ts)
      abort();
  free(out);
}

/* Reads data/len as a dependency block; one that decodes goes through
 * the encoder again and must come back the same (the other's track, lane
 * and ts only when it was found). */
static void fuzz_store_block_dep(const unsigned char *data, size_t len) {
  static struct store_block b, d;
  if (store_block_decode_dep(&b, 5, data, len) != 0)
    return;
  size_t elen;
  unsigned char *out = store_block_encode_dep(&b, &elen);
  if (store_block_decode_dep(&d, b.row[0].ts, out, elen) != 0 || d.n != b.n)
    abort();
  for (int i = 0; i < b.n; i++) {
    const struct store_block_row *x = &b.row[i], *y = &d.row[i];
    const int64_t *e = b.ends + 4 * i, *f = d.ends + 4 * i;
    if (x->ts != y->ts || x->id != y->id || x->dur != y->dur ||
        x->grp != y->grp || e[3] != f[3] ||
        (x->grp && (e[0] != f[0] || e[1] != f[1] || e[2] != f[2])))
      abort();
  }
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* its buffers kept, as a cursor keeps them; sets read from a store are
   * given by fuzz_store_block_set() */
  static struct store_block b = {.argset = fuzz_store_block_set};
  if (size < 3)
    return 0;
  int cols = data[0] & 127;
  bool has_args = data[0] & 128;
  size_t dl = (size_t)data[1] | (size_t)data[2] << 8;
  if (dl > size - 3)
    dl = size - 3;
  size_t al = size - 3 - dl;
  unsigned char *d = malloc(dl ? dl : 1), *a = malloc(al ? al : 1);
  if (!d || !a)
    abort();
  memcpy(d, data + 3, dl);
  memcpy(a, data + 3 + dl, al);
  if (store_block_decode(&b, 7, d, dl, has_args ? a : NULL, al, cols) == 0) {
    volatile unsigned char sum = 0; /* every value decoded can be read */
    for (int i = 0; i < b.n; i++) {
      const struct store_block_row *r = &b.row[i];
      for (int k = 0; k < r->n_flows; k++)
        sum ^= (unsigned char)b.flows[r->flows_off + (size_t)k];
      if (r->args_len > 0)
        sum ^= (unsigned char)b.args[r->args_off + (size_t)r->args_len - 1];
    }
    if (has_args && cols == (STORE_BLOCK_ALL | STORE_BLOCK_FLOWS) && b.n > 0)
      fuzz_store_block_again(&b);
    (void)sum;
  }
  fuzz_store_block_counter(d, dl);
  fuzz_store_block_flow(d, dl);
  fuzz_store_block_dep(d, dl);
  fuzz_store_block_args(data, size);
  free(d);
  free(a);
  return 0;
}
