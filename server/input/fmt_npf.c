/* fmt_npf.c -- the naming of the Neuron tools' Perfetto export (see
 * fmt_npf.h). */
#include "fmt_npf.h"

#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "util.h"

#include <jansson.h>

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
  if (strncmp(name, "Thread ", 7) == 0) {
    long long v = strtoll(name + 7, &end, 10);
    if (end == name + 7 || *end)
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

static void *fmt_npf_keep(struct fmt_npf_scratch *sc, void *p) {
  sc->owned = xrealloc(sc->owned, (sc->n + 1) * sizeof *sc->owned);
  sc->owned[sc->n++] = p;
  return p;
}

void fmt_npf_scratch_free(struct fmt_npf_scratch *sc) {
  for (size_t i = 0; i < sc->n; i++)
    free(sc->owned[i]);
  free(sc->owned);
  *sc = (struct fmt_npf_scratch){NULL, 0};
}

/* Whether d converts to an int64 (NaN does not). */
static bool fmt_npf_fits(double d) { return d >= -0x1p63 && d < 0x1p63; }

/* A JSON number, or a string holding one, as int64/uint64/double (false
 * for a real beyond int64). */
bool fmt_npf_num(const json_t *v, int64_t *i, uint64_t *u, double *d) {
  if (json_is_integer(v)) {
    *i = json_integer_value(v);
    *u = (uint64_t)*i;
    *d = (double)*i;
    return true;
  }
  if (json_is_real(v)) {
    *d = json_real_value(v);
    if (!fmt_npf_fits(*d))
      return false;
    *i = (int64_t)*d;
    *u = (uint64_t)*i;
    return true;
  }
  const char *s = json_string_value(v);
  char *end;
  if (!s || !*s)
    return false;
  if (util_parse_i64(s, i) == 0) {
    *u = (uint64_t)*i;
    *d = (double)*i;
    return true;
  }
  *u = strtoull(s, &end, 10);
  if (!*end && *s != '-') {
    *i = (int64_t)*u;
    *d = (double)*u;
    return true;
  }
  *d = strtod(s, &end);
  if (*end || !fmt_npf_fits(*d))
    return false;
  *i = (int64_t)*d;
  *u = (uint64_t)*i;
  return true;
}

/* The value of enum e named s (case-insensitive), or -1. */
int fmt_npf_enum(const ProtobufCEnumDescriptor *e, const char *s) {
  for (unsigned k = 0; s && k < e->n_values; k++)
    if (strcasecmp(e->values[k].name, s) == 0)
      return e->values[k].value;
  return -1;
}

/* Sets field f of m from v; false when v does not fit it. */
static bool fmt_npf_set(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                        const json_t *v, struct fmt_npf_scratch *sc) {
  char *p = (char *)m + f->offset;
  int64_t i;
  uint64_t u;
  double d;
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    if (f->type != PROTOBUF_C_TYPE_UINT64 || !json_is_array(v))
      return false;
    size_t n = json_array_size(v);
    uint64_t *a = fmt_npf_keep(sc, xcalloc(n ? n : 1, sizeof *a));
    for (size_t k = 0; k < n; k++)
      if (!fmt_npf_num(json_array_get(v, k), &i, &a[k], &d))
        return false;
    *(size_t *)((char *)m + f->quantifier_offset) = n;
    *(uint64_t **)p = a;
    return true;
  }
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    if (!json_is_string(v))
      return false;
    *(const char **)p = json_string_value(v);
    return true;
  }
  if (f->type == PROTOBUF_C_TYPE_ENUM) {
    int e = json_is_string(v)
                ? fmt_npf_enum(f->descriptor, json_string_value(v))
                : (int)json_integer_value(v);
    if (e < 0)
      return false;
    *(int *)p = e;
    return true;
  }
  if (f->type == PROTOBUF_C_TYPE_BOOL) {
    *(protobuf_c_boolean *)p = json_is_true(v) || json_integer_value(v) != 0;
    return true;
  }
  if (!fmt_npf_num(v, &i, &u, &d))
    return false;
  switch (f->type) {
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

/* Adds key = v to the attributes of m (strings as such, other values as
 * their JSON text, numbers flagged). */
static void fmt_npf_attr(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                         const char *key, const json_t *v,
                         struct fmt_npf_scratch *sc) {
  size_t *n = (size_t *)((char *)m + f->quantifier_offset);
  Nex__Attribute ***arr = (Nex__Attribute ***)((char *)m + f->offset);
  Nex__Attribute **grown = xmalloc((*n + 1) * sizeof *grown);
  if (*n)
    memcpy(grown, *arr, *n * sizeof *grown);
  Nex__Attribute *a = fmt_npf_keep(sc, xmalloc(sizeof *a));
  nex__attribute__init(a);
  a->key = (char *)(uintptr_t)key;
  if (json_is_string(v)) {
    a->value = (char *)(uintptr_t)json_string_value(v);
  } else {
    a->value = fmt_npf_keep(sc, json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT));
    a->is_number = json_is_number(v);
  }
  grown[*n] = a;
  *arr = fmt_npf_keep(sc, grown);
  (*n)++;
}

/* Fills m from the debug arguments (a JSON object): each fills the field
 * it names; the others (but the keys of skip) become attributes when m has
 * them.  Returns how many named a field their value does not fit (left
 * out: an attribute of that name would shadow the field). */
uint64_t fmt_npf_fill(ProtobufCMessage *m, json_t *args,
                      const char *const *skip, struct fmt_npf_scratch *sc) {
  uint64_t misfits = 0;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const ProtobufCFieldDescriptor *attrs =
      protobuf_c_message_descriptor_get_field_by_name(d, "attributes");
  const char *key;
  json_t *v;
  json_object_foreach(args, key, v) {
    size_t k = 0;
    while (skip && skip[k] && strcmp(skip[k], key) != 0)
      k++;
    if (skip && skip[k])
      continue;
    const ProtobufCFieldDescriptor *f = fmt_npf_field(d, key);
    if (f && f != attrs)
      misfits += !fmt_npf_set(m, f, v, sc);
    else if (attrs)
      fmt_npf_attr(m, attrs, key, v, sc);
  }
  return misfits;
}
