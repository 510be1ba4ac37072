/* varint.h -- base-128 varints (7 bits a byte, low groups first, the high
 * bit set on every byte but the last) and the zigzag mapping of signed
 * values to unsigned ones (small magnitudes -> short varints), for data a
 * module wrote itself: varint_get() trusts its input to be whole.
 */
#ifndef NEX_VARINT_H
#define NEX_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Writes v at p (at most 10 bytes); returns the bytes written. */
static inline size_t varint_put(unsigned char *p, uint64_t v) {
  size_t n = 0;
  for (; v >= 0x80; v >>= 7)
    p[n++] = (unsigned char)(v | 0x80);
  p[n++] = (unsigned char)v;
  return n;
}

/* Reads the varint at *p and moves *p past it. */
static inline uint64_t varint_get(const unsigned char **p) {
  uint64_t v = 0;
  for (int sh = 0;; sh += 7) {
    unsigned char c = *(*p)++;
    v |= (uint64_t)(c & 0x7f) << sh;
    if (c < 0x80)
      return v;
  }
}

/* d as an unsigned value: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... */
static inline uint64_t varint_zig(int64_t d) {
  return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

/* The inverse of varint_zig(). */
static inline int64_t varint_unzig(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
