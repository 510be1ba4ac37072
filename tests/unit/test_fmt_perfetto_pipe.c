/* test_fmt_perfetto_pipe.c -- the Perfetto decoder on its own thread
 * (server/input/fmt_perfetto_pipe.c): every file is decoded with
 * fmt_perfetto_read() and with fmt_perfetto_pipe_read(), and the two must
 * make the same calls in the same order, with the same track state at
 * each call (every field of the track a record names, and which track
 * object it is), the same result, cause and stats: on Perfetto's
 * fixtures, the regression inputs, a trace of many batches whose tracks
 * change as it goes, a stop, and errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fmt_perfetto.h"
#include "fmt_perfetto_pipe.h"
#include "perfetto_trace.pb-c.h"
#include "testpf.h"
#include "testutil.h"
#include "util.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ call log */

struct log {
  struct sbuf b;
  const void **seen; /* track objects in the order first met */
  size_t nseen;
  long calls, stop_at;
};

/* The track's every field, and which object it is (by first meeting). */
static void log_track(struct log *l, const struct fmt_perfetto_track *t) {
  size_t k = 0;
  while (k < l->nseen && l->seen[k] != t)
    k++;
  if (k == l->nseen) {
    l->seen = xrealloc(l->seen, sizeof *l->seen * (l->nseen + 1));
    l->seen[l->nseen++] = t;
  }
  sbuf_printf(&l->b,
              "[#%zu %" PRIu64 "<%" PRIu64 " %s pid=%" PRId64 " tid=%" PRId64
              " p=%s t=%s %d%d%d c=%s u=%s x%" PRId64 " %d]",
              k, t->uuid, t->parent_uuid, t->name ? t->name : "(null)", t->pid,
              t->tid, t->process_name ? t->process_name : "(null)",
              t->thread_name ? t->thread_name : "(null)", t->is_process,
              t->is_thread, t->is_counter,
              t->counter_name ? t->counter_name : "(null)",
              t->unit ? t->unit : "(null)", t->unit_multiplier, t->incremental);
}

static int log_stop(struct log *l) { return ++l->calls == l->stop_at ? 7 : 0; }

static int log_track_cb(void *ud, const struct fmt_perfetto_track *t) {
  struct log *l = ud;
  sbuf_adds(&l->b, "T ");
  log_track(l, t);
  sbuf_addc(&l->b, '\n');
  return log_stop(l);
}

static int log_slice(void *ud, const struct fmt_perfetto_slice *s) {
  struct log *l = ud;
  if (s->args_packed) { /* written as JSON: every byte of them read */
    sbuf_printf(&l->b, "P %zu ", s->args_packed_len);
    fmt_perfetto_args_json(&l->b, s->args_packed, s->args_packed_len);
    sbuf_addc(&l->b, ' ');
  }
  sbuf_printf(&l->b,
              "S %s|%s|%" PRId64 "|%" PRId64 "|%d%d|%" PRId64 "|%" PRId64
              "|%s|%u|%" PRIu64 "|",
              s->name, s->cat ? s->cat : "(null)", s->ts_ns, s->dur_ns,
              s->instant, s->incomplete, s->pid, s->tid,
              s->args_json ? s->args_json : "(null)", s->sequence, s->offset);
  for (size_t i = 0; i < s->n_flow_ids; i++)
    sbuf_printf(&l->b, "%" PRIu64 ",", s->flow_ids[i]);
  log_track(l, s->track);
  sbuf_addc(&l->b, '\n');
  return log_stop(l);
}

static int log_counter(void *ud, const struct fmt_perfetto_counter *c) {
  struct log *l = ud;
  sbuf_printf(&l->b, "C %s|%s|%" PRId64 "|%.17g|%" PRIu64 "|", c->name,
              c->unit ? c->unit : "(null)", c->ts_ns, c->value, c->offset);
  log_track(l, c->track);
  sbuf_addc(&l->b, '\n');
  return log_stop(l);
}

static void log_warning(void *ud, uint64_t offset, const char *msg) {
  struct log *l = ud;
  sbuf_printf(&l->b, "W %" PRIu64 " %s\n", offset, msg);
}

/* Decodes path both ways, with packed args or without, and checks that
 * the two ways agree; returns the log of the calls (the caller frees it). */
static char *decode_both(const char *path, long stop_at, int packed) {
  struct log l[2] = {{.stop_at = stop_at}, {.stop_at = stop_at}};
  struct fmt_perfetto_stats st[2];
  char *cause[2] = {NULL, NULL};
  int rc[2];
  for (int i = 0; i < 2; i++) {
    struct fmt_perfetto_cb cb = {&l[i],       log_track_cb, log_slice,
                                 log_counter, log_warning,  packed};
    rc[i] = i ? fmt_perfetto_pipe_read(path, &cb, &st[i], &cause[i])
              : fmt_perfetto_read(path, &cb, &st[i], &cause[i]);
  }
  assert_int_equal(rc[1], rc[0]);
  assert_string_equal(l[1].b.s ? l[1].b.s : "", l[0].b.s ? l[0].b.s : "");
  assert_string_equal(cause[1] ? cause[1] : "", cause[0] ? cause[0] : "");
  if (rc[0] >= 0 && !stop_at) /* stopped: the decoder may have read on */
    assert_memory_equal(&st[1], &st[0], sizeof st[0]);
  char *out = l[0].b.s ? xstrdup(l[0].b.s) : xstrdup("");
  for (int i = 0; i < 2; i++) {
    sbuf_free(&l[i].b);
    free(l[i].seen);
    free(cause[i]);
  }
  return out;
}

/* ------------------------------------------------------------ a trace */

static Perfetto__Protos__TracePacket packet(uint64_t ts) {
  Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  p.optional_trusted_packet_sequence_id_case =
      PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
  p.trusted_packet_sequence_id = 1;
  p.has_timestamp = 1;
  p.timestamp = ts;
  return p;
}

/* A track descriptor: a process (tid < 0), a thread, or a named child of
 * parent (pid < 0); counter: a counter track. */
static void put_track(struct sbuf *b, uint64_t uuid, uint64_t parent,
                      int32_t pid, int32_t tid, const char *name, int counter) {
  Perfetto__Protos__TrackDescriptor d =
      PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
  Perfetto__Protos__ProcessDescriptor pd =
      PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
  Perfetto__Protos__ThreadDescriptor td =
      PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
  Perfetto__Protos__CounterDescriptor cd =
      PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
  d.has_uuid = 1;
  d.uuid = uuid;
  d.has_parent_uuid = parent != 0;
  d.parent_uuid = parent;
  if (pid >= 0 && tid < 0) {
    pd.has_pid = 1;
    pd.pid = pid;
    pd.process_name = (char *)(uintptr_t)name;
    d.process = &pd;
  } else if (pid >= 0) {
    td.has_pid = td.has_tid = 1;
    td.pid = pid;
    td.tid = tid;
    td.thread_name = (char *)(uintptr_t)name;
    d.thread = &td;
  } else {
    d.static_or_dynamic_name_case =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
    d.name = (char *)(uintptr_t)name;
  }
  if (counter) {
    cd.has_unit = 1;
    cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
    d.counter = &cd;
  }
  Perfetto__Protos__TracePacket p = packet(0);
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
  p.track_descriptor = &d;
  testpf_put(b, &p);
}

static void put_event(struct sbuf *b, uint64_t ts, uint64_t track,
                      Perfetto__Protos__TrackEvent__Type type, const char *name,
                      const char *arg, uint64_t flow, int64_t value) {
  Perfetto__Protos__TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  Perfetto__Protos__DebugAnnotation da =
      PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
  Perfetto__Protos__DebugAnnotation *das[] = {&da};
  e.has_type = 1;
  e.type = type;
  e.has_track_uuid = 1;
  e.track_uuid = track;
  if (name) {
    e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
    e.name = (char *)(uintptr_t)name;
  }
  if (arg) {
    da.name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
    da.name = (char *)(uintptr_t) "detail";
    da.value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
    da.string_value = (char *)(uintptr_t)arg;
    e.n_debug_annotations = 1;
    e.debug_annotations = das;
  }
  if (flow) {
    e.n_flow_ids = 1;
    e.flow_ids = &flow;
  }
  if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) {
    e.counter_value_field_case =
        PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
    e.counter_value = value;
  }
  Perfetto__Protos__TracePacket p = packet(ts);
  p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  p.track_event = &e;
  testpf_put(b, &p);
}

/* n slices over four tracks, counters, flows; along the way a thread is
 * renamed, its process's pid changes (the children's pid with it), and a
 * track without a descriptor is named by its first event. */
static void build_many(struct sbuf *b, int n) {
  put_track(b, 1, 0, 10, -1, "proc", 0);
  put_track(b, 2, 1, -1, -1, "async", 0);
  put_track(b, 3, 1, 10, 11, "main", 0);
  put_track(b, 5, 1, -1, -1, "bytes", 1);
  char arg[80];
  for (int i = 0; i < n; i++) {
    if (i == n / 3)
      put_track(b, 1, 0, 12, -1, "proc", 0);
    if (i == n / 2)
      put_track(b, 3, 1, 12, 11, "renamed", 0);
    uint64_t track = 2 + (uint64_t)(i % 3), ts = 100 + (uint64_t)i * 10;
    char name[16];
    snprintf(name, sizeof name, "ev%d", i % 7);
    snprintf(arg, sizeof arg, "%d-0123456789abcdef0123456789abcdef0123456789",
             i);
    put_event(b, ts, track,
              PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, name, arg,
              i % 5 == 0 ? (uint64_t)(i / 10 + 1) : 0, 0);
    put_event(b, ts + 5, track,
              PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL,
              0, 0);
    if (i % 100 == 0)
      put_event(b, ts + 1, 5, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER,
                NULL, NULL, 0, i);
  }
}

/* ------------------------------------------------------------ tests */

static void test_files(void **state) {
  (void)state;
  /* every fixture and regression input */
  static const char *const dirs[] = {"tests/data/perfetto",
                                     "tests/data/regress"};
  int n = 0;
  for (size_t d = 0; d < 2; d++) {
    char *dir = testutil_srcpath("%s", dirs[d]);
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    struct dirent *e;
    while ((e = readdir(dh))) {
      if (!strstr(e->d_name, d ? "perfetto-" : ".pftrace"))
        continue;
      char *path = xasprintf("%s/%s", dir, e->d_name);
      free(decode_both(path, 0, 0));
      free(decode_both(path, 0, 1));
      free(path);
      n++;
    }
    closedir(dh);
    free(dir);
  }
  assert_true(n >= 11);
}

static void test_many(void **state) {
  (void)state;
  struct sbuf b = {0};
  build_many(&b, 60000); /* ~9 MB: many batches */
  char *path = testutil_path("many.pftrace");
  testutil_write(path, b.s, b.len);
  char *log = decode_both(path, 0, 1); /* packed args copied whole */
  assert_non_null(strstr(log, "\nP 63 {\"detail\":\"59999-0123456789abcdef"));
  free(log);
  log = decode_both(path, 0, 0);
  /* the changes reached the records: the renamed thread, the new pid of
   * the process's children, the track named by its first event */
  assert_non_null(strstr(log, " pid=12 tid=11 p=(null) t=renamed 010"));
  assert_non_null(strstr(log, " pid=10 tid=11 p=(null) t=main 010"));
  assert_non_null(strstr(log, "[#1 2<1 async pid=12"));
  assert_non_null(strstr(log, "[#1 2<1 async pid=10"));
  assert_non_null(strstr(log, "4<0 ev2 pid=-1"));
  assert_non_null(strstr(log, "\nC bytes|bytes|"));
  free(log);
  /* a stop: the calls up to it, and its value */
  log = decode_both(path, 30000, 0);
  size_t lines = 0;
  for (const char *c = log; (c = strchr(c, '\n')); c++)
    lines++;
  assert_int_equal(lines, 30000);
  free(log);
  /* cut in the middle of a packet: the decoder's error and cause */
  testutil_write(path, b.s, b.len / 2 + 3);
  free(decode_both(path, 0, 0));
  testutil_write(path, "\x0a\x7f", 2);
  free(decode_both(path, 0, 0));
  unlink(path);
  free(decode_both(path, 0, 0)); /* missing */
  free(path);
  sbuf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_many),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
