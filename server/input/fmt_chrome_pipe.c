/* fmt_chrome_pipe.c -- the Chrome decoder on its own thread, its records
 * handed over through a recpipe.  See fmt_chrome_pipe.h. */
#include "fmt_chrome_pipe.h"
#include "recpipe.h"
#include "util.h"

#include <stdlib.h>

enum pipe_kind { PIPE_SLICE, PIPE_COUNTER, PIPE_FLOW, PIPE_META, PIPE_WARNING };

/* The decoder thread's: what it reads and what the read returned. */
struct pipe {
  const char *path;
  struct fmt_chrome_cb cb; /* the recording callbacks, ud: the recpipe */
  struct fmt_chrome_stats st;
  char *cause;
  int rc;
};

/* ------------------------------------------------------------ decoder side */

static int fmt_chrome_pipe_slice(void *ud, const struct fmt_chrome_slice *s) {
  struct fmt_chrome_slice c = *s;
  const char **const f[] = {&c.name, &c.cat, &c.pid, &c.tid, &c.args_json};
  const struct recpipe_blob b[] = {
      {(const void **)&c.flow_ids, sizeof *c.flow_ids * c.n_flow_ids}};
  recpipe_put(ud, PIPE_SLICE, &c, sizeof c, b, 1, f, 5);
  return recpipe_stopped(ud);
}

static int fmt_chrome_pipe_counter(void *ud,
                                   const struct fmt_chrome_counter *k) {
  struct fmt_chrome_counter c = *k;
  const char **const f[] = {&c.pid, &c.name, &c.series};
  recpipe_put(ud, PIPE_COUNTER, &c, sizeof c, NULL, 0, f, 3);
  return recpipe_stopped(ud);
}

static int fmt_chrome_pipe_flow(void *ud, const struct fmt_chrome_flow *fl) {
  struct fmt_chrome_flow c = *fl;
  const char **const f[] = {&c.id, &c.pid, &c.tid};
  recpipe_put(ud, PIPE_FLOW, &c, sizeof c, NULL, 0, f, 3);
  return recpipe_stopped(ud);
}

static int fmt_chrome_pipe_meta(void *ud, const struct fmt_chrome_meta *m) {
  struct fmt_chrome_meta c = *m;
  const char **const f[] = {&c.kind, &c.pid, &c.tid, &c.value};
  recpipe_put(ud, PIPE_META, &c, sizeof c, NULL, 0, f, 4);
  return recpipe_stopped(ud);
}

static void fmt_chrome_pipe_warning(void *ud, uint64_t offset,
                                    const char *msg) {
  recpipe_put_warning(ud, PIPE_WARNING, offset, msg);
}

static void fmt_chrome_pipe_decode(struct recpipe *rp, void *arg) {
  struct pipe *p = arg;
  p->cb.ud = rp;
  p->rc = fmt_chrome_read(p->path, &p->cb, &p->st, &p->cause);
}

/* ------------------------------------------------------------ caller side */

static int fmt_chrome_pipe_replay(void *ud, uint32_t kind, const void *body) {
  const struct fmt_chrome_cb *cb = ud;
  switch ((enum pipe_kind)kind) {
  case PIPE_SLICE:
    return cb->slice(cb->ud, body);
  case PIPE_COUNTER:
    return cb->counter(cb->ud, body);
  case PIPE_FLOW:
    return cb->flow(cb->ud, body);
  case PIPE_META:
    return cb->meta(cb->ud, body);
  case PIPE_WARNING: {
    const struct recpipe_warning *w = body;
    cb->warning(cb->ud, w->offset, w->msg);
    return 0;
  }
  }
  return 0;
}

int fmt_chrome_pipe_read(const char *path, const struct fmt_chrome_cb *cb,
                         struct fmt_chrome_stats *st, char **cause) {
  if (!cb) /* nothing to hand over */
    return fmt_chrome_read(path, cb, st, cause);
  /* the decoder makes only the calls the caller would receive */
  struct pipe p = {.path = path,
                   .cb = {NULL, cb->slice ? fmt_chrome_pipe_slice : NULL,
                          cb->counter ? fmt_chrome_pipe_counter : NULL,
                          cb->flow ? fmt_chrome_pipe_flow : NULL,
                          cb->meta ? fmt_chrome_pipe_meta : NULL,
                          cb->warning ? fmt_chrome_pipe_warning : NULL}};
  int rc = recpipe_run(fmt_chrome_pipe_decode, &p, fmt_chrome_pipe_replay,
                       (void *)(uintptr_t)cb);
  if (st)
    *st = p.st;
  return recpipe_result(rc, p.rc, &p.cause, cause);
}
