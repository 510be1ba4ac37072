/* ingest_chrome.c -- Chrome trace JSON into the store: framework events of
 * a process, or standalone traces grouped by rank or file name; flow
 * endpoints bound to slices after all slices exist.  See ingest_priv.h. */
#include "filter.h"
#include "fmt_chrome.h"
#include "ingest_priv.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct ingest_chrome {
  struct ing *g;
  const char *rel;
  const char *instance; /* process group */
  int64_t pid;          /* >= 0: every event goes to this process */
  int64_t *seen;        /* pids already recorded in the process table */
  size_t nseen;
  uint32_t file; /* rel's index in g->chrome_files */
  /* the track of the last pid/tid texts: events come in runs */
  struct sbuf last_pid, last_tid, last_scope;
  struct itrack *last;
  int64_t last_pid_v, last_tid_v;
  const char *last_thread; /* its thread name (last_scope) or NULL */
};

/* Flow endpoints are bound to slices once all slices exist: s/t (and
 * bp:"e") go to the deepest enclosing slice (the highest lane whose latest
 * slice started at or before ts still covers it), f to the first slice
 * starting at or after ts.  A sweep meets a track's slices in (ts, lane)
 * order with its endpoints in ts order.  So that nothing is read back from
 * the store, each Chrome track keeps a compact history of its slices in
 * the order ingest_place gave them: (ts, lane) order, except for slices
 * that came later than the reorder window allows; such a late slice
 * rebinds the settled endpoints it changes (lanes never put it below a
 * slice that starts after it).  A track whose history cannot be used is
 * swept from the store. */
struct ingest_chrome_bind {
  int64_t lane, ts, id, end;
  int found;
};

/* A track's endpoints of one kind, indices into g->flows sorted by ts:
 * [0, head) are settled, [head, n) wait for a slice. */
struct ingest_chrome_queue {
  size_t *v;
  size_t head, n;
};

struct ingest_chrome_sweep {
  /* history: per slice, varints of the ts and id deltas (zigzag), the
   * duration and the lane */
  unsigned char *hist;
  size_t hlen, hcap;
  int64_t hts, hid; /* the last slice added */
  int rebind;       /* the history cannot be used: sweep from the store */
  struct ingest_chrome_queue next; /* f: the next slice at or after ts */
  struct ingest_chrome_queue encl; /* s, t, bp:"e": the enclosing slice */
  struct ingest_chrome_bind *lane; /* the latest slice of each lane */
  int64_t nlanes;
  struct ingest_chrome_bind last; /* the latest slice swept in order */
};

void ingest_chrome_sweep_free(struct ingest_chrome_sweep *w) {
  if (!w)
    return;
  free(w->hist);
  free(w->next.v);
  free(w->encl.v);
  free(w->lane);
  free(w);
}

static void ingest_chrome_put(struct ingest_chrome_sweep *w, uint64_t v) {
  if (w->hcap - w->hlen < 10) {
    w->hcap = w->hcap ? w->hcap * 2 : 4096;
    w->hist = xrealloc(w->hist, w->hcap);
  }
  for (; v >= 0x80; v >>= 7)
    w->hist[w->hlen++] = (unsigned char)(v | 0x80);
  w->hist[w->hlen++] = (unsigned char)v;
}

static uint64_t ingest_chrome_get(const unsigned char **p) {
  uint64_t v = 0;
  for (int sh = 0;; sh += 7) {
    unsigned char c = *(*p)++;
    v |= (uint64_t)(c & 0x7f) << sh;
    if (c < 0x80)
      return v;
  }
}

static uint64_t ingest_chrome_zig(int64_t d) {
  return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static int64_t ingest_chrome_unzig(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void ingest_chrome_placed(struct ing *g, struct itrack *t, int64_t lane,
                          const struct lanes_item *it) {
  struct ingest_chrome_sweep *w = t->bind;
  (void)g;
  if (w->rebind)
    return;
  /* wrapping differences: the decoder adds them back the same way */
  ingest_chrome_put(
      w, ingest_chrome_zig((int64_t)((uint64_t)it->ts - (uint64_t)w->hts)));
  ingest_chrome_put(
      w, ingest_chrome_zig((int64_t)((uint64_t)it->id - (uint64_t)w->hid)));
  ingest_chrome_put(w, (uint64_t)(it->dur > 0 ? it->dur : 0));
  ingest_chrome_put(w, (uint64_t)lane);
  w->hts = it->ts;
  w->hid = it->id;
}

/* A Chrome pid/tid text as an integer: itself when it is one, else a
 * stable synthetic id (the text becomes the process or thread name). */
static int64_t ingest_chrome_int(struct ing *g, const char *s, bool *named) {
  int64_t v;
  *named = false;
  if (util_parse_i64(s, &v) == 0)
    return v;
  *named = true;
  for (size_t i = 0; i < g->nsynth; i++)
    if (strcmp(g->synth_names[i], s) == 0)
      return INGEST_SYNTHETIC_PID + (int64_t)i;
  g->synth_names =
      xrealloc(g->synth_names, sizeof *g->synth_names * (g->nsynth + 1));
  g->synth_names[g->nsynth] = xstrdup(s);
  return INGEST_SYNTHETIC_PID + (int64_t)g->nsynth++;
}

static int64_t ingest_chrome_pid(struct ingest_chrome *c, const char *pid) {
  bool named;
  if (c->pid >= 0)
    return c->pid;
  int64_t v = ingest_chrome_int(c->g, pid, &named);
  for (size_t i = 0; i < c->nseen; i++)
    if (c->seen[i] == v)
      return v;
  c->seen = xrealloc(c->seen, sizeof *c->seen * (c->nseen + 1));
  c->seen[c->nseen++] = v;
  ingest_process(c->g, c->instance, v, named ? pid : NULL, NULL);
  return v;
}

/* The track of a Chrome pid/tid.  Async slices ("async:<cat>:<id>") of one
 * category share one track per process, in lanes. */
static struct itrack *ingest_chrome_track(struct ingest_chrome *c,
                                          const char *pid, const char *tid) {
  if (c->last && strcmp(c->last_pid.s, pid) == 0 &&
      strcmp(c->last_tid.s, tid) == 0) {
    if (c->last_thread && c->last->count == 0)
      ingest_thread(c->g, c->instance, c->last_pid_v, c->last_tid_v,
                    c->last_thread);
    return c->last;
  }
  struct store_track d =
      ingest_desc("slices", "system", "framework", c->instance);
  bool named;
  const char *colon = strncmp(tid, "async:", 6) == 0 ? strrchr(tid, ':') : NULL;
  sbuf_reset(&c->last_pid);
  sbuf_adds(&c->last_pid, pid);
  sbuf_reset(&c->last_tid);
  sbuf_adds(&c->last_tid, tid);
  sbuf_reset(&c->last_scope);
  sbuf_add(&c->last_scope, tid, colon ? (size_t)(colon - tid) : strlen(tid));
  const char *scope = c->last_scope.s;
  d.pid = ingest_chrome_pid(c, pid);
  d.has_pid = 1;
  d.tid = ingest_chrome_int(c->g, scope, &named);
  d.has_tid = 1;
  struct itrack *t = ingest_track(c->g, &d);
  if (named && t->count == 0)
    ingest_thread(c->g, c->instance, d.pid, d.tid, scope);
  if (!t->bind) {
    t->bind = xcalloc(1, sizeof *t->bind);
    /* slices placed before cannot be swept any more */
    t->bind->rebind = t->count > 0;
  }
  c->last = t;
  c->last_pid_v = d.pid;
  c->last_tid_v = d.tid;
  c->last_thread = named ? scope : NULL;
  return t;
}

static int ingest_chrome_slice(void *ud, const struct fmt_chrome_slice *s) {
  struct ingest_chrome *c = ud;
  struct ing *g = c->g;
  g->file_pos = s->offset;
  if (!filter_keep_event(g->o->filter, s->name))
    return 0;
  struct itrack *t = ingest_chrome_track(c, s->pid, s->tid);
  struct lanes_item it = {.ts = s->ts_ns,
                          .dur = s->dur_ns,
                          .id = INGEST_SYNTHETIC_ID + g->next_id++,
                          .name = store_writer_intern(g->w, s->name)};
  ingest_args_begin(g);
  ingest_args_str(g, "cat", s->cat);
  if (s->instant)
    ingest_args_i64(g, "instant", 1);
  if (s->incomplete)
    ingest_args_i64(g, "incomplete", 1);
  /* the event's args are its attributes, beside cat (as the vendor's
   * extra_attributes_json has them): an object's members are spliced in */
  const char *a = s->args_json ? s->args_json : "";
  size_t al = strlen(a);
  bool object = al >= 2 && a[0] == '{' && a[al - 1] == '}';
  size_t in = object ? strspn(a + 1, " \t\r\n") + 1 : 0;
  if (object && in < al - 1) {
    if (g->args.len > 1)
      sbuf_addc(&g->args, ',');
    sbuf_add(&g->args, a + 1, al - 2);
  } else if (al > 0 && !object) {
    ingest_args_key(g, "args");
    sbuf_adds(&g->args, s->args_json);
  }
  ingest_args_take(g, &it);
  if (s->n_flow_ids) {
    it.flows = xmalloc(sizeof *it.flows * s->n_flow_ids);
    it.n_flows = (int)s->n_flow_ids;
    for (size_t i = 0; i < s->n_flow_ids; i++)
      it.flows[i] = s->flow_ids[i] & INT64_MAX;
  }
  ingest_slice(g, t, &it);
  return 0;
}

static int ingest_chrome_counter(void *ud, const struct fmt_chrome_counter *k) {
  struct ingest_chrome *c = ud;
  char *label = strcmp(k->series, "value") == 0
                    ? xstrdup(k->name)
                    : xasprintf("%s %s", k->name, k->series);
  struct store_track d =
      ingest_desc("counter", "system", "chrome_counter", c->instance);
  d.pid = ingest_chrome_pid(c, k->pid);
  d.has_pid = 1;
  d.label = label;
  ingest_counter(c->g, ingest_track(c->g, &d), 0, k->ts_ns, k->value);
  free(label);
  return 0;
}

static int ingest_chrome_flow(void *ud, const struct fmt_chrome_flow *f) {
  struct ingest_chrome *c = ud;
  struct ing *g = c->g;
  struct itrack *t = ingest_chrome_track(c, f->pid, f->tid);
  if (g->nflows == g->capflows) {
    g->capflows = g->capflows ? g->capflows * 2 : 1024;
    g->flows = xrealloc(g->flows, sizeof *g->flows * g->capflows);
  }
  /* v2 ids that are numbers are the flow ids themselves (our own exports
   * and Neuron's args.flow_id agree); other ids are scoped by file */
  int64_t v2;
  uint64_t h =
      strncmp(f->id, "v2:", 3) == 0 && util_parse_i64(f->id + 3, &v2) == 0
          ? (uint64_t)v2
          : util_hash(c->rel, strlen(c->rel)) ^
                util_hash(f->id, strlen(f->id)) * 31;
  g->flows[g->nflows] = (struct iflow){.offset = f->offset,
                                       .flow_id = (int64_t)(h & INT64_MAX),
                                       .ts = f->ts_ns,
                                       .track = t,
                                       .lane = -1,
                                       .file = c->file,
                                       .phase = f->phase,
                                       .enclosing = f->enclosing};
  g->nflows++;
  return 0;
}

static int ingest_chrome_meta(void *ud, const struct fmt_chrome_meta *m) {
  struct ingest_chrome *c = ud;
  if (!m->value)
    return 0;
  int64_t pid = ingest_chrome_pid(c, m->pid);
  if (strcmp(m->kind, "process_name") == 0 && c->pid < 0)
    ingest_process(c->g, c->instance, pid, m->value, NULL);
  else if (strcmp(m->kind, "thread_name") == 0 && m->tid) {
    bool named;
    ingest_thread(c->g, c->instance, pid,
                  ingest_chrome_int(c->g, m->tid, &named), m->value);
  }
  return 0;
}

static void ingest_chrome_warning(void *ud, uint64_t offset, const char *msg) {
  struct ingest_chrome *c = ud;
  /* not every warning skips an event: the reader's count says how many */
  ingest_warn(c->g, "Corrupt Data", c->rel, offset, "%s", msg);
}

/* Reads one Chrome trace.  instance/pid: the process it belongs to, or
 * NULL/-1 for a standalone trace (then grouped by rank or file name). */
void ingest_chrome_read(struct ing *g, const char *rel, const char *instance,
                        int64_t pid) {
  char *path = xasprintf("%s/%s", g->o->dir, rel);
  char rank[64] = "";
  int probe = fmt_chrome_probe(path, rank, sizeof rank);
  if (probe <= 0) {
    if (probe < 0) {
      g->st->skipped++;
      ingest_warn(g, "Corrupt Data", rel, 0, "cannot read file");
    }
    /* Not a trace (some other JSON): ignored without a warning. */
    free(path);
    return;
  }
  char *group = NULL;
  if (!instance) {
    if (*rank)
      group = xasprintf("rank%s", rank);
    else {
      const char *b = strrchr(rel, '/');
      group = xstrdup(b ? b + 1 : rel);
    }
    instance = group;
  }
  g->chrome_files = xrealloc(g->chrome_files,
                             sizeof *g->chrome_files * (g->nchrome_files + 1));
  g->chrome_files[g->nchrome_files] = rel;
  struct ingest_chrome c = {.g = g,
                            .rel = rel,
                            .instance = instance,
                            .pid = pid,
                            .file = (uint32_t)g->nchrome_files++};
  struct fmt_chrome_cb cb = {&c,
                             ingest_chrome_slice,
                             ingest_chrome_counter,
                             ingest_chrome_flow,
                             ingest_chrome_meta,
                             ingest_chrome_warning};
  struct fmt_chrome_stats cs = {0};
  char *cause = NULL;
  int rc = fmt_chrome_read(path, &cb, &cs, &cause);
  g->st->skipped += cs.skipped;
  if (rc < 0) {
    g->st->skipped++;
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  }
  free(cause);
  free(c.seen);
  sbuf_free(&c.last_pid);
  sbuf_free(&c.last_tid);
  sbuf_free(&c.last_scope);
  free(group);
  free(path);
}

/* ------------------------------------------------------------ binding */

/* The first settled endpoint whose ts is >= ts (after = 0) or > ts. */
static size_t ingest_chrome_find(const struct ing *g,
                                 const struct ingest_chrome_queue *q,
                                 int64_t ts, int after) {
  size_t lo = 0, hi = q->head;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int64_t t = g->flows[q->v[mid]].ts;
    if (t < ts || (after && t == ts))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void ingest_chrome_bound(struct ing *g, size_t i,
                                const struct ingest_chrome_bind *b) {
  g->flows[i].lane = b->lane;
  g->flows[i].slice_ts = b->ts;
  g->flows[i].slice_id = b->id;
}

static void ingest_chrome_enclosing(struct ing *g,
                                    const struct ingest_chrome_sweep *w,
                                    size_t i) {
  int64_t ts = g->flows[i].ts;
  for (int64_t l = w->nlanes - 1; l >= 0; l--)
    if (w->lane[l].found && w->lane[l].ts <= ts && ts < w->lane[l].end) {
      ingest_chrome_bound(g, i, &w->lane[l]);
      return;
    }
}

/* Makes b the latest slice of its lane. */
static void ingest_chrome_sweep_lane(struct ingest_chrome_sweep *w,
                                     const struct ingest_chrome_bind *b) {
  if (b->lane >= w->nlanes) {
    int64_t n = b->lane + 1 > 2 * w->nlanes ? b->lane + 1 : 2 * w->nlanes;
    w->lane = xrealloc(w->lane, sizeof *w->lane * (size_t)n);
    memset(w->lane + w->nlanes, 0, sizeof *w->lane * (size_t)(n - w->nlanes));
    w->nlanes = n;
  }
  w->lane[b->lane] = *b;
}

/* The next slice in (ts, lane) order: endpoints before it are settled (it
 * cannot enclose them, and it is the first slice at or after an f at its
 * ts or earlier). */
static void ingest_chrome_sweep_slice(struct ing *g,
                                      struct ingest_chrome_sweep *w,
                                      const struct ingest_chrome_bind *b) {
  struct ingest_chrome_queue *q = &w->next;
  for (; q->head < q->n && g->flows[q->v[q->head]].ts <= b->ts; q->head++)
    ingest_chrome_bound(g, q->v[q->head], b);
  q = &w->encl;
  for (; q->head < q->n && g->flows[q->v[q->head]].ts < b->ts; q->head++)
    ingest_chrome_enclosing(g, w, q->v[q->head]);
  ingest_chrome_sweep_lane(w, b);
  w->last = *b;
}

/* A slice that starts before the latest one swept: the settled f
 * endpoints at or before its ts bound to a slice after it now have it
 * first, and the settled enclosing endpoints it covers have it as a
 * candidate (no slice of its lane starts between it and them).  The
 * waiting endpoints all come after it. */
static void ingest_chrome_sweep_late(struct ing *g,
                                     struct ingest_chrome_sweep *w,
                                     const struct ingest_chrome_bind *b) {
  const struct ingest_chrome_queue *q = &w->next;
  for (size_t k = ingest_chrome_find(g, q, b->ts, 1); k > 0; k--) {
    const struct iflow *f = &g->flows[q->v[k - 1]];
    if (f->slice_ts < b->ts || (f->slice_ts == b->ts && f->lane < b->lane))
      break;
    ingest_chrome_bound(g, q->v[k - 1], b);
  }
  q = &w->encl;
  for (size_t k = ingest_chrome_find(g, q, b->ts, 0);
       k < q->head && g->flows[q->v[k]].ts < b->end; k++)
    if (g->flows[q->v[k]].lane < b->lane)
      ingest_chrome_bound(g, q->v[k], b);
  ingest_chrome_sweep_lane(w, b);
}

/* No slice follows: the enclosing endpoints left are settled, the f ones
 * have no slice. */
static void ingest_chrome_sweep_end(struct ing *g,
                                    struct ingest_chrome_sweep *w) {
  struct ingest_chrome_queue *q = &w->encl;
  for (; q->head < q->n; q->head++)
    ingest_chrome_enclosing(g, w, q->v[q->head]);
  w->next.head = w->next.n;
}

/* Starts the sweep of a track over: its endpoints wait, no slice seen. */
static void ingest_chrome_sweep_reset(struct ing *g,
                                      struct ingest_chrome_sweep *w) {
  const struct ingest_chrome_queue *qs[] = {&w->next, &w->encl};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < qs[k]->n; i++)
      g->flows[qs[k]->v[i]].lane = -1;
  w->next.head = w->encl.head = 0;
  w->last.found = 0;
  free(w->lane);
  w->lane = NULL;
  w->nlanes = 0;
}

/* Replays a track's history.  Returns 0, or -1 if a slice does not come
 * as lanes places them (then the sweep must be done again). */
static int ingest_chrome_sweep_hist(struct ing *g,
                                    struct ingest_chrome_sweep *w) {
  const unsigned char *p = w->hist, *end = w->hist + w->hlen;
  uint64_t ts = 0, id = 0;
  while (p < end) {
    struct ingest_chrome_bind b = {0};
    ts += (uint64_t)ingest_chrome_unzig(ingest_chrome_get(&p));
    id += (uint64_t)ingest_chrome_unzig(ingest_chrome_get(&p));
    int64_t dur = (int64_t)ingest_chrome_get(&p);
    b.lane = (int64_t)ingest_chrome_get(&p);
    b.ts = (int64_t)ts;
    b.id = (int64_t)id;
    b.end = b.ts + (dur > 1 ? dur : 1);
    b.found = 1;
    if (!w->last.found || b.ts > w->last.ts ||
        (b.ts == w->last.ts && b.lane > w->last.lane))
      ingest_chrome_sweep_slice(g, w, &b);
    else if (b.ts < w->last.ts &&
             (b.lane >= w->nlanes || !w->lane[b.lane].found ||
              w->lane[b.lane].end <= b.ts))
      ingest_chrome_sweep_late(g, w, &b);
    else
      return -1;
  }
  return 0;
}

struct ingest_chrome_sweep_ctx {
  struct ing *g;
  struct ingest_chrome_sweep *w;
};

static int ingest_chrome_sweep_row(void *ud, sqlite3_stmt *st) {
  struct ingest_chrome_sweep_ctx *c = ud;
  struct ingest_chrome_bind b = {sqlite3_column_int64(st, 0),
                                 sqlite3_column_int64(st, 1),
                                 sqlite3_column_int64(st, 3), 0, 1};
  int64_t dur = sqlite3_column_int64(st, 2);
  b.end = b.ts + (dur > 1 ? dur : 1);
  ingest_chrome_sweep_slice(c->g, c->w, &b);
  return 0;
}

static int ingest_chrome_ts_cmp(const void *x, const void *y, void *ud) {
  const struct ing *g = ud;
  int64_t a = g->flows[*(const size_t *)x].ts,
          b = g->flows[*(const size_t *)y].ts;
  return (a > b) - (a < b);
}

/* Binds the endpoints of one track (in w's queues). */
static void ingest_chrome_sweep_track(struct ing *g, struct itrack *t) {
  struct ingest_chrome_sweep *w = t->bind;
  if (w->next.n > 1)
    qsort_r(w->next.v, w->next.n, sizeof *w->next.v, ingest_chrome_ts_cmp, g);
  if (w->encl.n > 1)
    qsort_r(w->encl.v, w->encl.n, sizeof *w->encl.v, ingest_chrome_ts_cmp, g);
  if (w->rebind || ingest_chrome_sweep_hist(g, w)) {
    struct ingest_chrome_sweep_ctx c = {g, w};
    ingest_chrome_sweep_reset(g, w);
    store_writer_query(g->w, ingest_chrome_sweep_row, &c,
                       "SELECT lane, ts, dur, id FROM slice WHERE track = ? "
                       "ORDER BY ts, lane",
                       "i", t->id);
  }
  ingest_chrome_sweep_end(g, w);
}

void ingest_chrome_bind_flows(struct ing *g) {
  /* each track's endpoints, by kind */
  for (size_t i = 0; i < g->nflows; i++) {
    const struct iflow *f = &g->flows[i];
    struct ingest_chrome_sweep *w = f->track->bind;
    (f->phase == 'f' && !f->enclosing ? &w->next : &w->encl)->n++;
  }
  for (size_t k = 0; k < g->tn; k++) {
    struct ingest_chrome_sweep *w = g->order[k]->bind;
    if (!w)
      continue;
    if (w->next.n)
      w->next.v = xmalloc(w->next.n * sizeof *w->next.v);
    if (w->encl.n)
      w->encl.v = xmalloc(w->encl.n * sizeof *w->encl.v);
    w->next.n = w->encl.n = 0;
  }
  for (size_t i = 0; i < g->nflows; i++) {
    const struct iflow *f = &g->flows[i];
    struct ingest_chrome_queue *q = f->phase == 'f' && !f->enclosing
                                        ? &f->track->bind->next
                                        : &f->track->bind->encl;
    q->v[q->n++] = i;
  }
  for (size_t k = 0; k < g->tn; k++) {
    struct ingest_chrome_sweep *w = g->order[k]->bind;
    if (w && (w->next.n || w->encl.n))
      ingest_chrome_sweep_track(g, g->order[k]);
    if (w) {
      free(w->hist);
      w->hist = NULL;
      w->hlen = w->hcap = 0;
    }
  }
  for (size_t i = 0; i < g->nflows; i++) {
    const struct iflow *f = &g->flows[i];
    if (f->lane >= 0)
      store_writer_flow(g->w, f->flow_id, f->track->id, f->lane, f->slice_ts,
                        f->slice_id);
    else
      ingest_warn(g, "Missing Data", g->chrome_files[f->file], f->offset,
                  "flow endpoint '%c' at %" PRId64
                  " ns has no slice to bind to",
                  f->phase, f->ts);
  }
}
