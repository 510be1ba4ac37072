/* test_util.c -- the decimal writers of sbuf: every digit count, the
 * extremes of int64, and comma-separated columns relative to a base. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka.h needs the headers above */
#include <cmocka.h>

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_i64_matches_printf),
      cmocka_unit_test(test_i64s_relative),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
