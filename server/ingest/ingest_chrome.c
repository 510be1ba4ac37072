/* ingest_chrome.c -- Chrome trace JSON into the store: framework events of
 * a process, or standalone traces grouped by rank or file name; the flow
 * endpoints go to ingest_chrome_bind.c.  See ingest_priv.h. */
#include "filter.h"
#include "fmt_chrome.h"
#include "ingest_priv.h"
#include "log.h"

#include <errno.h>
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
  uint64_t max_offset;     /* of the flow endpoints read */
};

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
  ingest_chrome_bind_track(t);
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
  /* v2 ids that are numbers are the flow ids themselves (our own exports
   * and Neuron's args.flow_id agree); other ids are scoped by file */
  int64_t v2;
  uint64_t h =
      strncmp(f->id, "v2:", 3) == 0 && util_parse_i64(f->id + 3, &v2) == 0
          ? (uint64_t)v2
          : util_hash(c->rel, strlen(c->rel)) ^
                util_hash(f->id, strlen(f->id)) * 31;
  if (f->offset > c->max_offset)
    c->max_offset = f->offset;
  ingest_chrome_bind_endpoint(g, t, c->file, f->offset, f->ts_ns,
                              (int64_t)(h & INT64_MAX), f->phase, f->enclosing);
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
  struct ingest_chrome c = {.g = g,
                            .rel = rel,
                            .instance = instance,
                            .pid = pid,
                            .file = ingest_chrome_bind_file(g, rel)};
  struct fmt_chrome_cb cb = {&c,
                             ingest_chrome_slice,
                             ingest_chrome_counter,
                             ingest_chrome_flow,
                             ingest_chrome_meta,
                             ingest_chrome_warning};
  struct fmt_chrome_stats st = {0};
  char *cause = NULL;
  int rc = fmt_chrome_read(path, &cb, &st, &cause);
  g->st->skipped += st.skipped;
  ingest_chrome_bind_file_end(g, c.max_offset);
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
