/* export_pftrace.c -- the Perfetto protobuf export (see export_pftrace.h).
 */
#include "export_pftrace.h"
#include "export_names.h"
#include "query_priv.h"

#include "perfetto_trace.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The one packet sequence of the export. */
#define EXPORT_PFTRACE_SEQ 1
/* Track uuids: processes in their own range, slice track k's thread track
 * at (k + 1) << 24 and its overflow track for lane l at that | (l + 1),
 * series i of counter track k in another range. */
#define EXPORT_PFTRACE_PROC (UINT64_C(1) << 62)
#define EXPORT_PFTRACE_COUNTER (UINT64_C(1) << 61)
#define EXPORT_PFTRACE_LANE_BITS 24
#define EXPORT_PFTRACE_LANE_SLOTS ((INT64_C(1) << EXPORT_PFTRACE_LANE_BITS) - 1)

/* An interning table: strings to iids (1, 2, ...), open addressing. */
struct export_pftrace_tab {
  char **s;
  uint64_t *iid;
  size_t cap, n;
};

struct export_pftrace {
  struct export_pftrace_tab names, cats, keys; /* keys: annotation names */
  bool started; /* the first packet (state cleared) is written */
  sqlite3 *db;
  int64_t start, end;
  const struct tracks_row *r; /* the cursor's tracks */
  size_t n;
  const int64_t *procs;
  struct query_rows c; /* the system rows (their counter tracks) */
  sqlite3_stmt *s;     /* counter samples, or NULL */
  size_t k;            /* the row of c of the last sample */
  /* the slice track being written: its thread track, the ends of the
   * slices open on it (innermost last) and its lanes whose overflow track
   * is declared */
  const struct tracks_row *cur;
  uint64_t tuuid;
  int64_t *open;
  size_t nopen, cap_open;
  unsigned char *declared;
  size_t cap_declared;
};

int export_pftrace_open(sqlite3 *db, int64_t start, int64_t end,
                        const struct tracks_row *r, size_t n,
                        const int64_t *procs, struct export_pftrace **out,
                        struct query_err *e) {
  struct export_pftrace *p = xcalloc(1, sizeof *p);
  int rc = query_tracks_rows_load(db, -1, &p->c, e);
  if (rc < 0) {
    export_pftrace_free(p);
    return rc;
  }
  p->db = db;
  p->start = start;
  p->end = end;
  p->r = r;
  p->n = n;
  p->procs = procs;
  *out = p;
  return 0;
}

static void export_pftrace_tab_free(struct export_pftrace_tab *t) {
  for (size_t i = 0; i < t->cap; i++)
    free(t->s[i]);
  free(t->s);
  free(t->iid);
}

void export_pftrace_free(struct export_pftrace *p) {
  if (!p)
    return;
  export_pftrace_tab_free(&p->names);
  export_pftrace_tab_free(&p->cats);
  export_pftrace_tab_free(&p->keys);
  if (p->s)
    sqlite3_reset(p->s);
  query_tracks_rows_free(&p->c);
  free(p->open);
  free(p->declared);
  free(p);
}

/* The iid of s in t; *fresh is set when s is new (to be interned in the
 * packet that uses it first). */
static uint64_t export_pftrace_iid(struct export_pftrace_tab *t, const char *s,
                                   bool *fresh) {
  if (2 * (t->n + 1) > t->cap) {
    struct export_pftrace_tab g = {0};
    g.cap = t->cap ? 2 * t->cap : 256;
    g.s = xcalloc(g.cap, sizeof *g.s);
    g.iid = xcalloc(g.cap, sizeof *g.iid);
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->s[i])
        continue;
      size_t h = util_hash(t->s[i], strlen(t->s[i])) & (g.cap - 1);
      while (g.s[h])
        h = (h + 1) & (g.cap - 1);
      g.s[h] = t->s[i];
      g.iid[h] = t->iid[i];
    }
    g.n = t->n;
    free(t->s);
    free(t->iid);
    *t = g;
  }
  size_t h = util_hash(s, strlen(s)) & (t->cap - 1);
  while (t->s[h] && strcmp(t->s[h], s) != 0)
    h = (h + 1) & (t->cap - 1);
  *fresh = !t->s[h];
  if (*fresh) {
    t->s[h] = xstrdup(s);
    t->iid[h] = ++t->n;
  }
  return t->iid[h];
}

/* Appends packet pk as field 1 of Trace: tag, varint length, bytes. */
static void export_pftrace_put(struct export_pftrace *p,
                               Perfetto__Protos__TracePacket *pk,
                               struct sbuf *out) {
  pk->optional_trusted_packet_sequence_id_case =
      PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
  pk->trusted_packet_sequence_id = EXPORT_PFTRACE_SEQ;
  pk->has_sequence_flags = 1;
  pk->sequence_flags =
      p->started
          ? PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE
          : PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
  p->started = true;
  size_t len = protobuf_c_message_get_packed_size(&pk->base);
  unsigned char head[11], *q = head;
  *q++ = 0x0a;
  for (size_t v = len;; v >>= 7) {
    *q++ = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80)
      break;
  }
  sbuf_add(out, (const char *)head, (size_t)(q - head));
  unsigned char *buf = xmalloc(len ? len : 1);
  protobuf_c_message_pack(&pk->base, buf);
  sbuf_add(out, (const char *)buf, len);
  free(buf);
}

/* The uuid of series i of counter track k. */
static uint64_t export_pftrace_counter_uuid(size_t k, int64_t i) {
  return EXPORT_PFTRACE_COUNTER |
         (uint64_t)(k + 1) << EXPORT_PFTRACE_LANE_BITS | (uint64_t)i;
}

/* Appends the TrackDescriptor packet d. */
static void export_pftrace_track(struct export_pftrace *p,
                                 Perfetto__Protos__TrackDescriptor *d,
                                 struct sbuf *out) {
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
  pk.track_descriptor = d;
  export_pftrace_put(p, &pk, out);
}

/* Appends the counter TrackDescriptors of row k of p->c: one per series,
 * named as the timeline names the track, then the series. */
static void export_pftrace_counter_tracks(struct export_pftrace *p, size_t k,
                                          struct sbuf *out) {
  const struct tracks_row *t = &p->c.r[k];
  size_t ns = json_array_size(t->series);
  char *base = tracks_name(t, TRACKS_DEFAULT);
  for (size_t i = 0; i < (ns ? ns : 1); i++) {
    Perfetto__Protos__CounterDescriptor cd =
        PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
    Perfetto__Protos__TrackDescriptor d =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    const char *sn = json_string_value(json_array_get(t->series, i));
    char *name = sn ? xasprintf("%s %s", base, sn) : xstrdup(base);
    d.has_uuid = 1;
    d.uuid = export_pftrace_counter_uuid(k, (int64_t)i);
    d.static_or_dynamic_name_case =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
    d.name = name;
    d.counter = &cd;
    export_pftrace_track(p, &d, out);
    free(name);
  }
  free(base);
}

void export_pftrace_head(struct export_pftrace *p, struct sbuf *out) {
  const struct tracks_row *r = p->r;
  const int64_t *procs = p->procs;
  for (size_t k = 0; k < p->c.n; k++)
    if (strcmp(p->c.r[k].kind, "counter") == 0)
      export_pftrace_counter_tracks(p, k, out);
  for (size_t k = 0; k < p->n; k++) {
    if (strcmp(r[k].kind, "slices") != 0)
      continue;
    struct sbuf pname = {0}, tname = {0};
    export_names_track(&r[k], &pname, &tname);
    uint64_t puuid = EXPORT_PFTRACE_PROC | (uint64_t)(uint32_t)procs[k];
    uint64_t tuuid = (uint64_t)(k + 1) << EXPORT_PFTRACE_LANE_BITS;
    if (export_names_first(procs, k)) {
      Perfetto__Protos__ProcessDescriptor pd =
          PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
      Perfetto__Protos__TrackDescriptor d =
          PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
      pd.has_pid = 1;
      pd.pid = (int32_t)procs[k];
      pd.process_name = pname.s;
      if (r[k].chrome && r[k].psort != TRACKS_NONE) {
        pd.has_legacy_sort_index = 1;
        pd.legacy_sort_index = (int32_t)r[k].psort;
      }
      d.has_uuid = 1;
      d.uuid = puuid;
      d.process = &pd;
      export_pftrace_track(p, &d, out);
    }
    Perfetto__Protos__ThreadDescriptor td =
        PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
    Perfetto__Protos__TrackDescriptor d =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    td.has_pid = td.has_tid = 1;
    td.pid = (int32_t)procs[k];
    /* a Chrome trace's own tid, but for the negative ones the ingest gives
     * threads named by text: those from the top of the int32 range, where
     * no system's thread ids go (readers take negative tids for none) */
    td.tid = (int32_t)(!r[k].chrome    ? r[k].id
                       : r[k].tid >= 0 ? r[k].tid
                                       : INT32_MAX - r[k].id);
    td.thread_name = tname.s;
    if (r[k].chrome && r[k].tsort != TRACKS_NONE) {
      td.has_legacy_sort_index = 1;
      td.legacy_sort_index = (int32_t)r[k].tsort;
    }
    d.has_uuid = d.has_parent_uuid = 1;
    d.uuid = tuuid;
    d.parent_uuid = puuid;
    d.thread = &td;
    export_pftrace_track(p, &d, out);
    sbuf_free(&pname);
    sbuf_free(&tname);
  }
}

/* Fills a with member key = v of the args, its name interned as iid:
 * scalars as such, objects and arrays as legacy JSON (*json, to free). */
static void export_pftrace_arg(Perfetto__Protos__DebugAnnotation *a,
                               uint64_t iid, json_t *v, char **json) {
  perfetto__protos__debug_annotation__init(a);
  a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
  a->name_iid = iid;
  *json = NULL;
  if (json_is_string(v)) {
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
    a->string_value = (char *)(uintptr_t)json_string_value(v);
  } else if (json_is_integer(v)) {
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
    a->int_value = json_integer_value(v);
  } else if (json_is_real(v)) {
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
    a->double_value = json_real_value(v);
  } else if (json_is_boolean(v)) {
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
    a->bool_value = json_is_true(v);
  } else {
    *json = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE;
    a->legacy_json_value = *json ? *json : (char *)(uintptr_t) "null";
  }
}

/* Appends a SLICE_END packet at ts on track uuid. */
static void export_pftrace_end(struct export_pftrace *p, uint64_t uuid,
                               int64_t ts, struct sbuf *out) {
  Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  te.has_type = te.has_track_uuid = 1;
  te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
  te.track_uuid = uuid;
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.has_timestamp = 1;
  pk.timestamp = (uint64_t)ts;
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  pk.track_event = &te;
  export_pftrace_put(p, &pk, out);
}

/* Ends the slices open on the thread track that end at or before ts. */
static void export_pftrace_close(struct export_pftrace *p, int64_t ts,
                                 struct sbuf *out) {
  while (p->nopen && p->open[p->nopen - 1] <= ts)
    export_pftrace_end(p, p->tuuid, p->open[--p->nopen], out);
}

void export_pftrace_flush(struct export_pftrace *p, struct sbuf *out) {
  export_pftrace_close(p, INT64_MAX, out);
  p->cur = NULL;
}

/* The overflow track of lane `lane` of the current track, declared on
 * first use: a child of the thread track, named as it.  Lanes past
 * EXPORT_PFTRACE_LANE_SLOTS - 1 share the last one. */
static uint64_t export_pftrace_overflow(struct export_pftrace *p, int64_t lane,
                                        struct sbuf *out) {
  int64_t slot = lane < EXPORT_PFTRACE_LANE_SLOTS - 1
                     ? lane
                     : EXPORT_PFTRACE_LANE_SLOTS - 1;
  uint64_t uuid = p->tuuid | (uint64_t)(slot + 1);
  if ((size_t)slot >= p->cap_declared) {
    size_t cap = (size_t)slot + 64;
    p->declared = xrealloc(p->declared, cap);
    memset(p->declared + p->cap_declared, 0, cap - p->cap_declared);
    p->cap_declared = cap;
  }
  if (p->declared[slot])
    return uuid;
  p->declared[slot] = 1;
  struct sbuf pname = {0}, tname = {0};
  export_names_track(p->cur, &pname, &tname);
  Perfetto__Protos__TrackDescriptor c =
      PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
  c.has_uuid = c.has_parent_uuid = 1;
  c.uuid = uuid;
  c.parent_uuid = p->tuuid;
  if (tname.s) {
    c.static_or_dynamic_name_case =
        PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
    c.name = tname.s;
  }
  export_pftrace_track(p, &c, out);
  sbuf_free(&pname);
  sbuf_free(&tname);
  return uuid;
}

/* The track ev's slice goes on: the thread track when it nests in the
 * innermost slice open there (or none is open), else its lane's overflow
 * track (it overlaps a slice without nesting in it).  *nests says which. */
static uint64_t export_pftrace_place(struct export_pftrace *p,
                                     const struct query_export_event *ev,
                                     bool *nests, struct sbuf *out) {
  if (ev->track != p->cur) {
    export_pftrace_flush(p, out);
    p->cur = ev->track;
    p->tuuid = (uint64_t)(ev->track - p->r + 1) << EXPORT_PFTRACE_LANE_BITS;
    if (p->cap_declared)
      memset(p->declared, 0, p->cap_declared);
  }
  export_pftrace_close(p, ev->ts, out);
  *nests = p->nopen == 0 || p->open[p->nopen - 1] >= query_export_end(ev);
  return *nests ? p->tuuid : export_pftrace_overflow(p, ev->lane, out);
}

void export_pftrace_event(struct export_pftrace *p,
                          const struct query_export_event *ev,
                          struct sbuf *out) {
  bool nests;
  uint64_t uuid = export_pftrace_place(p, ev, &nests, out);
  json_t *args = ev->args ? json_loads(ev->args, 0, NULL) : NULL;
  if (args && !json_is_object(args)) {
    json_decref(args);
    args = NULL;
  }
  /* the category: the "cat" the ingest kept first in the args, else the
   * source of a track that is not a Chrome trace's */
  const char *cat = json_string_value(json_object_get(args, "cat"));
  if (!cat && !ev->track->chrome)
    cat = ev->track->source;
  Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
  Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT;
  Perfetto__Protos__EventCategory ec = PERFETTO__PROTOS__EVENT_CATEGORY__INIT;
  Perfetto__Protos__EventName *enp = &en;
  Perfetto__Protos__EventCategory *ecp = &ec;
  bool fresh_name, fresh_cat = false;
  uint64_t cat_iid = 0;
  te.has_type = te.has_track_uuid = 1;
  te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
  te.track_uuid = uuid;
  te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
  te.name_iid = export_pftrace_iid(&p->names, ev->name, &fresh_name);
  if (fresh_name) {
    en.has_iid = 1;
    en.iid = te.name_iid;
    en.name = (char *)(uintptr_t)ev->name;
    in.n_event_names = 1;
    in.event_names = &enp;
  }
  if (cat) {
    cat_iid = export_pftrace_iid(&p->cats, cat, &fresh_cat);
    te.n_category_iids = 1;
    te.category_iids = &cat_iid;
  }
  if (fresh_cat) {
    ec.has_iid = 1;
    ec.iid = cat_iid;
    ec.name = (char *)(uintptr_t)cat;
    in.n_event_categories = 1;
    in.event_categories = &ecp;
  }
  /* flows: every endpoint lists the flow in flow_ids (Perfetto links
   * the events of an id in time order).  terminating_flow_ids is not
   * written: a reader that takes packets in file order (ours) would start
   * a new flow at an endpoint read after the flow's end, and the packets
   * go track by track, not in time order. */
  size_t nf = 0, cap = ev->flow_ends ? strlen(ev->flow_ends) : 0;
  uint64_t *fl = xcalloc(cap + 1, sizeof *fl);
  for (const char *s = ev->flow_ends; s && *s;) {
    char *end;
    unsigned long long id = strtoull(s, &end, 10);
    if (*end != ':' || strspn(end + 1, "01") < 3)
      break;
    fl[nf++] = id;
    s = end + 4 + (end[4] == ',');
  }
  te.n_flow_ids = nf;
  te.flow_ids = fl;
  /* the args but for the category as debug annotations; a Neuron system
   * slice also carries what its track says of it, as the Neuron tools'
   * export does (instance_id, process_id, pcore_idx), so a reader maps it
   * back to the same track */
  const struct tracks_row *tr = ev->track;
  if (!tr->chrome && strcmp(tr->domain, "system") == 0) {
    if (!args)
      args = json_object();
    if (tr->instance_id && !json_object_get(args, "instance_id"))
      json_object_set_new(args, "instance_id", json_string(tr->instance_id));
    if (tr->pid != TRACKS_NONE && !json_object_get(args, "process_id"))
      json_object_set_new(args, "process_id", json_integer(tr->pid));
    if (tr->pcore != TRACKS_NONE && !json_object_get(args, "pcore_idx"))
      json_object_set_new(args, "pcore_idx", json_integer(tr->pcore));
  }
  size_t na = 0, nk = 0, cap_a = json_object_size(args);
  Perfetto__Protos__DebugAnnotation *ann = xcalloc(cap_a + 1, sizeof *ann);
  Perfetto__Protos__DebugAnnotation **annp = xcalloc(cap_a + 1, sizeof *annp);
  Perfetto__Protos__DebugAnnotationName *kn = xcalloc(cap_a + 1, sizeof *kn);
  Perfetto__Protos__DebugAnnotationName **knp = xcalloc(cap_a + 1, sizeof *knp);
  char **json = xcalloc(cap_a + 1, sizeof *json);
  const char *key;
  json_t *v;
  json_object_foreach(args, key, v) {
    if (strcmp(key, "cat") == 0)
      continue;
    bool fresh;
    uint64_t iid = export_pftrace_iid(&p->keys, key, &fresh);
    if (fresh) { /* interned in this packet */
      perfetto__protos__debug_annotation_name__init(&kn[nk]);
      kn[nk].has_iid = 1;
      kn[nk].iid = iid;
      kn[nk].name = (char *)(uintptr_t)key;
      knp[nk] = &kn[nk];
      nk++;
    }
    export_pftrace_arg(&ann[na], iid, v, &json[na]);
    annp[na] = &ann[na];
    na++;
  }
  te.n_debug_annotations = na;
  te.debug_annotations = annp;
  in.n_debug_annotation_names = nk;
  in.debug_annotation_names = knp;
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.has_timestamp = 1;
  pk.timestamp = (uint64_t)ev->ts;
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  pk.track_event = &te;
  if (in.n_event_names || in.n_event_categories || nk)
    pk.interned_data = &in;
  export_pftrace_put(p, &pk, out);
  for (size_t i = 0; i < na; i++)
    free(json[i]);
  free(json);
  free(annp);
  free(ann);
  free(knp);
  free(kn);
  free(fl);
  json_decref(args);
  /* the end: when a later slice starts past it on the thread track (the
   * slices nested in this one end first), at once on an overflow track */
  if (!nests) {
    export_pftrace_end(p, uuid, query_export_end(ev), out);
    return;
  }
  if (p->nopen == p->cap_open) {
    p->cap_open = p->cap_open ? 2 * p->cap_open : 16;
    p->open = xrealloc(p->open, p->cap_open * sizeof *p->open);
  }
  p->open[p->nopen++] = query_export_end(ev);
}

int export_pftrace_counter(struct export_pftrace *p, struct sbuf *out,
                           struct query_err *e) {
  if (!p->s) {
    /* in time order per track, a time's series together: how the Neuron
     * tools write them, and what a reader that numbers the samples of a
     * time by arrival (ours) needs to pair the series again */
    p->s = query_stmt(p->db,
                      "SELECT c.track, c.series, c.ts, c.value FROM counter c "
                      "JOIN track t ON t.id = c.track WHERE t.domain = "
                      "'system' AND c.ts >= ?1 AND c.ts < ?2 ORDER BY "
                      "c.track, c.ts, c.series, c.seq",
                      e);
    if (!p->s)
      return -EIO;
    sqlite3_bind_int64(p->s, 1, p->start);
    sqlite3_bind_int64(p->s, 2, p->end);
  }
  int rc = sqlite3_step(p->s);
  if (rc != SQLITE_ROW) {
    if (rc != SQLITE_DONE)
      query_util_db_fail(e, p->db);
    sqlite3_reset(p->s);
    p->s = NULL;
    return rc == SQLITE_DONE ? 0 : -EIO;
  }
  int64_t track = sqlite3_column_int64(p->s, 0);
  if (p->k >= p->c.n || p->c.r[p->k].id != track)
    for (p->k = 0; p->k < p->c.n && p->c.r[p->k].id != track; p->k++)
      ;
  if (p->k >= p->c.n)
    return 1; /* not a row of the system view: not exported */
  Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
  te.has_type = te.has_track_uuid = 1;
  te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
  te.track_uuid =
      export_pftrace_counter_uuid(p->k, sqlite3_column_int64(p->s, 1));
  te.counter_value_field_case =
      PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
  te.double_counter_value = sqlite3_column_double(p->s, 3);
  Perfetto__Protos__TracePacket pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
  pk.has_timestamp = 1;
  pk.timestamp = (uint64_t)sqlite3_column_int64(p->s, 2);
  pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
  pk.track_event = &te;
  export_pftrace_put(p, &pk, out);
  return 1;
}
