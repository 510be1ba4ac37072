/* argtext.c -- see argtext.h. */
#include "argtext.h"
#include "jtok.h"

#include <string.h>

void argtext_begin(struct sbuf *b) {
  sbuf_reset(b);
  sbuf_addc(b, '{');
}

void argtext_key(struct sbuf *b, const char *key) {
  size_t n = strlen(key);
  if (b->len > 1)
    sbuf_addc(b, ',');
  if (util_json_plain((const unsigned char *)key, n) < n) {
    sbuf_add_json_str(b, key, n);
    sbuf_addc(b, ':');
    return;
  }
  /* a name of plain characters (all the readers' own) copied as it is */
  sbuf_grow(b, n + 3);
  char *w = b->s + b->len;
  w[0] = '"';
  memcpy(w + 1, key, n);
  w[n + 1] = '"';
  w[n + 2] = ':';
  b->len += n + 3;
  b->s[b->len] = '\0';
}

void argtext_str(struct sbuf *b, const char *key, const char *v) {
  if (!v || !*v)
    return;
  argtext_key(b, key);
  sbuf_add_json_str(b, v, strlen(v));
}

void argtext_i64(struct sbuf *b, const char *key, int64_t v) {
  argtext_key(b, key);
  sbuf_add_i64(b, v);
}

/* Quoted: JSON numbers lose precision above 2^53. */
static void argtext_add_u64(struct sbuf *b, uint64_t v) {
  sbuf_addc(b, '"');
  sbuf_add_u64(b, v);
  sbuf_addc(b, '"');
}

void argtext_u64(struct sbuf *b, const char *key, uint64_t v) {
  argtext_key(b, key);
  argtext_add_u64(b, v);
}

/* Large unsigned ids travel as strings (they exceed 2^53); a value flagged
 * as a number that is not one in JSON syntax ("nan", "0x10") is kept as a
 * string, so the args text stays JSON. */
void argtext_attrs(struct sbuf *b, Nex__Attribute **a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!a[i]->key || !*a[i]->key)
      continue;
    argtext_key(b, a[i]->key);
    const char *v = a[i]->value ? a[i]->value : "";
    size_t len = strlen(v);
    if (a[i]->is_number && jtok_number_text(v, len))
      sbuf_adds(b, v);
    else
      sbuf_add_json_str(b, v, len);
  }
}

void argtext_list(struct sbuf *b, const char *key, const uint64_t *v, size_t n,
                  bool quoted) {
  if (n == 0)
    return;
  argtext_key(b, key);
  sbuf_addc(b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i)
      sbuf_addc(b, ',');
    if (quoted)
      argtext_add_u64(b, v[i]);
    else
      sbuf_add_i64(b, (int64_t)v[i]);
  }
  sbuf_addc(b, ']');
}

void argtext_raw(struct sbuf *b, const char *key, const char *json) {
  argtext_key(b, key);
  sbuf_adds(b, json);
}

void argtext_splice(struct sbuf *b, const char *obj, size_t len) {
  if (b->len > 1)
    sbuf_addc(b, ',');
  sbuf_add(b, obj + 1, len - 2);
}

size_t argtext_end(struct sbuf *b) {
  if (b->len <= 1) {
    sbuf_reset(b);
    return 0;
  }
  sbuf_addc(b, '}');
  return b->len;
}
