/* fmt_chrome.c -- see fmt_chrome.h.
 *
 * Reading order: the byte source (a sliding window over an mmap'd file or
 * over gzip output), the tokenizer (works on the window and answers TOK_MORE
 * when a value runs past its end: the caller refills and retries from the
 * value's start), text decoding, the event record and the phase rules, and
 * last the top-level drivers.
 *
 * Conventions of the tokenizer: a scanner gets a cursor *pp and the window
 * end.  On TOK_OK it moves *pp past what it read; on TOK_BAD it sets *pp to
 * the offending byte; on TOK_MORE *pp is unspecified.
 */
#include "fmt_chrome.h"
#include "util.h"

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
#include <zlib.h>

typedef unsigned char uchar;

#define CHROME_MAP_STEP (32u << 20)  /* mmap window growth per refill */
#define CHROME_GZ_STEP (4u << 20)    /* bytes inflated per refill */
#define CHROME_GZ_IN (256u << 10)    /* compressed bytes read at a time */
#define CHROME_MAX_VALUE (64u << 20) /* larger events are skipped */
#define CHROME_PROBE_BYTES (64u << 10)

/* ------------------------------------------------------------ source */

/* A window [base, end) of the decompressed stream; bytes before p are
 * consumed.  Plain files are mapped whole and the window end advances
 * through the mapping (pages behind p are given back); gzip files are
 * inflated into buf, keeping only the unconsumed tail. */
struct src {
  int fd;
  int gz;
  const uchar *map;
  size_t size;
  size_t released;
  z_stream z;
  int zdone;
  uchar *zin;
  uchar *buf;
  size_t cap;
  const uchar *base, *p, *end;
  uint64_t base_off; /* stream offset of base */
  uint64_t limit;    /* stream bytes to read at most; 0 = all */
  int eof;
  char *err; /* gzip or read error that ended the stream early */
};

static uint64_t src_off(const struct src *s, const uchar *q) {
  return s->base_off + (uint64_t)(q - s->base);
}

/* Inflates up to `room` bytes at s->end.  Returns the number added. */
static size_t src_inflate(struct src *s, size_t room) {
  uchar *out = (uchar *)s->end;
  s->z.next_out = out;
  s->z.avail_out = (uInt)room;
  while (s->z.avail_out > 0 && !s->zdone) {
    if (s->z.avail_in == 0) {
      ssize_t n = read(s->fd, s->zin, CHROME_GZ_IN);
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
        ssize_t n = read(s->fd, s->zin, CHROME_GZ_IN);
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
static int src_fill(struct src *s) {
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
    s->end += stop - at < CHROME_MAP_STEP ? stop - at : CHROME_MAP_STEP;
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
  if (s->cap - keep < CHROME_GZ_STEP) {
    s->cap =
        s->cap * 2 > keep + CHROME_GZ_STEP ? s->cap * 2 : keep + CHROME_GZ_STEP;
    s->buf = xrealloc(s->buf, s->cap);
  }
  s->base = s->p = s->buf;
  s->end = s->buf + keep;
  size_t room = CHROME_GZ_STEP;
  uint64_t have = s->base_off + keep;
  if (have >= lim)
    room = 0;
  else if (lim - have < room)
    room = (size_t)(lim - have);
  size_t got = room ? src_inflate(s, room) : 0;
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
static int src_open(struct src *s, const char *path, uint64_t limit,
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
    s->zin = xmalloc(CHROME_GZ_IN);
    s->cap = 2 * CHROME_GZ_STEP;
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
  src_fill(s);
  return 0;
}

static void src_close(struct src *s) {
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

enum { TOK_OK = 0, TOK_MORE, TOK_BAD, TOK_END };

/* Kinds of scanned values. */
enum { V_NONE = 0, V_STR, V_NUM, V_LIT, V_OBJ, V_ARR };

/* What decoding a value's text needs. */
enum { F_ESC = 1, F_BADUTF = 2, F_QUOTE = 4, F_CTRL = 8, F_NONFINITE = 16 };

/* Deepest nesting accepted inside a value. */
#define CHROME_MAX_DEPTH 512

/* A scanned value: for strings the bytes between the quotes, for anything
 * else the raw JSON text.  Points into the window. */
struct span {
  const uchar *p;
  size_t n;
  int kind;
  unsigned fl;
};

static const uchar str_stop[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1};
static const uchar nest_stop[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [0x80 ... 0xff] = 1};
static const uchar scalar_stop[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [','] = 1, ['}'] = 1,
    [']'] = 1, [':'] = 1,  ['{'] = 1,  ['['] = 1,  ['"'] = 1};

static inline int is_ws(uchar c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline const uchar *ws(const uchar *p, const uchar *end) {
  while (p < end && is_ws(*p))
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

/* Scans the string at *pp (a '"').  A quote followed by anything but , } ]
 * or : is taken as an unescaped quote inside the string (old Kineto wrote
 * those); a raw newline inside a string is an error. */
static int str_scan(const uchar **pp, const uchar *end, struct span *sp) {
  const uchar *p = *pp + 1, *start = p;
  unsigned fl = 0;
  for (;;) {
    while (p < end && !str_stop[*p])
      p++;
    if (p >= end)
      return TOK_MORE;
    uchar c = *p;
    if (c == '"') {
      const uchar *q = ws(p + 1, end);
      if (q >= end)
        return TOK_MORE;
      if (*q == ',' || *q == '}' || *q == ']' || *q == ':') {
        sp->p = start;
        sp->n = (size_t)(p - start);
        sp->kind = V_STR;
        sp->fl = fl;
        *pp = p + 1;
        return TOK_OK;
      }
      fl |= F_QUOTE;
      p++;
    } else if (c == '\\') {
      if (p + 1 >= end)
        return TOK_MORE;
      fl |= F_ESC;
      p += 2;
    } else if (c == '\n') {
      *pp = p;
      return TOK_BAD;
    } else if (c < 0x20) {
      fl |= F_CTRL;
      p++;
    } else {
      int n = utf8_len(p, (size_t)(end - p));
      if (n < 0)
        return TOK_MORE;
      if (n == 0) {
        fl |= F_BADUTF;
        p++;
      } else {
        p += n;
      }
    }
  }
}

/* Scans a number or a literal (true, false, null, NaN...). */
static int scalar_scan(const uchar **pp, const uchar *end, struct span *sp) {
  const uchar *p = *pp;
  unsigned fl = 0;
  while (p < end && !scalar_stop[*p]) {
    if (*p >= 0x80)
      fl |= F_BADUTF;
    p++;
  }
  if (p >= end)
    return TOK_MORE;
  if (p == *pp)
    return TOK_BAD;
  uchar c = **pp;
  sp->p = *pp;
  sp->n = (size_t)(p - *pp);
  sp->kind = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ? V_NUM
                                                                        : V_LIT;
  sp->fl = fl;
  *pp = p;
  return TOK_OK;
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

/* Checks a JSON scalar inside an object or array: a number or true, false,
 * null; NaN and [-]Infinity (written by Python) pass with F_NONFINITE and
 * become null when the text is copied. */
static int scalar_check(const struct span *v, unsigned *fl) {
  static const char *const lit[] = {"true", "false", "null"};
  static const char *const nonfinite[] = {"NaN", "Infinity", "-Infinity"};
  if (v->kind == V_NUM && json_number(v->p, v->n))
    return 0;
  for (int i = 0; i < 3; i++) {
    if (v->n == strlen(lit[i]) && !memcmp(v->p, lit[i], v->n))
      return 0;
    if (v->n == strlen(nonfinite[i]) && !memcmp(v->p, nonfinite[i], v->n)) {
      *fl |= F_NONFINITE;
      return 0;
    }
  }
  return -1;
}

/* Scans and validates the object or array at *pp up to its matching
 * close, without recursion (an explicit stack of container kinds). */
static int nest_scan(const uchar **pp, const uchar *end, struct span *sp) {
  enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, NEXT } want = VALUE;
  uint64_t is_obj[CHROME_MAX_DEPTH / 64];
  const uchar *p = *pp;
  unsigned fl = 0;
  int depth = 0;
  for (;;) {
    p = ws(p, end);
    if (p >= end)
      return TOK_MORE;
    uchar c = *p;
    int top_obj = depth && (is_obj[(depth - 1) / 64] >> ((depth - 1) % 64) & 1);
    struct span v;
    int rc;
    if ((c == '}' && (want == KEY_OR_CLOSE || (want == NEXT && top_obj))) ||
        (c == ']' && (want == VALUE_OR_CLOSE || (want == NEXT && !top_obj)))) {
      p++;
      if (--depth == 0) {
        sp->p = *pp;
        sp->n = (size_t)(p - *pp);
        sp->kind = **pp == '{' ? V_OBJ : V_ARR;
        sp->fl = fl;
        *pp = p;
        return TOK_OK;
      }
      want = NEXT;
      continue;
    }
    switch (want) {
    case VALUE:
    case VALUE_OR_CLOSE:
      if (c == '{' || c == '[') {
        if (depth == CHROME_MAX_DEPTH)
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
      if (rc == TOK_OK && v.kind != V_STR && scalar_check(&v, &fl))
        rc = TOK_BAD, p = v.p;
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
    if (rc != TOK_OK) {
      if (rc == TOK_BAD)
        *pp = p;
      return rc;
    }
    fl |= v.fl;
  }
bad:
  *pp = p;
  return TOK_BAD;
}

static int val_scan(const uchar **pp, const uchar *end, struct span *sp) {
  uchar c = **pp;
  if (c == '"')
    return str_scan(pp, end, sp);
  if (c == '{' || c == '[')
    return nest_scan(pp, end, sp);
  return scalar_scan(pp, end, sp);
}

/* Reads the next member of an object whose '{' is behind *pp.  Returns
 * TOK_OK with key and value, TOK_END after the closing '}', TOK_MORE or
 * TOK_BAD.  Stray commas are tolerated. */
static int obj_next(const uchar **pp, const uchar *end, struct span *key,
                    struct span *val) {
  const uchar *p = *pp;
  for (;;) {
    p = ws(p, end);
    if (p >= end)
      return TOK_MORE;
    if (*p != ',')
      break;
    p++;
  }
  if (*p == '}') {
    *pp = p + 1;
    return TOK_END;
  }
  int rc = TOK_BAD;
  if (*p == '"' && (rc = str_scan(&p, end, key)) == TOK_OK) {
    p = ws(p, end);
    if (p >= end)
      return TOK_MORE;
    rc = TOK_BAD;
    if (*p == ':') {
      p = ws(p + 1, end);
      if (p >= end)
        return TOK_MORE;
      rc = val_scan(&p, end, val);
    }
  }
  if (rc != TOK_MORE)
    *pp = p;
  return rc;
}

/* Same for the elements of an array whose '[' is behind *pp. */
static int arr_next(const uchar **pp, const uchar *end, struct span *val) {
  const uchar *p = *pp;
  for (;;) {
    p = ws(p, end);
    if (p >= end)
      return TOK_MORE;
    if (*p != ',')
      break;
    p++;
  }
  if (*p == ']') {
    *pp = p + 1;
    return TOK_END;
  }
  int rc = val_scan(&p, end, val);
  if (rc != TOK_MORE)
    *pp = p;
  return rc;
}

/* Looks up the member of the object span `obj` (whole in memory) whose
 * key is the len raw bytes at name. */
static int obj_findn(const struct span *obj, const void *name, size_t len,
                     struct span *val) {
  if (obj->kind != V_OBJ)
    return 0;
  const uchar *p = obj->p + 1, *end = obj->p + obj->n;
  struct span k, v;
  int found = 0;
  while (obj_next(&p, end, &k, &v) == TOK_OK) {
    if (k.n == len && !memcmp(k.p, name, len)) {
      *val = v;
      found = 1; /* the last duplicate wins, as in JSON parsers */
    }
  }
  return found;
}

static int obj_find(const struct span *obj, const char *name,
                    struct span *val) {
  return obj_findn(obj, name, strlen(name), val);
}

static int span_is(const struct span *sp, const char *s) {
  size_t n = strlen(s);
  return sp->kind == V_STR && sp->n == n && !sp->fl && !memcmp(sp->p, s, n);
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

/* Appends the decoded text of string span sp: escapes resolved, invalid
 * UTF-8, lone surrogates and NUL replaced by U+FFFD. */
static void str_decode(struct sbuf *b, const struct span *sp) {
  const uchar *p = sp->p, *end = sp->p + sp->n, *run = p;
  if (!(sp->fl & (F_ESC | F_BADUTF | F_CTRL))) {
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
    } else if (p + 1 >= end) {
      p++; /* a lone trailing backslash */
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

/* Length of the NaN, Infinity or -Infinity token at p (outside strings),
 * 0 if there is none. */
static size_t nonfinite_len(const uchar *p, const uchar *end) {
  static const char *const tok[] = {"NaN", "Infinity", "-Infinity"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(tok[i]);
    if ((size_t)(end - p) >= n && !memcmp(p, tok[i], n) &&
        (p + n == end || scalar_stop[p[n]]))
      return n;
  }
  return 0;
}

/* Appends the raw JSON text of a non-string value, made valid UTF-8, with
 * strings re-escaped and NaN/Infinity turned into null when the scan
 * flagged them.  `tmp` is scratch. */
static void raw_add(struct sbuf *b, const struct span *sp, struct sbuf *tmp) {
  const uchar *p = sp->p, *end = sp->p + sp->n, *run = p;
  if (!(sp->fl & (F_BADUTF | F_QUOTE | F_CTRL | F_NONFINITE))) {
    sbuf_add(b, (const char *)p, sp->n);
    return;
  }
  while (p < end) {
    size_t lit = (sp->fl & F_NONFINITE) ? nonfinite_len(p, end) : 0;
    if (lit) {
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      sbuf_adds(b, "null");
      p = run = p + lit;
      continue;
    }
    if (*p == '"') {
      struct span s;
      const uchar *q = p;
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      if (str_scan(&q, end, &s) != TOK_OK) { /* cannot happen: scanned */
        run = p;
        break;
      }
      sbuf_reset(tmp);
      str_decode(tmp, &s);
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
static void span_add(struct sbuf *b, const struct span *sp, struct sbuf *tmp) {
  if (sp->kind == V_STR)
    str_decode(b, sp);
  else
    raw_add(b, sp, tmp);
  if (!b->s)
    sbuf_add(b, "", 0);
}

/* Resets b to the text of value sp and returns it; NULL when sp is
 * absent. */
static const char *span_text(struct sbuf *b, const struct span *sp,
                             struct sbuf *tmp) {
  sbuf_reset(b);
  if (sp->kind == V_NONE)
    return NULL;
  span_add(b, sp, tmp);
  return b->s;
}

/* Parses the decimal number text s[0..n) ("12", "-3.5", "1.5e3") times
 * 10^scale exactly into *out, rounding digits below the unit half away from
 * zero.  Returns 0, -EINVAL if s is not a number or -ERANGE. */
static int dec_parse(const uchar *s, size_t n, int scale, int64_t *out) {
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
static int u64_parse(const char *s, uint64_t *out) {
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

/* ------------------------------------------------------------ matching */

/* An open B, b or S waiting for its end. */
struct open {
  char *name, *cat, *pid, *tid, *args;
  uint64_t *fids;
  size_t nfids;
  int64_t ts;
  uint64_t off;
  int async;
};

struct stack {
  struct open **v;
  size_t n, cap;
};

/* String-keyed hash map of stacks; linear probing, backward-shift delete
 * so that finished keys (one per async id) do not pile up. */
struct slot {
  char *key;
  size_t klen;
  uint64_t h;
  struct stack st;
};

struct map {
  struct slot *s;
  size_t cap, n;
};

static struct stack *map_get(struct map *m, const char *k, size_t klen,
                             int create) {
  if (create && (m->n + 1) * 4 > m->cap * 3) {
    struct map g = {xcalloc(m->cap ? m->cap * 2 : 64, sizeof *g.s),
                    m->cap ? m->cap * 2 : 64, m->n};
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->s[i].key)
        continue;
      size_t j = m->s[i].h & (g.cap - 1);
      while (g.s[j].key)
        j = (j + 1) & (g.cap - 1);
      g.s[j] = m->s[i];
    }
    free(m->s);
    *m = g;
  }
  if (!m->cap)
    return NULL;
  uint64_t h = util_hash(k, klen);
  size_t i = h & (m->cap - 1);
  for (; m->s[i].key; i = (i + 1) & (m->cap - 1))
    if (m->s[i].h == h && m->s[i].klen == klen && !memcmp(m->s[i].key, k, klen))
      return &m->s[i].st;
  if (!create)
    return NULL;
  m->s[i].key = xmalloc(klen ? klen : 1);
  memcpy(m->s[i].key, k, klen);
  m->s[i].klen = klen;
  m->s[i].h = h;
  m->n++;
  return &m->s[i].st;
}

/* Removes the entry holding stack st (which must be empty). */
static void map_del(struct map *m, struct stack *st) {
  size_t mask = m->cap - 1;
  size_t i =
      (size_t)((struct slot *)((char *)st - offsetof(struct slot, st)) - m->s);
  free(m->s[i].key);
  free(m->s[i].st.v);
  for (size_t j = (i + 1) & mask; m->s[j].key; j = (j + 1) & mask) {
    size_t home = m->s[j].h & mask;
    /* Move j into the hole unless its home lies cyclically in (i, j]. */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      m->s[i] = m->s[j];
      i = j;
    }
  }
  memset(&m->s[i], 0, sizeof m->s[i]);
  m->n--;
}

static void stack_push(struct stack *st, struct open *o) {
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 4;
    st->v = xrealloc(st->v, st->cap * sizeof *st->v);
  }
  st->v[st->n++] = o;
}

static void open_free(struct open *o) {
  free(o->name);
  free(o->cat);
  free(o->pid);
  free(o->tid);
  free(o->args);
  free(o->fids);
  free(o);
}

/* ------------------------------------------------------------ reader */

/* Fields of one event, as spans into the window. */
struct ev {
  uint64_t off;
  int members;
  struct span ph, name, cat, pid, tid, ts, dur, id, id2, bind_id, bp, scope,
      args, flow_in, flow_out;
};

/* Text buffers of the reader; SB_SCRATCH is only ever raw_add's scratch. */
enum {
  SB_NAME, /* event texts */
  SB_CAT,
  SB_PID,
  SB_TID,
  SB_ARGS,  /* args text, metadata value */
  SB_ID,    /* ev_idtext, flow ids */
  SB_ATID,  /* async track "async:<cat>:<id>" */
  SB_CNAME, /* counter name */
  SB_TEXT,  /* short-lived texts */
  SB_KEY,   /* map keys, top-level keys */
  SB_MERGE, /* merged begin/end args */
  SB_SCRATCH,
  SB_N
};

enum rd_mode { RD_MAIN, RD_PRESCAN, RD_PROBE };

struct rd {
  struct src src;
  const char *path;
  const struct fmt_chrome_cb *cb;
  struct fmt_chrome_stats *st;
  int64_t base_ns;
  int have_base, prescanned, saw_events;
  int64_t ts_max;
  int have_ts;
  struct ev ev;
  struct sbuf sb[SB_N];
  uint64_t *fids;
  size_t nfids, capfids;
  struct map stacks; /* B/E, key "pid\0tid" */
  struct map async;  /* b/e and S/F, key "<class>cat\0id" */
};

static void rd_vwarn(struct rd *r, uint64_t off, int skipped, const char *fmt,
                     va_list ap) {
  if (skipped)
    r->st->skipped++;
  if (!r->cb || !r->cb->warning)
    return;
  char *msg;
  if (vasprintf(&msg, fmt, ap) < 0)
    return;
  r->cb->warning(r->cb->ud, off, msg);
  free(msg);
}

/* Reports a skipped event. */
__attribute__((format(printf, 3, 4))) static int
rd_skip(struct rd *r, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rd_vwarn(r, off, 1, fmt, ap);
  va_end(ap);
  return 0;
}

/* Reports a problem that skips no event (garbage, a cut gzip stream). */
__attribute__((format(printf, 3, 4))) static void
rd_warn(struct rd *r, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rd_vwarn(r, off, 0, fmt, ap);
  va_end(ap);
}

/* Skips blanks, refilling.  Returns 0 at a non-blank byte, -1 at the end. */
static int rd_ws(struct rd *r) {
  for (;;) {
    r->src.p = ws(r->src.p, r->src.end);
    if (r->src.p < r->src.end)
      return 0;
    if (!src_fill(&r->src))
      return -1;
  }
}

/* Scans the value at the cursor, which must fit in CHROME_MAX_VALUE,
 * refilling as needed, and moves past it.  Returns 0, or -1 (cursor
 * unchanged) if it is malformed, too large or cut by the end of input. */
static int rd_value(struct rd *r, struct span *v) {
  struct src *s = &r->src;
  for (;;) {
    const uchar *q = s->p;
    int rc = val_scan(&q, s->end, v);
    if (rc == TOK_OK) {
      s->p = q;
      return 0;
    }
    if (rc == TOK_BAD || (size_t)(s->end - s->p) >= CHROME_MAX_VALUE ||
        !src_fill(s))
      return -1;
  }
}

/* Skips the value at the cursor without holding it in memory: a streaming
 * version of val_scan with the same string rule, for values of any size. */
static void rd_skip_stream(struct rd *r) {
  struct src *s = &r->src;
  enum { OUT, STR, ESC, PEEK } state = OUT;
  int depth = 0;
  if (rd_ws(r))
    return;
  if (*s->p != '{' && *s->p != '[' && *s->p != '"') {
    for (;;) {
      while (s->p < s->end && !scalar_stop[*s->p])
        s->p++;
      if (s->p < s->end || !src_fill(s))
        return;
    }
  }
  for (;;) {
    const uchar *p = s->p, *end = s->end;
    while (p < end) {
      uchar c = *p;
      switch (state) {
      case OUT:
        while (p < end && !nest_stop[*p])
          p++;
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
        while (p < end && *p != '"' && *p != '\\')
          p++;
        if (p >= end)
          break;
        state = *p++ == '\\' ? ESC : PEEK;
        break;
      case ESC:
        p++;
        state = STR;
        break;
      case PEEK:
        if (is_ws(c)) {
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
    if (!src_fill(s))
      return;
  }
}

/* After a malformed event: moves to the next '{' that can start an event
 * (one not preceded by ':', i.e. not a member value). */
static void rd_resync(struct rd *r) {
  struct src *s = &r->src;
  uchar prev = ',';
  for (;;) {
    for (const uchar *p = s->p; p < s->end; p++) {
      if (*p == '{' && prev != ':') {
        s->p = p;
        return;
      }
      if (!is_ws(*p))
        prev = *p;
    }
    s->p = s->end;
    if (!src_fill(s))
      return;
  }
}

/* ------------------------------------------------------------ emitting */

static int emit_slice(struct rd *r, const struct fmt_chrome_slice *sl) {
  return r->cb && r->cb->slice ? r->cb->slice(r->cb->ud, sl) : 0;
}

static int emit_flow(struct rd *r, char phase, const char *id, const char *pid,
                     const char *tid, int64_t ts, int enclosing, uint64_t off) {
  struct fmt_chrome_flow f = {phase, id, pid, tid, ts, enclosing, off};
  return r->cb && r->cb->flow ? r->cb->flow(r->cb->ud, &f) : 0;
}

/* Collects args.flow_id (a list of strings or numbers, or one of them)
 * into r->fids. */
static void ev_flow_ids(struct rd *r, const struct span *args) {
  struct span v, el;
  r->nfids = 0;
  if (args->kind != V_OBJ || !memmem(args->p, args->n, "\"flow_id\"", 9) ||
      !obj_find(args, "flow_id", &v))
    return;
  const uchar *p = v.p + 1, *end = v.p + v.n;
  int one = v.kind != V_ARR;
  while (one || arr_next(&p, end, &el) == TOK_OK) {
    uint64_t id;
    if (one)
      el = v;
    if ((el.kind == V_STR || el.kind == V_NUM) &&
        !u64_parse(span_text(&r->sb[SB_TEXT], &el, &r->sb[SB_SCRATCH]), &id)) {
      if (r->nfids == r->capfids) {
        r->capfids = r->capfids ? r->capfids * 2 : 8;
        r->fids = xrealloc(r->fids, r->capfids * sizeof *r->fids);
      }
      r->fids[r->nfids++] = id;
    }
    if (one)
      break;
  }
}

/* Writes the identity of an async or flow event into r->sb[SB_ID]:
 * "[scope:]id", "[scope:]global-id2" or "[scope:]local:<pid>:local-id2".
 * Returns NULL if the event has none. */
static const char *ev_idtext(struct rd *r, const struct ev *e,
                             const char *pid) {
  struct sbuf *b = &r->sb[SB_ID];
  struct span v;
  int local = 0;
  if (e->id.kind != V_NONE && e->id.kind != V_OBJ && e->id.kind != V_ARR)
    v = e->id;
  else if (!obj_find(&e->id2, "global", &v) &&
           !(local = obj_find(&e->id2, "local", &v)))
    return NULL;
  sbuf_reset(b);
  if (e->scope.kind != V_NONE) {
    span_add(b, &e->scope, &r->sb[SB_SCRATCH]);
    sbuf_addc(b, ':');
  }
  if (local)
    sbuf_printf(b, "local:%s:", pid);
  span_add(b, &v, &r->sb[SB_SCRATCH]);
  return b->s;
}

static void ts_seen(struct rd *r, int64_t end_ns) {
  if (!r->have_ts || end_ns > r->ts_max)
    r->ts_max = end_ns;
  r->have_ts = 1;
}

static int span_true(const struct span *sp) {
  return sp->kind == V_LIT && sp->n == 4 && !memcmp(sp->p, "true", 4);
}

/* Emits the v2 flow endpoint of an X or B event, if it has one: flow_out
 * starts a flow, flow_in ends one, both make a step; the id is bind_id (or
 * id when bind_id is absent). */
static int ev_flow_v2(struct rd *r, const struct ev *e, const char *pid,
                      const char *tid, int64_t ts) {
  int in = span_true(&e->flow_in), out = span_true(&e->flow_out);
  const struct span *id = e->bind_id.kind != V_NONE ? &e->bind_id : &e->id;
  if ((!in && !out) || id->kind == V_NONE)
    return 0;
  struct sbuf *b = &r->sb[SB_ID];
  sbuf_reset(b);
  sbuf_adds(b, "v2:");
  span_add(b, id, &r->sb[SB_SCRATCH]);
  return emit_flow(r,
                   in && out ? 't'
                   : out     ? 's'
                             : 'f',
                   b->s, pid, tid, ts, 1, e->off);
}

static int obj_empty(const char *a) {
  if (*a != '{')
    return 0;
  for (a++; is_ws((uchar)*a); a++)
    ;
  return *a == '}';
}

/* Appends the members of object text a to out, leaving out those whose
 * key object `skip` (may be NULL) also has. */
static void args_members(struct sbuf *out, const char *a,
                         const struct span *skip) {
  const uchar *p = (const uchar *)a + 1, *end = (const uchar *)a + strlen(a);
  struct span k, v, dup;
  while (obj_next(&p, end, &k, &v) == TOK_OK) {
    if (skip && obj_findn(skip, k.p, k.n, &dup))
      continue;
    if (out->len > 1)
      sbuf_addc(out, ',');
    sbuf_add(out, (const char *)k.p - 1, k.n + 2);
    sbuf_addc(out, ':');
    if (v.kind == V_STR)
      sbuf_add(out, (const char *)v.p - 1, v.n + 2);
    else
      sbuf_add(out, (const char *)v.p, v.n);
  }
}

/* Merges the args of an end event into those of its begin; where both
 * name a key the end's value wins, as in catapult.  Returns the merged
 * text (in out), a or b. */
static const char *args_merge(struct sbuf *out, const char *a, const char *b) {
  if (!b || obj_empty(b) || *b != '{')
    return a;
  if (!a || obj_empty(a) || *a != '{')
    return b;
  struct span bs = {(const uchar *)b, strlen(b), V_OBJ, 0};
  sbuf_reset(out);
  sbuf_addc(out, '{');
  args_members(out, a, &bs);
  args_members(out, b, NULL);
  sbuf_addc(out, '}');
  return out->s;
}

static struct open *open_new(struct rd *r, const char *name, const char *cat,
                             const char *pid, const char *tid, const char *args,
                             int64_t ts, uint64_t off, int async) {
  struct open *o = xcalloc(1, sizeof *o);
  o->name = xstrdup(name);
  o->cat = cat ? xstrdup(cat) : NULL;
  o->pid = xstrdup(pid);
  o->tid = xstrdup(tid);
  o->args = args ? xstrdup(args) : NULL;
  if (r->nfids) {
    o->fids = xmalloc(r->nfids * sizeof *o->fids);
    memcpy(o->fids, r->fids, r->nfids * sizeof *o->fids);
    o->nfids = r->nfids;
  }
  o->ts = ts;
  o->off = off;
  o->async = async;
  return o;
}

/* Emits the slice of an open begin closed at end_ts (end args and
 * r->fids merged in) and frees it. */
static int open_close(struct rd *r, struct open *o, int64_t end_ts,
                      const char *end_args, int incomplete) {
  if (r->nfids) {
    o->fids = xrealloc(o->fids, (o->nfids + r->nfids) * sizeof *o->fids);
    memcpy(o->fids + o->nfids, r->fids, r->nfids * sizeof *o->fids);
    o->nfids += r->nfids;
  }
  struct fmt_chrome_slice sl = {
      .name = o->name,
      .cat = o->cat,
      .pid = o->pid,
      .tid = o->tid,
      .ts_ns = o->ts,
      .dur_ns = end_ts > o->ts ? end_ts - o->ts : 0,
      .incomplete = incomplete,
      .async = o->async,
      .args_json = args_merge(&r->sb[SB_MERGE], o->args, end_args),
      .flow_ids = o->fids,
      .n_flow_ids = o->nfids,
      .offset = o->off,
  };
  int rc = emit_slice(r, &sl);
  open_free(o);
  return rc;
}

/* The B/E stack of a thread (key "pid\0tid") or the open begins of an
 * async id (key "<class>cat\0id"). */
static struct stack *rd_stack(struct rd *r, struct map *m, char cls,
                              const char *a, const char *b, int create) {
  struct sbuf *k = &r->sb[SB_KEY];
  sbuf_reset(k);
  if (cls)
    sbuf_addc(k, cls);
  sbuf_adds(k, a);
  sbuf_add(k, "", 1);
  sbuf_adds(k, b);
  return map_get(m, k->s, k->len, create);
}

static int ev_meta(struct rd *r, const struct ev *e, const char *name,
                   const char *pid, const char *tid) {
  static const struct {
    const char *kind, *arg;
    int thread;
  } kinds[] = {{"process_name", "name", 0},
               {"process_labels", "labels", 0},
               {"process_sort_index", "sort_index", 0},
               {"thread_name", "name", 1},
               {"thread_sort_index", "sort_index", 1}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    struct span v;
    if (strcmp(name, kinds[i].kind))
      continue;
    if (!obj_find(&e->args, kinds[i].arg, &v) || v.kind == V_LIT)
      return rd_skip(r, e->off, "metadata event '%s' without args.%s: skipped",
                     name, kinds[i].arg);
    struct fmt_chrome_meta m = {
        name, pid, kinds[i].thread ? tid : NULL,
        span_text(&r->sb[SB_ARGS], &v, &r->sb[SB_SCRATCH])};
    return r->cb && r->cb->meta ? r->cb->meta(r->cb->ud, &m) : 0;
  }
  return rd_skip(r, e->off, "unsupported metadata event '%s': skipped", name);
}

static int ev_counter(struct rd *r, const struct ev *e, const char *name,
                      const char *pid, int64_t ts) {
  const char *idt = ev_idtext(r, e, pid);
  struct sbuf *cname = &r->sb[SB_CNAME];
  if (idt) { /* a counter with an id is its own series set: name[id] */
    sbuf_reset(cname);
    sbuf_printf(cname, "%s[%s]", name, idt);
    name = cname->s;
  }
  int n = 0, rc = 0;
  if (e->args.kind == V_OBJ) {
    const uchar *p = e->args.p + 1, *end = e->args.p + e->args.n;
    struct span k, v;
    while (!rc && obj_next(&p, end, &k, &v) == TOK_OK) {
      char num[64], *stop;
      if (v.kind != V_NUM || v.n >= sizeof num)
        continue;
      memcpy(num, v.p, v.n);
      num[v.n] = '\0';
      double x = strtod(num, &stop);
      if (*stop || !isfinite(x))
        continue;
      struct fmt_chrome_counter c = {
          pid, name, span_text(&r->sb[SB_TEXT], &k, &r->sb[SB_SCRATCH]),
          ts,  x,    e->off};
      n++;
      rc = r->cb && r->cb->counter ? r->cb->counter(r->cb->ud, &c) : 0;
    }
  }
  if (!n)
    rd_skip(r, e->off, "counter event '%s' without numeric args: skipped",
            name);
  return rc;
}

/* Applies the phase rules to a parsed event. */
static int ev_process(struct rd *r, const struct ev *e) {
  if (e->members == 0)
    return rd_skip(r, e->off, "empty event object {}: skipped");
  const char *phs = span_text(&r->sb[SB_TEXT], &e->ph, &r->sb[SB_SCRATCH]);
  if (e->ph.kind != V_STR || !*phs)
    return rd_skip(r, e->off, "event without \"ph\": skipped");
  char ph = phs[0];
  if (phs[1] || !strchr("XBEiIRCMbenSTpFstf", ph))
    return rd_skip(r, e->off, "unsupported phase '%.16s': skipped", phs);
  struct sbuf *sb = r->sb, *tmp = &r->sb[SB_SCRATCH];
  const char *name = span_text(&sb[SB_NAME], &e->name, tmp);
  const char *cat = span_text(&sb[SB_CAT], &e->cat, tmp);
  const char *pid = span_text(&sb[SB_PID], &e->pid, tmp);
  const char *tid = span_text(&sb[SB_TID], &e->tid, tmp);
  if (!name)
    name = "";
  if (!pid)
    pid = "";
  if (!tid)
    tid = "";
  if (ph == 'M')
    return ev_meta(r, e, name, pid, tid);

  int64_t ts, dur = 0, end;
  if (e->ts.kind == V_NONE)
    return rd_skip(r, e->off, "'%c' event without \"ts\": skipped", ph);
  if ((e->ts.kind != V_NUM && e->ts.kind != V_STR) ||
      dec_parse(e->ts.p, e->ts.n, 3, &ts) ||
      __builtin_add_overflow(ts, r->base_ns, &ts))
    return rd_skip(r, e->off, "'%c' event with bad \"ts\" %.*s: skipped", ph,
                   (int)(e->ts.n < 40 ? e->ts.n : 40), (const char *)e->ts.p);
  /* A missing, bad or negative dur gives a zero-length X. */
  if (ph == 'X' && (e->dur.kind == V_NUM || e->dur.kind == V_STR) &&
      (dec_parse(e->dur.p, e->dur.n, 3, &dur) || dur < 0 ||
       __builtin_add_overflow(ts, dur, &end)))
    dur = 0;
  ts_seen(r, ts + dur);
  const char *args = NULL;
  if (e->args.kind != V_NONE)
    args = span_text(&sb[SB_ARGS], &e->args, tmp);
  r->nfids = 0;
  if (strchr("XBbSEeF", ph))
    ev_flow_ids(r, &e->args);

  struct fmt_chrome_slice sl = {.name = name,
                                .cat = cat,
                                .pid = pid,
                                .tid = tid,
                                .ts_ns = ts,
                                .args_json = args,
                                .flow_ids = r->fids,
                                .n_flow_ids = r->nfids,
                                .offset = e->off};
  const char *idt;
  struct stack *st;
  int rc;
  switch (ph) {
  case 'X':
    sl.dur_ns = dur;
    rc = emit_slice(r, &sl);
    return rc ? rc : ev_flow_v2(r, e, pid, tid, ts);
  case 'B':
    st = rd_stack(r, &r->stacks, 0, pid, tid, 1);
    stack_push(st, open_new(r, name, cat, pid, tid, args, ts, e->off, 0));
    return ev_flow_v2(r, e, pid, tid, ts);
  case 'E':
    st = rd_stack(r, &r->stacks, 0, pid, tid, 0);
    if (!st || !st->n)
      return rd_skip(r, e->off,
                     "'E' event without an open 'B' on pid %s tid %s: skipped",
                     pid, tid);
    rc = open_close(r, st->v[--st->n], ts, args, 0);
    if (!st->n)
      map_del(&r->stacks, st);
    return rc;
  case 'i':
  case 'I':
  case 'R':
    sl.instant = 1;
    return emit_slice(r, &sl);
  case 'C':
    return ev_counter(r, e, name, pid, ts);
  case 's':
  case 't':
  case 'f': {
    int enclosing = ph != 'f' || span_is(&e->bp, "e") ||
                    (cat && (strstr(cat, "input") || strstr(cat, "ipc.flow")));
    if (!(idt = ev_idtext(r, e, pid)))
      return rd_skip(r, e->off, "flow event '%c' without id: skipped", ph);
    struct sbuf *fid = &r->sb[SB_TEXT];
    sbuf_reset(fid);
    sbuf_adds(fid, cat ? cat : "");
    sbuf_addc(fid, ':');
    sbuf_adds(fid, idt);
    return emit_flow(r, ph, fid->s, pid, tid, ts, enclosing, e->off);
  }
  default: /* async: b e n (nestable), S T p F (legacy) */
    break;
  }
  if (!(idt = ev_idtext(r, e, pid)))
    return rd_skip(r, e->off, "async event '%c' without id: skipped", ph);
  struct sbuf *ab = &r->sb[SB_ATID];
  sbuf_reset(ab);
  sbuf_printf(ab, "async:%s:%s", cat ? cat : "", idt);
  const char *atid = ab->s;
  char cls = strchr("ben", ph) ? 'b' : 'S';
  sl.tid = atid;
  sl.async = 1;
  rc = 0;
  switch (ph) {
  case 'n':
  case 'T':
  case 'p':
    sl.instant = 1;
    rc = emit_slice(r, &sl);
    break;
  case 'b':
  case 'S':
    st = rd_stack(r, &r->async, cls, cat ? cat : "", idt, 1);
    stack_push(st, open_new(r, name, cat, pid, atid, args, ts, e->off, 1));
    break;
  default: /* e, F: close the innermost open begin with the same name */
    st = rd_stack(r, &r->async, cls, cat ? cat : "", idt, 0);
    size_t i = st ? st->n : 0;
    while (i > 0 && e->name.kind != V_NONE && strcmp(st->v[i - 1]->name, name))
      i--;
    if (i == 0) {
      rd_skip(r, e->off,
              "'%c' event '%s' without an open '%c' for id %s: "
              "skipped",
              ph, name, ph == 'e' ? 'b' : 'S', idt);
      break;
    }
    struct open *o = st->v[i - 1];
    memmove(st->v + i - 1, st->v + i, (st->n - i) * sizeof *st->v);
    if (!--st->n)
      map_del(&r->async, st);
    rc = open_close(r, o, ts, args, 0);
  }
  return rc;
}

/* Maps an event key to its field. */
static struct span *ev_field(struct ev *e, const struct span *k) {
  const char *s = (const char *)k->p;
  if (k->fl)
    return NULL;
#define KEY(str, field)                                                        \
  if (k->n == sizeof str - 1 && !memcmp(s, str, sizeof str - 1))               \
  return &e->field
  switch (k->n) {
  case 2:
    KEY("ph", ph);
    KEY("ts", ts);
    KEY("id", id);
    KEY("bp", bp);
    break;
  case 3:
    KEY("pid", pid);
    KEY("tid", tid);
    KEY("cat", cat);
    KEY("dur", dur);
    KEY("id2", id2);
    break;
  case 4:
    KEY("name", name);
    KEY("args", args);
    break;
  case 5:
    KEY("scope", scope);
    break;
  case 7:
    KEY("bind_id", bind_id);
    KEY("flow_in", flow_in);
    break;
  case 8:
    KEY("flow_out", flow_out);
    break;
  }
#undef KEY
  return NULL;
}

/* Parses the event object at *pp (a '{') into e; a member whose value is
 * null counts as absent. */
static int ev_parse(const uchar **pp, const uchar *end, struct ev *e) {
  const uchar *p = *pp + 1;
  memset(e, 0, sizeof *e);
  for (;;) {
    struct span k, v, *f;
    int rc = obj_next(&p, end, &k, &v);
    if (rc == TOK_END)
      break;
    if (rc != TOK_OK) {
      if (rc == TOK_BAD)
        *pp = p;
      return rc;
    }
    e->members++;
    if ((f = ev_field(e, &k))) {
      *f = v;
      if (v.kind == V_LIT && v.n == 4 && !memcmp(v.p, "null", 4))
        f->kind = V_NONE; /* null is absence */
    }
  }
  *pp = p;
  return TOK_OK;
}

/* Reads the event object at the cursor. */
static int rd_event(struct rd *r) {
  struct src *s = &r->src;
  uint64_t off = src_off(s, s->p);
  r->st->events++;
  for (;;) {
    const uchar *q = s->p;
    int rc = ev_parse(&q, s->end, &r->ev);
    if (rc == TOK_OK && (size_t)(q - s->p) <= CHROME_MAX_VALUE) {
      s->p = q;
      r->ev.off = off;
      return ev_process(r, &r->ev);
    }
    if (rc == TOK_BAD) {
      uint64_t at = src_off(s, q);
      s->p = q;
      rd_skip(r, off,
              "malformed event (unexpected byte 0x%02x at offset %llu): "
              "skipped, resynchronised at the next event",
              *q, (unsigned long long)at);
      rd_resync(r);
      return 0;
    }
    if (rc == TOK_OK || (size_t)(s->end - s->p) > CHROME_MAX_VALUE) {
      rd_skip(r, off, "event larger than %u MiB: skipped",
              CHROME_MAX_VALUE >> 20);
      rd_skip_stream(r);
      return 0;
    }
    if (!src_fill(s)) {
      rd_skip(r, off, "event cut by the end of the file: skipped");
      s->p = s->end;
      return 0;
    }
  }
}

/* A byte at array level that does not start an object: a JSON value is a
 * skipped element, anything else is garbage skipped up to the next , { or
 * ]. */
static void rd_garbage(struct rd *r) {
  struct src *s = &r->src;
  uint64_t off = src_off(s, s->p);
  struct span v;
  if (*s->p && strchr("\"[-0123456789tfn", *s->p) && !rd_value(r, &v)) {
    r->st->events++;
    rd_skip(r, off, "array element is not an event object: skipped");
    return;
  }
  rd_warn(r, off,
          "unexpected bytes between events: skipped up to the next "
          "event");
  for (;;) {
    while (s->p < s->end && *s->p != ',' && *s->p != '{' && *s->p != ']')
      s->p++;
    if (s->p < s->end || !src_fill(s))
      return;
  }
}

/* Reads the event array whose '[' is behind the cursor, up to its ']' or
 * the end of input (a missing ']' is allowed). */
static int rd_events(struct rd *r) {
  for (;;) {
    if (rd_ws(r))
      return 0;
    uchar c = *r->src.p;
    if (c == ']') {
      r->src.p++;
      return 0;
    }
    if (c == ',') {
      r->src.p++;
      continue;
    }
    if (c != '{') {
      rd_garbage(r);
      continue;
    }
    int rc = rd_event(r);
    if (rc)
      return rc;
  }
}

static void rd_prescan(struct rd *r);

/* Handles a small top-level value of the Object format. */
static void rd_top_value(struct rd *r, const char *key) {
  struct span v;
  uint64_t off = src_off(&r->src, r->src.p);
  int64_t ns;
  if (strcmp(key, "baseTimeNanoseconds") && strcmp(key, "displayTimeUnit") &&
      strcmp(key, "distributedInfo")) {
    rd_skip_stream(r);
    return;
  }
  if (rd_value(r, &v)) {
    rd_warn(r, off, "malformed value of top-level key \"%s\": ignored", key);
    rd_skip_stream(r);
    return;
  }
  if (!strcmp(key, "baseTimeNanoseconds")) {
    if ((v.kind == V_NUM || v.kind == V_STR) && !dec_parse(v.p, v.n, 0, &ns)) {
      r->base_ns = ns;
      r->have_base = 1;
    } else {
      rd_warn(r, off, "bad baseTimeNanoseconds: ignored");
    }
  } else if (!strcmp(key, "displayTimeUnit")) {
    if (span_is(&v, "ms") || span_is(&v, "ns"))
      snprintf(r->st->display_time_unit, sizeof r->st->display_time_unit,
               "%.2s", (const char *)v.p);
    else
      rd_warn(r, off, "displayTimeUnit is neither \"ms\" nor \"ns\": ignored");
  } else {
    struct span rank;
    if (obj_find(&v, "rank", &rank) && rank.kind != V_OBJ && rank.kind != V_ARR)
      snprintf(r->st->rank, sizeof r->st->rank, "%s",
               span_text(&r->sb[SB_TEXT], &rank, &r->sb[SB_SCRATCH]));
  }
}

/* Reads the members of the top-level object whose '{' is behind the
 * cursor.  RD_MAIN reads the events; RD_PRESCAN skips them to learn the
 * keys that follow; RD_PROBE stops at the traceEvents key. */
static int rd_object(struct rd *r, enum rd_mode mode) {
  struct src *s = &r->src;
  struct sbuf *key = &r->sb[SB_KEY];
  for (;;) {
    struct span k;
    if (rd_ws(r))
      return 0;
    if (*s->p == ',') {
      s->p++;
      continue;
    }
    if (*s->p == '}') {
      s->p++;
      return 0;
    }
    uint64_t off = src_off(s, s->p);
    if (*s->p != '"' || rd_value(r, &k)) {
      rd_warn(r, off,
              "malformed top-level object: the rest of the file is "
              "ignored");
      return 0;
    }
    sbuf_reset(key);
    str_decode(key, &k);
    if (rd_ws(r) || *s->p != ':') {
      rd_warn(r, off,
              "top-level key without a value: the rest of the file is "
              "ignored");
      return 0;
    }
    s->p++;
    if (rd_ws(r))
      return 0;
    if (!key->s || strcmp(key->s, "traceEvents")) {
      rd_top_value(r, key->s ? key->s : "");
      continue;
    }
    if (*s->p != '[') {
      rd_warn(r, off, "traceEvents is not an array: ignored");
      rd_skip_stream(r);
      continue;
    }
    r->saw_events = 1;
    if (mode == RD_PROBE)
      return 0;
    if (mode == RD_PRESCAN) {
      rd_skip_stream(r);
      continue;
    }
    if (!r->have_base && !r->prescanned)
      rd_prescan(r);
    s->p++;
    int rc = rd_events(r);
    if (rc)
      return rc;
  }
}

static void rd_init(struct rd *r, const char *path,
                    const struct fmt_chrome_cb *cb,
                    struct fmt_chrome_stats *st) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->cb = cb;
  r->st = st;
  memset(st, 0, sizeof *st);
}

static void rd_free(struct rd *r) {
  struct map *maps[] = {&r->stacks, &r->async};
  for (int m = 0; m < 2; m++) {
    for (size_t i = 0; i < maps[m]->cap; i++) {
      struct slot *sl = &maps[m]->s[i];
      for (size_t j = 0; j < sl->st.n; j++)
        open_free(sl->st.v[j]);
      free(sl->st.v);
      free(sl->key);
    }
    free(maps[m]->s);
  }
  for (int i = 0; i < SB_N; i++)
    sbuf_free(&r->sb[i]);
  free(r->fids);
  src_close(&r->src);
}

/* Opens the source and moves to the first byte of the document.  Returns
 * 0, or a negative errno code with *cause set. */
static int rd_open(struct rd *r, uint64_t limit, char **cause) {
  int rc = src_open(&r->src, r->path, limit, cause);
  if (rc)
    return rc;
  struct src *s = &r->src;
  if (s->end - s->p >= 3 && !memcmp(s->p, "\xEF\xBB\xBF", 3))
    s->p += 3; /* a UTF-8 byte order mark */
  if (rd_ws(r)) {
    if (cause)
      *cause =
          xasprintf("%s: %s", r->path, s->err ? s->err : "no JSON in the file");
    return s->err ? -EBADMSG : -ENODATA;
  }
  return 0;
}

/* Learns the top-level keys that follow traceEvents (Kineto writes
 * baseTimeNanoseconds after the events) with a second, skipping pass. */
static void rd_prescan(struct rd *r) {
  struct rd pre;
  struct fmt_chrome_stats st;
  r->prescanned = 1;
  rd_init(&pre, r->path, NULL, &st);
  if (!rd_open(&pre, 0, NULL) && *pre.src.p == '{') {
    pre.src.p++;
    rd_object(&pre, RD_PRESCAN);
    if (pre.have_base) {
      r->base_ns = pre.base_ns;
      r->have_base = 1;
    }
    if (!r->st->rank[0])
      memcpy(r->st->rank, st.rank, sizeof st.rank);
  }
  rd_free(&pre);
}

static int open_cmp(const void *a, const void *b) {
  const struct open *x = *(struct open *const *)a,
                    *y = *(struct open *const *)b;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Emits every begin still open, in file order, as an incomplete slice up
 * to the last timestamp of the trace. */
static int rd_finish(struct rd *r) {
  struct map *maps[] = {&r->stacks, &r->async};
  struct open **all = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (int m = 0; m < 2; m++) {
    for (size_t i = 0; i < maps[m]->cap; i++) {
      struct stack *st = &maps[m]->s[i].st;
      for (size_t j = 0; j < st->n; j++) {
        if (n == cap) {
          cap = cap ? cap * 2 : 16;
          all = xrealloc(all, cap * sizeof *all);
        }
        all[n++] = st->v[j];
      }
      st->n = 0;
    }
  }
  if (n)
    qsort(all, n, sizeof *all, open_cmp);
  r->nfids = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc)
      open_free(all[i]);
    else
      rc = open_close(r, all[i], r->ts_max, NULL, 1);
  }
  free(all);
  return rc;
}

int fmt_chrome_read(const char *path, const struct fmt_chrome_cb *cb,
                    struct fmt_chrome_stats *st, char **cause) {
  struct fmt_chrome_stats local;
  struct rd r;
  rd_init(&r, path, cb, st ? st : &local);
  int rc = rd_open(&r, 0, cause);
  if (rc) {
    rd_free(&r);
    return rc;
  }
  uchar c = *r.src.p++;
  if (c == '[') {
    rc = rd_events(&r);
  } else if (c == '{') {
    rc = rd_object(&r, RD_MAIN);
    if (!rc && !r.saw_events) {
      if (cause)
        *cause =
            xasprintf("%s: not a Chrome trace (no traceEvents array)", path);
      rc = -EPROTO;
    }
  } else {
    if (cause)
      *cause = xasprintf("%s: not a Chrome trace (JSON array or object "
                         "expected, found byte 0x%02x)",
                         path, c);
    rc = -EPROTO;
  }
  if (!rc)
    rc = rd_finish(&r);
  if (!rc && !rd_ws(&r)) {
    rd_warn(&r, src_off(&r.src, r.src.p),
            "data after the end of the trace: ignored");
    while (src_fill(&r.src))
      r.src.p = r.src.end;
    r.src.p = r.src.end;
  }
  if (!rc && r.src.err)
    rd_warn(&r, src_off(&r.src, r.src.end), "%s", r.src.err);
  r.st->bytes = src_off(&r.src, r.src.p);
  rd_free(&r);
  return rc;
}

int fmt_chrome_probe(const char *path, char *rank, size_t rank_len) {
  struct fmt_chrome_stats st;
  struct rd r;
  int yes = 0;
  if (rank_len)
    rank[0] = '\0';
  rd_init(&r, path, NULL, &st);
  int rc = rd_open(&r, CHROME_PROBE_BYTES, NULL);
  if (rc) {
    rd_free(&r);
    return rc == -ENODATA ? 0 : rc;
  }
  uchar c = *r.src.p++;
  if (c == '[') {
    yes = !rd_ws(&r) && (*r.src.p == '{' || *r.src.p == ']');
  } else if (c == '{') {
    rd_object(&r, RD_PROBE);
    yes = r.saw_events;
    if (yes && rank_len)
      snprintf(rank, rank_len, "%s", st.rank);
  }
  rd_free(&r);
  return yes;
}
