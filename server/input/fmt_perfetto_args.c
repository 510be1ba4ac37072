/* fmt_perfetto_args.c -- debug annotations of Perfetto track events as
 * JSON (see fmt_perfetto_priv.h).
 *
 * Every value type is written: bool, uint, int, double (a non-finite one
 * as a string), string, interned string, pointer (a "0x..." string),
 * NestedValue dicts and arrays, dict_entries and array_values, legacy JSON
 * (kept as JSON when it parses, else as a string) and proto values (a
 * string naming the type and size: their schema is not in the trace).
 */
#include "fmt_perfetto_priv.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fmt_perfetto_args_str(struct sbuf *b, const char *s) {
  sbuf_add_json_str(b, s, strlen(s));
}

/* A double as the shortest of %.15g, %.16g and %.17g that reads back as
 * it (0.1, not 0.10000000000000001); NaN and infinities as strings. */
static void fmt_perfetto_args_double(struct sbuf *b, double v) {
  if (isfinite(v)) {
    char t[32];
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(t, sizeof t, "%.*g", prec, v);
      if (strtod(t, NULL) == v)
        break;
    }
    sbuf_adds(b, t);
  } else
    fmt_perfetto_args_str(b, isnan(v) ? "NaN"
                             : v > 0  ? "Infinity"
                                      : "-Infinity");
}

static void fmt_perfetto_args_nested(
    struct sbuf *b, const Perfetto__Protos__DebugAnnotation__NestedValue *v) {
  if (v->nested_type ==
      PERFETTO__PROTOS__DEBUG_ANNOTATION__NESTED_VALUE__NESTED_TYPE__DICT) {
    size_t n =
        v->n_dict_keys < v->n_dict_values ? v->n_dict_keys : v->n_dict_values;
    sbuf_addc(b, '{');
    for (size_t i = 0; i < n; i++) {
      if (i)
        sbuf_addc(b, ',');
      fmt_perfetto_args_str(b, v->dict_keys[i]);
      sbuf_addc(b, ':');
      fmt_perfetto_args_nested(b, v->dict_values[i]);
    }
    sbuf_addc(b, '}');
  } else if (
      v->nested_type ==
      PERFETTO__PROTOS__DEBUG_ANNOTATION__NESTED_VALUE__NESTED_TYPE__ARRAY) {
    sbuf_addc(b, '[');
    for (size_t i = 0; i < v->n_array_values; i++) {
      if (i)
        sbuf_addc(b, ',');
      fmt_perfetto_args_nested(b, v->array_values[i]);
    }
    sbuf_addc(b, ']');
  } else if (v->has_int_value) {
    sbuf_add_i64(b, v->int_value);
  } else if (v->has_double_value) {
    fmt_perfetto_args_double(b, v->double_value);
  } else if (v->has_bool_value) {
    sbuf_adds(b, v->bool_value ? "true" : "false");
  } else if (v->string_value) {
    fmt_perfetto_args_str(b, v->string_value);
  } else {
    sbuf_adds(b, "null");
  }
}

/* Whether text s[0, n) is a flat array (or a lone value) of integers of
 * at most 18 digits and strings of printable ASCII without escapes, with
 * no spaces: JSON jansson takes, told without it (repeated fields, flow_id
 * among them, come as such arrays in the Neuron tools' exports). */
static bool fmt_perfetto_args_plain_json(const char *s, size_t n) {
  const char *p = s, *end = s + n;
  bool arr = p < end && *p == '[';
  p += arr;
  if (arr && p < end && *p == ']')
    return p + 1 == end;
  for (;;) {
    if (p < end && *p == '"') {
      for (p++; p < end && *p != '"'; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e || *p == '\\')
          return false;
      if (p++ == end)
        return false;
    } else {
      p += p < end && *p == '-';
      size_t d = 0;
      while (p + d < end && p[d] >= '0' && p[d] <= '9')
        d++;
      if (d == 0 || d > 18 || (*p == '0' && d > 1))
        return false;
      p += d;
    }
    if (!arr)
      return p == end;
    if (p < end && *p == ']')
      return p + 1 == end;
    if (p == end || *p++ != ',')
      return false;
  }
}

/* Whether text is one JSON value (legacy_json_value is spliced in only
 * then). */
static bool fmt_perfetto_args_is_json(const char *text) {
  if (fmt_perfetto_args_plain_json(text, strlen(text)))
    return true;
  json_error_t err;
  json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
  json_decref(j);
  return j != NULL;
}

/* Whether text s[0, n) is its own JSON string (util_json_plain). */
static bool fmt_perfetto_args_plain_text(const char *s, size_t n) {
  return util_json_plain((const unsigned char *)s, n) == n;
}

/* Sets a->key to the name of an annotation: interned (iid; "iid:<n>" in
 * buf when missing), or name[0, len) up to a NUL (NULL: "").  With
 * `plain`, a->key_plain says whether it is its own JSON string (an
 * interned name knows it). */
static void fmt_perfetto_args_keyof(const struct fmt_perfetto_seq *q,
                                    bool has_iid, uint64_t iid,
                                    const char *name, size_t len,
                                    struct fmt_perfetto_arg *a, char buf[32],
                                    bool plain) {
  if (has_iid) {
    const struct fmt_perfetto_str *e =
        fmt_perfetto_state_interned_str(q, FMT_PERFETTO_IID_ARG_NAME, iid);
    if (e) {
      a->key = e->s;
      a->key_len = e->len;
      a->key_plain = e->plain;
    } else { /* iid:<digits> */
      a->key_len = (size_t)snprintf(buf, 32, "iid:%" PRIu64, iid);
      a->key = buf;
      a->key_plain = true;
    }
    return;
  }
  const char *nul = name ? memchr(name, 0, len) : NULL;
  a->key = name ? name : "";
  a->key_len = nul ? (size_t)(nul - name) : name ? len : 0;
  a->key_plain = plain && fmt_perfetto_args_plain_text(a->key, a->key_len);
}

/* Sets a's value to scalar v (an interned string resolved; "iid:<n>" in
 * buf when missing); false when v holds none (v->c is another case).
 * With `plain`, a string's s_plain says whether it is its own JSON
 * string. */
static bool fmt_perfetto_args_valueof(const struct fmt_perfetto_seq *q,
                                      const struct fmt_perfetto_scalar *v,
                                      struct fmt_perfetto_arg *a, char buf[32],
                                      bool plain) {
  a->u = v->u;
  a->i = (int64_t)v->u;
  switch (v->c) {
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE:
    a->type = FMT_PERFETTO_ARG_BOOL;
    return true;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE:
    a->type = FMT_PERFETTO_ARG_UINT;
    return true;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE:
    a->type = FMT_PERFETTO_ARG_INT;
    return true;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE:
    a->type = FMT_PERFETTO_ARG_DOUBLE;
    a->d = v->d;
    return true;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE: {
    const char *nul = memchr(v->s, 0, v->n);
    a->type = FMT_PERFETTO_ARG_STRING;
    a->s = v->s;
    a->n = nul ? (size_t)(nul - v->s) : v->n;
    a->s_plain = plain && fmt_perfetto_args_plain_text(a->s, a->n);
    return true;
  }
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID: {
    const struct fmt_perfetto_str *e =
        fmt_perfetto_state_interned_str(q, FMT_PERFETTO_IID_ARG_STRING, v->u);
    a->type = FMT_PERFETTO_ARG_STRING;
    if (e) {
      a->s = e->s;
      a->n = e->len;
      a->s_plain = e->plain;
    } else { /* iid:<digits> */
      a->n = (size_t)snprintf(buf, 32, "iid:%" PRIu64, v->u);
      a->s = buf;
      a->s_plain = true;
    }
    return true;
  }
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE:
    a->type = FMT_PERFETTO_ARG_POINTER;
    return true;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE:
    /* only from the walker, plain (fmt_perfetto_args_plain) */
    a->type = FMT_PERFETTO_ARG_JSON;
    a->s = v->s;
    a->n = v->n;
    return true;
  default:
    a->type = FMT_PERFETTO_ARG_NULL;
    return false;
  }
}

void fmt_perfetto_arg_json(struct sbuf *b, const struct fmt_perfetto_arg *a) {
  switch (a->type) {
  case FMT_PERFETTO_ARG_BOOL:
    sbuf_adds(b, a->u ? "true" : "false");
    break;
  case FMT_PERFETTO_ARG_UINT:
    sbuf_add_u64(b, a->u);
    break;
  case FMT_PERFETTO_ARG_INT:
    sbuf_add_i64(b, a->i);
    break;
  case FMT_PERFETTO_ARG_DOUBLE:
    fmt_perfetto_args_double(b, a->d);
    break;
  case FMT_PERFETTO_ARG_STRING:
    sbuf_add_json_str(b, a->s, a->n);
    break;
  case FMT_PERFETTO_ARG_POINTER:
    sbuf_printf(b, "\"0x%" PRIx64 "\"", a->u);
    break;
  case FMT_PERFETTO_ARG_JSON:
    sbuf_add(b, a->s, a->n);
    break;
  default:
    sbuf_adds(b, "null");
    break;
  }
}

/* Writes the name of an annotation (see fmt_perfetto_args_keyof). */
static void fmt_perfetto_args_key(struct sbuf *b,
                                  const struct fmt_perfetto_seq *q,
                                  bool has_iid, uint64_t iid, const char *name,
                                  size_t len) {
  struct fmt_perfetto_arg a;
  char buf[32];
  fmt_perfetto_args_keyof(q, has_iid, iid, name, len, &a, buf, false);
  sbuf_add_json_str(b, a.key, a.key_len);
}

/* Writes scalar value v; false when it holds none (v->c is another case). */
static bool fmt_perfetto_args_scalar(struct sbuf *b,
                                     const struct fmt_perfetto_seq *q,
                                     const struct fmt_perfetto_scalar *v) {
  struct fmt_perfetto_arg a;
  char buf[32];
  if (!fmt_perfetto_args_valueof(q, v, &a, buf, false))
    return false;
  fmt_perfetto_arg_json(b, &a);
  return true;
}

static void fmt_perfetto_args_name(struct sbuf *b,
                                   const struct fmt_perfetto_seq *q,
                                   const Perfetto__Protos__DebugAnnotation *a) {
  const char *name =
      a->name_field_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME
          ? a->name
          : NULL;
  fmt_perfetto_args_key(
      b, q,
      a->name_field_case ==
          PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID,
      a->name_iid, name, name ? strlen(name) : 0);
}

static void
fmt_perfetto_args_value(struct sbuf *b, const struct fmt_perfetto_seq *q,
                        const Perfetto__Protos__DebugAnnotation *a) {
  struct fmt_perfetto_scalar v = {.c = a->value_case};
  switch (a->value_case) {
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE:
    v.u = a->bool_value != 0;
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE:
    v.u = a->uint_value;
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE:
    v.u = (uint64_t)a->int_value;
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE:
    v.d = a->double_value;
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE:
    v.s = a->string_value;
    v.n = strlen(a->string_value);
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID:
    v.u = a->string_value_iid;
    break;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE:
    v.u = a->pointer_value;
    break;
  default: /* legacy JSON among them: checked below */
    v.c = 0;
    break;
  }
  if (fmt_perfetto_args_scalar(b, q, &v))
    return;
  switch (a->value_case) {
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_NESTED_VALUE:
    fmt_perfetto_args_nested(b, a->nested_value);
    return;
  case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE:
    if (fmt_perfetto_args_is_json(a->legacy_json_value))
      sbuf_adds(b, a->legacy_json_value);
    else
      fmt_perfetto_args_str(b, a->legacy_json_value);
    return;
  default:
    break;
  }
  if (a->n_dict_entries) {
    sbuf_addc(b, '{');
    for (size_t i = 0; i < a->n_dict_entries; i++) {
      if (i)
        sbuf_addc(b, ',');
      fmt_perfetto_args_name(b, q, a->dict_entries[i]);
      sbuf_addc(b, ':');
      fmt_perfetto_args_value(b, q, a->dict_entries[i]);
    }
    sbuf_addc(b, '}');
  } else if (a->n_array_values) {
    sbuf_addc(b, '[');
    for (size_t i = 0; i < a->n_array_values; i++) {
      if (i)
        sbuf_addc(b, ',');
      fmt_perfetto_args_value(b, q, a->array_values[i]);
    }
    sbuf_addc(b, ']');
  } else if (a->has_proto_value) {
    char *t = xasprintf(
        "<proto %s, %zu bytes>",
        a->proto_type_descriptor_case ==
                PERFETTO__PROTOS__DEBUG_ANNOTATION__PROTO_TYPE_DESCRIPTOR_PROTO_TYPE_NAME
            ? a->proto_type_name
            : "message",
        a->proto_value.len);
    fmt_perfetto_args_str(b, t);
    free(t);
  } else {
    sbuf_adds(b, "null");
  }
}

bool fmt_perfetto_args_plain(const uint8_t *p, size_t n,
                             struct fmt_perfetto_ann *a) {
  const uint8_t *end = p + n;
  /* each member set alone: a compound literal's zeroing (rep stos) cost
   * half of this function */
  a->m = NULL;
  a->p = p;
  a->n = n;
  a->has_iid = 0;
  a->iid = 0;
  a->name = NULL;
  a->name_len = 0;
  a->v.c = 0;
  struct pbwire_field f;
  while (p < end) {
    if (!pbwire_field_at(&p, end, &f))
      return false;
    switch (f.id << 3 | (uint32_t)f.wire) {
    case 1 << 3 | 0: /* name_iid */
      a->has_iid = 1;
      a->iid = f.x;
      break;
    case 10 << 3 | 2: /* name */
      a->has_iid = 0;
      a->name = (const char *)f.v;
      a->name_len = f.n;
      break;
    case 2 << 3 | 0: /* bool_value: any payload bit, as protobuf-c */
      a->v.u = 0;
      for (size_t c = 0; c < f.n; c++)
        a->v.u |= (f.v[c] & 0x7f) != 0;
      a->v.c = f.id;
      break;
    case 3 << 3 | 0: /* uint_value, int_value, pointer_value */
    case 4 << 3 | 0:
    case 7 << 3 | 0:
    case 17 << 3 | 0: /* string_value_iid */
      a->v.u = f.x;
      a->v.c = f.id;
      break;
    case 5 << 3 | 1: /* double_value (a little-endian host: see the wire) */
      memcpy(&a->v.d, f.v, 8);
      a->v.c = f.id;
      break;
    case 6 << 3 | 2: /* string_value */
    case 9 << 3 | 2: /* legacy_json_value: only a plain one (below) */
      a->v.s = (const char *)f.v;
      a->v.n = f.n;
      a->v.c = f.id;
      break;
    default: /* anything else: the struct */
      return false;
    }
  }
  return a->v.c !=
             PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE ||
         fmt_perfetto_args_plain_json(a->v.s, a->v.n);
}

/* Appends "name":value of annotation struct m. */
static void
fmt_perfetto_args_member(struct sbuf *b, const struct fmt_perfetto_seq *q,
                         const Perfetto__Protos__DebugAnnotation *m) {
  fmt_perfetto_args_name(b, q, m);
  sbuf_addc(b, ':');
  fmt_perfetto_args_value(b, q, m);
}

void fmt_perfetto_args_ann(struct sbuf *b, const struct fmt_perfetto_seq *q,
                           const struct fmt_perfetto_ann *a) {
  if (a->m) {
    fmt_perfetto_args_member(b, q, a->m);
    return;
  }
  fmt_perfetto_args_key(b, q, a->has_iid, a->iid, a->name, a->name_len);
  sbuf_addc(b, ':');
  if (!fmt_perfetto_args_scalar(b, q, &a->v))
    sbuf_adds(b, "null");
}

/* Writes text s[0, n) of packed args at w: its 4-byte length and bytes;
 * returns the end. */
static char *fmt_perfetto_args_put_text(char *w, const char *s, size_t n) {
  uint32_t len = (uint32_t)n;
  memcpy(w, &len, 4);
  memcpy(w + 4, s, n);
  return w + 4 + n;
}

/* Appends plain annotation an to packed args b: its type (a byte, with
 * the flags FMT_PERFETTO_ARG_KEY_PLAIN and _TEXT_PLAIN), its name (a
 * 4-byte length and the bytes), then its value: nothing (null), a
 * string's 4-byte length and bytes, or 8 bytes (the integers, or the
 * double's bits). */
static void fmt_perfetto_args_pack(struct sbuf *b,
                                   const struct fmt_perfetto_seq *q,
                                   const struct fmt_perfetto_ann *an) {
  struct fmt_perfetto_arg a;
  char kb[32], vb[32];
  fmt_perfetto_args_keyof(q, an->has_iid, an->iid, an->name, an->name_len, &a,
                          kb, true);
  fmt_perfetto_args_valueof(q, &an->v, &a, vb, true);
  bool text =
      a.type == FMT_PERFETTO_ARG_STRING || a.type == FMT_PERFETTO_ARG_JSON;
  size_t v = text ? 4 + a.n : a.type != FMT_PERFETTO_ARG_NULL ? 8 : 0;
  sbuf_grow(b, 5 + a.key_len + v);
  char *w = b->s + b->len;
  *w = (char)(a.type | (a.key_plain ? FMT_PERFETTO_ARG_KEY_PLAIN : 0) |
              (a.type == FMT_PERFETTO_ARG_STRING && a.s_plain
                   ? FMT_PERFETTO_ARG_TEXT_PLAIN
                   : 0));
  w = fmt_perfetto_args_put_text(w + 1, a.key, a.key_len);
  if (text)
    fmt_perfetto_args_put_text(w, a.s, a.n);
  else if (a.type == FMT_PERFETTO_ARG_DOUBLE)
    memcpy(w, &a.d, 8);
  else if (v)
    memcpy(w, &a.u, 8);
  b->len += 5 + a.key_len + v;
  b->s[b->len] = '\0';
}

/* Reads a text of packed args at *p (before end), as
 * fmt_perfetto_args_put_text wrote it, advancing *p.  Returns false when
 * it is cut. */
static bool fmt_perfetto_args_text(const uint8_t **p, const uint8_t *end,
                                   const char **s, size_t *n) {
  uint32_t len;
  if (end - *p < 4)
    return false;
  memcpy(&len, *p, 4);
  if ((size_t)(end - *p - 4) < len)
    return false;
  *s = (const char *)*p + 4;
  *n = len;
  *p += 4 + (size_t)len;
  return true;
}

bool fmt_perfetto_arg_next(const uint8_t **pp, const uint8_t *end,
                           struct fmt_perfetto_arg *a) {
  const uint8_t *p = *pp;
  if (p == end)
    return false;
  a->type = *p & FMT_PERFETTO_ARG_TYPE;
  a->key_plain = (*p & FMT_PERFETTO_ARG_KEY_PLAIN) != 0;
  a->s_plain = (*p++ & FMT_PERFETTO_ARG_TEXT_PLAIN) != 0;
  if (!fmt_perfetto_args_text(&p, end, &a->key, &a->key_len))
    return false;
  if (a->type == FMT_PERFETTO_ARG_STRING || a->type == FMT_PERFETTO_ARG_JSON) {
    if (!fmt_perfetto_args_text(&p, end, &a->s, &a->n))
      return false;
  } else if (a->type != FMT_PERFETTO_ARG_NULL) {
    if (end - p < 8)
      return false;
    memcpy(&a->u, p, 8);
    memcpy(&a->d, p, 8);
    a->i = (int64_t)a->u;
    p += 8;
  }
  *pp = p;
  return true;
}

void fmt_perfetto_args_json(struct sbuf *b, const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  struct fmt_perfetto_arg a;
  for (size_t i = 0; fmt_perfetto_arg_next(&p, end, &a); i++) {
    sbuf_addc(b, i ? ',' : '{');
    sbuf_add_json_str(b, a.key, a.key_len);
    sbuf_addc(b, ':');
    fmt_perfetto_arg_json(b, &a);
    if (p == end)
      sbuf_addc(b, '}');
  }
}

void fmt_perfetto_args(struct fmt_perfetto *r, const struct fmt_perfetto_seq *q,
                       const Perfetto__Protos__TrackEvent *e) {
  size_t n = r->walked ? r->nann : e->n_debug_annotations, plain = 0;
  sbuf_reset(&r->args);
  if (r->walked && r->cb->packed_args)
    while (plain < n && !r->ann[plain].m)
      plain++;
  r->args_packed = n && plain == n;
  if (r->args_packed) {
    for (size_t i = 0; i < n; i++)
      fmt_perfetto_args_pack(&r->args, q, &r->ann[i]);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    sbuf_addc(&r->args, i ? ',' : '{');
    if (r->walked)
      fmt_perfetto_args_ann(&r->args, q, &r->ann[i]);
    else
      fmt_perfetto_args_member(&r->args, q, e->debug_annotations[i]);
  }
  if (n)
    sbuf_addc(&r->args, '}');
}

/* Merges src into dst: objects key by key, arrays appended, else src. */
static void fmt_perfetto_args_deep(json_t *dst, json_t *src) {
  const char *key;
  json_t *v;
  json_object_foreach(src, key, v) {
    json_t *d = json_object_get(dst, key);
    if (json_is_object(d) && json_is_object(v))
      fmt_perfetto_args_deep(d, v);
    else if (json_is_array(d) && json_is_array(v))
      json_array_extend(d, v);
    else
      json_object_set(dst, key, v);
  }
}

char *fmt_perfetto_args_merge(const char *begin, const char *end) {
  if (!begin || !end)
    return begin ? xstrdup(begin) : end ? xstrdup(end) : NULL;
  json_error_t err;
  json_t *a = json_loads(begin, 0, &err), *b = json_loads(end, 0, &err);
  char *out = NULL;
  if (json_is_object(a) && json_is_object(b)) {
    fmt_perfetto_args_deep(a, b);
    char *d = json_dumps(a, JSON_COMPACT);
    out = d ? xstrdup(d) : NULL;
    free(d);
  }
  if (!out) /* numbers jansson cannot hold: both texts side by side */
    out = xasprintf("%.*s,%s", (int)(strlen(begin) - 1), begin, end + 1);
  json_decref(a);
  json_decref(b);
  return out;
}

/* ------------------------------------------------------------ depth */

/* Calls fn on each length-delimited field of data[0, len) whose number
 * has its bit set in `fields`; stops (returns false) when fn does.
 * Malformed bytes end the walk with true: protobuf-c judges them. */
static bool fmt_perfetto_args_walk(const uint8_t *p, size_t len,
                                   uint32_t fields, int depth,
                                   bool (*fn)(const uint8_t *, size_t, int)) {
  const uint8_t *end = p + len;
  while (p < end) {
    uint64_t key = 0, v = 0;
    int sh = 0;
    do {
      if (p >= end || sh > 63)
        return true;
      key |= (uint64_t)(*p & 0x7f) << sh;
      sh += 7;
    } while (*p++ & 0x80);
    switch (key & 7) {
    case 0:
      while (p < end && (*p & 0x80))
        p++;
      p++;
      break;
    case 1:
      p += 8;
      break;
    case 5:
      p += 4;
      break;
    case 2:
      sh = 0;
      do {
        if (p >= end || sh > 63)
          return true;
        v |= (uint64_t)(*p & 0x7f) << sh;
        sh += 7;
      } while (*p++ & 0x80);
      if (v > (uint64_t)(end - p))
        return true;
      if ((key >> 3) < 32 && (fields >> (key >> 3) & 1) &&
          !fn(p, (size_t)v, depth + 1))
        return false;
      p += v;
      break;
    default:
      return true;
    }
  }
  return true;
}

static bool fmt_perfetto_args_nested_ok(const uint8_t *p, size_t len,
                                        int depth) {
  /* NestedValue: dict_values = 3, array_values = 4 */
  return depth <= FMT_PERFETTO_ARGS_DEPTH &&
         fmt_perfetto_args_walk(p, len, 1u << 3 | 1u << 4, depth,
                                fmt_perfetto_args_nested_ok);
}

static bool fmt_perfetto_args_annotation_ok(const uint8_t *p, size_t len,
                                            int depth) {
  /* DebugAnnotation: dict_entries = 11, array_values = 12 */
  return depth <= FMT_PERFETTO_ARGS_DEPTH &&
         fmt_perfetto_args_walk(p, len, 1u << 8, depth,
                                fmt_perfetto_args_nested_ok) &&
         fmt_perfetto_args_walk(p, len, 1u << 11 | 1u << 12, depth,
                                fmt_perfetto_args_annotation_ok);
}

static bool fmt_perfetto_args_event_ok(const uint8_t *p, size_t len,
                                       int depth) {
  /* TrackEvent: debug_annotations = 4 */
  return fmt_perfetto_args_walk(p, len, 1u << 4, depth,
                                fmt_perfetto_args_annotation_ok);
}

bool fmt_perfetto_args_depth_ok(const uint8_t *data, size_t len) {
  /* each level takes at least a key and a length byte: a small packet
   * cannot nest too deep (most packets of a trace are small) */
  if (len < 2 * (FMT_PERFETTO_ARGS_DEPTH + 2))
    return true;
  /* TracePacket: track_event = 11 */
  return fmt_perfetto_args_walk(data, len, 1u << 11, 0,
                                fmt_perfetto_args_event_ok);
}
