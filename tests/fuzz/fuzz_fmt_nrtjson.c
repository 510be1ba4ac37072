/* fuzz_fmt_nrtjson.c -- libFuzzer target of the runtime event dump decoder.
 *
 * Input: the bytes of a dump (JSON or gzip), written to a memfd and read
 * with fmt_nrtjson_read() and fmt_nrtjson_probe().  Every record must pack
 * (protobuf-c checks its strings and arrays), attribute keys and values
 * must be valid UTF-8, durations never negative, and the counts of the
 * stats must agree with the records seen.  Also linked into
 * test_fmt_nrtjson, which replays the inputs kept in
 * tests/data/regress/nrtjson-*.
 */
#include "fmt_nrtjson.h"
#include "fuzz_fmt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fuzz_fmt_nrtjson_record(void *ud, uint64_t off,
                                   const Nex__NtraceRecord *r) {
  uint64_t *n = ud;
  if (!protobuf_c_message_check(&r->base))
    abort();
  size_t len = protobuf_c_message_get_packed_size(&r->base);
  uint8_t *b = malloc(len ? len : 1);
  if (!b || protobuf_c_message_pack(&r->base, b) != len)
    abort();
  free(b);
  if (r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT) {
    const Nex__SystemEvent *e = r->event;
    if (e->duration < 0 || !e->name || !*e->name)
      abort();
    for (size_t i = 0; i < e->n_attributes; i++) {
      json_t *k = json_string(e->attributes[i]->key),
             *v = json_string(e->attributes[i]->value);
      if (!k || !v) /* NULL for invalid UTF-8 */
        abort();
      json_decref(k);
      json_decref(v);
    }
  }
  (*n)++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  uint64_t n = 0;
  struct fmt_nrtjson_cb cb = {&n, fuzz_fmt_nrtjson_record, NULL};
  struct fmt_nrtjson_stats st;
  char *cause = NULL;
  int rc = fmt_nrtjson_read(path, &cb, &st, &cause);
  if (rc < 0) {
    if (!cause)
      abort();
    free(cause);
  } else if (rc > 0 || cause || st.records != n) {
    abort();
  }
  int kind = fmt_nrtjson_probe(path);
  if (kind < 0 || kind > 1)
    abort();
  close(fd);
  return 0;
}
