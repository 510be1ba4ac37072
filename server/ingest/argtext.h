/* argtext.h -- the args JSON object text of one slice, built in a
 * caller's buffer: begin, then members, then end.  The readers reach it
 * through ingest_args_* (ingest_sink.h), which build in the sink's buffer;
 * a decoder thread builds in a buffer of its own (ingest_system.c).
 *
 * Ownership: the text lives in the caller's sbuf. */
#ifndef NEX_ARGTEXT_H
#define NEX_ARGTEXT_H

#include "common.pb-c.h"
#include "util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Starts an object in b (its text so far is dropped). */
void argtext_begin(struct sbuf *b);
/* A member's key (its comma before it when it is not the first). */
void argtext_key(struct sbuf *b, const char *key);
/* A string member; nothing when v is NULL or empty. */
void argtext_str(struct sbuf *b, const char *key, const char *v);
void argtext_i64(struct sbuf *b, const char *key, int64_t v);
/* An unsigned value as a quoted string (JSON numbers lose precision above
 * 2^53). */
void argtext_u64(struct sbuf *b, const char *key, uint64_t v);
/* The attributes with a key: numbers as they are when they are JSON
 * numbers, everything else as strings. */
void argtext_attrs(struct sbuf *b, Nex__Attribute **a, size_t n);
/* v[0, n) as a JSON array of signed numbers, or of quoted unsigned ones;
 * nothing when n is 0. */
void argtext_list(struct sbuf *b, const char *key, const uint64_t *v, size_t n,
                  bool quoted);
/* JSON text after key (a value the caller vouches for). */
void argtext_raw(struct sbuf *b, const char *key, const char *json);
/* The members of the object text obj[0, len) appended. */
void argtext_splice(struct sbuf *b, const char *obj, size_t len);
/* Closes the object; returns its length, or 0 (and b empty) when it has
 * no member. */
size_t argtext_end(struct sbuf *b);

#endif
