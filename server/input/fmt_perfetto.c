/* fmt_perfetto.c -- see fmt_perfetto.h.
 *
 * Reading order: the packet arena, sequences and interning,
 * clocks, tracks, the packet, the stream.
 */
#include "arena.h"
#include "fmt_perfetto_priv.h"
#include "jtok.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arena */

/* protobuf-c unpacks one packet into the reader's arena (reset per
 * packet): no malloc per field. */
static void *fmt_perfetto_arena_alloc(void *data, size_t n) {
  return arena_alloc(data, n);
}

static void fmt_perfetto_arena_free(void *data, void *p) {
  (void)data;
  (void)p;
}

/* ------------------------------------------------------------ sequences */

static void fmt_perfetto_seq_clear(struct fmt_perfetto *r,
                                   struct fmt_perfetto_seq *q) {
  for (size_t i = 0; i < q->interned.cap; i++)
    if (q->interned.vals[i])
      r->interned_bytes -=
          ((struct fmt_perfetto_str *)q->interned.vals[i])->len + 1;
  fmt_perfetto_state_map_clear(&q->interned, free);
  fmt_perfetto_state_map_clear(&q->counters, free);
  for (size_t i = 0; i < r->nclocks; i++)
    if (r->clocks[i].seq == q->id)
      r->clocks[i].has_snap = 0;
  q->thread_time_ns = q->instructions = 0;
}

static void fmt_perfetto_seq_free(void *p) {
  struct fmt_perfetto_seq *q = p;
  fmt_perfetto_state_map_clear(&q->interned, free);
  fmt_perfetto_state_map_clear(&q->counters, free);
  free(q->extra);
  free(q->extra_double);
  free(q);
}

static struct fmt_perfetto_seq *fmt_perfetto_seq(struct fmt_perfetto *r,
                                                 uint32_t id) {
  if (r->seq && r->seq->id == id)
    return r->seq;
  struct fmt_perfetto_seq *q = fmt_perfetto_state_map_get(&r->seqs, id);
  if (q)
    return r->seq = q;
  if (r->seqs.n >= FMT_PERFETTO_MAX_SEQUENCES)
    return NULL;
  q = xcalloc(1, sizeof *q);
  q->id = id;
  *fmt_perfetto_state_map_slot(&r->seqs, id) = q;
  return r->seq = q;
}

static void fmt_perfetto_intern(struct fmt_perfetto *r,
                                struct fmt_perfetto_seq *q, int kind,
                                uint64_t iid, const char *s, size_t n) {
  if (!s)
    return;
  void **slot =
      fmt_perfetto_state_map_slot(&q->interned, iid * 4 + (uint64_t)kind);
  if (*slot) {
    r->interned_bytes -= ((struct fmt_perfetto_str *)*slot)->len + 1;
    free(*slot);
  } else if (r->interned_bytes + n + 1 > FMT_PERFETTO_MAX_INTERNED) {
    /* the slot stays: fill it with the fallback so the map stays dense */
    if (!r->warned_interned)
      fmt_perfetto_state_warn(r,
                              "interned strings pass %u MiB: later ones are "
                              "replaced by their iid",
                              FMT_PERFETTO_MAX_INTERNED >> 20);
    r->warned_interned = true;
    char id[32];
    int len = snprintf(id, sizeof id, "iid:%" PRIu64, iid);
    *slot = fmt_perfetto_state_str(id, (size_t)len);
    r->interned_bytes += (size_t)len + 1;
    return;
  }
  struct fmt_perfetto_str *e = fmt_perfetto_state_str(s, n);
  *slot = e;
  r->interned_bytes += e->len + 1;
}

static void
fmt_perfetto_interned_data(struct fmt_perfetto *r, struct fmt_perfetto_seq *q,
                           const Perfetto__Protos__InternedData *d) {
  for (size_t i = 0; i < d->n_event_categories; i++) {
    const char *s = d->event_categories[i]->name;
    fmt_perfetto_intern(r, q, FMT_PERFETTO_IID_CATEGORY,
                        d->event_categories[i]->iid, s, s ? strlen(s) : 0);
  }
  for (size_t i = 0; i < d->n_event_names; i++) {
    const char *s = d->event_names[i]->name;
    fmt_perfetto_intern(r, q, FMT_PERFETTO_IID_EVENT_NAME,
                        d->event_names[i]->iid, s, s ? strlen(s) : 0);
  }
  for (size_t i = 0; i < d->n_debug_annotation_names; i++) {
    const char *s = d->debug_annotation_names[i]->name;
    fmt_perfetto_intern(r, q, FMT_PERFETTO_IID_ARG_NAME,
                        d->debug_annotation_names[i]->iid, s,
                        s ? strlen(s) : 0);
  }
  for (size_t i = 0; i < d->n_debug_annotation_string_values; i++) {
    const Perfetto__Protos__InternedString *v =
        d->debug_annotation_string_values[i];
    if (v->has_str)
      fmt_perfetto_intern(r, q, FMT_PERFETTO_IID_ARG_STRING, v->iid,
                          (const char *)v->str.data, v->str.len);
  }
}

static void
fmt_perfetto_defaults(struct fmt_perfetto_seq *q,
                      const Perfetto__Protos__TracePacketDefaults *d) {
  q->has_clock = d->has_timestamp_clock_id;
  q->clock_id = d->timestamp_clock_id;
  const Perfetto__Protos__TrackEventDefaults *e = d->track_event_defaults;
  q->has_track = e && e->has_track_uuid;
  q->track_uuid = e ? e->track_uuid : 0;
  free(q->extra);
  free(q->extra_double);
  q->extra = q->extra_double = NULL;
  q->nextra = q->nextra_double = 0;
  if (!e)
    return;
  if (e->n_extra_counter_track_uuids) {
    q->nextra = e->n_extra_counter_track_uuids;
    q->extra = xmalloc(sizeof *q->extra * q->nextra);
    memcpy(q->extra, e->extra_counter_track_uuids,
           sizeof *q->extra * q->nextra);
  }
  if (e->n_extra_double_counter_track_uuids) {
    q->nextra_double = e->n_extra_double_counter_track_uuids;
    q->extra_double = xmalloc(sizeof *q->extra_double * q->nextra_double);
    memcpy(q->extra_double, e->extra_double_counter_track_uuids,
           sizeof *q->extra_double * q->nextra_double);
  }
}

/* ------------------------------------------------------------ clocks */

#define FMT_PERFETTO_BOOTTIME 6u

static struct fmt_perfetto_clock *
fmt_perfetto_clock(struct fmt_perfetto *r, uint32_t seq, uint32_t id) {
  uint32_t scope = id >= 64 && id < 128 ? seq : 0;
  for (size_t i = 0; i < r->nclocks; i++)
    if (r->clocks[i].id == id && r->clocks[i].seq == scope)
      return &r->clocks[i];
  if (r->nclocks >= FMT_PERFETTO_MAX_CLOCKS)
    return NULL;
  r->clocks = xrealloc(r->clocks, sizeof *r->clocks * (r->nclocks + 1));
  struct fmt_perfetto_clock *c = &r->clocks[r->nclocks++];
  *c = (struct fmt_perfetto_clock){.seq = scope, .id = id, .mult = 1};
  return c;
}

static void fmt_perfetto_snapshot(struct fmt_perfetto *r, uint32_t seq,
                                  const Perfetto__Protos__ClockSnapshot *s) {
  if (s->has_primary_trace_clock && s->primary_trace_clock)
    r->trace_clock = s->primary_trace_clock;
  const Perfetto__Protos__ClockSnapshot__Clock *tc = NULL;
  for (size_t i = 0; i < s->n_clocks; i++)
    if (s->clocks[i]->clock_id == r->trace_clock)
      tc = s->clocks[i];
  if (!tc) {
    fmt_perfetto_state_warn(
        r, "clock snapshot without the trace clock %" PRIu32 ": ignored",
        r->trace_clock);
    return;
  }
  int64_t tmul = tc->has_unit_multiplier_ns && tc->unit_multiplier_ns
                     ? (int64_t)tc->unit_multiplier_ns
                     : 1;
  int64_t trace = (int64_t)tc->timestamp * tmul;
  for (size_t i = 0; i < s->n_clocks; i++) {
    const Perfetto__Protos__ClockSnapshot__Clock *k = s->clocks[i];
    struct fmt_perfetto_clock *c = fmt_perfetto_clock(r, seq, k->clock_id);
    if (!c)
      continue;
    c->mult = k->has_unit_multiplier_ns && k->unit_multiplier_ns
                  ? (int64_t)k->unit_multiplier_ns
                  : 1;
    c->incremental = k->is_incremental;
    c->last = (int64_t)k->timestamp;
    c->snap = fmt_perfetto_wrap(0, (int64_t)k->timestamp, c->mult);
    c->trace = trace;
    c->has_snap = 1;
  }
}

/* A packet timestamp of clock id on the trace clock. */
static int64_t fmt_perfetto_ts(struct fmt_perfetto *r, uint32_t seq,
                               uint32_t id, uint64_t raw) {
  if (id == r->trace_clock)
    return (int64_t)raw;
  struct fmt_perfetto_clock *c = fmt_perfetto_clock(r, seq, id);
  if (!c)
    return (int64_t)raw;
  int64_t v = (int64_t)raw;
  if (c->incremental) {
    v = fmt_perfetto_wrap(c->last, v, 1);
    c->last = v;
  }
  int64_t ns = fmt_perfetto_wrap(0, v, c->mult);
  if (c->has_snap)
    return (int64_t)((uint64_t)c->trace + (uint64_t)ns - (uint64_t)c->snap);
  if (!c->warned)
    fmt_perfetto_state_warn(r,
                            "clock %" PRIu32 " has no snapshot with the trace "
                            "clock %" PRIu32
                            ": its timestamps are used as they "
                            "are",
                            id, r->trace_clock);
  c->warned = 1;
  return ns;
}

/* ------------------------------------------------------------ tracks */

static void fmt_perfetto_track_free(void *p) {
  struct fmt_perfetto_trk *t = p;
  fmt_perfetto_event_free(t);
  free(t->name);
  free(t->process_name);
  free(t->thread_name);
  free(t);
}

/* Replaces an owned string of a track by a copy of v (NULL allowed) and
 * points its public record at the strings. */
static void fmt_perfetto_set(struct fmt_perfetto_trk *t, char **field,
                             const char *v) {
  if (!(v && *field && strcmp(v, *field) == 0)) {
    free(*field);
    *field = v ? fmt_perfetto_state_dup(v, strlen(v)) : NULL;
  }
  t->pub.name = t->name;
  t->pub.process_name = t->process_name;
  t->pub.thread_name = t->thread_name;
}

static void
fmt_perfetto_descriptor(struct fmt_perfetto *r,
                        const Perfetto__Protos__TrackDescriptor *d) {
  struct fmt_perfetto_trk *t = fmt_perfetto_state_track(r, d->uuid);
  if (!t)
    return;
  struct fmt_perfetto_track *p = &t->pub;
  p->parent_uuid = d->has_parent_uuid ? d->parent_uuid : 0;
  const char *name =
      d->static_or_dynamic_name_case ==
              PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME
          ? d->name
      : d->static_or_dynamic_name_case ==
              PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_STATIC_NAME
          ? d->static_name
          : NULL;
  if (name || p->is_process || p->is_thread || p->is_counter)
    fmt_perfetto_set(t, &t->name, name); /* else named by its first event */
  if (d->process) {
    p->is_process = 1;
    t->own_pid = d->process->has_pid ? d->process->pid : -1;
    fmt_perfetto_set(t, &t->process_name, d->process->process_name);
  }
  if (d->thread) {
    p->is_thread = 1;
    t->own_pid = d->thread->has_pid ? d->thread->pid : -1;
    t->own_tid = d->thread->has_tid ? d->thread->tid : -1;
    fmt_perfetto_set(t, &t->thread_name, d->thread->thread_name);
  }
  if (d->counter) {
    static const char *const units[] = {NULL, "ns", "count", "bytes"};
    static const char *const builtin[] = {NULL, "thread_time",
                                          "thread_instruction_count"};
    const Perfetto__Protos__CounterDescriptor *c = d->counter;
    p->is_counter = 1;
    p->counter_name = c->type > 0 && c->type < 3 ? builtin[c->type] : NULL;
    p->unit = c->unit > 0 && c->unit < 4 ? units[c->unit]
              : c->type == 1             ? "ns"
              : c->type == 2             ? "count"
                                         : NULL;
    p->unit_multiplier = c->has_unit_multiplier && c->unit_multiplier > 0
                             ? c->unit_multiplier
                             : 1;
    p->incremental = c->is_incremental;
  }
  r->tgen++;
  fmt_perfetto_state_track_report(r, t);
}

/* A legacy ThreadDescriptor/ProcessDescriptor packet: a track of its own
 * with a uuid derived from the ids. */
static void fmt_perfetto_legacy_desc(struct fmt_perfetto *r,
                                     struct fmt_perfetto_seq *q, int64_t pid,
                                     int64_t tid, const char *name) {
  char key[64];
  int n = snprintf(key, sizeof key, "legacy:%" PRId64 ":%" PRId64, pid, tid);
  uint64_t uuid = util_hash(key, (size_t)n) | 1ull << 63;
  struct fmt_perfetto_trk *t = fmt_perfetto_state_track(r, uuid);
  if (!t)
    return;
  t->own_pid = pid;
  t->own_tid = tid;
  t->pub.is_thread = tid >= 0;
  t->pub.is_process = tid < 0;
  fmt_perfetto_set(t, tid >= 0 ? &t->thread_name : &t->process_name, name);
  r->tgen++;
  fmt_perfetto_state_track_report(r, t);
  if (q && tid >= 0) {
    q->has_thread = true;
    q->thread_uuid = uuid;
  }
}

/* ------------------------------------------------------------ packet */

static void fmt_perfetto_packet(struct fmt_perfetto *r,
                                const Perfetto__Protos__TracePacket *p) {
  uint32_t sid =
      p->optional_trusted_packet_sequence_id_case ==
              PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID
          ? p->trusted_packet_sequence_id
          : 0;
  struct fmt_perfetto_seq *q = fmt_perfetto_seq(r, sid);
  if (!q) {
    fmt_perfetto_state_warn(r,
                            "more than %u packet sequences: packet of sequence "
                            "%" PRIu32 " skipped",
                            FMT_PERFETTO_MAX_SEQUENCES, sid);
    return;
  }
  if (p->has_previous_packet_dropped && p->previous_packet_dropped)
    q->valid = false;
  if ((p->sequence_flags & 1) || p->incremental_state_cleared) {
    fmt_perfetto_seq_clear(r, q);
    q->valid = true;
  }
  if ((p->sequence_flags & 2) && !q->valid) {
    r->st->no_state++;
    return;
  }
  if (p->interned_data)
    fmt_perfetto_interned_data(r, q, p->interned_data);
  if (p->trace_packet_defaults)
    fmt_perfetto_defaults(q, p->trace_packet_defaults);
  int64_t ts = q->last_ts;
  if (p->has_timestamp) {
    uint32_t clock = p->has_timestamp_clock_id ? p->timestamp_clock_id
                     : q->has_clock            ? q->clock_id
                                               : FMT_PERFETTO_BOOTTIME;
    ts = fmt_perfetto_ts(r, sid, clock, p->timestamp);
    q->last_ts = ts;
  }
  switch (p->data_case) {
  case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT:
    r->st->events++;
    fmt_perfetto_event(r, q, p->track_event, ts);
    break;
  case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR:
    fmt_perfetto_descriptor(r, p->track_descriptor);
    break;
  case PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT:
    fmt_perfetto_snapshot(r, sid, p->clock_snapshot);
    break;
  case PERFETTO__PROTOS__TRACE_PACKET__DATA_THREAD_DESCRIPTOR: {
    const Perfetto__Protos__ThreadDescriptor *d = p->thread_descriptor;
    q->ref_us = d->reference_timestamp_us;
    q->thread_time_ns = fmt_perfetto_wrap(0, d->reference_thread_time_us, 1000);
    fmt_perfetto_legacy_desc(r, q, d->pid, d->tid, d->thread_name);
    break;
  }
  case PERFETTO__PROTOS__TRACE_PACKET__DATA_PROCESS_DESCRIPTOR:
    fmt_perfetto_legacy_desc(r, NULL, p->process_descriptor->pid, -1,
                             p->process_descriptor->process_name);
    break;
  default:
    /* interned data or defaults alone are not unknown */
    if (!p->interned_data && !p->trace_packet_defaults &&
        !p->incremental_state_cleared && !(p->sequence_flags & 1))
      r->st->unknown++;
    break;
  }
}

/* ------------------------------------------------------------ stream */

/* Makes n bytes available at s->p.  Returns 1, or 0 if the stream ends
 * first. */
static int fmt_perfetto_need(struct jsrc *s, uint64_t n) {
  while ((uint64_t)(s->end - s->p) < n)
    if (!jsrc_fill(s))
      return 0;
  return 1;
}

/* Reads a varint at s->p (refilling).  Returns its length, 0 at a clean
 * end of the stream (no byte), -1 if cut or longer than 10 bytes. */
static int fmt_perfetto_varint(struct jsrc *s, uint64_t *v) {
  uint64_t x = 0;
  bool buffered = s->end - s->p >= 10; /* no refill to check per byte */
  for (int i = 0; i < 10; i++) {
    if (!buffered && !fmt_perfetto_need(s, (uint64_t)i + 1))
      return i == 0 ? 0 : -1;
    uint8_t b = s->p[i];
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return i + 1;
    }
  }
  return -1;
}

/* The packet of data[0, len) in the arena: by the wire walker (its
 * annotations then in r->ann), else by protobuf-c (NULL when it does not
 * decode). */
static Perfetto__Protos__TracePacket *
fmt_perfetto_unpack(struct fmt_perfetto *r, struct fmt_perfetto_wire *w,
                    ProtobufCAllocator *alloc, const uint8_t *data,
                    size_t len) {
  Perfetto__Protos__TracePacket *p = fmt_perfetto_wire_packet(w, data, len);
  r->walked = p != NULL;
  if (p)
    r->ann = fmt_perfetto_wire_annotations(w, &r->nann);
  else if (fmt_perfetto_args_depth_ok(data, len))
    p = perfetto__protos__trace_packet__unpack(alloc, len, data);
  return p;
}

/* Reads the frames of the stream.  Returns 0 at its end, a callback's
 * value, or -EPIPE/-EBADMSG with *cause set. */
static int fmt_perfetto_stream(struct fmt_perfetto *r, struct jsrc *s,
                               struct fmt_perfetto_wire *w, struct arena *a,
                               char **cause) {
  ProtobufCAllocator alloc = {fmt_perfetto_arena_alloc, fmt_perfetto_arena_free,
                              a};
  for (;;) {
    uint64_t at = jsrc_off(s, s->p), key, len = 0;
    r->offset = at;
    int n = fmt_perfetto_varint(s, &key);
    if (n == 0)
      return 0;
    /* field 0 does not exist: zero bytes (a zero-filled tail) end the read */
    const char *bad = n < 0           ? "cut field key"
                      : key >> 3 == 0 ? "field number 0 (zero-filled data?)"
                                      : NULL;
    int wire = (int)(key & 7);
    if (!bad) {
      s->p += n;
      if (wire == 2 || wire == 0) {
        int m = fmt_perfetto_varint(s, &len);
        bad = m <= 0 ? "cut field length" : NULL;
        s->p += m > 0 ? m : 0;
        if (wire == 0)
          len = 0; /* a varint field: consumed */
      } else if (wire == 1 || wire == 5) {
        len = wire == 1 ? 8 : 4;
      } else {
        bad = "invalid wire type";
      }
    }
    if (!bad && len > FMT_PERFETTO_MAX_PACKET)
      bad = "frame longer than the largest packet accepted";
    if (!bad && !fmt_perfetto_need(s, len))
      bad = "truncated packet";
    if (bad) {
      *cause = xasprintf("offset %" PRIu64 ": %s (key 0x%" PRIx64
                         ", length %" PRIu64 ")%s%s",
                         at, bad, n > 0 ? key : 0, len, s->err ? ": " : "",
                         s->err ? s->err : "");
      return -EPIPE;
    }
    if ((key >> 3) != 1 || wire != 2) {
      s->p += len; /* another field of Trace: not ours */
      continue;
    }
    r->st->packets++;
    const uint8_t *data = s->p;
    s->p += len;
    Perfetto__Protos__TracePacket *p =
        fmt_perfetto_unpack(r, w, &alloc, data, (size_t)len);
    if (!p)
      fmt_perfetto_state_warn(r,
                              "packet of %" PRIu64 " bytes does not decode: "
                              "skipped",
                              len);
    else
      fmt_perfetto_packet(r, p);
    arena_reset(a);
    if (r->rc)
      return r->rc;
  }
}

int fmt_perfetto_read(const char *path, const struct fmt_perfetto_cb *cb,
                      struct fmt_perfetto_stats *st, char **cause) {
  struct fmt_perfetto_stats dummy;
  if (!st)
    st = &dummy;
  memset(st, 0, sizeof *st);
  struct jsrc s;
  int rc = jsrc_open(&s, path, 0, cause);
  if (rc < 0)
    return rc;
  struct fmt_perfetto r = {.cb = cb,
                           .st = st,
                           .trace_clock = FMT_PERFETTO_BOOTTIME,
                           .max_ts = INT64_MIN};
  struct arena a = {0};
  struct fmt_perfetto_wire *w = fmt_perfetto_wire_new(&a);
  char *why = NULL;
  rc = fmt_perfetto_stream(&r, &s, w, &a, &why);
  if (rc >= 0 && s.err) /* gzip ended early between two frames */
    why = xasprintf("offset %" PRIu64 ": %s", jsrc_off(&s, s.p), s.err);
  if (why && rc == 0)
    rc = -EPIPE;
  st->bytes = jsrc_off(&s, s.p);
  if (rc <= 0) /* the slices still open are reported, even after an error */
    fmt_perfetto_event_finish(&r);
  if (rc == 0 && r.rc)
    rc = r.rc;
  if (why)
    *cause = xasprintf("%s: %s", path, why);
  free(why);
  fmt_perfetto_state_map_clear(&r.tracks, fmt_perfetto_track_free);
  fmt_perfetto_state_map_clear(&r.seqs, fmt_perfetto_seq_free);
  fmt_perfetto_state_map_clear(&r.flowgen, NULL);
  free(r.clocks);
  free(r.flows);
  sbuf_free(&r.args);
  sbuf_free(&r.cat);
  sbuf_free(&r.name);
  sbuf_free(&r.scratch);
  sbuf_free(&r.unpacked[0]);
  sbuf_free(&r.unpacked[1]);
  arena_free(&a);
  fmt_perfetto_wire_free(w);
  jsrc_close(&s);
  return rc;
}
