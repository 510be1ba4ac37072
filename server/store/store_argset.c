/* store_argset.c -- see store_argset.h. */
#include "store_argset.h"
#include "store_intern.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The mark of the integer text s (n bytes) as "%lld" or "%llu" writes
 * one, its value in *v; 0 when it is not one. */
static int store_argset_int(const char *s, size_t n, int64_t *v) {
  int neg = n && s[0] == '-';
  const char *d = s + neg;
  size_t m = n - (size_t)neg;
  if (m == 0 || m > 20 || (d[0] == '0' && (m > 1 || neg)))
    return 0;
  uint64_t u = 0;
  for (size_t i = 0; i < m; i++) {
    unsigned dig = (unsigned)(d[i] - '0');
    if (dig > 9 || __builtin_mul_overflow(u, 10, &u) ||
        __builtin_add_overflow(u, dig, &u))
      return 0;
  }
  if (neg) {
    if (u > (uint64_t)INT64_MAX + 1)
      return 0;
    *v = (int64_t)(0 - u);
    return STORE_ARGSET_INT;
  }
  *v = (int64_t)u;
  return u <= (uint64_t)INT64_MAX ? STORE_ARGSET_INT : STORE_ARGSET_UINT;
}

/* The bytes of an args text, as the split reads them. */
enum {
  ARGSET_PLAIN,  /* part of the template */
  ARGSET_QUOTE,  /* a string starts */
  ARGSET_NUMBER, /* a number starts: a digit or '-' */
  ARGSET_NUMCH   /* 'e', 'E', '+', '.': part of a number started */
};

static const unsigned char store_argset_class[256] = {
    ['"'] = ARGSET_QUOTE,  ['-'] = ARGSET_NUMBER, ['0'] = ARGSET_NUMBER,
    ['1'] = ARGSET_NUMBER, ['2'] = ARGSET_NUMBER, ['3'] = ARGSET_NUMBER,
    ['4'] = ARGSET_NUMBER, ['5'] = ARGSET_NUMBER, ['6'] = ARGSET_NUMBER,
    ['7'] = ARGSET_NUMBER, ['8'] = ARGSET_NUMBER, ['9'] = ARGSET_NUMBER,
    ['e'] = ARGSET_NUMCH,  ['E'] = ARGSET_NUMCH,  ['+'] = ARGSET_NUMCH,
    ['.'] = ARGSET_NUMCH,
};

/* 1 when the len bytes at t hold a mark or a NUL (8 bytes at a time: a
 * word's term is not 0 when it has a byte below STORE_ARGSET_BYTES + 1). */
static int store_argset_marked(const char *t, size_t len) {
  const uint64_t ones = 0x0101010101010101u;
  uint64_t any = 0, x;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    memcpy(&x, t + i, 8);
    any |= (x - ones * (STORE_ARGSET_BYTES + 1)) & ~x & ones * 0x80;
  }
  for (; i < len; i++)
    any |= (unsigned char)t[i] <= STORE_ARGSET_BYTES;
  return any != 0;
}

/* 16 bytes compared at once (GCC's vector extension: SSE2, NEON). */
typedef unsigned char store_argset_v16 __attribute__((vector_size(16)));

/* The end of the string whose content starts at p (before end): its
 * closing quote, or end when it has none. */
static const char *store_argset_close(const char *p, const char *end) {
  const store_argset_v16 quote = {'"', '"', '"', '"', '"', '"', '"', '"',
                                  '"', '"', '"', '"', '"', '"', '"', '"'};
  const store_argset_v16 slash = quote + ('\\' - '"');
  while (end - p >= 16) { /* the first quote or backslash of 16 bytes */
    store_argset_v16 x;
    memcpy(&x, p, 16);
    store_argset_v16 hit = (store_argset_v16)((x == quote) | (x == slash));
    uint64_t lo, hi;
    memcpy(&lo, &hit, 8);
    memcpy(&hi, (const char *)&hit + 8, 8);
    if (!(lo | hi)) {
      p += 16;
      continue;
    }
    p += lo ? __builtin_ctzll(lo) / 8 : 8 + __builtin_ctzll(hi) / 8;
    if (*p == '"')
      return p;
    p += 2; /* a backslash and the byte it escapes */
  }
  while (p < end && *p != '"')
    p += *p == '\\' && end - p > 1 ? 2 : 1;
  return p < end ? p : end;
}

/* Appends text[*lit, to) and then value text[from, end) to out (a mark,
 * with the value kept); *lit becomes end.  Returns 0, or -1 when the
 * template or the values are full. */
static int store_argset_hole(struct store_argset_split *out, const char *text,
                             size_t *lit, size_t to, size_t from, size_t end) {
  size_t n = to - *lit;
  if (out->tpl_len + n + 1 > STORE_ARGSET_TPL_MAX ||
      out->n_int + out->n_bytes == STORE_ARGSET_HOLES)
    return -1;
  memcpy(out->tpl + out->tpl_len, text + *lit, n);
  out->tpl_len += n;
  int64_t v;
  int kind = store_argset_int(text + from, end - from, &v);
  if (kind) {
    out->ints[out->n_int++] = v;
  } else {
    kind = STORE_ARGSET_BYTES;
    out->bytes[out->n_bytes] = text + from;
    out->bytes_len[out->n_bytes++] = end - from;
  }
  out->tpl[out->tpl_len++] = (char)kind;
  *lit = end;
  return 0;
}

int store_argset_split(const char *text, size_t len,
                       struct store_argset_split *out) {
  out->tpl_len = 0;
  out->n_int = out->n_bytes = 0;
  const char *end = text + len;
  size_t lit = 0, i = 0;
  if (store_argset_marked(text, len))
    return -1;
  while (i < len) {
    switch (store_argset_class[(unsigned char)text[i]]) {
    case ARGSET_QUOTE: {
      const char *q = store_argset_close(text + i + 1, end);
      if (q == end) { /* not closed: the rest is the template's */
        i = len;
        break;
      }
      size_t j = (size_t)(q - text), k = j + 1;
      while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' ||
                         text[k] == '\r'))
        k++;
      if ((k == len || text[k] != ':') && /* not a key: a value */
          store_argset_hole(out, text, &lit, i + 1, i + 1, j) < 0)
        return -1;
      i = j + 1;
      break;
    }
    case ARGSET_NUMBER: {
      size_t j = i + 1;
      while (j < len &&
             (store_argset_class[(unsigned char)text[j]] == ARGSET_NUMBER ||
              store_argset_class[(unsigned char)text[j]] == ARGSET_NUMCH))
        j++;
      if (store_argset_hole(out, text, &lit, i, i, j) < 0)
        return -1;
      i = j;
      break;
    }
    default:
      i++;
    }
  }
  if (out->tpl_len + (len - lit) + 1 > STORE_ARGSET_TPL_MAX)
    return -1;
  memcpy(out->tpl + out->tpl_len, text + lit, len - lit);
  out->tpl_len += len - lit;
  out->tpl[out->tpl_len] = '\0';
  return 0;
}

int store_argset_next(const char **p, const char *end, const char **lit,
                      size_t *lit_len) {
  const char *q = *p;
  *lit = q;
  while (q < end && (unsigned char)*q > STORE_ARGSET_BYTES)
    q++;
  *lit_len = (size_t)(q - *lit);
  if (q == end) {
    *p = q;
    return 0;
  }
  *p = q + 1;
  return (unsigned char)*q;
}

size_t store_argset_put_int(char *out, int64_t v, int kind) {
  static const char pairs[] = "00010203040506070809101112131415161718192021"
                              "22232425262728293031323334353637383940414243"
                              "44454647484950515253545556575859606162636465"
                              "666768697071727374757677787980818283848586"
                              "87888990919293949596979899";
  uint64_t u = (uint64_t)v;
  size_t n = 0;
  if (kind == STORE_ARGSET_INT && v < 0) {
    out[n++] = '-';
    u = 0 - u;
  }
  char digits[20], *d = digits + sizeof digits; /* written backwards */
  for (; u >= 100; u /= 100)
    memcpy(d -= 2, pairs + 2 * (u % 100), 2);
  if (u >= 10)
    memcpy(d -= 2, pairs + 2 * u, 2);
  else
    *--d = (char)('0' + u);
  size_t k = (size_t)(digits + sizeof digits - d);
  memcpy(out + n, d, k);
  return n + k;
}

/* ------------------------------------------------------ the writer's sets */

/* The sets met lately, by their templates' length (most sets of a store
 * differ in it): found again with one compare instead of hashing. */
#define STORE_ARGSETS_RECENT 64

struct store_argsets {
  struct store_intern t;
  size_t bytes;
  char **tpl; /* tpl[id - 1]: the template of set id */
  size_t *len, cap;
  int64_t drained; /* the sets handed to store_argsets_drain() */
  int64_t recent[STORE_ARGSETS_RECENT]; /* set ids, 0: none */
};

struct store_argsets *store_argsets_new(void) {
  return xcalloc(1, sizeof(struct store_argsets));
}

int64_t store_argsets_intern(struct store_argsets *s, const char *tpl,
                             size_t len) {
  int64_t *r = &s->recent[len % STORE_ARGSETS_RECENT];
  if (*r && s->len[*r - 1] == len && memcmp(s->tpl[*r - 1], tpl, len) == 0)
    return *r;
  int64_t id = store_intern_find(&s->t, tpl, len);
  if (!id && s->t.n < STORE_ARGSETS_MAX &&
      s->bytes + len <= STORE_ARGSETS_BYTES) {
    int added;
    id = store_intern_get(&s->t, tpl, len, &added);
    s->bytes += len;
    if ((size_t)id > s->cap) {
      s->cap = s->cap ? s->cap * 2 : 64;
      s->tpl = xrealloc(s->tpl, s->cap * sizeof *s->tpl);
      s->len = xrealloc(s->len, s->cap * sizeof *s->len);
    }
    s->tpl[id - 1] = xstrdup(tpl);
    s->len[id - 1] = len;
  }
  if (id)
    *r = id;
  return id;
}

int store_argsets_get(void *ud, int64_t id, const char **tpl, size_t *len) {
  const struct store_argsets *s = ud;
  if (id < 1 || id > (int64_t)s->t.n)
    return -1;
  *tpl = s->tpl[id - 1];
  *len = s->len[id - 1];
  return 0;
}

void store_argsets_drain(struct store_argsets *s,
                         void (*fn)(void *ud, int64_t id, const char *tpl,
                                    size_t len),
                         void *ud) {
  for (; s->drained < (int64_t)s->t.n; s->drained++)
    fn(ud, s->drained + 1, s->tpl[s->drained], s->len[s->drained]);
}

void store_argsets_free(struct store_argsets *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->t.n; i++)
    free(s->tpl[i]);
  free(s->tpl);
  free(s->len);
  store_intern_free(&s->t);
  free(s);
}
