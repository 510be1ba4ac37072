/* ingest_flows.c -- see ingest_flows.h. */
#include "ingest_flows.h"
#include "ingest_runs.h"
#include "spill.h"
#include "store.h"
#include "util.h"

#include <stdlib.h>

/* endpoints sorted into one run: a batch and its sort's buffer take
 * three quarters of the budget */
#define INGEST_FLOWS_BATCH                                                     \
  (INGEST_FLOWS_BUDGET * 3 / 8 / sizeof(struct ingest_run_rec))

struct ingest_flows {
  struct spill *spill;
  size_t mem; /* bytes of the runs in memory */
  struct ingest_runs runs;
  struct ingest_run_rec *batch; /* INGEST_FLOWS_BATCH, n of them used */
  size_t n;
};

struct ingest_flows *ingest_flows_new(const char *store_path) {
  struct ingest_flows *f = xcalloc(1, sizeof *f);
  f->spill = spill_new(store_path, "flow endpoints");
  f->runs = (struct ingest_runs){
      .spill = f->spill, .mem = &f->mem, .budget = INGEST_FLOWS_BUDGET / 4};
  return f;
}

/* Sorts the batch into a run. */
static void ingest_flows_keep(struct ingest_flows *f) {
  ingest_runs_keep(&f->runs, f->batch, f->n, RUN_BY_ID);
  f->n = 0;
}

void ingest_flows_add(struct ingest_flows *f, int64_t flow_id, int64_t track,
                      int64_t lane, int64_t ts, int64_t id) {
  if (!f->batch)
    f->batch = xmalloc(INGEST_FLOWS_BATCH * sizeof *f->batch);
  f->batch[f->n++] = (struct ingest_run_rec){0, flow_id, track, lane, ts, id};
  if (f->n == INGEST_FLOWS_BATCH)
    ingest_flows_keep(f);
}

/* Writes one endpoint to the store (ud). */
static void ingest_flows_emit(void *ud, const struct ingest_run_rec *o) {
  store_writer_flow(ud, STORE_FLOW_BY_ID, o->flow_id, o->track, o->lane, o->ts,
                    o->id);
}

int ingest_flows_write(struct ingest_flows *f, struct store_writer *w) {
  ingest_flows_keep(f);
  free(f->batch);
  f->batch = NULL;
  return ingest_runs_merge(&f->runs, RUN_BY_ID, ingest_flows_emit, w);
}

void ingest_flows_free(struct ingest_flows *f) {
  if (!f)
    return;
  ingest_runs_free(&f->runs);
  free(f->batch);
  spill_free(f->spill);
  free(f);
}
