/* jtok.h -- streaming JSON tokenizer for big files (Chrome traces, the
 * vendor's JSON exports), over the sliding window of a jsrc (jsrc.h).
 *
 * The scanners work on a window [*pp, end) and never read past end.  A
 * scanner returns JTOK_OK and moves *pp past what it read, JTOK_BAD and sets
 * *pp to the offending byte, or JTOK_MORE (*pp unspecified) when the value
 * runs past end: the caller refills with jsrc_fill() and scans again from
 * the value's start.  Values inside objects and arrays are validated (JSON
 * grammar, nesting up to JTOK_MAX_DEPTH); lenient spots are documented at
 * each function.  A scanned value's text and numbers: jval.h.
 *
 * Ownership: a jtok_span points into the window and is valid until the next
 * jsrc_fill() (or any function that refills) on its source.
 */
#ifndef NEX_JTOK_H
#define NEX_JTOK_H

#include <stddef.h>
#include <stdint.h>

#include "jsrc.h"

/* Values longer than this are not held in the window (jtok_value refuses
 * them; decoders skip them with jtok_skip). */
#define JTOK_MAX_VALUE (64u << 20)
/* NUL bytes in a row that end a stream being resynchronised. */
#define JTOK_NUL_RUN 64
/* Deepest nesting accepted inside a value. */
#define JTOK_MAX_DEPTH 512

/* 1 if c is a JSON blank (space, tab, newline, carriage return). */
static inline int jtok_blank(unsigned char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Skips blanks at the cursor, refilling.  Returns 0 at a non-blank byte,
 * -1 at the end of the stream. */
int jtok_ws(struct jsrc *s);

/* jsrc_open, then checks that the stream holds a JSON object and moves the
 * cursor past its '{'.  Returns 0, or a negative errno-style code with
 * *cause set when cause is not NULL: those of jsrc_open, -ENODATA when
 * there is no JSON, -EBADMSG when the gzip stream is corrupt, -EPROTO when
 * the first value is not an object ("not a <what> (JSON object
 * expected...)").  The source must be closed in every case. */
int jtok_open_object(struct jsrc *s, const char *path, uint64_t limit,
                     const char *what, char **cause);

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
  JTOK_F_BADESC = 32,    /* an unknown escape, a bad \u, a lone surrogate or
                            \u0000 (that JSON parsers refuse) */
  JTOK_F_TRAILCOMMA = 64 /* a comma before a closing } or ] inside an object
                            or array (dropped when the text is copied) */
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
 * those); a raw newline inside a string is an error.  A trailing comma
 * before a closing } or ] is accepted and flagged (JTOK_F_TRAILCOMMA), as
 * Perfetto's and Chrome's importers accept it.  Bare tokens at the top (not
 * inside an object or array) are not checked. */
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
/* 1 if s[0..n) is a number in JSON syntax that fits a double ("nan",
 * "0x10", "+1", ".5" and "1e999" are not). */
int jtok_number_text(const char *s, size_t n);

/* The scanner primitives the value decoders (jval.c) share. */

/* Length of the valid UTF-8 sequence at p: 0 if invalid, -1 if the n
 * available bytes end inside a sequence that is valid so far. */
int jtok_utf8_len(const unsigned char *p, size_t n);

/* Reads the 4 hex digits at p (before end) into *out.  Returns 0, or -1 if
 * they are not 4 hex digits. */
int jtok_hex4(const unsigned char *p, const unsigned char *end, uint32_t *out);

/* Checks the bare token v (JTOK_NUM or JTOK_LIT) as a JSON scalar: a number
 * or true, false, null.  Returns 0, with JTOK_F_NONFINITE added to *fl for
 * NaN, [-]Infinity and numbers beyond a double; -1 for anything else. */
int jtok_scalar_check(const struct jtok_span *v, unsigned *fl);

/* Length of the NaN, Infinity or -Infinity token, or of the number beyond
 * a double, that starts at p (outside strings); 0 if there is none. */
size_t jtok_nonfinite_len(const unsigned char *p, const unsigned char *end);

/* ------------------------------------------------------------ streaming */

/* Scans the value at the cursor (refilling; it must fit in JTOK_MAX_VALUE)
 * and moves past it.  Returns 0, or -1 with the cursor unchanged if it is
 * malformed, too large or cut by the end of the stream. */
int jtok_value(struct jsrc *s, struct jtok_span *v);

/* Skips the value at the cursor without holding it in memory (any size),
 * with the string rule of jtok_scan; stops at the end of the stream if the
 * value is cut. */
void jtok_skip(struct jsrc *s);

/* After malformed input: moves the cursor to the next '{' that can start
 * an array element or a top-level object (one not preceded by ':'), or to
 * the end of the stream.  A run of JTOK_NUL_RUN NUL bytes (never JSON: a
 * zero-filled tail) ends the stream at its start, with s->err saying so. */
void jtok_resync(struct jsrc *s);

/* Moves the cursor to the next member of the top-level object being read,
 * past blanks and stray commas (refilling).  Returns 1 at the member's
 * first byte, 0 past the closing '}' or at the end of the stream. */
int jtok_next_member(struct jsrc *s);

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
void jtok_finish(struct jsrc *s, const struct jtok_warn *w, const char *what);

#endif
