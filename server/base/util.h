/* util.h -- allocation that cannot fail, string buffers, small helpers.
 *
 * Ownership: functions returning char * or a pointer transfer ownership to
 * the caller (free() it); const char * results are borrowed.
 */
#ifndef NEX_UTIL_H
#define NEX_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* malloc/calloc/realloc/strdup that abort with a message on exhaustion. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The first error of an object that keeps it until asked (malloc'd
 * messages): util_error_keep() keeps msg (taken over) unless *kept holds
 * one already; util_error_take() hands *kept to *out when that is NULL
 * (the caller then frees it), else frees it, and empties *kept. */
void util_error_keep(char **kept, char *msg);
void util_error_take(char **kept, char **out);

/* A growable byte buffer, always NUL-terminated.  Zero-initialise it
 * (struct sbuf b = {0};) and free b.s with free() or sbuf_free(). */
struct sbuf {
  char *s;
  size_t len, cap;
};
/* Makes room for `extra` more bytes and the NUL (the buffer may move). */
void sbuf_grow(struct sbuf *b, size_t extra);
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
/* Appends one byte (inline: the JSON writers call it per punctuation). */
static inline void sbuf_addc(struct sbuf *b, char c) {
  if (b->len + 2 > b->cap)
    sbuf_grow(b, 1);
  b->s[b->len++] = c;
  b->s[b->len] = '\0';
}
void sbuf_printf(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal (quotes and escapes included);
 * invalid UTF-8 bytes become U+FFFD. */
void sbuf_add_json_str(struct sbuf *b, const char *s, size_t n);
/* The length of the run at p[0, n) that a JSON string holds as it is:
 * printable ASCII but '"' and '\\'. */
size_t util_json_plain(const unsigned char *p, size_t n);
/* The same of s[0, n) up to its first NUL (a protobuf string as protobuf-c
 * gives it). */
void sbuf_add_json_cstr(struct sbuf *b, const char *s, size_t n);
/* Appends the n bytes at s with invalid UTF-8 bytes replaced by U+FFFD. */
void sbuf_add_utf8(struct sbuf *b, const char *s, size_t n);
/* Append a decimal integer (no printf). */
void sbuf_add_i64(struct sbuf *b, int64_t v);
void sbuf_add_u64(struct sbuf *b, uint64_t v);
/* Append v[0] - base, ..., v[n-1] - base in decimal, comma-separated. */
void sbuf_add_i64s(struct sbuf *b, const int64_t *v, size_t n, int64_t base);
void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);

/* Parses a whole decimal int64 ("-12"); returns 0 on success, -EINVAL if
 * s is not entirely a number, -ERANGE on overflow. */
int util_parse_i64(const char *s, int64_t *out);

/* The end of the last data extent of the open file fd of `size` bytes:
 * the bytes after it are one hole, zeros never written (a sparse tail).
 * `size` when the file system cannot tell (no SEEK_DATA/SEEK_HOLE). */
uint64_t util_data_end(int fd, uint64_t size);

/* Makes the complete file tmp the file path for good: syncs it, renames
 * it to path and syncs path's directory (so that the rename survives a
 * crash).  Returns 0, or -errno with *cause set to a malloc'd message
 * (tmp is left where it is). */
int util_rename_durable(const char *tmp, const char *path, char **cause);

/* Monotonic time in ns. */
int64_t util_now_ns(void);

/* A fast 64-bit hash of n bytes (for hash tables, not security). */
uint64_t util_hash(const void *p, size_t n);

#endif
