/* pbwire.h -- messages read from the protobuf wire format straight into
 * protobuf-c's structs, in one pass.
 *
 * protobuf_c_message_unpack() scans every message twice and calls a
 * function per field; this walker reads each field once, driven by the
 * generated field descriptors (offsets, labels, types) that protobuf-c
 * publishes, indexed once per walker.  It only takes the messages of the
 * set it was made for and the plain cases: anything else (a message of
 * another type, a field with an unexpected wire type, a varint over 10
 * bytes, a message field given twice, which protobuf-c would merge, a
 * length past its message, memory the allocator does not give) makes it
 * give up, and the caller unpacks with protobuf-c as before, which gives
 * the same structs for what is taken here.  Unknown fields are kept aside
 * as protobuf-c keeps them, or skipped by a walker made so.  Every length is
 * checked against the bytes of its message.  The fuzz targets compare its
 * result with protobuf-c's.
 *
 * Ownership: what a read returns lies in memory of the walker's allocator
 * (strings copied there, NUL-terminated); the caller frees it that way.
 * The walker borrows its set and allocator.
 */
#ifndef NEX_PBWIRE_H
#define NEX_PBWIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting of messages below the top one read; deeper ones give up. */
#define PBWIRE_DEPTH 8

struct pbwire;

/* A caller's own reading of the length-delimited field `id` of message
 * msgs[k] (its payload v[0, n), at nesting depth `depth`): returns false
 * to give up. */
typedef bool (*pbwire_hook_fn)(void *ud, struct pbwire *w, const uint8_t *v,
                               size_t n, int depth);

/* A walker of the messages msgs[0, n) (message fields of other types give
 * up), allocating from al, keeping unknown fields or not.  NULL when n is
 * 0. */
struct pbwire *pbwire_new(const ProtobufCMessageDescriptor *const *msgs,
                          size_t n, ProtobufCAllocator *al, bool unknown);
void pbwire_free(struct pbwire *w);

/* Field `id` of message msgs[k] (below 128) is read by fn (ud) rather
 * than stored.  A walker has one fn: a field hooked later shares it. */
void pbwire_hook(struct pbwire *w, size_t k, uint32_t id, pbwire_hook_fn fn,
                 void *ud);

/* Reads message msgs[k] from data[0, len) at nesting depth `depth` (0 for
 * a top message).  Returns its struct, or NULL when the walker gives up
 * (what it allocated is then left to the allocator). */
void *pbwire_read(struct pbwire *w, size_t k, const uint8_t *data, size_t len,
                  int depth);

/* The bytes of one element of a repeated field of type t in the array
 * protobuf-c keeps for it (8 for 64-bit types, a pointer for strings and
 * messages, ProtobufCBinaryData for bytes, 4 for the rest). */
size_t pbwire_elem_size(ProtobufCType t);

/* Reads a varint of at most 10 bytes at *pp (before end), advancing *pp.
 * Returns false when it is cut or longer. */
static inline bool pbwire_varint_at(const uint8_t **pp, const uint8_t *end,
                                    uint64_t *v) {
  const uint8_t *p = *pp;
  if (p < end && *p < 0x80) { /* most keys and values: one byte */
    *v = *p;
    *pp = p + 1;
    return true;
  }
  uint64_t x = 0;
  if (end - p >= 10) { /* all ten bytes there: no bound to check */
    for (int i = 0; i < 10; i++) {
      uint64_t b = p[i];
      x |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        *v = x;
        *pp = p + i + 1;
        return true;
      }
    }
    return false;
  }
  for (int i = 0; i < 10 && p < end; i++) {
    uint8_t b = *p++;
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      *pp = p;
      return true;
    }
  }
  return false;
}

/* A field as pbwire_field_at reads it: its number, wire type and value
 * bytes v[0, n) (a varint's own bytes, with x its value; a fixed value's
 * bytes; a length-delimited payload, with x its length); body: where its
 * bytes after the key begin (a payload's length first). */
struct pbwire_field {
  uint32_t id;
  int wire;
  const uint8_t *body, *v;
  size_t n;
  uint64_t x;
};

/* Reads the field at *pp (before end) into *f, advancing *pp past it.
 * Returns false when it is cut or malformed: a key over 5 bytes or 32
 * bits, field number 0, a wire type other than 0, 1, 2 or 5, a varint
 * over 10 bytes, a length over 5 bytes or past end. */
static inline bool pbwire_field_at(const uint8_t **pp, const uint8_t *end,
                                   struct pbwire_field *f) {
  const uint8_t *p = *pp;
  uint64_t key;
  f->x = 0;
  if (!pbwire_varint_at(&p, end, &key) || p - *pp > 5 || key >> 32 || key < 8)
    return false;
  f->id = (uint32_t)(key >> 3);
  f->wire = (int)(key & 7);
  f->body = f->v = p;
  if (f->wire == 0) {
    if (!pbwire_varint_at(&p, end, &f->x))
      return false;
  } else if (f->wire == 1 || f->wire == 5) {
    if (end - p < (f->wire == 1 ? 8 : 4))
      return false;
    p += f->wire == 1 ? 8 : 4;
  } else if (f->wire == 2) { /* a length over 5 bytes: as protobuf-c */
    if (!pbwire_varint_at(&p, end, &f->x) || p - f->v > 5 ||
        f->x > (uint64_t)(end - p))
      return false;
    f->v = p;
    p += f->x;
  } else {
    return false;
  }
  f->n = (size_t)(p - f->v);
  *pp = p;
  return true;
}

#endif
