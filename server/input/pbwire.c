/* pbwire.c -- the wire walker.  See pbwire.h. */
#include "pbwire.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Field numbers indexed per message (the others are looked up). */
#define PBWIRE_IDS 128

/* A field as the walker uses it: what its descriptor says, packed in 12
 * bytes so that the index of the hot fields stays in a few cache lines
 * (the descriptors themselves are 72 bytes each, elsewhere). */
struct pbwire_fd {
  uint16_t offset, qoff; /* of the value and its quantifier */
  uint32_t id;
  uint8_t type, wire;
  uint8_t known : 1, repeated : 1, oneof : 1, hooked : 1;
  uint8_t sub; /* a message: the index of its type in the set, or 255 */
};
_Static_assert(sizeof(struct pbwire_fd) == 12, "an index entry is 12 bytes");

/* What the walker knows of one message of its set. */
struct pbwire_msg {
  const ProtobufCMessageDescriptor *d;
  struct pbwire_fd fields[PBWIRE_IDS];
  void *blank; /* the struct as its _init() leaves it (copied: faster) */
};

struct pbwire {
  ProtobufCAllocator *al;
  bool unknown; /* kept */
  size_t n;
  struct pbwire_msg *m;
  pbwire_hook_fn hook;
  void *hook_ud;
};

#define PBWIRE_NONE 255 /* a message type outside the set */

static int pbwire_type(ProtobufCType t);

/* The index entry of field d in walker w. */
static struct pbwire_fd pbwire_fd(const struct pbwire *w,
                                  const ProtobufCFieldDescriptor *d) {
  uint8_t sub = PBWIRE_NONE;
  for (size_t k = 0; d->type == PROTOBUF_C_TYPE_MESSAGE && k < w->n; k++)
    if (w->m[k].d == d->descriptor) {
      sub = (uint8_t)k;
      break;
    }
  return (struct pbwire_fd){.offset = (uint16_t)d->offset,
                            .qoff = (uint16_t)d->quantifier_offset,
                            .id = d->id,
                            .type = (uint8_t)d->type,
                            .wire = (uint8_t)pbwire_type(d->type),
                            .known = 1,
                            .repeated = d->label == PROTOBUF_C_LABEL_REPEATED,
                            .oneof =
                                (d->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0,
                            .sub = sub};
}

struct pbwire *pbwire_new(const ProtobufCMessageDescriptor *const *msgs,
                          size_t n, ProtobufCAllocator *al, bool unknown) {
  if (n == 0 || n >= PBWIRE_NONE)
    return NULL;
  struct pbwire *w = xcalloc(1, sizeof *w);
  w->al = al;
  w->unknown = unknown;
  w->n = n;
  w->m = xcalloc(n, sizeof *w->m);
  for (size_t k = 0; k < n; k++)
    w->m[k].d = msgs[k];
  for (size_t k = 0; k < n; k++) {
    const ProtobufCMessageDescriptor *m = msgs[k];
    w->m[k].blank = xmalloc(m->sizeof_message);
    protobuf_c_message_init(m, w->m[k].blank);
    if (m->sizeof_message > UINT16_MAX) /* offsets past the index entries */
      continue;
    for (unsigned i = 0; i < m->n_fields; i++)
      if (m->fields[i].id < PBWIRE_IDS)
        w->m[k].fields[m->fields[i].id] = pbwire_fd(w, &m->fields[i]);
  }
  return w;
}

void pbwire_free(struct pbwire *w) {
  if (!w)
    return;
  for (size_t k = 0; k < w->n; k++)
    free(w->m[k].blank);
  free(w->m);
  free(w);
}

void pbwire_hook(struct pbwire *w, size_t k, uint32_t id, pbwire_hook_fn fn,
                 void *ud) {
  w->hook = fn;
  w->hook_ud = ud;
  if (k < w->n && id < PBWIRE_IDS)
    w->m[k].fields[id].hooked = 1;
}

/* n bytes of the allocator, or NULL. */
static inline void *pbwire_alloc(struct pbwire *w, size_t n) {
  return w->al->alloc(w->al->allocator_data, n);
}

/* The wire type of a field type (2 for strings, bytes and messages). */
static int pbwire_type(ProtobufCType t) {
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
static inline uint64_t pbwire_fixed(const uint8_t *v, size_t n) {
  uint64_t x = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&x, v, n);
#else
  for (size_t i = n; i-- > 0;)
    x = x << 8 | v[i];
#endif
  return x;
}

/* Stores the value of field f held in v[0, n) (x: its varint) at slot, as
 * protobuf-c's parse_*() functions do.  Returns false to give up.  (This
 * and the two below are inlined: a call per field costs as much as the
 * field.) */
static inline __attribute__((always_inline)) bool
pbwire_value(struct pbwire *w, const struct pbwire_fd *f, void *slot,
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
    x32 = (uint32_t)pbwire_fixed(v, 4);
    memcpy(slot, &x32, 4);
    return true;
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    x = pbwire_fixed(v, 8);
    memcpy(slot, &x, 8);
    return true;
  case PROTOBUF_C_TYPE_STRING: {
    char *s = pbwire_alloc(w, n + 1);
    if (!s)
      return false;
    memcpy(s, v, n);
    s[n] = '\0';
    *(char **)slot = s;
    return true;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    ProtobufCBinaryData *b = slot;
    b->len = n;
    b->data = NULL;
    if (!n)
      return true;
    if (!(b->data = pbwire_alloc(w, n)))
      return false;
    memcpy(b->data, v, n);
    return true;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    if (f->sub == PBWIRE_NONE || depth >= PBWIRE_DEPTH)
      return false;
    return (*(void **)slot = pbwire_read(w, f->sub, v, n, depth + 1)) != NULL;
  }
  return false;
}

/* A new element at the end of repeated field f of message m: the array
 * grows in the allocator's memory (capacity 4, then the powers of two:
 * the old copy is left to it).  NULL when not given. */
static inline __attribute__((always_inline)) void *
pbwire_append(struct pbwire *w, const struct pbwire_fd *f, char *m) {
  size_t *n = (size_t *)(m + f->qoff), k = *n;
  size_t size = pbwire_elem_size((ProtobufCType)f->type);
  void **arr = (void **)(m + f->offset);
  if (k == 0 || (k >= 4 && !(k & (k - 1)))) {
    void *grown = pbwire_alloc(w, size * (k ? 2 * k : 4));
    if (!grown)
      return NULL;
    if (k)
      memcpy(grown, *arr, size * k);
    *arr = grown;
  }
  (*n)++;
  return (char *)*arr + size * k;
}

/* The elements of a packed repeated field in v[0, n). */
static bool pbwire_packed(struct pbwire *w, const struct pbwire_fd *f, char *m,
                          const uint8_t *v, size_t n) {
  int wire = f->wire;
  const uint8_t *p = v, *end = v + n;
  if (wire == 2 || n == 0)
    return false;
  while (p < end) {
    const uint8_t *e = p;
    uint64_t x = 0;
    if (wire == 0 && !pbwire_varint_at(&p, end, &x))
      return false;
    if (wire != 0) {
      if ((size_t)(end - p) < (wire == 1 ? 8u : 4u))
        return false;
      p += wire == 1 ? 8 : 4;
    }
    void *slot = pbwire_append(w, f, m);
    if (!slot || !pbwire_value(w, f, slot, e, (size_t)(p - e), x, 0))
      return false;
  }
  return true;
}

/* One field of message m with wire type `wire`, its bytes v[0, n). */
static inline __attribute__((always_inline)) bool
pbwire_field(struct pbwire *w, const struct pbwire_fd *f, char *m, int wire,
             const uint8_t *v, size_t n, uint64_t x, int depth) {
  int want = f->wire;
  if (f->repeated) {
    if (wire == 2 && want != 2)
      return pbwire_packed(w, f, m, v, n);
    if (wire != want)
      return false;
    void *slot = pbwire_append(w, f, m);
    return slot && pbwire_value(w, f, slot, v, n, x, depth);
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
  return pbwire_value(w, f, slot, v, n, x, depth);
}

/* Keeps field fl of message m aside as protobuf-c does: its number, wire
 * type and bytes after the key.  Returns false when memory is not given. */
static bool pbwire_unknown(struct pbwire *w, ProtobufCMessage *m,
                           const struct pbwire_field *fl) {
  size_t k = m->n_unknown_fields, size = sizeof *m->unknown_fields;
  if (k == 0 || (k >= 4 && !(k & (k - 1)))) {
    void *grown = pbwire_alloc(w, size * (k ? 2 * k : 4));
    if (!grown)
      return false;
    if (k)
      memcpy(grown, m->unknown_fields, size * k);
    m->unknown_fields = grown;
  }
  ProtobufCMessageUnknownField *u = &m->unknown_fields[k];
  u->tag = fl->id;
  u->wire_type = (ProtobufCWireType)fl->wire;
  u->len = (size_t)(fl->v + fl->n - fl->body);
  if (!(u->data = pbwire_alloc(w, u->len ? u->len : 1)))
    return false;
  memcpy(u->data, fl->body, u->len);
  m->n_unknown_fields = (unsigned)k + 1;
  return true;
}

void *pbwire_read(struct pbwire *w, size_t k, const uint8_t *p, size_t len,
                  int depth) {
  const struct pbwire_msg *msg = &w->m[k];
  size_t size = msg->d->sizeof_message;
  if (size > UINT16_MAX)
    return NULL;
  char *m = pbwire_alloc(w, size);
  if (!m)
    return NULL;
  memcpy(m, msg->blank, size);
  const uint8_t *end = p + len;
  struct pbwire_field fl;
  while (p < end) {
    if (!pbwire_field_at(&p, end, &fl))
      return NULL;
    unsigned id = fl.id;
    struct pbwire_fd far;
    const struct pbwire_fd *f = &far;
    if (id < PBWIRE_IDS) {
      f = &msg->fields[id];
    } else {
      const ProtobufCFieldDescriptor *d =
          protobuf_c_message_descriptor_get_field(msg->d, id);
      far = d ? pbwire_fd(w, d) : (struct pbwire_fd){0};
    }
    if (f->hooked && fl.wire == 2) {
      if (!w->hook(w->hook_ud, w, fl.v, fl.n, depth))
        return NULL;
      continue;
    }
    if (f->known ? !pbwire_field(w, f, m, fl.wire, fl.v, fl.n, fl.x, depth)
                 : w->unknown && !pbwire_unknown(w, (ProtobufCMessage *)m, &fl))
      return NULL;
  }
  return m;
}

size_t pbwire_elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE:
    return 8;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_MESSAGE:
    return sizeof(void *);
  case PROTOBUF_C_TYPE_BYTES:
    return sizeof(ProtobufCBinaryData);
  default:
    return 4; /* 32-bit types, enums and protobuf_c_boolean */
  }
}
