/* test_filter.c -- the command-line filter syntax and its matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "filter.h"

static void test_cores_list_and_range(void **state) {
  (void)state;
  struct filter *f = filter_new();
  char *cause = NULL;
  assert_int_equal(filter_set_cores(f, "0,2, 5-7", &cause), 0);
  assert_true(filter_keep_core(f, 0));
  assert_false(filter_keep_core(f, 1));
  assert_true(filter_keep_core(f, 2));
  assert_false(filter_keep_core(f, 4));
  assert_true(filter_keep_core(f, 5));
  assert_true(filter_keep_core(f, 7));
  assert_false(filter_keep_core(f, 8));
  assert_true(filter_keep_core(f, -1)); /* events without a NeuronCore */
  assert_string_equal(filter_describe(f), "cores=0,2,5,6,7,;");
  filter_free(f);
}

static void test_cores_errors(void **state) {
  (void)state;
  const char *bad[] = {"", "1,,2", "a", "3-1", "-2", "1-", "99999", "1 2"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct filter *f = filter_new();
    char *cause = NULL;
    assert_int_equal(filter_set_cores(f, bad[i], &cause), -22);
    assert_non_null(cause);
    free(cause);
    assert_true(filter_keep_core(f, 3)); /* unchanged: keeps everything */
    filter_free(f);
  }
}

static void test_event_types_groups(void **state) {
  (void)state;
  struct filter *f = filter_new();
  char *cause = NULL;
  assert_int_equal(filter_set_event_types(f, "hardware,^cc_exec_barrier", &cause), 0);
  assert_true(filter_keep_event(f, "nc_exec_running"));
  assert_true(filter_keep_event(f, "cc_running"));
  assert_false(filter_keep_event(f, "cc_exec_barrier"));
  assert_false(filter_keep_event(f, "nrt_execute"));
  assert_int_equal(filter_set_event_types(f, "software,^nrt_load", &cause), 0);
  assert_true(filter_keep_event(f, "nrt_execute"));
  assert_false(filter_keep_event(f, "nrt_load"));
  assert_false(filter_keep_event(f, "nc_exec_running"));
  assert_int_equal(filter_set_event_types(f, "^nrt_tensor_read", &cause), 0);
  assert_true(filter_keep_event(f, "nrt_execute"));
  assert_true(filter_keep_event(f, "nc_exec_running"));
  assert_false(filter_keep_event(f, "nrt_tensor_read"));
  assert_int_equal(filter_set_event_types(f, "nrt_load,nrt_execute,nc_exec_running", &cause), 0);
  assert_true(filter_keep_event(f, "nrt_load"));
  assert_true(filter_keep_event(f, "nc_exec_running"));
  assert_false(filter_keep_event(f, "cc_running"));
  assert_int_equal(filter_set_event_types(f, "^", &cause), -22);
  free(cause);
  cause = NULL;
  assert_int_equal(filter_set_event_types(f, "a;b", &cause), -22);
  free(cause);
  filter_free(f);
}

static void test_instances(void **state) {
  (void)state;
  struct filter *f = filter_new();
  char *cause = NULL;
  assert_true(filter_keep_instance(f, "i-1"));
  assert_int_equal(filter_set_instances(f, "i-0b1e,i-0c2f", &cause), 0);
  assert_true(filter_keep_instance(f, "i-0b1e"));
  assert_true(filter_keep_instance(f, "i-0c2f"));
  assert_false(filter_keep_instance(f, "i-0b1"));
  filter_free(f);
}

static void test_hardware_group(void **state) {
  (void)state;
  const char *hw[] = {"nc_exec_running", "cc_running", "cc_exec_barrier",
                      "numerical_err", "nrt_model_switch", "nc_model_switch",
                      "timestamp_sync_point", "hw_notify"};
  for (size_t i = 0; i < sizeof hw / sizeof *hw; i++)
    assert_true(filter_is_hardware(hw[i]));
  assert_false(filter_is_hardware("nrt_execute"));
  assert_false(filter_is_hardware("dmem_buf_copyin"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cores_list_and_range),
      cmocka_unit_test(test_cores_errors),
      cmocka_unit_test(test_event_types_groups),
      cmocka_unit_test(test_instances),
      cmocka_unit_test(test_hardware_group),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
