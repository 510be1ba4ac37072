/* fmt_npf.c -- the naming of the Neuron tools' Perfetto export (see
 * fmt_npf.h). */
#include "fmt_npf.h"
#include "fmt_perfetto.h"

#include "jtok.h"
#include "jval.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Fields whose debug argument the vendor names otherwise. */
static const struct fmt_npf_alias {
  const ProtobufCMessageDescriptor *d;
  const char *field, *arg;
} fmt_npf_aliases[] = {
    {&nex__system_event__descriptor, "source", "trace_event_source"},
    {&nex__system_event__descriptor, "nc_idx", "lnc_idx"},
    {&nex__instruction__descriptor, "start_ts", "timestamp"},
    {&nex__instruction__descriptor, "duration_ns", "duration"},
    {&nex__instruction__descriptor, "timeline_track", "label"},
    {&nex__instruction__descriptor, "framework_op", "layer"},
    {&nex__dma_packet__descriptor, "start_ts", "timestamp"},
    {&nex__dma_packet__descriptor, "duration_ns", "duration"},
    {&nex__cc_op__descriptor, "start_ts", "timestamp"},
    {&nex__cc_op__descriptor, "duration_ns", "duration"},
};
#define FMT_NPF_NALIAS (sizeof fmt_npf_aliases / sizeof fmt_npf_aliases[0])

const char *fmt_npf_arg_name(const ProtobufCMessageDescriptor *d,
                             const ProtobufCFieldDescriptor *f) {
  for (size_t i = 0; i < FMT_NPF_NALIAS; i++)
    if (fmt_npf_aliases[i].d == d &&
        strcmp(fmt_npf_aliases[i].field, f->name) == 0)
      return fmt_npf_aliases[i].arg;
  return f->name;
}

const ProtobufCFieldDescriptor *
fmt_npf_field(const ProtobufCMessageDescriptor *d, const char *arg) {
  for (size_t i = 0; i < FMT_NPF_NALIAS; i++)
    if (fmt_npf_aliases[i].d == d && strcmp(fmt_npf_aliases[i].arg, arg) == 0)
      return protobuf_c_message_descriptor_get_field_by_name(
          d, fmt_npf_aliases[i].field);
  return protobuf_c_message_descriptor_get_field_by_name(d, arg);
}

/* Reads "<prefix><digits>-" at *s: the number, and moves past it; -1 and
 * *s unchanged when absent. */
static int64_t fmt_npf_part(const char **s, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(*s, prefix, n) != 0)
    return -1;
  const char *p = *s + n;
  char *end;
  long long v = strtoll(p, &end, 10);
  if (end == p || *end != '-' || v < 0)
    return -1;
  *s = end + 1;
  return v;
}

bool fmt_npf_row_parse(const char *name, struct fmt_npf_row *r) {
  char *end;
  size_t tl = strlen(FMT_NPF_ROW_THREAD);
  if (strncmp(name, FMT_NPF_ROW_THREAD, tl) == 0) {
    long long v = strtoll(name + tl, &end, 10);
    if (end == name + tl || *end)
      return false;
    *r = (struct fmt_npf_row){-1, -1, v, "framework"};
    return true;
  }
  const char *s = name;
  r->worker = fmt_npf_part(&s, "gid");
  r->nc = fmt_npf_part(&s, "nc");
  if (r->nc < 0) /* an earlier spelling: nrt-nc<n>-tid<t>-<source> */
    r->nc = fmt_npf_part(&s, "nrt-nc");
  r->tid = fmt_npf_part(&s, "tid");
  r->source = s;
  return (r->worker >= 0 || r->nc >= 0 || r->tid >= 0) &&
         strncmp(s, "neuron_", 7) == 0;
}

bool fmt_npf_process_parse(const char *name, size_t *inst_len, int64_t *pid) {
  const char *p = strstr(name, "-pid");
  if (!p || p == name)
    return false;
  const char *last;
  while ((last = strstr(p + 1, "-pid")))
    p = last;
  if (util_parse_i64(p + 4, pid) != 0 || *pid < 0)
    return false;
  *inst_len = (size_t)(p - name);
  return true;
}

bool fmt_npf_row_base(const char *name, size_t *base_len) {
  const char *p = strstr(name, FMT_NPF_ROW_SUFFIX);
  if (!p || p == name)
    return false;
  int64_t k;
  if (util_parse_i64(p + strlen(FMT_NPF_ROW_SUFFIX), &k) != 0 || k < 0)
    return false;
  *base_len = (size_t)(p - name);
  return true;
}

/* ---------------------------------------------------------------- fill */

#define FMT_NPF_KEY_MAX 48 /* longest argument name remembered, + 1 */
#define FMT_NPF_KEYS 256   /* slots of the table of names (a power of 2) */

/* What an argument name means for a message type and skip list: the field
 * it fills, or the skip entry it is (skip < 0: neither). */
struct fmt_npf_key {
  const ProtobufCMessageDescriptor *d;
  const char *const *skip;
  const ProtobufCFieldDescriptor *f;
  int skip_at;
  unsigned char len; /* 0: a free slot */
  char name[FMT_NPF_KEY_MAX];
  /* the name that came next the last time (the events of a kind name
   * their arguments in the same order), or NULL */
  struct fmt_npf_key *next;
};

/* The names remembered: a table by name, the meaning of a name that is
 * not in it, and the attributes field of the last message type filled. */
struct fmt_npf_keys {
  struct fmt_npf_key slot[FMT_NPF_KEYS];
  struct fmt_npf_key miss;
  const ProtobufCMessageDescriptor *attrs_of;
  const ProtobufCFieldDescriptor *attrs;
};

/* sc's table of names, made on first use. */
static struct fmt_npf_keys *fmt_npf_keys(struct fmt_npf_scratch *sc) {
  if (!sc->keys)
    sc->keys = xcalloc(1, sizeof *sc->keys);
  return sc->keys;
}

/* The `attributes` field of message type d, or NULL. */
static const ProtobufCFieldDescriptor *
fmt_npf_attrs(struct fmt_npf_scratch *sc, const ProtobufCMessageDescriptor *d) {
  struct fmt_npf_keys *ks = fmt_npf_keys(sc);
  if (ks->attrs_of != d) {
    ks->attrs_of = d;
    ks->attrs =
        protobuf_c_message_descriptor_get_field_by_name(d, "attributes");
  }
  return ks->attrs;
}

void fmt_npf_scratch_reset(struct fmt_npf_scratch *sc) { arena_reset(&sc->a); }

void fmt_npf_scratch_free(struct fmt_npf_scratch *sc) {
  free(sc->keys);
  sc->keys = NULL;
  arena_free(&sc->a);
  sbuf_free(&sc->b);
  sbuf_free(&sc->tmp);
}

bool fmt_npf_args_open(struct fmt_npf_args *a, const char *json) {
  const unsigned char *p = (const unsigned char *)(json ? json : "");
  const unsigned char *end = p + strlen((const char *)p);
  while (p < end && jtok_blank(*p))
    p++;
  while (end > p && jtok_blank(end[-1]))
    end--;
  /* checked as it is read (fmt_npf_fill, jtok_find): the decoder writes
   * valid JSON */
  bool obj = end - p >= 2 && *p == '{' && end[-1] == '}';
  a->p = obj ? p : end;
  a->end = end;
  a->packed = false;
  return obj || p == end;
}

void fmt_npf_args_packed(struct fmt_npf_args *a, const uint8_t *p, size_t n) {
  a->p = p;
  a->end = p + n;
  a->packed = true;
}

/* Whether slot k holds name key (kl bytes) of type d read with skip. */
static bool fmt_npf_key_is(const struct fmt_npf_key *k,
                           const ProtobufCMessageDescriptor *d,
                           const char *const *skip, const char *key,
                           size_t kl) {
  return k->d == d && k->skip == skip && k->len == kl &&
         memcmp(k->name, key, kl) == 0;
}

/* The meaning of argument name key (kl bytes, NUL-terminated) in message
 * type d read with skip, the argument after the one whose meaning was
 * *prev (NULL for the first; set to this one's): remembered by name in
 * sc's table, where names shorter than FMT_NPF_KEY_MAX stay (the first
 * FMT_NPF_KEYS that hash apart; the others are looked up each time).  The
 * name that followed *prev last time is tried first.  Valid until the next
 * call. */
static const struct fmt_npf_key *
fmt_npf_key(struct fmt_npf_scratch *sc, const ProtobufCMessageDescriptor *d,
            const char *const *skip, const char *key, size_t kl,
            struct fmt_npf_key **prev) {
  struct fmt_npf_keys *ks = fmt_npf_keys(sc);
  struct fmt_npf_key *p = *prev, *slot = NULL;
  if (p && p->next && fmt_npf_key_is(p->next, d, skip, key, kl))
    return *prev = p->next;
  if (kl > 0 && kl < FMT_NPF_KEY_MAX) {
    /* the length and the first and last 8 bytes: names are short */
    uint64_t w[2] = {0, 0};
    memcpy(&w[0], key, kl < 8 ? kl : 8);
    if (kl > 8)
      memcpy(&w[1], key + (kl < 16 ? 8 : kl - 8), kl < 16 ? kl - 8 : 8);
    uint64_t h = ((uint64_t)(uintptr_t)d ^ ((uint64_t)(uintptr_t)skip << 1) ^
                  kl ^ w[0] * 0x9e3779b97f4a7c15ull) *
                     0xff51afd7ed558ccdull ^
                 w[1] * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    for (size_t i = 0; i < 4 && !slot; i++) {
      struct fmt_npf_key *k = &ks->slot[(h + i) & (FMT_NPF_KEYS - 1)];
      if (k->len == 0 || fmt_npf_key_is(k, d, skip, key, kl))
        slot = k;
    }
  }
  if (!slot || !slot->len) {
    struct fmt_npf_key *r = slot ? slot : &ks->miss;
    *r = (struct fmt_npf_key){.d = d, .skip = skip, .skip_at = -1};
    for (size_t s = 0; skip && skip[s] && r->skip_at < 0; s++)
      if (strcmp(skip[s], key) == 0)
        r->skip_at = (int)s;
    if (r->skip_at < 0)
      r->f = fmt_npf_field(d, key);
    if (!slot) {
      *prev = NULL;
      return r;
    }
    slot->len = (unsigned char)kl;
    memcpy(slot->name, key, kl);
  }
  if (p)
    p->next = slot;
  return *prev = slot;
}

/* Whether string v is its own text (nothing to decode). */
static bool fmt_npf_plain(const struct jtok_span *v) {
  return v->kind == JTOK_STR &&
         !(v->fl & (JTOK_F_ESC | JTOK_F_BADUTF | JTOK_F_CTRL));
}

/* The text of v (decoded if a string, else valid JSON), kept in sc. */
static char *fmt_npf_text(const struct jtok_span *v,
                          struct fmt_npf_scratch *sc) {
  if (fmt_npf_plain(v))
    return arena_strdup(&sc->a, (const char *)v->p, v->n);
  sc->b.len = 0;
  if (v->kind == JTOK_STR)
    jval_decode(&sc->b, v);
  else
    jval_json(&sc->b, v, &sc->tmp);
  return arena_strdup(&sc->a, sc->b.len ? sc->b.s : "", sc->b.len);
}

bool fmt_npf_args_has(const struct fmt_npf_args *a, const char *key) {
  if (a->packed) {
    const uint8_t *p = a->p;
    struct fmt_perfetto_arg g;
    size_t kl = strlen(key);
    while (fmt_perfetto_arg_next(&p, a->end, &g))
      if (g.key_len == kl && memcmp(g.key, key, kl) == 0)
        return true;
    return false;
  }
  struct jtok_span obj = {a->p, (size_t)(a->end - a->p), JTOK_OBJ, 0}, v;
  return a->p != a->end && jtok_find(&obj, key, &v);
}

const char *fmt_npf_value_str(const struct jtok_span *v,
                              struct fmt_npf_scratch *sc) {
  return v->kind == JTOK_STR ? fmt_npf_text(v, sc) : NULL;
}

/* Whether d converts to an int64 (NaN does not). */
static bool fmt_npf_fits(double d) { return d >= -0x1p63 && d < 0x1p63; }

/* A number (JSON, or a string holding one) as int64/uint64/double. */
bool fmt_npf_value_num(const struct jtok_span *v, int64_t *i, uint64_t *u,
                       double *d) {
  char t[64];
  if ((v->kind != JTOK_NUM && v->kind != JTOK_STR) || v->n == 0 ||
      v->n >= sizeof t || (v->fl & JTOK_F_ESC))
    return false;
  /* the common case: at most 18 digits, maybe signed, that strtoll would
   * read the same */
  size_t at = v->p[0] == '-', nd = v->n - at;
  if (nd > 0 && nd <= 18) {
    int64_t x = 0;
    while (at < v->n && v->p[at] >= '0' && v->p[at] <= '9')
      x = x * 10 + (v->p[at++] - '0');
    if (at == v->n) {
      *i = v->p[0] == '-' ? -x : x;
      *u = (uint64_t)*i;
      *d = (double)*i;
      return true;
    }
  }
  memcpy(t, v->p, v->n);
  t[v->n] = '\0';
  char *end;
  if (util_parse_i64(t, i) == 0) {
    *u = (uint64_t)*i;
    *d = (double)*i;
    return true;
  }
  if (*t != '-' && jval_u64(t, u) == 0) {
    *i = (int64_t)*u;
    *d = (double)*u;
    return true;
  }
  *d = strtod(t, &end);
  if (*end || !fmt_npf_fits(*d))
    return false;
  *i = (int64_t)*d;
  *u = (uint64_t)*i;
  return true;
}

int fmt_npf_enum(const ProtobufCEnumDescriptor *e, const char *s) {
  for (unsigned k = 0; s && k < e->n_values; k++)
    if (strcasecmp(e->values[k].name, s) == 0)
      return e->values[k].value;
  return -1;
}

/* Sets repeated uint64 field f of m from the JSON array v. */
static bool fmt_npf_set_ids(ProtobufCMessage *m,
                            const ProtobufCFieldDescriptor *f,
                            const struct jtok_span *v,
                            struct fmt_npf_scratch *sc) {
  const unsigned char *p = v->p + 1, *end = v->p + v->n;
  struct jtok_span e;
  void *a = NULL;
  size_t n = 0;
  int64_t i;
  double d;
  int rc;
  while ((rc = jtok_element(&p, end, &e)) == JTOK_OK)
    if (!fmt_npf_value_num(&e, &i,
                           arena_push(&sc->a, &a, n++, sizeof(uint64_t)), &d))
      return false;
  *(size_t *)((char *)m + f->quantifier_offset) = n;
  *(uint64_t **)((char *)m + f->offset) = a;
  return rc == JTOK_END;
}

/* Sets field f (at p) of a number i, u, d to it: an enum, a bool or a
 * number; false when it does not fit. */
static bool fmt_npf_set_num(char *p, const ProtobufCFieldDescriptor *f,
                            int64_t i, uint64_t u, double d) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_ENUM:
    if ((int)i < 0)
      return false;
    *(int *)p = (int)i;
    return true;
  case PROTOBUF_C_TYPE_BOOL:
    *(protobuf_c_boolean *)p = i != 0;
    return true;
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    *(int32_t *)p = (int32_t)i;
    return true;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    *(uint32_t *)p = (uint32_t)u;
    return true;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    *(int64_t *)p = i;
    return true;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    *(uint64_t *)p = u;
    return true;
  case PROTOBUF_C_TYPE_DOUBLE:
    *(double *)p = d;
    return true;
  case PROTOBUF_C_TYPE_FLOAT:
    *(float *)p = (float)d;
    return true;
  default:
    return false;
  }
}

/* Sets field f of m from v; false when v does not fit it. */
static bool fmt_npf_set(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                        const struct jtok_span *v, struct fmt_npf_scratch *sc) {
  char *p = (char *)m + f->offset;
  int64_t i;
  uint64_t u;
  double d;
  if (f->label == PROTOBUF_C_LABEL_REPEATED)
    return f->type == PROTOBUF_C_TYPE_UINT64 && v->kind == JTOK_ARR &&
           fmt_npf_set_ids(m, f, v, sc);
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    if (v->kind != JTOK_STR)
      return false;
    *(char **)p = fmt_npf_text(v, sc);
    return true;
  }
  if (f->type == PROTOBUF_C_TYPE_ENUM && v->kind == JTOK_STR) {
    int e = fmt_npf_enum(f->descriptor, fmt_npf_text(v, sc));
    if (e < 0)
      return false;
    *(int *)p = e;
    return true;
  }
  if (f->type == PROTOBUF_C_TYPE_BOOL && jtok_true(v)) {
    *(protobuf_c_boolean *)p = 1;
    return true;
  }
  if (fmt_npf_value_num(v, &i, &u, &d))
    return fmt_npf_set_num(p, f, i, u, d);
  if (f->type != PROTOBUF_C_TYPE_BOOL)
    return false;
  *(protobuf_c_boolean *)p = 0; /* any other value: false */
  return true;
}

/* Sets field f of m from a packed integer or bool a, as from its JSON
 * text; false when it does not fit. */
static bool fmt_npf_set_packed(ProtobufCMessage *m,
                               const ProtobufCFieldDescriptor *f,
                               const struct fmt_perfetto_arg *a) {
  char *p = (char *)m + f->offset;
  if (f->label == PROTOBUF_C_LABEL_REPEATED ||
      f->type == PROTOBUF_C_TYPE_STRING)
    return false;
  if (a->type == FMT_PERFETTO_ARG_BOOL) { /* true/false: not a number */
    if (f->type != PROTOBUF_C_TYPE_BOOL)
      return false;
    *(protobuf_c_boolean *)p = a->u != 0;
    return true;
  }
  if (a->type == FMT_PERFETTO_ARG_UINT)
    return fmt_npf_set_num(p, f, (int64_t)a->u, a->u, (double)a->u);
  return fmt_npf_set_num(p, f, a->i, (uint64_t)a->i, (double)a->i);
}

/* Adds key = v to the attributes f of m (grown in the arena). */
static void fmt_npf_attr(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                         const char *key, size_t key_len,
                         const struct jtok_span *v,
                         struct fmt_npf_scratch *sc) {
  size_t *n = (size_t *)((char *)m + f->quantifier_offset);
  Nex__Attribute ***arr = (Nex__Attribute ***)((char *)m + f->offset);
  Nex__Attribute *a = arena_alloc(&sc->a, sizeof *a);
  nex__attribute__init(a);
  a->key = arena_strdup(&sc->a, key, key_len);
  a->value = fmt_npf_text(v, sc);
  a->is_number = v->kind == JTOK_NUM;
  *(Nex__Attribute **)arena_push(&sc->a, (void **)arr, (*n)++, sizeof a) = a;
}

/* What fmt_npf_fill is filling. */
struct fmt_npf_target {
  ProtobufCMessage *m;
  const ProtobufCFieldDescriptor *attrs; /* m's attributes, or NULL */
  const char *const *skip;
  struct jtok_span *skipped;
  struct fmt_npf_scratch *sc;
};

/* Argument key (kl bytes, NUL-terminated) of meaning mk, of value v: fills
 * its field, or becomes an attribute or a skipped value.  Returns 1 when v
 * does not fit the field, else 0. */
static uint64_t fmt_npf_apply(const struct fmt_npf_target *t,
                              const struct fmt_npf_key *mk, const char *key,
                              size_t kl, const struct jtok_span *v) {
  if (mk->skip_at >= 0) {
    t->skipped[mk->skip_at] = *v;
    return 0;
  }
  if (mk->f && mk->f != t->attrs)
    return !fmt_npf_set(t->m, mk->f, v, t->sc);
  if (t->attrs)
    fmt_npf_attr(t->m, t->attrs, key, kl, v, t->sc);
  return 0;
}

/* v as the JSON value written in sc->b would scan as the last member of
 * an object (copied into sc). */
static void fmt_npf_scan(struct jtok_span *v, struct fmt_npf_scratch *sc) {
  sbuf_addc(&sc->b, '}');
  const unsigned char *p =
      (const unsigned char *)arena_strdup(&sc->a, sc->b.s, sc->b.len);
  jtok_scan(&p, p + sc->b.len, v);
}

/* The value of packed argument a as its JSON text would scan (kept in
 * sc): a plain string and an integer or bool without a scan. */
static void fmt_npf_packed_value(struct jtok_span *v,
                                 const struct fmt_perfetto_arg *a,
                                 struct fmt_npf_scratch *sc) {
  sc->b.len = 0;
  switch (a->type) {
  case FMT_PERFETTO_ARG_STRING: /* its own JSON string: it decodes to
                                  itself and reads as the same number */
    if (a->s_plain) {
      *v = (struct jtok_span){(const unsigned char *)a->s, a->n, JTOK_STR, 0};
      return;
    }
    break;
  case FMT_PERFETTO_ARG_INT:
  case FMT_PERFETTO_ARG_UINT:
  case FMT_PERFETTO_ARG_BOOL: /* digits, true, false: nothing to check */
    fmt_perfetto_arg_json(&sc->b, a);
    *v = (struct jtok_span){
        (const unsigned char *)arena_strdup(&sc->a, sc->b.s, sc->b.len),
        sc->b.len, a->type == FMT_PERFETTO_ARG_BOOL ? JTOK_LIT : JTOK_NUM, 0};
    return;
  default:
    break;
  }
  fmt_perfetto_arg_json(&sc->b, a);
  fmt_npf_scan(v, sc);
}

/* fmt_npf_fill of packed args: each argument as its JSON text would be
 * read (a text that is not its own JSON string is written as JSON and
 * scanned), an integer or bool for a field set as it is. */
static uint64_t fmt_npf_fill_packed(const struct fmt_npf_target *t,
                                    const struct fmt_npf_args *args) {
  const uint8_t *p = args->p;
  struct fmt_perfetto_arg a;
  struct fmt_npf_scratch *sc = t->sc;
  struct fmt_npf_key *prev = NULL;
  uint64_t misfits = 0;
  while (fmt_perfetto_arg_next(&p, args->end, &a)) {
    char plain[128];
    const char *key = plain;
    size_t kl = a.key_len;
    struct jtok_span v;
    if (a.key_plain && kl < sizeof plain) {
      memcpy(plain, a.key, kl);
      plain[kl] = '\0';
    } else {
      sc->b.len = 0;
      sbuf_add_json_str(&sc->b, a.key, kl);
      fmt_npf_scan(&v, sc);
      key = fmt_npf_text(&v, sc);
      kl = strlen(key);
    }
    const struct fmt_npf_key *mk =
        fmt_npf_key(sc, t->m->descriptor, t->skip, key, kl, &prev);
    if ((a.type == FMT_PERFETTO_ARG_INT || a.type == FMT_PERFETTO_ARG_UINT ||
         a.type == FMT_PERFETTO_ARG_BOOL) &&
        mk->skip_at < 0 && mk->f && mk->f != t->attrs) {
      misfits += !fmt_npf_set_packed(t->m, mk->f, &a);
      continue;
    }
    fmt_npf_packed_value(&v, &a, sc);
    misfits += fmt_npf_apply(t, mk, key, kl, &v);
  }
  return misfits;
}

uint64_t fmt_npf_fill(ProtobufCMessage *m, const struct fmt_npf_args *args,
                      const char *const *skip, struct jtok_span *skipped,
                      struct fmt_npf_scratch *sc) {
  struct fmt_npf_target t = {m, fmt_npf_attrs(sc, m->descriptor), skip, skipped,
                             sc};
  const unsigned char *p = args->p, *end = args->end;
  struct jtok_span k, v;
  struct fmt_npf_key *prev = NULL;
  uint64_t misfits = 0;
  int rc = JTOK_END;
  for (size_t s = 0; skip && skip[s]; s++)
    skipped[s] = (struct jtok_span){NULL, 0, JTOK_NONE, 0};
  if (args->packed)
    return fmt_npf_fill_packed(&t, args);
  if (p != end) {
    p++; /* past the '{' */
    while ((rc = jtok_member(&p, end, &k, &v)) == JTOK_OK) {
      /* a key is looked up in place when it needs no decoding */
      char plain[128];
      const char *key = plain;
      size_t kl = k.n;
      if (fmt_npf_plain(&k) && k.n < sizeof plain) {
        memcpy(plain, k.p, k.n);
        plain[k.n] = '\0';
      } else {
        key = fmt_npf_text(&k, sc);
        kl = strlen(key);
      }
      misfits += fmt_npf_apply(
          &t, fmt_npf_key(sc, m->descriptor, skip, key, kl, &prev), key, kl,
          &v);
    }
  }
  return misfits + (rc != JTOK_END);
}
