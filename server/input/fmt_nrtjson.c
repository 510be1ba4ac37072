/* fmt_nrtjson.c -- see fmt_nrtjson.h.
 *
 * Reading order: names, number helpers, one record's keys, the clock (sync
 * points of pass 1), the table of open starts, the HBM state, the event
 * builder, the record dispatch of pass 2, and the streaming driver that
 * runs both passes.  Tokenizing and the byte source are jtok's.
 */
#include "fmt_nrtjson.h"
#include "filter.h"
#include "jtok.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char uchar;

#define NJ_PROBE_BYTES (64u << 10)
#define NJ_WHAT "runtime event dump"
#define NJ_MAX_NC 4096 /* NeuronCore indexes with per-core state */
#define NJ_MAX_ATTRS 64
#define NJ_MAX_HBM 256 /* (device, hbm) pairs with HBM state */
#define NJ_SYNC_NEAR 8 /* syncs searched for an event's exec_id */

/* ------------------------------------------------------------ names */

/* The runtime's spelling and the one the vendor tool shows. */
static const char *const nj_names[][2] = {
    {"model_load", "nrt_load"},
    {"cc_load", "nrt_load_collectives"},
    {"tensor_read", "nrt_tensor_read"},
    {"tensor_write", "nrt_tensor_write"},
    {"timestamp_sync", "timestamp_sync_point"},
    {"device_exec", "nc_exec_running"},
    {"cc_exec", "cc_running"},
    {"num_err", "numerical_err"},
};
#define NJ_NNAMES (sizeof nj_names / sizeof nj_names[0])

static const char *nj_name_map(const char *s, int from) {
  for (size_t i = 0; i < NJ_NNAMES; i++)
    if (!strcmp(s, nj_names[i][from]))
      return nj_names[i][!from];
  return s;
}

const char *fmt_nrtjson_display_name(const char *event_type) {
  return nj_name_map(event_type, 0);
}

const char *fmt_nrtjson_runtime_name(const char *name) {
  return nj_name_map(name, 1);
}

static int nj_is_dma(const char *t) {
  return !strcmp(t, "dma_mem_alloc") || !strcmp(t, "dma_mem_dealloc") ||
         !strcmp(t, "nrt_dma_mem_alloc") || !strcmp(t, "nrt_dma_mem_dealloc");
}

/* ------------------------------------------------------------ numbers */

/* An integer value (a number or a numeric string; ids beyond INT64_MAX
 * keep their bits).  Returns 0, or -1 when v is not one. */
static int nj_int(const struct jtok_span *v, int64_t *out) {
  char buf[48];
  if ((v->kind != JTOK_NUM && v->kind != JTOK_STR) || v->n == 0 ||
      v->n >= sizeof buf)
    return -1;
  memcpy(buf, v->p, v->n);
  buf[v->n] = 0;
  uint64_t u;
  if (!jtok_decimal((const uchar *)buf, v->n, 0, out))
    return 0;
  if (jtok_u64(buf, &u))
    return -1;
  *out = (int64_t)u;
  return 0;
}

/* ------------------------------------------------------------ records */

enum { NJ_START, NJ_STOP, NJ_INSTANT, NJ_UNKNOWN };

/* One element of "events", its keys decoded (strings in the reader's
 * buffers, data a span into the window or the copy of an open start). */
struct nj_ev {
  const char *type;
  int phase;
  int64_t id, nc, tracking_id, thread_id, worker_gid, ts, seq;
  int has_seq;
  struct jtok_span data;
  /* from data */
  int has_dev, has_exec;
  int64_t dev, exec_id, pcore;
};

struct nj_sync {
  int64_t nc, exec_id, dev, cpu;
};

/* An open start: its (nc, tracking_id) and the text of its record. */
struct nj_open {
  int64_t nc, tracking_id;
  uint64_t off;
  char *text;
  size_t len;
  int used;
};

struct nj {
  struct jtok_src src;
  const struct fmt_nrtjson_cb *cb;
  struct fmt_nrtjson_stats *st;
  struct jtok_warn warn;
  int pass;
  struct sbuf key, type, type2, text, scratch, attrs;
  /* pass 1: sync points sorted by (nc, dev); per-core pcore */
  struct nj_sync *syncs;
  size_t nsync, capsync;
  int64_t *pcore;    /* [NJ_MAX_NC], -1 unknown */
  int64_t *last_dev; /* [NJ_MAX_NC], last device time */
  int64_t last_host;
  /* open starts: linear probing, capacity a power of two */
  struct nj_open *open;
  size_t nopen, capopen, open_bytes;
  Nex__HbmUsage *hbm; /* the running totals of each (device, hbm) */
  size_t nhbm;
  /* attributes of the event being built: offsets into attrs */
  struct {
    size_t k, v;
    int num;
  } at[NJ_MAX_ATTRS];
  int nat;
};

/* The numeric keys of a record and where they go. */
static const struct {
  const char *key;
  size_t off;
} nj_keys[] = {{"id", offsetof(struct nj_ev, id)},
               {"nc_idx", offsetof(struct nj_ev, nc)},
               {"tracking_id", offsetof(struct nj_ev, tracking_id)},
               {"thread_id", offsetof(struct nj_ev, thread_id)},
               {"worker_gid", offsetof(struct nj_ev, worker_gid)},
               {"timestamp_ns", offsetof(struct nj_ev, ts)},
               {"nrta_seq_id", offsetof(struct nj_ev, seq)}};

/* Decodes the keys of event object `obj`.  Returns 0, or -1 with a
 * warning (pass 2) when it has no usable event_type. */
static int nj_decode(struct nj *r, const struct jtok_span *obj, uint64_t off,
                     struct sbuf *type, struct nj_ev *e) {
  const uchar *p = obj->p + 1, *end = obj->p + obj->n;
  struct jtok_span k, v;
  memset(e, 0, sizeof *e);
  e->nc = -1;
  e->worker_gid = -1;
  e->phase = NJ_UNKNOWN;
  e->pcore = -1;
  int have_type = 0;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    const char *key = jtok_text(&r->key, &k, &r->scratch);
    if (!strcmp(key, "event_type") && v.kind == JTOK_STR) {
      jtok_text(type, &v, &r->scratch);
      have_type = type->len > 0;
    } else if (!strcmp(key, "phase")) {
      e->phase = jtok_is(&v, "start")     ? NJ_START
                 : jtok_is(&v, "stop")    ? NJ_STOP
                 : jtok_is(&v, "instant") ? NJ_INSTANT
                                          : NJ_UNKNOWN;
    } else if (!strcmp(key, "data") && v.kind == JTOK_OBJ) {
      e->data = v;
    } else {
      for (size_t i = 0; i < sizeof nj_keys / sizeof nj_keys[0]; i++)
        if (!strcmp(key, nj_keys[i].key) &&
            !nj_int(&v, (int64_t *)((char *)e + nj_keys[i].off)))
          e->has_seq |= nj_keys[i].off == offsetof(struct nj_ev, seq);
    }
  }
  if (!have_type) {
    if (r->pass == 2)
      jtok_skipped(&r->warn, off, "event without an event_type: skipped");
    return -1;
  }
  e->type = type->s;
  p = end; /* no data object: nothing to scan */
  if (e->data.kind == JTOK_OBJ)
    p = e->data.p + 1, end = e->data.p + e->data.n;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    const char *key = jtok_text(&r->key, &k, &r->scratch);
    if (!strcmp(key, "nc_timestamp_ns"))
      e->has_dev = !nj_int(&v, &e->dev);
    else if (!strcmp(key, "exec_id"))
      e->has_exec = !nj_int(&v, &e->exec_id) && e->exec_id;
    else if (!strcmp(key, "device_core_idx") && nj_int(&v, &e->pcore))
      e->pcore = -1;
  }
  if (e->has_dev)
    e->ts = e->dev;
  return 0;
}

/* ------------------------------------------------------------ clock */

static int nj_cmp_sync(const void *a, const void *b) {
  const struct nj_sync *x = a, *y = b;
  if (x->nc != y->nc)
    return x->nc < y->nc ? -1 : 1;
  return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* Pass 1: notes the sync point or the physical core a record gives. */
static void nj_learn(struct nj *r, const struct nj_ev *e) {
  if (e->nc >= 0 && e->nc < NJ_MAX_NC && e->pcore >= 0 && r->pcore[e->nc] < 0)
    r->pcore[e->nc] = e->pcore;
  struct jtok_span v;
  int64_t cpu;
  if (strcmp(fmt_nrtjson_display_name(e->type), "timestamp_sync_point") ||
      !e->has_dev || !jtok_find(&e->data, "cpu_timestamp_ns", &v) ||
      nj_int(&v, &cpu))
    return;
  if (r->nsync == r->capsync) {
    r->capsync = r->capsync ? r->capsync * 2 : 256;
    r->syncs = xrealloc(r->syncs, r->capsync * sizeof *r->syncs);
  }
  r->syncs[r->nsync++] = (struct nj_sync){e->nc, e->exec_id, e->dev, cpu};
}

/* Device time dev through sync s (dev itself if that overflows). */
static int64_t nj_map(const struct nj_sync *s, int64_t dev) {
  int64_t d, cpu;
  if (__builtin_sub_overflow(dev, s->dev, &d) ||
      __builtin_add_overflow(s->cpu, d, &cpu))
    return dev;
  return cpu;
}

/* The CPU time of device time `dev` on core nc: through the sync of
 * exec_id among the NJ_SYNC_NEAR syncs of the core nearest to dev in time,
 * else through the latest sync of the core at or before dev (counted as
 * missing when an exec_id was given), else dev itself (counted). */
static int64_t nj_align(struct nj *r, int64_t nc, int has_exec, int64_t exec_id,
                        int64_t dev) {
  size_t lo = 0, hi = r->nsync; /* the first sync of nc after dev */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const struct nj_sync *m = &r->syncs[mid];
    if (m->nc < nc || (m->nc == nc && m->dev <= dev))
      lo = mid + 1;
    else
      hi = mid;
  }
  const struct nj_sync *s = NULL;
  for (size_t j = lo > NJ_SYNC_NEAR ? lo - NJ_SYNC_NEAR : 0;
       has_exec && !s && j < lo + NJ_SYNC_NEAR && j < r->nsync; j++)
    if (r->syncs[j].nc == nc && r->syncs[j].exec_id == exec_id)
      s = &r->syncs[j];
  if (s)
    return nj_map(s, dev);
  if (lo > 0 && r->syncs[lo - 1].nc == nc)
    s = &r->syncs[lo - 1];
  else if (lo < r->nsync && r->syncs[lo].nc == nc)
    s = &r->syncs[lo];
  if (has_exec || !s)
    r->st->clock_missing++;
  return s ? nj_map(s, dev) : dev;
}

/* ------------------------------------------------------------ open starts */

static size_t nj_slot(const struct nj *r, int64_t nc, int64_t tid) {
  uint64_t h = (uint64_t)tid * 0x9e3779b97f4a7c15ULL ^ (uint64_t)nc;
  return (size_t)(h ^ h >> 29) & (r->capopen - 1);
}

/* The slot of (nc, tid), or of the empty slot where it would go. */
static size_t nj_find(const struct nj *r, int64_t nc, int64_t tid) {
  size_t i = nj_slot(r, nc, tid);
  while (r->open[i].used &&
         (r->open[i].nc != nc || r->open[i].tracking_id != tid))
    i = (i + 1) & (r->capopen - 1);
  return i;
}

static void nj_grow(struct nj *r) {
  struct nj_open *old = r->open;
  size_t oldcap = r->capopen;
  r->capopen = oldcap ? oldcap * 2 : 1024;
  r->open = xcalloc(r->capopen, sizeof *r->open);
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].used)
      r->open[nj_find(r, old[i].nc, old[i].tracking_id)] = old[i];
  free(old);
}

/* Empties slot i (backward shift keeps every probe chain whole). */
static void nj_remove(struct nj *r, size_t i) {
  size_t mask = r->capopen - 1, j = i;
  free(r->open[i].text);
  r->open_bytes -= r->open[i].len;
  for (;;) {
    j = (j + 1) & mask;
    if (!r->open[j].used)
      break;
    size_t k = nj_slot(r, r->open[j].nc, r->open[j].tracking_id);
    if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
      continue;
    r->open[i] = r->open[j];
    i = j;
  }
  r->open[i].used = 0;
  r->nopen--;
}

/* ------------------------------------------------------------ HBM */

/* Where in an HbmUsage the bytes of a usage_type name or number go. */
static size_t nj_usage_field(struct nj *r, const struct jtok_span *v) {
  static const char *const alias[][2] = {
      {"weight", "weights"},   {"tensor", "tensors"},
      {"cc", "collectives"},   {"collective", "collectives"},
      {"spill", "dram_spill"}, {"stdio", "gpsimd_stdio"},
      {"ucode", "ucode_lib"},  {"profiler", "profiler_buffers"}};
  static const char *const by_num[16] = {[0] = "generic",
                                         [4] = "io",
                                         [6] = "weights",
                                         [12] = "tensors",
                                         [15] = "collectives"};
  int64_t n;
  const char *name = NULL;
  if (v->kind == JTOK_NUM && !nj_int(v, &n))
    name = n >= 0 && n < 16 ? by_num[n] : NULL;
  else if (v->kind == JTOK_STR) {
    name = jtok_text(&r->text, v, &r->scratch);
    for (char *c = r->text.s; *c; c++)
      *c = (char)tolower((uchar)*c);
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
      if (!strcmp(name, alias[i][0]))
        name = alias[i][1];
  }
  sbuf_reset(&r->key);
  sbuf_printf(&r->key, "%s_bytes", name ? name : "unknown");
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(
          &nex__hbm_usage__descriptor, r->key.s);
  if (!f || f->type != PROTOBUF_C_TYPE_UINT64 ||
      !strcmp(r->key.s, "total_bytes"))
    f = protobuf_c_message_descriptor_get_field_by_name(
        &nex__hbm_usage__descriptor, "unknown_bytes");
  return f->offset;
}

/* The stop of a DMA memory record: one HbmUsage sample of its HBM with the
 * running totals.  start may be NULL (its HBM is then unknown). */
static int nj_hbm(struct nj *r, const struct nj_ev *start,
                  const struct nj_ev *stop, uint64_t off) {
  struct jtok_span v;
  int64_t dev = -1, hbm = -1, total = 0, cat = 0;
  size_t field = offsetof(Nex__HbmUsage, unknown_bytes);
  if (start && jtok_find(&start->data, "mla_idx", &v))
    nj_int(&v, &dev);
  if (start && jtok_find(&start->data, "hbm_idx", &v))
    nj_int(&v, &hbm);
  if (start && jtok_find(&start->data, "usage_type", &v))
    field = nj_usage_field(r, &v);
  if (jtok_find(&stop->data, "total_bytes", &v))
    nj_int(&v, &total);
  int has_cat =
      jtok_find(&stop->data, "usage_type_total_bytes", &v) && !nj_int(&v, &cat);
  Nex__HbmUsage *s = NULL;
  for (size_t i = 0; i < r->nhbm && !s; i++)
    if (r->hbm[i].device_idx == (int32_t)dev &&
        r->hbm[i].hbm_idx == (int32_t)hbm)
      s = &r->hbm[i];
  if (!s) {
    if (r->nhbm == NJ_MAX_HBM)
      return jtok_skipped(&r->warn, off,
                          "more than %d HBMs: DMA memory record skipped",
                          NJ_MAX_HBM);
    r->hbm = xrealloc(r->hbm, (r->nhbm + 1) * sizeof *r->hbm);
    s = &r->hbm[r->nhbm++];
    nex__hbm_usage__init(s);
    s->device_idx = (int32_t)dev;
    s->hbm_idx = (int32_t)hbm;
  }
  s->timestamp = stop->ts;
  s->total_bytes = (uint64_t)total;
  if (has_cat)
    *(uint64_t *)((char *)s + field) = (uint64_t)cat;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
  rec.hbm = s;
  r->st->records++;
  return r->cb && r->cb->ntrace ? r->cb->ntrace(r->cb->ud, off, &rec) : 0;
}

/* ------------------------------------------------------------ events */

/* Adds attribute key = val to the event being built (the first of a key
 * wins). */
static void nj_attr(struct nj *r, const char *key, const char *val, int num) {
  if (r->nat == NJ_MAX_ATTRS)
    return;
  for (int i = 0; i < r->nat; i++)
    if (!strcmp(r->attrs.s + r->at[i].k, key))
      return;
  r->at[r->nat].k = r->attrs.len;
  sbuf_add(&r->attrs, key, strlen(key) + 1);
  r->at[r->nat].v = r->attrs.len;
  sbuf_add(&r->attrs, val, strlen(val) + 1);
  r->at[r->nat++].num = num;
}

static void nj_attr_i64(struct nj *r, const char *key, int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  nj_attr(r, key, buf, 1);
}

/* Fills the SystemEvent fields e's data has a place for; the other
 * members become attributes. */
static void nj_fields(struct nj *r, const struct nj_ev *e, Nex__SystemEvent *s,
                      struct sbuf *model) {
  if (e->data.kind != JTOK_OBJ)
    return;
  const uchar *p = e->data.p + 1, *end = e->data.p + e->data.n;
  struct jtok_span k, v;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    const char *key = jtok_text(&r->key, &k, &r->scratch);
    int64_t x = 0;
    int num = !nj_int(&v, &x);
    if (!strcmp(key, "nc_timestamp_ns") || !strcmp(key, "device_core_idx"))
      continue; /* the clock and the track */
    if (num && !strcmp(key, "exec_id"))
      s->exec_id = x;
    else if (num && !strcmp(key, "model_id"))
      s->model_id = (uint64_t)x;
    else if (num && !strcmp(key, "cpu_timestamp_ns"))
      s->cpu_timestamp_ns = x;
    else if (num && (!strcmp(key, "size") || !strcmp(key, "total_size")))
      s->size = (uint64_t)x;
    else if (!strcmp(key, "model_name") && v.kind == JTOK_STR)
      jtok_text(model, &v, &r->scratch);
    else
      nj_attr(r, key, jtok_text(&r->text, &v, &r->scratch), jtok_number(&v));
  }
}

/* Reports the event of start (or instant) a and stop b (NULL: none);
 * incomplete: a's stop is missing. */
static int nj_emit(struct nj *r, const struct nj_ev *a, const struct nj_ev *b,
                   uint64_t off, int incomplete) {
  const char *name = fmt_nrtjson_display_name(a->type);
  int nc_ok = a->nc >= 0 && a->nc < NJ_MAX_NC;
  int dev = a->has_dev, hw = dev || filter_is_hardware(name);
  struct sbuf model = {0}, nm = {0};
  char empty[1] = "";
  Nex__SystemEvent s = NEX__SYSTEM_EVENT__INIT;
  r->nat = 0;
  sbuf_reset(&r->attrs);
  s.id = (uint64_t)a->id;
  sbuf_adds(&nm, name);
  s.name = nm.s;
  s.source = hw ? NEX__TRACE_EVENT_SOURCE__NEURON_HW
                : NEX__TRACE_EVENT_SOURCE__NEURON_RT;
  s.thread_id = a->thread_id;
  s.nc_idx = a->nc >= 0 && a->nc <= INT32_MAX ? (int32_t)a->nc : -1;
  s.worker_gid = a->worker_gid >= INT32_MIN && a->worker_gid <= INT32_MAX
                     ? (int32_t)a->worker_gid
                     : -1;
  int64_t pcore = a->pcore >= 0        ? a->pcore
                  : b && b->pcore >= 0 ? b->pcore
                  : hw && nc_ok        ? r->pcore[a->nc]
                                       : -1;
  s.pcore_idx = pcore >= 0 && pcore <= INT32_MAX ? (int32_t)pcore : -1;
  nj_fields(r, a, &s, &model);
  if (b)
    nj_fields(r, b, &s, &model);
  s.model_name = model.s ? model.s : empty;
  if (a->has_seq || (b && b->has_seq))
    s.nrt_sequence_id = a->has_seq ? a->seq : b->seq;
  int64_t start = a->ts, stop = start;
  if (b && b->has_dev == dev)
    stop = b->ts;
  else if (incomplete)
    stop = dev ? (nc_ok ? r->last_dev[a->nc] : start) : r->last_host;
  if (stop < start)
    stop = start;
  if (__builtin_sub_overflow(stop, start, &s.duration))
    s.duration = 0;
  s.timestamp = start;
  if (!strcmp(name, "timestamp_sync_point")) {
    s.nc_timestamp_ns = a->dev;
    s.timestamp = s.cpu_timestamp_ns;
  } else if (dev) {
    nj_attr_i64(r, "nc_start_timestamp_ns", start);
    nj_attr_i64(r, "nc_stop_timestamp_ns", stop);
    int has_exec = a->has_exec || (b && b->has_exec);
    s.timestamp = nj_align(r, a->nc, has_exec,
                           a->has_exec ? a->exec_id
                           : has_exec  ? b->exec_id
                                       : 0,
                           start);
  }
  if (name != a->type)
    nj_attr(r, "event_type", a->type, 0);
  if (incomplete)
    nj_attr(r, "incomplete", "1", 1);
  Nex__Attribute at[NJ_MAX_ATTRS], *ap[NJ_MAX_ATTRS];
  for (int i = 0; i < r->nat; i++) {
    nex__attribute__init(&at[i]);
    at[i].key = r->attrs.s + r->at[i].k;
    at[i].value = r->attrs.s + r->at[i].v;
    at[i].is_number = r->at[i].num;
    ap[i] = &at[i];
  }
  s.n_attributes = (size_t)r->nat;
  s.attributes = ap;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &s;
  r->st->records++;
  int rc = r->cb && r->cb->ntrace ? r->cb->ntrace(r->cb->ud, off, &rec) : 0;
  sbuf_free(&model);
  sbuf_free(&nm);
  return rc;
}

/* The start held in open slot i, decoded (its type in r->type2). */
static void nj_open_ev(struct nj *r, size_t i, struct nj_ev *e) {
  struct jtok_span obj = {(const uchar *)r->open[i].text, r->open[i].len,
                          JTOK_OBJ, 0};
  nj_decode(r, &obj, r->open[i].off, &r->type2, e);
}

/* A start whose stop will not come: an incomplete event (DMA memory
 * records give nothing without their stop). */
static int nj_abandon(struct nj *r, const struct nj_ev *e, uint64_t off) {
  r->st->unpaired_start++;
  return nj_is_dma(e->type) ? 0 : nj_emit(r, e, NULL, off, 1);
}

static int nj_start(struct nj *r, const struct jtok_span *obj,
                    const struct nj_ev *e, uint64_t off) {
  if (r->nopen >= FMT_NRTJSON_MAX_OPEN ||
      r->open_bytes + obj->n > FMT_NRTJSON_MAX_OPEN_BYTES)
    return nj_abandon(r, e, off);
  if ((r->nopen + 1) * 2 > r->capopen)
    nj_grow(r);
  size_t i = nj_find(r, e->nc, e->tracking_id);
  int rc = 0;
  if (r->open[i].used) { /* the same key again: the older start is cut */
    struct nj_ev old;
    nj_open_ev(r, i, &old);
    rc = nj_abandon(r, &old, r->open[i].off);
    free(r->open[i].text);
    r->open_bytes -= r->open[i].len;
  } else {
    r->nopen++;
  }
  r->open_bytes += obj->n;
  r->open[i] = (struct nj_open){e->nc,  e->tracking_id,
                                off,    xstrndup((const char *)obj->p, obj->n),
                                obj->n, 1};
  return rc;
}

static int nj_stop(struct nj *r, const struct nj_ev *e, uint64_t off) {
  int dma = nj_is_dma(e->type);
  size_t i = r->capopen ? nj_find(r, e->nc, e->tracking_id) : 0;
  struct nj_ev s;
  if (r->capopen && r->open[i].used) {
    nj_open_ev(r, i, &s);
    if (!strcmp(s.type, e->type)) {
      int rc = dma ? nj_hbm(r, &s, e, off) : nj_emit(r, &s, e, off, 0);
      nj_remove(r, i);
      return rc;
    }
  }
  r->st->unpaired_stop++;
  return dma ? nj_hbm(r, NULL, e, off) : 0;
}

/* At the end: every start still open, as an incomplete event. */
static int nj_flush_open(struct nj *r) {
  int rc = 0;
  for (size_t i = 0; i < r->capopen; i++) {
    if (!r->open[i].used)
      continue;
    struct nj_ev e;
    nj_open_ev(r, i, &e);
    if (!rc)
      rc = nj_abandon(r, &e, r->open[i].off);
    free(r->open[i].text);
    r->open[i].used = 0;
  }
  r->nopen = r->open_bytes = 0;
  return rc;
}

/* One element of "events". */
static int nj_record(struct nj *r, const struct jtok_span *obj, uint64_t off) {
  struct nj_ev e;
  if (r->pass == 1 && !memmem(obj->p, obj->n, "timestamp_sync", 14) &&
      !memmem(obj->p, obj->n, "device_core_idx", 15))
    return 0; /* pass 1 learns nothing else */
  if (nj_decode(r, obj, off, &r->type, &e))
    return 0;
  if (r->pass == 1) {
    nj_learn(r, &e);
    return 0;
  }
  if (e.has_dev && e.nc >= 0 && e.nc < NJ_MAX_NC) {
    if (e.ts > r->last_dev[e.nc])
      r->last_dev[e.nc] = e.ts;
  } else if (e.ts > r->last_host) {
    r->last_host = e.ts;
  }
  if (e.phase == NJ_STOP)
    return nj_stop(r, &e, off);
  if (e.phase == NJ_START || (e.phase == NJ_INSTANT && nj_is_dma(e.type)))
    return nj_start(r, obj, &e, off);
  return nj_emit(r, &e, NULL, off, 0);
}

/* ------------------------------------------------------------ streaming */

/* Reads the "events" array whose '[' is at the cursor. */
static int nj_array(struct nj *r) {
  struct jtok_src *s = &r->src;
  s->p++;
  for (;;) {
    if (jtok_ws(s))
      return 0; /* cut: what was read stays */
    if (*s->p == ']' || *s->p == ',') {
      if (*s->p++ == ']')
        return 0;
      continue;
    }
    uint64_t off = jtok_off(s, s->p);
    const uchar *first = s->p;
    struct jtok_span v;
    if (jtok_value(s, &v)) {
      if (r->pass == 2)
        jtok_skipped(&r->warn, off, "events: element %s: skipped",
                     s->eof ? "cut by the end of the file"
                            : "malformed or larger than 64 MiB");
      if (*s->p == '{' && !s->eof) {
        s->p++;
        jtok_resync(s);
      } else {
        jtok_skip(s);
      }
      if (s->p == first)
        s->p++;
      continue;
    }
    if (v.kind != JTOK_OBJ) {
      if (r->pass == 2)
        jtok_skipped(&r->warn, off, "events: not an object: skipped");
      continue;
    }
    int rc = nj_record(r, &v, off);
    if (rc)
      return rc;
  }
}

/* Probe: whether the "events" array at the cursor is a runtime dump's (1),
 * empty (2) or not (0). */
static int nj_probe_events(struct nj *r) {
  struct jtok_src *s = &r->src;
  struct jtok_span v, t;
  s->p++;
  if (jtok_ws(s))
    return 0;
  if (*s->p == ']') {
    s->p++;
    return 2;
  }
  return *s->p == '{' && !jtok_value(s, &v) &&
         jtok_find(&v, "event_type", &t) && t.kind == JTOK_STR;
}

/* Reads the top-level object whose '{' is behind the cursor.  probe: stops
 * as soon as the kind is known and returns 1 for a dump, else 0. */
static int nj_object(struct nj *r, int probe) {
  struct jtok_src *s = &r->src;
  int empty = 0, version = 0;
  while (jtok_next_member(s)) {
    uint64_t off = jtok_off(s, s->p);
    struct jtok_span k, v;
    if (*s->p != '"' || jtok_value(s, &k) || jtok_ws(s) || *s->p != ':' ||
        (s->p++, jtok_ws(s))) {
      if (!probe)
        jtok_note(&r->warn, off,
                  "malformed top-level object: the rest of "
                  "the file is ignored");
      return 0;
    }
    const char *key = jtok_text(&r->key, &k, &r->scratch);
    int64_t x;
    if (!strcmp(key, "events") && *s->p == '[') {
      int rc = probe ? nj_probe_events(r) : nj_array(r);
      if (!probe && rc)
        return rc;
      if (probe && (rc != 2 || version))
        return rc != 0;
      empty = 1;
    } else if (!strcmp(key, "data_version")) {
      if (jtok_value(s, &v))
        jtok_skip(s);
      else if (!nj_int(&v, &x))
        r->st->data_version = x;
      version = 1;
      if (probe && empty)
        return 1;
    } else {
      jtok_skip(s);
    }
  }
  return 0;
}

static void nj_free(struct nj *r) {
  struct sbuf *b[] = {&r->key,  &r->type,    &r->type2,
                      &r->text, &r->scratch, &r->attrs};
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
    sbuf_free(b[i]);
  for (size_t i = 0; i < r->capopen; i++)
    if (r->open[i].used)
      free(r->open[i].text);
  free(r->open);
  free(r->syncs);
  free(r->pcore);
  free(r->last_dev);
  free(r->hbm);
  jtok_close(&r->src);
}

int fmt_nrtjson_read(const char *path, const struct fmt_nrtjson_cb *cb,
                     struct fmt_nrtjson_stats *st, char **cause) {
  struct fmt_nrtjson_stats local;
  uint64_t pass1_skipped = 0;
  struct nj r = {.cb = cb, .st = st ? st : &local, .pass = 1};
  memset(r.st, 0, sizeof *r.st);
  r.st->data_version = -1;
  r.warn = (struct jtok_warn){NULL, NULL, &pass1_skipped};
  r.pcore = xmalloc(NJ_MAX_NC * sizeof *r.pcore);
  for (int i = 0; i < NJ_MAX_NC; i++)
    r.pcore[i] = -1;
  r.last_dev = xcalloc(NJ_MAX_NC, sizeof *r.last_dev);
  int rc = jtok_open_object(&r.src, path, 0, NJ_WHAT, cause);
  if (!rc) { /* pass 1: sync points and physical cores */
    nj_object(&r, 0);
    jtok_close(&r.src);
    if (r.nsync)
      qsort(r.syncs, r.nsync, sizeof *r.syncs, nj_cmp_sync);
    r.pass = 2;
    r.st->data_version = -1;
    r.warn = (struct jtok_warn){cb ? cb->warning : NULL, cb ? cb->ud : NULL,
                                &r.st->skipped};
    rc = jtok_open_object(&r.src, path, 0, NJ_WHAT, cause);
  }
  if (!rc) {
    rc = nj_object(&r, 0);
    if (!rc)
      rc = nj_flush_open(&r);
    if (!rc) {
      jtok_finish(&r.src, &r.warn, "event dump");
      if (r.st->data_version < 0)
        jtok_note(&r.warn, 0, "no data_version: read as version 2");
      else if (r.st->data_version != 2)
        jtok_note(&r.warn, 0, "data_version %lld: read as version 2",
                  (long long)r.st->data_version);
    }
    r.st->bytes = jtok_off(&r.src, r.src.p);
  }
  nj_free(&r);
  return rc;
}

int fmt_nrtjson_probe(const char *path) {
  struct fmt_nrtjson_stats st = {0};
  struct nj r = {.st = &st, .warn = {.skipped = &st.skipped}};
  int rc = jtok_open_object(&r.src, path, NJ_PROBE_BYTES, NJ_WHAT, NULL);
  if (!rc)
    rc = nj_object(&r, 1);
  else if (rc == -ENODATA || rc == -EPROTO || rc == -EBADMSG)
    rc = 0;
  nj_free(&r);
  return rc;
}
