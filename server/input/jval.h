/* jval.h -- what a scanned JSON value (a jtok_span, jtok.h) says: its
 * text, decoded or made valid JSON, and numbers parsed exactly.
 *
 * Ownership: text functions append to sbufs the caller owns; spans are
 * only read.
 */
#ifndef NEX_JVAL_H
#define NEX_JVAL_H

#include <stddef.h>
#include <stdint.h>

#include "jtok.h"
#include "util.h"

/* Appends the decoded text of string span v: escapes resolved; invalid
 * UTF-8, lone surrogates and NUL replaced by U+FFFD. */
void jval_decode(struct sbuf *b, const struct jtok_span *v);

/* Appends the text of v: decoded if a string, else its raw JSON text --
 * made valid UTF-8, strings re-escaped, NaN/Infinity and numbers beyond a
 * double written null, when its flags ask for it.  `scratch` is working
 * space. */
void jval_add(struct sbuf *b, const struct jtok_span *v, struct sbuf *scratch);

/* Appends v as valid JSON text: objects and arrays as jval_add does,
 * strings quoted and escaped, a bare token that is not a JSON number or
 * literal as a string. */
void jval_json(struct sbuf *b, const struct jtok_span *v, struct sbuf *scratch);

/* Resets b to the text of v (as jval_add) and returns b->s; NULL when v is
 * absent (JTOK_NONE). */
const char *jval_text(struct sbuf *b, const struct jtok_span *v,
                      struct sbuf *scratch);

/* Parses the decimal number text s[0..n) ("12", "-3.5", "1.5e3") times
 * 10^scale exactly into *out, digits below the unit rounded half away from
 * zero (no floating point).  Returns 0, -EINVAL or -ERANGE. */
int jval_decimal(const unsigned char *s, size_t n, int scale, int64_t *out);

/* Parses an unsigned 64-bit integer: decimal, or hexadecimal with 0x.
 * Returns 0, -EINVAL or -ERANGE. */
int jval_u64(const char *s, uint64_t *out);

#endif
