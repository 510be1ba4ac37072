/* fmt_vjson.c -- see fmt_vjson.h.
 *
 * Reading order: the sections and their field aliases, the reader, the
 * generic JSON -> protobuf-c mapper (driven by the message descriptors),
 * the fix-ups of system events, the record emitters, and the streaming
 * drivers (top-level object, section arrays).  The byte source is jsrc's,
 * tokenizing jtok's, a value's text and numbers jval's; each record's
 * message lives in an arena (arena.h).
 */
#include "fmt_vjson.h"
#include "fmt_pb.h"
#include "pbwire.h"
#include "arena.h"
#include "jtok.h"
#include "jval.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char uchar;

#define VJSON_PROBE_BYTES (64u << 10)
#define VJSON_MAX_WARNED 256 /* distinct (section, field) drop warnings */

/* ------------------------------------------------------------ sections */

/* A vendor field name and the message field it fills (NULL: a known field
 * that carries nothing the message needs, dropped silently). */
struct alias {
  const char *json, *field;
};

static const struct alias event_aliases[] = {
    {"start_ts", "timestamp"},
    {"duration_ns", "duration"},
    {"lnc_idx", "nc_idx"},
    {"trace_event_source", "source"},
    {"end_ts", NULL}, /* gives the duration when that is missing */
    {NULL, NULL}};
static const struct alias sample_aliases[] = {
    {"util", "util_percent"}, /* cpu_util */
    {"usage", "used_bytes"},  /* mem_usage */
    {"percent_usage", "used_percent"},
    {"duration", NULL}, /* the sampling period (1) */
    {NULL, NULL}};
static const struct alias device_aliases[] = {
    {"timestamp", "start_ts"},
    {"duration", "duration_ns"},
    {"label", "timeline_track"},
    {"layer", "framework_op"},
    {"transfer_size", "transfer_bytes"},
    {"read_size", "read_bytes"},
    {"write_size", "write_bytes"},
    {"queue", "queue_name"},
    {NULL, NULL}};
static const struct alias no_aliases[] = {{NULL, NULL}};

enum sec_what {
  S_EVENT,
  S_HBM,
  S_CPU,
  S_MEM,
  S_INFO,
  S_DEVPROF,
  S_INSTR,
  S_DMA,
  S_OTHER
};

struct section {
  const char *name; /* top-level key; NULL ends the table */
  enum sec_what what;
  enum fmt_vjson_kind kind;
  const ProtobufCMessageDescriptor *desc;
  const struct alias *aliases;
};

static const struct section sections[] = {
    {"trace_events", S_EVENT, FMT_VJSON_SYSTEM, &nex__system_event__descriptor,
     event_aliases},
    {"trace_event", S_EVENT, FMT_VJSON_SYSTEM, &nex__system_event__descriptor,
     event_aliases},
    {"cpu_util", S_CPU, FMT_VJSON_SYSTEM, &nex__cpu_usage__descriptor,
     sample_aliases},
    {"mem_usage", S_MEM, FMT_VJSON_SYSTEM, &nex__host_mem_usage__descriptor,
     sample_aliases},
    {"system_profile_metadata", S_INFO, FMT_VJSON_SYSTEM,
     &nex__trace_info__descriptor, no_aliases},
    {"device_profile_list", S_DEVPROF, FMT_VJSON_SYSTEM, NULL, no_aliases},
    {"instruction", S_INSTR, FMT_VJSON_DEVICE, &nex__instruction__descriptor,
     device_aliases},
    {"dma", S_DMA, FMT_VJSON_DEVICE, &nex__dma_packet__descriptor,
     device_aliases},
    {"summary", S_OTHER, FMT_VJSON_DEVICE, NULL, no_aliases},
    {"summary_groups", S_OTHER, FMT_VJSON_DEVICE, NULL, no_aliases},
    {"layer_summary", S_OTHER, FMT_VJSON_DEVICE, NULL, no_aliases},
    {"annotation", S_OTHER, FMT_VJSON_DEVICE, NULL, no_aliases},
    {"profile_info", S_OTHER, FMT_VJSON_DEVICE, NULL, no_aliases},
    {NULL, S_OTHER, FMT_VJSON_NONE, NULL, no_aliases}};

static const struct section hbm_section = {
    "hbm", S_HBM, FMT_VJSON_SYSTEM, &nex__hbm_usage__descriptor, no_aliases};

/* The section of a top-level key; unknown keys give the S_OTHER entry
 * (kind NONE).  HBM samples are any key naming "hbm". */
static const struct section *section_of(const char *key) {
  const struct section *s = sections;
  for (; s->name; s++)
    if (!strcmp(s->name, key))
      return s;
  return strstr(key, "hbm") ? &hbm_section : s;
}

/* ------------------------------------------------------------ reader */

struct vj {
  struct jsrc src;
  const struct fmt_vjson_cb *cb;
  struct fmt_vjson_stats *st;
  struct jtok_warn warn; /* cb's warnings, st's skipped count */
  struct arena arena;
  struct sbuf key, text, scratch, instance, process;
  const char *event_type;         /* key of a nested {"<type>": [...]} list */
  struct jtok_span end_ts, group; /* of the system event being mapped */
  Nex__Attribute **attrs;
  size_t nattrs, capattrs;
  uint64_t *rep; /* elements of a repeated field, 8 bytes each */
  size_t nrep, caprep;
  char **warned; /* "section\0field" already reported as dropped */
  size_t nwarned;
};

/* Warns once per section and field that a field was dropped. */
static void vj_dropped(struct vj *r, const char *section, const char *field,
                       uint64_t off) {
  size_t ls = strlen(section), lf = strlen(field);
  for (size_t i = 0; i < r->nwarned; i++)
    if (!strcmp(r->warned[i], section) && !strcmp(r->warned[i] + ls + 1, field))
      return;
  if (r->nwarned == VJSON_MAX_WARNED)
    return;
  char *k = xmalloc(ls + lf + 2);
  memcpy(k, section, ls + 1);
  memcpy(k + ls + 1, field, lf + 1);
  r->warned = xrealloc(r->warned, (r->nwarned + 1) * sizeof *r->warned);
  r->warned[r->nwarned++] = k;
  jtok_note(&r->warn, off,
            "%s: field \"%s\" has no place in the record: dropped (reported "
            "once)",
            section, field);
}

static Nex__Attribute *vj_attr(struct vj *r, const char *key,
                               const struct jtok_span *v) {
  Nex__Attribute *a = arena_alloc(&r->arena, sizeof *a);
  nex__attribute__init(a);
  a->key = arena_strdup(&r->arena, key, strlen(key));
  const char *t = jval_text(&r->text, v, &r->scratch);
  a->value = arena_strdup(&r->arena, t, r->text.len);
  a->is_number = jtok_number(v);
  if (r->nattrs == r->capattrs) {
    r->capattrs = r->capattrs ? r->capattrs * 2 : 16;
    r->attrs = xrealloc(r->attrs, r->capattrs * sizeof *r->attrs);
  }
  r->attrs[r->nattrs++] = a;
  return a;
}

/* ------------------------------------------------------------ mapping */

/* The text of a number or of a numeric-looking string, or NULL. */
static const char *num_text(struct vj *r, const struct jtok_span *v) {
  if (v->kind != JTOK_NUM && v->kind != JTOK_STR)
    return NULL;
  const char *t = jval_text(&r->text, v, &r->scratch);
  while (isspace((uchar)*t))
    t++;
  return *t ? t : NULL;
}

static int to_i64(const char *t, int64_t *out) {
  uint64_t u;
  if (!jval_decimal((const uchar *)t, strlen(t), 0, out))
    return 0;
  if (!jval_u64(t, &u) && u <= (uint64_t)INT64_MAX) { /* hexadecimal */
    *out = (int64_t)u;
    return 0;
  }
  return -1;
}

/* uint64 fields take ids too: a negative int64 keeps its bits. */
static int to_u64(const char *t, uint64_t *out) {
  int64_t v;
  if (!jval_u64(t, out))
    return 0;
  if (jval_decimal((const uchar *)t, strlen(t), 0, &v))
    return -1;
  *out = (uint64_t)v;
  return 0;
}

/* Converts v into the field's C type at dst (one element for repeated
 * fields).  Returns 0, or -1 if the value does not fit the field. */
static int vj_scalar(struct vj *r, const ProtobufCFieldDescriptor *f,
                     const struct jtok_span *v, void *dst) {
  const char *t;
  int64_t i;
  uint64_t u;
  char *stop;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    if (!(t = num_text(r, v)) || to_i64(t, &i) || i < INT32_MIN ||
        i > INT32_MAX)
      return -1;
    *(int32_t *)dst = (int32_t)i;
    return 0;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    if (!(t = num_text(r, v)) || to_i64(t, &i))
      return -1;
    *(int64_t *)dst = i;
    return 0;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    if (!(t = num_text(r, v)) || to_u64(t, &u) || u > UINT32_MAX)
      return -1;
    *(uint32_t *)dst = (uint32_t)u;
    return 0;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    if (!(t = num_text(r, v)) || to_u64(t, &u))
      return -1;
    *(uint64_t *)dst = u;
    return 0;
  case PROTOBUF_C_TYPE_FLOAT:
  case PROTOBUF_C_TYPE_DOUBLE: {
    if (!(t = num_text(r, v)))
      return -1;
    double d = strtod(t, &stop);
    if (*stop || stop == t)
      return -1;
    if (f->type == PROTOBUF_C_TYPE_FLOAT)
      *(float *)dst = (float)d;
    else
      *(double *)dst = d;
    return 0;
  }
  case PROTOBUF_C_TYPE_BOOL:
    if (jtok_true(v) || jtok_is(v, "true"))
      *(protobuf_c_boolean *)dst = 1;
    else if ((v->kind == JTOK_LIT && v->n == 5 && !memcmp(v->p, "false", 5)) ||
             jtok_is(v, "false"))
      *(protobuf_c_boolean *)dst = 0;
    else if ((t = num_text(r, v)) && !to_i64(t, &i))
      *(protobuf_c_boolean *)dst = i != 0;
    else
      return -1;
    return 0;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    const ProtobufCEnumValue *ev = NULL;
    if (v->kind == JTOK_STR) {
      jval_text(&r->text, v, &r->scratch);
      for (char *c = r->text.s; *c; c++)
        *c = (char)toupper((uchar)*c);
      ev = protobuf_c_enum_descriptor_get_value_by_name(ed, r->text.s);
    }
    if (!ev && (t = num_text(r, v)) && !to_i64(t, &i) && i >= INT32_MIN &&
        i <= INT32_MAX)
      ev = protobuf_c_enum_descriptor_get_value(ed, (int)i);
    if (!ev)
      return -1;
    *(int *)dst = ev->value;
    return 0;
  }
  case PROTOBUF_C_TYPE_STRING:
    if (v->kind == JTOK_OBJ || v->kind == JTOK_ARR)
      return -1;
    t = jval_text(&r->text, v, &r->scratch);
    *(char **)dst = arena_strdup(&r->arena, t, r->text.len);
    return 0;
  default: /* bytes, messages: only attributes, filled elsewhere */
    return -1;
  }
}

/* Appends one element of a repeated field to r->rep. */
static int vj_push(struct vj *r, const ProtobufCFieldDescriptor *f,
                   const struct jtok_span *v) {
  if (r->nrep == r->caprep) {
    r->caprep = r->caprep ? r->caprep * 2 : 16;
    r->rep = xrealloc(r->rep, r->caprep * sizeof *r->rep);
  }
  if (vj_scalar(r, f, v, &r->rep[r->nrep]))
    return -1;
  r->nrep++;
  return 0;
}

/* Fills repeated field f from an array, a comma-separated string ("1,2")
 * or one value.  Returns 0, or -1 (field untouched) if an element does not
 * fit. */
static int vj_repeated(struct vj *r, const ProtobufCFieldDescriptor *f,
                       const struct jtok_span *v, void *msg) {
  struct jtok_span el;
  r->nrep = 0;
  if (v->kind == JTOK_ARR) {
    const uchar *p = v->p + 1, *end = v->p + v->n;
    int rc;
    while ((rc = jtok_element(&p, end, &el)) == JTOK_OK)
      if (vj_push(r, f, &el))
        return -1;
    if (rc != JTOK_END)
      return -1;
  } else if (v->kind == JTOK_STR && f->type != PROTOBUF_C_TYPE_STRING) {
    const uchar *p = v->p, *end = v->p + v->n;
    for (;;) {
      const uchar *comma = memchr(p, ',', (size_t)(end - p));
      el = *v;
      el.p = p;
      el.n = (size_t)((comma ? comma : end) - p);
      if (vj_push(r, f, &el))
        return -1;
      if (!comma)
        break;
      p = comma + 1;
    }
  } else if (vj_push(r, f, v)) {
    return -1;
  }
  size_t es = pbwire_elem_size(f->type);
  char *arr = arena_alloc(&r->arena, r->nrep * es + 1);
  for (size_t i = 0; i < r->nrep; i++)
    memcpy(arr + i * es, &r->rep[i], es);
  *(size_t *)((char *)msg + f->quantifier_offset) = r->nrep;
  *(void **)((char *)msg + f->offset) = arr;
  return 0;
}

/* Fields that mean "none" with -1 rather than 0. */
static void vj_defaults(const ProtobufCMessageDescriptor *d, void *msg) {
  static const char *const minus_one[] = {"nc_idx", "pcore_idx", "worker_gid"};
  for (size_t i = 0; i < sizeof minus_one / sizeof minus_one[0]; i++) {
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(d, minus_one[i]);
    if (f && f->type == PROTOBUF_C_TYPE_INT32)
      *(int32_t *)((char *)msg + f->offset) = -1;
  }
}

/* Builds a message of the section's type from the record object `obj`,
 * in the arena; sets the origin's instance and process. */
static void *vj_map(struct vj *r, const struct section *sec,
                    const struct jtok_span *obj, struct fmt_vjson_origin *o) {
  const ProtobufCMessageDescriptor *d = sec->desc;
  void *msg = arena_alloc(&r->arena, d->sizeof_message);
  protobuf_c_message_init(d, msg);
  vj_defaults(d, msg);
  const ProtobufCFieldDescriptor *attrs =
      protobuf_c_message_descriptor_get_field_by_name(d, "attributes");
  const uchar *p = obj->p + 1, *end = obj->p + obj->n;
  struct jtok_span k, v;
  r->nattrs = 0;
  if (r->event_type && sec->what == S_EVENT) {
    struct jtok_span et = {(const uchar *)r->event_type, strlen(r->event_type),
                           JTOK_STR, 0};
    vj_attr(r, "event_type", &et);
  }
  r->end_ts.kind = r->group.kind = JTOK_NONE;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    const char *key = jval_text(&r->key, &k, &r->scratch);
    const char *field = key;
    if (!strcmp(key, "instance_id"))
      o->instance_id = jval_text(&r->instance, &v, &r->scratch);
    else if (!strcmp(key, "process_id"))
      o->process_id = jval_text(&r->process, &v, &r->scratch);
    else if (!strcmp(key, "end_ts"))
      r->end_ts = v;
    else if (!strcmp(key, "group"))
      r->group = v;
    const struct alias *a = sec->aliases;
    while (a->json && strcmp(a->json, key))
      a++;
    if (a->json && !(field = a->field))
      continue; /* known, carries nothing */
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(d, field);
    if (f && f != attrs) {
      void *dst = (char *)msg + f->offset;
      if (f->label == PROTOBUF_C_LABEL_REPEATED ? !vj_repeated(r, f, &v, msg)
                                                : !vj_scalar(r, f, &v, dst))
        continue;
    } else if (!strcmp(key, "instance_id") || !strcmp(key, "process_id")) {
      continue; /* in the origin */
    }
    if (attrs)
      vj_attr(r, key, &v);
    else
      vj_dropped(r, o->section, key, o->offset);
  }
  if (attrs && r->nattrs) {
    Nex__Attribute **a = arena_alloc(&r->arena, r->nattrs * sizeof *a);
    memcpy(a, r->attrs, r->nattrs * sizeof *a);
    *(size_t *)((char *)msg + attrs->quantifier_offset) = r->nattrs;
    *(Nex__Attribute ***)((char *)msg + attrs->offset) = a;
  }
  return msg;
}

/* What the vendor's system events imply but may not say: the duration
 * from end_ts, the source from the framework markers (type 99999, group
 * "framework-<tid>", a Framework_Event list) and the NeuronCore from the
 * legacy group "nrt-nc-<nnn>". */
static void vj_event_fix(struct vj *r, Nex__SystemEvent *e) {
  const char *t;
  int64_t end;
  if (!e->duration && (t = num_text(r, &r->end_ts)) && !to_i64(t, &end) &&
      end > e->timestamp)
    e->duration = end - e->timestamp;
  const char *group = NULL;
  if (r->group.kind == JTOK_STR)
    group = jval_text(&r->text, &r->group, &r->scratch);
  if (e->source == NEX__TRACE_EVENT_SOURCE__SOURCE_UNSPECIFIED &&
      (e->type == 99999 || (group && !strncmp(group, "framework", 9)) ||
       (r->event_type && strstr(r->event_type, "Framework"))))
    e->source = NEX__TRACE_EVENT_SOURCE__FRAMEWORK;
  if (e->nc_idx < 0 && group && !strncmp(group, "nrt-nc-", 7) &&
      isdigit((uchar)group[7]))
    e->nc_idx = atoi(group + 7);
}

/* ------------------------------------------------------------ records */

/* Flattens the members of an object (or one scalar, keyed by the section)
 * into attributes and reports them as an `other` record. */
static int vj_other(struct vj *r, const char *name, const struct jtok_span *v,
                    struct fmt_vjson_origin *o) {
  r->nattrs = 0;
  if (v->kind == JTOK_OBJ) {
    const uchar *p = v->p + 1, *end = v->p + v->n;
    struct jtok_span k, m;
    while (jtok_member(&p, end, &k, &m) == JTOK_OK)
      vj_attr(r, jval_text(&r->key, &k, &r->scratch), &m);
  } else {
    vj_attr(r, name, v);
  }
  r->st->records++;
  return r->cb && r->cb->other
             ? r->cb->other(r->cb->ud, o, (Nex__Attribute *const *)r->attrs,
                            r->nattrs)
             : 0;
}

/* Decodes one element of a section array and reports it. */
static int vj_record(struct vj *r, const struct section *sec, const char *name,
                     const struct jtok_span *v, uint64_t off) {
  struct fmt_vjson_origin o = {name, "", "", off};
  const struct fmt_vjson_cb *cb = r->cb;
  void *ud = cb ? cb->ud : NULL;
  int rc = 0;
  arena_reset(&r->arena);
  if (sec->what == S_OTHER)
    return vj_other(r, name, v, &o);
  if (v->kind != JTOK_OBJ) {
    jtok_skipped(&r->warn, off, "%s: element is not an object: skipped", name);
    return 0;
  }
  if (sec->what == S_DEVPROF) {
    struct jtok_span nc, dn;
    const char *t;
    int64_t i = -1;
    if ((jtok_find(v, "nc_id", &nc) || jtok_find(v, "nc_idx", &nc)) &&
        (!(t = num_text(r, &nc)) || to_i64(t, &i) || i < -1 || i > INT32_MAX))
      i = -1;
    if (!jtok_find(v, "device_profile_name", &dn) || dn.kind != JTOK_STR) {
      jtok_skipped(&r->warn, off,
                   "%s: entry without device_profile_name: skipped", name);
      return 0;
    }
    struct jtok_span id;
    if (jtok_find(v, "instance_id", &id))
      o.instance_id = jval_text(&r->instance, &id, &r->scratch);
    if (jtok_find(v, "process_id", &id))
      o.process_id = jval_text(&r->process, &id, &r->scratch);
    r->st->records++;
    return cb && cb->device_profile
               ? cb->device_profile(ud, &o, (int)i,
                                    jval_text(&r->key, &dn, &r->scratch))
               : 0;
  }
  void *msg = vj_map(r, sec, v, &o);
  r->st->records++;
  switch (sec->what) {
  case S_EVENT:
  case S_HBM: {
    Nex__NtraceRecord rec;
    nex__ntrace_record__init(&rec);
    if (sec->what == S_EVENT) {
      vj_event_fix(r, msg);
      rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
      rec.event = msg;
    } else {
      rec.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
      rec.hbm = msg;
    }
    rc = cb && cb->ntrace ? cb->ntrace(ud, &o, &rec) : 0;
    break;
  }
  case S_CPU:
    rc = cb && cb->cpu ? cb->cpu(ud, &o, msg) : 0;
    break;
  case S_MEM:
    rc = cb && cb->host_mem ? cb->host_mem(ud, &o, msg) : 0;
    break;
  case S_INFO:
    rc = cb && cb->trace_info ? cb->trace_info(ud, &o, msg) : 0;
    break;
  default: { /* S_INSTR, S_DMA */
    Nex__NtffRecord rec;
    nex__ntff_record__init(&rec);
    if (sec->what == S_INSTR) {
      rec.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
      rec.instruction = msg;
    } else {
      rec.record_case = NEX__NTFF_RECORD__RECORD_DMA;
      rec.dma = msg;
    }
    rc = cb && cb->ntff ? cb->ntff(ud, &o, &rec) : 0;
  }
  }
  return rc;
}

/* ------------------------------------------------------------ streaming */

/* Reads a section array whose '[' is at the cursor, element by element. */
static int vj_array(struct vj *r, const struct section *sec, const char *name) {
  struct jsrc *s = &r->src;
  s->p++;
  for (;;) {
    struct jtok_span v;
    if (jtok_ws(s))
      return 0; /* cut: what was read stays */
    if (*s->p == ']') {
      s->p++;
      return 0;
    }
    if (*s->p == ',') {
      s->p++;
      continue;
    }
    uint64_t off = jsrc_off(s, s->p);
    const uchar *start = s->p;
    if (jtok_value(s, &v)) {
      int big = (size_t)(s->end - s->p) >= JTOK_MAX_VALUE;
      jtok_skipped(&r->warn, off, "%s: element %s: skipped", name,
                   big      ? "larger than 64 MiB"
                   : s->eof ? "cut by the end of the file"
                            : "malformed");
      if (*s->p == '{' && !big && !s->eof) {
        s->p++;
        jtok_resync(s);
      } else {
        jtok_skip(s);
      }
      if (s->p == start) /* a byte that starts no value */
        s->p++;
      continue;
    }
    int rc = vj_record(r, sec, name, &v, off);
    if (rc)
      return rc;
  }
}

/* Reads a member key and its ':' at the cursor, leaving the cursor on the
 * value.  Returns the decoded key (the caller frees it), or NULL if the
 * input is malformed or ends. */
static char *vj_key(struct vj *r) {
  struct jsrc *s = &r->src;
  struct jtok_span k;
  if (*s->p != '"' || jtok_value(s, &k))
    return NULL;
  char *key = xstrdup(jval_text(&r->key, &k, &r->scratch));
  if (jtok_ws(s) || *s->p != ':' || (s->p++, jtok_ws(s))) {
    free(key);
    return NULL;
  }
  return key;
}

/* Reads the value of top-level key `name` at the cursor. */
static int vj_section(struct vj *r, const char *name) {
  struct jsrc *s = &r->src;
  const struct section *sec = section_of(name);
  uint64_t off = jsrc_off(s, s->p);
  struct jtok_span v;
  if (sec->kind != FMT_VJSON_NONE && r->st->kind == FMT_VJSON_NONE)
    r->st->kind = sec->kind;
  if (*s->p == '[')
    return vj_array(r, sec, name);
  if (*s->p == '{' && sec->what != S_OTHER) {
    /* {"<event type>": [...], ...}: each list is a part of the section */
    s->p++;
    for (;;) {
      if (jtok_ws(s))
        return 0;
      if (*s->p == '}' || *s->p == ',') {
        if (*s->p++ == '}')
          return 0;
        continue;
      }
      char *type = vj_key(r);
      if (!type) {
        jtok_note(&r->warn, jsrc_off(s, s->p),
                  "%s: malformed: the rest of the section is skipped", name);
        return 0;
      }
      int rc = 0;
      if (*s->p == '[') {
        r->event_type = type;
        rc = vj_array(r, sec, name);
        r->event_type = NULL;
      } else {
        jtok_skipped(&r->warn, jsrc_off(s, s->p),
                     "%s: \"%s\" is not a list of records: skipped", name,
                     type);
        jtok_skip(s);
      }
      free(type);
      if (rc)
        return rc;
    }
  }
  if (jtok_value(s, &v)) {
    jtok_skipped(&r->warn, off, "%s: malformed or oversized value: skipped",
                 name);
    jtok_skip(s);
    return 0;
  }
  if (sec->what != S_OTHER) {
    jtok_skipped(&r->warn, off, "%s: not a list of records: skipped", name);
    return 0;
  }
  return vj_record(r, sec, name, &v, off);
}

/* Reads the top-level object whose '{' is behind the cursor.  When probe
 * is set, stops at the first key that tells the kind. */
static int vj_object(struct vj *r, int probe) {
  struct jsrc *s = &r->src;
  for (;;) {
    if (!jtok_next_member(s))
      return 0;
    uint64_t off = jsrc_off(s, s->p);
    char *name = vj_key(r);
    if (!name) {
      jtok_note(&r->warn, off,
                "malformed top-level object: the rest of the file is ignored");
      return 0;
    }
    int rc = 0;
    if (!strcmp(name, "traceEvents")) {
      rc = -EPROTO; /* a Chrome trace: fmt_chrome's */
    } else if (probe) {
      r->st->kind = section_of(name)->kind;
      if (r->st->kind != FMT_VJSON_NONE)
        rc = 1;
      else
        jtok_skip(s);
    } else {
      rc = vj_section(r, name);
    }
    free(name);
    if (rc)
      return rc;
  }
}

static void vj_free(struct vj *r) {
  struct sbuf *b[] = {&r->key, &r->text, &r->scratch, &r->instance,
                      &r->process};
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
    sbuf_free(b[i]);
  for (size_t i = 0; i < r->nwarned; i++)
    free(r->warned[i]);
  free(r->warned);
  free(r->attrs);
  free(r->rep);
  arena_free(&r->arena);
  jsrc_close(&r->src);
}

int fmt_vjson_read(const char *path, const struct fmt_vjson_cb *cb,
                   struct fmt_vjson_stats *st, char **cause) {
  struct fmt_vjson_stats local;
  struct vj r = {.cb = cb, .st = st ? st : &local};
  memset(r.st, 0, sizeof *r.st);
  r.warn = (struct jtok_warn){cb ? cb->warning : NULL, cb ? cb->ud : NULL,
                              &r.st->skipped};
  int rc = jtok_open_object(&r.src, path, 0, "vendor JSON export", cause);
  if (!rc) {
    rc = vj_object(&r, 0);
    if (rc == -EPROTO && cause)
      *cause = xasprintf("%s: a Chrome trace, not a vendor JSON export", path);
  }
  if (!rc)
    jtok_finish(&r.src, &r.warn, "export");
  if (r.src.base)
    r.st->bytes = jsrc_off(&r.src, r.src.p);
  vj_free(&r);
  return rc;
}

int fmt_vjson_probe(const char *path) {
  struct fmt_vjson_stats st = {0};
  struct vj r = {.st = &st, .warn = {.skipped = &st.skipped}};
  int rc = jtok_open_object(&r.src, path, VJSON_PROBE_BYTES, "", NULL);
  if (!rc && vj_object(&r, 1) == 1)
    rc = (int)st.kind;
  else if (rc == -ENODATA || rc == -EPROTO || rc == -EBADMSG || rc >= 0)
    rc = FMT_VJSON_NONE;
  vj_free(&r);
  return rc;
}
