/* synth_dev.c -- device traces (NTFF) of one NeuronCore.
 *
 * Each execution is written as an ExecutionInfo followed by its records in
 * time order: instructions on six engine rows, DMA packets on 6..10 named
 * queues, semaphore updates on S[0]..S[7], SBUF/PSUM usage samples and, when
 * the execution ran a collective, a CcOp.  Every record lies inside its
 * execution.  Records come from small generators (one per row) merged by
 * start time, so memory stays constant whatever the instruction count.
 *
 * Each instruction names the instructions it waits for (inst_dep_ids): the
 * previous one of its engine queue, and for a semaphore wait (every
 * SEM_WAIT, a quarter of the others) the last finished instruction of one
 * or two other engines.  These draws come from a stream of their own, so
 * every other record is the same with or without them.
 */
#include "synth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_pb.h"
#include "ntff.pb-c.h"

#define SYNTH_DEV_SEMS 8
#define SYNTH_DEV_USAGE_TICKS 64
#define SYNTH_DEV_MAX_DEPS 3

/* Engine rows: share of the instructions, busy fraction, opcodes (the first
 * one dominates). */
static const struct synth_dev_row {
  const char *track, *engine;
  double share, busy;
  const char *ops[4];
} synth_dev_rows[] = {
    {"TensorMatrix", "tensor", 0.30, 0.85, {"MATMUL", "TRANSPOSE", NULL}},
    {"Tensor", "tensor", 0.10, 0.60, {"LDWEIGHTS", "TRANSPOSE", NULL}},
    {"Vector",
     "vector",
     0.20,
     0.70,
     {"TENSOR_TENSOR", "TENSOR_SCALAR", "TENSOR_REDUCE", "TENSOR_COPY"}},
    {"Scalar",
     "scalar",
     0.15,
     0.65,
     {"ACTIVATE", "TENSOR_SCALAR", "ACT_TABLE_LOAD", NULL}},
    {"GpSimd", "gpsimd", 0.10, 0.50, {"IOTA", "TENSOR_TENSOR", "MEMSET", NULL}},
    {"Sync",
     "sync",
     0.15,
     0.40,
     {"SEM_WAIT", "DRAIN", "DMA_TRIGGER", "NOTIFY"}},
};
#define SYNTH_DEV_ROWS ((int)(sizeof synth_dev_rows / sizeof *synth_dev_rows))

static const struct synth_dev_queue {
  const char *name, *type, *variable;
  int min_log2, max_log2; /* packet sizes */
} synth_dev_queues[] = {
    {"qSyncIO0", "input", "input0", 12, 16},
    {"qSyncIO1", "output", "output0", 12, 16},
    {"qTensorWeights0", "data", "weight", 9, 16},
    {"qScalarSpillReload0-Q1-E64", "data", "spill", 9, 14},
    {"qSyncPIO0", "instruction", "instr", 8, 11},
    {"qGpSimdPIO0", "instruction", "instr", 8, 11},
    {"qTensorWeights1", "data", "weight", 9, 16},
    {"qSyncSpillReload0", "data", "spill", 9, 14},
    {"qGpSimdDynamic", "software_dynamic", "dyn", 9, 13},
    {"qSyncDynamicHW", "hardware_dynamic", "dyn", 9, 13},
};
#define SYNTH_DEV_QUEUES                                                       \
  ((int)(sizeof synth_dev_queues / sizeof *synth_dev_queues))

/* Framework operator and HLO instruction by position in the execution. */
static const struct synth_dev_phase {
  const char *op, *hlo;
} synth_dev_phases[] = {
    {"aten::linear", "%dot.1 = bf16[128,1024] dot(%p0.1, %p1.2)"},
    {"aten::matmul", "%dot.7 = bf16[128,1024] dot(%add.3, %p2.4)"},
    {"aten::add", "%add.9 = bf16[128,1024] add(%dot.7, %broadcast.8)"},
    {"aten::relu",
     "%maximum.11 = bf16[128,1024] maximum(%add.9, %constant.10)"},
    {"aten::mse_loss",
     "%subtract.13 = bf16[128,1024] subtract(%maximum.11, %p3.12)"},
    {"aten::mean", "%reduce.16 = f32[] reduce(%multiply.14, %constant.15)"},
};
#define SYNTH_DEV_PHASES                                                       \
  ((int)(sizeof synth_dev_phases / sizeof *synth_dev_phases))

static const char *const synth_dev_sources[] = {"Tensor", "Scalar", "Vector",
                                                "Sync",   "GpSimd", "AXI"};

enum synth_dev_kind { GEN_ROW, GEN_QUEUE, GEN_SEM, GEN_USAGE, GEN_CC };

/* One row of records laid out in equal slots over a window. */
struct synth_dev_gen {
  enum synth_dev_kind kind;
  int which;      /* row or queue index */
  int64_t n, i;   /* records, next record */
  int64_t w0, w1; /* window */
  double slot, busy;
  int64_t start, dur;           /* the pending record */
  int64_t size;                 /* the pending DMA packet's bytes */
  int64_t prev_start, prev_dur; /* the previous record */
};

struct synth_dev {
  struct synth *s;
  FILE *f;
  char *file; /* relative to --out */
  const struct synth_core *core;
  int64_t origin;
  struct synth_rng rng;
  int n_queues;
  int32_t index; /* next execution index */
  uint64_t executions, instructions, inst_deps;
  struct synth_rng dep_rng;       /* the dependencies' draws */
  uint64_t last_id[SYNTH_DEV_ROWS]; /* per engine row, in this execution */
  int64_t last_end[SYNTH_DEV_ROWS];
  uint64_t pc[SYNTH_DEV_ROWS];
  int32_t sem[SYNTH_DEV_SEMS];
  double sbuf, psum;
  uint64_t cc_ops;
  char text[256];
};

static int synth_dev_record(struct synth_dev *d, Nex__NtffRecord *r) {
  return fmt_pb_write_msg(d->f, &r->base);
}

int synth_dev_open(struct synth *s, const struct synth_proc *p,
                   const struct synth_core *c, const char *file,
                   int64_t session_id, int64_t origin, int64_t last,
                   struct synth_dev **out) {
  struct synth_dev *d = xcalloc(1, sizeof *d);
  d->s = s;
  d->core = c;
  d->origin = origin;
  d->file = xasprintf("%s/%s", p->dir, file);
  d->rng.s = synth_rng_stream(s->o.seed, 6,
                              (uint64_t)c->worker_gid * 2 + (session_id >= 0));
  d->dep_rng.s = synth_rng_stream(s->o.seed, 8,
                                  (uint64_t)c->worker_gid * 2 +
                                      (session_id >= 0));
  d->n_queues = (int)synth_rng_range(&d->rng, 6, SYNTH_DEV_QUEUES);
  d->sbuf = 50;
  d->psum = 30;
  for (int k = 0; k < SYNTH_DEV_ROWS; k++)
    d->pc[k] = (uint64_t)k << 20;
  d->f = synth_fopen(p->path, file);
  if (!d->f) {
    int rc = -errno;
    free(d->file);
    free(d);
    return rc;
  }
  Nex__NtffHeader h = NEX__NTFF_HEADER__INIT;
  h.ntff_version = SYNTH_NTFF_VERSION;
  h.nc_idx = c->nc;
  h.pcore_idx = c->pcore;
  h.neff_hash = c->model->hash;
  h.session_id = session_id;
  h.model_name = synth_pbstr(c->model->name);
  h.ticks_per_nanosec = 1.4;
  h.num_physical_cores = 32;
  h.instance_type = synth_pbstr(SYNTH_INSTANCE_TYPE);
  h.first_hw_timestamp = origin;
  h.last_hw_timestamp = last;
  h.tensor_engine_num_rows = 128;
  h.tensor_engine_num_cols = 128;
  h.neuroncore_clock_freq = 1.4;
  h.hbm_ddr_bandwidth = 410e9;
  h.peak_flops = 95e12;
  Nex__NtffRecord r = NEX__NTFF_RECORD__INIT;
  r.record_case = NEX__NTFF_RECORD__RECORD_HEADER;
  r.header = &h;
  int rc = fmt_pb_write_header(d->f, FMT_PB_MAGIC_NTFF);
  if (rc == 0)
    rc = synth_dev_record(d, &r);
  if (rc < 0) {
    fclose(d->f);
    free(d->file);
    free(d);
    return rc;
  }
  s->c.device_profiles++;
  *out = d;
  return 0;
}

int synth_dev_close(struct synth_dev *d) {
  int rc = synth_fclose(d->f);
  synth_add_device_profile(d->s, d->file, d->core->nc, d->executions,
                           d->instructions, d->inst_deps);
  free(d->file);
  free(d);
  return rc;
}

/* ------------------------------------------------------------------- layout */

static void synth_dev_gen_init(struct synth_dev *d, struct synth_dev_gen *g,
                               enum synth_dev_kind kind, int which, int64_t n,
                               int64_t s0, int64_t s1, double busy) {
  int64_t len = s1 - s0;
  *g = (struct synth_dev_gen){
      .kind = kind, .which = which, .n = n, .busy = busy};
  g->w0 = s0 + (int64_t)((double)len * synth_rng_uniform(&d->rng, 0.002, 0.01));
  g->w1 = s1 - (int64_t)((double)len * synth_rng_uniform(&d->rng, 0.002, 0.01));
  g->slot = n ? (double)(g->w1 - g->w0) / (double)n : 0;
}

/* Places record g->i: inside its slot, or (2% of TensorMatrix
 * instructions) overlapping the previous one. */
static void synth_dev_gen_place(struct synth_dev *d, struct synth_dev_gen *g) {
  struct synth_rng *r = &d->rng;
  int64_t s0 = g->w0 + (int64_t)((double)g->i * g->slot);
  int64_t s1 = g->w0 + (int64_t)((double)(g->i + 1) * g->slot);
  if (s1 > g->w1)
    s1 = g->w1;
  if (g->kind == GEN_SEM || g->kind == GEN_USAGE) {
    g->dur = 0;
    g->start = g->kind == GEN_USAGE ? s0 : synth_rng_range(r, s0, s1);
    return;
  }
  int64_t room = s1 - s0;
  int64_t dur =
      (int64_t)((double)room * g->busy * synth_rng_uniform(r, 0.7, 1.0));
  if (g->kind == GEN_QUEUE) { /* a packet takes its size / bandwidth */
    const struct synth_dev_queue *q = &synth_dev_queues[g->which];
    g->size = INT64_C(1) << synth_rng_range(r, q->min_log2, q->max_log2);
    int64_t t = 100 + g->size * 1000 / synth_rng_range(r, 8000, 24000);
    dur = t < room ? t : room;
  }
  if (dur < 1)
    dur = 1;
  int64_t start = s0 + synth_rng_range(r, 0, room > dur ? room - dur : 0);
  if (g->kind == GEN_ROW && g->which == 0 && g->i > 0 &&
      synth_rng_unit(r) < 0.02) {
    start = g->prev_start + g->prev_dur / 2;
    if (dur > s1 - start)
      dur = s1 - start > 1 ? s1 - start : 1;
  }
  if (start + dur > g->w1)
    start = g->w1 - dur;
  g->start = start;
  g->dur = dur;
}

/* ------------------------------------------------------------------ records */

/* The dependencies of the instruction g is about to write on engine row
 * g->which: fills deps, returns how many. */
static size_t synth_dev_deps(struct synth_dev *d, const struct synth_dev_gen *g,
                             const char *op, uint64_t *deps) {
  struct synth_rng *r = &d->dep_rng;
  size_t n = 0;
  if (d->last_id[g->which])
    deps[n++] = d->last_id[g->which];
  int waits = !strcmp(op, "SEM_WAIT") ? (int)synth_rng_range(r, 1, 2)
              : synth_rng_unit(r) < 0.25 ? 1
                                         : 0;
  for (int w = 0; w < waits && n < SYNTH_DEV_MAX_DEPS; w++) {
    int k = (int)synth_rng_range(r, 0, SYNTH_DEV_ROWS - 2);
    k += k >= g->which; /* another engine */
    uint64_t id = d->last_id[k];
    if (!id || d->last_end[k] > g->start || (n && deps[n - 1] == id))
      continue;
    deps[n++] = id;
  }
  return n;
}

static int synth_dev_instruction(struct synth_dev *d, struct synth_dev_gen *g,
                                 int64_t s0, int64_t len) {
  struct synth_rng *r = &d->rng;
  const struct synth_dev_row *row = &synth_dev_rows[g->which];
  int nops = 0;
  while (nops < 4 && row->ops[nops])
    nops++;
  const char *op = synth_rng_unit(r) < 0.8
                       ? row->ops[0]
                       : row->ops[synth_rng_range(r, 0, nops - 1)];
  int phase = (int)((g->start - s0) * SYNTH_DEV_PHASES / (len + 1));
  Nex__Instruction in = NEX__INSTRUCTION__INIT;
  unsigned sem = (unsigned)synth_rng_range(r, 0, SYNTH_DEV_SEMS - 1);
  unsigned addr = (unsigned)synth_rng_range(r, 0, 0x3fff) << 4;
  int64_t cols = synth_rng_range(r, 1, 4) * 128;
  if (!strcmp(op, "MATMUL")) {
    snprintf(d->text, sizeof d->text,
             "S[%u] (Tensor)++@complete acc_flags=%d row_grp=q%d "
             "src=bf16@0x%x[1,0,0][%d,1,1] dst=0x%x[1,0,0][%d,1,1] %d*128 ",
             sem, (int)synth_rng_range(r, 0, 3), (int)synth_rng_range(r, 0, 3),
             addr, (int)(cols / 128), 0x2000000u + addr, (int)(cols / 128),
             (int)(cols / 128));
    in.raw_flops = 2 * UINT64_C(128) * 128 * (uint64_t)cols;
  } else if (!strcmp(op, "TRANSPOSE")) { /* through the PE array too */
    snprintf(d->text, sizeof d->text,
             "S[%u] (%s)++@complete src=bf16@0x%x[1,0,0][%d,1,1] "
             "dst=0x%x[1,0,0][%d,1,1] transpose ",
             sem, row->track, addr, (int)(cols / 128), 0x2000000u + addr,
             (int)(cols / 128));
    in.raw_flops = 2 * UINT64_C(128) * 128 * (uint64_t)cols;
  } else if (!strcmp(op, "SEM_WAIT") || !strcmp(op, "DRAIN") ||
             !strcmp(op, "NOTIFY")) {
    snprintf(d->text, sizeof d->text, "S[%u] (%s) >= %d ", sem, row->track,
             (int)synth_rng_range(r, 1, 64));
  } else if (!strcmp(op, "DMA_TRIGGER")) {
    const struct synth_dev_queue *q =
        &synth_dev_queues[synth_rng_range(r, 0, d->n_queues - 1)];
    snprintf(d->text, sizeof d->text, "%s desc=%d S[%u]++ ", q->name,
             (int)synth_rng_range(r, 0, 4095), sem);
    in.hbm_read_bytes = (uint64_t)synth_rng_range(r, 4096, 262144);
    in.hbm_write_bytes = synth_rng_unit(r) < 0.3 ? in.hbm_read_bytes / 2 : 0;
  } else if (!strcmp(op, "IOTA") || !strcmp(op, "MEMSET")) {
    snprintf(d->text, sizeof d->text,
             "S[%u] (%s)++@complete dst=int32@0x%x[1,0,0][%d,1,1] start=0 "
             "step=1 ",
             sem, row->track, addr, (int)(cols / 128));
  } else {
    snprintf(d->text, sizeof d->text,
             "S[%u] (%s)++@complete src=bf16@0x%x[1,0,0][%d,1,1] "
             "dst=fp32@0x%x[1,0,0][%d,1,1] ",
             sem, row->track, addr, (int)(cols / 128), addr + 0x8000u,
             (int)(cols / 128));
  }
  in.start_ts = g->start;
  in.duration_ns = g->dur;
  in.engine = synth_pbstr(row->engine);
  in.timeline_track = synth_pbstr(row->track);
  in.opcode = synth_pbstr(op);
  in.operands = d->text;
  in.id = d->s->next_id++;
  in.pc = d->pc[g->which] += 16;
  in.hlo_name = synth_pbstr(synth_dev_phases[phase].hlo);
  in.framework_op = synth_pbstr(synth_dev_phases[phase].op);
  in.execution_index = d->index;
  uint64_t deps[SYNTH_DEV_MAX_DEPS];
  in.n_inst_dep_ids = synth_dev_deps(d, g, op, deps);
  in.inst_dep_ids = deps;
  d->last_id[g->which] = in.id;
  d->last_end[g->which] = g->start + g->dur;
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  rec.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
  rec.instruction = &in;
  d->instructions++;
  d->s->c.instructions++;
  d->inst_deps += in.n_inst_dep_ids;
  d->s->c.inst_deps += in.n_inst_dep_ids;
  return synth_dev_record(d, &rec);
}

static int synth_dev_packet(struct synth_dev *d, struct synth_dev_gen *g) {
  const struct synth_dev_queue *q = &synth_dev_queues[g->which];
  Nex__DmaPacket p = NEX__DMA_PACKET__INIT;
  p.start_ts = g->start;
  p.duration_ns = g->dur;
  p.id = d->s->next_id++;
  p.queue_name = synth_pbstr(q->name);
  p.queue_idx = g->which;
  p.queue_type = synth_pbstr(q->type);
  p.engine_idx = 64 + (d->core->pcore * 4 + g->which) % 32;
  p.read_bytes = p.write_bytes = p.transfer_bytes = (uint64_t)g->size;
  if (!strcmp(q->variable, "input0") || !strcmp(q->variable, "output0"))
    p.variable = synth_pbstr(q->variable);
  else {
    snprintf(d->text, sizeof d->text, "%s_%d", q->variable, (int)(g->i % 24));
    p.variable = d->text;
  }
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  rec.record_case = NEX__NTFF_RECORD__RECORD_DMA;
  rec.dma = &p;
  d->s->c.dma++;
  return synth_dev_record(d, &rec);
}

static int synth_dev_semaphore(struct synth_dev *d, struct synth_dev_gen *g) {
  struct synth_rng *r = &d->rng;
  int k = (int)synth_rng_range(r, 0, SYNTH_DEV_SEMS - 1);
  double u = synth_rng_unit(r);
  const char *op;
  if (u < 0.85 || (u < 0.95 && d->sem[k] == 0)) {
    op = "sem_inc";
    d->sem[k]++;
  } else if (u < 0.95) {
    op = "sem_dec";
    d->sem[k]--;
  } else {
    op = "sem_wr_imm";
    d->sem[k] = 0;
  }
  char id[8];
  snprintf(id, sizeof id, "S[%d]", k);
  Nex__SemaphoreUpdate su = NEX__SEMAPHORE_UPDATE__INIT;
  su.timestamp = g->start;
  su.id = id;
  su.value = d->sem[k];
  su.update_source = synth_pbstr(synth_dev_sources[synth_rng_range(r, 0, 5)]);
  su.update_operation_type = synth_pbstr(op);
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  rec.record_case = NEX__NTFF_RECORD__RECORD_SEMAPHORE;
  rec.semaphore = &su;
  d->s->c.semaphores++;
  return synth_dev_record(d, &rec);
}

static double synth_dev_walk(struct synth_rng *r, double v, double lo,
                             double hi) {
  v += synth_rng_uniform(r, -6, 6);
  return v < lo ? lo : v > hi ? hi : v;
}

static int synth_dev_usage(struct synth_dev *d, struct synth_dev_gen *g) {
  int rc = 0;
  d->sbuf = synth_dev_walk(&d->rng, d->sbuf, 20, 90);
  d->psum = synth_dev_walk(&d->rng, d->psum, 5, 70);
  for (int k = 0; k < 2 && rc == 0; k++) {
    Nex__UsageSample u = NEX__USAGE_SAMPLE__INIT;
    u.timestamp = g->start;
    u.series = synth_pbstr(k ? "psum" : "sbuf");
    u.util_percent = k ? d->psum : d->sbuf;
    Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
    rec.record_case = NEX__NTFF_RECORD__RECORD_USAGE;
    rec.usage = &u;
    rc = synth_dev_record(d, &rec);
  }
  return rc;
}

static int synth_dev_cc(struct synth_dev *d, struct synth_dev_gen *g) {
  static const char *const ops[] = {"AllReduce", "AllGather", "ReduceScatter"};
  int k = (int)(d->cc_ops % 3);
  Nex__CcOp cc = NEX__CC_OP__INIT;
  cc.start_ts = g->start;
  cc.duration_ns = g->dur;
  cc.operation = synth_pbstr(ops[k]);
  cc.algorithm = synth_pbstr("Ring");
  cc.num_elements = UINT64_C(1) << synth_rng_range(&d->rng, 16, 22);
  cc.dtype = synth_pbstr("bf16");
  cc.op_id = ++d->cc_ops;
  cc.input_size = cc.num_elements * 2;
  cc.output_size = k == 1   ? cc.input_size * 4
                   : k == 2 ? cc.input_size / 4
                            : cc.input_size;
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  rec.record_case = NEX__NTFF_RECORD__RECORD_CC_OP;
  rec.cc_op = &cc;
  return synth_dev_record(d, &rec);
}

/* ---------------------------------------------------------------- execution */

int synth_dev_exec(struct synth_dev *d, const struct synth_dev_exec *e) {
  int64_t n_ins = d->s->o.device_instructions;
  int64_t s0 = e->start - d->origin, s1 = s0 + e->dur;
  int n_gens = SYNTH_DEV_ROWS + d->n_queues + 3;
  struct synth_dev_gen gens[SYNTH_DEV_ROWS + SYNTH_DEV_QUEUES + 3];
  int ng = 0;
  int64_t rows = 0;

  memset(d->last_id, 0, sizeof d->last_id); /* no dependency across executions */
  int64_t left = n_ins;
  for (int k = SYNTH_DEV_ROWS - 1; k >= 0; k--) { /* row 0 takes the rest */
    int64_t n = k ? (int64_t)((double)n_ins * synth_dev_rows[k].share) : left;
    left -= n;
    synth_dev_gen_init(d, &gens[ng++], GEN_ROW, k, n, s0, s1,
                       synth_dev_rows[k].busy);
  }
  int64_t n_dma = n_ins / 2;
  for (int q = 0; q < d->n_queues; q++) {
    int64_t n = n_dma / d->n_queues + (q < n_dma % d->n_queues);
    synth_dev_gen_init(d, &gens[ng++], GEN_QUEUE, q, n, s0, s1,
                       synth_rng_uniform(&d->rng, 0.3, 0.8));
  }
  int64_t n_sem = n_ins / 4;
  synth_dev_gen_init(d, &gens[ng++], GEN_SEM, 0, n_sem, s0, s1, 0);
  /* usage samples: every len/64 from the start to the end inclusive */
  struct synth_dev_gen *u = &gens[ng++];
  *u = (struct synth_dev_gen){.kind = GEN_USAGE,
                              .n = SYNTH_DEV_USAGE_TICKS + 1,
                              .w0 = s0,
                              .w1 = s1,
                              .slot = (double)e->dur / SYNTH_DEV_USAGE_TICKS};
  struct synth_dev_gen *cc = &gens[ng++];
  *cc = (struct synth_dev_gen){.kind = GEN_CC,
                               .n = e->cc_dur > 0,
                               .start = e->cc_start - d->origin,
                               .dur = e->cc_dur};
  for (int k = 0; k < n_gens; k++) {
    rows += gens[k].kind == GEN_USAGE ? 2 * gens[k].n : gens[k].n;
    if (gens[k].n && gens[k].kind != GEN_CC)
      synth_dev_gen_place(d, &gens[k]);
  }

  Nex__ExecutionInfo x = NEX__EXECUTION_INFO__INIT;
  x.execution_index = d->index;
  x.neff_name = synth_pbstr(d->core->model->file);
  x.execution_start_ts = s0;
  x.execution_end_ts = s1;
  x.num_subgraphs = 1;
  x.row_count = (uint64_t)rows;
  x.exec_id = e->exec_id;
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  rec.record_case = NEX__NTFF_RECORD__RECORD_EXECUTION;
  rec.execution = &x;
  int rc = synth_dev_record(d, &rec);
  d->executions++;
  d->s->c.executions++;

  while (rc == 0) {
    struct synth_dev_gen *g = NULL;
    for (int k = 0; k < n_gens; k++)
      if (gens[k].i < gens[k].n && (!g || gens[k].start < g->start))
        g = &gens[k];
    if (!g)
      break;
    switch (g->kind) {
    case GEN_ROW:
      rc = synth_dev_instruction(d, g, s0, s1 - s0);
      break;
    case GEN_QUEUE:
      rc = synth_dev_packet(d, g);
      break;
    case GEN_SEM:
      rc = synth_dev_semaphore(d, g);
      break;
    case GEN_USAGE:
      rc = synth_dev_usage(d, g);
      break;
    case GEN_CC:
      rc = synth_dev_cc(d, g);
      break;
    }
    g->prev_start = g->start;
    g->prev_dur = g->dur;
    if (++g->i < g->n && g->kind != GEN_CC)
      synth_dev_gen_place(d, g);
  }
  d->index++;
  return rc;
}
