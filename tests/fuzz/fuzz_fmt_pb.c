/* fuzz_fmt_pb.c -- libFuzzer target of the fmt_pb reader.
 *
 * Input: one selector byte choosing the record type (ntrace, trace_info,
 * cpu_util, host_mem, ntff: byte % 5), then the bytes of the file.  The file
 * is written to a memfd and read to its end; every decoded message is
 * checked against protobuf-c's own unpacking of its bytes (the reader
 * decodes with the wire walker, pbwire.h, when it takes them) and walked.  Then it is read again through fmt_pb_pipe_each
 * (unpacked on another thread, with a text made there for each message),
 * which must give the same records: the same codes, offsets and
 * positions, messages that pack to the same bytes, and their texts.  Also
 * linked into test_fmt_pb, which replays the inputs kept in
 * tests/data/regress/pb-*.
 */
#include "fmt_pb.h"
#include "pbwire.h"
#include "fmt_pb_pipe.h"
#include "fuzz_fmt.h"

#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
  const char *magic;
  const ProtobufCMessageDescriptor *desc;
} fuzz_fmt_pb_types[FUZZ_FMT_PB_TYPES] = {
    [FUZZ_FMT_PB_NTRACE] = {FMT_PB_MAGIC_NTRACE,
                            &nex__ntrace_record__descriptor},
    [FUZZ_FMT_PB_TRACE_INFO] = {FMT_PB_MAGIC_TRACE_INFO,
                                &nex__trace_info__descriptor},
    [FUZZ_FMT_PB_CPU_UTIL] = {FMT_PB_MAGIC_CPU_UTIL,
                              &nex__cpu_usage__descriptor},
    [FUZZ_FMT_PB_HOST_MEM] = {FMT_PB_MAGIC_HOST_MEM,
                              &nex__host_mem_usage__descriptor},
    [FUZZ_FMT_PB_NTFF] = {FMT_PB_MAGIC_NTFF, &nex__ntff_record__descriptor},
};

static void fuzz_fmt_pb_walk(const ProtobufCMessage *m);

/* Reads the value of type t at p, following pointers. */
static void fuzz_fmt_pb_value(ProtobufCType t, const void *p) {
  volatile uint8_t sink;
  if (t == PROTOBUF_C_TYPE_STRING) {
    const char *s = *(char *const *)p;
    if (!s)
      abort();
    sink = (uint8_t)strlen(s);
  } else if (t == PROTOBUF_C_TYPE_MESSAGE) {
    const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
    if (sub)
      fuzz_fmt_pb_walk(sub);
  } else if (t == PROTOBUF_C_TYPE_BYTES) {
    const ProtobufCBinaryData *b = p;
    for (size_t i = 0; i < b->len; i++)
      sink = b->data[i];
  } else {
    const uint8_t *b = p;
    for (size_t i = 0; i < pbwire_elem_size(t); i++)
      sink = b[i];
  }
  (void)sink;
}

/* Visits every field of m that is set. */
static void fuzz_fmt_pb_walk(const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const uint8_t *base = (const uint8_t *)m;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      uint32_t which;
      memcpy(&which, base + f->quantifier_offset, sizeof which);
      if (which != f->id)
        continue;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n;
      const uint8_t *arr;
      memcpy(&n, base + f->quantifier_offset, sizeof n);
      memcpy(&arr, base + f->offset, sizeof arr);
      if (n && !arr)
        abort();
      for (size_t k = 0; k < n; k++)
        fuzz_fmt_pb_value(f->type, arr + k * pbwire_elem_size(f->type));
    } else {
      fuzz_fmt_pb_value(f->type, base + f->offset);
    }
  }
}

/* What a direct read gave for one record. */
struct fuzz_fmt_pb_rec {
  int rc;
  uint64_t off, pos;
  uint8_t *packed; /* rc 1: the message packed (malloc'd) */
  size_t len;
};

struct fuzz_fmt_pb_read {
  struct fuzz_fmt_pb_rec *recs;
  size_t n, cap, seen;
};

static uint8_t *fuzz_fmt_pb_pack(const ProtobufCMessage *m, size_t *len) {
  *len = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*len ? *len : 1);
  if (!b || protobuf_c_message_pack(m, b) != *len)
    abort();
  return b;
}

/* Aborts unless m (NULL: not decoded) is what protobuf-c's own unpacker
 * makes of data[0, len) (the reader's wire walker took the bytes, or that
 * unpacker in the reader's arena). */
static void fuzz_fmt_pb_same(const ProtobufCMessageDescriptor *d,
                             const ProtobufCMessage *m, const uint8_t *data,
                             size_t len) {
  ProtobufCMessage *b = protobuf_c_message_unpack(d, NULL, len, data);
  if (!m || !b) {
    if (m || b)
      abort();
    return;
  }
  size_t na, nb;
  uint8_t *pa = fuzz_fmt_pb_pack(m, &na), *pb = fuzz_fmt_pb_pack(b, &nb);
  if (na != nb || memcmp(pa, pb, na) != 0)
    abort();
  free(pa);
  free(pb);
  protobuf_c_message_free_unpacked(b, NULL);
}

/* The text the pipe's prep writes for m: none for some messages, for
 * others up to 2 KiB (more than the room first offered to a small one). */
static void fuzz_fmt_pb_text(const ProtobufCMessage *m, struct sbuf *out) {
  size_t len = protobuf_c_message_get_packed_size(m);
  if (len % 5 == 0)
    return;
  sbuf_printf(out, "n=%zu ", len);
  for (size_t i = 0; i < (len * 37) % 2000; i++)
    sbuf_addc(out, (char)('a' + i % 26));
}

static int fuzz_fmt_pb_prep_ud; /* what prep must be handed */

static void fuzz_fmt_pb_prep(void *ud, const ProtobufCMessage *m,
                             struct sbuf *out) {
  if (ud != &fuzz_fmt_pb_prep_ud)
    abort();
  fuzz_fmt_pb_text(m, out);
}

/* A record of the piped read, checked against the direct read's. */
static int fuzz_fmt_pb_piped(void *ud, const struct fmt_pb_pipe_rec *x) {
  struct fuzz_fmt_pb_read *d = ud;
  if (d->seen >= d->n)
    abort();
  const struct fuzz_fmt_pb_rec *w = &d->recs[d->seen++];
  if (x->rc != w->rc || x->offset != w->off || x->pos != w->pos ||
      (x->rc == 1) != (x->msg != NULL))
    abort();
  if (x->rc == 1) {
    size_t len;
    uint8_t *b = fuzz_fmt_pb_pack(x->msg, &len);
    if (len != w->len || memcmp(b, w->packed, len) != 0)
      abort();
    fuzz_fmt_pb_walk(x->msg);
    free(b);
    struct sbuf t = {0};
    fuzz_fmt_pb_text(x->msg, &t);
    if (x->text_len != t.len || (t.len == 0) != (x->text == NULL) ||
        (t.len && memcmp(x->text, t.s, t.len + 1) != 0))
      abort();
    sbuf_free(&t);
  } else if (x->text || x->text_len) {
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned t = data[0] % FUZZ_FMT_PB_TYPES;
  char path[64];
  int fd = fuzz_fmt_file(data + 1, size - 1, path, sizeof path);
  struct fmt_pb *r;
  char *cause = NULL;
  if (fmt_pb_open(path, fuzz_fmt_pb_types[t].magic, &r, &cause) < 0) {
    if (!cause)
      abort();
    free(cause);
    close(fd);
    return 0;
  }
  struct fuzz_fmt_pb_read d = {0};
  uint64_t last = 0;
  for (;;) {
    ProtobufCMessage *m = NULL;
    uint64_t off;
    const uint8_t *raw;
    size_t len;
    int rc = fmt_pb_next_raw(r, &raw, &len, &off);
    if (rc == 0)
      break;
    if (rc == 1) {
      m = fmt_pb_decode(r, fuzz_fmt_pb_types[t].desc, raw, len);
      fuzz_fmt_pb_same(fuzz_fmt_pb_types[t].desc, m, raw, len);
      rc = m ? 1 : -EBADMSG;
    }
    if (d.n == d.cap) {
      d.cap = d.cap ? d.cap * 2 : 16;
      d.recs = realloc(d.recs, d.cap * sizeof *d.recs);
      if (!d.recs)
        abort();
    }
    struct fuzz_fmt_pb_rec *w = &d.recs[d.n++];
    *w = (struct fuzz_fmt_pb_rec){rc, off, fmt_pb_pos(r), NULL, 0};
    if (rc == -EPIPE)
      break;
    if ((rc != 1 && rc != -EBADMSG) || off < last || off >= fmt_pb_size(r) ||
        (rc == 1 && !protobuf_c_message_check(m)))
      abort();
    if (rc == 1) {
      fuzz_fmt_pb_walk(m);
      w->packed = fuzz_fmt_pb_pack(m, &w->len);
    }
    last = off + 1;
  }
  if (fmt_pb_pos(r) > fmt_pb_size(r))
    abort();
  fmt_pb_close(r);
  if (fmt_pb_open(path, fuzz_fmt_pb_types[t].magic, &r, &cause) < 0 ||
      fmt_pb_pipe_each(r, fuzz_fmt_pb_types[t].desc, fuzz_fmt_pb_prep,
                       &fuzz_fmt_pb_prep_ud, fuzz_fmt_pb_piped, &d) != 0 ||
      d.seen != d.n)
    abort();
  fmt_pb_close(r);
  for (size_t i = 0; i < d.n; i++)
    free(d.recs[i].packed);
  free(d.recs);
  close(fd);
  return 0;
}
