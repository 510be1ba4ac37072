/* test_fmt_vjson.c -- the decoder of the vendor's JSON exports
 * (server/fmt_vjson.c).
 *
 * The hand-made exports of tests/data/vjson/ are decoded to a log with one
 * line per record -- every field that is not at its default, printed with
 * the message descriptor -- and compared exactly; generated files cover
 * gzip, big sections and the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_vjson.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char *data_path(const char *name) {
  return testutil_srcpath("tests/data/vjson/%s", name);
}

/* ------------------------------------------------------------ recorder */

struct rec {
  struct sbuf log;
  int keep_log;
  long records, warns, stop_at;
};

/* Appends " field=value" for every field of m not at its default (0, "",
 * -1 for nc_idx, pcore_idx and worker_gid, which the decoder defaults to);
 * attributes as key=value, with '#' after numbers. */
static void print_msg(struct sbuf *b, const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *at = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
      if (!n)
        continue;
      sbuf_printf(b, " %s=[", f->name);
      for (size_t j = 0; j < n; j++) {
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
          const Nex__Attribute *a = (*(Nex__Attribute *const *const *)at)[j];
          sbuf_printf(b, "%s%s=%s%s", j ? "," : "", a->key, a->value,
                      a->is_number ? "#" : "");
        } else if (f->type == PROTOBUF_C_TYPE_STRING) {
          sbuf_printf(b, "%s%s", j ? "," : "", (*(char *const *const *)at)[j]);
        } else {
          sbuf_printf(b, "%s%" PRIu64, j ? "," : "",
                      (*(const uint64_t *const *)at)[j]);
        }
      }
      sbuf_addc(b, ']');
      continue;
    }
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_ENUM: {
      int32_t v = *(const int32_t *)at;
      int minus = !strcmp(f->name, "nc_idx") || !strcmp(f->name, "pcore_idx") ||
                  !strcmp(f->name, "worker_gid");
      if (v && !(minus && v == -1))
        sbuf_printf(b, " %s=%d", f->name, v);
      if (minus && v == 0)
        sbuf_printf(b, " %s=0", f->name);
      break;
    }
    case PROTOBUF_C_TYPE_UINT32:
      if (*(const uint32_t *)at)
        sbuf_printf(b, " %s=%u", f->name, *(const uint32_t *)at);
      break;
    case PROTOBUF_C_TYPE_INT64:
      if (*(const int64_t *)at)
        sbuf_printf(b, " %s=%" PRId64, f->name, *(const int64_t *)at);
      break;
    case PROTOBUF_C_TYPE_UINT64:
      if (*(const uint64_t *)at)
        sbuf_printf(b, " %s=%" PRIu64, f->name, *(const uint64_t *)at);
      break;
    case PROTOBUF_C_TYPE_DOUBLE:
      if (*(const double *)at != 0)
        sbuf_printf(b, " %s=%.17g", f->name, *(const double *)at);
      break;
    case PROTOBUF_C_TYPE_STRING: {
      const char *s = *(char *const *)at;
      if (s && *s)
        sbuf_printf(b, " %s=%s", f->name, s);
      break;
    }
    default:
      sbuf_printf(b, " %s=?", f->name);
    }
  }
}

static int rec_add(struct rec *r, const char *kind,
                   const struct fmt_vjson_origin *o,
                   const ProtobufCMessage *m) {
  struct sbuf b = {0};
  sbuf_printf(&b, "%s|%s|%s|%s|", kind, o->section, o->instance_id,
              o->process_id);
  if (m)
    print_msg(&b, m);
  if (r->keep_log) {
    sbuf_adds(&r->log, b.s);
    sbuf_addc(&r->log, '\n');
  }
  sbuf_free(&b);
  r->records++;
  return r->stop_at && r->records == r->stop_at ? 9 : 0;
}

static int rec_ntrace(void *ud, const struct fmt_vjson_origin *o,
                      const Nex__NtraceRecord *r) {
  return rec_add(
      ud, r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT ? "event" : "hbm",
      o,
      r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT ? &r->event->base
                                                         : &r->hbm->base);
}

static int rec_cpu(void *ud, const struct fmt_vjson_origin *o,
                   const Nex__CpuUsage *c) {
  return rec_add(ud, "cpu", o, &c->base);
}

static int rec_mem(void *ud, const struct fmt_vjson_origin *o,
                   const Nex__HostMemUsage *m) {
  return rec_add(ud, "mem", o, &m->base);
}

static int rec_info(void *ud, const struct fmt_vjson_origin *o,
                    const Nex__TraceInfo *t) {
  return rec_add(ud, "info", o, &t->base);
}

static int rec_devprof(void *ud, const struct fmt_vjson_origin *o, int nc,
                       const char *name) {
  char *kind = xasprintf("device_profile nc=%d name=%s", nc, name);
  int rc = rec_add(ud, kind, o, NULL);
  free(kind);
  return rc;
}

static int rec_ntff(void *ud, const struct fmt_vjson_origin *o,
                    const Nex__NtffRecord *r) {
  return rec_add(ud,
                 r->record_case == NEX__NTFF_RECORD__RECORD_INSTRUCTION
                     ? "instruction"
                     : "dma",
                 o,
                 r->record_case == NEX__NTFF_RECORD__RECORD_INSTRUCTION
                     ? &r->instruction->base
                     : &r->dma->base);
}

static int rec_other(void *ud, const struct fmt_vjson_origin *o,
                     Nex__Attribute *const *a, size_t n) {
  struct sbuf b = {0};
  sbuf_adds(&b, "other");
  for (size_t i = 0; i < n; i++)
    sbuf_printf(&b, " %s=%s%s", a[i]->key, a[i]->value,
                a[i]->is_number ? "#" : "");
  int rc = rec_add(ud, b.s, o, NULL);
  sbuf_free(&b);
  return rc;
}

static void rec_warning(void *ud, uint64_t off, const char *msg) {
  struct rec *r = ud;
  if (r->keep_log)
    sbuf_printf(&r->log, "W|%" PRIu64 "|%s\n", off, msg);
  r->warns++;
}

static int decode(const char *path, struct rec *r, struct fmt_vjson_stats *st) {
  struct fmt_vjson_cb cb = {r,        rec_ntrace, rec_cpu,
                            rec_mem,  rec_info,   rec_devprof,
                            rec_ntff, rec_other,  rec_warning};
  char *cause = NULL;
  int rc = fmt_vjson_read(path, &cb, st, &cause);
  return testutil_cause(rc, cause);
}

/* Compares the log with expected lines; "W|@<marker>|..." stands for the
 * offset of <marker> in the file. */
static void expect_log(const char *file, const char *log,
                       const char *const *lines) {
  struct sbuf want = {0};
  for (int i = 0; lines[i]; i++) {
    if (!strncmp(lines[i], "W|@", 3)) {
      const char *bar = strchr(lines[i] + 3, '|');
      char *marker = xstrndup(lines[i] + 3, (size_t)(bar - lines[i] - 3));
      const char *m = strstr(file, marker);
      assert_non_null(m);
      sbuf_printf(&want, "W|%ld%s\n", (long)(m - file), bar);
      free(marker);
    } else {
      sbuf_printf(&want, "%s\n", lines[i]);
    }
  }
  if (strcmp(want.s, log))
    print_error("expected:\n%s\ngot:\n%s\n", want.s, log);
  assert_string_equal(want.s, log);
  sbuf_free(&want);
}

/* ------------------------------------------------------------ tests */

static const char *const system_lines[] = {
    "info|system_profile_metadata|i-0f207fb2a99bd2d08|1627711| "
    "instance_id=i-0f207fb2a99bd2d08 process_id=1627711 "
    "first_ts_ns=1729888371000000000 last_ts_ns=1729888383000000000 "
    "hbm_capacity_bytes=17179869184 ntff_version=2 "
    "attributes=[tool_version=2.30]",
    "device_profile nc=0 "
    "name=i-0f207fb2a99bd2d08_pid_1627711_nc_0_session_0|device_profile_list|"
    "||",
    "device_profile nc=1 "
    "name=i-0f207fb2a99bd2d08_pid_1627711_nc_1_session_0|device_profile_list|"
    "i-0f207fb2a99bd2d08||",
    "W|@{\"nc_id\": 2}|device_profile_list: entry without "
    "device_profile_name: skipped",
    /* the legacy group names the NeuronCore; size is a string */
    "event|trace_events|i-0f207fb2a99bd2d08|1627711| id=1 "
    "name=nrt_tensor_write timestamp=1729888371056597613 duration=27094 "
    "thread_id=1627711 nc_idx=0 type=11 size=4 "
    "attributes=[group=nrt-nc-000,tensor_id=4900392441224765051,tensor_name="
    "_unknown_]",
    /* type 99999: a framework event; flow ids from strings */
    "event|trace_events|i-0f207fb2a99bd2d08|701| "
    "name=PjitFunction(matmul_allgather) timestamp=1729888382798557372 "
    "duration=3758079 source=3 thread_id=80375131 "
    "flow_id=[281474976710685,13] type=99999 "
    "attributes=[group=framework-80375131]",
    /* start_ts/end_ts, the source by name, raw device clock kept */
    "event|trace_events|i-1|1765325| id=1125899906844011 name=nc_exec_running "
    "timestamp=1766072157039689700 duration=228496 source=2 nc_idx=1 "
    "pcore_idx=1 worker_gid=1 exec_id=1 model_id=605291374318702 "
    "model_name=file.neff "
    "attributes=[nc_start_timestamp_ns=1543032702#,nc_stop_timestamp_ns="
    "1543261198#,device_core_idx=1#]",
    /* what does not convert stays as an attribute */
    "event|trace_events||| name=odd timestamp=12 thread_id=-5 "
    "flow_id=[844424930131980,13] "
    "attributes=[id=abc,nc_idx=n/a,model_name={\"a\": [1, null]}]",
    "W|@[1],|trace_events: element is not an object: skipped",
    "W|@\"scalar\"|trace_events: element is not an object: skipped",
    "W|@{\"name\": \"cut\"|trace_events: element malformed: skipped",
    "event|trace_events||| id=18446744073709551615 name=after_bad "
    "timestamp=5",
    "W|@{\"duration\": 1, \"instance_id\": \"i-0f2\"|mem_usage: field \"swap\" "
    "has no place in the record: "
    "dropped (reported once)",
    "mem|mem_usage|i-0f2|| timestamp=1729888371000000000 "
    "used_bytes=51805806592 used_percent=9.7280999999999995",
    "cpu|cpu_util|i-0f2|| timestamp=1729888371000000000 cpu_id=47 "
    "util_percent=2.3255813000000001",
    "W|@{\"cpu_id\": \"average\"|cpu_util: field \"swap\" has no place in the "
    "record: "
    "dropped (reported once)",
    "cpu|cpu_util||| timestamp=1729888372000000000 cpu_id=average "
    "util_percent=3.5",
    "W|@{\"timestamp\": 1729888371000000000, \"device_idx\"|hbm_usage: field "
    "\"mystery_bytes\" has no place in "
    "the record: dropped (reported once)",
    "hbm|hbm_usage||| timestamp=1729888371000000000 hbm_idx=1 "
    "total_bytes=1073741824 weights_bytes=536870912",
    "other version=2.30|version|||",
    "event|trace_event||| name=nrt_execute timestamp=100 duration=5 "
    "model_name=m flop_count=16384 mac_count=8192 "
    "attributes=[event_type=Neuron_Runtime_API_Event]",
    "event|trace_event||| name=fw timestamp=200 duration=3 source=3 "
    "attributes=[event_type=Framework_Event]",
    "W|@2\n  }|trace_event: \"count\" is not a list of records: skipped", NULL};

static void test_system(void **state) {
  char *path = data_path("system_profile.json");
  size_t len;
  char *file = testutil_slurp(path, &len);
  struct rec r = {.keep_log = 1};
  struct fmt_vjson_stats st;
  assert_int_equal(decode(path, &r, &st), 0);
  expect_log(file, r.log.s, system_lines);
  assert_int_equal(st.kind, FMT_VJSON_SYSTEM);
  assert_int_equal(st.records, 15);
  assert_int_equal(st.skipped, 5);
  assert_int_equal(st.bytes, len);
  assert_int_equal(fmt_vjson_probe(path), FMT_VJSON_SYSTEM);
  sbuf_free(&r.log);
  free(file);
  free(path);
}

static void test_device(void **state) {
  static const char *const lines[] = {
      "other ntff_filename=a.ntff neff_id=123|profile_info|||",
      "other total_time=1.5# event_count=10# name=s|summary|||",
      /* a negative id keeps its 64 bits */
      "instruction|instruction||| start_ts=10261883214 duration_ns=148 "
      "timeline_track=TensorMatrix opcode=MATMUL operands=S[5] "
      "(Tensor)++@complete acc_flags=3 id=13835058055282163712 pc=15013 "
      "hlo_name=%add.1 = add(%dot, %custom-call.44) framework_op=Unknown "
      "inst_dep_ids=[10463,61990] "
      "attributes=[elements=53248#,hlo_attrs=[],subgroup=Tensor]",
      /* numbers as strings, hex, a fraction of ns rounded; a list of ids
       * as a string */
      "instruction|instruction||| start_ts=10261883400 duration_ns=3 "
      "opcode=ACT pc=16 inst_dep_ids=[13835058055282163712]",
      "dma|dma||| start_ts=10261883214 duration_ns=50 queue_type=qSyncIO "
      "read_bytes=4096 transfer_bytes=4096 variable=w "
      "attributes=[source=[[\"WEIGHT\"]],dest=[\"SB\"],subgraph=sg00,"
      "read_shape=[1,4096],tensor_name=w0,label=q]",
      "other load_to_sbuf_dma_count=3# tensor_name=t "
      "tensor_size_bytes=12#|annotation|||",
      "other dma_extra=7#|dma_extra|||", NULL};
  char *path = data_path("device_profile_model_1.json");
  size_t len;
  char *file = testutil_slurp(path, &len);
  struct rec r = {.keep_log = 1};
  struct fmt_vjson_stats st;
  /* the file ends without its closing brace: read up to there */
  assert_int_equal(decode(path, &r, &st), 0);
  expect_log(file, r.log.s, lines);
  assert_int_equal(st.kind, FMT_VJSON_DEVICE);
  assert_int_equal(st.records, 7);
  assert_int_equal(st.skipped, 0);
  assert_int_equal(fmt_vjson_probe(path), FMT_VJSON_DEVICE);
  sbuf_free(&r.log);
  free(file);
  free(path);
}

static void test_gzip_and_stop(void **state) {
  char *plain = data_path("system_profile.json"),
       *gz = testutil_path("sp.json.gz");
  size_t len;
  char *file = testutil_slurp(plain, &len);
  gzFile g = gzopen(gz, "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, file, (unsigned)len), (int)len);
  assert_int_equal(gzclose(g), Z_OK);
  struct rec a = {.keep_log = 1}, b = {.keep_log = 1}, c = {.stop_at = 3};
  assert_int_equal(decode(plain, &a, NULL), 0);
  assert_int_equal(decode(gz, &b, NULL), 0);
  assert_string_equal(a.log.s, b.log.s);
  assert_int_equal(fmt_vjson_probe(gz), FMT_VJSON_SYSTEM);
  /* a callback's non-zero return stops the read and is returned */
  assert_int_equal(decode(gz, &c, NULL), 9);
  assert_int_equal(c.records, 3);
  sbuf_free(&a.log);
  sbuf_free(&b.log);
  free(file);
  free(plain);
  free(gz);
}

static void test_large(void **state) {
  /* 300k events (~60 MB) through the gzip window and the mapped file. */
  const long n = 300000;
  char *paths[] = {testutil_path("big.json"), testutil_path("big.json.gz")};
  FILE *f = fopen(paths[0], "wb");
  gzFile g = gzopen(paths[1], "wb1");
  struct sbuf b = {0};
  assert_non_null(f);
  assert_non_null(g);
  sbuf_adds(&b, "{\"instruction\": [\n");
  for (long i = 0; i < n; i++) {
    sbuf_printf(&b,
                "  {\"timestamp\": %ld, \"duration\": %ld, \"label\": "
                "\"Vector\", \"opcode\": \"TENSOR_TENSOR\", \"operands\": "
                "\"src=fp32@0x%lx dst=0x2000000 3*128\", \"pc\": %ld, \"id\": "
                "\"%ld\", \"hlo_name\": \"%%add.%ld\"}%s\n",
                1000 + i * 7, i % 50, i * 64, i, i + 1, i % 100,
                i == n - 1 ? "" : ",");
    assert_int_equal(fwrite(b.s, 1, b.len, f), b.len);
    assert_int_equal(gzwrite(g, b.s, (unsigned)b.len), (int)b.len);
    sbuf_reset(&b);
  }
  sbuf_adds(&b, "]}\n");
  assert_int_equal(fwrite(b.s, 1, b.len, f), b.len);
  assert_int_equal(gzwrite(g, b.s, (unsigned)b.len), (int)b.len);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(gzclose(g), Z_OK);
  sbuf_free(&b);
  for (int i = 0; i < 2; i++) {
    struct rec r = {0};
    struct fmt_vjson_stats st;
    assert_int_equal(decode(paths[i], &r, &st), 0);
    assert_int_equal(st.records, n);
    assert_int_equal(r.records, n);
    assert_int_equal(r.warns, 0);
    assert_int_equal(st.kind, FMT_VJSON_DEVICE);
    unlink(paths[i]);
    free(paths[i]);
  }
}

static void test_errors(void **state) {
  static const struct {
    const char *name, *text;
    int rc, probe;
    const char *cause;
  } cases[] = {
      {"empty.json", "", -ENODATA, FMT_VJSON_NONE, "empty file"},
      {"array.json", "[{\"ph\": \"X\"}]", -EPROTO, FMT_VJSON_NONE,
       "JSON object expected"},
      {"chrome.json", "{\"schemaVersion\": 1, \"traceEvents\": []}", -EPROTO,
       FMT_VJSON_NONE, "a Chrome trace"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = testutil_path(cases[i].name), *cause = NULL;
    testutil_write(p, cases[i].text, strlen(cases[i].text));
    assert_int_equal(fmt_vjson_read(p, NULL, NULL, &cause), cases[i].rc);
    assert_non_null(cause);
    assert_non_null(strstr(cause, cases[i].cause));
    assert_int_equal(fmt_vjson_probe(p), cases[i].probe);
    free(cause);
    free(p);
  }
  char *missing = testutil_path("missing.json"), *cause = NULL;
  assert_int_equal(fmt_vjson_read(missing, NULL, NULL, &cause), -ENOENT);
  free(cause);
  assert_int_equal(fmt_vjson_probe(missing), -ENOENT);
  free(missing);
  /* Unknown keys first, then a known one: still recognised. */
  char *p = testutil_path("late.json");
  const char *t = "{\"x\": {\"y\": [1, 2]}, \"cpu_util\": []}";
  testutil_write(p, t, strlen(t));
  assert_int_equal(fmt_vjson_probe(p), FMT_VJSON_SYSTEM);
  free(p);
}

/* Replays the hand-made files and every tests/data/regress/vjson-* input
 * through the fuzz target (its invariants: valid UTF-8, args that parse,
 * messages that pack). */
static void test_regress_inputs(void **state) {
  int n = testutil_replay("tests/data/vjson", "");
  int m = testutil_replay("tests/data/regress", "vjson-");
  assert_true(n >= 2);
  printf("# %d data files and %d regression inputs replayed\n", n, m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system),
      cmocka_unit_test(test_device),
      cmocka_unit_test(test_gzip_and_stop),
      cmocka_unit_test(test_large),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
