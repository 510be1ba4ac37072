/* fmt_perfetto_event.c -- TrackEvents into slices, flows and counter
 * samples (see fmt_perfetto_priv.h).
 *
 * Each track keeps a stack of the slices not yet reported: begun ones
 * (TYPE_SLICE_BEGIN, legacy B/b/S) until their end, and complete ones
 * (legacy X) until a later event of the track starts after their end, so
 * that legacy v1 flow events (s/t and f with bind_to_enclosing) can be
 * bound to the deepest slice enclosing them, and f events to the next
 * slice of their track.  A slice is reported when it leaves the stack:
 * enclosing slices after the ones they contain, as Chrome traces have
 * them.
 */
#include "fmt_perfetto_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMT_PERFETTO_EVENT_PENDING 4096 /* 'f' flows waiting per track */

/* ------------------------------------------------------------ flows */

/* Adds flow id to r->flows: an id used again after a flow that ended
 * (terminating) gets a new value per generation. */
static void fmt_perfetto_event_flow(struct fmt_perfetto *r, uint64_t id,
                                    bool terminating) {
  uintptr_t gen = (uintptr_t)fmt_perfetto_state_map_get(&r->flowgen, id);
  uint64_t out =
      gen ? util_hash(&id, sizeof id) ^ (uint64_t)gen * 0x9E3779B97F4A7C15ull
          : id;
  if (r->nflows == r->capflows) {
    r->capflows = r->capflows ? r->capflows * 2 : 16;
    r->flows = xrealloc(r->flows, sizeof *r->flows * r->capflows);
  }
  r->flows[r->nflows++] = out;
  if (!terminating)
    return;
  if (!gen && r->flowgen.n >= FMT_PERFETTO_MAX_TRACKS) {
    if (!r->warned_flowgen)
      fmt_perfetto_state_warn(r,
                              "more than %u terminated flow ids: later reuses "
                              "of an id join its earlier flow",
                              FMT_PERFETTO_MAX_TRACKS);
    r->warned_flowgen = true;
    return;
  }
  *fmt_perfetto_state_map_slot(&r->flowgen, id) = (void *)(gen + 1);
}

/* A v1 flow id: scoped by category and name, as legacy flows are. */
static uint64_t fmt_perfetto_event_v1(struct fmt_perfetto *r, const char *cat,
                                      const char *name, uint64_t id) {
  sbuf_reset(&r->scratch);
  sbuf_printf(&r->scratch, "v1\x1f%s\x1f%s\x1f%" PRIu64, cat ? cat : "",
              name ? name : "", id);
  return util_hash(r->scratch.s, r->scratch.len);
}

/* Moves r->flows (and a track's pending 'f' flows when take_pending) into
 * a slice. */
static void fmt_perfetto_event_take(struct fmt_perfetto_open *o,
                                    struct fmt_perfetto *r,
                                    struct fmt_perfetto_trk *t,
                                    bool take_pending) {
  size_t n = r->nflows + (take_pending ? t->npending : 0);
  if (!n)
    return;
  o->flows = xrealloc(o->flows, sizeof *o->flows * (o->nflows + n));
  memcpy(o->flows + o->nflows, r->flows, sizeof *r->flows * r->nflows);
  o->nflows += r->nflows;
  if (take_pending && t->npending) {
    memcpy(o->flows + o->nflows, t->pending, sizeof *t->pending * t->npending);
    o->nflows += t->npending;
    free(t->pending);
    t->pending = NULL;
    t->npending = 0;
  }
  r->nflows = 0;
}

/* ------------------------------------------------------------ slices */

/* A slice that owns nothing yet (the other fields are set by
 * fmt_perfetto_event_fill; no memset: it costs more than the event). */
static void fmt_perfetto_event_blank(struct fmt_perfetto_open *o) {
  o->name = o->cat = o->args = o->text = NULL;
  o->args_len = 0;
  o->packed = false;
  o->flows = NULL;
  o->nflows = 0;
}

static void fmt_perfetto_event_clear(struct fmt_perfetto_open *o) {
  free(o->text);
  free(o->flows);
  fmt_perfetto_event_blank(o);
}

/* Reports a slice (dur < 0: incomplete, up to the last timestamp). */
static void fmt_perfetto_event_emit(struct fmt_perfetto *r,
                                    struct fmt_perfetto_trk *t,
                                    const struct fmt_perfetto_open *o,
                                    int64_t dur, int instant) {
  fmt_perfetto_state_track_resolve(r, t);
  int incomplete = dur < 0;
  if (incomplete)
    dur = r->max_ts > o->ts ? r->max_ts - o->ts : 0;
  struct fmt_perfetto_slice s = {
      .track = &t->pub,
      .name = o->name ? o->name : "",
      .cat = o->cat,
      .ts_ns = o->ts,
      .dur_ns = dur > 0 ? dur : 0,
      .instant = instant,
      .incomplete = incomplete,
      .pid = o->pid,
      .tid = o->tid,
      .args_json = o->packed ? NULL : o->args,
      .args_packed = o->packed ? (const uint8_t *)o->args : NULL,
      .args_packed_len = o->packed ? o->args_len : 0,
      .flow_ids = o->flows,
      .n_flow_ids = o->nflows,
      .sequence = o->seq,
      .offset = o->offset};
  if (r->cb->slice && !r->rc)
    r->rc = r->cb->slice(r->cb->ud, &s);
}

/* Reports and drops the complete slices on top of a track's stack that
 * end at or before ts. */
static void fmt_perfetto_event_expire(struct fmt_perfetto *r,
                                      struct fmt_perfetto_trk *t, int64_t ts) {
  while (t->depth && t->stack[t->depth - 1].end >= 0 &&
         t->stack[t->depth - 1].end <= ts) {
    struct fmt_perfetto_open *o = &t->stack[--t->depth];
    fmt_perfetto_event_emit(r, t, o, o->end - o->ts, 0);
    fmt_perfetto_event_clear(o);
  }
}

/* Pushes a slice; returns it, or NULL (warned) past the depth limit. */
static struct fmt_perfetto_open *
fmt_perfetto_event_push(struct fmt_perfetto *r, struct fmt_perfetto_trk *t) {
  if (t->depth >= FMT_PERFETTO_MAX_DEPTH) {
    fmt_perfetto_state_warn(
        r, "more than %u open slices on track %" PRIu64 ": event skipped",
        FMT_PERFETTO_MAX_DEPTH, t->pub.uuid);
    r->nflows = 0;
    return NULL;
  }
  if (t->depth == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 8;
    t->stack = xrealloc(t->stack, sizeof *t->stack * t->cap);
  }
  struct fmt_perfetto_open *o = &t->stack[t->depth++];
  fmt_perfetto_event_blank(o);
  return o;
}

/* The event being read, its text resolved. */
struct fmt_perfetto_event_ctx {
  struct fmt_perfetto_seq *q;
  struct fmt_perfetto_trk *t;
  const char *name, *cat;
  int64_t ts, pid, tid;
};

/* Copies a text (NULL allowed) of n bytes to *at, advancing it. */
static const char *fmt_perfetto_event_copy(char **at, const char *s, size_t n) {
  if (!s)
    return NULL;
  char *d = memcpy(*at, s, n);
  d[n] = 0;
  *at += n + 1;
  return d;
}

/* Sets the name, categories and args of a slice (each NULL or a text;
 * args of na bytes, packed or not; they may point into its current texts)
 * to copies in one new block. */
static void fmt_perfetto_event_texts(struct fmt_perfetto_open *o,
                                     const char *name, const char *cat,
                                     const char *args, size_t na, bool packed) {
  size_t nn = name ? strlen(name) : 0, nc = cat ? strlen(cat) : 0;
  char *t = xmalloc(nn + nc + na + 3), *at = t;
  o->name = fmt_perfetto_event_copy(&at, name, nn);
  o->cat = fmt_perfetto_event_copy(&at, cat, nc);
  o->args = fmt_perfetto_event_copy(&at, args, na);
  o->args_len = na;
  o->packed = packed;
  free(o->text);
  o->text = t;
}

/* Args of n bytes as JSON (NULL when none): the text itself, or packed
 * args written as JSON in b. */
static const char *fmt_perfetto_event_unpacked(struct sbuf *b, const char *args,
                                               size_t n, bool packed) {
  if (!packed)
    return args;
  sbuf_reset(b);
  fmt_perfetto_args_json(b, (const uint8_t *)args, n);
  return b->len ? b->s : NULL;
}

static void fmt_perfetto_event_fill(struct fmt_perfetto *r,
                                    struct fmt_perfetto_open *o,
                                    const struct fmt_perfetto_event_ctx *c) {
  fmt_perfetto_event_texts(o, c->name, c->cat, r->args.len ? r->args.s : NULL,
                           r->args.len, r->args_packed);
  o->ts = c->ts;
  o->end = -1;
  o->pid = c->pid;
  o->tid = c->tid;
  o->seq = c->q->id;
  o->offset = r->offset;
}

/* An end event: reports the innermost begun slice (and the complete ones
 * above it), with the end's args merged and its flows added. */
static void fmt_perfetto_event_end(struct fmt_perfetto *r,
                                   const struct fmt_perfetto_event_ctx *c) {
  struct fmt_perfetto_trk *t = c->t;
  size_t k = t->depth;
  while (k && t->stack[k - 1].end >= 0)
    k--;
  if (!k) {
    fmt_perfetto_state_warn(r,
                            "slice end at %" PRId64 " on track %" PRIu64
                            " without a begin: skipped",
                            c->ts, t->pub.uuid);
    r->nflows = 0;
    return;
  }
  while (t->depth > k) {
    struct fmt_perfetto_open *o = &t->stack[--t->depth];
    fmt_perfetto_event_emit(r, t, o, o->end - o->ts, 0);
    fmt_perfetto_event_clear(o);
  }
  struct fmt_perfetto_open *b = &t->stack[--t->depth];
  if (r->args.len) {
    char *merged = fmt_perfetto_args_merge(
        fmt_perfetto_event_unpacked(&r->unpacked[0], b->args, b->args_len,
                                    b->packed),
        fmt_perfetto_event_unpacked(&r->unpacked[1], r->args.s, r->args.len,
                                    r->args_packed));
    fmt_perfetto_event_texts(b, b->name ? b->name : c->name, b->cat, merged,
                             merged ? strlen(merged) : 0, false);
    free(merged);
  } else if (!b->name && c->name) {
    fmt_perfetto_event_texts(b, c->name, b->cat, b->args, b->args_len,
                             b->packed);
  }
  fmt_perfetto_event_take(b, r, t, false);
  fmt_perfetto_event_emit(r, t, b, c->ts >= b->ts ? c->ts - b->ts : 0, 0);
  fmt_perfetto_event_clear(b);
}

/* A legacy v1 flow event: bound now to the deepest enclosing slice, or
 * (f without bind_to_enclosing) to the next slice of the track. */
static void fmt_perfetto_event_v1_flow(
    struct fmt_perfetto *r, const struct fmt_perfetto_event_ctx *c,
    const Perfetto__Protos__TrackEvent__LegacyEvent *lg) {
  struct fmt_perfetto_trk *t = c->t;
  int ph = lg->phase;
  uint64_t raw =
      lg->id_case == PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__ID_UNSCOPED_ID
          ? lg->unscoped_id
      : lg->id_case == PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__ID_GLOBAL_ID
          ? lg->global_id
          : lg->local_id;
  r->nflows = 0;
  fmt_perfetto_event_flow(r, fmt_perfetto_event_v1(r, c->cat, c->name, raw),
                          ph == 'f');
  uint64_t id = r->flows[0];
  r->nflows = 0;
  if (ph == 'f' && !lg->bind_to_enclosing) {
    if (t->npending >= FMT_PERFETTO_EVENT_PENDING) {
      fmt_perfetto_state_warn(
          r,
          "more than %u flow ends wait for a slice on track "
          "%" PRIu64 ": flow end skipped",
          FMT_PERFETTO_EVENT_PENDING, t->pub.uuid);
      return;
    }
    t->pending = xrealloc(t->pending, sizeof *t->pending * (t->npending + 1));
    t->pending[t->npending++] = id;
    return;
  }
  fmt_perfetto_event_expire(r, t, c->ts);
  for (size_t k = t->depth; k-- > 0;) {
    struct fmt_perfetto_open *o = &t->stack[k];
    if (o->ts <= c->ts && (o->end < 0 || c->ts < o->end)) {
      o->flows = xrealloc(o->flows, sizeof *o->flows * (o->nflows + 1));
      o->flows[o->nflows++] = id;
      return;
    }
  }
  fmt_perfetto_state_warn(
      r, "flow event '%c' at %" PRId64 " has no enclosing slice", ph, c->ts);
}

/* ts held within +-FMT_PERFETTO_TS_LIMIT: the difference of two bounded
 * timestamps (a slice's end minus its start) and a bounded timestamp plus
 * such a difference then fit in an int64, here and in every reader. */
static int64_t fmt_perfetto_event_bound(int64_t ts) {
  return ts > FMT_PERFETTO_TS_LIMIT    ? FMT_PERFETTO_TS_LIMIT
         : ts < -FMT_PERFETTO_TS_LIMIT ? -FMT_PERFETTO_TS_LIMIT
                                       : ts;
}

/* The end of a legacy complete event of us microseconds at ts (bounded). */
static int64_t fmt_perfetto_event_x_end(int64_t ts, int64_t us) {
  int64_t ns, end;
  if (__builtin_mul_overflow(us, 1000, &ns) ||
      __builtin_add_overflow(ts, ns, &end))
    return FMT_PERFETTO_TS_LIMIT;
  return fmt_perfetto_event_bound(end);
}

/* ------------------------------------------------------------ counters */

/* Reports one sample: the track's value summed per sequence when it is
 * incremental and scaled by its unit multiplier unless raw. */
static void fmt_perfetto_event_sample(struct fmt_perfetto *r,
                                      struct fmt_perfetto_seq *q,
                                      struct fmt_perfetto_trk *t,
                                      const char *series, int64_t ts, double v,
                                      bool raw) {
  if (!raw && t->pub.incremental) {
    void **slot = fmt_perfetto_state_map_slot(&q->counters, t->pub.uuid);
    if (!*slot)
      *slot = xcalloc(1, sizeof(double));
    v = *(double *)*slot += v;
  }
  if (!raw)
    v *= (double)t->pub.unit_multiplier;
  char fallback[40];
  const char *name = series;
  if (!name)
    name = t->pub.name ? t->pub.name : t->pub.counter_name;
  if (!name) {
    snprintf(fallback, sizeof fallback, "counter %" PRIu64, t->pub.uuid);
    name = fallback;
  }
  fmt_perfetto_state_track_resolve(r, t);
  struct fmt_perfetto_counter s = {.track = &t->pub,
                                   .name = name,
                                   .unit = raw ? NULL : t->pub.unit,
                                   .ts_ns = ts,
                                   .value = v,
                                   .offset = r->offset};
  if (r->cb->counter && !r->rc)
    r->rc = r->cb->counter(r->cb->ud, &s);
}

/* Extra counter value i of an event, on the i-th of its n counter tracks
 * u (from the event or the sequence's defaults). */
static void fmt_perfetto_event_extra_one(struct fmt_perfetto *r,
                                         const struct fmt_perfetto_event_ctx *c,
                                         const uint64_t *u, size_t n, size_t i,
                                         double v) {
  struct fmt_perfetto_trk *t = i < n ? fmt_perfetto_state_track(r, u[i]) : NULL;
  if (t)
    fmt_perfetto_event_sample(r, c->q, t, NULL, c->ts, v, false);
  else
    fmt_perfetto_state_warn(r, "extra counter value %zu has no counter track",
                            i);
}

/* The extra counter values of an event (and the legacy thread time and
 * instruction count). */
static void fmt_perfetto_event_extra(struct fmt_perfetto *r,
                                     const struct fmt_perfetto_event_ctx *c,
                                     const Perfetto__Protos__TrackEvent *e) {
  struct fmt_perfetto_seq *q = c->q;
  bool own = e->n_extra_counter_track_uuids > 0;
  for (size_t i = 0; i < e->n_extra_counter_values; i++)
    fmt_perfetto_event_extra_one(
        r, c, own ? e->extra_counter_track_uuids : q->extra,
        own ? e->n_extra_counter_track_uuids : q->nextra, i,
        (double)e->extra_counter_values[i]);
  own = e->n_extra_double_counter_track_uuids > 0;
  for (size_t i = 0; i < e->n_extra_double_counter_values; i++)
    fmt_perfetto_event_extra_one(
        r, c, own ? e->extra_double_counter_track_uuids : q->extra_double,
        own ? e->n_extra_double_counter_track_uuids : q->nextra_double, i,
        e->extra_double_counter_values[i]);
  if (e->thread_time_case) {
    bool abs =
        e->thread_time_case ==
        PERFETTO__PROTOS__TRACK_EVENT__THREAD_TIME_THREAD_TIME_ABSOLUTE_US;
    int64_t us = abs ? e->thread_time_absolute_us : e->thread_time_delta_us;
    q->thread_time_ns =
        fmt_perfetto_wrap(abs ? 0 : q->thread_time_ns, us, 1000);
    fmt_perfetto_event_sample(r, q, c->t, "thread_time", c->ts,
                              (double)q->thread_time_ns, true);
  }
  if (e->thread_instruction_count_case) {
    bool abs =
        e->thread_instruction_count_case ==
        PERFETTO__PROTOS__TRACK_EVENT__THREAD_INSTRUCTION_COUNT_THREAD_INSTRUCTION_COUNT_ABSOLUTE;
    int64_t v = abs ? e->thread_instruction_count_absolute
                    : e->thread_instruction_count_delta;
    q->instructions = fmt_perfetto_wrap(abs ? 0 : q->instructions, v, 1);
    fmt_perfetto_event_sample(r, q, c->t, "thread_instruction_count", c->ts,
                              (double)q->instructions, true);
  }
}

/* ------------------------------------------------------------ event */

/* The kind of an event: B, E, X, I (instant), C (counter), s/t/f (v1
 * flows), b/e/n (legacy async on their own track); 0 when unusable. */
static int fmt_perfetto_event_kind(const Perfetto__Protos__TrackEvent *e) {
  static const char types[] = {0, 'B', 'E', 'I', 'C'};
  if (e->has_type && e->type > 0 && e->type < 5)
    return types[e->type];
  int ph = e->legacy_event && e->legacy_event->has_phase
               ? e->legacy_event->phase
               : 0;
  switch (ph) {
  case 'B':
  case 'E':
  case 'X':
  case 's':
  case 't':
  case 'f':
  case 'b':
  case 'e':
  case 'n':
    return ph;
  case 'I':
  case 'i':
  case 'R':
    return 'I';
  case 'S':
    return 'b';
  case 'F':
    return 'e';
  case 'T':
  case 'p':
    return 'n';
  default:
    return 0;
  }
}

/* The track of a legacy async event: one per (category, scope, id, and
 * the process for local ids), named after its first event. */
static uint64_t
fmt_perfetto_event_async(struct fmt_perfetto *r,
                         const struct fmt_perfetto_event_ctx *c,
                         const Perfetto__Protos__TrackEvent__LegacyEvent *lg) {
  bool local =
      lg->id_case == PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__ID_LOCAL_ID;
  uint64_t id =
      lg->id_case == PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__ID_GLOBAL_ID
          ? lg->global_id
      : local ? lg->local_id
              : lg->unscoped_id;
  sbuf_reset(&r->scratch);
  sbuf_printf(&r->scratch, "async\x1f%s\x1f%s\x1f%" PRIu64 "\x1f%" PRId64,
              c->cat ? c->cat : "", lg->id_scope ? lg->id_scope : "", id,
              local ? c->pid : -1);
  return util_hash(r->scratch.s, r->scratch.len) | 1ull << 63;
}

static const char *
fmt_perfetto_event_cat(struct fmt_perfetto *r, const struct fmt_perfetto_seq *q,
                       const Perfetto__Protos__TrackEvent *e) {
  sbuf_reset(&r->cat);
  for (size_t i = 0; i < e->n_categories; i++) {
    if (r->cat.len)
      sbuf_addc(&r->cat, ',');
    sbuf_add_utf8(&r->cat, e->categories[i], strlen(e->categories[i]));
  }
  for (size_t i = 0; i < e->n_category_iids; i++) {
    const char *s = fmt_perfetto_state_interned(q, FMT_PERFETTO_IID_CATEGORY,
                                                e->category_iids[i]);
    if (r->cat.len)
      sbuf_addc(&r->cat, ',');
    if (s)
      sbuf_adds(&r->cat, s);
    else
      sbuf_printf(&r->cat, "iid:%" PRIu64, e->category_iids[i]);
  }
  return r->cat.len ? r->cat.s : NULL;
}

void fmt_perfetto_event(struct fmt_perfetto *r, struct fmt_perfetto_seq *q,
                        const Perfetto__Protos__TrackEvent *e, int64_t ts) {
  const Perfetto__Protos__TrackEvent__LegacyEvent *lg = e->legacy_event;
  if (e->timestamp_case ==
      PERFETTO__PROTOS__TRACK_EVENT__TIMESTAMP_TIMESTAMP_ABSOLUTE_US)
    ts = fmt_perfetto_wrap(0, e->timestamp_absolute_us, 1000);
  else if (e->timestamp_case ==
           PERFETTO__PROTOS__TRACK_EVENT__TIMESTAMP_TIMESTAMP_DELTA_US) {
    q->ref_us = fmt_perfetto_wrap(q->ref_us, e->timestamp_delta_us, 1);
    ts = fmt_perfetto_wrap(0, q->ref_us, 1000);
  }
  ts = fmt_perfetto_event_bound(ts);
  if (ts > r->max_ts)
    r->max_ts = ts;
  int kind = fmt_perfetto_event_kind(e);
  if (!kind) {
    fmt_perfetto_state_warn(r,
                            "track event of type %d, legacy phase %d: skipped",
                            (int)e->type, lg && lg->has_phase ? lg->phase : 0);
    return;
  }
  struct fmt_perfetto_event_ctx c = {.q = q, .ts = ts};
  char iid[40];
  uint64_t name_iid =
      e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID
          ? e->name_iid
      : lg && lg->has_name_iid ? lg->name_iid
                               : 0;
  if (e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME)
    c.name = fmt_perfetto_state_clean(&r->name, e->name, strlen(e->name));
  else if (name_iid && !(c.name = fmt_perfetto_state_interned(
                             q, FMT_PERFETTO_IID_EVENT_NAME, name_iid))) {
    snprintf(iid, sizeof iid, "iid:%" PRIu64, name_iid);
    c.name = iid;
  }
  c.cat = fmt_perfetto_event_cat(r, q, e);
  uint64_t uuid = e->has_track_uuid ? e->track_uuid
                  : q->has_track    ? q->track_uuid
                  : q->has_thread   ? q->thread_uuid
                                    : FMT_PERFETTO_DEFAULT_TRACK;
  if (!q->trk || q->trk->pub.uuid != uuid)
    q->trk = fmt_perfetto_state_track(r, uuid);
  if (!(c.t = q->trk))
    return;
  fmt_perfetto_state_track_resolve(r, c.t);
  c.pid = lg && lg->has_pid_override ? lg->pid_override : c.t->pub.pid;
  c.tid = lg && lg->has_tid_override ? lg->tid_override : c.t->pub.tid;
  if (kind == 'b' || kind == 'e' || kind == 'n') {
    if (!(c.t =
              fmt_perfetto_state_track(r, fmt_perfetto_event_async(r, &c, lg))))
      return;
    kind = kind == 'b' ? 'B' : kind == 'e' ? 'E' : 'I';
  }
  struct fmt_perfetto_trk *t = c.t;
  fmt_perfetto_event_extra(r, &c, e);
  if (kind == 'C') {
    if (e->counter_value_field_case ==
        PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD__NOT_SET)
      fmt_perfetto_state_warn(r, "counter event without a value: skipped");
    else
      fmt_perfetto_event_sample(
          r, q, t, NULL, ts,
          e->counter_value_field_case ==
                  PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE
              ? (double)e->counter_value
              : e->double_counter_value,
          false);
    return;
  }
  if (kind == 's' || kind == 't' || kind == 'f') {
    fmt_perfetto_event_v1_flow(r, &c, lg);
    return;
  }
  /* a track with no name of its own is named after its first event */
  if (!t->pub.name && c.name && !t->pub.is_process && !t->pub.is_thread &&
      !t->pub.is_counter) {
    t->pub.name = t->name = xstrdup(c.name);
    r->tgen++;
    fmt_perfetto_state_track_report(r, t);
  }
  fmt_perfetto_args(r, q, e);
  r->nflows = 0;
  for (size_t i = 0; i < e->n_flow_ids; i++)
    fmt_perfetto_event_flow(r, e->flow_ids[i], false);
  for (size_t i = 0; i < e->n_flow_ids_old; i++)
    fmt_perfetto_event_flow(r, e->flow_ids_old[i], false);
  for (size_t i = 0; i < e->n_terminating_flow_ids; i++)
    fmt_perfetto_event_flow(r, e->terminating_flow_ids[i], true);
  for (size_t i = 0; i < e->n_terminating_flow_ids_old; i++)
    fmt_perfetto_event_flow(r, e->terminating_flow_ids_old[i], true);
  if (lg && lg->has_bind_id) {
    uint64_t key[2] = {0x62696e64 /* "bind" */, lg->bind_id};
    fmt_perfetto_event_flow(
        r, util_hash(key, sizeof key),
        lg->flow_direction ==
            PERFETTO__PROTOS__TRACK_EVENT__LEGACY_EVENT__FLOW_DIRECTION__FLOW_IN);
  }
  if (kind == 'E') {
    fmt_perfetto_event_end(r, &c);
    return;
  }
  fmt_perfetto_event_expire(r, t, ts);
  if (kind == 'I') {
    struct fmt_perfetto_open o;
    fmt_perfetto_event_blank(&o);
    fmt_perfetto_event_fill(r, &o, &c);
    fmt_perfetto_event_take(&o, r, t, true);
    fmt_perfetto_event_emit(r, t, &o, 0, 1);
    fmt_perfetto_event_clear(&o);
    return;
  }
  struct fmt_perfetto_open *o = fmt_perfetto_event_push(r, t);
  if (!o)
    return;
  fmt_perfetto_event_fill(r, o, &c);
  fmt_perfetto_event_take(o, r, t, true);
  if (kind == 'X') {
    int64_t us =
        lg->has_duration_us && lg->duration_us > 0 ? lg->duration_us : 0;
    o->end = fmt_perfetto_event_x_end(ts, us);
  }
}

void fmt_perfetto_event_finish(struct fmt_perfetto *r) {
  for (size_t i = 0; i < r->tracks.cap; i++) {
    struct fmt_perfetto_trk *t = r->tracks.vals[i];
    if (!t)
      continue;
    while (t->depth) {
      struct fmt_perfetto_open *o = &t->stack[--t->depth];
      fmt_perfetto_event_emit(r, t, o, o->end >= 0 ? o->end - o->ts : -1, 0);
      fmt_perfetto_event_clear(o);
    }
    if (t->npending) {
      r->offset = 0;
      fmt_perfetto_state_warn(
          r, "%zu flow end(s) on track %" PRIu64 " found no slice after them",
          t->npending, t->pub.uuid);
    }
  }
}

void fmt_perfetto_event_free(struct fmt_perfetto_trk *t) {
  for (size_t k = 0; k < t->depth; k++)
    fmt_perfetto_event_clear(&t->stack[k]);
  free(t->stack);
  free(t->pending);
}
