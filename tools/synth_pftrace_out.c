/* synth_pftrace_out.c -- the Perfetto packets --format pftrace writes
 * (see synth_pftrace.h): one packet sequence per file, track descriptors
 * written on first use, slices as begin/end pairs, counters, and the
 * fields of our messages as debug annotations named as the vendor names
 * them (fmt_npf.h). */
#include "synth_pftrace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.pb-c.h"
#include "fmt_npf.h"
#include "log.h"

/* ------------------------------------------------------------- packets */

/* Appends packet pk to the file: field 1 of Trace, one sequence. */
static void synth_pftrace_out_put(struct synth_pftrace_out *o,
                                  Perfetto__Protos__TracePacket *pk) {
  pk->optional_trusted_packet_sequence_id_case =
      PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
  pk->trusted_packet_sequence_id = 1;
  pk->has_sequence_flags = 1;
  pk->sequence_flags =
      o->started
          ? PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE
          : PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
  o->started = 1;
  size_t len = protobuf_c_message_get_packed_size(&pk->base);
  if (len + 11 > o->cap) {
    o->cap = 2 * (len + 11);
    o->buf = xrealloc(o->buf, o->cap);
  }
  unsigned char *q = o->buf;
  *q++ = 0x0a;
  for (size_t v = len;; v >>= 7) {
    *q++ = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80)
      break;
  }
  q += protobuf_c_message_pack(&pk->base, q);
  fwrite(o->buf, 1, (size_t)(q - o->buf), o->f);
}

/* Appends a packet at ts holding track event te. */
static void synth_pftrace_out_event(struct synth_pftrace_out *o, int64_t ts,
                                    Perfetto__Protos__TrackEvent *te) {
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.has_timestamp = 1;
  pk.timestamp = (uint64_t)ts;
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  pk.track_event = te;
  synth_pftrace_out_put(o, &pk);
}

static void synth_pftrace_out_descriptor(struct synth_pftrace_out *o,
                                         Perfetto__Protos__TrackDescriptor *d) {
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
  pk.track_descriptor = d;
  synth_pftrace_out_put(o, &pk);
}

/* A new process track named `name` (pid: the Perfetto pid); returns its
 * uuid. */
uint64_t synth_pftrace_out_process(struct synth_pftrace_out *o, int32_t pid,
                                   const char *name) {
  Perfetto__Protos__ProcessDescriptor pd =
      PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
  Perfetto__Protos__TrackDescriptor d =
      PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
  pd.has_pid = 1;
  pd.pid = pid;
  pd.process_name = synth_pbstr(name);
  d.has_uuid = 1;
  d.uuid = ++o->next_uuid;
  d.process = &pd;
  synth_pftrace_out_descriptor(o, &d);
  return d.uuid;
}

/* The track named `name` under `parent` (a thread of Perfetto pid `pid`),
 * or with parent 0 a counter track; written on first use. */
struct synth_pftrace_out_track *
synth_pftrace_out_track(struct synth_pftrace_out *o, const char *name,
                        uint64_t parent, int32_t pid) {
  for (size_t i = o->n; i-- > 0;)
    if (o->t[i].parent == parent && strcmp(o->t[i].name, name) == 0)
      return &o->t[i];
  o->t = xrealloc(o->t, (o->n + 1) * sizeof *o->t);
  struct synth_pftrace_out_track *t = &o->t[o->n++];
  *t = (struct synth_pftrace_out_track){xstrdup(name), ++o->next_uuid, parent,
                                        INT64_MIN};
  Perfetto__Protos__TrackDescriptor d =
      PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
  Perfetto__Protos__ThreadDescriptor td =
      PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
  Perfetto__Protos__CounterDescriptor cd =
      PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
  d.has_uuid = 1;
  d.uuid = t->uuid;
  if (parent) {
    d.has_parent_uuid = 1;
    d.parent_uuid = parent;
    td.has_pid = td.has_tid = 1;
    td.pid = pid;
    td.tid = (int32_t)t->uuid;
    td.thread_name = t->name;
    d.thread = &td;
  } else {
    d.static_or_dynamic_name_case =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
    d.name = t->name;
    d.counter = &cd;
  }
  synth_pftrace_out_descriptor(o, &d);
  return t;
}

/* The first row "<base> - Row <k>" under parent free at ts (stacked rows
 * for overlapping slices); it is taken until end. */
struct synth_pftrace_out_track *
synth_pftrace_out_row(struct synth_pftrace_out *o, const char *base,
                      uint64_t parent, int32_t pid, int64_t ts, int64_t end) {
  for (int k = 0;; k++) {
    char *name = xasprintf("%s" FMT_NPF_ROW_SUFFIX "%d", base, k);
    struct synth_pftrace_out_track *t =
        synth_pftrace_out_track(o, name, parent, pid);
    free(name);
    if (t->end <= ts) {
      t->end = end;
      return t;
    }
  }
}

void synth_pftrace_out_counter(struct synth_pftrace_out *o, const char *name,
                               int64_t ts, double v) {
  struct synth_pftrace_out_track *t = synth_pftrace_out_track(o, name, 0, 0);
  Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  te.has_type = te.has_track_uuid = 1;
  te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
  te.track_uuid = t->uuid;
  te.counter_value_field_case =
      PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
  te.double_counter_value = v;
  synth_pftrace_out_event(o, ts, &te);
}

/* A slice (begin and end) or, with instant, an instant on track uuid. */
void synth_pftrace_out_slice(struct synth_pftrace_out *o, uint64_t uuid,
                             const char *name, int64_t ts, int64_t dur,
                             int instant, struct synth_pftrace_out_args *a,
                             const uint64_t *flows, size_t nflows) {
  Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  te.has_type = te.has_track_uuid = 1;
  te.type = instant ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT
                    : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
  te.track_uuid = uuid;
  te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
  te.name = synth_pbstr(name);
  te.n_debug_annotations = a->n;
  te.debug_annotations = a->p;
  te.n_flow_ids = nflows;
  te.flow_ids = (uint64_t *)(uintptr_t)flows;
  synth_pftrace_out_event(o, ts, &te);
  if (instant)
    return;
  Perfetto__Protos__TrackEvent end = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  end.has_type = end.has_track_uuid = 1;
  end.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
  end.track_uuid = uuid;
  synth_pftrace_out_event(o, ts + dur, &end);
}

/* ---------------------------------------------------------------- args */

static Perfetto__Protos__DebugAnnotation *
synth_pftrace_out_arg(struct synth_pftrace_out_args *a, const char *name) {
  if (a->n == SYNTH_PFTRACE_MAX_ARGS)
    fatal("synth: more than %d debug annotations", SYNTH_PFTRACE_MAX_ARGS);
  Perfetto__Protos__DebugAnnotation *d = &a->a[a->n];
  perfetto__protos__debug_annotation__init(d);
  d->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
  d->name = synth_pbstr(name);
  a->p[a->n] = d;
  a->owned[a->n++] = NULL;
  return d;
}

void synth_pftrace_out_i64(struct synth_pftrace_out_args *a, const char *name,
                           int64_t v) {
  Perfetto__Protos__DebugAnnotation *d = synth_pftrace_out_arg(a, name);
  d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
  d->int_value = v;
}

/* A string argument; own: s is malloc'd and freed with the args. */
void synth_pftrace_out_str(struct synth_pftrace_out_args *a, const char *name,
                           const char *s, int own) {
  Perfetto__Protos__DebugAnnotation *d = synth_pftrace_out_arg(a, name);
  d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
  d->string_value = synth_pbstr(s);
  if (own)
    a->owned[a->n - 1] = (char *)(uintptr_t)s;
}

void synth_pftrace_out_json(struct synth_pftrace_out_args *a, const char *name,
                            char *json) {
  Perfetto__Protos__DebugAnnotation *d = synth_pftrace_out_arg(a, name);
  d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE;
  d->legacy_json_value = json;
  a->owned[a->n - 1] = json;
}

void synth_pftrace_out_args_free(struct synth_pftrace_out_args *a) {
  for (size_t i = 0; i < a->n; i++)
    free(a->owned[i]);
  a->n = 0;
}

/* An attribute: a number when it says so (an integer, else a double). */
static void synth_pftrace_out_attr(struct synth_pftrace_out_args *a,
                                   const Nex__Attribute *at) {
  int64_t v;
  if (!at->is_number) {
    synth_pftrace_out_str(a, at->key, at->value, 0);
  } else if (util_parse_i64(at->value, &v) == 0) {
    synth_pftrace_out_i64(a, at->key, v);
  } else {
    Perfetto__Protos__DebugAnnotation *d = synth_pftrace_out_arg(a, at->key);
    d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
    d->double_value = strtod(at->value, NULL);
  }
}

/* One scalar field value at p as a debug argument, unless it is the
 * proto3 default. */
static void synth_pftrace_out_scalar(struct synth_pftrace_out_args *a,
                                     const char *name,
                                     const ProtobufCFieldDescriptor *f,
                                     const void *p) {
  int64_t i = 0;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    i = *(const int32_t *)p;
    break;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    i = *(const uint32_t *)p;
    break;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    i = *(const int64_t *)p;
    break;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64: {
    uint64_t u = *(const uint64_t *)p;
    if (u > INT64_MAX) /* beyond a JSON reader's int64: as text */
      synth_pftrace_out_str(a, name, xasprintf("%" PRIu64, u), 1);
    i = u > INT64_MAX ? 0 : (int64_t)u;
    break;
  }
  case PROTOBUF_C_TYPE_DOUBLE:
    if (*(const double *)p != 0) {
      Perfetto__Protos__DebugAnnotation *d = synth_pftrace_out_arg(a, name);
      d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
      d->double_value = *(const double *)p;
    }
    return;
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)p;
    if (s && *s)
      synth_pftrace_out_str(a, name, s, 0);
    return;
  }
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
    if (v && *(const int *)p) {
      char *s = xstrdup(v->name);
      for (char *c = s; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
      synth_pftrace_out_str(a, name, s, 1);
    }
    return;
  }
  default:
    return;
  }
  if (i)
    synth_pftrace_out_i64(a, name, i);
}

/* The fields of m as debug arguments (fmt_npf_arg_name names them): the
 * scalars that are not proto3 defaults, repeated integers as a JSON array
 * of int64, attributes under their own keys. */
void synth_pftrace_out_fields(struct synth_pftrace_out_args *a,
                              const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned k = 0; k < d->n_fields; k++) {
    const ProtobufCFieldDescriptor *f = &d->fields[k];
    const char *name = fmt_npf_arg_name(d, f);
    const char *p = (const char *)m + f->offset;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      synth_pftrace_out_scalar(a, name, f, p);
      continue;
    }
    size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) { /* attributes */
      Nex__Attribute *const *at = *(Nex__Attribute *const *const *)p;
      for (size_t i = 0; i < n; i++)
        synth_pftrace_out_attr(a, at[i]);
    } else if (f->type == PROTOBUF_C_TYPE_UINT64 && n) {
      const uint64_t *v = *(const uint64_t *const *)p;
      struct sbuf b = {0};
      for (size_t i = 0; i < n; i++)
        sbuf_printf(&b, "%c%" PRId64, i ? ',' : '[', (int64_t)v[i]);
      sbuf_addc(&b, ']');
      synth_pftrace_out_json(a, name, b.s);
    }
  }
}

void synth_pftrace_out_free(struct synth_pftrace_out *o) {
  for (size_t i = 0; i < o->n; i++)
    free(o->t[i].name);
  free(o->t);
  free(o->buf);
}
