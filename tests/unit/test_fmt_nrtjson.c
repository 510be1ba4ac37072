/* test_fmt_nrtjson.c -- the decoder of the runtime's own JSON event dump
 * (server/input/fmt_nrtjson.c).
 *
 * The hand-written dumps of tests/data/nrtjson/ are decoded to a log with
 * one line per record and compared exactly: every phase, pairing of
 * interleaved spans, the device clock mapped through timestamp_sync (with
 * and without an exec_id), DMA memory records as HBM samples, an unpaired
 * start and stop, bad elements.  Generated files cover gzip, a cut file,
 * the bound on open starts and the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_nrtjson.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct rec {
  struct sbuf log;
  long records, warns, stop_at;
};

/* One line per record: E name ts dur source nc pcore gid tid [fields]
 * [attributes], or H ts device hbm total and the non-zero categories. */
static int on_record(void *ud, uint64_t off, const Nex__NtraceRecord *r) {
  struct rec *x = ud;
  struct sbuf *b = &x->log;
  if (r->record_case == NEX__NTRACE_RECORD__RECORD_HBM) {
    const Nex__HbmUsage *h = r->hbm;
    sbuf_printf(b, "H %" PRId64 " %d %d %" PRIu64, h->timestamp, h->device_idx,
                h->hbm_idx, h->total_bytes);
    if (h->weights_bytes)
      sbuf_printf(b, " weights=%" PRIu64, h->weights_bytes);
    if (h->io_bytes)
      sbuf_printf(b, " io=%" PRIu64, h->io_bytes);
    if (h->unknown_bytes)
      sbuf_printf(b, " unknown=%" PRIu64, h->unknown_bytes);
  } else {
    const Nex__SystemEvent *e = r->event;
    sbuf_printf(b, "E %s %" PRId64 " %" PRId64 " %s %d %d %d %" PRId64, e->name,
                e->timestamp, e->duration,
                e->source == NEX__TRACE_EVENT_SOURCE__NEURON_HW ? "hw" : "rt",
                e->nc_idx, e->pcore_idx, e->worker_gid, e->thread_id);
    if (e->id)
      sbuf_printf(b, " id=%" PRIu64, e->id);
    if (e->exec_id)
      sbuf_printf(b, " exec=%" PRId64, e->exec_id);
    if (e->model_id)
      sbuf_printf(b, " model=%" PRIu64, e->model_id);
    if (*e->model_name)
      sbuf_printf(b, " model_name=%s", e->model_name);
    if (e->size)
      sbuf_printf(b, " size=%" PRIu64, e->size);
    if (e->nrt_sequence_id)
      sbuf_printf(b, " seq=%" PRId64, e->nrt_sequence_id);
    if (e->cpu_timestamp_ns || e->nc_timestamp_ns)
      sbuf_printf(b, " sync=%" PRId64 "/%" PRId64, e->cpu_timestamp_ns,
                  e->nc_timestamp_ns);
    for (size_t i = 0; i < e->n_attributes; i++)
      sbuf_printf(b, " %s=%s%s", e->attributes[i]->key, e->attributes[i]->value,
                  e->attributes[i]->is_number ? "#" : "");
  }
  sbuf_printf(b, " @%" PRIu64 "\n", off);
  return ++x->records == x->stop_at ? 7 : 0;
}

static void on_warning(void *ud, uint64_t off, const char *msg) {
  struct rec *x = ud;
  x->warns++;
  sbuf_printf(&x->log, "W %" PRIu64 " %s\n", off, msg);
}

static int decode(const char *path, struct rec *r,
                  struct fmt_nrtjson_stats *st) {
  struct fmt_nrtjson_cb cb = {r, on_record, on_warning};
  char *cause = NULL;
  return testutil_cause(fmt_nrtjson_read(path, &cb, st, &cause), cause);
}

static const char basic_log[] =
    "E nrt_tensor_write 999100 300 rt 0 -1 0 42 id=2 size=4096 tensor_id=77# "
    "event_type=tensor_write @409\n"
    "E timestamp_sync_point 1000000 0 hw 0 4 0 42 id=4 exec=7 "
    "sync=1000000/5000 event_type=timestamp_sync @569\n"
    "E cc_exec_barrier 1000300 50 hw 0 4 0 42 id=6 model=3 "
    "nc_start_timestamp_ns=5300# nc_stop_timestamp_ns=5350# @1219\n"
    "E nc_exec_running 1000100 500 hw 0 4 0 42 id=5 exec=7 model=3 "
    "nc_start_timestamp_ns=5100# nc_stop_timestamp_ns=5600# @1402\n"
    "E numerical_err 1000700 0 hw 0 4 0 42 id=9 exec=9 model=3 "
    "nc_start_timestamp_ns=5700# nc_stop_timestamp_ns=5700# "
    "event_type=num_err @1585\n"
    "E nrt_execute 999000 2000 rt 0 -1 0 42 id=1 model=3 model_name=m.neff "
    "seq=5 @1808\n"
    "H 998050 0 1 5000 weights=3000 @2215\n"
    "H 1002010 0 1 4500 weights=3000 io=100 @2746\n"
    "E generic 1003000 0 rt 1 -1 1 43 id=15 @2976\n"
    "E nrt_load 1004000 1000 rt 1 -1 1 43 id=16 event_type=model_load "
    "incomplete=1# @3136\n";

static void test_basic(void **state) {
  char *p = testutil_srcpath("tests/data/nrtjson/basic.json");
  struct rec r = {0};
  struct fmt_nrtjson_stats st;
  assert_int_equal(decode(p, &r, &st), 0);
  assert_string_equal(r.log.s, basic_log);
  assert_int_equal(st.records, 10);
  assert_int_equal(st.skipped, 0);
  assert_int_equal(st.unpaired_start, 1); /* model_load */
  assert_int_equal(st.unpaired_stop, 1);  /* cc_load */
  assert_int_equal(st.clock_missing, 1);  /* num_err of exec 9 */
  assert_int_equal(st.data_version, 2);
  assert_int_equal(fmt_nrtjson_probe(p), 1);
  sbuf_free(&r.log);
  free(p);
}

/* Bad elements are skipped with a warning each; the others are read. */
static void test_bad(void **state) {
  char *p = testutil_srcpath("tests/data/nrtjson/bad.json");
  struct rec r = {0};
  struct fmt_nrtjson_stats st;
  assert_int_equal(decode(p, &r, &st), 0);
  assert_string_equal(
      r.log.s,
      "E nrt_execute 10 0 rt 0 -1 0 1 id=1 @11\n"
      "W 150 events: not an object: skipped\n"
      "W 154 event without an event_type: skipped\n"
      "W 199 events: element malformed or larger than 64 MiB: skipped\n"
      "E nrt_tensor_read 20 0 rt 0 -1 0 1 id=3 size=8 "
      "event_type=tensor_read @238\n"
      "W 0 data_version 3: read as version 2\n");
  assert_int_equal(st.records, 2);
  assert_int_equal(st.skipped, 3);
  sbuf_free(&r.log);
  free(p);
}

/* gzip gives the same records; a callback's non-zero return stops the
 * read; a file cut in the middle keeps what came before and makes the
 * starts without their stop incomplete. */
static void test_gzip_cut_and_stop(void **state) {
  char *p = testutil_srcpath("tests/data/nrtjson/basic.json");
  size_t len;
  char *text = testutil_slurp(p, &len);
  char *gz = testutil_path("basic.json.gz");
  gzFile g = gzopen(gz, "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, text, (unsigned)len), (int)len);
  assert_int_equal(gzclose(g), Z_OK);
  struct rec r = {0};
  assert_int_equal(decode(gz, &r, NULL), 0);
  assert_string_equal(r.log.s, basic_log);
  sbuf_free(&r.log);

  struct rec s = {.stop_at = 3};
  assert_int_equal(decode(gz, &s, NULL), 7);
  assert_int_equal(s.records, 3);
  sbuf_free(&s.log);

  /* cut inside the nc_exec_running stop (byte 1450) */
  char *cut = testutil_path("cut.json");
  testutil_write(cut, text, 1450);
  struct rec c = {0};
  struct fmt_nrtjson_stats st;
  assert_int_equal(decode(cut, &c, &st), 0);
  /* the first three records of basic.json, then the cut */
  const char *rest = basic_log;
  for (int k = 0; k < 3; k++)
    rest = strchr(rest, '\n') + 1;
  assert_memory_equal(c.log.s, basic_log, (size_t)(rest - basic_log));
  assert_string_equal(
      c.log.s + (rest - basic_log),
      "W 1402 events: element cut by the end of the file: skipped\n"
      "E nc_exec_running 1000100 250 hw 0 4 0 42 id=5 exec=7 model=3 "
      "nc_start_timestamp_ns=5100# nc_stop_timestamp_ns=5350# "
      "incomplete=1# @793\n"
      "E nrt_execute 999000 400 rt 0 -1 0 42 id=1 model=3 model_name=m.neff "
      "seq=5 incomplete=1# @12\n"
      "W 0 no data_version: read as version 2\n");
  assert_int_equal(st.unpaired_start, 2);
  assert_int_equal(st.skipped, 1);
  sbuf_free(&c.log);
  free(cut);
  free(gz);
  free(text);
  free(p);
}

/* More starts than FMT_NRTJSON_MAX_OPEN without a stop: memory stays
 * bounded, each beyond the bound is reported at once, none is lost. */
static void test_bounded(void **state) {
  char *p = testutil_path("open.json");
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  long n = FMT_NRTJSON_MAX_OPEN + 10;
  fputs("{\"events\":[", f);
  for (long i = 0; i < n; i++)
    fprintf(f,
            "%s{\"event_type\":\"nrt_execute\",\"phase\":\"start\",\"id\":%ld,"
            "\"nc_idx\":0,\"tracking_id\":%ld,\"data\":{},\"timestamp_ns\":"
            "%ld}",
            i ? "," : "", i + 1, i + 1, 1000 + i);
  /* the stop of the first start and of one beyond the bound */
  fprintf(f,
          ",{\"event_type\":\"nrt_execute\",\"phase\":\"stop\",\"nc_idx\":0,"
          "\"tracking_id\":1,\"data\":{},\"timestamp_ns\":%ld}"
          ",{\"event_type\":\"nrt_execute\",\"phase\":\"stop\",\"nc_idx\":0,"
          "\"tracking_id\":%ld,\"data\":{},\"timestamp_ns\":%ld}"
          "],\"data_version\":2}",
          1000 + n, n, 1001 + n);
  assert_int_equal(fclose(f), 0);
  struct rec r = {0};
  struct fmt_nrtjson_stats st;
  assert_int_equal(decode(p, &r, &st), 0);
  assert_int_equal(st.records, n);
  assert_int_equal(st.unpaired_start, n - 1);
  assert_int_equal(st.unpaired_stop, 1);
  assert_int_equal(r.warns, 0);
  assert_non_null(strstr(r.log.s, "E nrt_execute 1000 65546 rt 0 -1 -1 0 "
                                  "id=1 @"));
  /* the start beyond the bound, reported when read */
  assert_non_null(strstr(r.log.s, "E nrt_execute 66545 0 rt 0 -1 -1 0 "
                                  "id=65546 incomplete=1# @"));
  sbuf_free(&r.log);
  unlink(p);
  free(p);
}

/* Reading `text` (NULL: no file) fails with rc and a cause naming why;
 * the probe says 0 (or rc for a missing file). */
static void expect_error(const char *text, int rc, const char *why) {
  char *p = testutil_path("error.json"), *cause = NULL;
  unlink(p);
  if (text)
    testutil_write(p, text, strlen(text));
  assert_int_equal(fmt_nrtjson_read(p, NULL, NULL, &cause), rc);
  assert_non_null(cause);
  assert_non_null(strstr(cause, why));
  assert_int_equal(fmt_nrtjson_probe(p), text ? 0 : rc);
  free(cause);
  free(p);
}

static void test_errors(void **state) {
  expect_error("", -ENODATA, "empty file");
  expect_error("[{\"event_type\": \"x\"}]", -EPROTO,
               "not a runtime event dump (JSON object expected");
  expect_error(NULL, -ENOENT, "error.json");
  /* What the probe takes and leaves. */
  static const struct {
    const char *text;
    int probe;
  } probes[] = {
      {"{\"events\":[],\"data_version\":2}", 1},
      {"{\"data_version\":2,\"events\":[]}", 1},
      {"{\"x\":[1],\"events\":[{\"event_type\":\"generic\"}]}", 1},
      {"{\"events\":[]}", 0},
      {"{\"events\":[{\"name\":\"x\"}],\"data_version\":2}", 0},
      {"{\"traceEvents\":[{\"ph\":\"X\"}]}", 0},
      {"{\"trace_events\":[],\"cpu_util\":[]}", 0},
  };
  char *p = testutil_path("probe.json");
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
    testutil_write(p, probes[i].text, strlen(probes[i].text));
    assert_int_equal(fmt_nrtjson_probe(p), probes[i].probe);
  }
  free(p);
}

static void test_names(void **state) {
  assert_string_equal(fmt_nrtjson_display_name("tensor_write"),
                      "nrt_tensor_write");
  assert_string_equal(fmt_nrtjson_display_name("nc_exec_running"),
                      "nc_exec_running");
  assert_string_equal(fmt_nrtjson_runtime_name("timestamp_sync_point"),
                      "timestamp_sync");
  assert_string_equal(fmt_nrtjson_runtime_name("nrt_execute"), "nrt_execute");
}

/* Replays the hand-written files and every tests/data/regress/nrtjson-*
 * input through the fuzz target (its invariants: messages that pack,
 * valid UTF-8, no negative duration, counts that agree). */
static void test_regress_inputs(void **state) {
  int n = testutil_replay("tests/data/nrtjson", "");
  int m = testutil_replay("tests/data/regress", "nrtjson-");
  assert_true(n >= 3);
  printf("# %d data files and %d regression inputs replayed\n", n, m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_bad),
      cmocka_unit_test(test_gzip_cut_and_stop),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
