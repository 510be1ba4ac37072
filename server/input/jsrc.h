/* jsrc.h -- the bytes of a big file (Chrome traces, the vendor's JSON
 * exports) as a window that slides forward: a plain file is mapped and the
 * window moves through the mapping, pages behind the cursor given back as
 * it goes; a gzip file (detected by its magic bytes) is inflated into a
 * buffer that keeps only the unconsumed tail.  Memory stays bounded
 * whatever the file size.  A plain file's sparse tail (a hole: zeros never
 * written) is not read: the stream ends before it, with s->err saying so.  The JSON tokenizer (jtok.h) scans the window.
 *
 * Ownership: the struct is the caller's; jsrc_open() fills it and
 * jsrc_close() releases what it holds.  A pointer into the window is valid
 * until the next jsrc_fill() (or any function that refills) on the source.
 */
#ifndef NEX_JSRC_H
#define NEX_JSRC_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

struct jsrc {
  const unsigned char *p;    /* cursor: bytes before it are consumed */
  const unsigned char *end;  /* end of the bytes available */
  const unsigned char *base; /* start of the window */
  uint64_t base_off;         /* stream offset of base */
  int eof;                   /* the end of the stream has been reached */
  char *err; /* why the stream ended early (gzip corrupt or cut, read
                error), NULL if it did not */
  /* private */
  int fd, gz, zdone;
  unsigned char *map; /* read-only pages, ours to advise and unmap */
  size_t size, released, cap;
  uint64_t data_end; /* past it a plain file is a hole: not read */
  uint64_t limit;
  z_stream z;
  unsigned char *zin, *buf;
};

/* Opens `path` for reading at most `limit` stream bytes (0 = all), loads
 * the first window and moves the cursor past a UTF-8 byte order mark.
 * Returns 0, or a negative errno-style code (-ENOENT..., -EISDIR, -ENODATA
 * for an empty file) and sets *cause when cause is not NULL (a message
 * naming the file; the caller frees it). */
int jsrc_open(struct jsrc *s, const char *path, uint64_t limit, char **cause);

/* 1 if the file open at fd starts with the gzip magic bytes, else 0. */
int jsrc_is_gzip(int fd);

/* Makes more bytes available after s->end, keeping [s->p, s->end) (the
 * window may move: pointers into it become invalid).  Returns 1 if bytes
 * were added, 0 at the end of the stream. */
int jsrc_fill(struct jsrc *s);

/* Releases the source (the struct can be opened again). */
void jsrc_close(struct jsrc *s);

/* The stream offset of q, a pointer into the current window. */
static inline uint64_t jsrc_off(const struct jsrc *s, const unsigned char *q) {
  return s->base_off + (uint64_t)(q - s->base);
}

#endif
