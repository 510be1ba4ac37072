/* fuzz_fmt_vjson.c -- libFuzzer target of the vendor JSON export decoder.
 *
 * Input: the bytes of an export (JSON or gzip), written to a memfd and
 * read with fmt_vjson_read() and fmt_vjson_probe().  Every message must
 * pack (protobuf-c checks its strings and arrays), the attributes of
 * `other` records must be valid UTF-8 and those marked is_number JSON
 * numbers.  Also linked into test_fmt_vjson, which
 * replays the inputs kept in tests/data/regress/vjson-*.
 */
#include "fmt_vjson.h"
#include "fuzz_fmt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts unless m packs and its size is consistent. */
static int fuzz_fmt_vjson_msg(const ProtobufCMessage *m) {
  if (!protobuf_c_message_check(m))
    abort();
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(n ? n : 1);
  if (!b || protobuf_c_message_pack(m, b) != n)
    abort();
  free(b);
  return 0;
}

static int fuzz_fmt_vjson_ntrace(void *ud, const struct fmt_vjson_origin *o,
                                 const Nex__NtraceRecord *r) {
  return fuzz_fmt_vjson_msg(&r->base);
}

static int fuzz_fmt_vjson_cpu(void *ud, const struct fmt_vjson_origin *o,
                              const Nex__CpuUsage *c) {
  return fuzz_fmt_vjson_msg(&c->base);
}

static int fuzz_fmt_vjson_mem(void *ud, const struct fmt_vjson_origin *o,
                              const Nex__HostMemUsage *m) {
  return fuzz_fmt_vjson_msg(&m->base);
}

static int fuzz_fmt_vjson_info(void *ud, const struct fmt_vjson_origin *o,
                               const Nex__TraceInfo *t) {
  return fuzz_fmt_vjson_msg(&t->base);
}

static int fuzz_fmt_vjson_devprof(void *ud, const struct fmt_vjson_origin *o,
                                  int nc, const char *name) {
  if (!name || nc < -1)
    abort();
  return 0;
}

static int fuzz_fmt_vjson_ntff(void *ud, const struct fmt_vjson_origin *o,
                               const Nex__NtffRecord *r) {
  return fuzz_fmt_vjson_msg(&r->base);
}

static int fuzz_fmt_vjson_other(void *ud, const struct fmt_vjson_origin *o,
                                Nex__Attribute *const *a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    json_t *k = json_string(a[i]->key), *v = json_string(a[i]->value);
    if (!k || !v) /* NULL for invalid UTF-8 */
      abort();
    json_decref(k);
    json_decref(v);
    if (a[i]->is_number) { /* then the value is JSON text */
      json_error_t err;
      json_t *j = json_loads(a[i]->value,
                             JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
      if (!j || !json_is_number(j))
        abort();
      json_decref(j);
    }
    fuzz_fmt_vjson_msg(&a[i]->base);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  struct fmt_vjson_cb cb = {NULL,
                            fuzz_fmt_vjson_ntrace,
                            fuzz_fmt_vjson_cpu,
                            fuzz_fmt_vjson_mem,
                            fuzz_fmt_vjson_info,
                            fuzz_fmt_vjson_devprof,
                            fuzz_fmt_vjson_ntff,
                            fuzz_fmt_vjson_other,
                            NULL};
  struct fmt_vjson_stats st;
  char *cause = NULL;
  int rc = fmt_vjson_read(path, &cb, &st, &cause);
  if (rc < 0) {
    if (!cause)
      abort();
    free(cause);
  } else if (rc > 0 || cause) {
    abort();
  }
  int kind = fmt_vjson_probe(path);
  if (kind < 0 || kind > FMT_VJSON_DEVICE)
    abort();
  close(fd);
  return 0;
}
