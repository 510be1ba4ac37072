/* jsrc.c -- see jsrc.h. */
#include "jsrc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef unsigned char uchar;

#define JSRC_MAP_STEP (32u << 20) /* mmap window growth per refill */
#define JSRC_GZ_STEP (4u << 20)   /* bytes inflated per refill */
#define JSRC_GZ_IN (256u << 10)   /* compressed bytes read at a time */

/* Inflates up to `room` bytes at s->end.  Returns the number added. */
static size_t jsrc_inflate(struct jsrc *s, size_t room) {
  uchar *out = s->buf + (s->end - s->buf);
  s->z.next_out = out;
  s->z.avail_out = (uInt)room;
  while (s->z.avail_out > 0 && !s->zdone) {
    if (s->z.avail_in == 0) {
      ssize_t n = read(s->fd, s->zin, JSRC_GZ_IN);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        if (n < 0)
          s->err = xasprintf("read error: %s", strerror(errno));
        else
          s->err = xstrdup("gzip stream truncated: the rest of the file "
                           "is missing");
        s->zdone = 1;
        break;
      }
      s->z.next_in = s->zin;
      s->z.avail_in = (uInt)n;
    }
    int rc = inflate(&s->z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      /* Concatenated gzip members continue the stream. */
      if (s->z.avail_in == 0) {
        ssize_t n = read(s->fd, s->zin, JSRC_GZ_IN);
        if (n <= 0) {
          s->zdone = 1;
          break;
        }
        s->z.next_in = s->zin;
        s->z.avail_in = (uInt)n;
      }
      if (s->z.next_in[0] != 0x1f) {
        s->zdone = 1;
        break;
      }
      inflateReset(&s->z);
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      s->err = xasprintf("gzip data corrupt (%s): the rest of the file is "
                         "ignored",
                         s->z.msg ? s->z.msg : "inflate error");
      s->zdone = 1;
    }
  }
  return (size_t)(s->z.next_out - out);
}

/* Makes more bytes available after s->end, keeping [s->p, s->end).
 * Returns 1 if bytes were added, 0 at the end of the stream. */
int jsrc_fill(struct jsrc *s) {
  if (s->eof)
    return 0;
  uint64_t lim = s->limit ? s->limit : UINT64_MAX;
  if (!s->gz) {
    size_t at = (size_t)(s->end - s->map);
    uint64_t stop64 = s->data_end < lim ? s->data_end : lim;
    size_t stop = (size_t)stop64;
    if (at >= stop) {
      if (stop == s->data_end && s->data_end < s->size && !s->err)
        s->err = xasprintf("the last %zu bytes of the file, a hole (zeros "
                           "never written), are not read",
                           s->size - stop);
      s->eof = 1;
      return 0;
    }
    s->end += stop - at < JSRC_MAP_STEP ? stop - at : JSRC_MAP_STEP;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t done = (size_t)(s->p - s->map) & ~(page - 1);
    if (done > s->released) {
      madvise(s->map + s->released, done - s->released, MADV_DONTNEED);
      s->released = done;
    }
    return 1;
  }
  size_t keep = (size_t)(s->end - s->p);
  if (s->p != s->buf) {
    memmove(s->buf, s->p, keep);
    s->base_off += (uint64_t)(s->p - s->buf);
  }
  if (s->cap - keep < JSRC_GZ_STEP) {
    s->cap =
        s->cap * 2 > keep + JSRC_GZ_STEP ? s->cap * 2 : keep + JSRC_GZ_STEP;
    s->buf = xrealloc(s->buf, s->cap);
  }
  s->base = s->p = s->buf;
  s->end = s->buf + keep;
  size_t room = JSRC_GZ_STEP;
  uint64_t have = s->base_off + keep;
  if (have >= lim)
    room = 0;
  else if (lim - have < room)
    room = (size_t)(lim - have);
  size_t got = room ? jsrc_inflate(s, room) : 0;
  s->end += got;
  if (got == 0) {
    s->eof = 1;
    return 0;
  }
  return 1;
}

int jsrc_is_gzip(int fd) {
  uchar magic[2];
  return pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

/* Opens `path` for reading at most `limit` stream bytes (0 = all) and
 * loads the first window.  Returns 0 or a negative errno-style code with
 * *cause set (when cause is not NULL). */
int jsrc_open(struct jsrc *s, const char *path, uint64_t limit, char **cause) {
  struct stat sb;
  memset(s, 0, sizeof *s);
  s->limit = limit;
  s->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (s->fd < 0 || fstat(s->fd, &sb) < 0) {
    int e = errno;
    if (cause)
      *cause = xasprintf("%s: %s", path, strerror(e));
    if (s->fd >= 0)
      close(s->fd);
    s->fd = -1;
    return -e;
  }
  if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
    int e = S_ISDIR(sb.st_mode)   ? EISDIR
            : S_ISREG(sb.st_mode) ? ENODATA
                                  : EINVAL;
    if (cause)
      *cause =
          xasprintf("%s: %s", path, e == ENODATA ? "empty file" : strerror(e));
    close(s->fd);
    s->fd = -1;
    return -e;
  }
  s->size = (size_t)sb.st_size;
  if (jsrc_is_gzip(s->fd)) {
    s->gz = 1;
    if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
      if (cause)
        *cause = xasprintf("%s: zlib initialisation failed", path);
      close(s->fd);
      s->fd = -1;
      return -ENOMEM;
    }
    s->zin = xmalloc(JSRC_GZ_IN);
    s->cap = 2 * JSRC_GZ_STEP;
    s->buf = xmalloc(s->cap);
    s->base = s->p = s->end = s->buf;
  } else {
    void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      if (cause)
        *cause = xasprintf("%s: mmap: %s", path, strerror(e));
      close(s->fd);
      s->fd = -1;
      return -e;
    }
    madvise(m, s->size, MADV_SEQUENTIAL);
    s->map = m;
    s->data_end = util_data_end(s->fd, s->size);
    s->base = s->p = s->end = s->map;
  }
  jsrc_fill(s);
  if (s->end - s->p >= 3 && !memcmp(s->p, "\xEF\xBB\xBF", 3))
    s->p += 3; /* a UTF-8 byte order mark */
  return 0;
}

void jsrc_close(struct jsrc *s) {
  if (s->map)
    munmap(s->map, s->size);
  if (s->gz) {
    inflateEnd(&s->z);
    free(s->zin);
    free(s->buf);
  }
  if (s->fd >= 0)
    close(s->fd);
  free(s->err);
  memset(s, 0, sizeof *s);
  s->fd = -1;
}
