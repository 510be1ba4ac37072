/* test_store_argset.c -- argument sets (store_argset.h): the split of an
 * args text into its template and values for the texts that matter
 * (integers at the edges of int64 and uint64, numbers that are not
 * integers, escaped quotes, keys before a spaced colon, strings left
 * open, mark bytes, too many values), and blocks that give any bytes back
 * exactly through their sets (store_block.h), sets shared and numbered in
 * order, and the sets' limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "store_argset.h"
#include "store_block.h"
#include "util.h"

/* The template of sp with its marks written #, ^ and $ (integer, one
 * above INT64_MAX, text).  Returns a malloc'd string. */
static char *shown(const struct store_argset_split *sp) {
  char *s = xmalloc(sp->tpl_len + 1);
  for (size_t i = 0; i < sp->tpl_len; i++)
    s[i] = sp->tpl[i] == STORE_ARGSET_INT     ? '#'
           : sp->tpl[i] == STORE_ARGSET_UINT  ? '^'
           : sp->tpl[i] == STORE_ARGSET_BYTES ? '$'
                                              : sp->tpl[i];
  s[sp->tpl_len] = '\0';
  return s;
}

/* Splits text (its strlen) and checks the template, the integers and the
 * texts ("|" between them). */
static void split_is(const char *text, const char *tpl, int n_int,
                     const int64_t *ints, const char *texts) {
  struct store_argset_split *sp = xmalloc(sizeof *sp);
  assert_int_equal(store_argset_split(text, strlen(text), sp), 0);
  char *s = shown(sp);
  assert_string_equal(s, tpl);
  free(s);
  assert_int_equal(sp->n_int, n_int);
  for (int k = 0; k < n_int; k++)
    assert_int_equal(sp->ints[k], ints[k]);
  struct sbuf t = {0};
  for (int k = 0; k < sp->n_bytes; k++) {
    if (k)
      sbuf_add(&t, "|", 1);
    sbuf_add(&t, sp->bytes[k], sp->bytes_len[k]);
  }
  assert_string_equal(t.s ? t.s : "", texts);
  sbuf_free(&t);
  free(sp);
}

static void test_split(void **state) {
  (void)state;
  split_is("{\"a\":1,\"b\":\"x\",\"c\":-5}", "{\"a\":#,\"b\":\"$\",\"c\":#}", 2,
           (int64_t[]){1, -5}, "x");
  /* integers in strings, the edges of int64 and uint64 */
  split_is("{\"id\":\"18446744073709551615\",\"m\":-9223372036854775808,"
           "\"x\":9223372036854775807,\"y\":9223372036854775808}",
           "{\"id\":\"^\",\"m\":#,\"x\":#,\"y\":^}", 4,
           (int64_t[]){-1, INT64_MIN, INT64_MAX, INT64_MIN}, "");
  /* not as %lld writes them: kept as text */
  split_is("[18446744073709551616,007,-0,1.5,1e3,-,-9223372036854775809]",
           "[$,$,$,$,$,$,$]", 0, NULL,
           "18446744073709551616|007|-0|1.5|1e3|-|-9223372036854775809");
  /* a key before a spaced colon, escaped quotes and backslashes */
  split_is("{\"k\" :\t\"v\", \"s\":\"a\\\"b\\\\\",\"t\":\"\\\\\"}",
           "{\"k\" :\t\"$\", \"s\":\"$\",\"t\":\"$\"}", 0, NULL,
           "v|a\\\"b\\\\|\\\\");
  /* a string left open is the template's; any text splits */
  split_is("{\"s\":\"abc", "{\"s\":\"abc", 0, NULL, "");
  split_is("abc-12def true 0", "abc#def true #", 2, (int64_t[]){-12, 0}, "");
  split_is("", "", 0, NULL, "");
  /* a mark byte or a NUL anywhere: no set */
  struct store_argset_split *sp = xmalloc(sizeof *sp);
  assert_int_equal(store_argset_split("{\"a\":\"\x01\x02\"}", 10, sp), -1);
  assert_int_equal(store_argset_split("{\"\x01\":1}", 7, sp), -1);
  assert_int_equal(store_argset_split("{\"a\":1}\x03", 8, sp), -1);
  assert_int_equal(store_argset_split("{\"a\":\0}", 7, sp), -1);
  /* STORE_ARGSET_HOLES values at most, a template of
   * STORE_ARGSET_TPL_MAX - 1 bytes at most */
  struct sbuf t = {0};
  for (int k = 0; k < STORE_ARGSET_HOLES; k++)
    sbuf_add(&t, k ? ",1" : "[1", 2);
  assert_int_equal(store_argset_split(t.s, t.len, sp), 0);
  sbuf_add(&t, ",1]", 3);
  assert_int_equal(store_argset_split(t.s, t.len, sp), -1);
  t.len = 0;
  for (int k = 0; k < STORE_ARGSET_TPL_MAX - 1; k++)
    sbuf_add(&t, "x", 1);
  assert_int_equal(store_argset_split(t.s, t.len, sp), 0);
  sbuf_add(&t, "x", 1);
  assert_int_equal(store_argset_split(t.s, t.len, sp), -1);
  sbuf_free(&t);
  free(sp);
}

/* Encodes the n texts (NULL: args NULL) as one block with e and decodes
 * it: every text comes back byte for byte. */
static void round_trip(struct store_block_enc *e, char **text, size_t *len,
                       int n) {
  struct store_block b = {0},
                     d = {.argset = store_argsets_get, .argset_ud = e->sets};
  for (int i = 0; i < n; i++)
    store_block_add(&b, i, i, 1, 1, 0, text[i], len[i], NULL, 0);
  size_t all, at;
  unsigned char *out = store_block_encode(&b, e, &all, &at);
  assert_int_equal(store_block_decode(&d, 0, out, at,
                                      at < all ? out + at : NULL, all - at,
                                      STORE_BLOCK_ALL),
                   0);
  assert_int_equal(d.n, n);
  for (int i = 0; i < n; i++) {
    if (!text[i]) {
      assert_int_equal(d.row[i].args_len, -1);
      continue;
    }
    assert_int_equal(d.row[i].args_len, (int64_t)len[i]);
    assert_memory_equal(d.args + d.row[i].args_off, text[i], len[i]);
  }
  free(out);
  store_block_free(&b);
  store_block_free(&d);
}

/* Texts of bytes that matter to the split, at random (a fixed seed), in
 * blocks of 200: each comes back exactly. */
static void test_any_bytes_back(void **state) {
  (void)state;
  static const char alphabet[] = "{}[]\":, -+0123456789.eE\\ab\x01\x03\xff\n";
  struct store_block_enc e;
  store_block_enc_init(&e);
  uint64_t seed = 42;
  char *text[200];
  size_t len[200];
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 200; i++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      len[i] = (size_t)(seed >> 58); /* 0 - 63 */
      text[i] = (seed >> 20 & 15) == 0 ? NULL : xmalloc(len[i] + 1);
      for (size_t k = 0; text[i] && k < len[i]; k++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        text[i][k] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
      }
    }
    round_trip(&e, text, len, 200);
    for (int i = 0; i < 200; i++)
      free(text[i]);
  }
  store_block_enc_free(&e);
}

/* Texts that differ only in their values share a set; sets are numbered
 * in the order first met, each handed out once by drain; rows of two
 * sets in turns keep each set's integers apart. */
static void note(void *ud, int64_t id, const char *tpl, size_t len) {
  struct sbuf *b = ud;
  sbuf_printf(b, "%lld:%.*s;", (long long)id, (int)len, tpl);
}

static void test_sets_shared(void **state) {
  (void)state;
  struct store_block_enc e;
  store_block_enc_init(&e);
  char *text[6];
  size_t len[6];
  for (int i = 0; i < 6; i++) {
    text[i] = i % 2 ? xasprintf("{\"b\":\"n%d\"}", i)
                    : xasprintf("{\"a\":%d,\"u\":\"%llu\"}", 1000 - 7 * i,
                                18446744073709551615ull - (unsigned)i);
    len[i] = strlen(text[i]);
  }
  round_trip(&e, text, len, 6);
  struct sbuf got = {0};
  store_argsets_drain(e.sets, note, &got);
  assert_string_equal(got.s,
                      "1:{\"a\":\x01,\"u\":\"\x02\"};2:{\"b\":\"\x03\"};");
  got.len = 0;
  round_trip(&e, text, len, 6);
  store_argsets_drain(e.sets, note, &got);
  assert_int_equal(got.len, 0);
  sbuf_free(&got);
  for (int i = 0; i < 6; i++)
    free(text[i]);
  store_block_enc_free(&e);
}

/* Past STORE_ARGSETS_MAX sets a new template gets no id and its text is
 * kept whole; the sets given ids still are found. */
static void test_sets_full(void **state) {
  (void)state;
  struct store_block_enc e;
  store_block_enc_init(&e);
  struct store_argsets *s = e.sets;
  char tpl[32];
  for (int i = 0; i < STORE_ARGSETS_MAX; i++) {
    int n = snprintf(tpl, sizeof tpl, "{\"k%d\":\x01}", i);
    assert_int_equal(store_argsets_intern(s, tpl, (size_t)n), i + 1);
  }
  assert_int_equal(store_argsets_intern(s, "{\"new\":\x01}", 9), 0);
  assert_int_equal(store_argsets_intern(s, "{\"k7\":\x01}", 8), 8);
  const char *t;
  size_t n;
  assert_int_equal(store_argsets_get(s, 8, &t, &n), 0);
  assert_int_equal(n, 8);
  assert_memory_equal(t, "{\"k7\":\x01}", 8);
  assert_int_equal(store_argsets_get(s, STORE_ARGSETS_MAX + 1, &t, &n), -1);
  char one[] = "{\"new\":1}", two[] = "{\"k7\":2}";
  char *text[] = {one, two};
  size_t len[] = {9, 8};
  round_trip(&e, text, len, 2);
  store_block_enc_free(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_any_bytes_back),
      cmocka_unit_test(test_sets_shared),
      cmocka_unit_test(test_sets_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
