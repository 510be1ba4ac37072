/* ingest_perfetto.c -- Perfetto traces (*.pftrace, *.perfetto-trace, and
 * their .gz) into the store, as standalone traces grouped by file name,
 * with the sources of Chrome traces (framework slices, chrome_counter
 * counters): a track per (pid, tid), a track per other Perfetto track
 * (process, async, global) under a synthetic thread named after it, a
 * counter track per counter.  Two Perfetto tracks of one (pid, tid) share
 * a track (no pid/tid reuse).  Flows come bound to their slices by the
 * decoder.  See ingest_readers.h. */
#include "fmt_perfetto_pipe.h"
#include "ingest_readers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Synthetic thread ids of Perfetto tracks that are not threads (always
 * named after the track). */
#define INGEST_PERFETTO_TID (1LL << 41)

struct ingest_perfetto {
  struct ing *g;
  const char *rel;
  const char *instance;
  int64_t *pids; /* pids already in the process table */
  size_t npids;
  /* the itrack of the last (Perfetto track, tid): events come in runs */
  const struct fmt_perfetto_track *last_src;
  int64_t last_tid;
  struct itrack *last;
};

/* A pid of the trace: its own, or 0 for tracks of no process. */
static int64_t ingest_perfetto_pid(struct ingest_perfetto *p, int64_t pid,
                                   const char *name) {
  if (pid < 0)
    pid = 0;
  size_t i = 0;
  while (i < p->npids && p->pids[i] != pid)
    i++;
  if (i == p->npids || name) {
    /* a standalone trace: no "framework" layer, named when it says so */
    ingest_trace_process(p->g, p->instance, pid, name, true);
    if (i == p->npids) {
      p->pids = xrealloc(p->pids, sizeof *p->pids * (p->npids + 1));
      p->pids[p->npids++] = pid;
    }
  }
  return pid;
}

static int ingest_perfetto_track(void *ud, const struct fmt_perfetto_track *t) {
  struct ingest_perfetto *p = ud;
  if (t->is_process && t->process_name)
    ingest_perfetto_pid(p, t->pid, t->process_name);
  if (t->is_thread && t->thread_name && t->tid >= 0)
    ingest_trace_thread(p->g, p->instance, ingest_perfetto_pid(p, t->pid, NULL),
                        t->tid, t->thread_name, true);
  p->last = NULL; /* names may have changed */
  return 0;
}

/* The slice track of a Perfetto track (tid: the event's, after legacy
 * overrides). */
static struct itrack *ingest_perfetto_slices(struct ingest_perfetto *p,
                                             const struct fmt_perfetto_track *t,
                                             int64_t pid, int64_t tid) {
  if (p->last && p->last_src == t && p->last_tid == tid)
    return p->last;
  struct store_track d =
      ingest_desc("slices", "system", "framework", p->instance);
  d.pid = ingest_perfetto_pid(p, pid, NULL);
  d.has_pid = 1;
  d.has_tid = 1;
  const char *label = NULL; /* a thread's name is in the thread table */
  if (tid >= 0 && (t->is_thread || tid != t->tid)) {
    d.tid = tid;
  } else {
    /* a process, async or global track: a thread of its own, named */
    d.tid = INGEST_PERFETTO_TID + (int64_t)(t->uuid % (1ull << 40));
    label = t->name ? t->name : t->is_process ? t->process_name : NULL;
  }
  d.label = label;
  struct itrack *it = ingest_track(p->g, &d);
  if (ingest_track_count(it) == 0 && label) /* named by the track */
    ingest_trace_thread(p->g, p->instance, d.pid, d.tid, label, true);
  p->last_src = t;
  p->last_tid = tid;
  p->last = it;
  return it;
}

static int ingest_perfetto_slice(void *ud, const struct fmt_perfetto_slice *s) {
  struct ingest_perfetto *p = ud;
  struct ing *g = p->g;
  if (!ingest_keep_event(g, s->offset, s->name))
    return 0;
  struct itrack *t = ingest_perfetto_slices(p, s->track, s->pid, s->tid);
  struct ingest_trace_slice ts = {.ts = s->ts_ns,
                                  .dur = s->dur_ns,
                                  .name = s->name,
                                  .cat = s->cat,
                                  .args_json = s->args_json,
                                  .instant = s->instant,
                                  .incomplete = s->incomplete,
                                  .flow_ids = s->flow_ids,
                                  .n_flow_ids = s->n_flow_ids};
  ingest_trace_slice(g, t, &ts);
  return 0;
}

static int ingest_perfetto_counter(void *ud,
                                   const struct fmt_perfetto_counter *c) {
  struct ingest_perfetto *p = ud;
  struct store_track d =
      ingest_desc("counter", "system", "chrome_counter", p->instance);
  d.pid = ingest_perfetto_pid(p, c->track->pid, NULL);
  d.has_pid = 1;
  if (c->track->tid >= 0) {
    d.tid = c->track->tid;
    d.has_tid = 1;
  }
  char *label =
      c->unit ? xasprintf("%s (%s)", c->name, c->unit) : xstrdup(c->name);
  d.label = label;
  ingest_file_pos(p->g, c->offset);
  ingest_counter(p->g, ingest_track(p->g, &d), 0, c->ts_ns, c->value);
  free(label);
  return 0;
}

static void ingest_perfetto_warning(void *ud, uint64_t offset,
                                    const char *msg) {
  struct ingest_perfetto *p = ud;
  ingest_warn(p->g, "Corrupt Data", p->rel, offset, "%s", msg);
}

void ingest_perfetto_read(struct ing *g, const char *rel) {
  if (ingest_perfetto_neuron_read(g, rel))
    return;
  char *path = ingest_path(g, rel);
  const char *base = strrchr(rel, '/');
  struct ingest_perfetto p = {
      .g = g, .rel = rel, .instance = base ? base + 1 : rel};
  struct fmt_perfetto_cb cb = {&p,
                               ingest_perfetto_track,
                               ingest_perfetto_slice,
                               ingest_perfetto_counter,
                               ingest_perfetto_warning,
                               0};
  struct fmt_perfetto_stats st = {0};
  char *cause = NULL;
  int rc = fmt_perfetto_pipe_read(path, &cb, &st, &cause);
  /* warnings were recorded one by one; packets without state are one */
  ingest_skipped(g, st.skipped + st.no_state);
  if (st.no_state)
    ingest_warn(g, "Missing Data", rel, 0,
                "%" PRIu64 " packets need incremental state their sequence "
                "never had: skipped",
                st.no_state);
  if (rc < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  }
  free(cause);
  free(p.pids);
  free(path);
}
