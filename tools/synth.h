/* synth.h -- internals of neuron-explorer-synth, the seeded generator of
 * realistic profile directories in our capture formats.
 *
 * synth.c parses the options, lays out instances, processes, cores and
 * models, and writes the manifest; synth_sys.c writes one process folder
 * (system files, framework trace); synth_dev.c writes device traces (NTFF);
 * synth_neff.c writes compiled-model files (NEFF).
 *
 * Ownership: struct synth owns everything hanging off it (instance ids,
 * models, manifest buffers); main() releases it.  A struct synth_proc owns
 * its strings and cores and lives while its folder is written.  Records are
 * written as they are generated; nothing holds events in memory beyond one
 * step.
 */
#ifndef NEX_SYNTH_H
#define NEX_SYNTH_H

#include <stdint.h>
#include <stdio.h>

#include "util.h"

/* protobuf-c's string fields are `char *`, but packing only reads them.
 * Returns s typed for such a field (no copy: s must outlive the packing). */
static inline char *synth_pbstr(const char *s) { return (char *)(uintptr_t)s; }

/* Fixed start of every generated profile (Unix-epoch ns). */
#define SYNTH_BASE_NS INT64_C(1766072157000000000)
/* Event ids and flow ids start above 2^53 so that JS doubles cannot hold
 * them: consecutive ids collide once converted to a double. */
#define SYNTH_ID_BASE UINT64_C(9007199254740993)
#define SYNTH_FLOW_BASE UINT64_C(18014398509481987)
#define SYNTH_NTFF_VERSION 5u
#define SYNTH_INSTANCE_TYPE "trn1.32xlarge"

/* --------------------------------------------------------------------- PRNG */

/* splitmix64: a tiny PRNG with a 64-bit state; a stream is a seed. */
struct synth_rng {
  uint64_t s;
};

/* Next 64 random bits. */
uint64_t synth_rng_next(struct synth_rng *r);
/* Uniform double in [0, 1). */
double synth_rng_unit(struct synth_rng *r);
/* Uniform integer in [lo, hi] (lo <= hi, hi - lo < 2^64 - 1). */
int64_t synth_rng_range(struct synth_rng *r, int64_t lo, int64_t hi);
/* Uniform double in [lo, hi). */
double synth_rng_uniform(struct synth_rng *r, double lo, double hi);
/* A seed for an independent stream derived from (a, b, c): the same inputs
 * always give the same stream. */
uint64_t synth_rng_stream(uint64_t a, uint64_t b, uint64_t c);

/* -------------------------------------------------------------------- names */

/* Every event name the generator writes, system and framework.  The
 * ProfilerStep#<s> family counts as one entry here. */
enum synth_name {
  SN_NRT_LOAD,
  SN_NRT_LOAD_COLLECTIVES,
  SN_DMEM_BUF_COPYIN,
  SN_NRT_TENSOR_WRITE,
  SN_NRT_EXECUTE,
  SN_TIMESTAMP_SYNC_POINT,
  SN_NC_EXEC_RUNNING,
  SN_CC_EXEC_BARRIER,
  SN_CC_RUNNING,
  SN_NRT_TENSOR_READ,
  SN_DMEM_BUF_COPYOUT,
  SN_PROFILER_STEP,
  SN_ATEN_LINEAR,
  SN_ATEN_T,
  SN_ATEN_MATMUL,
  SN_ATEN_MSE_LOSS,
  SN_ATEN_SUB,
  SN_ATEN_POW,
  SN_ATEN_MEAN,
  SN_ATEN_ITEM,
  SN_ATEN_LOCAL_SCALAR_DENSE,
  SN_PY_CALL_IMPL, /* python_function frames of the framework trace */
  SN_PY_MATMUL,
  SN_COUNT
};
extern const char *const synth_name_str[SN_COUNT];

/* ------------------------------------------------------------------- layout */

enum synth_devmode { SYNTH_DEV_NONE, SYNTH_DEV_MODEL, SYNTH_DEV_SESSION };

struct synth_opts {
  const char *out;
  const char *manifest;
  uint64_t seed;
  int instances, processes, cores;
  int64_t steps;
  int64_t target_events; /* 0: not given */
  enum synth_devmode devmode;
  int64_t device_instructions;
  int framework;
  int systrace_json; /* --format systrace-json */
  int pftrace;       /* --format pftrace */
};

/* A compiled model: one NEFF, loaded on some NeuronCores of every process. */
struct synth_model {
  int k;
  uint64_t hash;      /* model_id, the <hash> of neff_<hash>.neff */
  char file[64];      /* neff_<hash>.neff */
  char name[32];      /* model_<k>.neff */
  char path[48];      /* /tmp/model_<k>.neff */
  int64_t exec_ns;    /* typical execution time */
  uint64_t mac_count; /* per execution */
};

/* One logical NeuronCore of one process and its device clock:
 * device_ns = origin + d + d * drift_ppb / 1e9 with d = cpu_ns - base. */
struct synth_core {
  int nc;
  int pcore;
  int worker_gid;
  int64_t tid;
  int64_t drift_ppb;
  int64_t origin;
  const struct synth_model *model;
  /* From the timing pre-pass: */
  int64_t load_end, collectives_end; /* CPU ns */
  int64_t last_exec_end_dev;         /* device clock */
};

struct synth_proc {
  int inst, index, global; /* instance, index in instance, in profile */
  const char *instance_id;
  int64_t pid;
  int64_t start; /* CPU ns of the first event */
  char *dir;     /* folder relative to --out */
  char *path;    /* absolute or --out-relative path of the folder */
  struct synth_core *cores;
  /* From the timing pre-pass: */
  int64_t first_ts, last_ts;
};

/* Exact counts of what was written, for the manifest. */
struct synth_counts {
  uint64_t events[SN_COUNT];
  uint64_t rt, hw, fw;
  uint64_t hbm, cpu, hostmem, metadata;
  uint64_t device_profiles, executions, instructions, dma, semaphores;
  uint64_t inst_deps; /* entries of the instructions' inst_dep_ids */
  uint64_t flows;
};

struct synth {
  struct synth_opts o;
  char **instance_ids;
  struct synth_model *models;
  int n_models;
  uint64_t next_id, next_flow;
  struct synth_counts c;
  int64_t first_ts, last_ts;
  struct sbuf processes_json, profiles_json; /* manifest list items */
  uint64_t events_total, events_done;        /* progress */
  int64_t progress_ns;
  struct synth_pftrace *pftrace; /* --format pftrace: the open export */
};

/* Framework events per step: fixed ones plus some per core. */
#define SYNTH_FW_FIXED 8
#define SYNTH_FW_PER_CORE 4

/* Returns the number of system events (ntrace + framework X events) the
 * options produce with `steps` steps (saturating at UINT64_MAX). */
uint64_t synth_events_for_steps(const struct synth_opts *o, int64_t steps);

/* Counts `n` written system events toward progress and prints a progress
 * line to stderr at most once a second. */
void synth_progress(struct synth *s, uint64_t n);

/* Adds a device profile to the manifest list (inst_deps: the entries of
 * its instructions' inst_dep_ids). */
void synth_add_device_profile(struct synth *s, const char *file, int nc,
                              uint64_t executions, uint64_t instructions,
                              uint64_t inst_deps);

/* Creates directory `path` and its missing parents.  Returns 0 or a negative
 * errno-style code. */
int synth_mkdirs(const char *path);

/* Opens `dir`/`name` for writing; returns the stream or NULL with errno
 * set. */
FILE *synth_fopen(const char *dir, const char *name);

/* Closes f, reporting a write error as a negative errno-style code. */
int synth_fclose(FILE *f);

/* -------------------------------------------------------------------- parts */

/* synth_sys.c: writes the whole folder of process p (system files, trace
 * info, and through synth_dev/synth_neff its device files).  Returns 0 or a
 * negative errno-style code with *cause set (malloc'd, names the file). */
int synth_sys_process(struct synth *s, struct synth_proc *p, char **cause);

/* synth_nrtjson.c: rewrites the ntrace.pb of process p (written already)
 * as the runtime's JSON event dump ntrace_events.json and removes it.
 * Returns 0 or a negative errno-style code with *cause set (malloc'd). */
int synth_nrtjson_process(struct synth *s, const struct synth_proc *p,
                          char **cause);

/* synth_pftrace.c: --format pftrace, the Neuron tools' Perfetto export.
 * open creates <out>/system_profile.pftrace (s->pftrace); process rewrites
 * the folder of process p (written already) into it and into one device
 * export per device trace, and removes the capture files; close finishes
 * the system file and frees s->pftrace.  Each returns 0 or a negative
 * errno-style code with *cause set (malloc'd). */
int synth_pftrace_open(struct synth *s, char **cause);
int synth_pftrace_process(struct synth *s, const struct synth_proc *p,
                          char **cause);
int synth_pftrace_close(struct synth *s, char **cause);

/* synth_neff.c: writes <dir>/<m->file>, a NEFF with a valid header and a
 * small tgz payload (info.json and an sg00 subgraph folder).  Returns 0 or
 * a negative errno-style code. */
int synth_neff_write(const struct synth *s, const char *dir,
                     const struct synth_model *m);

/* synth_dev.c: one open device trace. */
struct synth_dev;

/* The device view of one hardware execution (device-clock ns). */
struct synth_dev_exec {
  int64_t exec_id;
  int64_t start, dur;       /* nc_exec_running */
  int64_t cc_start, cc_dur; /* cc_running; cc_dur = 0 when none */
};

/* Opens `file` (relative to p->path) for core c and writes its header.
 * `origin` is the device clock at timeline 0, `last` the device clock of the
 * last recorded instant; session_id is -1 in model mode.  Returns 0 and sets
 * *out (close it with synth_dev_close), or a negative errno-style code. */
int synth_dev_open(struct synth *s, const struct synth_proc *p,
                   const struct synth_core *c, const char *file,
                   int64_t session_id, int64_t origin, int64_t last,
                   struct synth_dev **out);

/* Writes one execution (ExecutionInfo, instructions, DMA packets, semaphore
 * updates, usage samples, collective op) in time order.  Returns 0 or a
 * negative errno-style code. */
int synth_dev_exec(struct synth_dev *d, const struct synth_dev_exec *e);

/* Closes the trace, adds it to the manifest and frees d.  Returns 0 or a
 * negative errno-style code (d is freed either way). */
int synth_dev_close(struct synth_dev *d);

#endif
