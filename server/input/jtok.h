/* jtok.h -- streaming JSON tokenizer for big files (Chrome traces, the
 * vendor's JSON exports).
 *
 * A jtok_src is a window over the decompressed bytes of one file: a plain
 * file is mapped and the window slides through the mapping (pages behind the
 * cursor are given back), a gzip file (detected by its magic bytes) is
 * inflated into a buffer that keeps only the unconsumed tail.  Memory stays
 * bounded whatever the file size.
 *
 * The scanners work on a window [*pp, end) and never read past end.  A
 * scanner returns JTOK_OK and moves *pp past what it read, JTOK_BAD and sets
 * *pp to the offending byte, or JTOK_MORE (*pp unspecified) when the value
 * runs past end: the caller refills with jtok_fill() and scans again from
 * the value's start.  Values inside objects and arrays are validated (JSON
 * grammar, nesting up to JTOK_MAX_DEPTH); lenient spots are documented at
 * each function.
 *
 * Ownership: a jtok_span points into the window and is valid until the next
 * jtok_fill() (or any function that refills) on its source.  Text functions
 * append to sbufs the caller owns.
 */
#ifndef NEX_JTOK_H
#define NEX_JTOK_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "util.h"

/* Values longer than this are not held in the window (jtok_value refuses
 * them; decoders skip them with jtok_skip). */
#define JTOK_MAX_VALUE (64u << 20)
/* Deepest nesting accepted inside a value. */
#define JTOK_MAX_DEPTH 512

struct jtok_src {
  const unsigned char *p;    /* cursor: bytes before it are consumed */
  const unsigned char *end;  /* end of the bytes available */
  const unsigned char *base; /* start of the window */
  uint64_t base_off;         /* stream offset of base */
  int eof;                   /* the end of the stream has been reached */
  char *err; /* why the stream ended early (gzip corrupt or cut, read
                error), NULL if it did not */
  /* private */
  int fd, gz, zdone;
  const unsigned char *map;
  size_t size, released, cap;
  uint64_t limit;
  z_stream z;
  unsigned char *zin, *buf;
};

/* Opens `path` for reading at most `limit` stream bytes (0 = all), loads
 * the first window and moves the cursor past a UTF-8 byte order mark.
 * Returns 0, or a negative errno-style code (-ENOENT..., -EISDIR, -ENODATA
 * for an empty file) and sets *cause when cause is not NULL (a message
 * naming the file; the caller frees it). */
int jtok_open(struct jtok_src *s, const char *path, uint64_t limit,
              char **cause);

/* jtok_open, then checks that the stream holds a JSON object and moves the
 * cursor past its '{'.  Returns 0, or a negative errno-style code with
 * *cause set when cause is not NULL: those of jtok_open, -ENODATA when
 * there is no JSON, -EBADMSG when the gzip stream is corrupt, -EPROTO when
 * the first value is not an object ("not a <what> (JSON object
 * expected...)").  The source must be closed in every case. */
int jtok_open_object(struct jtok_src *s, const char *path, uint64_t limit,
                     const char *what, char **cause);

/* Makes more bytes available after s->end, keeping [s->p, s->end) (the
 * window may move: spans become invalid).  Returns 1 if bytes were added,
 * 0 at the end of the stream. */
int jtok_fill(struct jtok_src *s);

/* Releases the source (the struct can be opened again). */
void jtok_close(struct jtok_src *s);

/* The stream offset of q, a pointer into the current window. */
static inline uint64_t jtok_off(const struct jtok_src *s,
                                const unsigned char *q) {
  return s->base_off + (uint64_t)(q - s->base);
}

static inline int jtok_blank(unsigned char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Skips blanks at the cursor, refilling.  Returns 0 at a non-blank byte,
 * -1 at the end of the stream. */
int jtok_ws(struct jtok_src *s);

/* ------------------------------------------------------------ scanners */

enum { JTOK_OK = 0, JTOK_MORE, JTOK_BAD, JTOK_END };

/* Kinds of values. */
enum {
  JTOK_NONE = 0, /* absent */
  JTOK_STR,
  JTOK_NUM, /* a token starting like a number */
  JTOK_LIT, /* any other bare token: true, false, null... */
  JTOK_OBJ,
  JTOK_ARR
};

/* What decoding a value's text needs (jtok_span.fl). */
enum {
  JTOK_F_ESC = 1,        /* backslash escapes */
  JTOK_F_BADUTF = 2,     /* invalid UTF-8 */
  JTOK_F_QUOTE = 4,      /* unescaped quotes inside a string */
  JTOK_F_CTRL = 8,       /* raw control characters inside a string */
  JTOK_F_NONFINITE = 16, /* NaN, [-]Infinity or a number beyond a double
                            inside an object or array */
  JTOK_F_BADESC = 32     /* an unknown escape, a bad \u, a lone surrogate or
                            \u0000 (that JSON parsers refuse) */
};

/* A scanned value: for strings the bytes between the quotes, for anything
 * else its raw JSON text. */
struct jtok_span {
  const unsigned char *p;
  size_t n;
  int kind;
  unsigned fl;
};

/* Scans one value.  Strings: a quote followed by anything but , } ] or :
 * is taken as an unescaped quote inside the string (old Kineto wrote
 * those); a raw newline inside a string is an error.  Bare tokens at the
 * top (not inside an object or array) are not checked. */
int jtok_scan(const unsigned char **pp, const unsigned char *end,
              struct jtok_span *v);

/* Reads the next member of an object whose '{' is behind *pp: JTOK_OK with
 * key and value, JTOK_END after the closing '}' (moved past), JTOK_MORE or
 * JTOK_BAD.  Stray commas are tolerated. */
int jtok_member(const unsigned char **pp, const unsigned char *end,
                struct jtok_span *key, struct jtok_span *val);

/* Same for the elements of an array whose '[' is behind *pp. */
int jtok_element(const unsigned char **pp, const unsigned char *end,
                 struct jtok_span *val);

/* Looks up the member of object `obj` (a complete JTOK_OBJ span) whose key
 * is the len raw bytes at name; the last duplicate wins.  Returns 1 and
 * sets *val, or 0. */
int jtok_findn(const struct jtok_span *obj, const void *name, size_t len,
               struct jtok_span *val);
int jtok_find(const struct jtok_span *obj, const char *name,
              struct jtok_span *val);

/* 1 if v is the string s (compared raw), resp. the literal true, resp. a
 * number in JSON syntax that fits a double. */
int jtok_is(const struct jtok_span *v, const char *s);
int jtok_true(const struct jtok_span *v);
int jtok_number(const struct jtok_span *v);

/* ------------------------------------------------------------ text */

/* Appends the decoded text of string span v: escapes resolved; invalid
 * UTF-8, lone surrogates and NUL replaced by U+FFFD. */
void jtok_decode(struct sbuf *b, const struct jtok_span *v);

/* Appends the text of v: decoded if a string, else its raw JSON text --
 * made valid UTF-8, strings re-escaped, NaN/Infinity and numbers beyond a
 * double written null, when its flags ask for it.  `scratch` is working
 * space. */
void jtok_add(struct sbuf *b, const struct jtok_span *v, struct sbuf *scratch);

/* Appends v as valid JSON text: objects and arrays as jtok_add does,
 * strings quoted and escaped, a bare token that is not a JSON number or
 * literal as a string. */
void jtok_json(struct sbuf *b, const struct jtok_span *v, struct sbuf *scratch);

/* Resets b to the text of v (as jtok_add) and returns b->s; NULL when v is
 * absent (JTOK_NONE). */
const char *jtok_text(struct sbuf *b, const struct jtok_span *v,
                      struct sbuf *scratch);

/* Parses the decimal number text s[0..n) ("12", "-3.5", "1.5e3") times
 * 10^scale exactly into *out, digits below the unit rounded half away from
 * zero (no floating point).  Returns 0, -EINVAL or -ERANGE. */
int jtok_decimal(const unsigned char *s, size_t n, int scale, int64_t *out);

/* Parses an unsigned 64-bit integer: decimal, or hexadecimal with 0x.
 * Returns 0, -EINVAL or -ERANGE. */
int jtok_u64(const char *s, uint64_t *out);

/* ------------------------------------------------------------ streaming */

/* Scans the value at the cursor (refilling; it must fit in JTOK_MAX_VALUE)
 * and moves past it.  Returns 0, or -1 with the cursor unchanged if it is
 * malformed, too large or cut by the end of the stream. */
int jtok_value(struct jtok_src *s, struct jtok_span *v);

/* Skips the value at the cursor without holding it in memory (any size),
 * with the string rule of jtok_scan; stops at the end of the stream if the
 * value is cut. */
void jtok_skip(struct jtok_src *s);

/* After malformed input: moves the cursor to the next '{' that can start
 * an array element or a top-level object (one not preceded by ':'), or to
 * the end of the stream. */
void jtok_resync(struct jtok_src *s);

/* Moves the cursor to the next member of the top-level object being read,
 * past blanks and stray commas (refilling).  Returns 1 at the member's
 * first byte, 0 past the closing '}' or at the end of the stream. */
int jtok_next_member(struct jtok_src *s);

/* ------------------------------------------------------------ warnings */

/* Where a decoder's warnings go: the warning callback of its cb struct (fn
 * may be NULL) with its ud, and the skipped count of its stats. */
struct jtok_warn {
  void (*fn)(void *ud, uint64_t offset, const char *msg);
  void *ud;
  uint64_t *skipped;
};

/* Reports a record that could not be used: counts it in *w->skipped and
 * gives the formatted message to w->fn.  Returns 0. */
__attribute__((format(printf, 3, 4))) int
jtok_skipped(const struct jtok_warn *w, uint64_t off, const char *fmt, ...);

/* Reports a problem that skips no record (garbage, a cut gzip stream). */
__attribute__((format(printf, 3, 4))) void
jtok_note(const struct jtok_warn *w, uint64_t off, const char *fmt, ...);

/* Ends the read of a top-level value: reports and consumes any data after
 * it ("data after the end of the <what>: ignored"), then reports why the
 * stream ended early, if it did. */
void jtok_finish(struct jtok_src *s, const struct jtok_warn *w,
                 const char *what);

#endif
