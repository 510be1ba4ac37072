/* ingest_runs.h -- sorted runs of flow endpoints, kept sorted per batch,
 * in memory within a budget, else in a spill file, and merged per kind:
 * the flow blocks' endpoints in their key order (ingest_flows.c), the
 * Chrome flow binding's slice_flow rows in theirs and its unbound
 * endpoints in file order (ingest_chrome_bind.c).
 *
 * Ownership: the runs borrow the spill file and the byte count they share
 * with their owner's other data (mem); ingest_runs_free frees what they
 * hold. */
#ifndef NEX_INGEST_RUNS_H
#define NEX_INGEST_RUNS_H

#include <stddef.h>
#include <stdint.h>

struct spill;

/* A bound endpoint (lane < 0: unbound, ts is the endpoint's): pos is its
 * place in the Chrome files read times 4 plus its kind. */
struct ingest_run_rec {
  uint64_t pos;
  int64_t flow_id, track, lane, ts, id;
};

/* The kinds of runs. */
enum ingest_run_kind {
  RUN_UNBOUND, /* unbound endpoints in file order (pos) */
  RUN_BY_ID,   /* endpoints in the flow table's key order */
  RUN_BY_SLICE /* bound ones in the slice_flow table's key order */
};

struct ingest_run;

struct ingest_runs {
  struct spill *spill; /* borrowed */
  size_t *mem;         /* bytes in memory, shared (borrowed) */
  size_t budget;       /* the most *mem may reach with a run kept */
  struct ingest_run *v;
  size_t n;
  struct ingest_run_rec *tmp; /* the sort's, ntmp records */
  size_t ntmp;
};

/* Sorts out[0, n) in the order of kind and keeps it as a run (copied). */
void ingest_runs_keep(struct ingest_runs *rs, struct ingest_run_rec *out,
                      size_t n, enum ingest_run_kind kind);
/* Merges the runs of one kind, calling emit with each record in the
 * kind's order, and frees them.  Returns 0, or the negative errno of a
 * spill file that could not be read back (the records after it are then
 * missing). */
int ingest_runs_merge(struct ingest_runs *rs, enum ingest_run_kind kind,
                      void (*emit)(void *ud, const struct ingest_run_rec *o),
                      void *ud);
/* Frees every run. */
void ingest_runs_free(struct ingest_runs *rs);

#endif
