/* test_util.c -- the decimal writers of sbuf: every digit count, the
 * extremes of int64, and comma-separated columns relative to a base; the
 * JSON string writer: each byte needing care at every place of the
 * eight-byte words it scans; the stable sort of sort.h against a sort by
 * (key, place). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "sort.h"
#include "util.h"

static void test_i64_matches_printf(void **state) {
  for (int digits = 1; digits <= 19; digits++) {
    int64_t v = 1; /* the smallest number of that many digits */
    for (int k = 1; k < digits; k++)
      v *= 10;
    int64_t cases[] = {v, v - 1, v + 1, -v, -(v - 1), v * 9 / 10 * 10};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      struct sbuf b = {0};
      char want[32];
      sbuf_adds(&b, "x");
      sbuf_add_i64(&b, cases[i]);
      snprintf(want, sizeof want, "x%lld", (long long)cases[i]);
      assert_string_equal(b.s, want);
      assert_int_equal(b.len, strlen(want));
      sbuf_free(&b);
    }
  }
  struct sbuf b = {0};
  sbuf_add_i64(&b, INT64_MIN);
  sbuf_addc(&b, ' ');
  sbuf_add_i64(&b, INT64_MAX);
  sbuf_addc(&b, ' ');
  sbuf_add_u64(&b, UINT64_MAX);
  assert_string_equal(
      b.s, "-9223372036854775808 9223372036854775807 18446744073709551615");
  sbuf_free(&b);
}

static void test_i64s_relative(void **state) {
  struct sbuf b = {0};
  int64_t v[] = {1000, 1005, 999, 1000 + 123456789012LL};
  sbuf_add_i64s(&b, v, 4, 1000);
  assert_string_equal(b.s, "0,5,-1,123456789012");
  sbuf_reset(&b);
  sbuf_add_i64s(&b, v, 0, 0);
  assert_int_equal(b.len, 0);
  sbuf_free(&b);
}

/* Each byte that needs care (and what the JSON holds for it) at every
 * offset 0..19 of a text of plain bytes, after a prefix of 0..8 bytes
 * already in the buffer. */
static void test_json_str_each_place(void **state) {
  static const struct {
    const char *in, *out;
  } odd[] = {{"\"", "\\\""},           {"\\", "\\\\"},
             {"\n", "\\u000a"},        {"\x01", "\\u0001"},
             {"\x1f", "\\u001f"},      {"\xc3\xa9", "\xc3\xa9"},
             {"\xff", "\xef\xbf\xbd"}, {"\xc3", "\xef\xbf\xbd"},
             {"\x7f", "\x7f"},         {" ", " "}};
  for (size_t k = 0; k < sizeof odd / sizeof *odd; k++)
    for (size_t pre = 0; pre <= 8; pre++)
      for (size_t at = 0; at < 20; at++) {
        char in[64], want[128];
        memset(in, 'a', at);
        strcpy(in + at, odd[k].in);
        strcat(in, "bcdefghijklmnopq");
        snprintf(want, sizeof want, "%.*s\"%.*s%s%s\"", (int)pre, "PPPPPPPP",
                 (int)at, in, odd[k].out, "bcdefghijklmnopq");
        struct sbuf b = {0};
        sbuf_add(&b, "PPPPPPPP", pre);
        sbuf_add_json_str(&b, in, strlen(in));
        assert_string_equal(b.s, want);
        assert_int_equal(b.len, strlen(want));
        sbuf_free(&b);
      }
}

/* A text of escapes only grows the buffer far past the room first made;
 * a NUL inside the text is escaped, not an end. */
static void test_json_str_grows(void **state) {
  char in[1000];
  memset(in, '\n', sizeof in);
  in[500] = '\0';
  struct sbuf b = {0};
  sbuf_add_json_str(&b, in, sizeof in);
  assert_int_equal(b.len, 2 + 6 * sizeof in);
  assert_memory_equal(b.s + 1 + 6 * 500, "\\u0000", 6);
  assert_memory_equal(b.s + 1 + 6 * 999, "\\u000a\"", 8);
  assert_int_equal(b.s[b.len], '\0');
  sbuf_reset(&b);
  sbuf_add_json_str(&b, "", 0);
  assert_string_equal(b.s, "\"\"");
  sbuf_free(&b);
}

/* A record of the sort test: its key (few values: many equal) and its
 * place before the sort, in a record of 40 bytes. */
struct sort_rec {
  int64_t key, place;
  char pad[24];
};

static int sort_rec_key(const void *x, const void *y) {
  const struct sort_rec *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

static int sort_rec_key_place(const void *x, const void *y) {
  const struct sort_rec *a = x, *b = y;
  int c = sort_rec_key(x, y);
  return c ? c : (a->place > b->place) - (a->place < b->place);
}

/* sort_stable orders by key and keeps equal keys in their order: the
 * same as a sort by (key, place), for sizes around its 16-record pieces
 * and its merges, runs already in order and reversed. */
static void test_sort_stable(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 2, 15, 16, 17, 31, 32, 33, 100, 1000, 4099};
  uint64_t r = 1;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    for (int shape = 0; shape < 3; shape++) {
      size_t n = sizes[s];
      struct sort_rec *v = calloc(n, sizeof *v), *w = calloc(n, sizeof *w),
                      *tmp = calloc(n, sizeof *tmp);
      for (size_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        v[i].key = shape == 0   ? (int64_t)(r >> 59)
                   : shape == 1 ? (int64_t)i / 3
                                : (int64_t)(n - i) / 2;
        v[i].place = (int64_t)i;
        v[i].pad[0] = (char)i;
      }
      memcpy(w, v, n * sizeof *v);
      sort_stable(v, n, sizeof *v, tmp, sort_rec_key);
      qsort(w, n, sizeof *w, sort_rec_key_place);
      assert_memory_equal(v, w, n * sizeof *v);
      free(v);
      free(w);
      free(tmp);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_i64_matches_printf),
      cmocka_unit_test(test_i64s_relative),
      cmocka_unit_test(test_json_str_each_place),
      cmocka_unit_test(test_json_str_grows),
      cmocka_unit_test(test_sort_stable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
