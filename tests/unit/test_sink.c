/* test_sink.c -- the ingest sink (ingest_sink.h) as a reader sees it: a
 * fake reader pushes slices, counter samples, warnings, trace-format
 * slices and process/thread rows through the API into a temporary store,
 * and the rows stored are checked exactly (lanes by nesting, the order of
 * equal slices per track, args JSON, ids, track statistics, name
 * statistics, counter seq, the Warning cap and its summary row, flows).
 * The run's side (ingest_core.h) opens and closes the sink as ingest_run()
 * does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include <sqlite3.h>

#include "argtext.h"
#include "filter.h"
#include "ingest_core.h"
#include "ingest_rates.h"
#include "ingest_readers.h"
#include "store_vtab.h"
#include "teststore.h"
#include "util.h"

/* A sink on a new store, as ingest_run() opens one. */
struct fake_run {
  char *path;
  struct store_writer *w;
  struct discover_result d;
  struct ingest_opts o;
  struct ingest_stats st;
  struct filter *filter; /* leaves out events named "skipped" */
  struct ing *g;
  int warnings_told; /* on_warning calls */
};

static void fake_on_warning(void *ud, const char *file, uint64_t offset,
                            const char *msg) {
  (void)file, (void)offset, (void)msg;
  ((struct fake_run *)ud)->warnings_told++;
}

static void fake_open(struct fake_run *r, const char *name) {
  memset(r, 0, sizeof *r);
  r->path = xasprintf("/tmp/nex-test-sink-%d-%s.db", (int)getpid(), name);
  r->w = teststore_open(r->path);
  r->filter = filter_new();
  char *cause = NULL;
  assert_int_equal(filter_set_event_types(r->filter, "^skipped", &cause), 0);
  r->o = (struct ingest_opts){.dir = "/tmp",
                              .db_path = r->path,
                              .filter = r->filter,
                              .style = INGEST_QUIET,
                              .on_warning = fake_on_warning,
                              .ud = r};
  r->g = ingest_sink_open(&r->o, r->w, &r->d, &r->st, util_now_ns());
}

/* What a test does at the end of the run, before and after the tracks
 * are placed (as ingest_run() derives rows), with its data. */
struct fake_end {
  void (*before)(struct ing *g, void *ud);
  void (*after)(struct ing *g, void *ud);
  void *ud;
};

/* Ends the run as ingest_run() does (with e's steps, e may be NULL) and
 * opens the store for reading. */
static sqlite3 *fake_close_with(struct fake_run *r, const struct fake_end *e) {
  if (e)
    e->before(r->g, e->ud);
  size_t done = ingest_finish_tracks(r->g, 0);
  if (e) {
    e->after(r->g, e->ud);
    ingest_finish_tracks(r->g, done);
  }
  assert_int_equal(ingest_flows_flush(r->g), 0);
  ingest_stats_flush(r->g);
  ingest_sink_close(r->g);
  teststore_finish(r->w);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(r->path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(store_vtab_register(db), SQLITE_OK);
  return db;
}

static sqlite3 *fake_close(struct fake_run *r) {
  return fake_close_with(r, NULL);
}

static void fake_done(struct fake_run *r, sqlite3 *db) {
  sqlite3_close(db);
  filter_free(r->filter);
  unlink(r->path);
  free(r->path);
}

/* The rows of a query as text: columns joined by '|', rows by ';' (NULL
 * as "-").  The caller frees it. */
static char *rows(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  struct sbuf b = {0};
  sbuf_adds(&b, "");
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (b.len)
      sbuf_addc(&b, ';');
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const unsigned char *t = sqlite3_column_text(st, i);
      sbuf_printf(&b, "%s%s", i ? "|" : "", t ? (const char *)t : "-");
    }
  }
  sqlite3_finalize(st);
  return b.s;
}

static void assert_rows(sqlite3 *db, const char *sql, const char *want) {
  char *got = rows(db, sql);
  assert_string_equal(got, want);
  free(got);
}

/* A description of a fake slice or counter track of process 7. */
static struct store_track fake_desc(const char *kind, const char *label) {
  struct store_track d = ingest_desc(kind, "system", "fake", "i-1");
  d.pid = 7;
  d.has_pid = 1;
  d.label = label;
  return d;
}

static void fake_slice(struct ing *g, struct itrack *t, int64_t ts, int64_t dur,
                       int64_t id, const char *name, uint64_t order) {
  struct lanes_item it = {.ts = ts,
                          .dur = dur,
                          .id = id,
                          .name = ingest_intern(g, name),
                          .order = order};
  ingest_slice(g, t, &it);
}

#define SLICES                                                                 \
  "SELECT lane, ts, dur, id, (SELECT s FROM str WHERE str.id = name), args "   \
  "FROM slice ORDER BY ts, lane"

/* Nesting gives lanes; a negative duration becomes 0; args JSON and ids. */
static void test_slices(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "slices");
  struct store_track d = fake_desc("slices", NULL);
  struct itrack *t = ingest_track(r.g, &d);
  assert_ptr_equal(ingest_track(r.g, &d), t); /* one track per description */
  fake_slice(r.g, t, 160, 5, ingest_id(r.g, 42), "next", 0);
  fake_slice(r.g, t, 100, 50, ingest_id(r.g, 0), "outer", 0);
  struct lanes_item it = {.ts = 110,
                          .dur = 10,
                          .id = ingest_id(r.g, UINT64_MAX),
                          .name = ingest_intern(r.g, "inner")};
  struct sbuf *b = ingest_args_text(r.g);
  argtext_begin(b);
  argtext_str(b, "cat", "x");
  argtext_str(b, "empty", ""); /* left out */
  argtext_i64(b, "n", -3);
  argtext_u64(b, "big", (1ull << 63) + 1);
  uint64_t ids[] = {1, UINT64_MAX};
  argtext_list(b, "ids", ids, 2, false);
  argtext_list(b, "flow_id", ids, 2, true);
  argtext_list(b, "none", ids, 0, true);  /* left out */
  argtext_list(b, "none", ids, 0, false); /* left out */
  argtext_raw(b, "raw", "[true]");
  ingest_args_take(r.g, &it);
  ingest_slice(r.g, t, &it);
  fake_slice(r.g, t, 200, -5, 9, "next", 0);
  argtext_begin(b);
  ingest_args_take(r.g, &it); /* nothing added: NULL */
  assert_null(it.args);
  assert_int_equal(ingest_track_count(t), 4);
  assert_int_equal(ingest_track_n(r.g), 1);
  assert_ptr_equal(ingest_track_at(r.g, 0), t);
  assert_string_equal(ingest_track_desc(t)->source, "fake");
  int64_t id = ingest_track_id(t);
  sqlite3 *db = fake_close(&r);
  assert_rows(db, SLICES,
              "0|100|50|4611686018427387904|outer|-;"
              "1|110|10|4611686018427387905|inner|{\"cat\":\"x\",\"n\":-3,"
              "\"big\":\"9223372036854775809\",\"ids\":[1,-1],"
              "\"flow_id\":[\"1\",\"18446744073709551615\"],\"raw\":[true]};"
              "0|160|5|42|next|-;0|200|0|9|next|-");
  char *sql = xasprintf("SELECT lanes, max_dur, event_count, first_ts, "
                        "last_ts, lod_min_level FROM track WHERE id = %lld",
                        (long long)id);
  assert_rows(db, sql, "2|50|4|100|200|-");
  free(sql);
  assert_rows(db,
              "SELECT (SELECT s FROM str WHERE str.id = name), count, "
              "total_dur FROM name_stat ORDER BY 1",
              "inner|1|10;next|2|5;outer|1|50");
  assert_int_equal(r.st.events, 4);
  fake_done(&r, db);
}

/* Attributes flagged as numbers are written as JSON numbers only when they
 * are ones; anything else becomes a string, so the args text stays JSON. */
static void test_attrs(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "attrs");
  struct store_track d = fake_desc("attrs", NULL);
  struct itrack *t = ingest_track(r.g, &d);
  static char kv[][2][8] = {
      {"a", "1.5"}, {"b", "-2e3"}, {"c", "nan"}, {"d", "0x10"},  {"e", "+1"},
      {"f", ".5"},  {"g", "1."},   {"h", " 1"},  {"i", "1e999"}, {"j", ""}};
  enum { N = sizeof kv / sizeof kv[0] };
  Nex__Attribute at[N], *ap[N];
  for (size_t i = 0; i < N; i++) {
    nex__attribute__init(&at[i]);
    at[i].key = kv[i][0];
    at[i].value = kv[i][1];
    at[i].is_number = 1;
    ap[i] = &at[i];
  }
  struct lanes_item it = {
      .ts = 1, .dur = 1, .id = 1, .name = ingest_intern(r.g, "x")};
  argtext_begin(ingest_args_text(r.g));
  argtext_attrs(ingest_args_text(r.g), ap, N);
  ingest_args_take(r.g, &it);
  ingest_slice(r.g, t, &it);
  sqlite3 *db = fake_close(&r);
  assert_rows(db, "SELECT args FROM slice",
              "{\"a\":1.5,\"b\":-2e3,\"c\":\"nan\",\"d\":\"0x10\","
              "\"e\":\"+1\",\"f\":\".5\",\"g\":\"1.\",\"h\":\" 1\","
              "\"i\":\"1e999\",\"j\":\"\"}");
  assert_rows(db, "SELECT json_valid(args) FROM slice", "1");
  fake_done(&r, db);
}

/* Equal slices (same start and duration: the first encloses the next) in
 * push order on a track made so, by the caller's key on a key-order track,
 * whichever way they were pushed. */
static void test_order(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "order");
  struct store_track dp = fake_desc("slices", "push");
  struct store_track dk = fake_desc("slices", "key");
  struct itrack *tp = ingest_track(r.g, &dp);
  struct itrack *tk = ingest_track_ordered(r.g, &dk, LANES_KEY_ORDER);
  /* an existing track keeps its order */
  assert_ptr_equal(ingest_track_ordered(r.g, &dp, LANES_KEY_ORDER), tp);
  for (int k = 0; k < 2; k++) {
    struct itrack *t = k ? tk : tp;
    fake_slice(r.g, t, 0, 10, 1, "a", 2);
    fake_slice(r.g, t, 0, 10, 2, "b", 1);
    fake_slice(r.g, t, 0, 10, 3, "c", 3);
  }
  sqlite3 *db = fake_close(&r);
  assert_rows(db,
              "SELECT t.label, s.lane, (SELECT s FROM str WHERE str.id = "
              "s.name) FROM slice s JOIN track t ON t.id = s.track ORDER BY "
              "t.label, s.lane",
              "key|0|b;key|1|a;key|2|c;push|0|a;push|1|b;push|2|c");
  fake_done(&r, db);
}

/* The series of one sample share its seq; a sample counts once. */
static void test_counters(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "counters");
  struct store_track d = fake_desc("counter", "mem");
  struct itrack *t = ingest_track(r.g, &d);
  ingest_counter(r.g, t, 0, 10, 1.5);
  ingest_counter(r.g, t, 1, 10, 2);
  ingest_counter(r.g, t, 0, 20, 3);
  ingest_counter(r.g, t, 0, 20, 4); /* same ts: the next seq */
  sqlite3 *db = fake_close(&r);
  assert_rows(db,
              "SELECT series, ts, seq, value FROM counter ORDER BY seq, series",
              "0|10|1|1.5;1|10|1|2.0;0|20|2|3.0;0|20|3|4.0");
  assert_rows(db, "SELECT event_count, first_ts, last_ts FROM track",
              "3|10|20");
  assert_int_equal(r.st.events, 3);
  fake_done(&r, db);
}

/* Samples out of time order are stored in order, each series by (ts, seq),
 * with the seq numbered as they came. */
static void test_counters_unsorted(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "counters-unsorted");
  struct store_track d = fake_desc("counter", "mem");
  struct itrack *t = ingest_track(r.g, &d);
  static const struct {
    int series;
    int64_t ts;
    double v;
  } in[] = {{0, 30, 1}, {1, 30, 2}, {0, 10, 3}, {1, 10, 4},
            {0, 20, 5}, {0, 10, 6}, {1, 5, 7}};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++)
    ingest_counter(r.g, t, in[i].series, in[i].ts, in[i].v);
  sqlite3 *db = fake_close(&r);
  assert_rows(db, "SELECT series, ts, seq, value FROM counter",
              "0|10|2|3.0;0|10|4|6.0;0|20|3|5.0;0|30|1|1.0;"
              "1|5|4|7.0;1|10|2|4.0;1|30|1|2.0");
  assert_rows(db, "SELECT event_count, first_ts, last_ts FROM track",
              "4|10|30");
  fake_done(&r, db);
}

/* One int64 of a query's first row. */
static int64_t one_int(sqlite3 *db, const char *sql) {
  char *s = rows(db, sql);
  int64_t v = strtoll(s, NULL, 10);
  free(s);
  return v;
}

/* Checks the samples of counter track `ctr` against the rule of a rate
 * (ingest_rates.h) over [first, last], applied here to the stored slices
 * of the tracks `where` selects: each one's bytes as SQLite's own
 * json_extract and CAST read args member `member`, in (track, lane, ts)
 * order, spread over the buckets of the span pro rata of overlap.
 * Returns the sum of the bytes. */
static double rates_check(sqlite3 *db, const char *where, const char *member,
                          int64_t ctr, int64_t first, int64_t last) {
  int64_t width = (last - first) / 20000 + 1;
  width = width < 1000 ? 1000 : width;
  size_t n = (size_t)((last - first) / width + 1);
  double *want = xcalloc(n, sizeof *want), total = 0;
  sqlite3_stmt *st;
  char *q = xasprintf(
      "SELECT ts - %lld, dur, coalesce(CAST(json_extract(args, '$.%s') AS "
      "REAL), 0) FROM slice WHERE track IN (SELECT id FROM track WHERE %s) "
      "ORDER BY track, lane, ts",
      (long long)first, member, where);
  assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
  free(q);
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
    double bytes = sqlite3_column_double(st, 2);
    int64_t len = dur > 0 ? dur : 1;
    if (bytes <= 0)
      continue;
    total += bytes;
    for (size_t k = 0; k < n; k++) {
      int64_t lo = (int64_t)k * width, hi = lo + width;
      lo = ts > lo ? ts : lo;
      hi = ts + len < hi ? ts + len : hi;
      if (hi > lo)
        want[k] += bytes * (double)(hi - lo) / (double)len;
    }
  }
  sqlite3_finalize(st);
  q = xasprintf("SELECT ts, value FROM counter WHERE track = %lld ORDER BY ts",
                (long long)ctr);
  assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
  free(q);
  size_t k = 0;
  for (; sqlite3_step(st) == SQLITE_ROW; k++) {
    assert_true(k < n);
    assert_int_equal(sqlite3_column_int64(st, 0), first + (int64_t)k * width);
    double got = sqlite3_column_double(st, 1),
           w = want[k] * 1e9 / (double)width;
    if (got != w)
      fail_msg("counter %lld bucket %zu: %.17g, not %.17g", (long long)ctr, k,
               got, w);
  }
  sqlite3_finalize(st);
  assert_int_equal(k, n);
  free(want);
  return total;
}

/* The bandwidth counter of the transfer track of NC nc checked against the
 * rule over the track's span; returns the sum of its bytes. */
static double rates_check_nc(sqlite3 *db, int nc) {
  char *where = xasprintf("source = 'host_to_device_transfers' AND nc_idx "
                          "= %d",
                          nc);
  char *q =
      xasprintf("SELECT first_ts || '|' || last_ts FROM track WHERE %s", where);
  char *span = rows(db, q);
  long long first, last;
  assert_int_equal(sscanf(span, "%lld|%lld", &first, &last), 2);
  free(span);
  free(q);
  q = xasprintf("SELECT id FROM track WHERE source = "
                "'host_to_device_bandwidth' AND nc_idx = %d",
                nc);
  double total = rates_check(db, where, "size", one_int(db, q), first, last);
  free(q);
  free(where);
  return total;
}

/* Byte counts for the rate tests: integers, strings of integers, null,
 * missing, no args.  Bursts of four slices: two in lane 0 and one nested
 * in each, in a bucket or two, so the order of their sums tells. */
static const char *const rates_args[] = {
    "{\"size\":123456789012345678}",
    "{\"type\":20,\"size\":\"2097152\"}",
    "{\"size\":\"98765432109876543\"}",
    "{\"b\":[1,{\"size\":3}],\"s\":\"x\\\"y\",\"size\":\"77\"}",
    "{\"size\":\"-7\"}",
    "{\"size\":4097}",
    "{\"type\":1}",
    NULL,
    "{\"size\":null}"};

/* Slice i of the bursts of track t (start and length), with args a. */
static void rates_slice(struct ing *g, struct itrack *t, int i, int64_t burst,
                        const char *a) {
  static const int64_t at[4][2] = {
      {0, 1000}, {10, 500}, {1000, 1000}, {1010, 500}};
  struct lanes_item it = {.ts = burst + at[i % 4][0],
                          .dur = i % 13 ? at[i % 4][1] : 0,
                          .id = i + 1,
                          .name = ingest_intern(g, "dmem_buf_copyin"),
                          .args = a,
                          .args_len = a ? strlen(a) : 0};
  ingest_slice(g, t, &it);
}

static void rates_before_system(struct ing *g, void *ud) {
  (void)ud;
  ingest_system_rates(g);
}

static void rates_after_system(struct ing *g, void *ud) {
  *(int *)ud = ingest_system_derived(g);
}

/* The transfer bandwidth counters: summed as the slices are placed (NC
 * 0: copies nested in lane 1, byte counts as integers, strings
 * of integers, null, missing, no args) or by a scan of the store where a
 * byte count is not an integer of at most 18 digits (NC 1: a fraction; NC
 * 2: a leading zero, 20 digits); either way what the rule gives. */
static void test_rates(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "rates");
  uint64_t rnd = 7;
  for (int nc = 0; nc < 3; nc++) {
    struct store_track d =
        ingest_desc("slices", "system", "host_to_device_transfers", "i-1");
    d.nc_idx = nc;
    struct itrack *t = ingest_track(r.g, &d);
    for (int i = 0; i < 400; i++) {
      if (i % 4 == 0) /* where the burst begins */
        rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
      const char *a = rates_args[i % 9];
      if (nc == 1 && i == 17)
        a = "{\"size\":1.5}";
      if (nc == 2 && i == 5)
        a = "{\"size\":\"0012\"}";
      if (nc == 2 && i == 6)
        a = "{\"size\":\"12345678901234567890\"}";
      rates_slice(r.g, t, i, 1000000 * (int64_t)(i / 4) + (int64_t)(rnd >> 54),
                  a);
    }
  }
  int scans = -1;
  struct fake_end e = {rates_before_system, rates_after_system, &scans};
  sqlite3 *db = fake_close_with(&r, &e);
  assert_int_equal(scans, 2);
  assert_int_equal(one_int(db, "SELECT max(lane) FROM slice WHERE track = 1"),
                   1);
  double total[3];
  for (int nc = 0; nc < 3; nc++)
    total[nc] = rates_check_nc(db, nc);
  /* 45 of 123456789012345678 and 44 of 98765432109876543; NC 2 has a
   * byte count of 20 digits more */
  assert_true(total[0] > 9.8e18 && total[1] >= total[0] &&
              total[2] > total[0] + 1.2e19);
  fake_done(&r, db);
}

/* A rate over two tracks (as a device profile's DMA queues). */
struct rates_two {
  struct itrack *t[2];
  int64_t first, last, count, ctr;
  int scans;
};

static void rates_before_two(struct ing *g, void *ud) {
  struct rates_two *x = ud;
  struct ingest_rate *rt =
      ingest_rates_begin(g, INGEST_RATE_DMA, 5, x->first, x->last, "size");
  for (int k = 0; k < 2; k++)
    ingest_rates_watch(rt, x->t[k]);
}

static void rates_after_two(struct ing *g, void *ud) {
  struct rates_two *x = ud;
  struct store_track d =
      ingest_desc("counter", "device", "dma_throughput", "i-1");
  struct itrack *c = ingest_track(g, &d);
  x->ctr = ingest_track_id(c);
  x->scans = ingest_rates_emit(
      g, c, INGEST_RATE_DMA, 5, x->first, x->last, x->count,
      "SELECT s.ts, s.dur, coalesce(CAST(nex_json_member(s.args, 'size') AS "
      "REAL), 0) FROM track t CROSS JOIN slice s ON s.track = t.id WHERE "
      "t.source = 'queue' AND ?1 = 5");
}

/* A rate over two tracks whose slices overlap in time: all of the first
 * track's, lane by lane, are summed before the second's, as placed (run
 * 0) or by the scan (run 1: a byte count of a fraction). */
static void test_rates_tracks(void **state) {
  (void)state;
  for (int run = 0; run < 2; run++) {
    struct fake_run r;
    fake_open(&r, "rates-tracks");
    struct rates_two x = {.first = 0, .last = 100000000, .count = 800};
    for (int k = 0; k < 2; k++) {
      struct store_track d = ingest_desc("slices", "device", "queue", "i-1");
      d.label = k ? "q1" : "q0";
      x.t[k] = ingest_track(r.g, &d);
    }
    for (int i = 0; i < 400; i++)
      for (int k = 0; k < 2; k++)
        rates_slice(r.g, x.t[k], i, 200000 * (int64_t)(i / 4) + 300 * k,
                    run && k == 0 && i == 9 ? "{\"size\":1.5}"
                                            : rates_args[(i + k) % 9]);
    struct fake_end e = {rates_before_two, rates_after_two, &x};
    sqlite3 *db = fake_close_with(&r, &e);
    assert_int_equal(x.scans, run);
    assert_true(rates_check(db, "source = 'queue'", "size", x.ctr, x.first,
                            x.last) > 1.9e19);
    fake_done(&r, db);
  }
}

/* Warning rows, the listener, and the cap of 1000 rows per file with one
 * summary row at the end of the run. */
static void test_warnings(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "warnings");
  ingest_warn(r.g, "Corrupt Data", "f.json", 12, "bad %d", 7);
  ingest_warn(r.g, "Clock", NULL, 0, "no sync");
  for (int i = 0; i < INGEST_FILE_WARNINGS + 2; i++)
    ingest_warn(r.g, i < INGEST_FILE_WARNINGS ? "Missing Data" : "Clock",
                "big.pb", (uint64_t)i, "record %d", i);
  assert_int_equal(r.warnings_told, 2 + INGEST_FILE_WARNINGS);
  sqlite3 *db = fake_close(&r);
  assert_int_equal(r.warnings_told, 3 + INGEST_FILE_WARNINGS);
  assert_int_equal(r.st.warnings, 3 + INGEST_FILE_WARNINGS);
  assert_rows(db,
              "SELECT category, file, offset, message FROM Warning WHERE "
              "file IS NOT 'big.pb' ORDER BY id",
              "Corrupt Data|f.json|12|bad 7;Clock|-|0|no sync");
  assert_rows(db,
              "SELECT count(*), min(offset), max(offset) FROM Warning WHERE "
              "file = 'big.pb' AND message LIKE 'record %'",
              "1000|0|999");
  assert_rows(db,
              "SELECT category, offset, message FROM Warning WHERE file = "
              "'big.pb' AND message NOT LIKE 'record %'",
              "Clock|1000|2 more warnings of this file from this offset on, "
              "not recorded (the first 1000 of a file are)");
  fake_done(&r, db);
}

static int freed;

static void count_free(void *p) {
  freed++;
  free(p);
}

static int placed_n;
static int64_t placed[8][2]; /* (ts, lane) in the order the hook saw */

static void hook_placed(struct ing *g, struct itrack *t, int64_t lane,
                        const struct lanes_item *it) {
  (void)g, (void)t;
  placed[placed_n][0] = it->ts;
  placed[placed_n++][1] = lane;
}

static const struct ingest_hook test_hook = {hook_placed, NULL, count_free};

/* The current context is the sink's own copy; a reader's states are found
 * by key (or made on first use) and freed with its function, once; the
 * event filter applies; a track hook sees every slice
 * placed in (ts, lane) order and is freed with the track. */
static void test_context_state_hook(void **state) {
  (void)state;
  static const char key_a, key_b;
  struct fake_run r;
  fake_open(&r, "state");
  assert_null(ingest_context_instance(r.g));
  assert_int_equal(ingest_context_pid(r.g), -1);
  char inst[] = "i-2";
  ingest_context_set(r.g, inst, 5);
  inst[0] = 'x';
  assert_string_equal(ingest_context_instance(r.g), "i-2");
  assert_int_equal(ingest_context_pid(r.g), 5);
  ingest_context_set(r.g, ingest_context_instance(r.g), 6); /* its own */
  assert_string_equal(ingest_context_instance(r.g), "i-2");
  freed = 0;
  assert_null(ingest_state(r.g, &key_a));
  int *a1 = xcalloc(1, sizeof *a1), *a2 = xcalloc(1, sizeof *a2);
  ingest_state_set(r.g, &key_a, a1, count_free);
  ingest_state_set(r.g, &key_b, xcalloc(1, 1), count_free);
  assert_ptr_equal(ingest_state(r.g, &key_a), a1);
  ingest_state_set(r.g, &key_a, a2, count_free); /* a1 freed */
  assert_int_equal(freed, 1);
  assert_ptr_equal(ingest_state(r.g, &key_a), a2);
  ingest_state_set(r.g, &key_b, NULL, NULL); /* dropped */
  assert_int_equal(freed, 2);
  assert_null(ingest_state(r.g, &key_b));
  int *made = ingest_state_make(r.g, &key_b, sizeof *made, NULL);
  assert_int_equal(*made, 0);
  assert_ptr_equal(ingest_state_make(r.g, &key_b, sizeof *made, NULL), made);
  assert_true(ingest_keep_event(r.g, 17, "kept"));
  assert_false(ingest_keep_event(r.g, 18, "skipped"));
  assert_int_equal(r.g->file_pos, 18);
  struct store_track d = fake_desc("slices", NULL);
  struct itrack *t = ingest_track(r.g, &d);
  ingest_track_hook(t, &test_hook, xcalloc(1, 1));
  assert_non_null(ingest_track_hook_state(t, &test_hook));
  assert_null(ingest_track_hook_state(t, &(struct ingest_hook){0}));
  placed_n = 0;
  fake_slice(r.g, t, 50, 1, 1, "z", 0);
  fake_slice(r.g, t, 10, 100, 2, "y", 0);
  fake_slice(r.g, t, 10, 5, 3, "x", 0);
  sqlite3 *db = fake_close(&r);
  assert_int_equal(freed, 4); /* a2 and the hook's state (made: free()) */
  assert_int_equal(placed_n, 3);
  int64_t want[3][2] = {{10, 0}, {10, 1}, {50, 1}};
  assert_memory_equal(placed, want, sizeof want);
  fake_done(&r, db);
}

/* Slices of trace formats (args spliced or kept as "args", flows made
 * int64) and the process/thread rows: a name fills a missing one, or
 * replaces it when asked. */
static void test_trace_rows(void **state) {
  (void)state;
  struct fake_run r;
  fake_open(&r, "trace");
  struct store_track d = fake_desc("slices", NULL);
  struct itrack *t = ingest_track(r.g, &d);
  uint64_t flows[] = {UINT64_MAX, 5};
  const char *args[] = {"{\"a\":1}", "[1,2]", "{ }", NULL};
  for (int i = 0; i < 4; i++)
    ingest_trace_slice(
        r.g, t,
        &(struct ingest_trace_slice){.ts = 100 * i,
                                     .dur = 10,
                                     .name = "ev",
                                     .cat = i == 3 ? NULL : "c",
                                     .args_json = args[i],
                                     .instant = i == 0,
                                     .incomplete = i == 1,
                                     .flow_ids = i == 0 ? flows : NULL,
                                     .n_flow_ids = i == 0 ? 2 : 0});
  ingest_trace_process(r.g, "i", 1, "first", false);
  ingest_trace_process(r.g, "i", 1, "second", false); /* kept: first */
  ingest_trace_process(r.g, "i", 2, NULL, false);
  ingest_trace_process(r.g, "i", 2, "filled", false);
  ingest_trace_process(r.g, "i", 3, "old", false);
  ingest_trace_process(r.g, "i", 3, "new", true);
  ingest_trace_process(r.g, "i", 3, NULL, true); /* no name: kept */
  ingest_trace_thread(r.g, "i", 1, 10, "t", false);
  ingest_trace_thread(r.g, "i", 1, 10, "u", false);
  ingest_trace_thread(r.g, "i", 1, 11, "t", false);
  ingest_trace_thread(r.g, "i", 1, 11, "u", true);
  ingest_process(r.g, "i", 4, NULL, "dir4"); /* not a trace's: chrome 0 */
  sqlite3 *db = fake_close(&r);
  assert_rows(db, "SELECT ts, id, args FROM slice ORDER BY ts",
              "0|4611686018427387904|{\"cat\":\"c\",\"instant\":1,\"a\":1};"
              "100|4611686018427387905|{\"cat\":\"c\",\"incomplete\":1,"
              "\"args\":[1,2]};"
              "200|4611686018427387906|{\"cat\":\"c\"};"
              "300|4611686018427387907|-");
  assert_rows(db, "SELECT flow_id, ts, lane FROM flow ORDER BY flow_id",
              "5|0|0;9223372036854775807|0|0");
  assert_rows(db,
              "SELECT pid, name, named, chrome, dir FROM process ORDER BY pid",
              "1|first|1|1|-;2|filled|0|1|-;3|new|1|1|-;4|-|0|0|dir4");
  assert_rows(db, "SELECT tid, name, named FROM thread ORDER BY tid",
              "10|t|1;11|u|1");
  fake_done(&r, db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slices),
      cmocka_unit_test(test_attrs),
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_counters_unsorted),
      cmocka_unit_test(test_rates),
      cmocka_unit_test(test_rates_tracks),
      cmocka_unit_test(test_warnings),
      cmocka_unit_test(test_context_state_hook),
      cmocka_unit_test(test_trace_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
