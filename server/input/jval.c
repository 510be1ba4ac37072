/* jval.c -- see jval.h. */
#include "jval.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

typedef unsigned char uchar;

static const char jval_replacement[] = "\xEF\xBF\xBD";

static void jval_utf8_put(struct sbuf *b, uint32_t cp) {
  char u[4];
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    sbuf_add(b, jval_replacement, 3);
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
void jval_decode(struct sbuf *b, const struct jtok_span *sp) {
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
      sbuf_add(b, jval_replacement, 3);
      p++;
    } else if (c >= 0x80) {
      int n = jtok_utf8_len(p, (size_t)(end - p));
      if (n <= 0) {
        sbuf_add(b, jval_replacement, 3);
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
        if (jtok_hex4(p, end, &cp)) {
          sbuf_add(b, jval_replacement, 3);
          break;
        }
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
            p[1] == 'u' && !jtok_hex4(p + 2, end, &lo) && lo >= 0xDC00 &&
            lo <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        }
        jval_utf8_put(b, cp);
        break;
      default: /* \" \\ \/ and unknown escapes: the character itself */
        sbuf_addc(b, (char)e);
      }
    }
    run = p;
  }
  sbuf_add(b, (const char *)run, (size_t)(p - run));
}

/* Appends the raw JSON text of a non-string value, made valid UTF-8, with
 * strings re-escaped, NaN/Infinity turned into null and trailing commas
 * dropped when the scan flagged them.  `tmp` is scratch. */
static void jval_raw_add(struct sbuf *b, const struct jtok_span *sp,
                         struct sbuf *tmp) {
  const uchar *p = sp->p, *end = sp->p + sp->n, *run = p;
  if (!(sp->fl & (JTOK_F_BADUTF | JTOK_F_QUOTE | JTOK_F_CTRL |
                  JTOK_F_NONFINITE | JTOK_F_BADESC | JTOK_F_TRAILCOMMA))) {
    sbuf_add(b, (const char *)p, sp->n);
    return;
  }
  while (p < end) {
    /* tokens start the span or follow [ , : or a blank */
    int start = p == sp->p || p[-1] == '[' || p[-1] == ',' || p[-1] == ':' ||
                jtok_blank(p[-1]);
    size_t lit =
        start && (sp->fl & JTOK_F_NONFINITE) ? jtok_nonfinite_len(p, end) : 0;
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
      if (jtok_scan(&q, end, &s) != JTOK_OK) { /* cannot happen: scanned */
        run = p;
        break;
      }
      sbuf_reset(tmp);
      jval_decode(tmp, &s);
      sbuf_add_json_str(b, tmp->s, tmp->len);
      p = run = q;
    } else if (*p == ',' && (sp->fl & JTOK_F_TRAILCOMMA)) {
      const uchar *q = p + 1;
      while (q < end && jtok_blank(*q))
        q++;
      if (q < end && (*q == '}' || *q == ']')) {
        sbuf_add(b, (const char *)run, (size_t)(p - run));
        run = q;
      }
      p = q;
    } else if (*p >= 0x80) {
      int n = jtok_utf8_len(p, (size_t)(end - p));
      if (n > 0) {
        p += n;
        continue;
      }
      sbuf_add(b, (const char *)run, (size_t)(p - run));
      sbuf_add(b, jval_replacement, 3);
      run = ++p;
    } else {
      p++;
    }
  }
  sbuf_add(b, (const char *)run, (size_t)(end - run));
}

/* Appends the text of value sp: decoded if a string, raw JSON text
 * otherwise. */
void jval_add(struct sbuf *b, const struct jtok_span *sp, struct sbuf *tmp) {
  if (sp->kind == JTOK_STR)
    jval_decode(b, sp);
  else
    jval_raw_add(b, sp, tmp);
  if (!b->s)
    sbuf_add(b, "", 0);
}

void jval_json(struct sbuf *b, const struct jtok_span *v,
               struct sbuf *scratch) {
  unsigned fl = 0;
  if (v->kind == JTOK_OBJ || v->kind == JTOK_ARR ||
      ((v->kind == JTOK_NUM || v->kind == JTOK_LIT) &&
       !jtok_scalar_check(v, &fl) && !fl)) {
    jval_add(b, v, scratch);
    return;
  }
  if (v->kind == JTOK_STR) {
    sbuf_reset(scratch);
    jval_decode(scratch, v);
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
        sbuf_add(scratch, jval_replacement, 3);
  }
  sbuf_add_json_str(b, scratch->s ? scratch->s : "", scratch->len);
}

/* Resets b to the text of value sp and returns it; NULL when sp is
 * absent. */
const char *jval_text(struct sbuf *b, const struct jtok_span *sp,
                      struct sbuf *tmp) {
  sbuf_reset(b);
  if (sp->kind == JTOK_NONE)
    return NULL;
  jval_add(b, sp, tmp);
  return b->s;
}

/* jval_decimal for the common case, a plain [-]digits[.digits] with at
 * most 18 digits at or above 10^-scale (so no overflow): returns 1 with
 * *out set, or 0 for anything else (the general parser decides). */
static int jval_decimal_plain(const uchar *s, size_t n, int scale,
                              int64_t *out) {
  size_t i = n && s[0] == '-';
  int neg = (int)i, nd = 0, nf = 0, up = 0;
  uint64_t v = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++)
    v = v * 10 + (uint64_t)(s[i] - '0');
  if (nd == 0 || nd + scale > 18)
    return 0;
  if (i < n && s[i] == '.') {
    size_t d = ++i;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
      if (nf < scale)
        v = v * 10 + (uint64_t)(s[i] - '0');
      else if (nf == scale)
        up = s[i] >= '5';
      nf += nf <= scale;
    }
    if (i == d)
      return 0;
  }
  if (i != n)
    return 0;
  for (; nf < scale; nf++)
    v *= 10;
  v += (uint64_t)up;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 1;
}

/* Parses the decimal number text s[0..n) ("12", "-3.5", "1.5e3") times
 * 10^scale exactly into *out, rounding digits below the unit half away from
 * zero.  Returns 0, -EINVAL if s is not a number or -ERANGE. */
int jval_decimal(const uchar *s, size_t n, int scale, int64_t *out) {
  if (scale >= 0 && jval_decimal_plain(s, n, scale, out))
    return 0;
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
int jval_u64(const char *s, uint64_t *out) {
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
