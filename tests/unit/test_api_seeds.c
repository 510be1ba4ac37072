/* test_api_seeds.c -- replays tests/data/fuzz-api/ through the API fuzz
 * target (tests/fuzz/fuzz_api.c): every REST endpoint with negative and
 * extreme windows (start=-1, INT64_MIN/MAX, end before start, px=0 and
 * huge, NaN and inf texts), extreme paging and event keys.  A 5xx answer
 * aborts; the store, query, app and REST code is compiled into this program
 * with UndefinedBehaviorSanitizer where the compiler has it, so undefined
 * behaviour on any of these inputs aborts too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "testutil.h"

/* How many seeds tests/data/fuzz-api/ holds. */
#define SEEDS 140

static void test_replay_seeds(void **state) {
  (void)state;
  assert_int_equal(testutil_replay("tests/data/fuzz-api", ""), SEEDS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
