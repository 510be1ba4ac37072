/* store_argset.h -- argument sets: an args text split into its set (a
 * template: the text with each value that varies from event to event
 * replaced by a mark) and those values.  Events whose args have the same
 * keys, layout and fixed values (true, false, null) share one set, kept
 * once in table arg_set; a slice block keeps each slice's set id and its
 * values in columns (store_block.h, doc/storage.md).
 *
 * The split is lexical and exact on any bytes: filling a template with
 * its values gives the text back byte for byte, valid JSON or not.
 * Outside strings, a number (a run of 0-9 . e E + - starting with a digit
 * or a minus) is a value; a string followed by ':' is a key and stays in
 * the template, any other string's content is a value.  A value that is
 * a decimal integer written as "%lld" or "%llu" would write it (inside
 * quotes or not) is kept as an integer, any other as its bytes.  A text
 * that holds a mark byte or a NUL, more than STORE_ARGSET_HOLES values or a
 * template longer than STORE_ARGSET_TPL_MAX has no set (it is kept as
 * it is).
 *
 * Ownership: store_argsets_new() returns an object freed by
 * store_argsets_free(); a struct store_argset_split points into the text
 * it was split from.
 */
#ifndef NEX_STORE_ARGSET_H
#define NEX_STORE_ARGSET_H

#include <stddef.h>
#include <stdint.h>

/* The marks of a template (bytes that no set's text holds). */
#define STORE_ARGSET_INT 1   /* an integer that fits int64 */
#define STORE_ARGSET_UINT 2  /* one above INT64_MAX, as its 64 bits */
#define STORE_ARGSET_BYTES 3 /* a string's content, a number's text */

/* The sets a writer gives ids to, and their templates' bytes, at most. */
#define STORE_ARGSETS_MAX 65536
#define STORE_ARGSETS_BYTES (8 << 20)

/* The values of one set at most, and its template's length. */
#define STORE_ARGSET_HOLES 64
#define STORE_ARGSET_TPL_MAX 4096

/* One text split: its template and values in the order they come. */
struct store_argset_split {
  char tpl[STORE_ARGSET_TPL_MAX];
  size_t tpl_len;
  int n_int, n_bytes;
  int64_t ints[STORE_ARGSET_HOLES]; /* STORE_ARGSET_INT and _UINT values */
  const char *bytes[STORE_ARGSET_HOLES];
  size_t bytes_len[STORE_ARGSET_HOLES];
};

/* Splits text (len bytes) into *out.  Returns 0, or -1 when the text has
 * no set. */
int store_argset_split(const char *text, size_t len,
                       struct store_argset_split *out);

/* The next part of template tpl..end from *p on: the literal bytes before
 * the next mark (*lit, *lit_len), and that mark (STORE_ARGSET_*), or 0
 * when the template ends after them.  *p moves past the mark. */
int store_argset_next(const char **p, const char *end, const char **lit,
                      size_t *lit_len);

/* Writes integer v as the text of mark `kind` (STORE_ARGSET_INT or _UINT)
 * at out (room for 20 bytes); returns the number of bytes written. */
size_t store_argset_put_int(char *out, int64_t v, int kind);

/* The sets a writer has given ids to. */
struct store_argsets;

/* Returns new, empty sets. */
struct store_argsets *store_argsets_new(void);
/* The id (1, 2, ... in the order first seen) of template tpl (len bytes),
 * given now if new; 0 when it is new and the sets are full
 * (STORE_ARGSETS_MAX, STORE_ARGSETS_BYTES: the text is then kept as it
 * is). */
int64_t store_argsets_intern(struct store_argsets *s, const char *tpl,
                             size_t len);
/* The template of set id of s (ud) as a struct store_block's argset
 * gives it, for a block decoded without its store: *tpl (kept as long as
 * s) and *len.  Returns 0, or -1 when s has no set id. */
int store_argsets_get(void *ud, int64_t id, const char **tpl, size_t *len);
/* Hands the sets given ids since the last call to fn(ud, id, tpl, len),
 * in the order of their ids. */
void store_argsets_drain(struct store_argsets *s,
                         void (*fn)(void *ud, int64_t id, const char *tpl,
                                    size_t len),
                         void *ud);
/* Frees s.  NULL allowed. */
void store_argsets_free(struct store_argsets *s);

#endif
