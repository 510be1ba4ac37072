/* ingest.c -- the core of the sink every reader writes through (see
 * ingest_sink.h and ingest_core.h): warnings and progress, base tracks by
 * description, slices (held per track by lanes.c, placed with their
 * nesting depth, LOD rows, flow ids, name statistics), counter samples,
 * the slices and rows of trace formats, the sink's life.  Its smaller
 * services are in ingest_sink.c.  The
 * readers (ingest_readers.h) know none of this file's structs;
 * ingest_run.c drives them.
 */
#include "argtext.h"
#include "ingest_core.h"
#include "ingest_flows.h"
#include "lod.h"
#include "log.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ warnings */

/* The count of warnings of `file` ("" for none), its slot created on first
 * use in g's open-addressing table (grown at half full). */
static struct ingest_warn_file *ingest_warn_slot(struct ing *g,
                                                 const char *file) {
  if (2 * (g->nwfiles + 1) > g->capwfiles) {
    struct ingest_warn_file *old = g->wfiles;
    size_t oldcap = g->capwfiles;
    g->capwfiles = oldcap ? 2 * oldcap : 64;
    g->wfiles = xcalloc(g->capwfiles, sizeof *g->wfiles);
    g->nwfiles = 0;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i].file)
        *ingest_warn_slot(g, old[i].file) = old[i];
    free(old);
  }
  size_t mask = g->capwfiles - 1;
  size_t i = (size_t)util_hash(file, strlen(file)) & mask;
  while (g->wfiles[i].file && strcmp(g->wfiles[i].file, file) != 0)
    i = (i + 1) & mask;
  if (!g->wfiles[i].file) {
    g->wfiles[i].file = xstrdup(file);
    g->nwfiles++;
  }
  return &g->wfiles[i];
}

/* Writes a Warning row, counts it and prints it (the first ones). */
static void ingest_warn_row(struct ing *g, const char *category,
                            const char *file, uint64_t offset,
                            const char *msg) {
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
}

void ingest_warn(struct ing *g, const char *category, const char *file,
                 uint64_t offset, const char *fmt, ...) {
  struct ingest_warn_file *f = ingest_warn_slot(g, file ? file : "");
  if (f->n++ >= INGEST_FILE_WARNINGS) { /* counted for the summary row */
    if (f->n == INGEST_FILE_WARNINGS + 1) {
      f->category = category;
      f->first_left = offset;
    }
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  char *msg;
  if (vasprintf(&msg, fmt, ap) < 0)
    fatal("out of memory");
  va_end(ap);
  ingest_warn_row(g, category, file, offset, msg);
  if (g->o->on_warning)
    g->o->on_warning(g->o->ud, file, offset, msg);
  free(msg);
}

/* Records one Warning row per file that had more than INGEST_FILE_WARNINGS
 * warnings (their count, at the offset of the first not recorded) and
 * frees the counts. */
static void ingest_warn_flush(struct ing *g) {
  for (size_t i = 0; i < g->capwfiles; i++) {
    struct ingest_warn_file *f = &g->wfiles[i];
    if (f->file && f->n > INGEST_FILE_WARNINGS) {
      char *msg = xasprintf("%" PRIu64 " more warnings of this file from "
                            "this offset on, not recorded (the first %d of "
                            "a file are)",
                            f->n - INGEST_FILE_WARNINGS, INGEST_FILE_WARNINGS);
      const char *file = *f->file ? f->file : NULL;
      ingest_warn_row(g, f->category, file, f->first_left, msg);
      if (g->o->on_warning)
        g->o->on_warning(g->o->ud, file, f->first_left, msg);
      free(msg);
    }
    free(f->file);
  }
  free(g->wfiles);
  g->wfiles = NULL;
  g->nwfiles = g->capwfiles = 0;
}

/* ------------------------------------------------------------ progress */

void ingest_progress(struct ing *g, bool force) {
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

/* Up to the first 8 bytes of s (0 for NULL). */
static uint64_t ingest_track_prefix(const char *s) {
  uint64_t x = 0;
  for (int i = 0; s && i < 8 && s[i]; i++)
    x = x << 8 | (unsigned char)s[i];
  return x;
}

/* The slot of d among the recent tracks: a hash of its numbers, the start
 * of its source and label (the texts that tell a reader's tracks apart;
 * they may be copies made anew for each event) and where its other
 * strings are (not what they hold: cheap, and a slot's track is compared
 * whole before it is used). */
static size_t ingest_track_recent_slot(const struct store_track *d) {
  uint64_t k[] = {(uint64_t)d->tid,
                  (uint64_t)d->pid,
                  (uint64_t)d->nc_idx,
                  (uint64_t)d->worker_gid,
                  (uint64_t)d->stream_id,
                  (uint64_t)d->hbm_idx,
                  (uint64_t)d->device_profile_id,
                  ingest_track_prefix(d->source),
                  ingest_track_prefix(d->label),
                  (uint64_t)(uintptr_t)d->instance_id,
                  (uint64_t)(uintptr_t)d->cpu_id};
  uint64_t h = 0;
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    h = (h ^ k[i]) * 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 58) & (INGEST_RECENT - 1);
}

struct itrack *ingest_track_ordered(struct ing *g, const struct store_track *d,
                                    enum lanes_order order) {
  size_t slot = ingest_track_recent_slot(d);
  struct itrack *t = g->recent[slot];
  if (t && ingest_desc_eq(&t->desc, d))
    return t;
  uint64_t h = ingest_desc_hash(d);
  t = ingest_track_find(g, d, h);
  if (t)
    return g->recent[slot] = t;
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
  /* a counter's samples wait in a sorter too: the store keeps each
   * series in (ts, seq) order */
  t->lanes =
      lanes_new(g->lanes, t->kind == TRACK_SLICES ? order : LANES_PUSH_ORDER);
  if (t->kind == TRACK_COUNTER)
    t->cbuf = xcalloc(INGEST_LOD_MIN, sizeof *t->cbuf);
  ingest_track_put(g, t);
  return t;
}

struct itrack *ingest_track(struct ing *g, const struct store_track *d) {
  return ingest_track_ordered(g, d, LANES_PUSH_ORDER);
}

int64_t ingest_track_id(const struct itrack *t) { return t->id; }

int64_t ingest_track_count(const struct itrack *t) { return t->count; }

void ingest_track_span(const struct itrack *t, int64_t *first, int64_t *last) {
  *first = t->first_ts;
  *last = t->last_ts;
}

const struct store_track *ingest_track_desc(const struct itrack *t) {
  return &t->desc;
}

size_t ingest_track_n(const struct ing *g) { return g->tn; }

struct itrack *ingest_track_at(const struct ing *g, size_t i) {
  return g->order[i];
}

bool ingest_track_hooked(const struct itrack *t) { return t->hook != NULL; }

void *ingest_track_hook_state(const struct itrack *t,
                              const struct ingest_hook *hook) {
  return t->hook == hook ? t->hook_state : NULL;
}

void ingest_track_hook(struct itrack *t, const struct ingest_hook *hook,
                       void *state) {
  t->hook = hook;
  t->hook_state = state;
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
void ingest_stats_flush(struct ing *g) {
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
  /* the flows go in the slice's block, and in the flow table (its blocks
   * written in flow order at the end); those of a slice of two flows or
   * more in slice_flow too, where a reader asks whether a flow's endpoint
   * carries another one (ingest_item_flows keeps them below 2^63) */
  store_writer_slice_flows(g->w, t->id, lane, it->ts, it->id, it->dur, it->name,
                           it->grp, it->args, it->args_len,
                           (const int64_t *)it->flows, it->n_flows);
  if (t->lod)
    lod_slice(t->lod, g->w, lane, it->ts, it->dur, it->id, it->name, it->grp);
  int several = 0;
  for (int i = 1; i < it->n_flows; i++)
    several |= it->flows[i] != it->flows[0];
  for (int i = 0; i < it->n_flows; i++) {
    int64_t f = (int64_t)it->flows[i];
    if (several)
      store_writer_flow(g->w, STORE_FLOW_BY_SLICE, f, t->id, lane, it->ts,
                        it->id);
    ingest_flow_end(g, f, t->id, lane, it->ts, it->id);
  }
  if (t->hook)
    t->hook->placed(g, t, lane, it);
  ingest_stat_add(g, t->id, it->name, it->dur);
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

/* Adds a slice (a copy of it->args and it->flows): it waits in the
 * track's sorter until the track is drained. */
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
  /* the series of one sample share its seq (series 0 comes first, the
   * others in order); a series repeated or out of order, as a trace may
   * give them, starts another sample: a row never has the key of another */
  if (series == 0 || series <= t->last_series)
    t->samples++;
  t->last_series = series;
  /* in the sorter: ts, seq, series, the value's bits */
  struct lanes_item it = {.ts = ts, .id = t->samples, .name = series};
  memcpy(&it.grp, &v, sizeof v);
  lanes_push(t->lanes, &it);
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
  if (isnan(v)) { /* SQLite stores NULL for NaN: the store would refuse it */
    if (!t->nan++)
      ingest_warn(g, "Corrupt Data", g->file, g->file_pos,
                  "a sample of counter track %" PRId64 " (%s) is not a "
                  "number: left out, as every other one of the track",
                  t->id, t->desc.source);
    g->st->skipped++;
    return;
  }
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

/* ------------------------------------------------------------ traces */

void ingest_trace_slice(struct ing *g, struct itrack *t,
                        const struct ingest_trace_slice *s) {
  struct lanes_item it = {.ts = s->ts,
                          .dur = s->dur,
                          .id = ingest_id(g, 0),
                          .name = ingest_intern(g, s->name),
                          .order = s->order};
  struct sbuf *b = &g->args;
  argtext_begin(b);
  argtext_str(b, "cat", s->cat);
  if (s->instant)
    argtext_i64(b, "instant", 1);
  if (s->incomplete)
    argtext_i64(b, "incomplete", 1);
  /* the event's args are its attributes, beside cat (as the vendor's
   * extra_attributes_json has them): an object's members are spliced in */
  const char *a = s->args_json ? s->args_json : "";
  size_t al = strlen(a);
  bool object = al >= 2 && a[0] == '{' && a[al - 1] == '}';
  size_t in = object ? strspn(a + 1, " \t\r\n") + 1 : 0;
  if (object && in < al - 1)
    argtext_splice(b, a, al);
  else if (al > 0 && !object)
    argtext_raw(b, "args", a);
  ingest_args_take(g, &it);
  ingest_item_flows(g, &it, s->flow_ids, s->n_flow_ids);
  ingest_slice(g, t, &it);
}

void ingest_trace_process(struct ing *g, const char *instance, int64_t pid,
                          const char *name, bool rename) {
  store_writer_exec(g->w,
                    "INSERT INTO process (instance_id, pid, name, named, "
                    "chrome) VALUES (?1,?2,?3,?4,1) ON CONFLICT DO UPDATE SET "
                    "name = CASE WHEN ?5 THEN coalesce(excluded.name, name) "
                    "ELSE coalesce(name, excluded.name) END, chrome = 1, "
                    "named = CASE WHEN ?5 THEN max(named, excluded.named) "
                    "ELSE named END",
                    "titii", instance, pid, name, (int64_t)(name != NULL),
                    (int64_t)rename);
}

void ingest_trace_thread(struct ing *g, const char *instance, int64_t pid,
                         int64_t tid, const char *name, bool rename) {
  store_writer_exec(g->w,
                    "INSERT INTO thread (instance_id, pid, tid, name, named) "
                    "VALUES (?1,?2,?3,?4,1) ON CONFLICT DO UPDATE SET "
                    "named = 1, name = CASE WHEN ?5 THEN "
                    "coalesce(excluded.name, name) ELSE "
                    "coalesce(name, excluded.name) END",
                    "tiiti", instance, pid, tid, name, (int64_t)rename);
}

/* ------------------------------------------------------------ finish */

/* The ingest fails: n events (`what`) of track t were not read back from
 * the spill file (error rc) and are lost. */
static void ingest_lost(struct ing *g, const struct itrack *t, int64_t n,
                        const char *what, int rc) {
  g->st->skipped += (uint64_t)n;
  ingest_warn(g, "Missing Data", NULL, 0,
              "%" PRId64 " %s of track %" PRId64
              " lost: cannot read the spill file (%s)",
              n, what, t->id, strerror(-rc));
  if (!g->failed)
    g->failed = rc;
}

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
  if (rc < 0)
    ingest_lost(g, t, n - placed, "slices", rc);
}

/* Writes the samples of counter track t, in time order (the order pushed
 * on equal times: each series in (ts, seq) order). */
static void ingest_counter_drain(struct ing *g, struct itrack *t) {
  int64_t lo, hi, n = lanes_pending(t->lanes, &lo, &hi), written = 0;
  struct lanes_item it;
  int64_t lane;
  int rc;
  while ((rc = lanes_pop(t->lanes, &it, &lane)) > 0) {
    double v;
    memcpy(&v, &it.grp, sizeof v);
    store_writer_counter(g->w, t->id, (int)it.name, it.ts, it.id, v);
    written++;
  }
  if (rc < 0)
    ingest_lost(g, t, n - written, "counter samples", rc);
}

static void ingest_track_finish(struct ing *g, struct itrack *t) {
  struct store_track_stats s = {0};
  if (t->kind == TRACK_SLICES) {
    ingest_track_drain(g, t);
    if (t->hook && t->hook->finished)
      t->hook->finished(g, t);
    if (t->lod)
      lod_flush(t->lod, g->w);
    s.lanes = lanes_count(t->lanes);
  } else {
    if (t->level == -2)
      ingest_counter_decide(g, t);
    if (t->clod)
      lod_counter_flush(t->clod, g->w);
    ingest_counter_drain(g, t);
  }
  s.max_dur = t->max_dur;
  s.event_count = t->count;
  s.first_ts = t->first_ts;
  s.last_ts = t->last_ts;
  s.lod_min_level = t->level >= 0 ? t->level : -1;
  store_writer_track_stats(g->w, t->id, &s);
}

/* Frees a string of a track description (they are const for the store). */
static void ingest_track_free_str(const char *s) { free((void *)(uintptr_t)s); }

static void ingest_track_free(struct itrack *t) {
  if (t->hook)
    t->hook->free(t->hook_state);
  lanes_free(t->lanes);
  lod_free(t->lod);
  lod_counter_free(t->clod);
  free(t->cbuf);
  ingest_track_free_str(t->desc.kind);
  ingest_track_free_str(t->desc.domain);
  ingest_track_free_str(t->desc.source);
  ingest_track_free_str(t->desc.instance_id);
  ingest_track_free_str(t->desc.cpu_id);
  ingest_track_free_str(t->desc.label);
  free(t);
}

/* ------------------------------------------------------------ main */

char *ingest_profile_base(const char *dir) {
  char *real = realpath(dir, NULL);
  const char *s = real ? real : dir;
  const char *b = strrchr(s, '/');
  char *name = xstrdup(b && b[1] ? b + 1 : s);
  free(real);
  return name;
}

/* Places the slices waiting in the sorters of the process's own tracks
 * created since index `from` (the process was read to the end, so these
 * tracks are complete): their memory and runs are not held until the
 * whole profile is read.  Tracks of the instance (transfers) go on with
 * the next process of the instance and are drained at the end; a late
 * slice of a drained track would still get a lane (lanes.h). */
void ingest_drain_tracks(struct ing *g, size_t from) {
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
size_t ingest_finish_tracks(struct ing *g, size_t from) {
  size_t n = g->tn;
  for (size_t i = from; i < n; i++)
    ingest_track_finish(g, g->order[i]);
  return n;
}

/* Frees every track. */
static void ingest_tracks_free(struct ing *g) {
  for (size_t i = 0; i < g->tn; i++)
    ingest_track_free(g->order[i]);
  free(g->tracks);
  free(g->order);
  g->tracks = g->order = NULL;
  g->tn = g->tcap = 0;
  memset(g->recent, 0, sizeof g->recent);
}

/* ------------------------------------------------------------ the sink */

struct ing *ingest_sink_open(const struct ingest_opts *o,
                             struct store_writer *w,
                             const struct discover_result *d,
                             struct ingest_stats *st, int64_t t0) {
  struct ing *g = xcalloc(1, sizeof *g);
  *g = (struct ing){.o = o, .w = w, .d = d, .st = st, .t0 = t0, .pid = -1};
  /* the default budget covers the flow endpoints' too */
  g->lanes = lanes_pool_new(
      o->db_path, o->sort_budget ? o->sort_budget
                                 : INGEST_SORT_BUDGET - INGEST_FLOWS_BUDGET);
  g->ends = ingest_flows_new(o->db_path);
  return g;
}

void ingest_sink_close(struct ing *g) {
  if (!g)
    return;
  ingest_warn_flush(g);
  ingest_tracks_free(g);
  ingest_states_free(g);
  lanes_pool_free(g->lanes);
  ingest_flows_free(g->ends);
  free(g->stats);
  free(g->instance);
  sbuf_free(&g->args);
  free(g->flows);
  free(g);
}
