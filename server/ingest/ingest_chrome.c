/* ingest_chrome.c -- Chrome trace JSON into the store: framework events of
 * a process, or standalone traces grouped by rank or file name; the flow
 * endpoints go to ingest_chrome_bind.c.  See ingest_readers.h. */
#include "fmt_chrome_pipe.h"
#include "ingest_readers.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The reader's state for the run: the Chrome pid/tid texts that are not
 * numbers (text k is -(k + 1)), and the group (instance) each standalone
 * trace was read as. */
struct ingest_chrome_state {
  char **synth_names;
  size_t nsynth;
  struct ingest_chrome_group {
    char *name;
    const char *rel; /* borrowed from the discovery */
  } * groups;
  size_t ngroups;
};

static const char ingest_chrome_key; /* its ingest_state key */

static void ingest_chrome_state_free(void *state) {
  struct ingest_chrome_state *s = state;
  for (size_t i = 0; i < s->nsynth; i++)
    free(s->synth_names[i]);
  free(s->synth_names);
  for (size_t i = 0; i < s->ngroups; i++)
    free(s->groups[i].name);
  free(s->groups);
  free(s);
}

/* The reader's state, created on first use. */
static struct ingest_chrome_state *ingest_chrome_state(struct ing *g) {
  return ingest_state_make(g, &ingest_chrome_key,
                           sizeof(struct ingest_chrome_state),
                           ingest_chrome_state_free);
}

struct ingest_chrome {
  struct ing *g;
  const char *rel;
  uint64_t rel_hash;    /* util_hash of rel: scopes flow ids */
  const char *instance; /* process group */
  int64_t pid;          /* >= 0: every event goes to this process */
  int64_t *seen;        /* pids already recorded in the process table */
  size_t nseen;
  uint32_t file; /* rel's number in the flow binding */
  /* the track of the last pid/tid texts: events come in runs */
  struct sbuf last_pid, last_tid, last_scope;
  struct itrack *last;
  int64_t last_pid_v, last_tid_v;
  const char *last_thread; /* its thread name (last_scope) or NULL */
  uint64_t max_offset;     /* of the flow endpoints read */
};

/* A Chrome pid/tid text as an integer: itself when it is one, else a
 * small stable synthetic one, -1, -2, ... by first appearance (the text
 * becomes the process or thread name). */
static int64_t ingest_chrome_int(struct ing *g, const char *s, bool *named) {
  int64_t v;
  *named = false;
  if (util_parse_i64(s, &v) == 0)
    return v;
  *named = true;
  struct ingest_chrome_state *cs = ingest_chrome_state(g);
  for (size_t i = 0; i < cs->nsynth; i++)
    if (strcmp(cs->synth_names[i], s) == 0)
      return -(int64_t)i - 1;
  cs->synth_names =
      xrealloc(cs->synth_names, sizeof *cs->synth_names * (cs->nsynth + 1));
  cs->synth_names[cs->nsynth] = xstrdup(s);
  return -(int64_t)cs->nsynth++ - 1;
}

/* The thread row of a tid given as text: named by it, unless a
 * thread_name said otherwise. */
static void ingest_chrome_named_thread(struct ingest_chrome *c, int64_t pid,
                                       int64_t tid, const char *text) {
  ingest_trace_thread(c->g, c->instance, pid, tid, text, false);
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
  ingest_trace_process(c->g, c->instance, v, named ? pid : NULL, false);
  return v;
}

/* The track of a Chrome pid/tid.  Async slices ("async:<cat>:<id>") of one
 * category share one track per process, in lanes. */
static struct itrack *ingest_chrome_track(struct ingest_chrome *c,
                                          const char *pid, const char *tid,
                                          bool async) {
  if (c->last && strcmp(c->last_pid.s, pid) == 0 &&
      strcmp(c->last_tid.s, tid) == 0) {
    if (c->last_thread && ingest_track_count(c->last) == 0)
      ingest_chrome_named_thread(c, c->last_pid_v, c->last_tid_v,
                                 c->last_thread);
    return c->last;
  }
  struct store_track d =
      ingest_desc("slices", "system", "framework", c->instance);
  bool named;
  /* an async slice's "async:<cat>:<id>": its track is "async:<cat>" */
  const char *colon = async ? strrchr(tid, ':') : NULL;
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
  /* equal (start, duration) slices nest in file order of their begin, as
   * Perfetto and DevTools nest them: a B/E pair is reported at its E */
  struct itrack *t = ingest_track_ordered(c->g, &d, LANES_KEY_ORDER);
  if (named && ingest_track_count(t) == 0)
    ingest_chrome_named_thread(c, d.pid, d.tid, scope);
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
  if (!ingest_keep_event(g, s->offset, s->name))
    return 0;
  struct itrack *t = ingest_chrome_track(c, s->pid, s->tid, s->async);
  struct ingest_trace_slice ts = {.ts = s->ts_ns,
                                  .dur = s->dur_ns,
                                  .name = s->name,
                                  .cat = s->cat,
                                  .args_json = s->args_json,
                                  .instant = s->instant,
                                  .incomplete = s->incomplete,
                                  .flow_ids = s->flow_ids,
                                  .n_flow_ids = s->n_flow_ids,
                                  .order = ((uint64_t)c->file + 1) << 40 |
                                           (s->offset & ((1ull << 40) - 1))};
  ingest_trace_slice(g, t, &ts);
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
  struct itrack *t = ingest_chrome_track(c, f->pid, f->tid, false);
  /* v2 ids that are numbers are the flow ids themselves (our own exports
   * and Neuron's args.flow_id agree); other ids are scoped by file */
  int64_t v2;
  uint64_t h =
      strncmp(f->id, "v2:", 3) == 0 && util_parse_i64(f->id + 3, &v2) == 0
          ? (uint64_t)v2
          : c->rel_hash ^ util_hash(f->id, strlen(f->id)) * 31;
  if (f->offset > c->max_offset)
    c->max_offset = f->offset;
  ingest_chrome_bind_endpoint(g, t, c->file, f->offset, f->ts_ns,
                              (int64_t)(h & INT64_MAX), f->phase, f->enclosing);
  return 0;
}

/* M events: names, labels and sort indexes of processes (of standalone
 * traces only: a Neuron process keeps its own) and threads. */
static int ingest_chrome_meta(void *ud, const struct fmt_chrome_meta *m) {
  struct ingest_chrome *c = ud;
  static const char *const sql[] = {
      "UPDATE process SET name = ?3 WHERE instance_id = ?1 AND pid = ?2",
      "UPDATE process SET labels = ?3 WHERE instance_id = ?1 AND pid = ?2",
      "UPDATE process SET sort_index = ?3 WHERE instance_id = ?1 AND pid = ?2",
      "INSERT INTO thread (instance_id, pid, tid, name) VALUES (?1,?2,?4,?3) "
      "ON CONFLICT DO UPDATE SET name = excluded.name",
      "INSERT INTO thread (instance_id, pid, tid, sort_index) VALUES "
      "(?1,?2,?4,?3) ON CONFLICT DO UPDATE SET sort_index = "
      "excluded.sort_index"};
  static const char *const kinds[] = {"process_name", "process_labels",
                                      "process_sort_index", "thread_name",
                                      "thread_sort_index"};
  size_t k = 0;
  while (k < 5 && strcmp(m->kind, kinds[k]) != 0)
    k++;
  if (!m->value || k == 5 || (k < 3 && c->pid >= 0) || (k >= 3 && !m->tid))
    return 0;
  int64_t pid = ingest_chrome_pid(c, m->pid), sort = 0, tid = 0;
  bool named, number = util_parse_i64(m->value, &sort) == 0;
  if ((k == 2 || k == 4) && !number)
    return 0; /* a sort index that is not an integer: no order */
  if (k >= 3)
    tid = ingest_chrome_int(c->g, m->tid, &named);
  bool sorted = k == 2 || k == 4;
  const char *types =
      k < 3 ? (sorted ? "tii" : "tit") : (sorted ? "tiii" : "titi");
  if (sorted)
    store_writer_exec(ingest_writer(c->g), sql[k], types, c->instance, pid,
                      sort, tid);
  else
    store_writer_exec(ingest_writer(c->g), sql[k], types, c->instance, pid,
                      m->value, tid);
  return 0;
}

static void ingest_chrome_warning(void *ud, uint64_t offset, const char *msg) {
  struct ingest_chrome *c = ud;
  /* not every warning skips an event: the reader's count says how many */
  ingest_warn(c->g, "Corrupt Data", c->rel, offset, "%s", msg);
}

/* The group a standalone trace is read as: "rank <r>" (distributedInfo)
 * or its file name; a name taken by an earlier file gets " (2)", " (3)"
 * ... and a Warning, so that two files never merge into one group.
 * Returns the name (owned by the reader's state). */
static const char *ingest_chrome_group(struct ing *g, const char *rel,
                                       const char *rank) {
  struct ingest_chrome_state *cs = ingest_chrome_state(g);
  const char *b = strrchr(rel, '/');
  char *base = *rank ? xasprintf("rank %s", rank) : xstrdup(b ? b + 1 : rel);
  char *name = xstrdup(base);
  const char *first = NULL;
  for (int n = 2;; n++) {
    size_t i = 0;
    while (i < cs->ngroups && strcmp(cs->groups[i].name, name) != 0)
      i++;
    if (i == cs->ngroups)
      break;
    if (!first)
      first = cs->groups[i].rel;
    free(name);
    name = xasprintf("%s (%d)", base, n);
  }
  if (first)
    ingest_warn(g, "Corrupt Data", rel, 0,
                "%s %s is also claimed by %s: read as a group of its own, "
                "'%s'",
                *rank ? "rank" : "file name", *rank ? rank : base, first, name);
  free(base);
  cs->groups = xrealloc(cs->groups, sizeof *cs->groups * (cs->ngroups + 1));
  cs->groups[cs->ngroups] = (struct ingest_chrome_group){name, rel};
  return cs->groups[cs->ngroups++].name;
}

/* Reads one Chrome trace.  instance/pid: the process it belongs to, or
 * NULL/-1 for a standalone trace (then grouped by rank or file name). */
void ingest_chrome_read(struct ing *g, const char *rel, const char *instance,
                        int64_t pid) {
  char *path = ingest_path(g, rel);
  char rank[64] = "";
  int probe = fmt_chrome_probe(path, rank, sizeof rank);
  if (probe <= 0) {
    if (probe < 0) {
      ingest_skipped(g, 1);
      ingest_warn(g, "Corrupt Data", rel, 0, "cannot read file");
    }
    /* Not a trace (some other JSON): ignored without a warning. */
    free(path);
    return;
  }
  if (!instance)
    instance = ingest_chrome_group(g, rel, rank);
  struct ingest_chrome c = {.g = g,
                            .rel = rel,
                            .rel_hash = util_hash(rel, strlen(rel)),
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
  int rc = fmt_chrome_pipe_read(path, &cb, &st, &cause);
  ingest_skipped(g, st.skipped);
  ingest_chrome_bind_file_end(g, c.max_offset);
  if (rc < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  }
  free(cause);
  free(c.seen);
  sbuf_free(&c.last_pid);
  sbuf_free(&c.last_tid);
  sbuf_free(&c.last_scope);
  free(path);
}
