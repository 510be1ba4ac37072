/* ingest.c -- see ingest.h.
 *
 * One pass per file, records streamed straight into the store writer:
 *   trace_info.pb  -> process, SystemProfileMetadata
 *   ntrace.pb      -> pass 1: timestamp_sync_point table (per NC, exec_id);
 *                     pass 2: events -> base tracks (lanes, LOD, flows),
 *                     HBM samples -> counters
 *   cpu_util.pb, host_mem.pb -> counters
 *   *.json(.gz)    -> framework events (ingest_chrome.c)
 *   *.ntff (+NEFF) -> DeviceProfileList, device tracks (ingest_device.c)
 * then the derived rows: transfer bandwidth, DMA throughput, Chrome flow
 * binding, device time offsets, name statistics, track statistics.
 */
#include "filter.h"
#include "ingest_priv.h"
#include "lod.h"
#include "log.h"

#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The store layout this build writes (schema.sql plus the meaning of its
 * rows, e.g. LOD runs, lanes by nesting depth): a store of another version
 * is built again. */
#define INGEST_SCHEMA_VERSION "4"

/* ------------------------------------------------------------ warnings */

void ingest_warn(struct ing *g, const char *category, const char *file,
                 uint64_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg;
  if (vasprintf(&msg, fmt, ap) < 0)
    fatal("out of memory");
  va_end(ap);
  store_writer_exec(g->w,
                    "INSERT INTO Warning (message, category, file, offset) "
                    "VALUES (?,?,?,?)",
                    "tttI", msg, category, file, (int64_t)offset);
  g->st->warnings++;
  if (g->warned_stderr++ < INGEST_STDERR_WARNINGS) {
    if (g->bar_drawn)
      fputs("\r\033[K", stderr);
    if (file)
      log_warn("%s:%" PRIu64 ": %s", file, offset, msg);
    else
      log_warn("%s", msg);
  }
  if (g->o->on_warning)
    g->o->on_warning(g->o->ud, file, offset, msg);
  free(msg);
}

/* ------------------------------------------------------------ progress */

static void ingest_progress(struct ing *g, bool force) {
  int64_t now = util_now_ns();
  if (!force && now - g->last_report < 100000000LL)
    return;
  g->last_report = now;
  struct ingest_progress p = {0};
  p.files_done = g->files_done;
  p.files_total = (uint64_t)g->d->n_files;
  p.events = g->st->events;
  p.bytes = g->bytes_before + g->file_pos;
  p.bytes_total = g->d->total_bytes;
  snprintf(p.file, sizeof p.file, "%s", g->file ? g->file : "");
  if (g->o->on_progress)
    g->o->on_progress(g->o->ud, &p);
  double secs = (double)(now - g->t0) / 1e9;
  double mbs = secs > 0 ? (double)p.bytes / 1e6 / secs : 0;
  double frac = p.bytes_total ? (double)p.bytes / (double)p.bytes_total : 1;
  if (frac > 1)
    frac = 1;
  double eta = frac > 0.001 ? secs / frac - secs : 0;
  if (g->o->style == INGEST_BAR) {
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
      bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[30] = '\0';
    fprintf(stderr,
            "\r\033[K[%s] %3.0f%% files %" PRIu64 "/%" PRIu64
            ", %.2fM events, %.1f MB/s, ETA %.0fs",
            bar, frac * 100, p.files_done, p.files_total,
            (double)p.events / 1e6, mbs, eta);
    g->bar_drawn = 1;
  } else if (g->o->style == INGEST_LINES &&
             (force || (now - g->t0) / 2000000000LL !=
                           (now - g->t0 - 100000000LL) / 2000000000LL)) {
    log_info("ingest: %3.0f%% files %" PRIu64 "/%" PRIu64 ", %" PRIu64
             " events, %.1f MB/s, ETA %.0fs",
             frac * 100, p.files_done, p.files_total, p.events, mbs, eta);
  }
}

void ingest_file_begin(struct ing *g, const char *rel) {
  g->file = rel;
  g->file_pos = 0;
}

void ingest_file_end(struct ing *g, uint64_t size) {
  g->bytes_before += size;
  g->st->bytes += size;
  g->file_pos = 0;
  g->files_done++;
  ingest_progress(g, false);
}

/* ------------------------------------------------------------ tracks */

static uint64_t ingest_str_hash(const char *s) {
  return s ? util_hash(s, strlen(s)) : 0x9e3779b97f4a7c15ULL;
}

static uint64_t ingest_desc_hash(const struct store_track *d) {
  int64_t ints[] = {d->has_pid ? d->pid : INT64_MIN,
                    d->has_tid ? d->tid : INT64_MIN,
                    d->nc_idx,
                    d->pcore_idx,
                    d->worker_gid,
                    d->stream_id,
                    d->device_idx,
                    d->hbm_idx,
                    d->device_profile_id};
  uint64_t h = util_hash(ints, sizeof ints);
  const char *strs[] = {d->kind,        d->domain, d->source,
                        d->instance_id, d->cpu_id, d->label};
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    h = (h ^ ingest_str_hash(strs[i])) * 1099511628211ULL;
  return h;
}

static bool ingest_str_eq(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

static bool ingest_desc_eq(const struct store_track *a,
                           const struct store_track *b) {
  return a->has_pid == b->has_pid && (!a->has_pid || a->pid == b->pid) &&
         a->has_tid == b->has_tid && (!a->has_tid || a->tid == b->tid) &&
         a->nc_idx == b->nc_idx && a->pcore_idx == b->pcore_idx &&
         a->worker_gid == b->worker_gid && a->stream_id == b->stream_id &&
         a->device_idx == b->device_idx && a->hbm_idx == b->hbm_idx &&
         a->device_profile_id == b->device_profile_id &&
         ingest_str_eq(a->kind, b->kind) &&
         ingest_str_eq(a->domain, b->domain) &&
         ingest_str_eq(a->source, b->source) &&
         ingest_str_eq(a->instance_id, b->instance_id) &&
         ingest_str_eq(a->cpu_id, b->cpu_id) &&
         ingest_str_eq(a->label, b->label);
}

static struct itrack *
ingest_track_find(struct ing *g, const struct store_track *d, uint64_t h) {
  if (g->tcap == 0)
    return NULL;
  size_t i = h & (g->tcap - 1);
  while (g->tracks[i]) {
    if (g->tracks[i]->hash == h && ingest_desc_eq(&g->tracks[i]->desc, d))
      return g->tracks[i];
    i = (i + 1) & (g->tcap - 1);
  }
  return NULL;
}

static void ingest_track_put(struct ing *g, struct itrack *t) {
  if ((g->tn + 1) * 2 > g->tcap) {
    size_t cap = g->tcap ? g->tcap * 2 : 256;
    struct itrack **v = xcalloc(cap, sizeof *v);
    for (size_t i = 0; i < g->tcap; i++) {
      if (!g->tracks[i])
        continue;
      size_t j = g->tracks[i]->hash & (cap - 1);
      while (v[j])
        j = (j + 1) & (cap - 1);
      v[j] = g->tracks[i];
    }
    free(g->tracks);
    g->tracks = v;
    g->tcap = cap;
    g->order = xrealloc(g->order, sizeof *g->order * cap);
  }
  size_t j = t->hash & (g->tcap - 1);
  while (g->tracks[j])
    j = (j + 1) & (g->tcap - 1);
  g->tracks[j] = t;
  g->order[g->tn++] = t;
}

static const char *ingest_dup(const char *s) { return s ? xstrdup(s) : NULL; }

/* The base track with this description, created on first use. */
struct itrack *ingest_track(struct ing *g, const struct store_track *d) {
  uint64_t h = ingest_desc_hash(d);
  struct itrack *t = ingest_track_find(g, d, h);
  if (t)
    return t;
  t = xcalloc(1, sizeof *t);
  t->desc = *d;
  t->desc.kind = ingest_dup(d->kind);
  t->desc.domain = ingest_dup(d->domain);
  t->desc.source = ingest_dup(d->source);
  t->desc.instance_id = ingest_dup(d->instance_id);
  t->desc.cpu_id = ingest_dup(d->cpu_id);
  t->desc.label = ingest_dup(d->label);
  t->hash = h;
  t->id = store_writer_track(g->w, d);
  t->kind = strcmp(d->kind, "counter") == 0 ? TRACK_COUNTER : TRACK_SLICES;
  t->level = -2;
  if (t->kind == TRACK_SLICES)
    t->lanes = lanes_new(g->lanes);
  else
    t->cbuf = xcalloc(INGEST_LOD_MIN, sizeof *t->cbuf);
  ingest_track_put(g, t);
  return t;
}

struct store_track ingest_desc(const char *kind, const char *domain,
                               const char *source, const char *instance) {
  return (struct store_track){.kind = kind,
                              .domain = domain,
                              .source = source,
                              .instance_id = instance,
                              .nc_idx = -1,
                              .pcore_idx = -1,
                              .worker_gid = -1,
                              .stream_id = -1,
                              .device_idx = -1,
                              .hbm_idx = -1};
}

/* ------------------------------------------------------------ stats */

static void ingest_stat_add(struct ing *g, int64_t track, int64_t name,
                            int64_t dur) {
  if ((g->sn + 1) * 2 > g->scap) {
    size_t cap = g->scap ? g->scap * 2 : 1024;
    struct istat *v = xcalloc(cap, sizeof *v);
    for (size_t i = 0; i < g->scap; i++) {
      if (!g->stats[i].count)
        continue;
      uint64_t k =
          (uint64_t)g->stats[i].track * 1000003u ^ (uint64_t)g->stats[i].name;
      size_t j = util_hash(&k, sizeof k) & (cap - 1);
      while (v[j].count)
        j = (j + 1) & (cap - 1);
      v[j] = g->stats[i];
    }
    free(g->stats);
    g->stats = v;
    g->scap = cap;
  }
  uint64_t k = (uint64_t)track * 1000003u ^ (uint64_t)name;
  size_t j = util_hash(&k, sizeof k) & (g->scap - 1);
  while (g->stats[j].count &&
         (g->stats[j].track != track || g->stats[j].name != name))
    j = (j + 1) & (g->scap - 1);
  if (!g->stats[j].count) {
    g->stats[j] = (struct istat){track, name, 0, 0};
    g->sn++;
  }
  g->stats[j].count++;
  g->stats[j].dur += dur;
}

/* Writes the name statistics gathered so far (name_stat adds them up when
 * a (name, track) comes again) and empties the table, so that it holds
 * one process's names at a time, not the whole profile's. */
static void ingest_stats_flush(struct ing *g) {
  for (size_t i = 0; i < g->scap; i++)
    if (g->stats[i].count)
      store_writer_name_stat(g->w, g->stats[i].name, g->stats[i].track,
                             g->stats[i].count, g->stats[i].dur);
  free(g->stats);
  g->stats = NULL;
  g->scap = g->sn = 0;
}

/* ------------------------------------------------------------ slices */

/* Writes one slice that has its lane. */
static void ingest_place(struct ing *g, struct itrack *t, struct lanes_item *it,
                         int64_t lane) {
  store_writer_slice(g->w, t->id, lane, it->ts, it->id, it->dur, it->name,
                     it->grp, it->args, it->args_len);
  if (t->lod)
    lod_slice(t->lod, g->w, lane, it->ts, it->dur, it->id, it->name, it->grp);
  for (int i = 0; i < it->n_flows; i++)
    store_writer_flow(g->w, (int64_t)it->flows[i], t->id, lane, it->ts, it->id);
  if (t->bind)
    ingest_chrome_placed(g, t, lane, it);
  ingest_stat_add(g, t->id, it->name, it->dur);
  lanes_item_clear(it);
}

/* Picks the finest LOD level of a slice track from the slices it holds
 * when it is first drained (none under INGEST_LOD_MIN slices). */
static void ingest_decide_level(struct itrack *t) {
  int64_t lo, hi;
  int64_t n = lanes_pending(t->lanes, &lo, &hi);
  if (n < INGEST_LOD_MIN) {
    t->level = -1;
    return;
  }
  t->level = lod_pick_level(hi - lo, n);
  t->lod = lod_new(t->id, t->level);
}

/* Adds a slice (taking ownership of it->args and it->flows): it waits in
 * the track's sorter until the track is drained. */
void ingest_slice(struct ing *g, struct itrack *t, struct lanes_item *it) {
  if (it->dur < 0)
    it->dur = 0;
  if (t->count == 0 || it->ts < t->first_ts)
    t->first_ts = it->ts;
  if (t->count == 0 || it->ts + it->dur > t->last_ts)
    t->last_ts = it->ts + it->dur;
  if (it->dur > t->max_dur)
    t->max_dur = it->dur;
  t->count++;
  g->st->events++;
  lanes_push(t->lanes, it);
  if ((g->st->events & 0xffff) == 0)
    ingest_progress(g, false);
}

/* ------------------------------------------------------------ counters */

static void ingest_counter_write(struct ing *g, struct itrack *t, int series,
                                 int64_t ts, double v) {
  /* the series of one sample share its seq (series 0 comes first) */
  if (series == 0)
    t->seq++;
  store_writer_counter(g->w, t->id, series, ts, t->seq, v);
  if (t->clod)
    lod_counter_sample(t->clod, g->w, series, ts, v);
}

static void ingest_counter_decide(struct ing *g, struct itrack *t) {
  int64_t lo = INT64_MAX, hi = INT64_MIN, n = 0;
  for (int i = 0; i < t->ncbuf; i++)
    if (t->cbuf[i].series == 0) {
      lo = t->cbuf[i].ts < lo ? t->cbuf[i].ts : lo;
      hi = t->cbuf[i].ts > hi ? t->cbuf[i].ts : hi;
      n++;
    }
  if (t->ncbuf < INGEST_LOD_MIN) {
    t->level = -1;
  } else {
    t->level = lod_pick_level(n ? hi - lo : 0, n);
    t->clod = lod_counter_new(t->id, t->level);
  }
  for (int i = 0; i < t->ncbuf; i++)
    ingest_counter_write(g, t, t->cbuf[i].series, t->cbuf[i].ts,
                         t->cbuf[i].value);
  t->ncbuf = 0;
}

void ingest_counter(struct ing *g, struct itrack *t, int series, int64_t ts,
                    double v) {
  if (series == 0) {
    if (t->count == 0 || ts < t->first_ts)
      t->first_ts = ts;
    if (t->count == 0 || ts > t->last_ts)
      t->last_ts = ts;
    t->count++;
  }
  if (series == 0) /* one sample, however many series */
    g->st->events++;
  if (t->level == -2) {
    t->cbuf[t->ncbuf++] = (struct csample){ts, series, v};
    if (t->ncbuf == INGEST_LOD_MIN)
      ingest_counter_decide(g, t);
    return;
  }
  ingest_counter_write(g, t, series, ts, v);
}

/* ------------------------------------------------------------ finish */

/* Places the slices waiting in a slice track's sorter, in start order
 * with their nesting depth (lanes.h). */
static void ingest_track_drain(struct ing *g, struct itrack *t) {
  if (t->level == -2)
    ingest_decide_level(t);
  int64_t lo, hi, n = lanes_pending(t->lanes, &lo, &hi), placed = 0;
  struct lanes_item it;
  int64_t lane;
  int rc;
  while ((rc = lanes_pop(t->lanes, &it, &lane)) > 0) {
    ingest_place(g, t, &it, lane);
    placed++;
  }
  if (rc < 0) { /* the ingest fails: the slices not placed are lost */
    g->st->skipped += (uint64_t)(n - placed);
    ingest_warn(g, "Missing Data", NULL, 0,
                "%" PRId64 " slices of track %" PRId64
                " lost: cannot read the spill file (%s)",
                n - placed, t->id, strerror(-rc));
    if (!g->failed)
      g->failed = rc;
  }
}

static void ingest_track_finish(struct ing *g, struct itrack *t) {
  struct store_track_stats s = {0};
  if (t->kind == TRACK_SLICES) {
    ingest_track_drain(g, t);
    if (t->lod)
      lod_flush(t->lod, g->w);
    s.lanes = lanes_count(t->lanes);
  } else {
    if (t->level == -2)
      ingest_counter_decide(g, t);
    if (t->clod)
      lod_counter_flush(t->clod, g->w);
  }
  s.max_dur = t->max_dur;
  s.event_count = t->count;
  s.first_ts = t->first_ts;
  s.last_ts = t->last_ts;
  s.lod_min_level = t->level >= 0 ? t->level : -1;
  store_writer_track_stats(g->w, t->id, &s);
}

static void ingest_track_free(struct itrack *t) {
  ingest_chrome_sweep_free(t->bind);
  lanes_free(t->lanes);
  lod_free(t->lod);
  lod_counter_free(t->clod);
  free(t->cbuf);
  free((char *)t->desc.kind);
  free((char *)t->desc.domain);
  free((char *)t->desc.source);
  free((char *)t->desc.instance_id);
  free((char *)t->desc.cpu_id);
  free((char *)t->desc.label);
  free(t);
}

/* ------------------------------------------------------------ args JSON */

void ingest_args_begin(struct ing *g) {
  sbuf_reset(&g->args);
  sbuf_addc(&g->args, '{');
}

void ingest_args_key(struct ing *g, const char *key) {
  if (g->args.len > 1)
    sbuf_addc(&g->args, ',');
  sbuf_add_json_str(&g->args, key, strlen(key));
  sbuf_addc(&g->args, ':');
}

void ingest_args_str(struct ing *g, const char *key, const char *v) {
  if (!v || !*v)
    return;
  ingest_args_key(g, key);
  sbuf_add_json_str(&g->args, v, strlen(v));
}

void ingest_args_i64(struct ing *g, const char *key, int64_t v) {
  ingest_args_key(g, key);
  sbuf_add_i64(&g->args, v);
}

/* Large unsigned ids travel as strings (they exceed 2^53). */
static void ingest_args_u64s(struct ing *g, const char *key, uint64_t v) {
  ingest_args_key(g, key);
  sbuf_addc(&g->args, '"');
  sbuf_add_u64(&g->args, v);
  sbuf_addc(&g->args, '"');
}

void ingest_args_attrs(struct ing *g, Nex__Attribute **a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!a[i]->key || !*a[i]->key)
      continue;
    ingest_args_key(g, a[i]->key);
    const char *v = a[i]->value ? a[i]->value : "";
    char *end;
    if (a[i]->is_number && *v && (strtod(v, &end), *end == '\0'))
      sbuf_adds(&g->args, v);
    else
      sbuf_add_json_str(&g->args, v, strlen(v));
  }
}

/* Moves the args text into an item (NULL when empty). */
void ingest_args_take(struct ing *g, struct lanes_item *it) {
  if (g->args.len <= 1) {
    it->args = NULL;
    it->args_len = 0;
    return;
  }
  sbuf_addc(&g->args, '}');
  it->args = xstrndup(g->args.s, g->args.len);
  it->args_len = g->args.len;
}

int64_t ingest_id(struct ing *g, uint64_t id) {
  if (id == 0 || id > INT64_MAX)
    return INGEST_SYNTHETIC_ID + g->next_id++;
  return (int64_t)id;
}

/* ------------------------------------------------------------ ntrace */

static int ingest_sync_cmp(const void *a, const void *b) {
  const struct isync *x = a, *y = b;
  if (x->nc != y->nc)
    return x->nc < y->nc ? -1 : 1;
  return x->exec_id < y->exec_id ? -1 : x->exec_id > y->exec_id;
}

/* The sync point of (nc, exec_id); else the nearest earlier exec_id of that
 * NC (*exact = false); NULL when the NC has none. */
static const struct isync *ingest_sync_find(struct ing *g, int nc,
                                            int64_t exec_id, bool *exact) {
  size_t lo = 0, hi = g->nsync;
  struct isync key = {nc, exec_id, 0, 0};
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ingest_sync_cmp(&g->syncs[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < g->nsync && g->syncs[lo].nc == nc &&
      g->syncs[lo].exec_id == exec_id) {
    *exact = true;
    return &g->syncs[lo];
  }
  *exact = false;
  if (lo > 0 && g->syncs[lo - 1].nc == nc)
    return &g->syncs[lo - 1];
  if (lo < g->nsync && g->syncs[lo].nc == nc)
    return &g->syncs[lo];
  return NULL;
}

int64_t ingest_sync_cpu(struct ing *g, int nc, int64_t exec_id) {
  bool exact;
  const struct isync *s = ingest_sync_find(g, nc, exec_id, &exact);
  return s && exact ? s->cpu : 0;
}

void ingest_pb_error(struct ing *g, const char *rel, int rc, uint64_t off) {
  g->st->skipped++;
  if (rc == -EBADMSG)
    ingest_warn(g, "Corrupt Data", rel, off, "corrupt record skipped");
  else
    ingest_warn(g, "Corrupt Data", rel, off,
                "file truncated or framing corrupt; the rest of the file is "
                "skipped");
}

/* Opens a capture file; on failure records the warning and returns NULL. */
struct fmt_pb *ingest_pb_open(struct ing *g, const char *rel,
                              const char *magic) {
  char *path = xasprintf("%s/%s", g->o->dir, rel);
  struct fmt_pb *r = NULL;
  char *cause = NULL;
  int rc = fmt_pb_open(path, magic, &r, &cause);
  free(path);
  if (rc < 0) {
    g->st->skipped++;
    ingest_warn(g, rc == -ENODATA ? "Missing Data" : "Corrupt Data", rel, 0,
                "%s", cause ? cause : "cannot open");
    free(cause);
    return NULL;
  }
  return r;
}

static const char *ingest_source_name(Nex__TraceEventSource s,
                                      const char *name) {
  switch (s) {
  case NEX__TRACE_EVENT_SOURCE__NEURON_RT:
    return "neuron_rt";
  case NEX__TRACE_EVENT_SOURCE__NEURON_HW:
    return "neuron_hw";
  case NEX__TRACE_EVENT_SOURCE__FRAMEWORK:
    return "framework";
  default:
    return filter_is_hardware(name) ? "neuron_hw" : "neuron_rt";
  }
}

void ingest_system_event(struct ing *g, const Nex__SystemEvent *e,
                         bool device_clock) {
  const char *name = e->name && *e->name ? e->name : "(unnamed)";
  if (!filter_keep_event(g->o->filter, name) ||
      !filter_keep_core(g->o->filter, e->nc_idx))
    return;
  const char *source = ingest_source_name(e->source, name);
  bool hw = strcmp(source, "neuron_hw") == 0;
  int64_t ts = e->timestamp;
  ingest_args_begin(g);
  if (strcmp(name, "timestamp_sync_point") == 0) {
    ts = e->cpu_timestamp_ns;
    ingest_args_i64(g, "cpu_timestamp_ns", e->cpu_timestamp_ns);
    ingest_args_i64(g, "nc_timestamp_ns", e->nc_timestamp_ns);
  } else if (hw && device_clock) {
    bool exact;
    const struct isync *s = ingest_sync_find(g, e->nc_idx, e->exec_id, &exact);
    ingest_args_i64(g, "nc_start_timestamp_ns", e->timestamp);
    ingest_args_i64(g, "nc_stop_timestamp_ns", e->timestamp + e->duration);
    if (s) {
      ts = s->cpu + (e->timestamp - s->dev);
      if (!exact)
        g->clock_missing++;
    } else {
      g->clock_missing++;
    }
  }
  if (e->exec_id)
    ingest_args_i64(g, "exec_id", e->exec_id);
  if (e->model_id)
    ingest_args_u64s(g, "model_id", e->model_id);
  ingest_args_str(g, "model_name", e->model_name);
  if (e->n_flow_id) {
    ingest_args_key(g, "flow_id");
    sbuf_addc(&g->args, '[');
    for (size_t i = 0; i < e->n_flow_id; i++) {
      sbuf_adds(&g->args, i ? ",\"" : "\"");
      sbuf_add_u64(&g->args, e->flow_id[i]);
      sbuf_addc(&g->args, '"');
    }
    sbuf_addc(&g->args, ']');
  }
  if (e->parent_id)
    ingest_args_u64s(g, "parent_id", e->parent_id);
  if (e->nrt_sequence_id)
    ingest_args_i64(g, "nrt_sequence_id", e->nrt_sequence_id);
  if (e->type)
    ingest_args_i64(g, "type", e->type);
  if (e->size)
    ingest_args_u64s(g, "size", e->size);
  if (e->flop_count)
    ingest_args_u64s(g, "flop_count", e->flop_count);
  if (e->mac_count)
    ingest_args_u64s(g, "mac_count", e->mac_count);
  ingest_args_attrs(g, e->attributes, e->n_attributes);

  struct store_track d = ingest_desc("slices", "system", source, g->instance);
  d.pid = g->pid;
  d.has_pid = 1;
  d.tid = e->thread_id;
  d.has_tid = 1;
  d.nc_idx = e->nc_idx;
  if (hw) {
    d.pcore_idx = e->pcore_idx;
    d.worker_gid = e->worker_gid;
  }
  if (strcmp(source, "framework") == 0 && e->framework_stream_id > 0)
    d.stream_id = e->framework_stream_id;
  struct itrack *t = ingest_track(g, &d);

  struct lanes_item it = {.ts = ts,
                          .dur = e->duration,
                          .id = ingest_id(g, e->id),
                          .name = store_writer_intern(g->w, name)};
  ingest_args_take(g, &it);
  if (e->n_flow_id) {
    it.flows = xmalloc(sizeof *it.flows * e->n_flow_id);
    it.n_flows = (int)e->n_flow_id;
    for (size_t i = 0; i < e->n_flow_id; i++)
      it.flows[i] = e->flow_id[i] & INT64_MAX;
  }
  /* host<->device copies also go to the transfer track of their NC */
  bool in = strcmp(name, "dmem_buf_copyin") == 0;
  if ((in || strcmp(name, "dmem_buf_copyout") == 0) && e->nc_idx >= 0) {
    struct store_track x = ingest_desc("slices", "system",
                                       in ? "host_to_device_transfers"
                                          : "device_to_host_transfers",
                                       g->instance);
    x.nc_idx = e->nc_idx;
    struct lanes_item copy = it;
    copy.args = it.args ? xstrndup(it.args, it.args_len) : NULL;
    copy.flows = NULL;
    copy.n_flows = 0;
    ingest_slice(g, ingest_track(g, &x), &copy);
  }
  ingest_slice(g, t, &it);
}

void ingest_hbm(struct ing *g, const Nex__HbmUsage *h) {
  struct store_track d =
      ingest_desc("counter", "system", "neuron_hbm_usage", g->instance);
  d.device_idx = h->device_idx;
  d.hbm_idx = h->hbm_idx;
  struct itrack *t = ingest_track(g, &d);
  const uint64_t v[23] = {h->total_bytes,
                          h->generic_bytes,
                          h->tensor_instructions_bytes,
                          h->scalar_instructions_bytes,
                          h->gpsimd_instructions_bytes,
                          h->io_bytes,
                          h->dram_spill_bytes,
                          h->weights_bytes,
                          h->profiler_buffers_bytes,
                          h->scalar_table_bytes,
                          h->vector_instructions_bytes,
                          h->sync_instructions_bytes,
                          h->shared_scratchpad_bytes,
                          h->tensors_bytes,
                          h->ucode_lib_bytes,
                          h->gpsimd_stdio_bytes,
                          h->collectives_bytes,
                          h->scratchpad_bytes,
                          h->dma_rings_runtime_bytes,
                          h->dma_rings_spill_bytes,
                          h->dma_rings_io_bytes,
                          h->dma_rings_collectives_bytes,
                          h->unknown_bytes};
  for (int i = 0; i < 23; i++)
    ingest_counter(g, t, i, h->timestamp, (double)v[i]);
}

/* Calls fn for every record of a capture file (messages of descriptor d).
 * report: record each unusable record as a Warning (else they are left for
 * a later pass to report). */
static void ingest_pb_each(struct ing *g, const char *rel, const char *magic,
                           const ProtobufCMessageDescriptor *d, bool report,
                           void (*fn)(struct ing *g, const char *rel,
                                      ProtobufCMessage *m, uint64_t off)) {
  struct fmt_pb *r = ingest_pb_open(g, rel, magic);
  if (!r)
    return;
  ProtobufCMessage *m;
  uint64_t off;
  int rc;
  while ((rc = fmt_pb_next(r, d, &m, &off)) != 0) {
    if (report)
      g->file_pos = fmt_pb_pos(r);
    if (rc < 0) {
      if (report)
        ingest_pb_error(g, rel, rc, off);
      if (rc == -EPIPE)
        break;
      continue;
    }
    fn(g, rel, m, off);
  }
  fmt_pb_close(r);
}

static void ingest_sync_add(struct ing *g, const Nex__SystemEvent *e) {
  if (g->nsync == g->capsync) {
    g->capsync = g->capsync ? g->capsync * 2 : 1024;
    g->syncs = xrealloc(g->syncs, sizeof *g->syncs * g->capsync);
  }
  g->syncs[g->nsync++] = (struct isync){
      e->nc_idx, e->exec_id, e->cpu_timestamp_ns, e->nc_timestamp_ns};
}

static void ingest_ntrace_record(struct ing *g, const char *rel,
                                 ProtobufCMessage *m, uint64_t off) {
  Nex__NtraceRecord *rec = (Nex__NtraceRecord *)m;
  if (rec->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
    ingest_system_event(g, rec->event, true);
  else if (rec->record_case == NEX__NTRACE_RECORD__RECORD_HBM)
    ingest_hbm(g, rec->hbm);
  else {
    g->st->skipped++;
    ingest_warn(g, "Corrupt Data", rel, off, "record of unknown kind skipped");
  }
}

/* ntrace.pb: pass 1 collects the sync points, pass 2 stores the events.
 * Pass 1 decodes only the records whose event name (NtraceRecord.event =
 * field 1, SystemEvent.name = field 2) is timestamp_sync_point. */
static void ingest_read_syncs(struct ing *g, const char *rel) {
  static const char sync[] = "timestamp_sync_point";
  g->nsync = 0;
  char *path = xasprintf("%s/%s", g->o->dir, rel);
  struct fmt_pb *r = NULL;
  char *cause = NULL;
  int rc = fmt_pb_open(path, FMT_PB_MAGIC_NTRACE, &r, &cause);
  free(path);
  free(cause); /* pass 2 reports it */
  if (rc < 0)
    return;
  const uint8_t *data, *ev, *name;
  size_t len, evlen, namelen;
  uint64_t off;
  while (fmt_pb_next_raw(r, &data, &len, &off) > 0) {
    if (!fmt_pb_field(data, len, 1, &ev, &evlen) ||
        !fmt_pb_field(ev, evlen, 2, &name, &namelen) ||
        namelen != sizeof sync - 1 || memcmp(name, sync, namelen) != 0)
      continue;
    Nex__NtraceRecord *m = (Nex__NtraceRecord *)fmt_pb_decode(
        r, &nex__ntrace_record__descriptor, data, len);
    if (m && m->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
      ingest_sync_add(g, m->event);
  }
  fmt_pb_close(r);
}

static void ingest_ntrace(struct ing *g, const char *rel) {
  ingest_read_syncs(g, rel);
  if (g->nsync > 1)
    qsort(g->syncs, g->nsync, sizeof *g->syncs, ingest_sync_cmp);
  g->clock_missing = 0;
  ingest_pb_each(g, rel, FMT_PB_MAGIC_NTRACE, &nex__ntrace_record__descriptor,
                 true, ingest_ntrace_record);
  if (g->clock_missing)
    ingest_warn(g, "Clock", rel, 0,
                "%" PRIu64 " hardware events had no timestamp_sync_point with "
                "their exec_id; aligned with the nearest sync point of their "
                "NeuronCore (or left in device clock when the core has none)",
                g->clock_missing);
}

/* ------------------------------------------------------------ samples */

void ingest_cpu_sample(struct ing *g, const Nex__CpuUsage *c) {
  struct store_track d =
      ingest_desc("counter", "system", "host_cpu_util", g->instance);
  d.cpu_id = *c->cpu_id ? c->cpu_id : "unknown";
  ingest_counter(g, ingest_track(g, &d), 0, c->timestamp, c->util_percent);
}

void ingest_mem_sample(struct ing *g, const Nex__HostMemUsage *h) {
  struct store_track d =
      ingest_desc("counter", "system", "host_mem", g->instance);
  struct itrack *t = ingest_track(g, &d);
  ingest_counter(g, t, 0, h->timestamp, (double)h->used_bytes);
  ingest_counter(g, t, 1, h->timestamp, h->used_percent);
}

static void ingest_cpu_record(struct ing *g, const char *rel,
                              ProtobufCMessage *m, uint64_t off) {
  ingest_cpu_sample(g, (Nex__CpuUsage *)m);
  (void)rel, (void)off;
}

static void ingest_cpu_util(struct ing *g, const char *rel) {
  ingest_pb_each(g, rel, FMT_PB_MAGIC_CPU_UTIL, &nex__cpu_usage__descriptor,
                 true, ingest_cpu_record);
}

static void ingest_mem_record(struct ing *g, const char *rel,
                              ProtobufCMessage *m, uint64_t off) {
  ingest_mem_sample(g, (Nex__HostMemUsage *)m);
  (void)rel, (void)off;
}

static void ingest_host_mem(struct ing *g, const char *rel) {
  ingest_pb_each(g, rel, FMT_PB_MAGIC_HOST_MEM,
                 &nex__host_mem_usage__descriptor, true, ingest_mem_record);
}

/* ------------------------------------------------------------ processes */

void ingest_process(struct ing *g, const char *instance, int64_t pid,
                    const char *name, const char *dir) {
  store_writer_exec(g->w,
                    "INSERT INTO process (instance_id, pid, name, dir) "
                    "VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET "
                    "name = coalesce(excluded.name, name), "
                    "dir = coalesce(dir, excluded.dir)",
                    "titt", instance, pid, name, dir);
}

void ingest_thread(struct ing *g, const char *instance, int64_t pid,
                   int64_t tid, const char *name) {
  store_writer_exec(g->w,
                    "INSERT INTO thread (instance_id, pid, tid, name) "
                    "VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET "
                    "name = excluded.name",
                    "tiit", instance, pid, tid, name);
}

static void ingest_fmt_time(int64_t ns, char *buf, size_t n) {
  time_t s = (time_t)(ns / 1000000000LL);
  struct tm tm;
  gmtime_r(&s, &tm);
  char tmp[32];
  strftime(tmp, sizeof tmp, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, n, "%s.%09lld +0000 UTC", tmp, (long long)(ns % 1000000000LL));
}

void ingest_system_metadata(struct ing *g, const char *instance, int64_t pid,
                            const Nex__TraceInfo *ti, const char *dir,
                            const char *file) {
  char first[64] = "", last[64] = "", first_ns[24] = "", last_ns[24] = "";
  if (ti) {
    ingest_fmt_time(ti->first_ts_ns, first, sizeof first);
    ingest_fmt_time(ti->last_ts_ns, last, sizeof last);
    snprintf(first_ns, sizeof first_ns, "%" PRId64, ti->first_ts_ns);
    snprintf(last_ns, sizeof last_ns, "%" PRId64, ti->last_ts_ns);
  }
  store_writer_exec(
      g->w,
      "INSERT INTO SystemProfileMetadata (instance_id, process_id, first_ts, "
      "last_ts, first_ts_ns, last_ts_ns, ntff_version, hbm_capacity_bytes, "
      "dropped_events, stored_events, instance_type, runtime_version, "
      "driver_version, dir) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      "titttt"
      "IIIItttt",
      instance, pid, ti ? first : NULL, ti ? last : NULL, ti ? first_ns : NULL,
      ti ? last_ns : NULL, ti ? (int64_t)ti->ntff_version : -1,
      ti ? (int64_t)ti->hbm_capacity_bytes : -1,
      ti ? (int64_t)ti->dropped_events : -1,
      ti ? (int64_t)ti->stored_events : -1,
      ti && *ti->instance_type ? ti->instance_type : NULL,
      ti && *ti->runtime_version ? ti->runtime_version : NULL,
      ti && *ti->driver_version ? ti->driver_version : NULL, dir);
  if (ti && ti->dropped_events)
    ingest_warn(g, "Missing Data", file, 0,
                "%" PRIu64 " trace events were dropped during capture (stored "
                "%" PRIu64 " out of %" PRIu64 " total events)",
                ti->dropped_events, ti->stored_events,
                ti->stored_events + ti->dropped_events);
}

/* Reads trace_info.pb; sets g->instance/pid overrides.  Returns false if
 * the profile is filtered out. */
static bool ingest_trace_info(struct ing *g, const struct discover_process *p,
                              char **instance, int64_t *pid) {
  *instance = xstrdup(p->instance_id);
  *pid = p->pid;
  struct fmt_pb *r = ingest_pb_open(g, p->trace_info, FMT_PB_MAGIC_TRACE_INFO);
  Nex__TraceInfo *ti = NULL;
  if (r) {
    ProtobufCMessage *m;
    uint64_t off;
    int rc = fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off);
    if (rc == 1)
      ti = (Nex__TraceInfo *)m;
    else if (rc < 0)
      ingest_pb_error(g, p->trace_info, rc, off);
    else
      ingest_warn(g, "Missing Data", p->trace_info, 0,
                  "trace_info.pb is empty");
  }
  if (ti && *ti->instance_id) {
    free(*instance);
    *instance = xstrdup(ti->instance_id);
  }
  if (ti && ti->process_id > 0)
    *pid = ti->process_id;
  bool keep = filter_keep_instance(g->o->filter, *instance);
  if (keep)
    ingest_system_metadata(g, *instance, *pid, ti, p->rel, p->trace_info);
  fmt_pb_close(r);
  return keep;
}

/* ------------------------------------------------------------ main */

char *ingest_default_db_path(const char *dir, char **cause) {
  char *real = realpath(dir, NULL);
  if (!real) {
    *cause = xasprintf("cannot resolve --dir %s: %s", dir, strerror(errno));
    return NULL;
  }
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  char *base = xdg && *xdg ? xasprintf("%s/neuron-explorer-server", xdg)
               : home && *home
                   ? xasprintf("%s/.cache/neuron-explorer-server", home)
                   : xstrdup("/tmp/neuron-explorer-server");
  char *parent = xstrndup(base, (size_t)(strrchr(base, '/') - base));
  mkdir(parent, 0700);
  free(parent);
  if (mkdir(base, 0700) != 0 && errno != EEXIST) {
    *cause = xasprintf("cannot create cache folder %s: %s (use --db)", base,
                       strerror(errno));
    free(base);
    free(real);
    return NULL;
  }
  char *path = xasprintf("%s/%016llx.db", base,
                         (unsigned long long)util_hash(real, strlen(real)));
  free(base);
  free(real);
  return path;
}

char *ingest_profile_base(const char *dir) {
  char *real = realpath(dir, NULL);
  const char *s = real ? real : dir;
  const char *b = strrchr(s, '/');
  char *name = xstrdup(b && b[1] ? b + 1 : s);
  free(real);
  return name;
}

/* ------------------------------------------------------------ derived */

/* Bytes of intervals spread over fixed buckets, pro rata of overlap. */
struct ingest_bins {
  int64_t first, width;
  size_t n;
  double *bytes;
};

static int ingest_bins_row(void *ud, sqlite3_stmt *st) {
  struct ingest_bins *b = ud;
  int64_t ts = sqlite3_column_int64(st, 0) - b->first;
  int64_t dur = sqlite3_column_int64(st, 1);
  double bytes = sqlite3_column_double(st, 2);
  if (ts < 0 || dur < 0 || bytes <= 0)
    return 0;
  int64_t end = ts + (dur > 0 ? dur : 1);
  for (int64_t k = ts / b->width; k <= (end - 1) / b->width; k++) {
    if ((size_t)k >= b->n)
      break;
    int64_t lo = k * b->width > ts ? k * b->width : ts;
    int64_t hi = (k + 1) * b->width < end ? (k + 1) * b->width : end;
    b->bytes[k] += bytes * (double)(hi - lo) / (double)(end - ts);
  }
  return 0;
}

/* A rate counter on dst: the bytes of the intervals `sql` returns (ts,
 * dur, bytes; one int parameter) per bucket of (last - first) /
 * INGEST_RATE_BUCKETS ns (at least 1 us), as bytes/s. */
static void ingest_binned_rate(struct ing *g, struct itrack *dst, int64_t first,
                               int64_t last, const char *sql, int64_t param) {
  if (last <= first)
    return;
  struct ingest_bins b = {.first = first};
  b.width = (last - first) / INGEST_RATE_BUCKETS + 1;
  if (b.width < 1000)
    b.width = 1000;
  b.n = (size_t)((last - first) / b.width + 1);
  b.bytes = xcalloc(b.n, sizeof *b.bytes);
  int rc = store_writer_query(g->w, ingest_bins_row, &b, sql, "i", param);
  if (rc < 0)
    ingest_warn(g, "Missing Data", NULL, 0,
                "the %s counter is incomplete: %s", dst->desc.source,
                strerror(-rc));
  for (size_t k = 0; k < b.n; k++)
    ingest_counter(g, dst, 0, b.first + (int64_t)k * b.width,
                   b.bytes[k] * 1e9 / (double)b.width);
  free(b.bytes);
}

struct ingest_track_row {
  struct ing *g;
  int64_t *ids;
  char **inst;
  int *nc;
  char **src;
  size_t n;
};

static int ingest_collect_row(void *ud, sqlite3_stmt *st) {
  struct ingest_track_row *c = ud;
  c->ids = xrealloc(c->ids, sizeof *c->ids * (c->n + 1));
  c->inst = xrealloc(c->inst, sizeof *c->inst * (c->n + 1));
  c->nc = xrealloc(c->nc, sizeof *c->nc * (c->n + 1));
  c->src = xrealloc(c->src, sizeof *c->src * (c->n + 1));
  c->ids[c->n] = sqlite3_column_int64(st, 0);
  c->inst[c->n] = xstrdup((const char *)sqlite3_column_text(st, 1));
  c->nc[c->n] = sqlite3_column_int(st, 2);
  c->src[c->n] = xstrdup((const char *)sqlite3_column_text(st, 3));
  c->n++;
  return 0;
}

static void ingest_collect_free(struct ingest_track_row *c) {
  for (size_t i = 0; i < c->n; i++) {
    free(c->inst[i]);
    free(c->src[i]);
  }
  free(c->ids);
  free(c->inst);
  free(c->nc);
  free(c->src);
}

/* Sets DeviceProfileList.time_offset_ns: the system start of the first
 * execution's nc_exec_running (`where` narrows the slices searched) minus
 * its device start. */
#define INGEST_SQL_OFFSET(where)                                               \
  "UPDATE DeviceProfileList SET time_offset_ns = ("                            \
  " SELECT s.ts - e.execution_start_ts"                                        \
  " FROM (SELECT * FROM ExecutionInfo x WHERE x.device_profile_id ="           \
  "       DeviceProfileList.id AND x.exec_id IS NOT NULL"                      \
  "       ORDER BY x.execution_index LIMIT 1) e,"                              \
  "      track t CROSS JOIN slice s ON s.track = t.id"                         \
  " WHERE t.domain = 'system' AND t.source = 'neuron_hw'"                      \
  "   AND t.instance_id = DeviceProfileList.instance_id"                       \
  "   AND t.pid = DeviceProfileList.process_id"                                \
  "   AND t.nc_idx = DeviceProfileList.nc_id" where                            \
  "   AND s.name = (SELECT id FROM str WHERE s = 'nc_exec_running')"           \
  "   AND json_extract(s.args, '$.exec_id') = e.exec_id LIMIT 1)"

static void ingest_derived(struct ing *g) {
  /* host<->device transfer bandwidth, per instance, NC and direction */
  struct ingest_track_row c = {.g = g};
  int rc = store_writer_query(g->w, ingest_collect_row, &c,
                     "SELECT id, instance_id, coalesce(nc_idx, -1), "
                     "source || ' ' || first_ts || ' ' || last_ts "
                     "FROM track WHERE source IN ('host_to_device_transfers',"
                     "'device_to_host_transfers') AND event_count > 0 "
                     "ORDER BY id",
                     "");
  if (rc < 0)
    ingest_warn(g, "Missing Data", NULL, 0,
                "no transfer bandwidth counters: %s", strerror(-rc));
  for (size_t i = 0; i < c.n; i++) {
    char src[32];
    long long first, last;
    if (sscanf(c.src[i], "%31s %lld %lld", src, &first, &last) != 3)
      continue;
    bool in = strcmp(src, "host_to_device_transfers") == 0;
    struct store_track d = ingest_desc("counter", "system",
                                       in ? "host_to_device_bandwidth"
                                          : "device_to_host_bandwidth",
                                       c.inst[i]);
    d.nc_idx = c.nc[i];
    ingest_binned_rate(g, ingest_track(g, &d), first, last,
                       "SELECT ts, dur, coalesce(CAST(json_extract(args, "
                       "'$.size') AS REAL), 0) FROM slice WHERE track = ?",
                       c.ids[i]);
  }
  ingest_collect_free(&c);
  /* DMA throughput per device profile */
  struct ingest_track_row dp = {.g = g};
  rc = store_writer_query(g->w, ingest_collect_row, &dp,
                     "SELECT id, instance_id, coalesce(pcore_idx, -1), "
                     "process_id || ' ' || first_ts || ' ' || last_ts "
                     "FROM DeviceProfileList WHERE dma_count > 0 ORDER BY id",
                     "");
  if (rc < 0)
    ingest_warn(g, "Missing Data", NULL, 0, "no DMA throughput counters: %s",
                strerror(-rc));
  for (size_t i = 0; i < dp.n; i++) {
    long long pid, first, last;
    if (sscanf(dp.src[i], "%lld %lld %lld", &pid, &first, &last) != 3)
      continue;
    struct store_track d =
        ingest_desc("counter", "device", "dma_throughput", dp.inst[i]);
    d.pid = pid;
    d.has_pid = 1;
    d.pcore_idx = dp.nc[i];
    d.device_profile_id = dp.ids[i];
    d.label = "dma_throughput";
    ingest_binned_rate(g, ingest_track(g, &d), first, last,
                       /* CROSS JOIN: track first, then each DMA track's
                        * slices by key (not a scan of every slice) */
                       "SELECT s.ts, s.dur, coalesce(CAST(json_extract(s.args,"
                       " '$.transfer_bytes') AS REAL), 0) FROM track t "
                       "CROSS JOIN slice s ON s.track = t.id WHERE "
                       "t.device_profile_id = ? AND t.source = 'dma'",
                       dp.ids[i]);
  }
  ingest_collect_free(&dp);
  /* device timeline -> system timeline, through the first execution's
   * nc_exec_running: first near the cpu time of its sync point (lanes by
   * equality so the ts range uses the key), then, for the rest, anywhere
   * on the track */
  for (size_t i = 0; i < g->nhints; i++)
    store_writer_exec(
        g->w,
        INGEST_SQL_OFFSET("   AND s.lane IN (0, 1, 2, 3, 4, 5, 6, 7)"
                          "   AND s.ts BETWEEN ?2 - 10000000000 AND "
                          "?2 + 10000000000") " WHERE id = ?1",
        "ii", g->hints[i].dp_id, g->hints[i].cpu_ts);
  store_writer_exec(g->w, INGEST_SQL_OFFSET("") " WHERE time_offset_ns IS NULL",
                    "");
}

/* Places the slices waiting in the sorters of the process's own tracks
 * created since index `from` (the process was read to the end, so these
 * tracks are complete): their memory and runs are not held until the
 * whole profile is read.  Tracks of the instance (transfers) go on with
 * the next process of the instance and are drained at the end; a late
 * slice of a drained track would still get a lane (lanes.h). */
static void ingest_drain_tracks(struct ing *g, size_t from) {
  for (size_t i = from; i < g->tn; i++) {
    struct itrack *t = g->order[i];
    if (t->kind == TRACK_SLICES && t->desc.has_pid && t->desc.pid == g->pid)
      ingest_track_drain(g, t);
  }
}

void ingest_drain_device(struct ing *g, size_t from, int64_t dp_id) {
  for (size_t i = from; i < g->tn; i++) {
    struct itrack *t = g->order[i];
    if (t->kind == TRACK_SLICES && t->desc.device_profile_id == dp_id)
      ingest_track_drain(g, t);
  }
}

/* Finishes the tracks created since index `from`; returns the new end. */
static size_t ingest_finish_tracks(struct ing *g, size_t from) {
  size_t n = g->tn;
  for (size_t i = from; i < n; i++)
    ingest_track_finish(g, g->order[i]);
  return n;
}

static void ingest_read_file(struct ing *g, const char *rel,
                             void (*fn)(struct ing *g, const char *rel)) {
  ingest_file_begin(g, rel);
  fn(g, rel);
  char *path = xasprintf("%s/%s", g->o->dir, rel);
  struct stat sb;
  ingest_file_end(g, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
  free(path);
}

/* Whether a JSON file was read already as a vendor export. */
static bool ingest_json_done(const struct ing *g, const char *rel) {
  for (int i = 0; i < g->n_vjson; i++)
    if (g->vjson[i] == rel)
      return true;
  return false;
}

static void ingest_process_json(struct ing *g, const char *rel) {
  ingest_chrome_read(g, rel, g->instance, g->pid);
}

static void ingest_standalone_json(struct ing *g, const char *rel) {
  ingest_chrome_read(g, rel, NULL, -1);
}

/* Reads the vendor JSON exports among all JSON files first; remembers
 * them so that the Chrome reader skips them. */
static void ingest_vendor_json(struct ing *g) {
  const struct discover_result *d = g->d;
  int n = d->n_json;
  for (int i = 0; i < d->n_procs; i++)
    n += d->procs[i].n_json;
  char **rels = xcalloc((size_t)(n ? n : 1), sizeof *rels);
  bool *handled = xcalloc((size_t)(n ? n : 1), sizeof *handled);
  int k = 0;
  for (int i = 0; i < d->n_json; i++)
    rels[k++] = d->json[i];
  for (int i = 0; i < d->n_procs; i++)
    for (int j = 0; j < d->procs[i].n_json; j++)
      rels[k++] = d->procs[i].json[j];
  if (ingest_vjson_read_all(g, rels, n, handled) > 0) {
    g->vjson = xcalloc((size_t)n, sizeof *g->vjson);
    for (int i = 0; i < n; i++)
      if (handled[i])
        g->vjson[g->n_vjson++] = rels[i];
  }
  free(rels);
  free(handled);
}

static void ingest_profile(struct ing *g, const struct discover_process *p,
                           const char *profile_base) {
  char *instance = NULL;
  int64_t pid = p->pid;
  bool system = p->trace_info && !g->o->ignore_system;
  if (system) {
    ingest_file_begin(g, p->trace_info);
    bool keep = ingest_trace_info(g, p, &instance, &pid);
    ingest_file_end(g, 0);
    if (!keep) {
      free(instance);
      return;
    }
  } else {
    instance = xstrdup(*p->instance_id ? p->instance_id : profile_base);
    if (!filter_keep_instance(g->o->filter, instance)) {
      free(instance);
      return;
    }
  }
  if (pid < 0)
    pid = 0;
  g->instance = instance;
  g->pid = pid;
  size_t tracks_before = g->tn;
  ingest_process(g, instance, pid, NULL, p->rel);
  if (!g->o->ignore_system) {
    if (p->ntrace)
      ingest_read_file(g, p->ntrace, ingest_ntrace);
    if (p->cpu_util)
      ingest_read_file(g, p->cpu_util, ingest_cpu_util);
    if (p->host_mem)
      ingest_read_file(g, p->host_mem, ingest_host_mem);
    for (int i = 0; i < p->n_json; i++)
      if (!ingest_json_done(g, p->json[i]))
        ingest_read_file(g, p->json[i], ingest_process_json);
  }
  if (!g->o->ignore_device)
    for (int i = 0; i < p->n_devices; i++) {
      ingest_file_begin(g, p->devices[i].ntff);
      ingest_device_read(g, &p->devices[i], profile_base);
      ingest_file_end(g, p->devices[i].size);
    }
  ingest_drain_tracks(g, tracks_before);
  ingest_stats_flush(g);
  g->instance = NULL;
  free(instance);
}

static void ingest_info(struct ing *g, const char *key, const char *value) {
  store_writer_exec(g->w, "INSERT OR REPLACE INTO store_info VALUES (?, ?)",
                    "tt", key, value);
}

static void ingest_free(struct ing *g) {
  for (size_t i = 0; i < g->tn; i++)
    ingest_track_free(g->order[i]);
  lanes_pool_free(g->lanes);
  free(g->tracks);
  free(g->order);
  free(g->stats);
  free(g->syncs);
  free(g->hints);
  free(g->chrome_files);
  for (size_t i = 0; i < g->nsynth; i++)
    free(g->synth_names[i]);
  free(g->synth_names);
  free(g->vjson);
  sbuf_free(&g->args);
}

int ingest_run(const struct ingest_opts *o, struct ingest_stats *st,
               char **cause) {
  memset(st, 0, sizeof *st);
  int64_t t0 = util_now_ns();
  struct discover_result *d;
  int rc = discover_run(o->dir, &d, cause);
  if (rc < 0)
    return rc;
  char fp[17];
  {
    struct sbuf b = {0};
    sbuf_printf(&b, "schema-%s|%s|%s|dev=%d|sys=%d", INGEST_SCHEMA_VERSION,
                d->fingerprint, filter_describe(o->filter), o->ignore_device,
                o->ignore_system);
    snprintf(fp, sizeof fp, "%016llx",
             (unsigned long long)util_hash(b.s, b.len));
    sbuf_free(&b);
  }
  if (!o->force &&
      store_is_current(o->db_path, fp, &st->events, &st->warnings)) {
    st->reused = 1;
    st->seconds = (double)(util_now_ns() - t0) / 1e9;
    discover_free(d);
    return 0;
  }
  struct store_writer *w;
  rc = store_writer_open(o->db_path, &w, cause);
  if (rc < 0) {
    discover_free(d);
    return rc;
  }
  struct ing g = {.o = o, .w = w, .d = d, .st = st, .t0 = t0};
  g.lanes = lanes_pool_new(o->db_path,
                           o->sort_budget ? o->sort_budget : INGEST_SORT_BUDGET);
  for (int i = 0; i < d->n_messages; i++)
    ingest_warn(&g, "Missing Data", NULL, 0, "%s", d->messages[i]);
  char *base = ingest_profile_base(o->dir);
  if (!o->ignore_system)
    ingest_vendor_json(&g);
  for (int i = 0; i < d->n_procs; i++)
    ingest_profile(&g, &d->procs[i], base);
  if (!o->ignore_system) {
    g.instance = NULL;
    g.pid = -1;
    for (int i = 0; i < d->n_json; i++)
      if (!ingest_json_done(&g, d->json[i]))
        ingest_read_file(&g, d->json[i], ingest_standalone_json);
  }
  int64_t t1 = util_now_ns();
  size_t done = ingest_finish_tracks(&g, 0);
  int64_t t2 = util_now_ns();
  rc = ingest_chrome_bind_flows(&g);
  if (rc < 0 && !g.failed)
    g.failed = rc;
  if (g.failed) {
    /* our own spill file could not be read back (a disk error): no store
     * rather than one missing events; a store being served stays */
    *cause = xasprintf("cannot read back the temporary spill file beside "
                       "%s: %s",
                       o->db_path, strerror(-g.failed));
    rc = g.failed;
    ingest_free(&g);
    discover_free(d);
    free(base);
    store_writer_abort(w);
    st->seconds = (double)(util_now_ns() - t0) / 1e9;
    return rc;
  }
  ingest_derived(&g);
  ingest_finish_tracks(&g, done);
  int64_t t3 = util_now_ns();
  log_debug("ingest: read %.2f s, tracks %.2f s, derived %.2f s",
            (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9,
            (double)(t3 - t2) / 1e9);
  ingest_stats_flush(&g);
  char *real = realpath(o->dir, NULL);
  ingest_info(&g, "schema_version", INGEST_SCHEMA_VERSION);
  ingest_info(&g, "fingerprint", fp);
  ingest_info(&g, "dir", real ? real : o->dir);
  ingest_info(&g, "profile_name", base);
  char nflows[24];
  snprintf(nflows, sizeof nflows, "%zu", g.nflows);
  ingest_info(&g, "chrome_flow_endpoints", nflows);
  free(real);
  free(base);
  ingest_progress(&g, true);
  if (g.bar_drawn)
    fputc('\n', stderr);
  if (g.warned_stderr > INGEST_STDERR_WARNINGS)
    log_warn("%" PRIu64 " more warnings: see the Warning table",
             g.warned_stderr - INGEST_STDERR_WARNINGS);
  ingest_free(&g);
  discover_free(d);
  int64_t t4 = util_now_ns();
  rc = store_writer_finish(w, cause);
  log_debug("ingest: finish %.2f s", (double)(util_now_ns() - t4) / 1e9);
  st->seconds = (double)(util_now_ns() - t0) / 1e9;
  return rc;
}
