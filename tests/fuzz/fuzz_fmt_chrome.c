/* fuzz_fmt_chrome.c -- libFuzzer target of the Chrome trace decoder.
 *
 * Input: the bytes of a trace (JSON or gzip), written to a memfd and read
 * with fmt_chrome_read() and fmt_chrome_probe().  Every text of every
 * record must be valid UTF-8, every args_json must parse as JSON (jansson),
 * durations must not be negative and counts must add up.  Also linked into
 * test_fmt_chrome, which replays the inputs kept in
 * tests/data/regress/chrome-*.
 */
#include "fmt_chrome.h"
#include "fuzz_fmt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts unless s is valid UTF-8 (NULL allowed when may_be_null). */
static void fuzz_fmt_chrome_text(const char *s, int may_be_null) {
  if (!s) {
    if (!may_be_null)
      abort();
    return;
  }
  json_t *j = json_string(s); /* NULL for invalid UTF-8 */
  if (!j)
    abort();
  json_decref(j);
}

static int fuzz_fmt_chrome_slice(void *ud, const struct fmt_chrome_slice *s) {
  fuzz_fmt_chrome_text(s->name, 0);
  fuzz_fmt_chrome_text(s->cat, 1);
  fuzz_fmt_chrome_text(s->pid, 0);
  fuzz_fmt_chrome_text(s->tid, 0);
  if (s->dur_ns < 0 || (s->n_flow_ids && !s->flow_ids))
    abort();
  if (s->args_json) {
    json_error_t err;
    /* integers beyond int64 are valid JSON (Kineto writes them) */
    json_t *j = json_loads(s->args_json,
                           JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
    if (!j)
      abort();
    json_decref(j);
  }
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_chrome_counter(void *ud,
                                   const struct fmt_chrome_counter *c) {
  fuzz_fmt_chrome_text(c->pid, 0);
  fuzz_fmt_chrome_text(c->name, 0);
  fuzz_fmt_chrome_text(c->series, 0);
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_chrome_flow(void *ud, const struct fmt_chrome_flow *f) {
  if (!strchr("stf", f->phase) || !f->phase)
    abort();
  fuzz_fmt_chrome_text(f->id, 0);
  fuzz_fmt_chrome_text(f->pid, 0);
  fuzz_fmt_chrome_text(f->tid, 0);
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_chrome_meta(void *ud, const struct fmt_chrome_meta *m) {
  fuzz_fmt_chrome_text(m->kind, 0);
  fuzz_fmt_chrome_text(m->pid, 0);
  fuzz_fmt_chrome_text(m->tid, 1);
  fuzz_fmt_chrome_text(m->value, 0);
  ++*(uint64_t *)ud;
  return 0;
}

static void fuzz_fmt_chrome_warning(void *ud, uint64_t offset,
                                    const char *msg) {
  if (!msg || !*msg)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], rank[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  uint64_t records = 0;
  struct fmt_chrome_cb cb = {&records,
                             fuzz_fmt_chrome_slice,
                             fuzz_fmt_chrome_counter,
                             fuzz_fmt_chrome_flow,
                             fuzz_fmt_chrome_meta,
                             fuzz_fmt_chrome_warning};
  struct fmt_chrome_stats st;
  char *cause = NULL;
  int rc = fmt_chrome_read(path, &cb, &st, &cause);
  if (rc < 0) {
    if (!cause)
      abort();
    free(cause);
  } else if (rc > 0 || cause || st.skipped > st.events ||
             (data[0] != 0x1f && st.bytes > size)) {
    abort();
  }
  int probe = fmt_chrome_probe(path, rank, sizeof rank);
  if (probe < 0 || probe > 1 || memchr(rank, '\0', sizeof rank) == NULL)
    abort();
  close(fd);
  return 0;
}
