/* fmt_pb_pipe.c -- capture file records unpacked on their own thread into
 * recpipe batches.  See fmt_pb_pipe.h. */
#include "fmt_pb_pipe.h"
#include "pbwire.h"
#include "recpipe.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Whether field f of m holds a value (a oneof member: only the one set). */
static bool fmt_pb_pipe_set(const char *m, const ProtobufCFieldDescriptor *f) {
  return !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
         *(const uint32_t *)(m + f->quantifier_offset) == f->id;
}

/* Where a copy goes: its next free byte (NULL: the copy is only measured)
 * and the bytes it takes so far.  Each piece starts on 8 bytes, where every
 * protobuf-c struct, array and text is at home (a batch body is aligned
 * so). */
struct fmt_pb_pipe_out {
  unsigned char *w;
  size_t n;
};

/* Takes the n bytes the pointer at `at` points to: counted, and when
 * copying, copied, the pointer then pointing at the copy. */
static void fmt_pb_pipe_take(struct fmt_pb_pipe_out *o, void *at, size_t n) {
  size_t room = (n + 7) & ~(size_t)7;
  o->n += room;
  if (o->w) {
    void *src, *dst = o->w;
    memcpy(&src, at, sizeof src);
    memcpy(dst, src, n);
    memcpy(at, &dst, sizeof dst);
    o->w += room;
  }
}

static void fmt_pb_pipe_msg(struct fmt_pb_pipe_out *o, ProtobufCMessage **at);

/* Takes what the value at slot (of field f's type) points to: a text,
 * bytes or a sub-message. */
static void fmt_pb_pipe_value(struct fmt_pb_pipe_out *o,
                              const ProtobufCFieldDescriptor *f, char *slot) {
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    char **s = (char **)slot;
    if (*s)
      fmt_pb_pipe_take(o, s, strlen(*s) + 1);
  } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
    ProtobufCBinaryData *b = (ProtobufCBinaryData *)slot;
    if (b->data && b->len)
      fmt_pb_pipe_take(o, &b->data, b->len);
  } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    ProtobufCMessage **s = (ProtobufCMessage **)slot;
    if (*s)
      fmt_pb_pipe_msg(o, s);
  }
}

/* Takes the message *at whole: every string, array, sub-message and
 * unknown field it points to.  When copying, *at becomes the copy; when
 * measuring, nothing is written (the message is only read). */
static void fmt_pb_pipe_msg(struct fmt_pb_pipe_out *o, ProtobufCMessage **at) {
  const ProtobufCMessageDescriptor *d = (*at)->descriptor;
  fmt_pb_pipe_take(o, at, d->sizeof_message);
  char *m = (char *)*at;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    char *slot = m + f->offset;
    if (!fmt_pb_pipe_set(m, f))
      continue;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      fmt_pb_pipe_value(o, f, slot);
      continue;
    }
    size_t k = *(const size_t *)(m + f->quantifier_offset);
    size_t es = pbwire_elem_size(f->type);
    if (!k || !*(char **)slot)
      continue;
    fmt_pb_pipe_take(o, slot, k * es);
    if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES &&
        f->type != PROTOBUF_C_TYPE_MESSAGE)
      continue; /* numbers: nothing they point to */
    char *arr = *(char **)slot;
    for (size_t j = 0; j < k; j++)
      fmt_pb_pipe_value(o, f, arr + j * es);
  }
  ProtobufCMessage *c = *at;
  if (!c->n_unknown_fields)
    return;
  fmt_pb_pipe_take(o, &c->unknown_fields,
                   c->n_unknown_fields * sizeof *c->unknown_fields);
  for (unsigned i = 0; i < c->n_unknown_fields; i++)
    if (c->unknown_fields[i].len)
      fmt_pb_pipe_take(o, &c->unknown_fields[i].data, c->unknown_fields[i].len);
}

/* ------------------------------------------------------------ the pipe */

struct fmt_pb_pipe {
  struct fmt_pb *r;
  const ProtobufCMessageDescriptor *d;
  fmt_pb_pipe_prep_fn prep;
  void *prep_ud;
  fmt_pb_pipe_fn fn;
  void *ud;
  size_t per_byte;  /* room first offered: bytes per byte of encoding */
  struct sbuf text; /* prep's text for the record being queued */
  struct fmt_pb_walker *walker; /* the decoding thread's */
};

enum {
  FMT_PB_PIPE_PER_BYTE = 8, /* the first offer's factor */
  FMT_PB_PIPE_PER_BYTE_MAX = 64,
  FMT_PB_PIPE_SLACK = 512,          /* bytes added to every offer */
  FMT_PB_PIPE_OFFER_MAX = 256 << 10 /* larger records: measured first */
};

/* Runs prep on m (q->text: its text, empty when there is no prep). */
static void fmt_pb_pipe_prep(struct fmt_pb_pipe *q, const ProtobufCMessage *m) {
  sbuf_reset(&q->text);
  if (q->prep)
    q->prep(q->prep_ud, m, &q->text);
}

/* Copies q->text to w (c->text then points there); returns the bytes it
 * took (none for no text). */
static size_t fmt_pb_pipe_text(const struct fmt_pb_pipe *q,
                               struct fmt_pb_pipe_rec *c, unsigned char *w) {
  c->text = NULL;
  c->text_len = q->text.len;
  if (!q->text.len)
    return 0;
  memcpy(w, q->text.s, q->text.len + 1);
  c->text = (const char *)w;
  return q->text.len + 1;
}

/* Queues the record of c (rc and positions set) whose bytes are
 * data[0..len): unpacked straight into the batch when the room offered
 * holds it and its text, else unpacked by the reader, measured, and copied
 * whole.  c->rc becomes 1 with c->msg, or -EBADMSG when the bytes do not
 * decode. */
static void fmt_pb_pipe_put(struct recpipe *p, struct fmt_pb_pipe *q,
                            struct fmt_pb_pipe_rec *c, const uint8_t *data,
                            size_t len) {
  size_t head = (sizeof *c + 7) & ~(size_t)7, used = 0;
  size_t offer = len * q->per_byte + FMT_PB_PIPE_SLACK;
  if (offer <= FMT_PB_PIPE_OFFER_MAX) {
    unsigned char *body = recpipe_begin(p, 0, head + offer);
    c->msg = fmt_pb_decode_into(q->d, q->walker, data, len, body + head, offer,
                                &used);
    if (c->msg)
      fmt_pb_pipe_prep(q, c->msg);
    if (!c->msg && !used) { /* not decodable at all */
      c->rc = -EBADMSG;
      c->text = NULL;
      c->text_len = 0;
      memcpy(body, c, sizeof *c);
      recpipe_end(p, head);
      return;
    }
    if (c->msg && offer - used > q->text.len) {
      c->rc = 1;
      used += fmt_pb_pipe_text(q, c, body + head + used);
      memcpy(body, c, sizeof *c);
      recpipe_end(p, head + used);
      return;
    }
    recpipe_cancel(p);
    if (q->per_byte < FMT_PB_PIPE_PER_BYTE_MAX)
      q->per_byte *= 2;
  }
  ProtobufCMessage *m = fmt_pb_decode(q->r, q->d, data, len);
  c->rc = m ? 1 : -EBADMSG;
  c->msg = m;
  sbuf_reset(&q->text);
  struct fmt_pb_pipe_out o = {NULL, head};
  if (m) { /* measured first: the record's room */
    fmt_pb_pipe_prep(q, m);
    fmt_pb_pipe_msg(&o, &m);
  }
  size_t n = o.n + q->text.len + 1;
  unsigned char *body = recpipe_begin(p, 0, n);
  o = (struct fmt_pb_pipe_out){body + head, head};
  if (m) /* then copied: c->msg becomes the copy */
    fmt_pb_pipe_msg(&o, &c->msg);
  n = o.n + fmt_pb_pipe_text(q, c, body + o.n);
  memcpy(body, c, sizeof *c);
  recpipe_end(p, n);
}

static void fmt_pb_pipe_decode(struct recpipe *p, void *arg) {
  struct fmt_pb_pipe *q = arg;
  struct fmt_pb_pipe_rec c;
  const uint8_t *data = NULL;
  size_t len = 0;
  while (!recpipe_stopped(p) &&
         (c.rc = fmt_pb_next_raw(q->r, &data, &len, &c.offset)) != 0) {
    c.pos = fmt_pb_pos(q->r);
    c.msg = NULL;
    c.text = NULL;
    c.text_len = 0;
    if (c.rc == 1) {
      fmt_pb_pipe_put(p, q, &c, data, len);
      continue;
    }
    size_t head = (sizeof c + 7) & ~(size_t)7;
    unsigned char *body = recpipe_begin(p, 0, head);
    memcpy(body, &c, sizeof c);
    recpipe_end(p, head);
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
                     fmt_pb_pipe_prep_fn prep, void *prep_ud, fmt_pb_pipe_fn fn,
                     void *ud) {
  struct fmt_pb_pipe q = {r,
                          d,
                          prep,
                          prep_ud,
                          fn,
                          ud,
                          FMT_PB_PIPE_PER_BYTE,
                          {0},
                          fmt_pb_walker_new(d)};
  int rc = recpipe_run(fmt_pb_pipe_decode, &q, fmt_pb_pipe_replay, &q);
  sbuf_free(&q.text);
  fmt_pb_walker_free(q.walker);
  return rc;
}
