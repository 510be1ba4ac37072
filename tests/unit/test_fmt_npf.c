/* test_fmt_npf.c -- the naming of the Neuron tools' Perfetto export: row,
 * process and device row names, and the debug argument names of fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fmt_npf.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"

static void test_rows(void **state) {
  (void)state;
  struct fmt_npf_row r;
  assert_true(fmt_npf_row_parse("gid35-nc3-tid7-neuron_rt", &r));
  assert_int_equal(r.worker, 35);
  assert_int_equal(r.nc, 3);
  assert_int_equal(r.tid, 7);
  assert_string_equal(r.source, "neuron_rt");
  assert_true(fmt_npf_row_parse("nrt-nc0-tid200692-neuron_hw", &r));
  assert_int_equal(r.worker, -1);
  assert_int_equal(r.nc, 0);
  assert_int_equal(r.tid, 200692);
  assert_string_equal(r.source, "neuron_hw");
  assert_true(fmt_npf_row_parse("gid0-nrt-nc0-tid2077393-neuron_rt", &r));
  assert_int_equal(r.worker, 0);
  assert_int_equal(r.nc, 0);
  assert_int_equal(r.tid, 2077393);
  assert_true(fmt_npf_row_parse("tid9-neuron_rt", &r)); /* parts optional */
  assert_int_equal(r.nc, -1);
  assert_int_equal(r.tid, 9);
  assert_true(fmt_npf_row_parse("Thread 4711", &r));
  assert_int_equal(r.tid, 4711);
  assert_string_equal(r.source, "framework");
  const char *bad[] = {"",
                       "neuron_rt",
                       "gid-nc1-tid2-neuron_rt",
                       "gid1-nc1-tid2-framework",
                       "Thread",
                       "Thread 1x",
                       "gid-1-neuron_rt",
                       "TensorMatrix Engine - Row 3"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(fmt_npf_row_parse(bad[i], &r));
}

static void test_processes(void **state) {
  (void)state;
  size_t n;
  int64_t pid;
  assert_true(
      fmt_npf_process_parse("i-0f207fb2a99bd2d08-pid1113579", &n, &pid));
  assert_int_equal(n, strlen("i-0f207fb2a99bd2d08"));
  assert_int_equal(pid, 1113579);
  /* the last "-pid" wins: an instance may hold one */
  assert_true(fmt_npf_process_parse("host-pid-pid12", &n, &pid));
  assert_int_equal(n, strlen("host-pid"));
  assert_int_equal(pid, 12);
  const char *bad[] = {"",          "-pid3",          "i-1-pid",  "i-1-pidx",
                       "i-1-pid-3", "Instructions 1", "i-1-pid3 "};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(fmt_npf_process_parse(bad[i], &n, &pid));
}

static void test_device_rows(void **state) {
  (void)state;
  size_t n;
  assert_true(fmt_npf_row_base("TensorMatrix Engine - Row 3", &n));
  assert_int_equal(n, strlen("TensorMatrix Engine"));
  assert_true(fmt_npf_row_base("qSyncIO0 - Row 0", &n));
  assert_int_equal(n, strlen("qSyncIO0"));
  const char *bad[] = {"",           " - Row 1",   "Vector Engine - Row",
                       "x - Row -1", "x - Row 1a", "Executions"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(fmt_npf_row_base(bad[i], &n));
}

static void test_arg_names(void **state) {
  (void)state;
  const ProtobufCMessageDescriptor *e = &nex__system_event__descriptor;
  const ProtobufCMessageDescriptor *in = &nex__instruction__descriptor;
  const struct {
    const ProtobufCMessageDescriptor *d;
    const char *field, *arg;
  } t[] = {{e, "source", "trace_event_source"}, {e, "nc_idx", "lnc_idx"},
           {e, "exec_id", "exec_id"},           {e, "timestamp", "timestamp"},
           {in, "start_ts", "timestamp"},       {in, "timeline_track", "label"},
           {in, "framework_op", "layer"},       {in, "opcode", "opcode"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(t[i].d, t[i].field);
    assert_non_null(f);
    assert_string_equal(fmt_npf_arg_name(t[i].d, f), t[i].arg);
    assert_ptr_equal(fmt_npf_field(t[i].d, t[i].arg), f);
    assert_ptr_equal(fmt_npf_field(t[i].d, t[i].field), f); /* own name */
  }
  assert_null(fmt_npf_field(e, "instance_id"));
  assert_null(fmt_npf_field(in, "lnc_idx")); /* aliases are per message */
}

static void test_fill(void **state) {
  (void)state;
  struct fmt_npf_args a;
  struct fmt_npf_scratch sc = {0};
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  const char *skip[] = {"instance_id", "process_id", "nope", NULL};
  struct jtok_span got[3];
  assert_true(fmt_npf_args_open(
      &a, " {\"name\":\"nc_exec_running\",\"lnc_idx\":\"3\","
          "\"trace_event_source\":\"neuron_hw\",\"model_id\":"
          "18446744073709551615,\"flow_id\":[\"7\",-1],\"instance_id\":\"i-1\","
          "\"tensor_name\":\"in\\u0030\",\"elements\":1.5,\"exec_id\":\"x\","
          "\"worker_gid\":true,\"process_id\":\"7\",\"process_id\":8} "));
  /* exec_id "x" and worker_gid true do not fit */
  assert_int_equal(fmt_npf_fill(&e.base, &a, skip, got, &sc), 2);
  assert_string_equal(e.name, "nc_exec_running");
  assert_int_equal(e.nc_idx, 3);
  assert_int_equal(e.source, NEX__TRACE_EVENT_SOURCE__NEURON_HW);
  assert_true(e.model_id == UINT64_MAX);
  assert_int_equal(e.n_flow_id, 2);
  assert_true(e.flow_id[0] == 7 && e.flow_id[1] == UINT64_MAX);
  assert_int_equal(e.exec_id, 0);
  assert_int_equal(e.worker_gid, 0);
  assert_int_equal(e.n_attributes, 2);
  assert_string_equal(e.attributes[0]->key, "tensor_name");
  assert_string_equal(e.attributes[0]->value, "in0");
  assert_false(e.attributes[0]->is_number);
  assert_string_equal(e.attributes[1]->key, "elements");
  assert_string_equal(e.attributes[1]->value, "1.5");
  assert_true(e.attributes[1]->is_number);
  /* the skipped keys' values: the last of duplicates; none when absent */
  assert_string_equal(fmt_npf_value_str(&got[0], &sc), "i-1");
  int64_t i;
  uint64_t u;
  double d;
  assert_true(fmt_npf_value_num(&got[1], &i, &u, &d) && i == 8);
  assert_int_equal(got[2].kind, JTOK_NONE);
  assert_null(fmt_npf_value_str(&got[2], &sc));
  assert_false(fmt_npf_value_num(&got[2], &i, &u, &d));
  assert_null(fmt_npf_value_str(&got[1], &sc)); /* a number */
  assert_true(fmt_npf_args_has(&a, "lnc_idx"));
  assert_false(fmt_npf_args_has(&a, "nope"));
  /* the scratch reused: a second message filled after a reset */
  fmt_npf_scratch_reset(&sc);
  Nex__SystemEvent e2 = NEX__SYSTEM_EVENT__INIT;
  assert_true(fmt_npf_args_open(
      &a,
      "{\"a1\":1,\"a2\":\"x\",\"a3\":3,\"a4\":4,\"a5\":[1],"
      "\"a6\":{\"k\":\"v\"},\"name\":\"n\",\"flow_id\":[1,2,3,4,5,6,7,8,9]}"));
  assert_int_equal(fmt_npf_fill(&e2.base, &a, NULL, NULL, &sc), 0);
  assert_int_equal(e2.n_attributes, 6);
  assert_string_equal(e2.attributes[4]->key, "a5");
  assert_string_equal(e2.attributes[4]->value, "[1]");
  assert_string_equal(e2.attributes[5]->key, "a6");
  assert_string_equal(e2.attributes[5]->value, "{\"k\":\"v\"}");
  assert_string_equal(e2.attributes[1]->value, "x");
  assert_string_equal(e2.name, "n");
  assert_int_equal(e2.n_flow_id, 9);
  assert_true(e2.flow_id[0] == 1 && e2.flow_id[8] == 9);
  /* a name means what it means in each message type: "timestamp" is the
   * event's own field, and an instruction's start_ts */
  for (int round = 0; round < 2; round++) {
    assert_true(fmt_npf_args_open(&a, "{\"timestamp\":5,\"opcode\":\"MM\"}"));
    Nex__Instruction in = NEX__INSTRUCTION__INIT;
    Nex__SystemEvent e3 = NEX__SYSTEM_EVENT__INIT;
    assert_int_equal(fmt_npf_fill(&in.base, &a, NULL, NULL, &sc), 0);
    assert_int_equal(fmt_npf_fill(&e3.base, &a, NULL, NULL, &sc), 0);
    assert_int_equal(in.start_ts, 5);
    assert_string_equal(in.opcode, "MM");
    assert_int_equal(e3.timestamp, 5);
    assert_int_equal(e3.n_attributes, 1); /* opcode */
  }
  fmt_npf_scratch_free(&sc);
  assert_false(fmt_npf_args_open(&a, "[1]"));
  assert_true(fmt_npf_args_open(&a, NULL));
  assert_false(fmt_npf_args_has(&a, "name"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows), cmocka_unit_test(test_processes),
      cmocka_unit_test(test_device_rows), cmocka_unit_test(test_arg_names),
      cmocka_unit_test(test_fill)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
