/* jtok.c -- see jtok.h.
 *
 * Reading order: the source (mmap or gzip window), the scanners, text
 * decoding and number parsing, and the streaming helpers that refill.
 */
#include "jtok.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef unsigned char uchar;

#define JTOK_MAP_STEP (32u << 20) /* mmap window growth per refill */
#define JTOK_GZ_STEP (4u << 20)   /* bytes inflated per refill */
#define JTOK_GZ_IN (256u << 10)   /* compressed bytes read at a time */

/* ------------------------------------------------------------ source */

/* Inflates up to `room` bytes at s->end.  Returns the number added. */
static size_t jtok_inflate(struct jtok_src *s, size_t room) {
  uchar *out = (uchar *)s->end;
  s->z.next_out = out;
  s->z.avail_out = (uInt)room;
  while (s->z.avail_out > 0 && !s->zdone) {
    if (s->z.avail_in == 0) {
      ssize_t n = read(s->fd, s->zin, JTOK_GZ_IN);
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
        ssize_t n = read(s->fd, s->zin, JTOK_GZ_IN);
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
int jtok_fill(struct jtok_src *s) {
  if (s->eof)
    return 0;
  uint64_t lim = s->limit ? s->limit : UINT64_MAX;
  if (!s->gz) {
    size_t at = (size_t)(s->end - s->map);
    size_t stop = s->size < lim ? s->size : (size_t)lim;
    if (at >= stop) {
      s->eof = 1;
      return 0;
    }
    s->end += stop - at < JTOK_MAP_STEP ? stop - at : JTOK_MAP_STEP;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t done = (size_t)(s->p - s->map) & ~(page - 1);
    if (done > s->released) {
      madvise((void *)(s->map + s->released), done - s->released,
              MADV_DONTNEED);
      s->released = done;
    }
    return 1;
  }
  size_t keep = (size_t)(s->end - s->p);
  if (s->p != s->buf) {
    memmove(s->buf, s->p, keep);
    s->base_off += (uint64_t)(s->p - s->buf);
  }
  if (s->cap - keep < JTOK_GZ_STEP) {
    s->cap =
        s->cap * 2 > keep + JTOK_GZ_STEP ? s->cap * 2 : keep + JTOK_GZ_STEP;
    s->buf = xrealloc(s->buf, s->cap);
  }
  s->base = s->p = s->buf;
  s->end = s->buf + keep;
  size_t room = JTOK_GZ_STEP;
  uint64_t have = s->base_off + keep;
  if (have >= lim)
    room = 0;
  else if (lim - have < room)
    room = (size_t)(lim - have);
  size_t got = room ? jtok_inflate(s, room) : 0;
  s->end += got;
  if (got == 0) {
    s->eof = 1;
    return 0;
  }
  return 1;
}

/* Opens `path` for reading at most `limit` stream bytes (0 = all) and
 * loads the first window.  Returns 0 or a negative errno-style code with
 * *cause set (when cause is not NULL). */
int jtok_open(struct jtok_src *s, const char *path, uint64_t limit,
              char **cause) {
  struct stat sb;
  uchar magic[2] = {0, 0};
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
  if (pread(s->fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    s->gz = 1;
    if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
      if (cause)
        *cause = xasprintf("%s: zlib initialisation failed", path);
      close(s->fd);
      s->fd = -1;
      return -ENOMEM;
    }
    s->zin = xmalloc(JTOK_GZ_IN);
    s->cap = 2 * JTOK_GZ_STEP;
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
    s->base = s->p = s->end = s->map;
  }
  jtok_fill(s);
  if (s->end - s->p >= 3 && !memcmp(s->p, "\xEF\xBB\xBF", 3))
    s->p += 3; /* a UTF-8 byte order mark */
  return 0;
}

int jtok_open_object(struct jtok_src *s, const char *path, uint64_t limit,
                     const char *what, char **cause) {
  int rc = jtok_open(s, path, limit, cause);
  if (rc)
    return rc;
  if (jtok_ws(s)) {
    if (cause)
      *cause =
          xasprintf("%s: %s", path, s->err ? s->err : "no JSON in the file");
    return s->err ? -EBADMSG : -ENODATA;
  }
  if (*s->p != '{') {
    if (cause)
      *cause = xasprintf("%s: not a %s (JSON object expected, found byte "
                         "0x%02x)",
                         path, what, *s->p);
    return -EPROTO;
  }
  s->p++;
  return 0;
}

void jtok_close(struct jtok_src *s) {
  if (s->map)
    munmap((void *)s->map, s->size);
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

/* ------------------------------------------------------------ tokenizer */

static const uchar str_stop[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1};
static const uchar nest_stop[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [0x80 ... 0xff] = 1};
static const uchar scalar_stop[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [','] = 1, ['}'] = 1,
    [']'] = 1, [':'] = 1,  ['{'] = 1,  ['['] = 1,  ['"'] = 1};

/* The first byte of [p, end) that str_stop flags, or end.  Strings are
 * the bulk of a trace: 16 bytes at a time where the CPU can. */
static inline const uchar *str_find(const uchar *p, const uchar *end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                space = _mm_set1_epi8(0x20);
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    /* signed: below 0x20 are the control bytes and those >= 0x80 */
    __m128i m = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
        _mm_cmplt_epi8(v, space));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);
    if (bits)
      return p + __builtin_ctz(bits);
  }
#endif
  while (p < end && !str_stop[*p])
    p++;
  return p;
}

/* The first quote or backslash of [p, end), or end. */
static inline const uchar *quote_find(const uchar *p, const uchar *end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    unsigned bits = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
    if (bits)
      return p + __builtin_ctz(bits);
  }
#endif
  while (p < end && *p != '"' && *p != '\\')
    p++;
  return p;
}

/* The first byte of [p, end) that nest_stop flags, or end. */
static inline const uchar *nest_find(const uchar *p, const uchar *end) {
#ifdef __SSE2__
  /* { } [ ] are the bytes b with (b & 0xD9) == 0x59 but for Y _ y DEL */
  const __m128i quote = _mm_set1_epi8('"'), mask = _mm_set1_epi8((char)0xD9),
                brace = _mm_set1_epi8(0x59);
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    unsigned bits = (unsigned)_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                     _mm_cmpeq_epi8(_mm_and_si128(v, mask), brace)),
        v));
    for (; bits; bits &= bits - 1)
      if (nest_stop[p[__builtin_ctz(bits)]])
        return p + __builtin_ctz(bits);
  }
#endif
  while (p < end && !nest_stop[*p])
    p++;
  return p;
}

static inline const uchar *ws(const uchar *p, const uchar *end) {
  while (p < end && jtok_blank(*p))
    p++;
  return p;
}

/* Length of the valid UTF-8 sequence at p: 0 if invalid, -1 if the n
 * available bytes end inside a sequence that is valid so far. */
static int utf8_len(const uchar *p, size_t n) {
  int len;
  uint32_t cp;
  if (p[0] < 0x80)
    return 1;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) {
    len = 2;
    cp = p[0] & 0x1F;
  } else if ((p[0] & 0xF0) == 0xE0) {
    len = 3;
    cp = p[0] & 0x0F;
  } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
    len = 4;
    cp = p[0] & 0x07;
  } else {
    return 0;
  }
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n)
      return -1;
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
    /* Reject overlong forms and surrogates as soon as they show. */
    if (i == 1 &&
        ((len == 3 && cp < 0x20) || (len == 3 && cp >= 0x360 && cp <= 0x37F) ||
         (len == 4 && (cp < 0x10 || cp > 0x10F))))
      return 0;
  }
  return len;
}

static int hex4(const uchar *p, const uchar *end, uint32_t *out) {
  uint32_t v = 0;
  if (end - p < 4)
    return -1;
  for (int i = 0; i < 4; i++) {
    uchar c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return -1;
    v = v << 4 | (uint32_t)d;
  }
  *out = v;
  return 0;
}

/* Length of the escape at p (a backslash), flagging it in *fl; -1 if the
 * window ends right after the backslash.  A \u escape or pair cut by the
 * window end is flagged bad, which only makes copies re-encode the string:
 * the caller rescans a string cut by the window end anyway. */
static int esc_len(const uchar *p, const uchar *end, unsigned *fl) {
  uint32_t cp, lo;
  if (end - p < 2)
    return -1;
  *fl |= JTOK_F_ESC;
  if (p[1] != 'u') {
    if (!p[1] || !strchr("\"\\/bfnrt", p[1]))
      *fl |= JTOK_F_BADESC;
    return 2;
  }
  if (hex4(p + 2, end, &cp)) {
    *fl |= JTOK_F_BADESC;
    return 2;
  }
  if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 12 && p[6] == '\\' &&
      p[7] == 'u' && !hex4(p + 8, end, &lo) && lo >= 0xDC00 && lo <= 0xDFFF)
    return 12;
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
    *fl |= JTOK_F_BADESC;
  return 6;
}

/* Scans the string at *pp (a '"').  A quote followed by anything but , } ]
 * or : is taken as an unescaped quote inside the string (old Kineto wrote
 * those); a raw newline inside a string is an error. */
static int str_scan(const uchar **pp, const uchar *end, struct jtok_span *sp) {
  const uchar *p = *pp + 1, *start = p;
  unsigned fl = 0;
  for (;;) {
    p = str_find(p, end);
    if (p >= end)
      return JTOK_MORE;
    uchar c = *p;
    if (c == '"') {
      const uchar *q = ws(p + 1, end);
      if (q >= end)
        return JTOK_MORE;
      if (*q == ',' || *q == '}' || *q == ']' || *q == ':') {
        sp->p = start;
        sp->n = (size_t)(p - start);
        sp->kind = JTOK_STR;
        sp->fl = fl;
        *pp = p + 1;
        return JTOK_OK;
      }
      fl |= JTOK_F_QUOTE;
      p++;
    } else if (c == '\\') {
      int n = esc_len(p, end, &fl);
      if (n < 0)
        return JTOK_MORE;
      p += n;
    } else if (c == '\n') {
      *pp = p;
      return JTOK_BAD;
    } else if (c < 0x20) {
      fl |= JTOK_F_CTRL;
      p++;
    } else {
      int n = utf8_len(p, (size_t)(end - p));
      if (n < 0)
        return JTOK_MORE;
      if (n == 0) {
        fl |= JTOK_F_BADUTF;
        p++;
      } else {
        p += n;
      }
    }
  }
}

/* Scans a number or a literal (true, false, null, NaN...). */
static int scalar_scan(const uchar **pp, const uchar *end,
                       struct jtok_span *sp) {
  const uchar *p = *pp;
  unsigned fl = 0;
  while (p < end && !scalar_stop[*p]) {
    if (*p >= 0x80)
      fl |= JTOK_F_BADUTF;
    p++;
  }
  if (p >= end)
    return JTOK_MORE;
  if (p == *pp)
    return JTOK_BAD;
  uchar c = **pp;
  sp->p = *pp;
  sp->n = (size_t)(p - *pp);
  sp->kind = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.'
                 ? JTOK_NUM
                 : JTOK_LIT;
  sp->fl = fl;
  *pp = p;
  return JTOK_OK;
}

static inline int is_digit(uchar c) { return c >= '0' && c <= '9'; }

/* Returns 1 if s[0..n) is a JSON number. */
static int json_number(const uchar *s, size_t n) {
  size_t i = s[0] == '-';
  if (i < n && s[i] == '0')
    i++;
  else if (i < n && is_digit(s[i]))
    while (i < n && is_digit(s[i]))
      i++;
  else
    return 0;
  if (i < n && s[i] == '.') {
    if (++i >= n || !is_digit(s[i]))
      return 0;
    while (i < n && is_digit(s[i]))
      i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    if (++i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    if (i >= n || !is_digit(s[i]))
      return 0;
    while (i < n && is_digit(s[i]))
      i++;
  }
  return i == n;
}

/* 1 if the JSON number s[0..n) fits a double (parsers refuse 1e999). */
static int number_finite(const uchar *s, size_t n) {
  char buf[512];
  /* without an exponent, up to 300 digits are far below DBL_MAX */
  if (n <= 300 && !memchr(s, 'e', n) && !memchr(s, 'E', n))
    return 1;
  if (n >= sizeof buf)
    return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return isfinite(strtod(buf, NULL));
}

/* Checks a JSON scalar inside an object or array: a number or true, false,
 * null; NaN, [-]Infinity (written by Python) and numbers beyond a double
 * pass with JTOK_F_NONFINITE and become null when the text is copied. */
static int scalar_check(const struct jtok_span *v, unsigned *fl) {
  static const char *const lit[] = {"true", "false", "null"};
  static const char *const nonfinite[] = {"NaN", "Infinity", "-Infinity"};
  if (v->kind == JTOK_NUM && json_number(v->p, v->n)) {
    if (!number_finite(v->p, v->n))
      *fl |= JTOK_F_NONFINITE;
    return 0;
  }
  for (int i = 0; i < 3; i++) {
    if (v->n == strlen(lit[i]) && !memcmp(v->p, lit[i], v->n))
      return 0;
    if (v->n == strlen(nonfinite[i]) && !memcmp(v->p, nonfinite[i], v->n)) {
      *fl |= JTOK_F_NONFINITE;
      return 0;
    }
  }
  return -1;
}

/* Scans and validates the object or array at *pp up to its matching
 * close, without recursion (an explicit stack of container kinds). */
static int nest_scan(const uchar **pp, const uchar *end, struct jtok_span *sp) {
  enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, NEXT } want = VALUE;
  uint64_t is_obj[JTOK_MAX_DEPTH / 64];
  const uchar *p = *pp;
  unsigned fl = 0;
  int depth = 0;
  for (;;) {
    p = ws(p, end);
    if (p >= end)
      return JTOK_MORE;
    uchar c = *p;
    int top_obj = depth && (is_obj[(depth - 1) / 64] >> ((depth - 1) % 64) & 1);
    struct jtok_span v;
    int rc;
    if ((c == '}' && (want == KEY_OR_CLOSE || (want == NEXT && top_obj))) ||
        (c == ']' && (want == VALUE_OR_CLOSE || (want == NEXT && !top_obj)))) {
      p++;
      if (--depth == 0) {
        sp->p = *pp;
        sp->n = (size_t)(p - *pp);
        sp->kind = **pp == '{' ? JTOK_OBJ : JTOK_ARR;
        sp->fl = fl;
        *pp = p;
        return JTOK_OK;
      }
      want = NEXT;
      continue;
    }
    switch (want) {
    case VALUE:
    case VALUE_OR_CLOSE:
      if (c == '{' || c == '[') {
        if (depth == JTOK_MAX_DEPTH)
          goto bad;
        uint64_t bit = 1ULL << (depth % 64);
        is_obj[depth / 64] =
            c == '{' ? is_obj[depth / 64] | bit : is_obj[depth / 64] & ~bit;
        depth++;
        p++;
        want = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
        continue;
      }
      rc = c == '"' ? str_scan(&p, end, &v) : scalar_scan(&p, end, &v);
      if (rc == JTOK_OK && v.kind != JTOK_STR && scalar_check(&v, &fl))
        rc = JTOK_BAD, p = v.p;
      want = NEXT;
      break;
    case KEY:
    case KEY_OR_CLOSE:
      if (c != '"')
        goto bad;
      rc = str_scan(&p, end, &v);
      want = COLON;
      break;
    case COLON:
      if (c != ':')
        goto bad;
      p++;
      want = VALUE;
      continue;
    default: /* NEXT */
      if (c != ',')
        goto bad;
      p++;
      want = top_obj ? KEY : VALUE;
      continue;
    }
    if (rc != JTOK_OK) {
      if (rc == JTOK_BAD)
        *pp = p;
      return rc;
    }
    fl |= v.fl;
  }
bad:
  *pp = p;
  return JTOK_BAD;
}

int jtok_scan(const uchar **pp, const uchar *end, struct jtok_span *sp) {
  uchar c = **pp;
  if (c == '"')
    return str_scan(pp, end, sp);
  if (c == '{' || c == '[')
    return nest_scan(pp, end, sp);
  return scalar_scan(pp, end, sp);
}

/* Skips blanks and stray commas before the next member or element of an
 * object or array closed by `close`.  Returns JTOK_OK with *at on its first
 * byte, JTOK_END with *pp moved past the closing byte, or JTOK_MORE. */
static int item_start(const uchar **pp, const uchar *end, uchar close,
                      const uchar **at) {
  const uchar *p = *pp;
  for (;;) {
    p = ws(p, end);
    if (p >= end)
      return JTOK_MORE;
    if (*p != ',')
      break;
    p++;
  }
  if (*p == close) {
    *pp = p + 1;
    return JTOK_END;
  }
  *at = p;
  return JTOK_OK;
}

/* Reads the next member of an object whose '{' is behind *pp.  Returns
 * JTOK_OK with key and value, JTOK_END after the closing '}', JTOK_MORE or
 * JTOK_BAD.  Stray commas are tolerated. */
int jtok_member(const uchar **pp, const uchar *end, struct jtok_span *key,
                struct jtok_span *val) {
  const uchar *p;
  int rc = item_start(pp, end, '}', &p);
  if (rc != JTOK_OK)
    return rc;
  rc = JTOK_BAD;
  if (*p == '"' && (rc = str_scan(&p, end, key)) == JTOK_OK) {
    p = ws(p, end);
    if (p >= end)
      return JTOK_MORE;
    rc = JTOK_BAD;
    if (*p == ':') {
      p = ws(p + 1, end);
      if (p >= end)
        return JTOK_MORE;
      rc = jtok_scan(&p, end, val);
    }
  }
  if (rc != JTOK_MORE)
    *pp = p;
  return rc;
}

/* Same for the elements of an array whose '[' is behind *pp. */
int jtok_element(const uchar **pp, const uchar *end, struct jtok_span *val) {
  const uchar *p;
  int rc = item_start(pp, end, ']', &p);
  if (rc != JTOK_OK)
    return rc;
  rc = jtok_scan(&p, end, val);
  if (rc != JTOK_MORE)
    *pp = p;
  return rc;
}

/* Looks up the member of the object span `obj` (whole in memory) whose
 * key is the len raw bytes at name. */
int jtok_findn(const struct jtok_span *obj, const void *name, size_t len,
               struct jtok_span *val) {
  if (obj->kind != JTOK_OBJ)
    return 0;
  const uchar *p = obj->p + 1, *end = obj->p + obj->n;
  struct jtok_span k, v;
  int found = 0;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    if (k.n == len && !memcmp(k.p, name, len)) {
      *val = v;
      found = 1; /* the last duplicate wins, as in JSON parsers */
    }
  }
  return found;
}

int jtok_find(const struct jtok_span *obj, const char *name,
              struct jtok_span *val) {
  return jtok_findn(obj, name, strlen(name), val);
}

int jtok_is(const struct jtok_span *sp, const char *s) {
  size_t n = strlen(s);
  return sp->kind == JTOK_STR && sp->n == n && !sp->fl && !memcmp(sp->p, s, n);
}

/* ------------------------------------------------------------ text */

static const char replacement[] = "\xEF\xBF\xBD";

static void utf8_put(struct sbuf *b, uint32_t cp) {
  char u[4];
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    sbuf_add(b, replacement, 3);
  } else if (cp < 0x80) {
    sbuf_addc(b, (char)cp);
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    sbuf_add(b, u, 2);
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    sbuf_add(b, u, 3);
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    sbuf_add(b, u, 4);
  }
}

/* Appends the decoded text of string span sp: escapes resolved, invalid
 * UTF-8, lone surrogates and NUL replaced by U+FFFD. */
void jtok_decode(struct sbuf *b, const struct jtok_span *sp) {
  const uchar *p = sp->p, *end = sp->p + sp->n, *run = p;
  if (!(sp->fl & (JTOK_F_ESC | JTOK_F_BADUTF | JTOK_F_CTRL))) {
    sbuf_add(b, (const char *)p, sp->n);
    return;
  }
  while (p < end) {
    uchar c = *p;
    if (c != '\\' && c != 0 && c < 0x80) {
      p++;
      continue;
    }
    sbuf_add(b, (const char *)run, (size_t)(p - run));
    if (c == 0) {
      sbuf_add(b, replacement, 3);
      p++;
    } else if (c >= 0x80) {
      int n = utf8_len(p, (size_t)(end - p));
      if (n <= 0) {
        sbuf_add(b, replacement, 3);
        p++;
      } else {
        sbuf_add(b, (const char *)p, (size_t)n);
        p += n;
      }
    } else if (p + 1 >= end || p[1] < 0x20 || p[1] >= 0x80) {
      p++; /* a lone backslash: the next byte is decoded as it is */
    } else {
      uchar e = p[1];
      uint32_t cp, lo;
      p += 2;
      switch (e) {
      case 'b':
        sbuf_addc(b, '\b');
        break;
      case 'f':
        sbuf_addc(b, '\f');
        break;
      case 'n':
        sbuf_addc(b, '\n');
        break;
      case 'r':
        sbuf_addc(b, '\r');
        break;
      case 't':
        sbuf_addc(b, '\t');
        break;
      case 'u':
        if (hex4(p, end, &cp)) {
          sbuf_add(b, replacement, 3);
          break;
        }
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
            p[1] == 'u' && !hex4(p + 2, end, &lo) && lo >= 0xDC00 &&
            lo <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        }
        utf8_put(b, cp);
        break;
      default: /* \" \\ \/ and unknown escapes: the character itself */
        sbuf_addc(b, (char)e);
      }
    }
    run = p;
  }
  sbuf_add(b, (const char *)run, (size_t)(p - run));
}

/* Length of the NaN, Infinity or -Infinity token, or of the number beyond
 * a double, that starts at p (outside strings); 0 if there is none. */
static size_t nonfinite_len(const uchar *p, const uchar *end) {
  static const char *const tok[] = {"NaN", "Infinity", "-Infinity"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(tok[i]);
    if ((size_t)(end - p) >= n && !memcmp(p, tok[i], n) &&
        (p + n == end || scalar_stop[p[n]]))
      return n;
  }
  if (*p == '-' || is_digit(*p)) {
    const uchar *q = p;
    while (q < end && !scalar_stop[*q])
      q++;
    if (json_number(p, (size_t)(q - p)) && !number_finite(p, (size_t)(q - p)))
      return (size_t)(q - p);
  }
  return 0;
}

/* Appends the raw JSON text of a non-string value, made valid UTF-8, with
 * strings re-escaped and NaN/Infinity turned into null when the scan
 * flagged them.  `tmp` is scratch. */
static void raw_add(struct sbuf *b, const struct jtok_span *sp,
                    struct sbuf *tmp) {
  const uchar *p = sp->p, *end = sp->p + sp->n, *run = p;
  if (!(sp->fl & (JTOK_F_BADUTF | JTOK_F_QUOTE | JTOK_F_CTRL |
                  JTOK_F_NONFINITE | JTOK_F_BADESC))) {
    sbuf_add(b, (const char *)p, sp->n);
    return;
  }
  while (p < end) {
    /* tokens start the span or follow [ , : or a blank */
    int start = p == sp->p || p[-1] == '[' || p[-1] == ',' || p[-1] == ':' ||
                jtok_blank(p[-1]);
    size_t lit =
        start && (sp->fl & JTOK_F_NONFINITE) ? nonfinite_len(p, end) : 0;
    if (lit) {
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      sbuf_adds(b, "null");
      p = run = p + lit;
      continue;
    }
    if (*p == '"') {
      struct jtok_span s;
      const uchar *q = p;
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      if (str_scan(&q, end, &s) != JTOK_OK) { /* cannot happen: scanned */
        run = p;
        break;
      }
      sbuf_reset(tmp);
      jtok_decode(tmp, &s);
      sbuf_add_json_str(b, tmp->s, tmp->len);
      p = run = q;
    } else if (*p >= 0x80) {
      int n = utf8_len(p, (size_t)(end - p));
      if (n > 0) {
        p += n;
        continue;
      }
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      sbuf_add(b, replacement, 3);
      run = ++p;
    } else {
      p++;
    }
  }
  sbuf_add(b, (const char *)run, (size_t)(end - run));
}

/* Appends the text of value sp: decoded if a string, raw JSON text
 * otherwise. */
void jtok_add(struct sbuf *b, const struct jtok_span *sp, struct sbuf *tmp) {
  if (sp->kind == JTOK_STR)
    jtok_decode(b, sp);
  else
    raw_add(b, sp, tmp);
  if (!b->s)
    sbuf_add(b, "", 0);
}

void jtok_json(struct sbuf *b, const struct jtok_span *v,
               struct sbuf *scratch) {
  unsigned fl = 0;
  if (v->kind == JTOK_OBJ || v->kind == JTOK_ARR ||
      ((v->kind == JTOK_NUM || v->kind == JTOK_LIT) && !scalar_check(v, &fl) &&
       !fl)) {
    jtok_add(b, v, scratch);
    return;
  }
  if (v->kind == JTOK_STR) {
    sbuf_reset(scratch);
    jtok_decode(scratch, v);
  } else if (fl & JTOK_F_NONFINITE) {
    sbuf_adds(b, "null");
    return;
  } else { /* NUL as U+FFFD (JSON parsers refuse \u0000); the UTF-8 is
              repaired by sbuf_add_json_str */
    sbuf_reset(scratch);
    for (size_t i = 0; i < v->n; i++)
      if (v->p[i])
        sbuf_addc(scratch, (char)v->p[i]);
      else
        sbuf_add(scratch, replacement, 3);
  }
  sbuf_add_json_str(b, scratch->s ? scratch->s : "", scratch->len);
}

/* Resets b to the text of value sp and returns it; NULL when sp is
 * absent. */
const char *jtok_text(struct sbuf *b, const struct jtok_span *sp,
                      struct sbuf *tmp) {
  sbuf_reset(b);
  if (sp->kind == JTOK_NONE)
    return NULL;
  jtok_add(b, sp, tmp);
  return b->s;
}

/* Parses the decimal number text s[0..n) ("12", "-3.5", "1.5e3") times
 * 10^scale exactly into *out, rounding digits below the unit half away from
 * zero.  Returns 0, -EINVAL if s is not a number or -ERANGE. */
int jtok_decimal(const uchar *s, size_t n, int scale, int64_t *out) {
  uchar dig[24];
  size_t i = 0;
  long nd = 0, total = 0, nfrac = 0, ex = 0;
  int neg = 0, any = 0;
  if (i < n && (s[i] == '-' || s[i] == '+'))
    neg = s[i++] == '-';
  for (int frac = 0; i < n; i++) {
    if (s[i] == '.' && !frac) {
      frac = 1;
      continue;
    }
    if (s[i] < '0' || s[i] > '9')
      break;
    any = 1;
    nfrac += frac;
    if (total == 0 && s[i] == '0')
      continue; /* leading zeros carry no digits */
    if (nd < (long)sizeof dig)
      dig[nd++] = (uchar)(s[i] - '0');
    total++;
  }
  if (!any)
    return -EINVAL;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    int eneg = 0, edig = 0;
    i++;
    if (i < n && (s[i] == '-' || s[i] == '+'))
      eneg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, edig = 1)
      if (ex < 100000)
        ex = ex * 10 + (s[i] - '0');
    if (!edig)
      return -EINVAL;
    if (eneg)
      ex = -ex;
  }
  if (i != n)
    return -EINVAL;
  if (total == 0) {
    *out = 0;
    return 0;
  }
  /* value = D * 10^(ex + scale - nfrac), D = the `total` digits. */
  long keep = total + ex + scale - nfrac; /* digits left of the unit */
  if (keep > 19)
    return -ERANGE;
  uint64_t v = 0;
  for (long k = 0; k < keep; k++)
    v = v * 10 + (k < nd ? dig[k] : 0);
  if (keep >= 0 && keep < nd && dig[keep] >= 5)
    v++;
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1)
      return -ERANGE;
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  } else {
    if (v > (uint64_t)INT64_MAX)
      return -ERANGE;
    *out = (int64_t)v;
  }
  return 0;
}

/* Parses an unsigned 64-bit id: decimal, or hexadecimal with 0x. */
int jtok_u64(const char *s, uint64_t *out) {
  int base = 10;
  uint64_t v = 0;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  if (!*s)
    return -EINVAL;
  for (; *s; s++) {
    int d = *s >= '0' && *s <= '9'                 ? *s - '0'
            : base == 16 && *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
            : base == 16 && *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                                   : -1;
    if (d < 0)
      return -EINVAL;
    if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
      return -ERANGE;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  *out = v;
  return 0;
}

int jtok_true(const struct jtok_span *sp) {
  return sp->kind == JTOK_LIT && sp->n == 4 && !memcmp(sp->p, "true", 4);
}

int jtok_number(const struct jtok_span *v) {
  return v->kind == JTOK_NUM && json_number(v->p, v->n) &&
         number_finite(v->p, v->n);
}

/* Skips blanks, refilling.  Returns 0 at a non-blank byte, -1 at the end. */
int jtok_ws(struct jtok_src *s) {
  for (;;) {
    s->p = ws(s->p, s->end);
    if (s->p < s->end)
      return 0;
    if (!jtok_fill(s))
      return -1;
  }
}

/* Scans the value at the cursor, which must fit in JTOK_MAX_VALUE,
 * refilling as needed, and moves past it.  Returns 0, or -1 (cursor
 * unchanged) if it is malformed, too large or cut by the end of input. */
int jtok_value(struct jtok_src *s, struct jtok_span *v) {
  for (;;) {
    const uchar *q = s->p;
    int rc = jtok_scan(&q, s->end, v);
    if (rc == JTOK_OK) {
      s->p = q;
      return 0;
    }
    if (rc == JTOK_BAD || (size_t)(s->end - s->p) >= JTOK_MAX_VALUE ||
        !jtok_fill(s))
      return -1;
  }
}

/* Skips the value at the cursor without holding it in memory: a streaming
 * version of jtok_scan with the same string rule, for values of any size. */
void jtok_skip(struct jtok_src *s) {
  enum { OUT, STR, ESC, PEEK } state = OUT;
  int depth = 0;
  if (jtok_ws(s))
    return;
  if (*s->p != '{' && *s->p != '[' && *s->p != '"') {
    for (;;) {
      while (s->p < s->end && !scalar_stop[*s->p])
        s->p++;
      if (s->p < s->end || !jtok_fill(s))
        return;
    }
  }
  for (;;) {
    const uchar *p = s->p, *end = s->end;
    while (p < end) {
      uchar c = *p;
      switch (state) {
      case OUT:
        p = nest_find(p, end);
        if (p >= end)
          break;
        c = *p++;
        if (c == '"')
          state = STR;
        else if (c == '{' || c == '[')
          depth++;
        else if ((c == '}' || c == ']') && --depth == 0) {
          s->p = p;
          return;
        }
        break;
      case STR:
        p = quote_find(p, end);
        if (p >= end)
          break;
        state = *p++ == '\\' ? ESC : PEEK;
        break;
      case ESC:
        p++;
        state = STR;
        break;
      case PEEK:
        if (jtok_blank(c)) {
          p++;
        } else if (c == ',' || c == '}' || c == ']' || c == ':') {
          state = OUT;
          if (depth == 0) {
            s->p = p;
            return;
          }
        } else {
          state = STR; /* an unescaped quote inside the string */
        }
        break;
      }
    }
    s->p = end;
    if (!jtok_fill(s))
      return;
  }
}

/* After a malformed event: moves to the next '{' that can start an event
 * (one not preceded by ':', i.e. not a member value). */
void jtok_resync(struct jtok_src *s) {
  uchar prev = ',';
  for (;;) {
    for (const uchar *p = s->p; p < s->end; p++) {
      if (*p == '{' && prev != ':') {
        s->p = p;
        return;
      }
      if (!jtok_blank(*p))
        prev = *p;
    }
    s->p = s->end;
    if (!jtok_fill(s))
      return;
  }
}

/* ------------------------------------------------------------ warnings */

static void jtok_vwarn(const struct jtok_warn *w, uint64_t off, int skipped,
                       const char *fmt, va_list ap) {
  if (skipped)
    (*w->skipped)++;
  if (!w->fn)
    return;
  char *msg;
  if (vasprintf(&msg, fmt, ap) < 0)
    return;
  w->fn(w->ud, off, msg);
  free(msg);
}

int jtok_skipped(const struct jtok_warn *w, uint64_t off, const char *fmt,
                 ...) {
  va_list ap;
  va_start(ap, fmt);
  jtok_vwarn(w, off, 1, fmt, ap);
  va_end(ap);
  return 0;
}

void jtok_note(const struct jtok_warn *w, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jtok_vwarn(w, off, 0, fmt, ap);
  va_end(ap);
}

int jtok_next_member(struct jtok_src *s) {
  for (;;) {
    if (jtok_ws(s))
      return 0;
    if (*s->p == ',') {
      s->p++;
      continue;
    }
    if (*s->p == '}') {
      s->p++;
      return 0;
    }
    return 1;
  }
}

void jtok_finish(struct jtok_src *s, const struct jtok_warn *w,
                 const char *what) {
  if (!jtok_ws(s)) {
    jtok_note(w, jtok_off(s, s->p), "data after the end of the %s: ignored",
              what);
    while (jtok_fill(s))
      s->p = s->end;
    s->p = s->end;
  }
  if (s->err)
    jtok_note(w, jtok_off(s, s->end), "%s", s->err);
}
