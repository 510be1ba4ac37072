/* fmt_perfetto_wire.c -- the hot packets of a trace (a TracePacket
 * holding a TrackEvent) read from the wire format straight into
 * protobuf-c's structs (see fmt_perfetto_priv.h).
 *
 * protobuf_c_message_unpack() scans every message twice and allocates
 * per field; this walker reads each field once into the reader's arena,
 * driven by the generated field descriptors (offsets, labels, types) that
 * protobuf-c publishes.  It only takes the messages listed in
 * fmt_perfetto_wire_msgs and the plain cases: anything else (another
 * message, a field with an unexpected wire type, a varint over 10 bytes, a
 * message field given twice, which protobuf-c would merge, a length past
 * its message) makes it give up, and the packet goes to protobuf-c as
 * before.  Unknown fields are skipped (protobuf-c keeps them aside, unused
 * by the decoder).  Every length is checked against the bytes of its
 * message.  The fuzz target compares its result with protobuf-c's on every
 * packet it takes.
 */
#include "arena.h"
#include "fmt_pb.h"
#include "fmt_perfetto_priv.h"

#include <stdlib.h>
#include <string.h>

/* Nesting below the packet taken here (packet > event > annotation >
 * nested values); deeper packets go to protobuf-c. */
#define FMT_PERFETTO_WIRE_DEPTH 8

/* The messages read here: the packet and the parts of a TrackEvent. */
static const ProtobufCMessageDescriptor *const fmt_perfetto_wire_msgs[] = {
    &perfetto__protos__trace_packet__descriptor,
    &perfetto__protos__track_event__descriptor,
    &perfetto__protos__track_event__legacy_event__descriptor,
    &perfetto__protos__debug_annotation__descriptor,
    &perfetto__protos__debug_annotation__nested_value__descriptor,
};

#define FMT_PERFETTO_WIRE_MSGS 5        /* the messages above */
#define FMT_PERFETTO_WIRE_EVENT 1       /* TrackEvent's index there */
#define FMT_PERFETTO_WIRE_ANNOTATION 3  /* DebugAnnotation's */
#define FMT_PERFETTO_WIRE_ANNOTATIONS 4 /* TrackEvent.debug_annotations */
#define FMT_PERFETTO_WIRE_IDS 128       /* field numbers indexed */
#define FMT_PERFETTO_WIRE_SIZE 512 /* bytes of the largest of the structs */

/* A field as the walker uses it: what its descriptor says, packed in 12
 * bytes so that the index of the hot fields stays in a few cache lines
 * (the descriptors themselves are 72 bytes each, elsewhere). */
struct fmt_perfetto_wire_fd {
  uint16_t offset, qoff; /* of the value and its quantifier */
  uint32_t id;
  uint8_t type, wire;
  uint8_t known, repeated : 1, oneof : 1;
  uint8_t sub; /* a message: the index of its type in
                  fmt_perfetto_wire_msgs, FMT_PERFETTO_WIRE_MSGS if none */
};

struct fmt_perfetto_wire {
  struct arena *a;
  struct fmt_perfetto_ann *ann; /* the packet's annotations */
  size_t nann;
  struct fmt_perfetto_wire_fd fields[FMT_PERFETTO_WIRE_MSGS]
                                    [FMT_PERFETTO_WIRE_IDS];
  /* each struct as its _init() leaves it (copied: faster than the init) */
  _Alignas(max_align_t) unsigned char blank[FMT_PERFETTO_WIRE_MSGS]
                                           [FMT_PERFETTO_WIRE_SIZE];
};

_Static_assert(
    sizeof(Perfetto__Protos__TracePacket) <= FMT_PERFETTO_WIRE_SIZE &&
        sizeof(Perfetto__Protos__TrackEvent) <= FMT_PERFETTO_WIRE_SIZE &&
        sizeof(Perfetto__Protos__TrackEvent__LegacyEvent) <=
            FMT_PERFETTO_WIRE_SIZE &&
        sizeof(Perfetto__Protos__DebugAnnotation) <= FMT_PERFETTO_WIRE_SIZE &&
        sizeof(Perfetto__Protos__DebugAnnotation__NestedValue) <=
            FMT_PERFETTO_WIRE_SIZE,
    "a struct read by the walker outgrows its blank copy");

static int fmt_perfetto_wire_type(ProtobufCType t);

/* The index entry of field d. */
static struct fmt_perfetto_wire_fd
fmt_perfetto_wire_fd(const ProtobufCFieldDescriptor *d) {
  uint8_t sub = 1; /* not the packet */
  while (sub < FMT_PERFETTO_WIRE_MSGS &&
         (d->type != PROTOBUF_C_TYPE_MESSAGE ||
          fmt_perfetto_wire_msgs[sub] != d->descriptor))
    sub++;
  return (struct fmt_perfetto_wire_fd){
      .offset = (uint16_t)d->offset,
      .qoff = (uint16_t)d->quantifier_offset,
      .id = d->id,
      .type = (uint8_t)d->type,
      .wire = (uint8_t)fmt_perfetto_wire_type(d->type),
      .known = 1,
      .repeated = d->label == PROTOBUF_C_LABEL_REPEATED,
      .oneof = (d->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0,
      .sub = sub};
}

struct fmt_perfetto_wire *fmt_perfetto_wire_new(struct arena *a) {
  struct fmt_perfetto_wire *w = xcalloc(1, sizeof *w);
  w->a = a;
  for (size_t k = 0; k < FMT_PERFETTO_WIRE_MSGS; k++) {
    const ProtobufCMessageDescriptor *m = fmt_perfetto_wire_msgs[k];
    protobuf_c_message_init(m, w->blank[k]);
    for (unsigned i = 0; i < m->n_fields; i++)
      if (m->fields[i].id < FMT_PERFETTO_WIRE_IDS)
        w->fields[k][m->fields[i].id] = fmt_perfetto_wire_fd(&m->fields[i]);
  }
  return w;
}
_Static_assert(FMT_PERFETTO_WIRE_SIZE <= UINT16_MAX,
               "struct offsets must fit the index entries");

void fmt_perfetto_wire_free(struct fmt_perfetto_wire *w) { free(w); }

/* A blank struct of message k in the arena. */
static void *fmt_perfetto_wire_blank(struct fmt_perfetto_wire *w, size_t k) {
  size_t n = fmt_perfetto_wire_msgs[k]->sizeof_message;
  return memcpy(arena_alloc(w->a, n), w->blank[k], n);
}

/* The wire type of a field type (2 for strings, bytes and messages). */
static int fmt_perfetto_wire_type(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_FLOAT:
    return 5;
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    return 1;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_BYTES:
  case PROTOBUF_C_TYPE_MESSAGE:
    return 2;
  default:
    return 0;
  }
}

/* A little-endian fixed-size value of n (4 or 8) bytes. */
static inline uint64_t fmt_perfetto_wire_fixed(const uint8_t *v, size_t n) {
  uint64_t x = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&x, v, n);
#else
  for (size_t i = n; i-- > 0;)
    x = x << 8 | v[i];
#endif
  return x;
}

static bool fmt_perfetto_wire_msg(struct fmt_perfetto_wire *w, size_t k,
                                  void *m, const uint8_t *p, const uint8_t *end,
                                  int depth);

/* A message field's value (of type fmt_perfetto_wire_msgs[k]):
 * allocated, initialised and read.  Returns it, or NULL when its type is
 * not read here or it does not walk. */
static void *fmt_perfetto_wire_sub(struct fmt_perfetto_wire *w, size_t k,
                                   const uint8_t *v, size_t n, int depth) {
  if (k == FMT_PERFETTO_WIRE_MSGS || depth >= FMT_PERFETTO_WIRE_DEPTH)
    return NULL;
  void *m = fmt_perfetto_wire_blank(w, k);
  return fmt_perfetto_wire_msg(w, k, m, v, v + n, depth + 1) ? m : NULL;
}

/* Stores the value of field f held in v[0, n) (x: its varint) at slot, as
 * protobuf-c's parse_*() functions do.  Returns false to give up.  (This
 * and the two below are inlined: a call per field costs as much as the
 * field.) */
static inline __attribute__((always_inline)) bool
fmt_perfetto_wire_value(struct fmt_perfetto_wire *w,
                        const struct fmt_perfetto_wire_fd *f, void *slot,
                        const uint8_t *v, size_t n, uint64_t x, int depth) {
  uint32_t x32 = (uint32_t)x;
  int32_t i32;
  int64_t i64;
  switch ((ProtobufCType)f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_ENUM:
  case PROTOBUF_C_TYPE_UINT32:
    memcpy(slot, &x32, 4);
    return true;
  case PROTOBUF_C_TYPE_SINT32:
    i32 = (int32_t)((x32 >> 1) ^ (0u - (x32 & 1)));
    memcpy(slot, &i32, 4);
    return true;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_UINT64:
    memcpy(slot, &x, 8);
    return true;
  case PROTOBUF_C_TYPE_SINT64:
    i64 = (int64_t)((x >> 1) ^ (0u - (x & 1)));
    memcpy(slot, &i64, 8);
    return true;
  case PROTOBUF_C_TYPE_BOOL: {
    /* any payload bit set, even one a 64-bit value drops */
    protobuf_c_boolean b = 0;
    for (size_t i = 0; i < n; i++)
      b |= (v[i] & 0x7f) != 0;
    memcpy(slot, &b, sizeof b);
    return true;
  }
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_FLOAT:
    x32 = (uint32_t)fmt_perfetto_wire_fixed(v, 4);
    memcpy(slot, &x32, 4);
    return true;
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    x = fmt_perfetto_wire_fixed(v, 8);
    memcpy(slot, &x, 8);
    return true;
  case PROTOBUF_C_TYPE_STRING:
    *(char **)slot = arena_strdup(w->a, (const char *)v, n);
    return true;
  case PROTOBUF_C_TYPE_BYTES: {
    ProtobufCBinaryData *b = slot;
    b->len = n;
    b->data = n ? memcpy(arena_alloc(w->a, n), v, n) : NULL;
    return true;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    return (*(void **)slot = fmt_perfetto_wire_sub(w, f->sub, v, n, depth)) !=
           NULL;
  }
  return false;
}

/* A new element at the end of repeated field f of message m: the array
 * grows in the arena (capacity 4, then the powers of two). */
static inline __attribute__((always_inline)) void *
fmt_perfetto_wire_append(struct fmt_perfetto_wire *w,
                         const struct fmt_perfetto_wire_fd *f, char *m) {
  size_t *n = (size_t *)(m + f->qoff);
  return arena_push(w->a, (void **)(m + f->offset), (*n)++,
                    fmt_pb_elem_size((ProtobufCType)f->type));
}

/* The elements of a packed repeated field in v[0, n). */
static bool fmt_perfetto_wire_packed(struct fmt_perfetto_wire *w,
                                     const struct fmt_perfetto_wire_fd *f,
                                     char *m, const uint8_t *v, size_t n) {
  int wire = f->wire;
  const uint8_t *p = v, *end = v + n;
  if (wire == 2 || n == 0)
    return false;
  while (p < end) {
    const uint8_t *e = p;
    uint64_t x = 0;
    if (wire == 0 && !fmt_perfetto_varint_at(&p, end, &x))
      return false;
    if (wire != 0) {
      if ((size_t)(end - p) < (wire == 1 ? 8u : 4u))
        return false;
      p += wire == 1 ? 8 : 4;
    }
    if (!fmt_perfetto_wire_value(w, f, fmt_perfetto_wire_append(w, f, m), e,
                                 (size_t)(p - e), x, 0))
      return false;
  }
  return true;
}

/* One field of message m with wire type `wire`, its bytes v[0, n). */
static inline __attribute__((always_inline)) bool
fmt_perfetto_wire_field(struct fmt_perfetto_wire *w,
                        const struct fmt_perfetto_wire_fd *f, char *m, int wire,
                        const uint8_t *v, size_t n, uint64_t x, int depth) {
  int want = f->wire;
  if (f->repeated) {
    if (wire == 2 && want != 2)
      return fmt_perfetto_wire_packed(w, f, m, v, n);
    return wire == want &&
           fmt_perfetto_wire_value(w, f, fmt_perfetto_wire_append(w, f, m), v,
                                   n, x, depth);
  }
  if (wire != want)
    return false;
  void *slot = m + f->offset;
  if (f->oneof) {
    uint32_t *c = (uint32_t *)(m + f->qoff);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && *c == f->id)
      return false; /* protobuf-c merges the two */
    *c = f->id;
  } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    if (*(void **)slot)
      return false;
  } else if (f->qoff) {
    *(protobuf_c_boolean *)(m + f->qoff) = 1;
  }
  return fmt_perfetto_wire_value(w, f, slot, v, n, x, depth);
}

/* A debug annotation of the track event, v[0, n): kept plain when it is
 * (fmt_perfetto_args_plain), else read as a struct.  Returns false to give
 * up. */
static bool fmt_perfetto_wire_annotation(struct fmt_perfetto_wire *w,
                                         const uint8_t *v, size_t n,
                                         int depth) {
  struct fmt_perfetto_ann *a =
      arena_push(w->a, (void **)&w->ann, w->nann++, sizeof *w->ann);
  if (fmt_perfetto_args_plain(v, n, a)) /* sets a's bytes either way */
    return true;
  return (a->m = fmt_perfetto_wire_sub(w, FMT_PERFETTO_WIRE_ANNOTATION, v, n,
                                       depth)) != NULL;
}

/* Reads the fields of message m (of type fmt_perfetto_wire_msgs[k]) from
 * p[0, end). */
static bool fmt_perfetto_wire_msg(struct fmt_perfetto_wire *w, size_t k,
                                  void *m, const uint8_t *p, const uint8_t *end,
                                  int depth) {
  struct fmt_perfetto_field fl;
  while (p < end) {
    if (!fmt_perfetto_field_at(&p, end, &fl))
      return false;
    unsigned id = fl.id;
    if (k == FMT_PERFETTO_WIRE_EVENT && id == FMT_PERFETTO_WIRE_ANNOTATIONS &&
        fl.wire == 2) {
      if (!fmt_perfetto_wire_annotation(w, fl.v, fl.n, depth))
        return false;
      continue;
    }
    struct fmt_perfetto_wire_fd far;
    const struct fmt_perfetto_wire_fd *f = &far;
    if (id < FMT_PERFETTO_WIRE_IDS) {
      f = &w->fields[k][id];
    } else {
      const ProtobufCFieldDescriptor *d =
          protobuf_c_message_descriptor_get_field(fmt_perfetto_wire_msgs[k],
                                                  id);
      far = d ? fmt_perfetto_wire_fd(d) : (struct fmt_perfetto_wire_fd){0};
    }
    if (f->known &&
        !fmt_perfetto_wire_field(w, f, m, fl.wire, fl.v, fl.n, fl.x, depth))
      return false;
  }
  return true;
}

Perfetto__Protos__TracePacket *
fmt_perfetto_wire_packet(struct fmt_perfetto_wire *w, const uint8_t *data,
                         size_t len) {
  w->ann = NULL;
  w->nann = 0;
  Perfetto__Protos__TracePacket *p = fmt_perfetto_wire_blank(w, 0);
  return fmt_perfetto_wire_msg(w, 0, p, data, data + len, 0) ? p : NULL;
}

const struct fmt_perfetto_ann *
fmt_perfetto_wire_annotations(const struct fmt_perfetto_wire *w, size_t *n) {
  *n = w->nann;
  return w->ann;
}
