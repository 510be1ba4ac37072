/* test_fmt_perfetto.c -- the Perfetto protobuf decoder
 * (server/input/fmt_perfetto*.c).
 *
 * Perfetto's own TrackEvent diff tests (tests/data/perfetto/, see its
 * README.md) are decoded and compared with the rows Perfetto's
 * trace_processor expects for them: names, timestamps, durations, tracks,
 * flows, counters and args.  Packets built here with the generated
 * protobuf-c code cover interning, incremental state, clocks, gzip and the
 * error paths; the fixtures and tests/data/regress/perfetto-* are replayed
 * through the fuzz target.  The wire walker that reads track event packets
 * without protobuf-c's unpacker is compared with it packet by packet, on
 * the fixtures and on packets with every field type and malformed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_perfetto.h"
#include "perfetto_trace.pb-c.h"
#include "testpf.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ------------------------------------------------------------ recorder */

struct item {
  int64_t ts;
  char *line; /* "<ts> <dur> <cat> <name> <track>" or a counter line */
  char *name, *args;
  uint64_t *flows;
  size_t nflows;
};

struct rec {
  struct item *slices, *counters;
  size_t nslices, ncounters;
  long tracks, warns;
  struct sbuf warnings;
};

/* The track as Perfetto's diff tests show it: thread=<name>,
 * process=<name>, else the track's name; tid=<n> when a legacy override
 * moved the event to another thread. */
static void track_label(struct sbuf *b, const struct fmt_perfetto_track *t,
                        int64_t tid) {
  if (tid != t->tid)
    sbuf_printf(b, "tid=%" PRId64, tid);
  else if (t->is_thread)
    sbuf_printf(b, "thread=%s", t->thread_name ? t->thread_name : "?");
  else if (t->is_process)
    sbuf_printf(b, "process=%s", t->process_name ? t->process_name : "?");
  else
    sbuf_adds(b, t->name ? t->name : "?");
}

static void rec_push(struct item **v, size_t *n, struct item it) {
  *v = xrealloc(*v, sizeof **v * (*n + 1));
  (*v)[(*n)++] = it;
}

static int rec_track(void *ud, const struct fmt_perfetto_track *t) {
  (void)t;
  ((struct rec *)ud)->tracks++;
  return 0;
}

static int rec_slice(void *ud, const struct fmt_perfetto_slice *s) {
  struct rec *r = ud;
  struct sbuf b = {0};
  sbuf_printf(&b, "%" PRId64 " %" PRId64 " %s %s%s ", s->ts_ns, s->dur_ns,
              s->cat ? s->cat : "-", s->name,
              s->incomplete ? " (incomplete)" : "");
  track_label(&b, s->track, s->tid);
  struct item it = {.ts = s->ts_ns,
                    .line = b.s,
                    .name = xstrdup(s->name),
                    .args = s->args_json ? xstrdup(s->args_json) : NULL,
                    .nflows = s->n_flow_ids};
  if (s->n_flow_ids) {
    it.flows = xmalloc(sizeof *it.flows * s->n_flow_ids);
    memcpy(it.flows, s->flow_ids, sizeof *it.flows * s->n_flow_ids);
  }
  rec_push(&r->slices, &r->nslices, it);
  return 0;
}

static int rec_counter(void *ud, const struct fmt_perfetto_counter *c) {
  struct rec *r = ud;
  struct sbuf b = {0};
  sbuf_printf(&b, "%s tid=%" PRId64 " %" PRId64 " %.6f %s", c->name,
              c->track->tid, c->ts_ns, c->value, c->unit ? c->unit : "-");
  rec_push(&r->counters, &r->ncounters,
           (struct item){.ts = c->ts_ns, .line = b.s});
  return 0;
}

static void rec_warning(void *ud, uint64_t offset, const char *msg) {
  struct rec *r = ud;
  r->warns++;
  sbuf_printf(&r->warnings, "%" PRIu64 ": %s\n", offset, msg);
}

static int item_cmp(const void *x, const void *y) {
  const struct item *a = x, *b = y;
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  return strcmp(a->line, b->line);
}

static void rec_free(struct rec *r) {
  for (size_t i = 0; i < r->nslices; i++) {
    free(r->slices[i].line);
    free(r->slices[i].name);
    free(r->slices[i].args);
    free(r->slices[i].flows);
  }
  for (size_t i = 0; i < r->ncounters; i++)
    free(r->counters[i].line);
  free(r->slices);
  free(r->counters);
  sbuf_free(&r->warnings);
}

static int decode(const char *path, struct rec *r,
                  struct fmt_perfetto_stats *st) {
  struct fmt_perfetto_cb cb = {r,           rec_track,   rec_slice,
                               rec_counter, rec_warning, 0};
  char *cause = NULL;
  int rc = testutil_cause(fmt_perfetto_read(path, &cb, st, &cause), cause);
  if (r->nslices) /* qsort must not get NULL, even for 0 items */
    qsort(r->slices, r->nslices, sizeof *r->slices, item_cmp);
  if (r->ncounters)
    qsort(r->counters, r->ncounters, sizeof *r->counters, item_cmp);
  return rc;
}

/* The records' lines, one per line, in (ts, line) order. */
static char *lines(const struct item *v, size_t n) {
  struct sbuf b = {0};
  for (size_t i = 0; i < n; i++)
    sbuf_printf(&b, "%s\n", v[i].line);
  return b.s ? b.s : xstrdup("");
}

static void check_lines(const struct item *v, size_t n, const char *want) {
  char *got = lines(v, n);
  assert_string_equal(got, want);
  free(got);
}

static int str_cmp(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The flows as Perfetto's flow table has them: each pair of slices
 * following each other (by ts) with the same flow id, "out -> in",
 * sorted. */
static char *flow_pairs(const struct rec *r) {
  char **v = NULL;
  size_t n = 0;
  for (size_t i = 0; i < r->nslices; i++)
    for (size_t f = 0; f < r->slices[i].nflows; f++) {
      uint64_t id = r->slices[i].flows[f];
      /* the next slice (r->slices is in ts order) with that id */
      for (size_t j = i + 1; j < r->nslices; j++) {
        const struct item *b = &r->slices[j];
        size_t k = 0;
        while (k < b->nflows && b->flows[k] != id)
          k++;
        if (k == b->nflows)
          continue;
        v = xrealloc(v, sizeof *v * (n + 1));
        v[n++] = xasprintf("%s -> %s", r->slices[i].name, b->name);
        break;
      }
    }
  qsort(v, n, sizeof *v, str_cmp);
  struct sbuf b = {0};
  for (size_t i = 0; i < n; i++) {
    sbuf_printf(&b, "%s\n", v[i]);
    free(v[i]);
  }
  free(v);
  return b.s ? b.s : xstrdup("");
}

/* Track event packets of the fixtures that the wire walker takes: all 65
 * of their 100 packets that hold a track event and no interned data. */
#define FIXTURE_WIRE_PACKETS 65

static char *fixture(const char *name) {
  return testutil_srcpath("tests/data/perfetto/%s.pftrace", name);
}

/* ------------------------------------------------------------ diff tests */

/* test_track_event_same_tids_slices */
static void test_same_tids(void **state) {
  (void)state;
  char *p = fixture("track_event_same_tids");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices,
              "1000 0 cat name1 thread=t1\n"
              "2000 0 cat name2 thread=t2\n");
  /* same tid, two processes: the tracks say so */
  rec_free(&r);
  free(p);
}

/* test_track_event_tracks_slices.  Known differences from Perfetto:
 * event2_on_p2 (a legacy instant with process scope on track_uuid 0) stays
 * on the default track, and the row "event1_on_async3" of tests.py has no
 * event in the textproto of the same test. */
static void test_tracks(void **state) {
  (void)state;
  char *p = fixture("track_event_tracks");
  struct rec r = {0};
  struct fmt_perfetto_stats st;
  assert_int_equal(decode(p, &r, &st), 0);
  check_lines(r.slices, r.nslices,
              "1000 0 cat event1_on_t1 thread=t1\n"
              "2000 0 cat event1_on_t2 thread=t2\n"
              "3000 0 cat event2_on_t2 thread=t2\n"
              "4000 0 cat event1_on_p1 process=p1\n"
              "5000 0 cat event1_on_async async\n"
              "5100 100 cat event1_on_async2 async2\n"
              "6000 0 cat event3_on_t1 thread=t1\n"
              "11000 0 cat event1_on_t3 thread=t3\n"
              "21000 0 cat event1_on_p2 process=p2\n"
              "22000 0 cat event1_on_t4 thread=t4\n"
              "30000 0 cat event1_on_t1 Default Track\n"
              "31000 0 cat event2_on_p2 Default Track\n"
              "32000 0 cat event2_on_t4 tid=4\n"
              "40000 0 cat event_and_track_async3 event_and_track_async3\n");
  assert_int_equal(st.packets, 26);
  assert_int_equal(st.events, 15);
  assert_int_equal(r.warns, 0);
  rec_free(&r);
  free(p);
}

/* test_track_event_instant_slices */
static void test_instants(void **state) {
  (void)state;
  char *p = fixture("track_event_instant_slices");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices,
              "1000 0 cat instant_on_t1 thread=t1\n"
              "2000 0 cat legacy_instant_on_t1 thread=t1\n"
              "3000 0 cat legacy_mark_on_t1 thread=t1\n");
  rec_free(&r);
  free(p);
}

/* test_track_event_monotonic_trace_clock_slices: BOOTTIME converted to
 * the primary trace clock MONOTONIC through the snapshot. */
static void test_clock(void **state) {
  (void)state;
  char *p = fixture("track_event_monotonic_trace_clock");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices,
              "1000 0 cat name1 name1\n"
              "2000 0 cat name2 name1\n");
  assert_int_equal(r.warns, 0);
  rec_free(&r);
  free(p);
}

/* test_track_event_counters_slices and _counters.  Known difference: the
 * legacy thread time of t4 has no unit (Perfetto's has none either). */
static void test_counters(void **state) {
  (void)state;
  char *p = fixture("track_event_counters");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices,
              "1000 100 cat event1_on_t1 thread=t1\n"
              "2000 200 cat event2_on_t1 thread=t1\n"
              "2000 200 cat event3_on_t1 thread=t1\n"
              "4000 0 cat event4_on_t1 thread=t1\n"
              "4000 100 cat event1_on_t3 thread=t4\n"
              "4300 0 cat float_counter_on_t1 thread=t1\n"
              "4500 0 cat float_counter_on_t1 thread=t1\n");
  check_lines(r.counters, r.ncounters,
              "thread_time tid=1 1000 1000000.000000 ns\n"
              "thread_time tid=1 1100 1010000.000000 ns\n"
              "thread_time tid=1 2000 2000000.000000 ns\n"
              "thread_time tid=1 2000 2010000.000000 ns\n"
              "thread_time tid=1 2200 2020000.000000 ns\n"
              "thread_time tid=1 2200 2030000.000000 ns\n"
              "MySizeCounter tid=-1 3000 1024.000000 bytes\n"
              "MySizeCounter tid=-1 3100 2048.000000 bytes\n"
              "MySizeCounter tid=-1 4000 1024.000000 bytes\n"
              "thread_instruction_count tid=4 4000 20.000000 -\n"
              "thread_time tid=1 4000 2040000.000000 ns\n"
              "thread_time tid=4 4000 10000.000000 -\n"
              "thread_instruction_count tid=4 4100 25.000000 -\n"
              "thread_time tid=4 4100 15000.000000 -\n"
              "MyDoubleCounter tid=-1 4200 3.141593 -\n"
              "MyDoubleCounter tid=-1 4300 0.500000 -\n"
              "MyDoubleCounter tid=-1 4500 2.718280 -\n"
              "MySizeCounter tid=-1 4500 4096.000000 bytes\n");
  rec_free(&r);
  free(p);
}

/* test_incremental_counter_sequences */
static void test_incremental_counters(void **state) {
  (void)state;
  char *p = fixture("incremental_counter_sequences");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.counters, r.ncounters,
              "MyIncrementalCounter tid=-1 100 100.000000 -\n"
              "MyIncrementalCounter tid=-1 150 50.000000 -\n"
              "MyIncrementalCounter tid=-1 200 110.000000 -\n"
              "MyIncrementalCounter tid=-1 250 55.000000 -\n");
  rec_free(&r);
  free(p);
}

/* test_flow_events_track_event (v2 flow ids, terminating ids, ids on end
 * events, an id reused after its flow ended) */
static void test_flows_v2(void **state) {
  (void)state;
  char *p = fixture("flow_events_track_event");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  char *got = flow_pairs(&r);
  assert_string_equal(
      got, "FlowSlice1Start -> FlowSlice1End\n"
           "FlowSlice1Start2Start -> FlowSlice1End\n"
           "FlowSlice1Start2Start -> FlowSlice2End\n"
           "FlowSlice3Begin -> FlowSlice3End4Begin\n"
           "FlowSlice3End4Begin -> FlowSlice4Step\n"
           "FlowSlice4Step -> FlowSlice4Step2_FlowIdOnAsyncEndEvent\n"
           "FlowSlice4Step2_FlowIdOnAsyncEndEvent -> "
           "FlowSlice4Step2_FlowIdOnEndEvent\n"
           "FlowSlice4Step2_FlowIdOnEndEvent -> FlowSlice4End\n");
  free(got);
  assert_int_equal(r.nslices, 11);
  rec_free(&r);
  free(p);
}

/* test_flow_events_proto_v1 (legacy s/t/f flow events bound to the
 * enclosing slice, or the next one) */
static void test_flows_v1(void **state) {
  (void)state;
  char *p = fixture("flow_events_proto_v1");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  char *got = flow_pairs(&r);
  assert_string_equal(got, "FlowBeginSlice -> FlowEndSlice_1\n"
                           "FlowEndSlice_1 -> FlowStepSlice\n"
                           "FlowStepSlice -> FlowEndSlice_2\n");
  free(got);
  check_lines(r.slices, r.nslices,
              "10000 10000 test FlowBeginSlice thread=t1\n"
              "30000 10000 test FlowEndSlice_1 thread=t2\n"
              "50000 10000 test FlowStepSlice thread=t1\n"
              "55000 10000 test FlowEndSlice_2 thread=t2\n");
  assert_int_equal(r.warns, 0);
  rec_free(&r);
  free(p);
}

/* test_track_event_merged_debug_annotations_args: the args of a legacy
 * async b/e pair, merged (arrays appended, the end's scalars win). */
static void test_merged_args(void **state) {
  (void)state;
  char *p = fixture("track_event_merged_debug_annotations");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices, "1000 1000 cat name1 name1\n");
  json_error_t err;
  json_t *got = json_loads(r.slices[0].args, 0, &err);
  json_t *want =
      json_loads("{\"debug1\":{\"key1\":10,\"key2\":[20,21,22,23],\"key3\":30},"
                 "\"debug2\":{\"key1\":10,\"key2\":[20,21,22,23],"
                 "\"key3\":{\"key31\":31,\"key32\":32},\"key4\":40},"
                 "\"debug3\":32,\"debug4\":{\"key1\":10,\"key2\":[20,21]}}",
                 0, &err);
  assert_non_null(got);
  assert_non_null(want);
  assert_true(json_equal(got, want));
  json_decref(got);
  json_decref(want);
  rec_free(&r);
  free(p);
}

/* ------------------------------------------------------------ built here */

static void seq(Perfetto__Protos__TracePacket *p, uint32_t id) {
  p->optional_trusted_packet_sequence_id_case =
      PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
  p->trusted_packet_sequence_id = id;
}

/* Interned names, categories, annotation names and string values, their
 * reset, and a packet that needs state its sequence never had. */
static void build_interning(struct sbuf *b) {
  Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT;
  Perfetto__Protos__EventCategory ec = PERFETTO__PROTOS__EVENT_CATEGORY__INIT;
  Perfetto__Protos__DebugAnnotationName an =
      PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
  Perfetto__Protos__InternedString sv = PERFETTO__PROTOS__INTERNED_STRING__INIT;
  Perfetto__Protos__EventName *ens[] = {&en};
  Perfetto__Protos__EventCategory *ecs[] = {&ec};
  Perfetto__Protos__DebugAnnotationName *ans[] = {&an};
  Perfetto__Protos__InternedString *svs[] = {&sv};
  Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;
  en.has_iid = ec.has_iid = an.has_iid = sv.has_iid = 1;
  en.iid = ec.iid = an.iid = sv.iid = 1;
  char name[] = "interned\xff", cat[] = "icat", key[] = "key";
  uint8_t value[] = "value";
  en.name = name;
  ec.name = cat;
  an.name = key;
  sv.has_str = 1;
  sv.str = (ProtobufCBinaryData){5, value};
  id.n_event_names = id.n_event_categories = 1;
  id.n_debug_annotation_names = id.n_debug_annotation_string_values = 1;
  id.event_names = ens;
  id.event_categories = ecs;
  id.debug_annotation_names = ans;
  id.debug_annotation_string_values = svs;

  Perfetto__Protos__DebugAnnotation da =
      PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
  da.name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
  da.name_iid = 1;
  da.value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
  da.string_value_iid = 1;
  Perfetto__Protos__DebugAnnotation *das[] = {&da};
  uint64_t cats[] = {1};
  Perfetto__Protos__TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  e.has_type = 1;
  e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
  e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
  e.name_iid = 1;
  e.n_category_iids = 1;
  e.category_iids = cats;
  e.n_debug_annotations = 1;
  e.debug_annotations = das;

  Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  seq(&p, 7);
  p.has_timestamp = 1;
  p.timestamp = 100;
  p.has_sequence_flags = 1;
  p.sequence_flags = 3; /* cleared + needs */
  p.interned_data = &id;
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  p.track_event = &e;
  testpf_put(b, &p);
  /* cleared again: iid 1 is unknown until re-emitted */
  p.timestamp = 200;
  p.interned_data = NULL;
  testpf_put(b, &p);
  /* sequence 8 never cleared its state: skipped */
  seq(&p, 8);
  p.timestamp = 300;
  p.sequence_flags = 2;
  testpf_put(b, &p);
  /* a packet kind this decoder does not read: counted */
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA__NOT_SET;
  p.sequence_flags = 0;
  testpf_put(b, &p);
  sbuf_add(b, "\x12\x02\x08\x01", 4); /* packet 2: process_tree-like bytes */
}

static void test_interning(void **state) {
  (void)state;
  struct sbuf b = {0};
  build_interning(&b);
  char *p = testutil_path("interning.pftrace");
  testutil_write(p, b.s, b.len);
  struct rec r = {0};
  struct fmt_perfetto_stats st;
  assert_int_equal(decode(p, &r, &st), 0);
  check_lines(r.slices, r.nslices,
              "100 0 icat interned\xEF\xBF\xBD Default Track\n"
              "200 0 iid:1 iid:1 Default Track\n");
  assert_string_equal(r.slices[0].args, "{\"key\":\"value\"}");
  assert_string_equal(r.slices[1].args, "{\"iid:1\":\"iid:1\"}");
  assert_int_equal(st.packets, 4);
  assert_int_equal(st.no_state, 1);
  assert_int_equal(st.unknown, 1);
  assert_int_equal(st.events, 2);
  rec_free(&r);
  sbuf_free(&b);
  free(p);
}

/* legacy_json_value: spliced in when it is JSON, else a string; the texts
 * told without jansson (flat arrays of short integers and plain strings)
 * and the others (spaces, escapes, 19 digits, a number beyond int64,
 * leading zeros, broken texts) on both sides of that line. */
static void test_legacy_json(void **state) {
  (void)state;
  static const char *const texts[] = {"[1,-2,0]",
                                      "[\"18014398509481987\"]",
                                      "[]",
                                      "[01]",
                                      "[18446744073709551615]",
                                      "[123456789012345678]",
                                      "[1, 2]",
                                      "[\"a\\\"b\"]",
                                      "[1,]",
                                      "-",
                                      "\"x",
                                      "-0",
                                      "[\"\"]",
                                      "[1234567890123456789]",
                                      "[\"\x7f\"]",
                                      ""};
  enum { N = sizeof texts / sizeof *texts };
  Perfetto__Protos__DebugAnnotation d[N], *dp[N];
  char names[N][8];
  for (size_t i = 0; i < N; i++) {
    perfetto__protos__debug_annotation__init(&d[i]);
    snprintf(names[i], sizeof names[i], "a%zu", i);
    d[i].name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
    d[i].name = names[i];
    d[i].value_case =
        PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE;
    d[i].legacy_json_value = testutil_pbstr(texts[i]);
    dp[i] = &d[i];
  }
  Perfetto__Protos__TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  e.has_type = 1;
  e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
  e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
  e.name = testutil_pbstr("legacy");
  e.n_debug_annotations = N;
  e.debug_annotations = dp;
  Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  seq(&p, 1);
  p.has_timestamp = 1;
  p.timestamp = 100;
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  p.track_event = &e;
  struct sbuf b = {0};
  testpf_put(&b, &p);
  char *path = testutil_path("legacy.pftrace");
  testutil_write(path, b.s, b.len);
  struct rec r = {0};
  struct fmt_perfetto_stats st;
  assert_int_equal(decode(path, &r, &st), 0);
  assert_int_equal(r.nslices, 1);
  assert_string_equal(
      r.slices[0].args,
      "{\"a0\":[1,-2,0],\"a1\":[\"18014398509481987\"],\"a2\":[],"
      "\"a3\":\"[01]\",\"a4\":\"[18446744073709551615]\","
      "\"a5\":[123456789012345678],\"a6\":[1, 2],\"a7\":[\"a\\\"b\"],"
      "\"a8\":\"[1,]\",\"a9\":\"-\",\"a10\":\"\\\"x\",\"a11\":-0,"
      "\"a12\":[\"\"],\"a13\":[1234567890123456789],"
      "\"a14\":[\"\x7f\"],\"a15\":\"\"}");
  rec_free(&r);
  sbuf_free(&b);
  free(path);
}

/* gzip: the same records; a cut file and corrupt framing end with a
 * cause naming the offset, after the records before it. */
static void test_stream_errors(void **state) {
  (void)state;
  char *plain = fixture("track_event_counters");
  char *gz = testutil_path("counters.pftrace.gz");
  char *cut = testutil_path("cut.pftrace"), *bad = testutil_path("bad.pftrace");
  char *empty = testutil_path("empty.pftrace");
  size_t len;
  char *file = testutil_slurp(plain, &len);
  gzFile g = gzopen(gz, "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, file, (unsigned)len), (int)len);
  assert_int_equal(gzclose(g), Z_OK);
  struct rec a = {0}, z = {0}, c = {0}, d = {0};
  struct fmt_perfetto_stats st;
  assert_int_equal(decode(plain, &a, NULL), 0);
  assert_int_equal(decode(gz, &z, &st), 0);
  assert_int_equal(st.bytes, len);
  char *la = lines(a.slices, a.nslices), *lz = lines(z.slices, z.nslices);
  assert_string_equal(la, lz);
  free(la);
  free(lz);

  testutil_write(cut, file, len - 5);
  struct fmt_perfetto_cb cb = {&c,          rec_track,   rec_slice,
                               rec_counter, rec_warning, 0};
  char *cause = NULL;
  assert_int_equal(fmt_perfetto_read(cut, &cb, &st, &cause), -EPIPE);
  assert_non_null(cause);
  assert_non_null(strstr(cause, "truncated packet"));
  /* the offset named is the last frame's: inside the file, past the first */
  const char *at = strstr(cause, "offset ");
  assert_non_null(at);
  unsigned long off = strtoul(at + 7, NULL, 10);
  assert_true(off > 0 && off < len - 5);
  assert_int_equal(file[off], 0x0a);
  free(cause);
  assert_true(c.nslices >= 6); /* all but the last instant */

  file[0] = 0x0f; /* field 1, wire type 7 */
  testutil_write(bad, file, len);
  cb.ud = &d;
  cause = NULL;
  assert_int_equal(fmt_perfetto_read(bad, &cb, &st, &cause), -EPIPE);
  assert_non_null(strstr(cause, "offset 0: invalid wire type"));
  free(cause);
  assert_int_equal(d.nslices, 0);

  testutil_write(empty, "", 0);
  cause = NULL;
  assert_int_equal(fmt_perfetto_read(empty, &cb, &st, &cause), -ENODATA);
  free(cause);
  rec_free(&a);
  rec_free(&z);
  rec_free(&c);
  rec_free(&d);
  free(file);
  free(plain);
  free(gz);
  free(cut);
  free(bad);
  free(empty);
}

/* ------------------------------------------------------------ wire walker */

/* Appends the bytes of one packet as a frame of a Trace. */
static void frame(struct sbuf *b, const char *bytes, size_t n) {
  sbuf_addc(b, 0x0a);
  sbuf_addc(b, (char)n); /* n < 128 here */
  sbuf_add(b, bytes, n);
}

/* A track event with a field of every kind the walker reads: scalars of
 * each wire type, strings, repeated and oneof fields, a legacy event and
 * debug annotations of every value type, nested ones included. */
static void build_wire_event(struct sbuf *b) {
  char k[] = "k", v[] = "v", js[] = "{\"x\":1}", tn[] = "T", wire[] = "wire",
       scope[] = "scope", ca[] = "a", cb[] = "b\xff";
  char *cats[] = {ca, cb};
  uint8_t pv[] = {0x08, 0x01};
  uint64_t iids[] = {1, 300}, flows[] = {UINT64_MAX, 2}, uuids[] = {9};
  int64_t values[] = {-5};
  double dvalues[] = {2.5};
  Perfetto__Protos__DebugAnnotation d[9], *dp[9];
  for (int i = 0; i < 9; i++) {
    perfetto__protos__debug_annotation__init(&d[i]);
    d[i].name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
    d[i].name = k;
    dp[i] = &d[i];
  }
  d[0].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
  d[0].bool_value = 1;
  d[1].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
  d[1].int_value = INT64_MIN;
  d[2].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
  d[2].double_value = -0.125;
  d[3].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
  d[3].string_value = v;
  d[4].name_field_case =
      PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
  d[4].name_iid = 3;
  d[4].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE;
  d[4].pointer_value = 0xdeadbeef;
  d[5].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE;
  d[5].legacy_json_value = js;
  d[6].proto_type_descriptor_case =
      PERFETTO__PROTOS__DEBUG_ANNOTATION__PROTO_TYPE_DESCRIPTOR_PROTO_TYPE_NAME;
  d[6].proto_type_name = tn;
  d[6].has_proto_value = 1;
  d[6].proto_value = (ProtobufCBinaryData){2, pv};
  d[7].n_dict_entries = 2; /* d[0] and d[1] */
  d[7].dict_entries = dp;
  Perfetto__Protos__DebugAnnotation__NestedValue nv[2], *nvp[] = {&nv[1]};
  perfetto__protos__debug_annotation__nested_value__init(&nv[0]);
  perfetto__protos__debug_annotation__nested_value__init(&nv[1]);
  nv[0].has_nested_type = 1;
  nv[0].nested_type =
      PERFETTO__PROTOS__DEBUG_ANNOTATION__NESTED_VALUE__NESTED_TYPE__ARRAY;
  nv[0].n_array_values = 1;
  nv[0].array_values = nvp;
  nv[1].has_double_value = 1;
  nv[1].double_value = 1e300;
  d[8].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_NESTED_VALUE;
  d[8].nested_value = &nv[0];
  Perfetto__Protos__TrackEvent__LegacyEvent lg =
      PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__INIT;
  lg.has_phase = lg.has_duration_us = lg.has_bind_id = 1;
  lg.phase = 'X';
  lg.duration_us = 7;
  lg.bind_id = 11;
  lg.id_case = PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__ID_GLOBAL_ID;
  lg.global_id = 12;
  lg.id_scope = scope;
  lg.has_pid_override = 1;
  lg.pid_override = -3;
  Perfetto__Protos__TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  e.n_categories = 2;
  e.categories = cats;
  e.n_category_iids = 2;
  e.category_iids = iids;
  e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
  e.name = wire;
  e.has_track_uuid = 1;
  e.track_uuid = UINT64_MAX;
  e.counter_value_field_case =
      PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
  e.double_counter_value = 0.5;
  e.n_extra_counter_track_uuids = e.n_extra_double_counter_track_uuids = 1;
  e.extra_counter_track_uuids = e.extra_double_counter_track_uuids = uuids;
  e.n_extra_counter_values = e.n_extra_double_counter_values = 1;
  e.extra_counter_values = values;
  e.extra_double_counter_values = dvalues;
  e.n_flow_ids = e.n_terminating_flow_ids_old = 2;
  e.flow_ids = e.terminating_flow_ids_old = flows;
  e.n_debug_annotations = 9;
  e.debug_annotations = dp;
  e.timestamp_case =
      PERFETTO__PROTOS__TRACK_EVENT__TIMESTAMP_TIMESTAMP_DELTA_US;
  e.timestamp_delta_us = -4;
  e.legacy_event = &lg;
  Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  seq(&p, 3);
  p.has_timestamp = p.has_timestamp_clock_id = p.has_trusted_pid = 1;
  p.timestamp = 1ull << 40;
  p.timestamp_clock_id = 64;
  p.trusted_pid = -1;
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  p.track_event = &e;
  testpf_put(b, &p);
  /* interned data and descriptors go to protobuf-c */
  Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;
  p.interned_data = &id;
  testpf_put(b, &p);
  Perfetto__Protos__TrackDescriptor td =
      PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
  p.interned_data = NULL;
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
  p.track_descriptor = &td;
  testpf_put(b, &p);
}

static void test_wire(void **state) {
  (void)state;
  /* the fixtures: every track event packet without interned data */
  static const char *const names[] = {"flow_events_proto_v1",
                                      "flow_events_track_event",
                                      "incremental_counter_sequences",
                                      "track_event_counters",
                                      "track_event_instant_slices",
                                      "track_event_merged_debug_annotations",
                                      "track_event_monotonic_trace_clock",
                                      "track_event_same_tids",
                                      "track_event_tracks"};
  size_t taken = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char *p = fixture(names[i]);
    size_t n;
    char *bytes = testutil_slurp(p, &n);
    taken += fuzz_fmt_perfetto_wire((const uint8_t *)bytes, n);
    free(bytes);
    free(p);
  }
  assert_int_equal(taken, FIXTURE_WIRE_PACKETS);

  struct sbuf b = {0};
  build_wire_event(&b);
  assert_int_equal(fuzz_fmt_perfetto_wire((uint8_t *)b.s, b.len), 1);
  sbuf_reset(&b);
  /* taken: packed iids, unknown fields (event, packet; one with a length
   * of five bytes), a bool of ten bytes whose set bit is past 64, packed
   * fixed64 flow ids */
  frame(&b, "\x5a\x05\x1a\x03\x01\xac\x02", 7);
  frame(&b, "\x5a\x05\xc0\x3e\x05\x48\x03", 7);
  frame(&b, "\x82\x7d\x02\xaa\xbb", 5);
  frame(&b, "\x82\x7d\x80\x80\x80\x80\x00", 7);
  frame(&b, "\xc8\x02\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 12);
  frame(&b,
        "\x5a\x13\xfa\x02\x10"
        "12345678abcdefgh",
        21);
  assert_int_equal(fuzz_fmt_perfetto_wire((uint8_t *)b.s, b.len), 6);
  LLVMFuzzerTestOneInput((uint8_t *)b.s, b.len);
  sbuf_reset(&b);
  /* not taken: two track events (protobuf-c merges them), a known field
   * of another wire type, a varint of eleven bytes, packed fixed64 of 12
   * bytes, a string past its message, a zero-length packed field, a
   * length of six bytes (protobuf-c reads five at most) */
  frame(&b, "\x5a\x02\x48\x01\x5a\x02\x58\x07", 8);
  frame(&b, "\x82\x7d\x80\x80\x80\x80\x80\x00", 8);
  frame(&b, "\x42\x01\x00", 3);
  frame(&b, "\x40\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12);
  frame(&b,
        "\x5a\x0f\xfa\x02\x0c"
        "12345678abcd",
        17);
  frame(&b, "\x5a\x05\xba\x01\x05\x61\x62", 7);
  frame(&b, "\x5a\x02\x1a\x00", 4);
  assert_int_equal(fuzz_fmt_perfetto_wire((uint8_t *)b.s, b.len), 0);
  LLVMFuzzerTestOneInput((uint8_t *)b.s, b.len);
  sbuf_free(&b);
}

/* Timestamps far apart (legacy microseconds, an incremental clock, an
 * unsigned timestamp past INT64_MAX) are held within
 * +-FMT_PERFETTO_TS_LIMIT, so ends minus starts never overflow. */
static void test_far_timestamps(void **state) {
  (void)state;
  char *p = testutil_srcpath("tests/data/regress/perfetto-ts-far-apart");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  check_lines(r.slices, r.nslices,
              "-2305843009213693952 4611686018427387904 - from the far past "
              "thread=far\n"
              "-9000000000000000 2314843009213693952 - long complete "
              "thread=far\n"
              "-1616 0 - incremental 2 thread=far\n"
              "-1 2305843009213693953 - left open (incomplete) thread=far\n"
              "2305843009213693952 0 - complete thread=far\n"
              "2305843009213693952 0 - incremental 1 thread=far\n");
  rec_free(&r);
  free(p);
}

/* A double annotation is written as the shortest text that reads back
 * as it: 1.4, not 1.3999999999999999. */
static void test_double_text(void **state) {
  (void)state;
  char *p = testutil_srcpath("tests/data/regress/perfetto-packed-fields");
  struct rec r = {0};
  assert_int_equal(decode(p, &r, NULL), 0);
  size_t seen = 0;
  for (size_t i = 0; i < r.nslices; i++)
    if (r.slices[i].args && strstr(r.slices[i].args, "\"ticks_per_nanosec\""))
      seen += strstr(r.slices[i].args, "\"ticks_per_nanosec\":1.4,") != NULL;
  assert_int_equal(seen, 1);
  rec_free(&r);
  free(p);
}

static void test_regress_inputs(void **state) {
  (void)state;
  int n = testutil_replay("tests/data/perfetto", "");
  int m = testutil_replay("tests/data/regress", "perfetto-");
  assert_true(n >= 9);
  assert_true(m >= 2); /* deep annotations, wire walker edges */
  printf("# %d data files and %d regression inputs replayed\n", n, m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_tids),
      cmocka_unit_test(test_tracks),
      cmocka_unit_test(test_instants),
      cmocka_unit_test(test_clock),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_incremental_counters),
      cmocka_unit_test(test_flows_v2),
      cmocka_unit_test(test_flows_v1),
      cmocka_unit_test(test_merged_args),
      cmocka_unit_test(test_interning),
      cmocka_unit_test(test_stream_errors),
      cmocka_unit_test(test_wire),
      cmocka_unit_test(test_legacy_json),
      cmocka_unit_test(test_far_timestamps),
      cmocka_unit_test(test_double_text),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
