/* util.c -- see util.h. */
#include "util.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    fatal("out of memory (%zu bytes)", n);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    fatal("out of memory (%zu x %zu bytes)", n, size);
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    fatal("out of memory (%zu bytes)", n);
  return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  char *s;
  va_start(ap, fmt);
  if (vasprintf(&s, fmt, ap) < 0)
    fatal("out of memory (vasprintf)");
  va_end(ap);
  return s;
}

void util_error_keep(char **kept, char *msg) {
  if (!*kept)
    *kept = msg;
  else
    free(msg);
}

void util_error_take(char **kept, char **out) {
  if (!*out)
    *out = *kept;
  else
    free(*kept);
  *kept = NULL;
}

/* The buffer grown to hold at least `need` bytes. */
static __attribute__((noinline)) void sbuf_grow_to(struct sbuf *b,
                                                   size_t need) {
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need)
    cap *= 2;
  b->s = xrealloc(b->s, cap);
  b->cap = cap;
}

void sbuf_grow(struct sbuf *b, size_t extra) {
  if (b->len + extra + 1 > b->cap)
    sbuf_grow_to(b, b->len + extra + 1);
}

void sbuf_add(struct sbuf *b, const char *s, size_t n) {
  sbuf_grow(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void sbuf_adds(struct sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }

void sbuf_printf(struct sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  sbuf_grow(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  size_t len;
  uint32_t cp;
  if (p[0] < 0x80)
    return 1;
  if ((p[0] & 0xE0) == 0xC0) {
    len = 2;
    cp = p[0] & 0x1F;
  } else if ((p[0] & 0xF0) == 0xE0) {
    len = 3;
    cp = p[0] & 0x0F;
  } else if ((p[0] & 0xF8) == 0xF0) {
    len = 4;
    cp = p[0] & 0x07;
  } else {
    return 0;
  }
  if (len > n)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

void sbuf_add_utf8(struct sbuf *b, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t len = utf8_seq(p + i, n - i);
    if (len)
      sbuf_add(b, s + i, len);
    else
      sbuf_adds(b, "\xEF\xBF\xBD");
    i += len ? len : 1;
  }
}

/* Eight bytes at a time while a word has none of a control byte, a byte
 * >= 0x80, a quote or a backslash (the usual "has a zero byte" and "has a
 * byte below" tests); the rest byte by byte. */
size_t util_json_plain(const unsigned char *p, size_t n) {
  const uint64_t ones = 0x0101010101010101ULL, high = ones * 0x80;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, p + i, 8);
    uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
    if ((x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) |
         ((bs - ones) & ~bs)) &
        high)
      break;
  }
  while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
    i++;
  return i;
}

/* sbuf_add_json_str, or with cstr the text up to its first NUL. */
static void util_json_str(struct sbuf *b, const char *s, size_t n, bool cstr) {
  const unsigned char *p = (const unsigned char *)s;
  /* room for the quotes and every byte as it is: the plain runs are copied
   * without a check; an escape or a replacement grows the buffer again */
  sbuf_grow(b, n + 2);
  b->s[b->len++] = '"';
  for (size_t i = 0;;) {
    size_t j = i + util_json_plain(p + i, n - i);
    memcpy(b->s + b->len, s + i, j - i);
    b->len += j - i;
    i = j;
    if (i == n)
      break;
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      sbuf_add(b, esc, 2);
      i++;
    } else if (c == 0 && cstr) {
      break;
    } else if (c < 0x20) {
      char esc[7] = "\\u00";
      esc[4] = "0123456789abcdef"[c >> 4];
      esc[5] = "0123456789abcdef"[c & 15];
      sbuf_add(b, esc, 6); /* no printf: a text of them must not crawl */
      i++;
    } else {
      size_t len = utf8_seq(p + i, n - i);
      if (len == 0) {
        sbuf_adds(b, "\xEF\xBF\xBD");
        i++;
      } else {
        sbuf_add(b, s + i, len);
        i += len;
      }
    }
    sbuf_grow(b, n - i + 1);
  }
  b->s[b->len++] = '"';
  b->s[b->len] = '\0';
}

void sbuf_add_json_str(struct sbuf *b, const char *s, size_t n) {
  util_json_str(b, s, n, false);
}

void sbuf_add_json_cstr(struct sbuf *b, const char *s, size_t n) {
  util_json_str(b, s, n, true);
}

/* Writes the decimal digits of u to end on the left, two at a time;
 * returns the first. */
static char *util_digits(char *end, uint64_t u) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222"
                              "32425262728293031323334353637383940414243444546"
                              "47484950515253545556575859606162636465666768697"
                              "07172737475767778798081828384858687888990919293"
                              "949596979899";
  for (; u >= 100; u /= 100) {
    end -= 2;
    memcpy(end, pairs + 2 * (u % 100), 2);
  }
  if (u >= 10) {
    end -= 2;
    memcpy(end, pairs + 2 * u, 2);
  } else {
    *--end = (char)('0' + u);
  }
  return end;
}

/* Writes v in decimal at p (room for 20 bytes); returns the end. */
static char *util_i64(char *p, int64_t v) {
  char buf[24], *e = buf + sizeof buf;
  char *q = util_digits(e, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
  if (v < 0)
    *--q = '-';
  memcpy(p, q, (size_t)(e - q));
  return p + (e - q);
}

void sbuf_add_i64(struct sbuf *b, int64_t v) {
  sbuf_grow(b, 20);
  b->len = (size_t)(util_i64(b->s + b->len, v) - b->s);
  b->s[b->len] = '\0';
}

void sbuf_add_i64s(struct sbuf *b, const int64_t *v, size_t n, int64_t base) {
  sbuf_grow(b, n * 21);
  char *p = b->s + b->len;
  for (size_t i = 0; i < n; i++) {
    if (i)
      *p++ = ',';
    p = util_i64(p, v[i] - base);
  }
  b->len = (size_t)(p - b->s);
  b->s[b->len] = '\0';
}

void sbuf_add_u64(struct sbuf *b, uint64_t u) {
  char buf[24], *e = buf + sizeof buf, *q = util_digits(e, u);
  sbuf_add(b, q, (size_t)(e - q));
}

void sbuf_reset(struct sbuf *b) {
  b->len = 0;
  if (b->s)
    b->s[0] = '\0';
}

void sbuf_free(struct sbuf *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

int util_parse_i64(const char *s, int64_t *out) {
  char *end;
  if (!s || !*s)
    return -EINVAL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end != '\0' || end == s)
    return -EINVAL;
  if (errno == ERANGE)
    return -ERANGE;
  *out = v;
  return 0;
}

uint64_t util_data_end(int fd, uint64_t size) {
  off_t at = 0, data, end = 0;
  while ((data = lseek(fd, at, SEEK_DATA)) >= 0) {
    end = lseek(fd, data, SEEK_HOLE);
    if (end < 0)
      return size;
    at = end;
  }
  return errno == ENXIO ? (uint64_t)end : size;
}

int64_t util_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

uint64_t util_hash(const void *p, size_t n) {
  /* 8 bytes at a time, multiply-xorshift mixing (not cryptographic) */
  const unsigned char *s = p;
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
  while (n >= 8) {
    uint64_t k;
    memcpy(&k, s, 8);
    h = (h ^ (k * 0xc4ceb9fe1a85ec53ULL)) * 0x100000001b3ULL;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t k = 0;
  memcpy(&k, s, n);
  h = (h ^ (k * 0xc4ceb9fe1a85ec53ULL)) * 0xff51afd7ed558ccdULL;
  h ^= h >> 32;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 29);
}

int util_rename_durable(const char *tmp, const char *path, char **cause) {
  int fd = open(tmp, O_RDONLY | O_CLOEXEC), rc = 0;
  if (fd < 0 || fsync(fd) != 0) {
    rc = -errno;
    *cause = xasprintf("cannot sync %s: %s", tmp, strerror(errno));
  }
  if (fd >= 0)
    close(fd);
  if (rc)
    return rc;
  if (rename(tmp, path) != 0) {
    rc = -errno;
    *cause =
        xasprintf("cannot rename %s to %s: %s", tmp, path, strerror(errno));
    return rc;
  }
  char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *(slash == dir ? slash + 1 : slash) = '\0';
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  free(dir);
  return 0;
}
