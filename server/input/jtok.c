/* jtok.c -- see jtok.h.
 *
 * Reading order: the scanners over a window, the streaming helpers that
 * refill the source, and the warnings.
 */
#include "jtok.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef unsigned char uchar;

/* ------------------------------------------------------------ scanners */

static const uchar str_stop[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1};
static const uchar nest_stop[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [0x80 ... 0xff] = 1};
static const uchar scalar_stop[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [','] = 1, ['}'] = 1,
    [']'] = 1, [':'] = 1,  ['{'] = 1,  ['['] = 1,  ['"'] = 1};

/* The first byte of [p, end) that str_stop flags, or end.  Strings are
 * the bulk of a trace: 16 bytes at a time where the CPU can. */
static inline const uchar *jtok_str_find(const uchar *p, const uchar *end) {
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
static inline const uchar *jtok_quote_find(const uchar *p, const uchar *end) {
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
static inline const uchar *jtok_nest_find(const uchar *p, const uchar *end) {
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

static inline const uchar *jtok_blanks(const uchar *p, const uchar *end) {
  while (p < end && jtok_blank(*p))
    p++;
  return p;
}

/* Length of the valid UTF-8 sequence at p: 0 if invalid, -1 if the n
 * available bytes end inside a sequence that is valid so far. */
int jtok_utf8_len(const uchar *p, size_t n) {
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

int jtok_hex4(const uchar *p, const uchar *end, uint32_t *out) {
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
static int jtok_esc_len(const uchar *p, const uchar *end, unsigned *fl) {
  uint32_t cp, lo;
  if (end - p < 2)
    return -1;
  *fl |= JTOK_F_ESC;
  if (p[1] != 'u') {
    if (!p[1] || !strchr("\"\\/bfnrt", p[1]))
      *fl |= JTOK_F_BADESC;
    return 2;
  }
  if (jtok_hex4(p + 2, end, &cp)) {
    *fl |= JTOK_F_BADESC;
    return 2;
  }
  if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 12 && p[6] == '\\' &&
      p[7] == 'u' && !jtok_hex4(p + 8, end, &lo) && lo >= 0xDC00 &&
      lo <= 0xDFFF)
    return 12;
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
    *fl |= JTOK_F_BADESC;
  return 6;
}

/* Scans the string at *pp (a '"').  A quote followed by anything but , } ]
 * or : is taken as an unescaped quote inside the string (old Kineto wrote
 * those); a raw newline inside a string is an error. */
static int jtok_str_scan(const uchar **pp, const uchar *end,
                         struct jtok_span *sp) {
  const uchar *p = *pp + 1, *start = p;
  unsigned fl = 0;
  for (;;) {
    p = jtok_str_find(p, end);
    if (p >= end)
      return JTOK_MORE;
    uchar c = *p;
    if (c == '"') {
      const uchar *q = jtok_blanks(p + 1, end);
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
      int n = jtok_esc_len(p, end, &fl);
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
      int n = jtok_utf8_len(p, (size_t)(end - p));
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
static int jtok_scalar_scan(const uchar **pp, const uchar *end,
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

static inline int jtok_digit(uchar c) { return c >= '0' && c <= '9'; }

/* 1 if the JSON number s[0..n) with an exponent (or of more than 300
 * digits) fits a double (parsers refuse 1e999). */
static int jtok_finite(const uchar *s, size_t n) {
  char buf[512];
  if (n >= sizeof buf)
    return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return isfinite(strtod(buf, NULL));
}

/* Returns 0 if s[0..n) is a JSON number that fits a double, 1 if it is
 * one beyond a double, -1 if it is not a JSON number. */
static int jtok_json_number(const uchar *s, size_t n) {
  size_t i = s[0] == '-';
  int ex = 0;
  if (i < n && s[i] == '0')
    i++;
  else if (i < n && jtok_digit(s[i]))
    while (i < n && jtok_digit(s[i]))
      i++;
  else
    return -1;
  if (i < n && s[i] == '.') {
    if (++i >= n || !jtok_digit(s[i]))
      return -1;
    while (i < n && jtok_digit(s[i]))
      i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ex = 1;
    if (++i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    if (i >= n || !jtok_digit(s[i]))
      return -1;
    while (i < n && jtok_digit(s[i]))
      i++;
  }
  if (i != n)
    return -1;
  /* without an exponent, up to 300 digits are far below DBL_MAX */
  return (ex || n > 300) && !jtok_finite(s, n);
}

/* Checks a JSON scalar inside an object or array: a number or true, false,
 * null; NaN, [-]Infinity (written by Python) and numbers beyond a double
 * pass with JTOK_F_NONFINITE and become null when the text is copied. */
int jtok_scalar_check(const struct jtok_span *v, unsigned *fl) {
  static const char *const lit[] = {"true", "false", "null"};
  static const char *const nonfinite[] = {"NaN", "Infinity", "-Infinity"};
  int num = v->kind == JTOK_NUM ? jtok_json_number(v->p, v->n) : -1;
  if (num >= 0) {
    if (num)
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
static int jtok_nest_scan(const uchar **pp, const uchar *end,
                          struct jtok_span *sp) {
  enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, NEXT } want = VALUE;
  uint64_t is_obj[JTOK_MAX_DEPTH / 64];
  const uchar *p = *pp;
  unsigned fl = 0;
  int depth = 0;
  for (;;) {
    p = jtok_blanks(p, end);
    if (p >= end)
      return JTOK_MORE;
    uchar c = *p;
    int top_obj = depth && (is_obj[(depth - 1) / 64] >> ((depth - 1) % 64) & 1);
    struct jtok_span v;
    int rc;
    /* after a comma, a close is a trailing comma: accepted, flagged */
    int trail = depth && ((c == '}' && want == KEY) ||
                          (c == ']' && want == VALUE && !top_obj));
    if (trail ||
        (c == '}' && (want == KEY_OR_CLOSE || (want == NEXT && top_obj))) ||
        (c == ']' && (want == VALUE_OR_CLOSE || (want == NEXT && !top_obj)))) {
      if (trail)
        fl |= JTOK_F_TRAILCOMMA;
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
      rc =
          c == '"' ? jtok_str_scan(&p, end, &v) : jtok_scalar_scan(&p, end, &v);
      if (rc == JTOK_OK && v.kind != JTOK_STR && jtok_scalar_check(&v, &fl))
        rc = JTOK_BAD, p = v.p;
      want = NEXT;
      break;
    case KEY:
    case KEY_OR_CLOSE:
      if (c != '"')
        goto bad;
      rc = jtok_str_scan(&p, end, &v);
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
    return jtok_str_scan(pp, end, sp);
  if (c == '{' || c == '[')
    return jtok_nest_scan(pp, end, sp);
  return jtok_scalar_scan(pp, end, sp);
}

/* Skips blanks and stray commas before the next member or element of an
 * object or array closed by `close`.  Returns JTOK_OK with *at on its first
 * byte, JTOK_END with *pp moved past the closing byte, or JTOK_MORE. */
static int jtok_item_start(const uchar **pp, const uchar *end, uchar close,
                           const uchar **at) {
  const uchar *p = *pp;
  for (;;) {
    p = jtok_blanks(p, end);
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
  int rc = jtok_item_start(pp, end, '}', &p);
  if (rc != JTOK_OK)
    return rc;
  rc = JTOK_BAD;
  if (*p == '"' && (rc = jtok_str_scan(&p, end, key)) == JTOK_OK) {
    p = jtok_blanks(p, end);
    if (p >= end)
      return JTOK_MORE;
    rc = JTOK_BAD;
    if (*p == ':') {
      p = jtok_blanks(p + 1, end);
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
  int rc = jtok_item_start(pp, end, ']', &p);
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

/* Length of the NaN, Infinity or -Infinity token, or of the number beyond
 * a double, that starts at p (outside strings); 0 if there is none. */
size_t jtok_nonfinite_len(const uchar *p, const uchar *end) {
  static const char *const tok[] = {"NaN", "Infinity", "-Infinity"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(tok[i]);
    if ((size_t)(end - p) >= n && !memcmp(p, tok[i], n) &&
        (p + n == end || scalar_stop[p[n]]))
      return n;
  }
  if (*p == '-' || jtok_digit(*p)) {
    const uchar *q = p;
    while (q < end && !scalar_stop[*q])
      q++;
    if (jtok_json_number(p, (size_t)(q - p)) == 1)
      return (size_t)(q - p);
  }
  return 0;
}

int jtok_true(const struct jtok_span *sp) {
  return sp->kind == JTOK_LIT && sp->n == 4 && !memcmp(sp->p, "true", 4);
}

int jtok_number(const struct jtok_span *v) {
  return v->kind == JTOK_NUM && jtok_number_text((const char *)v->p, v->n);
}

int jtok_number_text(const char *s, size_t n) {
  const uchar *u = (const uchar *)s;
  return n > 0 && jtok_json_number(u, n) == 0;
}

/* Skips blanks, refilling.  Returns 0 at a non-blank byte, -1 at the end. */

/* ------------------------------------------------------------ streaming */

int jtok_ws(struct jsrc *s) {
  for (;;) {
    s->p = jtok_blanks(s->p, s->end);
    if (s->p < s->end)
      return 0;
    if (!jsrc_fill(s))
      return -1;
  }
}

int jtok_open_object(struct jsrc *s, const char *path, uint64_t limit,
                     const char *what, char **cause) {
  int rc = jsrc_open(s, path, limit, cause);
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

/* Scans the value at the cursor, which must fit in JTOK_MAX_VALUE,
 * refilling as needed, and moves past it.  Returns 0, or -1 (cursor
 * unchanged) if it is malformed, too large or cut by the end of input. */
int jtok_value(struct jsrc *s, struct jtok_span *v) {
  for (;;) {
    const uchar *q = s->p;
    int rc = jtok_scan(&q, s->end, v);
    if (rc == JTOK_OK) {
      s->p = q;
      return 0;
    }
    if (rc == JTOK_BAD || (size_t)(s->end - s->p) >= JTOK_MAX_VALUE ||
        !jsrc_fill(s))
      return -1;
  }
}

/* Skips the value at the cursor without holding it in memory: a streaming
 * version of jtok_scan with the same string rule, for values of any size. */
void jtok_skip(struct jsrc *s) {
  enum { OUT, STR, ESC, PEEK } state = OUT;
  int depth = 0;
  if (jtok_ws(s))
    return;
  if (*s->p != '{' && *s->p != '[' && *s->p != '"') {
    for (;;) {
      while (s->p < s->end && !scalar_stop[*s->p])
        s->p++;
      if (s->p < s->end || !jsrc_fill(s))
        return;
    }
  }
  for (;;) {
    const uchar *p = s->p, *end = s->end;
    while (p < end) {
      uchar c = *p;
      switch (state) {
      case OUT:
        p = jtok_nest_find(p, end);
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
        p = jtok_quote_find(p, end);
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
    if (!jsrc_fill(s))
      return;
  }
}

/* Ends the stream at the run of NUL bytes that starts at `run` in the
 * window, saying why in s->err. */
static void jtok_nul_stop(struct jsrc *s, const uchar *run) {
  uint64_t off = jsrc_off(s, run);
  if (!s->err)
    s->err = xasprintf("NUL bytes from offset %llu on: not JSON, the rest of "
                       "the file is not read",
                       (unsigned long long)off);
  s->p = s->end = run;
  s->eof = 1;
}

/* After a malformed event: moves to the next '{' that can start an event
 * (one not preceded by ':', i.e. not a member value).  A run of
 * JTOK_NUL_RUN NUL bytes (a zero-filled tail) ends the stream there. */
void jtok_resync(struct jsrc *s) {
  uchar prev = ',';
  for (;;) {
    size_t nuls = 0;
    for (const uchar *p = s->p; p < s->end; p++) {
      if (*p == '{' && prev != ':') {
        s->p = p;
        return;
      }
      nuls = *p ? 0 : nuls + 1;
      if (nuls == JTOK_NUL_RUN) {
        jtok_nul_stop(s, p + 1 - nuls);
        return;
      }
      if (!jtok_blank(*p))
        prev = *p;
    }
    s->p = s->end - nuls; /* a run cut by the window's end: scanned again */
    if (!jsrc_fill(s)) {
      s->p = s->end;
      return;
    }
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

int jtok_next_member(struct jsrc *s) {
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

void jtok_finish(struct jsrc *s, const struct jtok_warn *w, const char *what) {
  if (!jtok_ws(s)) {
    jtok_note(w, jsrc_off(s, s->p), "data after the end of the %s: ignored",
              what);
    while (jsrc_fill(s))
      s->p = s->end;
    s->p = s->end;
  }
  if (s->err)
    jtok_note(w, jsrc_off(s, s->end), "%s", s->err);
}
