/* test_npf_seeds.c -- replays tests/data/npf-fuzz/ (small Neuron Perfetto
 * exports of the generator, system and device) and tests/data/regress/npf-*
 * through the Neuron mapping's fuzz target (tests/fuzz/fuzz_npf.c): each is
 * ingested into a store of its own, which must be built and hold no slice
 * of negative duration, no args that are not a JSON object, nothing on a
 * missing track.  The input, store and ingest code is compiled into this
 * program with UndefinedBehaviorSanitizer where the compiler has it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "testutil.h"

/* How many seeds tests/data/npf-fuzz/ holds (README.md aside). */
#define SEEDS 3

static void test_replay_seeds(void **state) {
  (void)state;
  assert_int_equal(testutil_replay("tests/data/npf-fuzz", "npf-"), SEEDS);
}

/* Runs the target on seed `name`; returns what its store held. */
static struct fuzz_npf_counts run_seed(const char *dir, const char *name) {
  char *path = testutil_srcpath("%s/%s", dir, name);
  size_t n;
  char *b = testutil_slurp(path, &n);
  fuzz_npf_last = (struct fuzz_npf_counts){-1, -1, -1, -1, -1};
  LLVMFuzzerTestOneInput((const uint8_t *)b, n);
  free(b);
  free(path);
  printf("# %s: %lld slices, %lld samples, %lld warnings, %lld devices, "
         "%lld instructions\n",
         name, (long long)fuzz_npf_last.slices,
         (long long)fuzz_npf_last.samples, (long long)fuzz_npf_last.warnings,
         (long long)fuzz_npf_last.devices,
         (long long)fuzz_npf_last.instructions);
  return fuzz_npf_last;
}

/* The seeds reach what they are there for: the device export named by the
 * system export is read (its 20 instructions), the one named by nothing
 * too, the system export alone has no device. */
static void test_seed_counts(void **state) {
  (void)state;
  struct fuzz_npf_counts c =
      run_seed("tests/data/npf-fuzz", "npf-system-device");
  assert_int_equal(c.slices, 41);
  assert_int_equal(c.samples, 3801);
  assert_int_equal(c.warnings, 1); /* the export has no trace_info */
  assert_int_equal(c.devices, 1);
  assert_int_equal(c.instructions, 20);
  c = run_seed("tests/data/npf-fuzz", "npf-system-only");
  assert_int_equal(c.slices, 11);
  assert_int_equal(c.samples, 2367);
  assert_int_equal(c.warnings, 1);
  assert_int_equal(c.devices, 0);
  assert_int_equal(c.instructions, 0);
  c = run_seed("tests/data/npf-fuzz", "npf-hostile-alone");
  assert_int_equal(c.slices, 6);
  assert_int_equal(c.samples, 4);
  assert_int_equal(c.warnings, 4);
  assert_int_equal(c.devices, 1);
  assert_int_equal(c.instructions, 1);
}

/* The inputs the fuzzer found that broke the ingest: a counter series
 * given twice at one time, and an HBM sample that is not a number (NOT
 * NULL constraint failed on counter.value: SQLite stores NULL for NaN),
 * each ended the ingest without a store. */
static void test_replay_regress(void **state) {
  (void)state;
  assert_int_equal(testutil_replay("tests/data/regress", "npf-"), 2);
  struct fuzz_npf_counts c = run_seed("tests/data/regress", "npf-counter-nan");
  assert_int_equal(c.samples, 1455); /* a store was built */
  assert_int_equal(c.warnings, 8);   /* the sample left out among them */
}

/* The target's folder goes into this program's temporary directory. */
static int setup(void **state) {
  int rc = testutil_setup(state);
  char *dir = testutil_path("");
  setenv("TMPDIR", dir, 1);
  free(dir);
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_seeds),
      cmocka_unit_test(test_replay_regress),
      cmocka_unit_test(test_seed_counts),
  };
  return cmocka_run_group_tests(tests, setup, testutil_teardown);
}
