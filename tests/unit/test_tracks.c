/* test_tracks.c -- display names per grouping mode (doc/api.md), tree
 * order, merging of base tracks, and the Host check of net.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "hostcheck.h"
#include "tracks.h"

#define NONE TRACKS_NONE

static struct tracks_row row(const char *source, int64_t pid, int64_t tid,
                             int64_t nc, int64_t pcore, int64_t worker) {
  struct tracks_row r = {.kind = "slices",
                         .domain = "system",
                         .source = source,
                         .instance_id = "i-0b1e",
                         .pid = pid,
                         .tid = tid,
                         .nc = nc,
                         .pcore = pcore,
                         .worker = worker,
                         .stream = NONE,
                         .device = NONE,
                         .hbm = NONE,
                         .lanes = 1,
                         .event_count = 10};
  return r;
}

static void name_is(const struct tracks_row *r, enum tracks_mode m,
                    const char *want) {
  char *got = tracks_name(r, m);
  assert_string_equal(got, want);
  free(got);
}

static void test_event_names(void **state) {
  struct tracks_row rt = row("neuron_rt", 1765325, 77, 0, NONE, NONE);
  struct tracks_row hw = row("neuron_hw", 1765325, NONE, 0, 4, 2);
  struct tracks_row fw = row("framework", 1765325, 77, NONE, NONE, NONE);
  struct tracks_row fs = fw;
  struct tracks_row rt_nonc = row("neuron_rt", 1765325, 78, NONE, NONE, NONE);
  fs.stream = 9;
  name_is(&rt, TRACKS_DEFAULT, "i-0b1e/PID:1765325/neuron_rt/NC:0");
  name_is(&hw, TRACKS_DEFAULT, "i-0b1e/PID:1765325/neuron_hw/NC0:4");
  name_is(&fw, TRACKS_DEFAULT, "i-0b1e/PID:1765325/framework/TID:77");
  name_is(&fs, TRACKS_DEFAULT, "i-0b1e/PID:1765325/framework/Stream:9");
  name_is(&rt_nonc, TRACKS_DEFAULT, "i-0b1e/PID:1765325/neuron_rt/TID:78");
  name_is(&rt, TRACKS_CPU_DEVICE, "i-0b1e/PID:1765325/TID:77/neuron_rt");
  name_is(&fw, TRACKS_CPU_DEVICE, "i-0b1e/PID:1765325/TID:77/framework");
  name_is(&hw, TRACKS_CPU_DEVICE, "i-0b1e/PID:1765325/Worker:2/neuron_hw");
  name_is(&rt, TRACKS_NEURONCORE, "i-0b1e/NC:0");
  name_is(&hw, TRACKS_NEURONCORE, "i-0b1e/NC:0");
  name_is(&fw, TRACKS_NEURONCORE, "i-0b1e/PID:1765325/TID:77");
  name_is(&rt, TRACKS_THREAD, "i-0b1e/PID:1765325/TID:77");
  name_is(&rt, TRACKS_PROCESS, "i-0b1e/PID:1765325");
  name_is(&hw, TRACKS_INSTANCE, "i-0b1e");
}

static void test_extra_names(void **state) {
  struct tracks_row h = row("neuron_hbm_usage", 1, NONE, NONE, NONE, NONE);
  h.kind = "counter";
  h.device = 2;
  h.hbm = 1;
  name_is(&h, TRACKS_THREAD, "i-0b1e/ND:2/HBM:1/neuron_hbm_usage");
  struct tracks_row t = row("host_to_device_transfers", 1, NONE, 3, NONE, NONE);
  name_is(&t, TRACKS_DEFAULT, "i-0b1e/NC:3/host_to_device_transfers");
  struct tracks_row bw =
      row("device_to_host_bandwidth", 1, NONE, 3, NONE, NONE);
  bw.kind = "counter";
  name_is(&bw, TRACKS_INSTANCE,
          "i-0b1e/NC:3/device_to_host/transfer_bandwidth");
  struct tracks_row cpu = row("host_cpu_util", NONE, NONE, NONE, NONE, NONE);
  cpu.kind = "counter";
  cpu.cpu_id = "12";
  name_is(&cpu, TRACKS_DEFAULT, "i-0b1e/CPU:12/host_cpu_util");
  struct tracks_row mem = cpu;
  mem.source = "host_mem";
  name_is(&mem, TRACKS_DEFAULT, "i-0b1e/host_memory_usage");
}

static void test_device_names(void **state) {
  struct tracks_row e = row("engine", NONE, NONE, NONE, 0, NONE);
  e.domain = "device";
  e.label = "TensorMatrix";
  name_is(&e, TRACKS_DEVICE, "TensorMatrix");
  e.source = "dma";
  e.label = "qSyncIO0";
  name_is(&e, TRACKS_DEVICE, "DMA/qSyncIO0");
  e.source = "semaphore";
  e.label = "S[3]";
  name_is(&e, TRACKS_DEVICE, "Semaphore/S[3]");
  e.source = "sbuf";
  name_is(&e, TRACKS_DEVICE, "sbuf_usage");
  e.source = "mfu";
  name_is(&e, TRACKS_DEVICE, "mfu_estimated");
  e.source = "dma_throughput";
  name_is(&e, TRACKS_DEVICE, "dma_throughput");
}

static const char *name_at(json_t *list, size_t i) {
  return json_string_value(json_object_get(json_array_get(list, i), "name"));
}

static void test_group_order(void **state) {
  struct tracks_row r[7] = {
      row("neuron_hw", 10, NONE, 0, 0, 0),
      row("neuron_rt", 10, 5, 0, NONE, NONE),
      row("framework", 10, 5, NONE, NONE, NONE),
      row("neuron_rt", 2, 6, 0, NONE, NONE),
      row("neuron_rt", 10, 6, 0, NONE, NONE),
      row("host_cpu_util", NONE, NONE, NONE, NONE, NONE),
      row("neuron_hbm_usage", NONE, NONE, NONE, NONE, NONE)};
  for (int i = 0; i < 7; i++)
    r[i].id = i + 1;
  r[5].kind = r[6].kind = "counter";
  r[5].cpu_id = "0";
  r[6].device = r[6].hbm = 0;
  json_t *g = tracks_group(r, 7, TRACKS_DEFAULT);
  assert_int_equal(json_array_size(g), 6);
  assert_string_equal(name_at(g, 0), "i-0b1e/PID:2/neuron_rt/NC:0");
  assert_string_equal(name_at(g, 1), "i-0b1e/PID:10/framework/TID:5");
  assert_string_equal(name_at(g, 2), "i-0b1e/PID:10/neuron_rt/NC:0");
  assert_string_equal(name_at(g, 3), "i-0b1e/PID:10/neuron_hw/NC0:0");
  assert_string_equal(name_at(g, 4), "i-0b1e/ND:0/HBM:0/neuron_hbm_usage");
  assert_string_equal(name_at(g, 5), "i-0b1e/CPU:0/host_cpu_util");
  json_t *rt = json_array_get(g, 2); /* two threads' runtime tracks merged */
  assert_int_equal(json_integer_value(json_object_get(rt, "lanes")), 2);
  assert_int_equal(json_integer_value(json_object_get(rt, "event_count")), 20);
  assert_int_equal(json_array_size(json_object_get(rt, "base")), 2);
  assert_string_equal(json_string_value(json_object_get(rt, "id")),
                      "default:i-0b1e/PID:10/neuron_rt/NC:0");
  assert_string_equal(json_string_value(json_object_get(rt, "group")),
                      "i-0b1e/PID:10/neuron_rt");
  assert_true(
      json_is_true(json_object_get(json_array_get(g, 5), "hidden_by_default")));
  assert_null(json_object_get(json_array_get(g, 4), "hidden_by_default"));
  json_decref(g);
  g = tracks_group(r, 5, TRACKS_PROCESS);
  assert_int_equal(json_array_size(g), 2);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(g, 1), "source")),
      "mixed");
  json_decref(g);
}

/* A track of a standalone Chrome trace (sort indexes unset). */
static struct tracks_row chrome_row(int64_t pid, const char *pname,
                                    const char *labels, int64_t tid,
                                    const char *tname) {
  struct tracks_row r = row("framework", pid, tid, NONE, NONE, NONE);
  r.instance_id = "rank 0";
  r.chrome = 1;
  r.pname = pname;
  r.plabels = labels;
  r.tname = tname;
  r.psort = r.tsort = NONE;
  return r;
}

static void test_chrome_names(void **state) {
  struct tracks_row cpu = chrome_row(2910249, "python3.10", "CPU", 2919752,
                                     "thread 2919752 (pt_autograd_0)");
  struct tracks_row gpu = chrome_row(0, "python3.10", "GPU 0", 7, "stream 7 ");
  struct tracks_row bare = chrome_row(12, NULL, NULL, 13, NULL);
  struct tracks_row text = chrome_row(-1, "Spans", NULL, -2, "PyTorch Profiler");
  struct tracks_row slash = chrome_row(3, "a/b", " ", 4, "WorkerPool/4");
  text.pnamed = text.tnamed = 1;
  name_is(&cpu, TRACKS_DEFAULT,
          "rank 0/python3.10 2910249 (CPU)/thread 2919752 (pt_autograd_0)");
  name_is(&gpu, TRACKS_DEFAULT, "rank 0/python3.10 0 (GPU 0)/stream 7");
  name_is(&gpu, TRACKS_THREAD, "rank 0/python3.10 0 (GPU 0)/stream 7");
  name_is(&gpu, TRACKS_PROCESS, "rank 0/python3.10 0 (GPU 0)");
  name_is(&gpu, TRACKS_INSTANCE, "rank 0");
  name_is(&bare, TRACKS_CPU_DEVICE, "rank 0/Process 12/Thread 13");
  name_is(&text, TRACKS_NEURONCORE, "rank 0/Spans/PyTorch Profiler");
  name_is(&slash, TRACKS_DEFAULT, "rank 0/a\xe2\x88\x95"
                                  "b 3/WorkerPool\xe2\x88\x95"
                                  "4");
  /* inside a Neuron process folder: the framework layer stays */
  struct tracks_row fw = row("framework", 1765325, 77, NONE, NONE, NONE);
  fw.tname = "MainThread";
  name_is(&fw, TRACKS_DEFAULT, "i-0b1e/PID:1765325/framework/MainThread 77");
  name_is(&fw, TRACKS_THREAD, "i-0b1e/PID:1765325/TID:77");
}

static void test_chrome_order(void **state) {
  struct tracks_row r[5] = {
      chrome_row(2910249, "python3.10", "CPU", 2910249, "main"),
      chrome_row(2910249, "python3.10", "CPU", 2919752, "autograd"),
      chrome_row(0, "python3.10", "GPU 0", 7, "stream 7"),
      chrome_row(0, "python3.10", "GPU 0", 40, "stream 40"),
      chrome_row(-1, "Spans", NULL, -2, "PyTorch Profiler")};
  r[0].psort = r[1].psort = 2910249;
  r[2].psort = r[3].psort = 16777216;
  r[0].tsort = 5; /* thread sort indexes, not tids: autograd first */
  r[1].tsort = 1;
  r[4].pnamed = r[4].tnamed = 1;
  for (int i = 0; i < 5; i++)
    r[i].id = i + 1;
  json_t *g = tracks_group(r, 5, TRACKS_DEFAULT);
  assert_int_equal(json_array_size(g), 5);
  assert_string_equal(name_at(g, 0), "rank 0/python3.10 2910249 (CPU)/autograd "
                                     "2919752");
  assert_string_equal(name_at(g, 1), "rank 0/python3.10 2910249 (CPU)/main "
                                     "2910249");
  assert_string_equal(name_at(g, 2), "rank 0/python3.10 0 (GPU 0)/stream 7");
  assert_string_equal(name_at(g, 3), "rank 0/python3.10 0 (GPU 0)/stream 40");
  assert_string_equal(name_at(g, 4), "rank 0/Spans/PyTorch Profiler");
  json_decref(g);
}

static void test_modes(void **state) {
  enum tracks_mode m;
  assert_int_equal(tracks_mode_parse(NULL, &m), 0);
  assert_int_equal(m, TRACKS_DEFAULT);
  assert_int_equal(tracks_mode_parse("neuroncore", &m), 0);
  assert_int_equal(m, TRACKS_NEURONCORE);
  assert_int_equal(tracks_mode_parse("device", &m), -EINVAL);
  assert_int_equal(tracks_mode_parse("Default", &m), -EINVAL);
  assert_string_equal(tracks_mode_name(TRACKS_CPU_DEVICE), "cpu_device");
}

static void test_host_allowed(void **state) {
  assert_true(hostcheck_allowed("localhost", "127.0.0.1"));
  assert_true(hostcheck_allowed("localhost:3001", "127.0.0.1"));
  assert_true(hostcheck_allowed("LocalHost:1", "127.0.0.1"));
  assert_true(hostcheck_allowed("127.0.0.1:3001", "127.0.0.1"));
  assert_true(hostcheck_allowed("[::1]:3001", "127.0.0.1"));
  assert_true(hostcheck_allowed("[::1]", "127.0.0.1"));
  assert_false(hostcheck_allowed("evil.com", "127.0.0.1"));
  assert_false(hostcheck_allowed("localhost.evil.com", "127.0.0.1"));
  assert_false(hostcheck_allowed("localhost:30x1", "127.0.0.1"));
  assert_false(hostcheck_allowed("localhost:", "127.0.0.1"));
  assert_false(hostcheck_allowed("[::1", "127.0.0.1"));
  assert_false(hostcheck_allowed("", "127.0.0.1"));
  assert_false(hostcheck_allowed("10.0.0.5:3001", "0.0.0.0"));
  assert_true(hostcheck_allowed("10.0.0.5:3001", "10.0.0.5"));
  assert_true(hostcheck_allowed("[fe80::1]:3001", "fe80::1"));
  assert_false(hostcheck_allowed("[fe80::2]:3001", "fe80::1"));
}

static void test_host_same_origin(void **state) {
  (void)state;
  const char *h = "localhost:3001";
  assert_true(hostcheck_same_origin(NULL, NULL, h)); /* curl, scripts */
  assert_true(hostcheck_same_origin("same-origin", "http://localhost:3001", h));
  assert_true(hostcheck_same_origin("none", NULL, h));
  assert_true(hostcheck_same_origin(NULL, "HTTPS://LOCALHOST:3001", h));
  assert_false(hostcheck_same_origin("cross-site", NULL, h));
  assert_false(hostcheck_same_origin("same-site", "http://localhost:3001", h));
  assert_false(hostcheck_same_origin(NULL, "http://evil.com", h));
  assert_false(hostcheck_same_origin(NULL, "http://localhost:3002", h));
  assert_false(hostcheck_same_origin(NULL, "localhost:3001", h));
  assert_false(hostcheck_same_origin(NULL, "null", h));
  assert_false(hostcheck_same_origin(NULL, "http://localhost:3001", NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_event_names),  cmocka_unit_test(test_extra_names),
      cmocka_unit_test(test_device_names), cmocka_unit_test(test_group_order),
      cmocka_unit_test(test_modes),        cmocka_unit_test(test_host_allowed),
      cmocka_unit_test(test_chrome_names), cmocka_unit_test(test_chrome_order),
      cmocka_unit_test(test_host_same_origin)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
