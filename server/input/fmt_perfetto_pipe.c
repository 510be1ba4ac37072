/* fmt_perfetto_pipe.c -- the Perfetto decoder on its own thread, its
 * records handed over through a recpipe.  See fmt_perfetto_pipe.h. */
#include "fmt_perfetto_pipe.h"
#include "fmt_perfetto_priv.h"
#include "recpipe.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum pipe_kind { PIPE_TRACK, PIPE_SLICE, PIPE_COUNTER, PIPE_WARNING };

/* A track as it is now; `report`: a track callback, else an update of the
 * caller side's copy before the next record. */
struct pipe_track {
  struct fmt_perfetto_track t;
  int report;
};
/* A slice or counter names its track by uuid. */
struct pipe_slice {
  uint64_t uuid;
  struct fmt_perfetto_slice s;
};
struct pipe_counter {
  uint64_t uuid;
  struct fmt_perfetto_counter c;
};

/* The decoder thread's: what it reads, what it sent and what the read
 * returned. */
struct pipe {
  const char *path;
  struct fmt_perfetto_cb cb; /* the recording callbacks */
  struct recpipe *rp;
  /* the last state sent of each track, its strings its own */
  struct fmt_perfetto_map sent;    /* uuid -> struct fmt_perfetto_track * */
  struct fmt_perfetto_track *last; /* the latest track sent */
  struct fmt_perfetto_stats st;
  char *cause;
  int rc;
};

/* The string fields of a track. */
#define PIPE_TRACK_STRS(t)                                                     \
  {                                                                            \
    &(t)->name, &(t)->process_name, &(t)->thread_name, &(t)->counter_name,     \
        &(t)->unit                                                             \
  }

static bool fmt_perfetto_pipe_str_eq(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether a (a copy) holds track t as it is. */
static bool fmt_perfetto_pipe_same(const struct fmt_perfetto_track *a,
                                   const struct fmt_perfetto_track *t) {
  return a->uuid == t->uuid && a->parent_uuid == t->parent_uuid &&
         a->pid == t->pid && a->tid == t->tid &&
         a->is_process == t->is_process && a->is_thread == t->is_thread &&
         a->is_counter == t->is_counter &&
         a->unit_multiplier == t->unit_multiplier &&
         a->incremental == t->incremental &&
         fmt_perfetto_pipe_str_eq(a->name, t->name) &&
         fmt_perfetto_pipe_str_eq(a->process_name, t->process_name) &&
         fmt_perfetto_pipe_str_eq(a->thread_name, t->thread_name) &&
         fmt_perfetto_pipe_str_eq(a->counter_name, t->counter_name) &&
         fmt_perfetto_pipe_str_eq(a->unit, t->unit);
}

/* Frees the strings of copy c. */
static void fmt_perfetto_pipe_copy_clear(struct fmt_perfetto_track *c) {
  const char **const f[] = PIPE_TRACK_STRS(c);
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    free((void *)(uintptr_t)*f[i]);
}

static void fmt_perfetto_pipe_copy_free(void *c) {
  fmt_perfetto_pipe_copy_clear(c);
  free(c);
}

/* Makes the copy of t's uuid in map m (a track with its own copies of its
 * strings) hold t as it is; returns it. */
static struct fmt_perfetto_track *
fmt_perfetto_pipe_copy_set(struct fmt_perfetto_map *m,
                           const struct fmt_perfetto_track *t) {
  void **slot = fmt_perfetto_state_map_slot(m, t->uuid);
  struct fmt_perfetto_track *c = *slot;
  if (c)
    fmt_perfetto_pipe_copy_clear(c);
  else
    *slot = c = xcalloc(1, sizeof *c);
  *c = *t;
  const char **const f[] = PIPE_TRACK_STRS(c);
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    *f[i] = *f[i] ? xstrdup(*f[i]) : NULL;
  return c;
}

/* ------------------------------------------------------------ decoder side */

/* Queues track t: a callback when report, else an update. */
static void fmt_perfetto_pipe_put_track(struct pipe *p,
                                        const struct fmt_perfetto_track *t,
                                        int report) {
  p->last = fmt_perfetto_pipe_copy_set(&p->sent, t);
  struct pipe_track c = {*t, report};
  const char **const f[] = PIPE_TRACK_STRS(&c.t);
  recpipe_put(p->rp, PIPE_TRACK, &c, sizeof c, NULL, 0, f, 5);
}

/* Sends track t when the caller side's copy is not as t is now. */
static void fmt_perfetto_pipe_sync(struct pipe *p,
                                   const struct fmt_perfetto_track *t) {
  struct fmt_perfetto_track *c =
      p->last && p->last->uuid == t->uuid
          ? p->last
          : fmt_perfetto_state_map_get(&p->sent, t->uuid);
  if (c && fmt_perfetto_pipe_same(c, t))
    p->last = c;
  else
    fmt_perfetto_pipe_put_track(p, t, 0);
}

static int fmt_perfetto_pipe_track(void *ud,
                                   const struct fmt_perfetto_track *t) {
  struct pipe *p = ud;
  fmt_perfetto_pipe_put_track(p, t, 1);
  return recpipe_stopped(p->rp);
}

static int fmt_perfetto_pipe_slice(void *ud,
                                   const struct fmt_perfetto_slice *s) {
  struct pipe *p = ud;
  fmt_perfetto_pipe_sync(p, s->track);
  struct pipe_slice c = {s->track->uuid, *s};
  const struct recpipe_blob b[] = {
      {(const void **)&c.s.flow_ids, sizeof *c.s.flow_ids * c.s.n_flow_ids},
      {(const void **)&c.s.args_packed, c.s.args_packed_len}};
  const char **const f[] = {&c.s.name, &c.s.cat, &c.s.args_json};
  recpipe_put(p->rp, PIPE_SLICE, &c, sizeof c, b, 2, f, 3);
  return recpipe_stopped(p->rp);
}

static int fmt_perfetto_pipe_counter(void *ud,
                                     const struct fmt_perfetto_counter *k) {
  struct pipe *p = ud;
  fmt_perfetto_pipe_sync(p, k->track);
  struct pipe_counter c = {k->track->uuid, *k};
  const char **const f[] = {&c.c.name, &c.c.unit};
  recpipe_put(p->rp, PIPE_COUNTER, &c, sizeof c, NULL, 0, f, 2);
  return recpipe_stopped(p->rp);
}

static void fmt_perfetto_pipe_warning(void *ud, uint64_t offset,
                                      const char *msg) {
  struct pipe *p = ud;
  recpipe_put_warning(p->rp, PIPE_WARNING, offset, msg);
}

static void fmt_perfetto_pipe_decode(struct recpipe *rp, void *arg) {
  struct pipe *p = arg;
  p->rp = rp;
  p->rc = fmt_perfetto_read(p->path, &p->cb, &p->st, &p->cause);
  fmt_perfetto_state_map_clear(&p->sent, fmt_perfetto_pipe_copy_free);
}

/* ------------------------------------------------------------ caller side */

/* The caller's callbacks and its copies of the tracks. */
struct pipe_caller {
  const struct fmt_perfetto_cb *cb;
  struct fmt_perfetto_map tracks; /* uuid -> struct fmt_perfetto_track * */
};

/* The caller side's copy of track uuid (sent before any record naming it). */
static const struct fmt_perfetto_track *
fmt_perfetto_pipe_track_of(struct pipe_caller *pc, uint64_t uuid) {
  return fmt_perfetto_state_map_get(&pc->tracks, uuid);
}

static int fmt_perfetto_pipe_replay(void *ud, uint32_t kind, const void *body) {
  struct pipe_caller *pc = ud;
  const struct fmt_perfetto_cb *cb = pc->cb;
  switch ((enum pipe_kind)kind) {
  case PIPE_TRACK: {
    const struct pipe_track *r = body;
    const struct fmt_perfetto_track *c =
        fmt_perfetto_pipe_copy_set(&pc->tracks, &r->t);
    return r->report ? cb->track(cb->ud, c) : 0;
  }
  case PIPE_SLICE: {
    const struct pipe_slice *r = body;
    struct fmt_perfetto_slice s = r->s;
    s.track = fmt_perfetto_pipe_track_of(pc, r->uuid);
    return cb->slice(cb->ud, &s);
  }
  case PIPE_COUNTER: {
    const struct pipe_counter *r = body;
    struct fmt_perfetto_counter c = r->c;
    c.track = fmt_perfetto_pipe_track_of(pc, r->uuid);
    return cb->counter(cb->ud, &c);
  }
  case PIPE_WARNING: {
    const struct recpipe_warning *w = body;
    cb->warning(cb->ud, w->offset, w->msg);
    return 0;
  }
  }
  return 0;
}

int fmt_perfetto_pipe_read(const char *path, const struct fmt_perfetto_cb *cb,
                           struct fmt_perfetto_stats *st, char **cause) {
  /* the decoder makes only the calls the caller would receive; tracks are
   * sent for the records that name them all the same */
  struct pipe p = {.path = path,
                   .cb = {&p, cb->track ? fmt_perfetto_pipe_track : NULL,
                          cb->slice ? fmt_perfetto_pipe_slice : NULL,
                          cb->counter ? fmt_perfetto_pipe_counter : NULL,
                          cb->warning ? fmt_perfetto_pipe_warning : NULL,
                          cb->packed_args}};
  struct pipe_caller pc = {cb, {0}};
  int rc =
      recpipe_run(fmt_perfetto_pipe_decode, &p, fmt_perfetto_pipe_replay, &pc);
  fmt_perfetto_state_map_clear(&pc.tracks, fmt_perfetto_pipe_copy_free);
  if (st)
    *st = p.st;
  return recpipe_result(rc, p.rc, &p.cause, cause);
}
