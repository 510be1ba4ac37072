/* fmt_pb_pipe.c -- capture file records unpacked on their own thread and
 * copied whole into recpipe batches.  See fmt_pb_pipe.h. */
#include "fmt_pb_pipe.h"
#include "recpipe.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Pieces of a copy start on 8 bytes: every protobuf-c struct, array and
 * text is at home there (a batch body is aligned so). */
static size_t fmt_pb_pipe_align(size_t n) { return (n + 7) & ~(size_t)7; }

/* Whether field f of m holds a value (a oneof member: only the one set). */
static bool fmt_pb_pipe_set(const ProtobufCMessage *m,
                            const ProtobufCFieldDescriptor *f) {
  return !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
         *(const uint32_t *)((const char *)m + f->quantifier_offset) == f->id;
}

static size_t fmt_pb_pipe_size(const ProtobufCMessage *m);

/* Bytes the copy of the value at slot (of field f's type) adds beside its
 * slot: a text, bytes or a sub-message. */
static size_t fmt_pb_pipe_value_size(const ProtobufCFieldDescriptor *f,
                                     const void *slot) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)slot;
    return s ? fmt_pb_pipe_align(strlen(s) + 1) : 0;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    const ProtobufCBinaryData *b = slot;
    return b->data && b->len ? fmt_pb_pipe_align(b->len) : 0;
  }
  case PROTOBUF_C_TYPE_MESSAGE: {
    const ProtobufCMessage *s = *(ProtobufCMessage *const *)slot;
    return s ? fmt_pb_pipe_size(s) : 0;
  }
  default:
    return 0;
  }
}

static bool fmt_pb_pipe_pointers(const ProtobufCFieldDescriptor *f) {
  return f->type == PROTOBUF_C_TYPE_STRING ||
         f->type == PROTOBUF_C_TYPE_BYTES || f->type == PROTOBUF_C_TYPE_MESSAGE;
}

/* Bytes a whole copy of m takes. */
static size_t fmt_pb_pipe_size(const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  size_t n = fmt_pb_pipe_align(d->sizeof_message);
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *slot = (const char *)m + f->offset;
    if (!fmt_pb_pipe_set(m, f))
      continue;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      n += fmt_pb_pipe_value_size(f, slot);
      continue;
    }
    size_t k = *(const size_t *)((const char *)m + f->quantifier_offset);
    const char *arr = *(char *const *)slot;
    size_t es = fmt_pb_elem_size(f->type);
    if (!k || !arr)
      continue;
    n += fmt_pb_pipe_align(k * es);
    for (size_t j = 0; j < k && fmt_pb_pipe_pointers(f); j++)
      n += fmt_pb_pipe_value_size(f, arr + j * es);
  }
  n += fmt_pb_pipe_align(m->n_unknown_fields * sizeof *m->unknown_fields);
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    n += fmt_pb_pipe_align(m->unknown_fields[i].len);
  return n;
}

/* Copies n bytes at src to *w and moves *w past them. */
static void *fmt_pb_pipe_put(unsigned char **w, const void *src, size_t n) {
  void *at = memcpy(*w, src, n);
  *w += fmt_pb_pipe_align(n);
  return at;
}

static ProtobufCMessage *fmt_pb_pipe_copy(const ProtobufCMessage *m,
                                          unsigned char **w);

/* Points the value at slot (of field f's type, in a copy) at a copy of
 * what it points to. */
static void fmt_pb_pipe_value_copy(const ProtobufCFieldDescriptor *f,
                                   void *slot, unsigned char **w) {
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    char **s = slot;
    if (*s)
      *s = fmt_pb_pipe_put(w, *s, strlen(*s) + 1);
  } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
    ProtobufCBinaryData *b = slot;
    if (b->data && b->len)
      b->data = fmt_pb_pipe_put(w, b->data, b->len);
  } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    ProtobufCMessage **s = slot;
    if (*s)
      *s = fmt_pb_pipe_copy(*s, w);
  }
}

/* Copies m whole to *w (fmt_pb_pipe_size(m) bytes) and returns the copy. */
static ProtobufCMessage *fmt_pb_pipe_copy(const ProtobufCMessage *m,
                                          unsigned char **w) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  ProtobufCMessage *c = fmt_pb_pipe_put(w, m, d->sizeof_message);
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    char *slot = (char *)c + f->offset;
    if (!fmt_pb_pipe_set(c, f))
      continue;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      fmt_pb_pipe_value_copy(f, slot, w);
      continue;
    }
    size_t k = *(const size_t *)((const char *)c + f->quantifier_offset);
    char **arr = (char **)slot;
    size_t es = fmt_pb_elem_size(f->type);
    if (!k || !*arr)
      continue;
    *arr = fmt_pb_pipe_put(w, *arr, k * es);
    for (size_t j = 0; j < k && fmt_pb_pipe_pointers(f); j++)
      fmt_pb_pipe_value_copy(f, *arr + j * es, w);
  }
  if (c->n_unknown_fields) {
    c->unknown_fields = fmt_pb_pipe_put(
        w, c->unknown_fields, c->n_unknown_fields * sizeof *c->unknown_fields);
    for (unsigned i = 0; i < c->n_unknown_fields; i++)
      if (c->unknown_fields[i].len)
        c->unknown_fields[i].data = fmt_pb_pipe_put(
            w, c->unknown_fields[i].data, c->unknown_fields[i].len);
  }
  return c;
}

/* ------------------------------------------------------------ the pipe */

struct fmt_pb_pipe {
  struct fmt_pb *r;
  const ProtobufCMessageDescriptor *d;
  fmt_pb_pipe_fn fn;
  void *ud;
};

static void fmt_pb_pipe_decode(struct recpipe *p, void *arg) {
  const struct fmt_pb_pipe *q = arg;
  struct fmt_pb_pipe_rec c;
  ProtobufCMessage *m;
  size_t head = fmt_pb_pipe_align(sizeof c);
  while (!recpipe_stopped(p) &&
         (c.rc = fmt_pb_next(q->r, q->d, &m, &c.offset)) != 0) {
    c.pos = fmt_pb_pos(q->r);
    c.msg = NULL;
    size_t n = head + (c.rc == 1 ? fmt_pb_pipe_size(m) : 0);
    unsigned char *body = recpipe_begin(p, 0, n), *w = body + head;
    if (c.rc == 1)
      c.msg = fmt_pb_pipe_copy(m, &w);
    memcpy(body, &c, sizeof c);
    recpipe_end(p, n);
    if (c.rc == -EPIPE)
      break;
  }
}

static int fmt_pb_pipe_replay(void *ud, uint32_t kind, const void *body) {
  const struct fmt_pb_pipe *q = ud;
  (void)kind;
  return q->fn(q->ud, body);
}

int fmt_pb_pipe_each(struct fmt_pb *r, const ProtobufCMessageDescriptor *d,
                     fmt_pb_pipe_fn fn, void *ud) {
  struct fmt_pb_pipe q = {r, d, fn, ud};
  return recpipe_run(fmt_pb_pipe_decode, &q, fmt_pb_pipe_replay, &q);
}
