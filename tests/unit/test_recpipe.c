/* test_recpipe.c -- a decoder's records handed to the calling thread
 * (server/input/recpipe.c): every record replayed in order with its
 * strings and blob, records larger than a batch, a stop, and the same
 * calls when no thread can be started (pthread_create made to fail:
 * testthreads.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "recpipe.h"
#include "testthreads.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ records */

struct rec {
  uint64_t i;
  const char *name, *note; /* note: NULL on odd records */
  const unsigned char *blob;
  size_t blob_len;
};

/* The decoder: n records, record k of kind k % 3, a blob of 3 MiB on every
 * 1000th (larger than a batch), until the caller stops taking them. */
struct source {
  uint64_t n, made;
};

static void decode(struct recpipe *p, void *arg) {
  struct source *s = arg;
  unsigned char *big = xmalloc(3 << 20);
  for (uint64_t k = 0; k < s->n && !recpipe_stopped(p); k++) {
    char name[32];
    snprintf(name, sizeof name, "record-%" PRIu64, k);
    for (size_t b = 0; b < 3u << 20; b += 4096)
      big[b] = (unsigned char)(k + b);
    struct rec r = {k, name, k % 2 ? NULL : "even", big,
                    k % 1000 == 999 ? 3u << 20 : k % 7};
    const char **const f[] = {&r.name, &r.note};
    const struct recpipe_blob b[] = {{(const void **)&r.blob, r.blob_len}};
    recpipe_put(p, (uint32_t)(k % 3), &r, sizeof r, b, 1, f, 2);
    s->made++;
  }
  free(big);
}

struct log {
  struct sbuf b;
  uint64_t stop_at, seen;
};

static int replay(void *ud, uint32_t kind, const void *body) {
  struct log *l = ud;
  const struct rec *r = body;
  unsigned sum = 0;
  for (size_t b = 0; b < r->blob_len; b += 4096)
    sum += r->blob[b];
  sbuf_printf(&l->b, "%u %" PRIu64 " %s %s %zu %u\n", kind, r->i, r->name,
              r->note ? r->note : "-", r->blob_len, sum);
  return ++l->seen == l->stop_at ? 7 : 0;
}

/* Runs a source of n records through a recpipe, stopping at stop_at (0:
 * never); returns the log and sets *rc and *made. */
static char *pipe_run(uint64_t n, uint64_t stop_at, int *rc, uint64_t *made) {
  struct source s = {n, 0};
  struct log l = {.stop_at = stop_at};
  *rc = recpipe_run(decode, &s, replay, &l);
  *made = s.made;
  return l.b.s ? l.b.s : xstrdup("");
}

static void test_threaded_and_inline(void **state) {
  (void)state;
  static const uint64_t stops[] = {0, 1, 2500};
  for (size_t k = 0; k < sizeof stops / sizeof *stops; k++) {
    int rc[2];
    uint64_t made[2];
    char *log[2];
    for (int i = 0; i < 2; i++) {
      testthreads_fail = i == 1;
      testthreads_started = 0;
      log[i] = pipe_run(5000, stops[k], &rc[i], &made[i]);
      assert_int_equal(testthreads_started, i == 0);
    }
    testthreads_fail = false;
    assert_string_equal(log[1], log[0]);
    assert_int_equal(rc[0], stops[k] ? 7 : 0);
    assert_int_equal(rc[1], rc[0]);
    /* without a thread the decoder stops at once; with one, within the
     * batches that were waiting */
    assert_int_equal(made[1], stops[k] ? stops[k] : 5000);
    assert_true(made[0] >= made[1]);
    size_t lines = 0;
    for (const char *c = log[0]; (c = strchr(c, '\n')); c++)
      lines++;
    assert_int_equal(lines, stops[k] ? stops[k] : 5000);
    if (!stops[k]) {
      assert_non_null(strstr(log[0], "\n0 4998 record-4998 even 0 0\n"));
      assert_non_null(strstr(log[0], "\n0 999 record-999 - 3145728 "));
    }
    free(log[0]);
    free(log[1]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threaded_and_inline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
