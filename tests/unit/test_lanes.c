/* test_lanes.c -- lanes by nesting depth whatever the push order: exact
 * lanes on small hand-written tracks (children before parents, parents
 * at the end, equal starts, partial overlap, zero-length slices), the
 * order slices come back in, every spill and merge path with a tiny
 * budget (same slices, lanes, args and flows as in memory, also when the
 * spill file cannot be created or fills up), and the LOD level choice. */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "lanes.h"
#include "lod.h"
#include "util.h"

static char tmpdir[] = "/tmp/test_lanes.XXXXXX";
static char *store; /* a store path in tmpdir: the spill file goes there */

struct placed {
  int64_t ts, dur, lane, id;
  char *args;
  int64_t flow; /* the first flow id, or -1 */
};

/* Pushes n slices {ts, dur} (id = their index) into one sorter of a pool
 * of `budget` bytes and returns them as lanes_pop hands them back. */
static struct placed *run(const int64_t (*in)[2], int n, size_t budget) {
  struct lanes_pool *pool = lanes_pool_new(store, budget);
  struct lanes *l = lanes_new(pool, LANES_PUSH_ORDER);
  for (int i = 0; i < n; i++) {
    struct lanes_item it = {.ts = in[i][0], .dur = in[i][1], .id = i};
    lanes_push(l, &it);
  }
  int64_t lo = -1, hi = -1;
  assert_int_equal(lanes_pending(l, &lo, &hi), n);
  struct placed *out = calloc((size_t)n + 1, sizeof *out);
  struct lanes_item o;
  int64_t lane;
  int k = 0, rc;
  while ((rc = lanes_pop(l, &o, &lane)) == 1) {
    assert_true(k < n);
    out[k++] = (struct placed){o.ts, o.dur, lane, o.id, NULL, -1};
  }
  assert_int_equal(rc, 0);
  assert_int_equal(k, n);
  assert_int_equal(lanes_pending(l, &lo, &hi), 0);
  lanes_free(l);
  lanes_pool_free(pool);
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

/* Slices come back in (start, lane) order. */
static void assert_start_lane_order(const struct placed *p, int n) {
  for (int i = 1; i < n; i++)
    assert_true(p[i - 1].ts < p[i].ts ||
                (p[i - 1].ts == p[i].ts && p[i - 1].lane < p[i].lane));
}

/* Checks the lane of every slice by id: want[id]. */
static void assert_lanes(const struct placed *p, int n, const int64_t *want) {
  for (int i = 0; i < n; i++)
    assert_int_equal(p[i].lane, want[p[i].id]);
  assert_no_overlap(p, n);
  assert_start_lane_order(p, n);
}

static void test_children_before_parents(void **state) {
  (void)state;
  /* as Kineto writes them: each parent after its children */
  const int64_t in[][2] = {{10, 10}, {30, 10}, {0, 100}, {100, 50},
                           {110, 5}, {12, 3},  {11, 8}};
  const int64_t want[] = {1, 1, 0, 0, 1, 3, 2};
  struct placed *p = run(in, 7, 1 << 20);
  assert_lanes(p, 7, want);
  free(p);
}

static void test_parent_at_the_end(void **state) {
  (void)state;
  /* 2000 consecutive children, then two enclosing slices written last:
   * far beyond any reorder window */
  enum { N = 2000 };
  int64_t(*in)[2] = calloc(N + 2, sizeof *in);
  int64_t *want = calloc(N + 2, sizeof *want);
  for (int i = 0; i < N; i++) {
    in[i][0] = 100 + 10 * i;
    in[i][1] = 10;
    want[i] = 2;
  }
  in[N][0] = 100; /* equal start, longer: above the first child */
  in[N][1] = 10 * N;
  want[N] = 1;
  in[N + 1][0] = 0;
  in[N + 1][1] = 100 + 10 * N;
  want[N + 1] = 0;
  struct placed *p = run((const int64_t(*)[2])in, N + 2, 1 << 20);
  assert_lanes(p, N + 2, want);
  assert_int_equal(p[0].id, N + 1);
  assert_int_equal(p[1].id, N);
  free(p);
  free(want);
  free(in);
}

static void test_equal_starts(void **state) {
  (void)state;
  /* the longer first, then push order: each below the one before */
  const int64_t in[][2] = {{0, 10}, {0, 10}, {0, 5}, {0, 10}, {10, 1}};
  const int64_t want[] = {0, 1, 3, 2, 0};
  struct placed *p = run(in, 5, 1 << 20);
  assert_lanes(p, 5, want);
  free(p);
}

static void test_partial_overlap(void **state) {
  (void)state;
  /* B overlaps A without nesting: the next free lane.  C is inside both:
   * below B, which started last.  D is inside B only; E follows A. */
  const int64_t in[][2] = {{0, 10}, {5, 15}, {6, 2}, {12, 3}, {20, 5}};
  const int64_t want[] = {0, 1, 2, 2, 0};
  struct placed *p = run(in, 5, 1 << 20);
  assert_lanes(p, 5, want);
  free(p);
}

static void test_partial_overlap_parent_deeper(void **state) {
  (void)state;
  /* B starts inside X and outlives it: lane 2.  A, inside P only, takes
   * lane 1 after X.  C is inside P, B and A: below A, which started last,
   * but lane 2 is B's: lane 3 */
  const int64_t in[][2] = {{0, 1000}, {10, 10}, {15, 485}, {30, 570}, {40, 10}};
  const int64_t want[] = {0, 1, 2, 1, 3};
  struct placed *p = run(in, 5, 1 << 20);
  assert_lanes(p, 5, want);
  free(p);
}

static void test_zero_length(void **state) {
  (void)state;
  /* a zero-length slice occupies 1 ns: at a parent's start it nests, at
   * its end it does not, three at the same start stack */
  const int64_t in[][2] = {{10, 0}, {0, 10}, {0, 0}, {9, 0},
                           {5, 0},  {5, 0},  {5, 0}, {6, 0}};
  const int64_t want[] = {0, 0, 1, 1, 1, 2, 3, 1};
  struct placed *p = run(in, 8, 1 << 20);
  assert_lanes(p, 8, want);
  free(p);
}

static void test_consecutive_share_a_lane(void **state) {
  (void)state;
  /* kernels back to back on one stream, written in any order */
  int64_t in[100][2];
  int64_t want[100] = {0};
  for (int i = 0; i < 100; i++) {
    in[i][0] = (i * 37 % 100) * 50;
    in[i][1] = 50;
  }
  struct placed *p = run((const int64_t(*)[2])in, 100, 1 << 20);
  assert_lanes(p, 100, want);
  free(p);
}

static void test_overlapping_x_events(void **state) {
  (void)state;
  int64_t in[200][2];
  for (int i = 0; i < 200; i++) {
    in[i][0] = i * 10;
    in[i][1] = 35; /* each overlaps the next three */
  }
  struct placed *p = run((const int64_t(*)[2])in, 200, 1 << 20);
  assert_no_overlap(p, 200);
  assert_start_lane_order(p, 200);
  for (int i = 0; i < 200; i++)
    assert_int_equal(p[i].lane, i % 4);
  free(p);
}

/* A deterministic trace of two tracks: call trees of depth up to 6 written
 * in completion order (children first), with args and flows on some
 * slices; pushed into one pool of `budget` bytes.  Each track is drained
 * twice: half of its trees, then the rest.  Returns the slices handed back,
 * track 0's then track 1's, with *n their count. */
struct tree_gen {
  int64_t ts;
  int64_t id;
};

static void tree_push(struct lanes *l, struct tree_gen *g, int depth) {
  int64_t start = g->ts++;
  int64_t id = g->id++;
  int kids = depth < 6 ? (int)(id * 7 % 4) : 0;
  for (int k = 0; k < kids; k++)
    tree_push(l, g, depth + 1);
  g->ts += 1 + id % 3;
  struct lanes_item it = {.ts = start, .dur = g->ts - start, .id = id};
  char *args = NULL;
  uint64_t flows[2] = {(uint64_t)id * 11, (uint64_t)id * 13};
  if (id % 3 == 0) {
    /* some larger than the 256-byte read buffers of a tiny budget */
    args = xasprintf("{\"k\":%" PRId64 ",\"pad\":\"%0*d\"}", id,
                     (int)(id % 9 == 0 ? 400 : id % 50), 0);
    it.args = args;
    it.args_len = strlen(args);
  }
  if (id % 5 == 0) {
    it.flows = flows;
    it.n_flows = 2;
  }
  lanes_push(l, &it);
  /* the sorter keeps copies: the caller's memory is its own again */
  if (args)
    memset(args, 'x', it.args_len);
  flows[0] = flows[1] = 0;
  free(args);
  g->ts += id % 2; /* a gap, or none */
}

enum { TREES_MAX = 200000 };

static int drain(struct lanes *l, struct placed *out, int k) {
  struct lanes_item o;
  int64_t lane;
  int rc;
  while ((rc = lanes_pop(l, &o, &lane)) == 1) {
    assert_true(k < TREES_MAX);
    out[k++] = (struct placed){o.ts,
                               o.dur,
                               lane,
                               o.id,
                               o.args ? xstrndup(o.args, o.args_len) : NULL,
                               o.n_flows ? (int64_t)o.flows[1] : -1};
    if (o.n_flows)
      assert_int_equal(o.flows[0] * 13, o.flows[1] * 11);
    if (o.args) /* NUL-terminated, from memory and from runs alike */
      assert_int_equal(strlen(o.args), o.args_len);
  }
  assert_int_equal(rc, 0);
  return k;
}

static struct placed *trees(const char *store_path, size_t budget, int *n) {
  struct lanes_pool *pool = lanes_pool_new(store_path, budget);
  struct lanes *l[2] = {lanes_new(pool, LANES_PUSH_ORDER), lanes_new(pool, LANES_PUSH_ORDER)};
  struct tree_gen g[2] = {{0, 0}, {5, 100000}};
  struct placed *out = calloc(TREES_MAX, sizeof *out);
  int k = 0;
  for (int half = 0; half < 2; half++) {
    for (int t = 0; t < 12; t++)
      tree_push(l[t % 3 == 0], &g[t % 3 == 0], 0); /* track 1 is smaller */
    /* track 0 first: drained with track 1's buffer or runs pending */
    k = drain(l[0], out, k);
  }
  k = drain(l[1], out, k);
  lanes_free(l[0]);
  lanes_free(l[1]);
  lanes_pool_free(pool);
  *n = k;
  return out;
}

static void free_placed(struct placed *p, int n) {
  for (int i = 0; i < n; i++)
    free(p[i].args);
  free(p);
}

static void test_spill_and_merge(void **state) {
  (void)state;
  int n_ref, n_small, n_none;
  struct placed *ref = trees(store, 1 << 30, &n_ref);
  /* 2 KiB: spills every few slices, runs read back through buffers of
   * 256 bytes that grow for the records larger than that */
  struct placed *small = trees(store, 2048, &n_small);
  /* a store in a missing directory: no spill file, all stays in memory */
  char *missing = xasprintf("%s/missing/x.db", tmpdir);
  struct placed *none = trees(missing, 64, &n_none);
  free(missing);
  /* a spill file that fills up (EFBIG past 16 KiB, far less than what is
   * spilled) while buffers wait to be written: those not written go back
   * to their sorters, the runs written are read back */
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 16384;
  signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int n_full;
  struct placed *full = trees(store, 2048, &n_full);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, SIG_DFL);
  assert_true(n_ref > 1000);
  assert_int_equal(n_small, n_ref);
  assert_int_equal(n_none, n_ref);
  assert_int_equal(n_full, n_ref);
  int64_t maxlane = 0;
  for (int i = 0; i < n_ref; i++) {
    struct placed *v[3] = {&small[i], &none[i], &full[i]};
    for (int j = 0; j < 3; j++) {
      assert_int_equal(v[j]->id, ref[i].id);
      assert_int_equal(v[j]->ts, ref[i].ts);
      assert_int_equal(v[j]->dur, ref[i].dur);
      assert_int_equal(v[j]->lane, ref[i].lane);
      assert_int_equal(v[j]->flow, ref[i].flow);
      if (ref[i].args)
        assert_string_equal(v[j]->args, ref[i].args);
      else
        assert_null(v[j]->args);
    }
    maxlane = ref[i].lane > maxlane ? ref[i].lane : maxlane;
  }
  assert_int_equal(maxlane, 6); /* depth 0..6: the trees' nesting */
  free_placed(ref, n_ref);
  free_placed(small, n_small);
  free_placed(none, n_none);
  free_placed(full, n_full);
}

static void test_tree_depth(void **state) {
  (void)state;
  /* the trees pushed children first get their nesting depth: each
   * slice's innermost container is exactly one lane up */
  int n;
  struct placed *p = trees(store, 1 << 30, &n);
  for (int i = 0; i < n; i++) {
    int64_t end = p[i].ts + p[i].dur;
    int64_t parent = -1;
    for (int j = i - 1; j >= 0 && parent < 0; j--)
      if ((p[j].id >= 100000) == (p[i].id >= 100000) && p[j].ts <= p[i].ts &&
          p[j].ts + p[j].dur >= end)
        parent = p[j].lane;
    assert_int_equal(p[i].lane, parent + 1);
  }
  free_placed(p, n);
}

static void test_free_while_draining(void **state) {
  (void)state;
  /* a sorter freed in the middle of a drain, runs spilled: no leak (the
   * sanitizer builds check) and nothing handed back twice */
  struct lanes_pool *pool = lanes_pool_new(store, 512);
  struct lanes *l = lanes_new(pool, LANES_PUSH_ORDER);
  struct tree_gen g = {0, 0};
  for (int t = 0; t < 20; t++)
    tree_push(l, &g, 0);
  struct lanes_item o;
  int64_t lane;
  for (int k = 0; k < 5; k++)
    assert_int_equal(lanes_pop(l, &o, &lane), 1);
  lanes_free(l);
  lanes_pool_free(pool);
}

static void test_lod_pick_level(void **state) {
  (void)state;
  /* 1000 events over 1 ms: gap ~1 us; 2 per bucket -> 64*4^L >= 2002 */
  assert_int_equal(lod_pick_level(1000000, 1000), 3); /* 4096 ns */
  assert_int_equal(lod_pick_level(0, 1000), 1);
  assert_int_equal(lod_pick_level(100, 1), 1);
  assert_int_equal(lod_pick_level(INT64_MAX / 2, 2), LOD_MAX_LEVEL);
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(tmpdir))
    return -1;
  store = xasprintf("%s/store.db", tmpdir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(store);
  return rmdir(tmpdir); /* the spill files were unlinked: it is empty */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_children_before_parents),
      cmocka_unit_test(test_parent_at_the_end),
      cmocka_unit_test(test_equal_starts),
      cmocka_unit_test(test_partial_overlap),
      cmocka_unit_test(test_partial_overlap_parent_deeper),
      cmocka_unit_test(test_zero_length),
      cmocka_unit_test(test_consecutive_share_a_lane),
      cmocka_unit_test(test_overlapping_x_events),
      cmocka_unit_test(test_spill_and_merge),
      cmocka_unit_test(test_tree_depth),
      cmocka_unit_test(test_free_while_draining),
      cmocka_unit_test(test_lod_pick_level),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
