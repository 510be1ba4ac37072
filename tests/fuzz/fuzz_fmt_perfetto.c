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

/* Aborts unless each of the n texts is valid UTF-8 (jansson refuses to
 * make a string of anything else); NULL texts are allowed. */
static void fuzz_fmt_perfetto_texts(const char *const *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    json_t *j = v[i] ? json_string(v[i]) : json_null();
    if (!j)
      abort();
    json_decref(j);
  }
}

static void fuzz_fmt_perfetto_track_ok(const struct fmt_perfetto_track *t) {
  if (!t || t->unit_multiplier < 1)
    abort();
  const char *v[] = {t->name, t->process_name, t->thread_name};
  fuzz_fmt_perfetto_texts(v, 3);
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
  const char *v[] = {s->name, s->cat};
  fuzz_fmt_perfetto_texts(v, 2);
  if (!s->name || s->dur_ns < 0 || (s->n_flow_ids && !s->flow_ids))
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
  const char *v[] = {c->name, c->unit};
  fuzz_fmt_perfetto_texts(v, 2);
  if (!c->name)
    abort();
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
  struct fmt_perfetto_cb cb = {
      &records, fuzz_fmt_perfetto_track, fuzz_fmt_perfetto_slice,
      fuzz_fmt_perfetto_counter, fuzz_fmt_perfetto_warning};
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
