/* test_lanes.c -- lane assignment: no overlaps within a lane, nesting
 * stacks, late slices never dropped, and the LOD level choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lanes.h"
#include "lod.h"

struct placed {
  int64_t ts, dur, lane, id;
};

/* Pushes n slices through a window of `window` and returns them placed,
 * in the order they left the window. */
static struct placed *run(const int64_t (*in)[2], int n, int window) {
  struct lanes *l = lanes_new(window);
  struct placed *out = calloc((size_t)n, sizeof *out);
  int k = 0;
  for (int i = 0; i < n; i++) {
    struct lanes_item it = {.ts = in[i][0], .dur = in[i][1], .id = i};
    struct lanes_item o;
    int64_t lane;
    if (lanes_push(l, &it, &o, &lane))
      out[k++] = (struct placed){o.ts, o.dur, lane, o.id};
  }
  struct lanes_item o;
  int64_t lane;
  while (lanes_pop(l, &o, &lane))
    out[k++] = (struct placed){o.ts, o.dur, lane, o.id};
  assert_int_equal(k, n);
  lanes_free(l);
  return out;
}

static void assert_no_overlap(const struct placed *p, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j || p[i].lane != p[j].lane)
        continue;
      int64_t ei = p[i].ts + (p[i].dur ? p[i].dur : 1);
      int64_t ej = p[j].ts + (p[j].dur ? p[j].dur : 1);
      assert_true(ei <= p[j].ts || ej <= p[i].ts);
    }
}

static int64_t lane_of(const struct placed *p, int n, int64_t id) {
  for (int i = 0; i < n; i++)
    if (p[i].id == id)
      return p[i].lane;
  fail();
  return -1;
}

static void test_nesting_in_completion_order(void **state) {
  (void)state;
  /* children written before their parent, as a capture does */
  const int64_t in[][2] = {{10, 10}, {30, 10}, {0, 100}, {100, 50}, {110, 5}};
  struct placed *p = run(in, 5, 8);
  assert_no_overlap(p, 5);
  assert_int_equal(lane_of(p, 5, 2), 0); /* parent */
  assert_int_equal(lane_of(p, 5, 0), 1);
  assert_int_equal(lane_of(p, 5, 1), 1);
  assert_int_equal(lane_of(p, 5, 3), 0); /* back to back with the parent */
  assert_int_equal(lane_of(p, 5, 4), 1);
  for (int i = 1; i < 5; i++) /* leaves the window in start order */
    assert_true(p[i - 1].ts <= p[i].ts);
  free(p);
}

static void test_instants_same_start_get_lanes(void **state) {
  (void)state;
  const int64_t in[][2] = {{5, 0}, {5, 0}, {5, 0}, {6, 0}};
  struct placed *p = run(in, 4, 4);
  assert_no_overlap(p, 4);
  assert_int_equal(p[0].lane, 0);
  assert_int_equal(p[1].lane, 1);
  assert_int_equal(p[2].lane, 2);
  assert_int_equal(p[3].lane, 0); /* 1 ns later: lane 0 is free again */
  free(p);
}

static void test_late_slice_is_kept(void **state) {
  (void)state;
  /* window of 2: the slice at 0 arrives after 4 later ones */
  const int64_t in[][2] = {{100, 10}, {110, 10}, {120, 10}, {130, 10}, {0, 5}};
  struct placed *p = run(in, 5, 2);
  assert_no_overlap(p, 5);
  assert_int_equal(lane_of(p, 5, 4), 1); /* a new lane, nothing dropped */
  free(p);
}

static void test_overlapping_x_events(void **state) {
  (void)state;
  int64_t in[200][2];
  for (int i = 0; i < 200; i++) {
    in[i][0] = i * 10;
    in[i][1] = 35; /* each overlaps the next three */
  }
  struct placed *p = run((const int64_t(*)[2])in, 200, 16);
  assert_no_overlap(p, 200);
  int64_t max = 0;
  for (int i = 0; i < 200; i++)
    max = p[i].lane > max ? p[i].lane : max;
  assert_int_equal(max, 3);
  free(p);
}

static void test_lod_pick_level(void **state) {
  (void)state;
  /* 1000 events over 1 ms: gap ~1 us; 2 per bucket -> 64*4^L >= 2002 */
  assert_int_equal(lod_pick_level(1000000, 1000), 3); /* 4096 ns */
  assert_int_equal(lod_pick_level(0, 1000), 1);
  assert_int_equal(lod_pick_level(100, 1), 1);
  assert_int_equal(lod_pick_level(INT64_MAX / 2, 2), LOD_MAX_LEVEL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nesting_in_completion_order),
      cmocka_unit_test(test_instants_same_start_get_lanes),
      cmocka_unit_test(test_late_slice_is_kept),
      cmocka_unit_test(test_overlapping_x_events),
      cmocka_unit_test(test_lod_pick_level),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
