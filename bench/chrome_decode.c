/* chrome_decode.c -- the Chrome trace decoder alone: fmt_chrome_read over
 * one file with callbacks that only count, so that bench/chrome_bench.py can
 * split the ingest time into decoding and the rest (normalisation, SQLite).
 *
 *   chrome_decode FILE   prints "events=N bytes=B slices=S counters=C
 *                        flows=F metas=M skipped=K seconds=T", exits 1 if
 *                        the file could not be read
 */
#include "fmt_chrome.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct chrome_decode_counts {
  uint64_t slices, counters, flows, metas;
};

static int chrome_decode_slice(void *ud, const struct fmt_chrome_slice *s) {
  (void)s;
  ((struct chrome_decode_counts *)ud)->slices++;
  return 0;
}

static int chrome_decode_counter(void *ud, const struct fmt_chrome_counter *c) {
  (void)c;
  ((struct chrome_decode_counts *)ud)->counters++;
  return 0;
}

static int chrome_decode_flow(void *ud, const struct fmt_chrome_flow *f) {
  (void)f;
  ((struct chrome_decode_counts *)ud)->flows++;
  return 0;
}

static int chrome_decode_meta(void *ud, const struct fmt_chrome_meta *m) {
  (void)m;
  ((struct chrome_decode_counts *)ud)->metas++;
  return 0;
}

static void chrome_decode_warning(void *ud, uint64_t offset, const char *msg) {
  (void)ud;
  fprintf(stderr, "chrome_decode: offset %" PRIu64 ": %s\n", offset, msg);
}

static double chrome_decode_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  struct chrome_decode_counts n = {0};
  struct fmt_chrome_cb cb = {&n,
                             chrome_decode_slice,
                             chrome_decode_counter,
                             chrome_decode_flow,
                             chrome_decode_meta,
                             chrome_decode_warning};
  struct fmt_chrome_stats st = {0};
  char *cause = NULL;
  double t0 = chrome_decode_now();
  int rc = fmt_chrome_read(argv[1], &cb, &st, &cause);
  double secs = chrome_decode_now() - t0;
  if (rc != 0) {
    fprintf(stderr, "chrome_decode: %s: %s\n", argv[1],
            cause ? cause : "read failed");
    free(cause);
    return 1;
  }
  printf("events=%" PRIu64 " bytes=%" PRIu64 " slices=%" PRIu64
         " counters=%" PRIu64 " flows=%" PRIu64 " metas=%" PRIu64
         " skipped=%" PRIu64 " seconds=%.3f\n",
         st.events, st.bytes, n.slices, n.counters, n.flows, n.metas,
         st.skipped, secs);
  return 0;
}
