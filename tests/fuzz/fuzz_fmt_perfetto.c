/* fuzz_fmt_perfetto.c -- libFuzzer target of the Perfetto trace decoder.
 *
 * Input: the bytes of a trace (protobuf or gzip), written to a memfd and
 * read with fmt_perfetto_read().  Every text of every record must be valid
 * UTF-8, every args_json must parse as a JSON object (jansson), durations
 * must not be negative, a failure must come with a cause naming an offset.
 * Also linked into test_fmt_perfetto, which replays the files of
 * tests/data/perfetto/ and the inputs kept in tests/data/regress/ whose
 * names start with "perfetto-".
 */
#include "fmt_perfetto.h"
#include "fuzz_fmt.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts unless s is valid UTF-8 (NULL allowed when may_be_null). */
static void fuzz_fmt_perfetto_text(const char *s, int may_be_null) {
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

static void fuzz_fmt_perfetto_track_ok(const struct fmt_perfetto_track *t) {
  if (!t || t->unit_multiplier < 1)
    abort();
  fuzz_fmt_perfetto_text(t->name, 1);
  fuzz_fmt_perfetto_text(t->process_name, 1);
  fuzz_fmt_perfetto_text(t->thread_name, 1);
}

static int fuzz_fmt_perfetto_track(void *ud,
                                   const struct fmt_perfetto_track *t) {
  fuzz_fmt_perfetto_track_ok(t);
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_perfetto_slice(void *ud,
                                   const struct fmt_perfetto_slice *s) {
  fuzz_fmt_perfetto_track_ok(s->track);
  fuzz_fmt_perfetto_text(s->name, 0);
  fuzz_fmt_perfetto_text(s->cat, 1);
  if (s->dur_ns < 0 || (s->n_flow_ids && !s->flow_ids))
    abort();
  if (s->args_json) {
    json_error_t err;
    json_t *j = json_loads(s->args_json,
                           JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
    if (!json_is_object(j))
      abort();
    json_decref(j);
  }
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_perfetto_counter(void *ud,
                                     const struct fmt_perfetto_counter *c) {
  fuzz_fmt_perfetto_track_ok(c->track);
  fuzz_fmt_perfetto_text(c->name, 0);
  fuzz_fmt_perfetto_text(c->unit, 1);
  ++*(uint64_t *)ud;
  return 0;
}

static void fuzz_fmt_perfetto_warning(void *ud, uint64_t offset,
                                      const char *msg) {
  (void)ud;
  (void)offset;
  if (!msg || !*msg)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  uint64_t records = 0;
  struct fmt_perfetto_cb cb = {&records, fuzz_fmt_perfetto_track,
                               fuzz_fmt_perfetto_slice,
                               fuzz_fmt_perfetto_counter,
                               fuzz_fmt_perfetto_warning};
  struct fmt_perfetto_stats st;
  char *cause = NULL;
  int rc = fmt_perfetto_read(path, &cb, &st, &cause);
  if (rc < 0) {
    if (!cause || (size && !strstr(cause, "offset") && rc != -ENODATA))
      abort();
    free(cause);
  } else if (rc > 0 || cause) {
    abort();
  }
  close(fd);
  return 0;
}
