/* test_fmt_pb_pipe.c -- capture file records unpacked on a thread of their
 * own (server/input/fmt_pb_pipe.c).  A file of every kind of record --
 * events with texts, flow ids and attributes, HBM samples, unknown fields,
 * a record larger than a batch, records that unpack to some 30 times their
 * size, one that does not decode and a cut tail --
 * read through the fuzz target, which compares the piped read with a
 * direct one record by record (codes, offsets, positions, the messages'
 * packed bytes), with a thread and without one (pthread_create made to fail:
 * testthreads.h); and a stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_pb_pipe.h"
#include "ntrace.pb-c.h"
#include "testthreads.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the file */

#define EVENTS 20000

/* Writes n bytes as one record (length prefix, then the bytes). */
static void put_raw(FILE *f, const void *b, size_t n) {
  uint8_t v[10];
  size_t k = 0;
  for (size_t x = n; x >= 0x80; x >>= 7)
    v[k++] = (uint8_t)(x | 0x80);
  v[k] = (uint8_t)(n >> (7 * k));
  assert_int_equal(fwrite(v, 1, k + 1, f), k + 1);
  assert_int_equal(fwrite(b, 1, n, f), n);
}

/* Event k: every field kind the ntrace records use. */
static void put_event(FILE *f, uint64_t k, const char *big) {
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  char name[32], model[32], vals[3][24];
  snprintf(name, sizeof name, "event_%" PRIu64, k % 37);
  snprintf(model, sizeof model, "model-%" PRIu64, k % 5);
  e.id = k + 1;
  e.name = name;
  e.model_name = k % 4 ? model : testutil_pbstr("");
  e.timestamp = (int64_t)(1000 * k);
  e.duration = (int64_t)(k % 900);
  e.nc_idx = (int32_t)(k % 8) - 1;
  e.size = k * 4096;
  uint64_t flows[3] = {k, k + 7, k * 3};
  e.n_flow_id = k % 4;
  e.flow_id = flows;
  Nex__Attribute a[3], *ap[3];
  for (int i = 0; i < 3; i++) {
    nex__attribute__init(&a[i]);
    snprintf(vals[i], sizeof vals[i], "%" PRIu64, k * (uint64_t)(i + 2));
    a[i].key = testutil_pbstr(i == 0 ? "bytes" : i == 1 ? "queue" : "note");
    a[i].value = i == 2 && big ? testutil_pbstr(big) : vals[i];
    a[i].is_number = i == 0;
    ap[i] = &a[i];
  }
  e.n_attributes = big ? 3 : k % 3;
  e.attributes = ap;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &e;
  size_t n = nex__ntrace_record__get_packed_size(&rec);
  uint8_t *b = xmalloc(n + 4);
  nex__ntrace_record__pack(&rec, b);
  if (k % 1000 == 17) { /* the record's unknown field 99 (varint 5) */
    b[n++] = 0x98, b[n++] = 0x06, b[n++] = 0x05;
  }
  put_raw(f, b, n);
  free(b);
}

/* Writes rec packed as one record. */
static void put_record(FILE *f, const Nex__NtraceRecord *rec) {
  size_t n = nex__ntrace_record__get_packed_size(rec);
  uint8_t *b = xmalloc(n);
  nex__ntrace_record__pack(rec, b);
  put_raw(f, b, n);
  free(b);
}

#define SPARSE_ATTRS 300

/* An event of SPARSE_ATTRS empty attributes: 2 bytes each on the wire,
 * some 30 times that unpacked (more than the pipe first offers). */
static void put_sparse(FILE *f, uint64_t k) {
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  Nex__Attribute a[SPARSE_ATTRS], *ap[SPARSE_ATTRS];
  for (int i = 0; i < SPARSE_ATTRS; i++) {
    nex__attribute__init(&a[i]);
    ap[i] = &a[i];
  }
  e.id = k + 1;
  e.n_attributes = SPARSE_ATTRS;
  e.attributes = ap;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &e;
  put_record(f, &rec);
}

static void put_hbm(FILE *f, uint64_t k) {
  Nex__HbmUsage h = NEX__HBM_USAGE__INIT;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  h.timestamp = (int64_t)k;
  h.hbm_idx = (int32_t)(k % 4);
  h.total_bytes = k << 20;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
  rec.hbm = &h;
  put_record(f, &rec);
}

/* The fuzz target's input: its ntrace selector, then the file. */
static uint8_t *make_input(size_t *len) {
  char *path = testutil_path("pipe.ntrace.pb");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fmt_pb_write_header(f, FMT_PB_MAGIC_NTRACE), 0);
  char *big = xmalloc((3u << 20) + 1); /* a record larger than a batch */
  memset(big, 'x', 3u << 20);
  big[3u << 20] = '\0';
  for (uint64_t k = 0; k < EVENTS; k++) {
    if (k % 2500 == 99)
      put_sparse(f, k);
    else
      put_event(f, k, k == 5000 ? big : NULL);
    if (k % 100 == 0)
      put_hbm(f, k);
    if (k == 12345) /* a record that does not decode */
      put_raw(f, "\xff\xff\xff", 3);
  }
  static const uint8_t cut[] = {0x80, 0x01, 0x0a}; /* 128 bytes promised */
  assert_int_equal(fwrite(cut, 1, sizeof cut, f), sizeof cut);
  assert_int_equal(fclose(f), 0);
  free(big);
  size_t n;
  char *file = testutil_slurp(path, &n);
  uint8_t *in = xmalloc(n + 1);
  in[0] = FUZZ_FMT_PB_NTRACE;
  memcpy(in + 1, file, n);
  free(file);
  free(path);
  *len = n + 1;
  return in;
}

/* ------------------------------------------------------------ tests */

static void test_same_records_threaded_and_not(void **state) {
  (void)state;
  size_t len;
  uint8_t *in = make_input(&len);
  for (int i = 0; i < 2; i++) {
    testthreads_fail = i == 1;
    testthreads_started = 0;
    assert_int_equal(LLVMFuzzerTestOneInput(in, len), 0); /* aborts else */
    assert_int_equal(testthreads_started, i == 0);
  }
  testthreads_fail = false;
  free(in);
}

struct tally {
  uint64_t events, hbm, bad, cut, unknown, sparse, texts, preps, stop_at, seen;
  size_t biggest;
};

/* The text the prep makes for an event: its name, 400 times over for
 * every thousandth event (more than the room first offered: the record is
 * then copied whole); none for other records. */
static void event_text(const ProtobufCMessage *m, struct sbuf *out) {
  const Nex__NtraceRecord *rec = (const Nex__NtraceRecord *)m;
  if (rec->record_case != NEX__NTRACE_RECORD__RECORD_EVENT)
    return;
  for (int i = 0; i < (rec->event->id % 1000 == 1 ? 400 : 1); i++)
    sbuf_adds(out, rec->event->name);
}

static void prep(void *ud, const ProtobufCMessage *m, struct sbuf *out) {
  (*(uint64_t *)ud)++; /* the decoder thread's count */
  event_text(m, out);
}

static int count(void *ud, const struct fmt_pb_pipe_rec *x) {
  struct tally *t = ud;
  struct sbuf want = {0};
  if (x->msg)
    event_text(x->msg, &want);
  assert_int_equal(x->text_len, want.len);
  if (want.len)
    assert_string_equal(x->text, want.s);
  else
    assert_null(x->text);
  t->texts += want.len > 0;
  sbuf_free(&want);
  if (x->msg)
    t->unknown += x->msg->n_unknown_fields;
  if (x->rc == -EBADMSG)
    t->bad++;
  else if (x->rc == -EPIPE)
    t->cut++;
  else if (((Nex__NtraceRecord *)x->msg)->record_case ==
           NEX__NTRACE_RECORD__RECORD_HBM)
    t->hbm++;
  else {
    const Nex__SystemEvent *e = ((Nex__NtraceRecord *)x->msg)->event;
    t->events++;
    t->sparse += e->n_attributes == SPARSE_ATTRS;
    for (size_t i = 0; i < e->n_attributes; i++)
      if (strlen(e->attributes[i]->value) > t->biggest)
        t->biggest = strlen(e->attributes[i]->value);
  }
  return ++t->seen == t->stop_at ? 5 : 0;
}

static int run_count(struct tally *t) {
  char *path = testutil_path("pipe.ntrace.pb");
  struct fmt_pb *r = NULL;
  char *cause = NULL;
  assert_int_equal(fmt_pb_open(path, FMT_PB_MAGIC_NTRACE, &r, &cause), 0);
  int rc = fmt_pb_pipe_each(r, &nex__ntrace_record__descriptor, prep, &t->preps,
                            count, t);
  fmt_pb_close(r);
  free(path);
  return rc;
}

static void test_counts_and_stop(void **state) {
  (void)state;
  size_t len;
  free(make_input(&len));
  struct tally t = {0};
  assert_int_equal(run_count(&t), 0);
  assert_int_equal(t.events, EVENTS);
  assert_int_equal(t.hbm, EVENTS / 100);
  assert_int_equal(t.bad, 1);
  assert_int_equal(t.cut, 1);
  assert_int_equal(t.unknown, EVENTS / 1000);
  assert_int_equal(t.biggest, 3u << 20);
  assert_int_equal(t.sparse, EVENTS / 2500);
  /* every event has a name but the sparse ones */
  assert_int_equal(t.texts, EVENTS - EVENTS / 2500);
  assert_true(t.preps >= EVENTS + EVENTS / 100); /* more: records copied */
  assert_int_equal(t.seen, EVENTS + EVENTS / 100 + 2);
  struct tally s = {.stop_at = 1000};
  assert_int_equal(run_count(&s), 5);
  assert_int_equal(s.seen, 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_records_threaded_and_not),
      cmocka_unit_test(test_counts_and_stop),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
