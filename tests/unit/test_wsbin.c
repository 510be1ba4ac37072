/* test_wsbin.c -- the binary window frames: header fields, the names sent
 * once per connection (again when a re-ingested store changed a text), the
 * dictionary, narrow columns with a high part only when needed, a slice
 * track restarting from its LOD level, exactness, counters, deflate. */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* cmocka.h needs the headers above */
#include <cmocka.h>

#include "wsbin.h"

static uint32_t u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return le32toh(v);
}

static int64_t i64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return (int64_t)le64toh(v);
}

/* A reader over a frame. */
struct rd {
  const unsigned char *p;
  size_t off, len;
};

static void pad8(struct rd *r) { r->off = (r->off + 7) & ~(size_t)7; }

/* An integer column: n values into out. */
static void int_col(struct rd *r, size_t n, int64_t *out) {
  int w = r->p[r->off], hw = r->p[r->off + 1];
  r->off += 8;
  assert_true(w == 1 || w == 2 || w == 4);
  for (size_t i = 0; i < n; i++) {
    const unsigned char *q = r->p + r->off + i * (size_t)w;
    out[i] = w == 1 ? q[0] : w == 2 ? (int64_t)(q[0] | q[1] << 8) : u32(q);
  }
  r->off += n * (size_t)w;
  pad8(r);
  if (hw) {
    for (size_t i = 0; i < n; i++) {
      const unsigned char *q = r->p + r->off + i * (size_t)hw;
      int64_t h = hw == 1   ? q[0]
                  : hw == 2 ? (int64_t)(q[0] | q[1] << 8)
                            : u32(q);
      out[i] += h << 32;
    }
    r->off += n * (size_t)hw;
    pad8(r);
  }
  assert_true(r->off <= r->len);
}

static const struct query_window win = {NULL, 0, 1000, 9000, 100, NULL};

/* Two slice tracks: 7 (lane 0: two rows) and 9 (one lane, a restart
 * first: its first attempt's lane must vanish). */
static struct wsbin *slices_frame(void) {
  struct wsbin *b = wsbin_new(WSBIN_SLICES);
  const struct query_sink *s = wsbin_sink(b);
  int64_t ts[] = {900, 5000}, dur[] = {300, 10}, name[] = {5, 6},
          grp[] = {0, 5}, count[] = {1, 70000}, busy[] = {300, 7};
  s->track(s->ud, 7, -1, "neuron_rt", false);
  s->lane(s->ud, 0, ts, dur, name, grp, count, busy, 2, false);
  int64_t ts9[] = {2000, 3000, 4000}, one[] = {1, 1, 1}, nm9[] = {6, 6, 6};
  s->track(s->ud, 9, -1, "neuron_rt", false);
  s->lane(s->ud, 0, ts9, one, nm9, one, one, one, 3, true);
  s->track(s->ud, 9, 2, "neuron_rt", true); /* the fallback to LOD */
  int64_t big[] = {(int64_t)1 << 33}, nm[] = {5}, zero[] = {0}, c3[] = {3};
  s->lane(s->ud, 1, ts9, big, nm, zero, c3, c3, 1, false);
  s->name(s->ud, 5, "nrt_execute");
  s->name(s->ud, 6, "nrt_load");
  return b;
}

static void test_slices(void **state) {
  (void)state;
  struct query_err e;
  struct wsbin *b = slices_frame();
  assert_false(wsbin_exact(b)); /* track 9 answered from level 2 */
  assert_int_equal(wsbin_finish(b, 42, WSBIN_FINAL, &win, false, &e), 0);
  assert_int_equal(wsbin_id(b), 42);
  assert_int_equal(wsbin_flags(b), WSBIN_FINAL);
  struct wsbin_names *sent = wsbin_names_new();
  size_t len;
  unsigned char *f = wsbin_write(b, sent, 16, &len), *p = f + 16;
  assert_int_equal(len % 8, 0);
  assert_memory_equal(p, "NXB2", 4);
  assert_int_equal(u32(p + 4), 42);
  assert_int_equal(p[8], WSBIN_SLICES);
  assert_int_equal(p[9], WSBIN_FINAL);
  assert_int_equal(u32(p + 12), 3);   /* dictionary: 0, 5, 6 */
  assert_int_equal(i64(p + 16), 900); /* base: the earliest row */
  assert_int_equal(i64(p + 24), 1000);
  assert_int_equal(i64(p + 32), 9000);
  assert_int_equal(i64(p + 40), 80); /* (9000 - 1000) / 100 */
  assert_int_equal(u32(p + 48), 100);
  assert_int_equal(u32(p + 52), 2); /* names */
  assert_int_equal(u32(p + 56), 2); /* tracks */
  assert_int_equal(u32(p + 60), 3); /* rows: 2 + 1, the restarted lane gone */
  struct rd r = {p, 64, len};
  assert_int_equal(u32(p + r.off), 5);
  assert_int_equal(u32(p + r.off + 4), 11);
  assert_memory_equal(p + r.off + 8, "nrt_execute", 11);
  r.off += 8 + 11;
  assert_int_equal(u32(p + r.off), 6);
  r.off += 8 + 8;
  pad8(&r);
  assert_int_equal(u32(p + r.off), 0);
  assert_int_equal(u32(p + r.off + 4), 5);
  assert_int_equal(u32(p + r.off + 8), 6);
  r.off += 12;
  pad8(&r);
  /* track 7 */
  assert_int_equal(i64(p + r.off), 7);
  assert_int_equal((int32_t)u32(p + r.off + 8), -1);
  assert_int_equal(u32(p + r.off + 12), 1);
  assert_int_equal(u32(p + r.off + 16), 0); /* no source for slices */
  r.off += 24;
  assert_int_equal(u32(p + r.off), 0);     /* lane 0 */
  assert_int_equal(u32(p + r.off + 4), 2); /* rows */
  assert_int_equal(u32(p + r.off + 8), 0);
  r.off += 16;
  /* track 9: only the lane after the restart, at level 2 */
  assert_int_equal(i64(p + r.off), 9);
  assert_int_equal(u32(p + r.off + 8), 2);
  assert_int_equal(u32(p + r.off + 12), 1);
  r.off += 24;
  assert_int_equal(u32(p + r.off), 1);
  assert_int_equal(u32(p + r.off + 4), 1);
  r.off += 16;
  int64_t ts[3], dur[3], name[3], grp[3], count[3], idle[3];
  assert_int_equal(p[r.off], 2); /* ts - base: 0, 4100, 1100 */
  assert_int_equal(p[r.off + 1], 0);
  int_col(&r, 3, ts);
  assert_int_equal(p[r.off + 1], 1); /* dur 2^33 needs a high part */
  int_col(&r, 3, dur);
  assert_int_equal(p[r.off], 1); /* dictionary indexes fit a byte */
  int_col(&r, 3, name);
  int_col(&r, 3, grp);
  int_col(&r, 3, count);
  int_col(&r, 3, idle);
  assert_int_equal(r.off, len);
  int64_t want_ts[] = {0, 4100, 1100}, want_dur[] = {300, 10, (int64_t)1 << 33};
  int64_t want_name[] = {1, 2, 1}, want_grp[] = {0, 1, 0},
          want_count[] = {1, 70000, 3},
          want_idle[] = {0, 3, ((int64_t)1 << 33) - 3}; /* dur - busy */
  assert_memory_equal(ts, want_ts, sizeof ts);
  assert_memory_equal(dur, want_dur, sizeof dur);
  assert_memory_equal(name, want_name, sizeof name);
  assert_memory_equal(grp, want_grp, sizeof grp);
  assert_memory_equal(count, want_count, sizeof count);
  assert_memory_equal(idle, want_idle, sizeof idle);
  free(f);

  /* The same frame again on this connection: no names. */
  f = wsbin_write(b, sent, 0, &len);
  assert_int_equal(u32(f + 52), 0);
  free(f);
  wsbin_free(b);

  /* A new store gave id 6 another text: sent again, id 5 not. */
  b = wsbin_new(WSBIN_SLICES);
  const struct query_sink *s = wsbin_sink(b);
  int64_t ts1[] = {1000}, v1[] = {1}, n5[] = {5}, n6[] = {6};
  s->track(s->ud, 7, -1, "", false);
  s->lane(s->ud, 0, ts1, v1, n5, n6, v1, v1, 1, false);
  s->name(s->ud, 5, "nrt_execute");
  s->name(s->ud, 6, "nrt_load_v2");
  assert_true(wsbin_exact(b));
  assert_int_equal(wsbin_finish(b, 1, WSBIN_FINAL, &win, false, &e), 0);
  f = wsbin_write(b, sent, 0, &len);
  assert_int_equal(u32(f + 52), 1);
  assert_int_equal(u32(f + 64), 6);
  assert_memory_equal(f + 72, "nrt_load_v2", 11);
  free(f);
  wsbin_free(b);
  wsbin_names_free(sent);
}

static void test_counters(void **state) {
  (void)state;
  struct query_err e;
  struct wsbin *b = wsbin_new(WSBIN_COUNTERS);
  const struct query_sink *s = wsbin_sink(b);
  int64_t ts[] = {500, 1500}, count[] = {1, 4};
  double mn[] = {1.5, -2}, mx[] = {1.5, 7.25}, last[] = {1.5, 3};
  s->track(s->ud, 40, -1, "neuron_hbm_usage", false);
  s->series(s->ud, 0, -1, "total_bytes", "bytes", ts, mn, mx, last, count, 2,
            false);
  assert_true(wsbin_exact(b));
  assert_int_equal(wsbin_finish(b, 3, WSBIN_COARSE, &win, false, &e), 0);
  struct wsbin_names *sent = wsbin_names_new();
  size_t len;
  unsigned char *p = wsbin_write(b, sent, 0, &len);
  assert_int_equal(p[8], WSBIN_COUNTERS);
  assert_int_equal(p[9], WSBIN_COARSE);
  assert_int_equal(u32(p + 12), 0);
  assert_int_equal(i64(p + 16), 500);
  assert_int_equal(u32(p + 60), 2);
  struct rd r = {p, 64, len};
  assert_int_equal(i64(p + r.off), 40);
  assert_int_equal(u32(p + r.off + 16), 16);
  assert_memory_equal(p + r.off + 24, "neuron_hbm_usage", 16);
  r.off += 24 + 16;
  assert_int_equal(u32(p + r.off + 8), 2);   /* rows */
  assert_int_equal(u32(p + r.off + 16), 11); /* name */
  assert_int_equal(u32(p + r.off + 20), 5);  /* unit */
  assert_memory_equal(p + r.off + 24, "total_bytesbytes", 16);
  r.off += 24 + 16;
  int64_t t[2];
  int_col(&r, 2, t);
  assert_int_equal(t[1], 1000);
  for (int k = 0; k < 3; k++) { /* min, max, last: doubles */
    assert_int_equal(p[r.off], 8);
    double d[2];
    memcpy(d, p + r.off + 8, 16);
    assert_true(d[1] == (k == 0 ? -2 : k == 1 ? 7.25 : 3));
    r.off += 8 + 16;
  }
  int64_t c[2];
  int_col(&r, 2, c);
  assert_int_equal(c[1], 4);
  assert_int_equal(r.off, len);
  free(p);
  wsbin_free(b);
  wsbin_names_free(sent);
}

static void test_deflate(void **state) {
  (void)state;
  struct query_err e;
  struct wsbin *b[2];
  size_t len[2];
  unsigned char *f[2];
  for (int k = 0; k < 2; k++) {
    b[k] = wsbin_new(WSBIN_SLICES);
    const struct query_sink *s = wsbin_sink(b[k]);
    int64_t ts[4000], v[4000];
    for (int i = 0; i < 4000; i++) {
      ts[i] = 1000 + 2 * i;
      v[i] = 1;
    }
    s->track(s->ud, 7, -1, "", false);
    s->lane(s->ud, 0, ts, v, v, v, v, v, 4000, false);
    s->name(s->ud, 1, "x");
    assert_int_equal(wsbin_finish(b[k], 1, WSBIN_FINAL, &win, k == 1, &e), 0);
    struct wsbin_names *sent = wsbin_names_new();
    f[k] = wsbin_write(b[k], sent, 0, &len[k]);
    wsbin_names_free(sent);
  }
  assert_int_equal(f[1][9], WSBIN_FINAL | WSBIN_DEFLATE);
  assert_true(len[1] < len[0] / 2);
  /* header and names as they are, then the inflated body is the other's */
  size_t head = 64 + 8 + 8; /* one name of 1 byte, padded */
  assert_memory_equal(f[0] + 16, f[1] + 16, head - 16);
  unsigned char *out = malloc(len[0]);
  z_stream z = {0};
  assert_int_equal(inflateInit2(&z, -15), Z_OK);
  z.next_in = f[1] + head;
  z.avail_in = (uInt)(len[1] - head);
  z.next_out = out;
  z.avail_out = (uInt)(len[0] - head);
  assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
  assert_int_equal(z.total_out, len[0] - head);
  inflateEnd(&z);
  assert_memory_equal(out, f[0] + head, len[0] - head);
  free(out);
  for (int k = 0; k < 2; k++) {
    free(f[k]);
    wsbin_free(b[k]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slices),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_deflate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
