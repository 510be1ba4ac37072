/* synth_sys.c -- one process folder: the timing model of a data-parallel
 * training loop, and the system files it produces (ntrace.pb in completion
 * order, cpu_util.pb, host_mem.pb, trace.json, trace_info.pb).
 *
 * The timing model runs twice from the same seed: a pre-pass that only
 * learns the process's time span and each core's last execution (needed by
 * file headers and the sampling period), then the pass that writes.  Only
 * one step's events are ever held in memory.
 */
#include "synth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_util.pb-c.h"
#include "fmt_pb.h"
#include "host_mem.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#define US INT64_C(1000)
#define MS INT64_C(1000000)
#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)
#define SYNTH_SYS_CPUS 8
#define SYNTH_SYS_HOST_MEM (512 * GIB)

/* Numeric event type ids (nrt_tensor_write is 11 in the vendor's JSON). */
static const int synth_sys_type[SN_COUNT] = {
    [SN_NRT_LOAD] = 1,
    [SN_NRT_LOAD_COLLECTIVES] = 2,
    [SN_NRT_EXECUTE] = 3,
    [SN_NRT_TENSOR_WRITE] = 11,
    [SN_NRT_TENSOR_READ] = 12,
    [SN_DMEM_BUF_COPYIN] = 20,
    [SN_DMEM_BUF_COPYOUT] = 21,
    [SN_NC_EXEC_RUNNING] = 40,
    [SN_TIMESTAMP_SYNC_POINT] = 41,
    [SN_CC_RUNNING] = 42,
    [SN_CC_EXEC_BARRIER] = 43,
};

/* ------------------------------------------------------------------- timing */

/* One core's share of one step, CPU ns ([start, end) pairs). */
struct synth_sys_nc_step {
  int64_t copyin[2], write[2], exec[2], read[2], copyout[2];
  int64_t sync;                 /* timestamp_sync_point */
  int64_t hw[2], bar[2], cc[2]; /* hardware execution, barrier, collective */
  uint64_t in_size, out_size;
};

/* One framework event on the main thread. */
struct synth_sys_fw {
  enum synth_name name;
  int64_t ts, dur;
  int nc; /* the core an aten::matmul launches, else -1 */
};

struct synth_sys_step {
  int64_t index;
  int cc; /* every 4th step runs a collective */
  int64_t start, end;
  struct synth_sys_nc_step *nc; /* [cores] */
  struct synth_sys_fw *fw;      /* [SYNTH_FW_FIXED + SYNTH_FW_PER_CORE * cores] */
  int n_fw;
};

/* The loads at start-up, on the main thread, per core. */
struct synth_sys_load {
  int64_t load[2], coll[2];
};

struct synth_sys_sim {
  struct synth_rng rng;
  int64_t t; /* main thread clock */
};

static int64_t synth_sys_dev(const struct synth_core *c, int64_t cpu) {
  int64_t d = cpu - SYNTH_BASE_NS;
  return c->origin + d + (int64_t)((__int128)d * c->drift_ppb / 1000000000);
}

/* Host <-> device copy time of `size` bytes at 20..28 GB/s. */
static int64_t synth_sys_copy_ns(struct synth_rng *r, uint64_t size) {
  return 3 * US +
         (int64_t)((double)size / synth_rng_uniform(r, 20e9, 28e9) * 1e9);
}

static void synth_sys_sim_loads(struct synth_sys_sim *sim, int cores,
                                struct synth_sys_load *ld) {
  struct synth_rng *r = &sim->rng;
  int64_t t = sim->t;
  for (int n = 0; n < cores; n++) {
    ld[n].load[0] = t;
    ld[n].load[1] = t += synth_rng_range(r, 40 * MS, 60 * MS);
    ld[n].coll[0] = t += synth_rng_range(r, 100 * US, MS);
    ld[n].coll[1] = t += synth_rng_range(r, 4 * MS, 6 * MS);
    t += synth_rng_range(r, 50 * US, 200 * US);
  }
  sim->t = t + synth_rng_range(r, MS, 3 * MS);
}

static int synth_sys_fw_add(struct synth_sys_step *st, enum synth_name name,
                            int64_t ts, int64_t dur, int nc) {
  st->fw[st->n_fw] = (struct synth_sys_fw){name, ts, dur, nc};
  return st->n_fw++;
}

/* Worker side of one core for one step, starting at `t`. */
static void synth_sys_sim_worker(struct synth_rng *r,
                                 const struct synth_core *c, int cc, int64_t t,
                                 struct synth_sys_nc_step *w) {
  w->in_size = UINT64_C(1) << synth_rng_range(r, 16, 22);
  w->out_size = UINT64_C(1) << synth_rng_range(r, 12, 20);
  w->copyin[0] = t;
  w->copyin[1] = t + synth_sys_copy_ns(r, w->in_size);
  w->write[0] = w->copyin[1] + synth_rng_range(r, US, 4 * US);
  w->write[1] = w->write[0] + synth_rng_range(r, 5 * US, 40 * US);
  w->exec[0] = w->write[1] + synth_rng_range(r, US, 4 * US);
  w->hw[0] = w->exec[0] + synth_rng_range(r, 15 * US, 40 * US);
  w->sync = w->hw[0] - synth_rng_range(r, US, 3 * US);
  int64_t d =
      (int64_t)((double)c->model->exec_ns * synth_rng_uniform(r, 0.9, 1.1));
  w->hw[1] = w->hw[0] + d;
  if (cc) {
    w->bar[0] =
        w->hw[0] + (int64_t)((double)d * synth_rng_uniform(r, 0.45, 0.55));
    w->bar[1] = w->bar[0] + synth_rng_range(r, 10 * US, 60 * US);
    w->cc[0] = w->bar[1] + synth_rng_range(r, US, 5 * US);
    w->cc[1] = w->cc[0] + (int64_t)((double)d * synth_rng_uniform(r, 0.1, 0.2));
  }
  w->exec[1] = w->hw[1] + synth_rng_range(r, 10 * US, 30 * US);
  w->read[0] = w->exec[1] + synth_rng_range(r, US, 4 * US);
  w->read[1] = w->read[0] + synth_rng_range(r, 5 * US, 40 * US);
  w->copyout[0] = w->read[1] + synth_rng_range(r, US, 4 * US);
  w->copyout[1] = w->copyout[0] + synth_sys_copy_ns(r, w->out_size);
}

/* One training step: the main thread launches one execution per core from
 * an aten::matmul, computes the loss, and waits in aten::item for every
 * core; the workers copy in, write, execute, read and copy out.  Python
 * frames enclose the model's forward (_call_impl around the aten::linear
 * ops) and each aten::matmul. */
static void synth_sys_sim_step(struct synth_sys_sim *sim,
                               const struct synth_proc *p, int cores,
                               int64_t index, struct synth_sys_step *st) {
  struct synth_rng *r = &sim->rng;
  int64_t t = sim->t, workers_end = 0;
  st->index = index;
  st->cc = index % 4 == 3;
  st->start = t;
  st->n_fw = 0;
  synth_sys_fw_add(st, SN_PROFILER_STEP, t, 0, -1);
  t += synth_rng_range(r, 3 * US, 8 * US);
  int call = synth_sys_fw_add(st, SN_PY_CALL_IMPL, t - US, 0, -1);
  for (int n = 0; n < cores; n++) {
    int lin = synth_sys_fw_add(st, SN_ATEN_LINEAR, t, 0, -1);
    t += synth_rng_range(r, 2 * US, 5 * US);
    int64_t d = synth_rng_range(r, 3 * US, 8 * US);
    synth_sys_fw_add(st, SN_ATEN_T, t, d, -1);
    t += d + synth_rng_range(r, US, 2 * US);
    d = synth_rng_range(r, 15 * US, 40 * US);
    synth_sys_fw_add(st, SN_ATEN_MATMUL, t, d, n);
    synth_sys_fw_add(st, SN_PY_MATMUL, t - US / 2, d + US, -1);
    synth_sys_sim_worker(r, &p->cores[n], st->cc,
                         t + synth_rng_range(r, 5 * US, 15 * US), &st->nc[n]);
    if (st->nc[n].copyout[1] > workers_end)
      workers_end = st->nc[n].copyout[1];
    t += d + synth_rng_range(r, US, 3 * US);
    st->fw[lin].dur = t - st->fw[lin].ts;
    t += synth_rng_range(r, 2 * US, 6 * US);
  }
  st->fw[call].dur = t - US - st->fw[call].ts;
  int loss = synth_sys_fw_add(st, SN_ATEN_MSE_LOSS, t, 0, -1);
  t += synth_rng_range(r, 2 * US, 4 * US);
  static const enum synth_name parts[] = {SN_ATEN_SUB, SN_ATEN_POW,
                                          SN_ATEN_MEAN};
  for (int k = 0; k < 3; k++) {
    int64_t d = synth_rng_range(r, 5 * US, 15 * US);
    synth_sys_fw_add(st, parts[k], t, d, -1);
    t += d + synth_rng_range(r, US, 2 * US);
  }
  st->fw[loss].dur = t - st->fw[loss].ts;
  t += synth_rng_range(r, 2 * US, 5 * US);
  int item = synth_sys_fw_add(st, SN_ATEN_ITEM, t, 0, -1);
  t += synth_rng_range(r, US, 3 * US);
  int64_t wait_end = (workers_end > t + 5 * US ? workers_end : t + 5 * US) +
                     synth_rng_range(r, 3 * US, 10 * US);
  synth_sys_fw_add(st, SN_ATEN_LOCAL_SCALAR_DENSE, t, wait_end - t, -1);
  t = wait_end + synth_rng_range(r, US, 3 * US);
  st->fw[item].dur = t - st->fw[item].ts;
  t += synth_rng_range(r, 3 * US, 8 * US);
  st->end = t;
  st->fw[0].dur = t - st->start;
  sim->t = t + synth_rng_range(r, 20 * US, 80 * US);
}

/* ------------------------------------------------------------------- writer */

/* A system event of the current step, before it is written. */
struct synth_sys_ev {
  enum synth_name name;
  int nc;
  int64_t ts, dur;            /* as written (hardware: device clock) */
  int64_t end_key, start_key; /* CPU clock, for completion order */
  int64_t sync_cpu, sync_dev; /* timestamp_sync_point only */
  int seq;
};

struct synth_sys_out {
  struct synth *s;
  struct synth_proc *p;
  int cores;
  char **cause;
  FILE *ntrace, *cpu, *mem, *json;
  struct synth_dev **dev; /* session mode: [cores] */
  uint64_t stored;        /* SystemEvent records of this process */
  uint64_t *flows;        /* flow id per core of the current step */
  struct synth_sys_ev *evs;
  int n_evs;
  char **files; /* folder files for trace_info.pb */
  int n_files;
  /* samples */
  struct synth_rng srng;
  int64_t s_t0, s_period, s_i, s_n;
  double cpu_util[SYNTH_SYS_CPUS];
  double mem_used;
};

/* Records the first error (naming the folder, and `file` unless NULL) and
 * returns rc. */
static int synth_sys_fail(struct synth_sys_out *o, int rc, const char *file) {
  if (!*o->cause)
    *o->cause = xasprintf("%s%s%s: %s", o->p->dir, file ? "/" : "",
                          file ? file : "", strerror(-rc));
  return rc;
}

static int synth_sys_ntrace_write(struct synth_sys_out *o,
                                  Nex__NtraceRecord *rec) {
  int rc = fmt_pb_write_msg(o->ntrace, &rec->base);
  return rc < 0 ? synth_sys_fail(o, rc, "ntrace.pb") : 0;
}

/* Writes one SystemEvent and counts it. */
static int synth_sys_write_event(struct synth_sys_out *o, Nex__SystemEvent *e,
                                 enum synth_name name) {
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  e->id = o->s->next_id++;
  e->name = synth_pbstr(synth_name_str[name]);
  e->type = synth_sys_type[name];
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = e;
  o->s->c.events[name]++;
  if (e->source == NEX__TRACE_EVENT_SOURCE__NEURON_HW)
    o->s->c.hw++;
  else
    o->s->c.rt++;
  o->stored++;
  return synth_sys_ntrace_write(o, &rec);
}

/* ------------------------------------------------------------------ samples */

/* HBM usage of core c at time t: runtime buffers from the start, the model
 * after nrt_load, collectives after nrt_load_collectives, tensors growing. */
static void synth_sys_hbm(struct synth_sys_out *o, const struct synth_core *c,
                          int64_t t, Nex__HbmUsage *h) {
  struct synth_rng *r = &o->srng;
  int loaded = t >= c->load_end, coll = t >= c->collectives_end;
  uint64_t weights = (uint64_t)(c->model->k + 3) * 512 * MIB;
  h->device_idx = c->pcore / 2;
  h->hbm_idx = c->pcore % 2;
  h->generic_bytes = MIB + (uint64_t)synth_rng_range(r, 0, 64 * 1024);
  h->profiler_buffers_bytes = 64 * MIB;
  h->ucode_lib_bytes = 4 * MIB;
  h->gpsimd_stdio_bytes = MIB;
  h->dma_rings_runtime_bytes = 2 * MIB;
  h->unknown_bytes = (uint64_t)synth_rng_range(r, 0, 256 * 1024);
  if (loaded) {
    uint64_t grow = (uint64_t)((t - c->load_end) / MS) * 256 * 1024;
    h->weights_bytes = weights;
    h->tensor_instructions_bytes = 12 * MIB;
    h->scalar_instructions_bytes = 4 * MIB;
    h->gpsimd_instructions_bytes = 2 * MIB;
    h->vector_instructions_bytes = 6 * MIB;
    h->sync_instructions_bytes = 3 * MIB;
    h->scalar_table_bytes = 256 * 1024;
    h->io_bytes = 32 * MIB + (uint64_t)synth_rng_range(r, 0, 8 * (int64_t)MIB);
    h->dram_spill_bytes = 128 * MIB;
    h->shared_scratchpad_bytes = 64 * MIB;
    h->scratchpad_bytes = 256 * MIB;
    h->tensors_bytes = 16 * MIB + (grow < 2 * GIB ? grow : 2 * GIB) +
                       (uint64_t)synth_rng_range(r, 0, 4 * (int64_t)MIB);
    h->dma_rings_spill_bytes = MIB;
    h->dma_rings_io_bytes = MIB;
  }
  if (coll) {
    h->collectives_bytes = 32 * MIB;
    h->dma_rings_collectives_bytes = 2 * MIB;
  }
  h->total_bytes =
      h->generic_bytes + h->tensor_instructions_bytes +
      h->scalar_instructions_bytes + h->gpsimd_instructions_bytes +
      h->io_bytes + h->dram_spill_bytes + h->weights_bytes +
      h->profiler_buffers_bytes + h->scalar_table_bytes +
      h->vector_instructions_bytes + h->sync_instructions_bytes +
      h->shared_scratchpad_bytes + h->tensors_bytes + h->ucode_lib_bytes +
      h->gpsimd_stdio_bytes + h->collectives_bytes + h->scratchpad_bytes +
      h->dma_rings_runtime_bytes + h->dma_rings_spill_bytes +
      h->dma_rings_io_bytes + h->dma_rings_collectives_bytes + h->unknown_bytes;
}

/* One sample time: HBM per core into ntrace.pb, CPU per cpu and average,
 * host memory. */
static int synth_sys_sample(struct synth_sys_out *o, int64_t t) {
  struct synth_rng *r = &o->srng;
  int rc = 0;
  for (int n = 0; n < o->cores && rc == 0; n++) {
    Nex__HbmUsage h = NEX__HBM_USAGE__INIT;
    Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
    h.timestamp = t;
    synth_sys_hbm(o, &o->p->cores[n], t, &h);
    rec.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
    rec.hbm = &h;
    rc = synth_sys_ntrace_write(o, &rec);
    o->s->c.hbm++;
  }
  double sum = 0;
  char id[4];
  for (int k = 0; k <= SYNTH_SYS_CPUS && rc == 0; k++) {
    Nex__CpuUsage cu = NEX__CPU_USAGE__INIT;
    cu.timestamp = t;
    if (k < SYNTH_SYS_CPUS) {
      double u = o->cpu_util[k] + synth_rng_uniform(r, -8, 8);
      o->cpu_util[k] = u < 2 ? 2 : u > 98 ? 98 : u;
      sum += o->cpu_util[k];
      snprintf(id, sizeof id, "%d", k);
      cu.cpu_id = id;
      cu.util_percent = o->cpu_util[k];
    } else {
      cu.cpu_id = synth_pbstr("average");
      cu.util_percent = sum / SYNTH_SYS_CPUS;
    }
    rc = fmt_pb_write_msg(o->cpu, &cu.base);
    if (rc < 0)
      return synth_sys_fail(o, rc, "cpu_util.pb");
    o->s->c.cpu++;
  }
  if (rc == 0) {
    Nex__HostMemUsage m = NEX__HOST_MEM_USAGE__INIT;
    o->mem_used += synth_rng_uniform(r, -0.5, 1.0) * (double)MIB;
    m.timestamp = t;
    m.used_bytes = (uint64_t)o->mem_used;
    m.used_percent = 100.0 * o->mem_used / (double)SYNTH_SYS_HOST_MEM;
    rc = fmt_pb_write_msg(o->mem, &m.base);
    if (rc < 0)
      return synth_sys_fail(o, rc, "host_mem.pb");
    o->s->c.hostmem++;
  }
  return rc;
}

/* Writes every sample due at or before t. */
static int synth_sys_samples_until(struct synth_sys_out *o, int64_t t) {
  int rc = 0;
  while (rc == 0 && o->s_i < o->s_n && o->s_t0 + o->s_i * o->s_period <= t) {
    rc = synth_sys_sample(o, o->s_t0 + o->s_i * o->s_period);
    o->s_i++;
  }
  return rc;
}

/* --------------------------------------------------------------- trace.json */

static void synth_sys_json_ts(FILE *f, const char *key, int64_t ns) {
  fprintf(f, ",\"%s\":%" PRId64 ".%03d", key, ns / 1000, (int)(ns % 1000));
}

static int synth_sys_fw_python(const struct synth_sys_fw *e) {
  return e->name == SN_PY_CALL_IMPL || e->name == SN_PY_MATMUL;
}

static void synth_sys_json_fw(struct synth_sys_out *o,
                              const struct synth_sys_step *st,
                              const struct synth_sys_fw *e) {
  FILE *f = o->json;
  if (e->name == SN_PROFILER_STEP)
    fprintf(f,
            ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
            "\"ProfilerStep#%" PRId64 "\"",
            st->index);
  else
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\"",
            synth_sys_fw_python(e) ? "python_function" : "cpu_op",
            synth_name_str[e->name]);
  fprintf(f, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64, o->p->pid, o->p->pid);
  synth_sys_json_ts(f, "ts", e->ts);
  synth_sys_json_ts(f, "dur", e->dur);
  if (e->nc >= 0)
    fprintf(f, ",\"args\":{\"flow_id\":[\"%" PRIu64 "\"]}", o->flows[e->nc]);
  fputc('}', f);
  o->s->c.events[e->name]++;
  o->s->c.fw++;
}

/* Kineto's file order, which puts an enclosing event after what it
 * encloses: the step's ops and its ProfilerStep annotation in completion
 * order (by end, inner first on equal ends), then its python frames in a
 * block of their own, in the same order. */
static int synth_sys_fw_cmp(const void *a, const void *b) {
  const struct synth_sys_fw *x = *(const struct synth_sys_fw *const *)a,
                            *y = *(const struct synth_sys_fw *const *)b;
  if (synth_sys_fw_python(x) != synth_sys_fw_python(y))
    return synth_sys_fw_python(x) - synth_sys_fw_python(y);
  if (x->ts + x->dur != y->ts + y->dur)
    return x->ts + x->dur < y->ts + y->dur ? -1 : 1;
  if (x->ts != y->ts)
    return x->ts > y->ts ? -1 : 1;
  return x < y ? -1 : x > y;
}

static void synth_sys_json_step(struct synth_sys_out *o,
                                const struct synth_sys_step *st) {
  const struct synth_sys_fw **v = xmalloc((size_t)st->n_fw * sizeof *v);
  for (int k = 0; k < st->n_fw; k++)
    v[k] = &st->fw[k];
  qsort(v, (size_t)st->n_fw, sizeof *v, synth_sys_fw_cmp);
  for (int k = 0; k < st->n_fw; k++)
    synth_sys_json_fw(o, st, v[k]);
  free(v);
}

static void synth_sys_json_begin(struct synth_sys_out *o) {
  FILE *f = o->json;
  int64_t pid = o->p->pid;
  fprintf(f,
          "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
          ",\"tid\":0,\"args\":{\"name\":\"python3 (rank %d)\"}}",
          pid, o->p->global);
  fprintf(f,
          ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64
          ",\"tid\":%" PRId64 ",\"args\":{\"name\":\"MainThread\"}}",
          pid, pid);
  for (int n = 0; n < o->cores; n++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64
            ",\"tid\":%" PRId64 ",\"args\":{\"name\":\"nrt-worker-nc%d\"}}",
            pid, o->p->cores[n].tid, n);
}

/* ------------------------------------------------------------------- events */

static int synth_sys_write_loads(struct synth_sys_out *o,
                                 const struct synth_sys_load *ld) {
  int rc = 0;
  for (int n = 0; n < o->cores && rc == 0; n++) {
    const struct synth_core *c = &o->p->cores[n];
    for (int k = 0; k < 2 && rc == 0; k++) {
      const int64_t *span = k ? ld[n].coll : ld[n].load;
      Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
      rc = synth_sys_samples_until(o, span[1]);
      e.timestamp = span[0];
      e.duration = span[1] - span[0];
      e.source = NEX__TRACE_EVENT_SOURCE__NEURON_RT;
      e.thread_id = o->p->pid;
      e.nc_idx = n;
      e.pcore_idx = -1;
      e.worker_gid = c->worker_gid;
      e.model_id = c->model->hash;
      e.model_name = synth_pbstr(c->model->path);
      if (rc == 0)
        rc = synth_sys_write_event(o, &e,
                                   k ? SN_NRT_LOAD_COLLECTIVES : SN_NRT_LOAD);
    }
  }
  return rc;
}

static void synth_sys_ev_add(struct synth_sys_out *o, enum synth_name name,
                             int nc, int64_t start, int64_t end) {
  struct synth_sys_ev *e = &o->evs[o->n_evs];
  *e = (struct synth_sys_ev){.name = name,
                             .nc = nc,
                             .ts = start,
                             .dur = end - start,
                             .end_key = end,
                             .start_key = start,
                             .seq = o->n_evs};
  o->n_evs++;
}

/* A hardware event: written in device clock, ordered by the CPU time the
 * sync point maps it to. */
static void synth_sys_ev_add_hw(struct synth_sys_out *o, enum synth_name name,
                                int nc, const int64_t span[2], int64_t sync) {
  const struct synth_core *c = &o->p->cores[nc];
  int64_t d0 = synth_sys_dev(c, span[0]), d1 = synth_sys_dev(c, span[1]);
  int64_t sync_dev = synth_sys_dev(c, sync);
  synth_sys_ev_add(o, name, nc, d0, d1);
  struct synth_sys_ev *e = &o->evs[o->n_evs - 1];
  e->start_key = sync + (d0 - sync_dev);
  e->end_key = sync + (d1 - sync_dev);
}

/* Completion order: earlier end first; on a tie the later start (the
 * contained event) first. */
static int synth_sys_ev_cmp(const void *a, const void *b) {
  const struct synth_sys_ev *x = a, *y = b;
  if (x->end_key != y->end_key)
    return x->end_key < y->end_key ? -1 : 1;
  if (x->start_key != y->start_key)
    return x->start_key > y->start_key ? -1 : 1;
  return x->seq - y->seq;
}

static int synth_sys_write_ev(struct synth_sys_out *o,
                              const struct synth_sys_step *st,
                              const struct synth_sys_ev *v) {
  const struct synth_core *c = &o->p->cores[v->nc];
  const struct synth_sys_nc_step *w = &st->nc[v->nc];
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  Nex__Attribute a_name = NEX__ATTRIBUTE__INIT, a_id = NEX__ATTRIBUTE__INIT;
  Nex__Attribute *attrs[2] = {&a_name, &a_id};
  char tensor_id[24];
  int hw = v->name == SN_NC_EXEC_RUNNING || v->name == SN_CC_RUNNING ||
           v->name == SN_CC_EXEC_BARRIER || v->name == SN_TIMESTAMP_SYNC_POINT;
  e.timestamp = v->ts;
  e.duration = v->dur;
  e.source = hw ? NEX__TRACE_EVENT_SOURCE__NEURON_HW
                : NEX__TRACE_EVENT_SOURCE__NEURON_RT;
  e.thread_id = c->tid;
  e.nc_idx = v->nc;
  e.pcore_idx = hw ? c->pcore : -1;
  e.worker_gid = c->worker_gid;
  switch (v->name) {
  case SN_DMEM_BUF_COPYIN:
  case SN_NRT_TENSOR_WRITE:
  case SN_NRT_TENSOR_READ:
  case SN_DMEM_BUF_COPYOUT: {
    int in = v->name == SN_DMEM_BUF_COPYIN || v->name == SN_NRT_TENSOR_WRITE;
    e.size = in ? w->in_size : w->out_size;
    if (v->name == SN_NRT_TENSOR_WRITE || v->name == SN_NRT_TENSOR_READ) {
      snprintf(tensor_id, sizeof tensor_id, "%" PRIu64,
               c->model->hash ^ (in ? 0x1111 : 0x2222) ^ (uint64_t)v->nc);
      a_name.key = synth_pbstr("tensor_name");
      a_name.value = synth_pbstr(in ? "input0" : "output0");
      a_id.key = synth_pbstr("tensor_id");
      a_id.value = tensor_id;
      e.n_attributes = 2;
      e.attributes = attrs;
    }
    break;
  }
  case SN_TIMESTAMP_SYNC_POINT:
    e.exec_id = st->index + 1;
    e.cpu_timestamp_ns = v->sync_cpu;
    e.nc_timestamp_ns = v->sync_dev;
    break;
  case SN_NRT_EXECUTE:
  case SN_NC_EXEC_RUNNING:
    e.model_id = c->model->hash;
    e.model_name = synth_pbstr(c->model->path);
    e.exec_id = st->index + 1;
    e.n_flow_id = 1;
    e.flow_id = &o->flows[v->nc];
    if (v->name == SN_NRT_EXECUTE) {
      e.mac_count = c->model->mac_count;
      e.flop_count = 2 * c->model->mac_count;
    }
    break;
  case SN_CC_RUNNING:
  case SN_CC_EXEC_BARRIER:
    e.exec_id = st->index + 1;
    break;
  default:
    break;
  }
  return synth_sys_write_event(o, &e, v->name);
}

/* The device trace file name of core n (malloc'd). */
static char *synth_sys_ntff_name(const struct synth_sys_out *o, int n) {
  if (o->s->o.devmode == SYNTH_DEV_SESSION)
    return xasprintf("profile_nc_%d_session_0.ntff", n);
  return xasprintf("%" PRIu64 "_instid_0_vnc_%d.ntff",
                   o->p->cores[n].model->hash, n);
}

/* Device traces of this step: model mode keeps each core's first execution
 * in its own file, session mode appends every execution. */
static int synth_sys_write_device(struct synth_sys_out *o,
                                  const struct synth_sys_step *st) {
  struct synth *s = o->s;
  int rc = 0;
  if (s->o.devmode == SYNTH_DEV_NONE ||
      (s->o.devmode == SYNTH_DEV_MODEL && st->index > 0))
    return 0;
  for (int n = 0; n < o->cores && rc == 0; n++) {
    const struct synth_core *c = &o->p->cores[n];
    const struct synth_sys_nc_step *w = &st->nc[n];
    struct synth_dev_exec x = {.exec_id = st->index + 1};
    x.start = synth_sys_dev(c, w->hw[0]);
    x.dur = synth_sys_dev(c, w->hw[1]) - x.start;
    if (st->cc) {
      x.cc_start = synth_sys_dev(c, w->cc[0]);
      x.cc_dur = synth_sys_dev(c, w->cc[1]) - x.cc_start;
    }
    if (s->o.devmode == SYNTH_DEV_SESSION) {
      rc = synth_dev_exec(o->dev[n], &x);
    } else {
      struct synth_dev *d;
      char *file = synth_sys_ntff_name(o, n);
      rc = synth_dev_open(s, o->p, c, file, -1, x.start, x.start + x.dur, &d);
      if (rc == 0) {
        rc = synth_dev_exec(d, &x);
        int rc2 = synth_dev_close(d);
        rc = rc ? rc : rc2;
      }
      free(file);
    }
    if (rc < 0) {
      char *file = synth_sys_ntff_name(o, n);
      synth_sys_fail(o, rc, file);
      free(file);
    }
  }
  return rc;
}

static int synth_sys_write_step(struct synth_sys_out *o,
                                const struct synth_sys_step *st) {
  struct synth *s = o->s;
  int rc = 0;
  for (int n = 0; n < o->cores; n++)
    o->flows[n] = s->next_flow++;
  s->c.flows += (uint64_t)o->cores;
  if (o->json)
    synth_sys_json_step(o, st);
  o->n_evs = 0;
  for (int n = 0; n < o->cores; n++) {
    const struct synth_sys_nc_step *w = &st->nc[n];
    synth_sys_ev_add(o, SN_DMEM_BUF_COPYIN, n, w->copyin[0], w->copyin[1]);
    synth_sys_ev_add(o, SN_NRT_TENSOR_WRITE, n, w->write[0], w->write[1]);
    synth_sys_ev_add(o, SN_NRT_EXECUTE, n, w->exec[0], w->exec[1]);
    synth_sys_ev_add(o, SN_TIMESTAMP_SYNC_POINT, n, w->sync, w->sync);
    o->evs[o->n_evs - 1].sync_cpu = w->sync;
    o->evs[o->n_evs - 1].sync_dev = synth_sys_dev(&o->p->cores[n], w->sync);
    synth_sys_ev_add_hw(o, SN_NC_EXEC_RUNNING, n, w->hw, w->sync);
    if (st->cc) {
      synth_sys_ev_add_hw(o, SN_CC_EXEC_BARRIER, n, w->bar, w->sync);
      synth_sys_ev_add_hw(o, SN_CC_RUNNING, n, w->cc, w->sync);
    }
    synth_sys_ev_add(o, SN_NRT_TENSOR_READ, n, w->read[0], w->read[1]);
    synth_sys_ev_add(o, SN_DMEM_BUF_COPYOUT, n, w->copyout[0], w->copyout[1]);
  }
  qsort(o->evs, (size_t)o->n_evs, sizeof *o->evs, synth_sys_ev_cmp);
  for (int k = 0; k < o->n_evs && rc == 0; k++) {
    rc = synth_sys_samples_until(o, o->evs[k].end_key);
    if (rc == 0)
      rc = synth_sys_write_ev(o, st, &o->evs[k]);
  }
  if (rc == 0)
    rc = synth_sys_write_device(o, st);
  synth_progress(s, (uint64_t)o->n_evs + (o->json ? (uint64_t)st->n_fw : 0));
  return rc;
}

/* ------------------------------------------------------------------ process */

static void synth_sys_step_alloc(struct synth_sys_step *st, int cores) {
  st->nc = xcalloc((size_t)cores, sizeof *st->nc);
  st->fw = xcalloc((size_t)(SYNTH_FW_FIXED + SYNTH_FW_PER_CORE * cores),
                   sizeof *st->fw);
}

/* The pre-pass: time span of the process and, per core, the end of its
 * loads and of its last execution. */
static void synth_sys_prepass(struct synth *s, struct synth_proc *p,
                              struct synth_sys_load *ld,
                              struct synth_sys_step *st) {
  int cores = s->o.cores;
  struct synth_sys_sim sim = {
      {synth_rng_stream(s->o.seed, 4, (uint64_t)p->global)}, p->start};
  synth_sys_sim_loads(&sim, cores, ld);
  for (int n = 0; n < cores; n++) {
    p->cores[n].load_end = ld[n].load[1];
    p->cores[n].collectives_end = ld[n].coll[1];
  }
  p->first_ts = p->start;
  for (int64_t k = 0; k < s->o.steps; k++) {
    synth_sys_sim_step(&sim, p, cores, k, st);
    p->last_ts = st->end;
  }
  if (!s->o.framework) { /* the last event is then a worker's copy-out */
    p->last_ts = 0;
    for (int n = 0; n < cores; n++)
      if (st->nc[n].copyout[1] > p->last_ts)
        p->last_ts = st->nc[n].copyout[1];
  }
  for (int n = 0; n < cores; n++)
    p->cores[n].last_exec_end_dev =
        synth_sys_dev(&p->cores[n], st->nc[n].hw[1]);
}

static int synth_sys_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int synth_sys_write_trace_info(struct synth_sys_out *o) {
  struct synth_proc *p = o->p;
  Nex__TraceInfo ti = NEX__TRACE_INFO__INIT;
  ti.instance_id = synth_pbstr(p->instance_id);
  ti.process_id = p->pid;
  ti.first_ts_ns = p->first_ts;
  ti.last_ts_ns = p->last_ts;
  ti.hbm_capacity_bytes = 24 * GIB;
  ti.dropped_events = 0;
  ti.stored_events = o->stored;
  ti.ntff_version = SYNTH_NTFF_VERSION;
  qsort(o->files, (size_t)o->n_files, sizeof *o->files, synth_sys_cmp_str);
  ti.n_files = (size_t)o->n_files;
  ti.files = o->files;
  ti.instance_type = synth_pbstr(SYNTH_INSTANCE_TYPE);
  ti.runtime_version = synth_pbstr("2.29.40.0");
  ti.driver_version = synth_pbstr("2.25.4.0");
  ti.collectives_version = synth_pbstr("2.29.41.0");
  ti.num_neuron_devices = 16;
  ti.num_neuroncores = (uint32_t)o->cores;
  FILE *f = synth_fopen(p->path, "trace_info.pb");
  if (!f)
    return synth_sys_fail(o, -errno, "trace_info.pb");
  int rc = fmt_pb_write_header(f, FMT_PB_MAGIC_TRACE_INFO);
  if (rc == 0)
    rc = fmt_pb_write_msg(f, &ti.base);
  int rc2 = synth_fclose(f);
  rc = rc ? rc : rc2;
  if (rc < 0)
    return synth_sys_fail(o, rc, "trace_info.pb");
  o->s->c.metadata++;
  return 0;
}

static void synth_sys_add_file(struct synth_sys_out *o, char *name) {
  o->files = xrealloc(o->files, (size_t)(o->n_files + 1) * sizeof *o->files);
  o->files[o->n_files++] = name;
}

/* Opens a framed capture file of the folder and writes its header. */
static int synth_sys_open_pb(struct synth_sys_out *o, const char *name,
                             const char *magic, FILE **out) {
  *out = synth_fopen(o->p->path, name);
  if (!*out)
    return synth_sys_fail(o, -errno, name);
  synth_sys_add_file(o, xstrdup(name));
  int rc = fmt_pb_write_header(*out, magic);
  return rc < 0 ? synth_sys_fail(o, rc, name) : 0;
}

/* Opens every file of the folder that is written while the steps run. */
static int synth_sys_open(struct synth_sys_out *o) {
  struct synth *s = o->s;
  struct synth_proc *p = o->p;
  int rc = synth_mkdirs(p->path);
  if (rc < 0)
    return synth_sys_fail(o, rc, NULL);
  if ((rc = synth_sys_open_pb(o, "ntrace.pb", FMT_PB_MAGIC_NTRACE,
                              &o->ntrace)) ||
      (rc = synth_sys_open_pb(o, "cpu_util.pb", FMT_PB_MAGIC_CPU_UTIL,
                              &o->cpu)) ||
      (rc =
           synth_sys_open_pb(o, "host_mem.pb", FMT_PB_MAGIC_HOST_MEM, &o->mem)))
    return rc;
  if (s->o.framework) {
    o->json = synth_fopen(p->path, "trace.json");
    if (!o->json)
      return synth_sys_fail(o, -errno, "trace.json");
    synth_sys_add_file(o, xstrdup("trace.json"));
    synth_sys_json_begin(o);
  }
  if (s->o.devmode == SYNTH_DEV_NONE)
    return 0;
  for (int k = 0; k < s->n_models; k++) {
    rc = synth_neff_write(s, p->path, &s->models[k]);
    if (rc < 0)
      return synth_sys_fail(o, rc, s->models[k].file);
    synth_sys_add_file(o, xstrdup(s->models[k].file));
  }
  for (int n = 0; n < o->cores; n++) {
    const struct synth_core *c = &p->cores[n];
    char *file = synth_sys_ntff_name(o, n);
    if (s->o.devmode == SYNTH_DEV_SESSION) {
      int64_t origin = synth_sys_dev(c, p->first_ts);
      rc = synth_dev_open(s, p, c, file, 0, origin, c->last_exec_end_dev,
                          &o->dev[n]);
      if (rc < 0) {
        synth_sys_fail(o, rc, file);
        free(file);
        return rc;
      }
    }
    synth_sys_add_file(o, file);
  }
  return 0;
}

/* Closes every file still open; keeps the first error. */
static int synth_sys_close(struct synth_sys_out *o, int rc) {
  FILE **fs[] = {&o->ntrace, &o->cpu, &o->mem, &o->json};
  static const char *const names[] = {"ntrace.pb", "cpu_util.pb", "host_mem.pb",
                                      "trace.json"};
  if (o->json && rc == 0)
    fputs("\n]}\n", o->json);
  for (size_t k = 0; k < sizeof fs / sizeof *fs; k++) {
    if (!*fs[k])
      continue;
    int rc2 = synth_fclose(*fs[k]);
    *fs[k] = NULL;
    if (rc == 0 && rc2 < 0)
      rc = synth_sys_fail(o, rc2, names[k]);
  }
  for (int n = 0; o->dev && n < o->cores; n++) {
    if (!o->dev[n])
      continue;
    int rc2 = synth_dev_close(o->dev[n]);
    o->dev[n] = NULL;
    if (rc == 0 && rc2 < 0) {
      char *file = synth_sys_ntff_name(o, n);
      rc = synth_sys_fail(o, rc2, file);
      free(file);
    }
  }
  return rc;
}

int synth_sys_process(struct synth *s, struct synth_proc *p, char **cause) {
  int cores = s->o.cores;
  struct synth_sys_load *ld = xcalloc((size_t)cores, sizeof *ld);
  struct synth_sys_step st = {0};
  struct synth_sys_out o = {.s = s, .p = p, .cores = cores, .cause = cause};
  synth_sys_step_alloc(&st, cores);
  synth_sys_prepass(s, p, ld, &st);

  o.dev = xcalloc((size_t)cores, sizeof *o.dev);
  o.flows = xcalloc((size_t)cores, sizeof *o.flows);
  o.evs = xcalloc((size_t)cores * 9, sizeof *o.evs);
  o.srng.s = synth_rng_stream(s->o.seed, 5, (uint64_t)p->global);
  o.s_t0 = p->first_ts;
  int64_t span = p->last_ts - p->first_ts;
  o.s_period = span / 256 > MS ? span / 256 : MS;
  o.s_n = span / o.s_period + 1;
  for (int k = 0; k < SYNTH_SYS_CPUS; k++)
    o.cpu_util[k] = synth_rng_uniform(&o.srng, 10, 60);
  o.mem_used =
      (double)(38 * GIB) + synth_rng_uniform(&o.srng, 0, 4) * (double)GIB;

  int rc = synth_sys_open(&o);
  if (rc == 0) {
    struct synth_sys_sim sim = {
        {synth_rng_stream(s->o.seed, 4, (uint64_t)p->global)}, p->start};
    synth_sys_sim_loads(&sim, cores, ld);
    rc = synth_sys_write_loads(&o, ld);
    synth_progress(s, 2 * (uint64_t)cores);
    for (int64_t k = 0; k < s->o.steps && rc == 0; k++) {
      synth_sys_sim_step(&sim, p, cores, k, &st);
      rc = synth_sys_write_step(&o, &st);
    }
    if (rc == 0)
      rc = synth_sys_samples_until(&o, INT64_MAX);
  }
  rc = synth_sys_close(&o, rc);
  if (rc == 0)
    rc = synth_sys_write_trace_info(&o);
  for (int k = 0; k < o.n_files; k++)
    free(o.files[k]);
  free(o.files);
  free(o.dev);
  free(o.flows);
  free(o.evs);
  free(st.nc);
  free(st.fw);
  free(ld);
  return rc;
}
