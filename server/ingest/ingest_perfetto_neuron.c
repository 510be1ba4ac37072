/* ingest_perfetto_neuron.c -- a Perfetto trace written by the Neuron tools
 * (`view --output-format perfetto`: system_profile.pftrace and
 * device_profile_model_<id>.pftrace), recognised by its naming and debug
 * arguments (fmt_npf.h), into the tables of a native capture.
 *
 * System slices become SystemEvents: their debug arguments fill the fields
 * of the same name (fmt_npf_field: lnc_idx, trace_event_source, ...), the
 * others become attributes; what the arguments leave out comes from the
 * row name ("gid<w>-nc<n>-tid<t>-<source>") and the process name
 * ("<instance>-pid<pid>").  Hardware events are on the CPU clock already.
 * Counters named as the timeline names HBM usage, host CPU and host memory
 * become those samples.  The device_profile argument of nc_exec_running
 * names the device export of a NeuronCore: once the system file is read,
 * the device exports beside it are read as device profiles of their
 * instance, process and NeuronCore (instructions from the engine rows, DMA
 * from the queue rows, executions from the Executions row), so the
 * drill-down works as on a native profile.  What the export cannot say
 * (the capture's trace_info, an NTFF header) is one Warning per file.
 * See ingest_readers.h. */
#include "filter.h"
#include "fmt_npf.h"
#include "fmt_perfetto_pipe.h"
#include "ingest_readers.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* What a probe finds (non-zero: the probe's read stops). */
enum { NPF_OTHER = 1, NPF_SYSTEM, NPF_DEVICE };

/* A Perfetto process of the system file: the profile process it names. */
struct ingest_perfetto_neuron_proc {
  int64_t ppid;
  char *instance;
  int64_t pid;
};

/* A device export named by a system file's nc_exec_running. */
struct ingest_perfetto_neuron_dev {
  char *file, *instance, *model_id, *model_name;
  int64_t pid;
  int nc, pcore;
};

/* A system row's name as fmt_npf_row_parse() read it (ok), and its
 * source's enum value, remembered per track (a slot per track object,
 * checked against the name: a track may be renamed). */
struct ingest_perfetto_neuron_row {
  const struct fmt_perfetto_track *track; /* NULL: a free slot */
  char *name;
  bool ok;
  struct fmt_npf_row r; /* r.source points into name */
  int src;
};
#define NPF_ROWS 64 /* slots (a power of 2) */

/* The slot of track t among the NPF_ROWS of a per-track memo. */
static size_t ingest_perfetto_neuron_slot(const struct fmt_perfetto_track *t) {
  uintptr_t h = (uintptr_t)t / sizeof *t;
  return (h ^ (h >> 7)) % NPF_ROWS;
}

/* What a system counter's name "<instance>/<rest>" says, remembered per
 * track like the rows. */
enum {
  NPF_CTR_OTHER,     /* any other counter, as in a generic trace */
  NPF_CTR_HBM,       /* ND:<dev>/HBM:<hbm>/neuron_hbm_usage <series> */
  NPF_CTR_CPU,       /* CPU:<id>/host_cpu_util */
  NPF_CTR_MEM,       /* host_memory_usage <series> */
  NPF_CTR_BANDWIDTH, /* transfer bandwidths: derived, not read */
};
struct ingest_perfetto_neuron_ctr {
  const struct fmt_perfetto_track *track; /* NULL: a free slot */
  char *name;
  char *inst; /* NULL: no "<instance>/" */
  int kind;
  int dev, hbm, series; /* HBM: the series' index; MEM: 1 for used_percent */
  char cpu[32];
};

struct ingest_perfetto_neuron {
  struct ing *g;
  const char *rel;
  char *stem; /* file name without its extension */
  struct ingest_perfetto_neuron_proc *procs;
  size_t nprocs;
  char **seen; /* "<instance>/<pid>" of the processes written */
  size_t nseen;
  struct ingest_perfetto_neuron_dev *devs;
  size_t ndevs;
  /* the device export being read, or NULL */
  const struct ingest_perfetto_neuron_dev *dev;
  int dev_open;
  uint64_t bad_args, misfits;
  struct fmt_npf_scratch sc; /* what a slice's message holds, reset per slice */
  struct ingest_perfetto_neuron_row rows[NPF_ROWS];
  struct ingest_perfetto_neuron_ctr ctrs[NPF_ROWS];
};

/* The debug arguments of slice s in *a, packed or JSON (none when the
 * slice has none); a text that is not a JSON object is counted and read as
 * none. */
static void ingest_perfetto_neuron_args(struct ingest_perfetto_neuron *n,
                                        const struct fmt_perfetto_slice *s,
                                        struct fmt_npf_args *a) {
  if (s->args_packed)
    fmt_npf_args_packed(a, s->args_packed, s->args_packed_len);
  else if (!fmt_npf_args_open(a, s->args_json))
    n->bad_args++;
}

/* ------------------------------------------------------------- context */

/* Makes (instance, pid) the process being written: its process row and
 * SystemProfileMetadata row the first time (none for an instance the
 * filter leaves out: its records are not stored either). */
static void ingest_perfetto_neuron_context(struct ingest_perfetto_neuron *n,
                                           const char *instance, int64_t pid) {
  const char *cur = ingest_context_instance(n->g);
  if (cur && strcmp(cur, instance) == 0 && ingest_context_pid(n->g) == pid)
    return;
  ingest_context_set(n->g, instance, pid);
  if (pid < 0 || !filter_keep_instance(ingest_opts(n->g)->filter, instance))
    return; /* samples of an instance: no process */
  char *key = xasprintf("%s/%" PRId64, instance, pid);
  for (size_t i = 0; i < n->nseen; i++)
    if (strcmp(n->seen[i], key) == 0) {
      free(key);
      return;
    }
  n->seen = xrealloc(n->seen, (n->nseen + 1) * sizeof *n->seen);
  n->seen[n->nseen++] = key;
  ingest_process(n->g, instance, pid, NULL, NULL);
  ingest_system_metadata(n->g, instance, pid, NULL, NULL, n->rel);
}

static const struct ingest_perfetto_neuron_proc *
ingest_perfetto_neuron_proc_of(const struct ingest_perfetto_neuron *n,
                               int64_t ppid) {
  for (size_t i = 0; i < n->nprocs; i++)
    if (n->procs[i].ppid == ppid)
      return &n->procs[i];
  return NULL;
}

static int ingest_perfetto_neuron_track(void *ud,
                                        const struct fmt_perfetto_track *t) {
  struct ingest_perfetto_neuron *n = ud;
  size_t len;
  int64_t pid;
  if (!t->is_process || !t->process_name ||
      ingest_perfetto_neuron_proc_of(n, t->pid) ||
      !fmt_npf_process_parse(t->process_name, &len, &pid))
    return 0;
  n->procs = xrealloc(n->procs, (n->nprocs + 1) * sizeof *n->procs);
  n->procs[n->nprocs++] = (struct ingest_perfetto_neuron_proc){
      t->pid, xstrndup(t->process_name, len), pid};
  return 0;
}

static const char *
ingest_perfetto_neuron_row_name(const struct fmt_perfetto_track *t) {
  return t->thread_name ? t->thread_name : t->name ? t->name : "";
}

/* -------------------------------------------------------------- system */

/* Track t's system row name parsed; NULL when it is not one. */
static const struct ingest_perfetto_neuron_row *
ingest_perfetto_neuron_row(struct ingest_perfetto_neuron *n,
                           const struct fmt_perfetto_track *t) {
  const char *name = ingest_perfetto_neuron_row_name(t);
  struct ingest_perfetto_neuron_row *w =
      &n->rows[ingest_perfetto_neuron_slot(t)];
  if (w->track != t || strcmp(w->name, name) != 0) {
    free(w->name);
    w->track = t;
    w->name = xstrdup(name);
    w->ok = fmt_npf_row_parse(w->name, &w->r);
    w->src =
        w->ok ? fmt_npf_enum(&nex__trace_event_source__descriptor, w->r.source)
              : -1;
  }
  return w->ok ? w : NULL;
}

/* Remembers the device export an nc_exec_running names. */
static void ingest_perfetto_neuron_dev_add(struct ingest_perfetto_neuron *n,
                                           const char *file,
                                           const Nex__SystemEvent *e) {
  for (size_t i = 0; i < n->ndevs; i++)
    if (strcmp(n->devs[i].file, file) == 0)
      return;
  char id[24];
  snprintf(id, sizeof id, "%" PRIu64, e->model_id);
  n->devs = xrealloc(n->devs, (n->ndevs + 1) * sizeof *n->devs);
  n->devs[n->ndevs++] = (struct ingest_perfetto_neuron_dev){
      xstrdup(file),
      xstrdup(ingest_context_instance(n->g)),
      e->model_id ? xstrdup(id) : NULL,
      *e->model_name ? xstrdup(e->model_name) : NULL,
      ingest_context_pid(n->g),
      e->nc_idx,
      e->pcore_idx};
}

/* Names event e (filled from its arguments) after its slice when they do
 * not: a hardware slice reads "<name> <model>".  Returns the name to free, or
 * NULL. */
static char *ingest_perfetto_neuron_sys_name(const struct fmt_perfetto_slice *s,
                                             Nex__SystemEvent *e) {
  char *name = NULL;
  if (!*e->name) { /* no name argument */
    size_t nl = strlen(s->name), ml = strlen(e->model_name);
    if (ml && nl > ml + 1 && s->name[nl - ml - 1] == ' ' &&
        strcmp(s->name + nl - ml, e->model_name) == 0)
      name = xstrndup(s->name, nl - ml - 1);
    e->name = name ? name : (char *)(uintptr_t)s->name;
  }
  /* a sync point is stored at its CPU time: the slice's when not given */
  if (!e->cpu_timestamp_ns && strcmp(e->name, "timestamp_sync_point") == 0)
    e->cpu_timestamp_ns = s->ts_ns;
  return name;
}

static int
ingest_perfetto_neuron_sys_slice(void *ud, const struct fmt_perfetto_slice *s) {
  /* arguments that are not fields of the event: read beside them */
  enum { INSTANCE, PROCESS, UNIT, DEVICE_PROFILE, NSKIP };
  static const char *const skip[NSKIP + 1] = {[INSTANCE] = "instance_id",
                                              [PROCESS] = "process_id",
                                              [UNIT] = "timestamp_unit",
                                              [DEVICE_PROFILE] =
                                                  "device_profile"};
  struct ingest_perfetto_neuron *n = ud;
  ingest_file_pos(n->g, s->offset);
  struct fmt_npf_args args;
  ingest_perfetto_neuron_args(n, s, &args);
  struct fmt_npf_scratch *sc = &n->sc;
  struct jtok_span got[NSKIP];
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  e.nc_idx = e.pcore_idx = e.worker_gid = -1;
  e.thread_id = s->tid >= 0 ? s->tid : 0;
  const struct ingest_perfetto_neuron_row *row =
      ingest_perfetto_neuron_row(n, s->track);
  if (row) {
    e.worker_gid = (int32_t)row->r.worker;
    e.nc_idx = (int32_t)row->r.nc;
    e.thread_id = row->r.tid >= 0 ? row->r.tid : e.thread_id;
    e.source = row->src > 0 ? (Nex__TraceEventSource)row->src : e.source;
  }
  n->misfits += fmt_npf_fill(&e.base, &args, skip, got, sc);
  e.timestamp = s->ts_ns;
  e.duration = s->dur_ns;
  char *name = ingest_perfetto_neuron_sys_name(s, &e);
  if (!e.n_flow_id && s->n_flow_ids) {
    e.n_flow_id = s->n_flow_ids;
    e.flow_id = (uint64_t *)(uintptr_t)s->flow_ids;
  }
  /* the process: the arguments, else the process name, else the file */
  const struct ingest_perfetto_neuron_proc *p =
      ingest_perfetto_neuron_proc_of(n, s->track->pid);
  const char *inst = fmt_npf_value_str(&got[INSTANCE], sc);
  int64_t pid;
  uint64_t u;
  double d;
  if (!fmt_npf_value_num(&got[PROCESS], &pid, &u, &d))
    pid = p ? p->pid : 0;
  ingest_perfetto_neuron_context(n,
                                 inst ? inst
                                 : p  ? p->instance
                                      : n->stem,
                                 pid);
  const char *dp = fmt_npf_value_str(&got[DEVICE_PROFILE], sc);
  if (dp)
    ingest_perfetto_neuron_dev_add(n, dp, &e);
  if (ingest_context_kept(n->g))
    ingest_system_event(n->g, &e, false);
  free(name);
  fmt_npf_scratch_reset(sc);
  return 0;
}

/* What counter c's name says (see NPF_CTR_*). */
static const struct ingest_perfetto_neuron_ctr *
ingest_perfetto_neuron_ctr(struct ingest_perfetto_neuron *n,
                           const struct fmt_perfetto_counter *c) {
  struct ingest_perfetto_neuron_ctr *w =
      &n->ctrs[ingest_perfetto_neuron_slot(c->track)];
  if (w->track == c->track && strcmp(w->name, c->name) == 0)
    return w;
  free(w->name);
  free(w->inst);
  *w = (struct ingest_perfetto_neuron_ctr){.track = c->track,
                                           .name = xstrdup(c->name)};
  const char *sl = strchr(c->name, '/'), *rest = sl ? sl + 1 : NULL;
  char series[64];
  const ProtobufCFieldDescriptor *f = NULL;
  if (!sl)
    return w;
  w->inst = xstrndup(c->name, (size_t)(sl - c->name));
  if (sscanf(rest, "ND:%d/HBM:%d/neuron_hbm_usage %63s", &w->dev, &w->hbm,
             series) == 3)
    f = protobuf_c_message_descriptor_get_field_by_name(
        &nex__hbm_usage__descriptor, series);
  if (f && f->id >= 4) { /* total_bytes = 4: the series in field order */
    w->kind = NPF_CTR_HBM;
    w->series = (int)(f->id - 4);
  } else if (sscanf(rest, "CPU:%31[^/]/host_cpu_util", w->cpu) == 1) {
    w->kind = NPF_CTR_CPU;
  } else if (sscanf(rest, "host_memory_usage %63s", series) == 1) {
    w->kind = NPF_CTR_MEM;
    w->series = strcmp(series, "used_percent") == 0;
  } else if (strstr(rest, "transfer_bandwidth")) {
    w->kind = NPF_CTR_BANDWIDTH;
  }
  return w;
}

static int
ingest_perfetto_neuron_sys_counter(void *ud,
                                   const struct fmt_perfetto_counter *c) {
  struct ingest_perfetto_neuron *n = ud;
  struct ing *g = n->g;
  ingest_file_pos(g, c->offset);
  const struct ingest_perfetto_neuron_ctr *w = ingest_perfetto_neuron_ctr(n, c);
  ingest_perfetto_neuron_context(n, w->inst ? w->inst : n->stem, -1);
  if (!ingest_context_kept(g))
    return 0;
  struct store_track t;
  switch (w->kind) {
  case NPF_CTR_HBM:
    t = ingest_desc("counter", "system", "neuron_hbm_usage",
                    ingest_context_instance(n->g));
    t.device_idx = w->dev;
    t.hbm_idx = w->hbm;
    ingest_counter(g, ingest_track(g, &t), w->series, c->ts_ns, c->value);
    break;
  case NPF_CTR_CPU: {
    Nex__CpuUsage u = NEX__CPU_USAGE__INIT;
    u.timestamp = c->ts_ns;
    u.cpu_id = (char *)(uintptr_t)w->cpu;
    u.util_percent = c->value;
    ingest_system_cpu_sample(g, &u);
    break;
  }
  case NPF_CTR_MEM:
    t = ingest_desc("counter", "system", "host_mem",
                    ingest_context_instance(n->g));
    ingest_counter(g, ingest_track(g, &t), w->series, c->ts_ns, c->value);
    break;
  case NPF_CTR_BANDWIDTH:
    break;
  default: /* any other counter as in a generic trace */
    t = ingest_desc("counter", "system", "chrome_counter", n->stem);
    t.pid = 0;
    t.has_pid = 1;
    t.label = c->name;
    ingest_counter(g, ingest_track(g, &t), 0, c->ts_ns, c->value);
    break;
  }
  return 0;
}

/* -------------------------------------------------------------- device */

/* Opens the device profile of the export being read (header: its NTFF
 * header when the export carries one). */
static void ingest_perfetto_neuron_dev_open(struct ingest_perfetto_neuron *n,
                                            const Nex__NtffHeader *header) {
  const struct ingest_perfetto_neuron_dev *d = n->dev;
  ingest_perfetto_neuron_context(n, d ? d->instance : n->stem, d ? d->pid : 0);
  struct ingest_device_info info = {.name = n->stem,
                                    .ntff_file = n->rel,
                                    .model_name = header && *header->model_name
                                                      ? header->model_name
                                                  : d ? d->model_name
                                                      : NULL,
                                    .model_id = d ? d->model_id : NULL,
                                    .nc = d        ? d->nc
                                          : header ? header->nc_idx
                                                   : -1,
                                    .pcore = d        ? d->pcore
                                             : header ? header->pcore_idx
                                                      : -1,
                                    .session = header ? header->session_id : -1,
                                    .header = header};
  if (!d)
    ingest_warn(n->g, "Missing Data", n->rel, 0,
                "no nc_exec_running of a system_profile.pftrace beside it "
                "names this device export: its instance, process and "
                "NeuronCore are unknown");
  if (!header)
    ingest_warn(n->g, "Missing Data", n->rel, 0,
                "no NTFF header in this device export: its Metadata row "
                "(clock, engine sizes, peak FLOP/s) is unknown");
  ingest_device_begin(n->g, &info);
  n->dev_open = 1;
}

static void ingest_perfetto_neuron_dev_record(struct ingest_perfetto_neuron *n,
                                              Nex__NtffRecord *r) {
  if (!n->dev_open)
    ingest_perfetto_neuron_dev_open(n, NULL);
  ingest_device_record(n->g, r);
}

static int
ingest_perfetto_neuron_dev_slice(void *ud, const struct fmt_perfetto_slice *s) {
  struct ingest_perfetto_neuron *n = ud;
  ingest_file_pos(n->g, s->offset);
  struct fmt_npf_args args;
  ingest_perfetto_neuron_args(n, s, &args);
  struct fmt_npf_scratch *sc = &n->sc;
  Nex__NtffRecord r = NEX__NTFF_RECORD__INIT;
  const char *row = ingest_perfetto_neuron_row_name(s->track);
  size_t bl, el = strlen(FMT_NPF_ENGINE_SUFFIX);
  char *base = fmt_npf_row_base(row, &bl) ? xstrndup(row, bl) : xstrdup(row);
  bl = strlen(base);
  if (s->instant && strcmp(base, FMT_NPF_ROW_EXECUTIONS) == 0) {
    Nex__ExecutionInfo x = NEX__EXECUTION_INFO__INIT;
    x.execution_start_ts = s->ts_ns;
    x.neff_name = (char *)(uintptr_t)s->name;
    n->misfits += fmt_npf_fill(&x.base, &args, NULL, NULL, sc);
    if (!n->dev_open) { /* the header rides on the first execution */
      Nex__NtffHeader h = NEX__NTFF_HEADER__INIT;
      fmt_npf_fill(&h.base, &args, NULL, NULL, sc); /* counted with x */
      ingest_perfetto_neuron_dev_open(
          n, fmt_npf_args_has(&args, "ntff_version") ? &h : NULL);
    }
    r.record_case = NEX__NTFF_RECORD__RECORD_EXECUTION;
    r.execution = &x;
    ingest_perfetto_neuron_dev_record(n, &r);
  } else if (bl > el && strcmp(base + bl - el, FMT_NPF_ENGINE_SUFFIX) == 0) {
    Nex__Instruction in = NEX__INSTRUCTION__INIT;
    base[bl - el] = '\0';
    in.timeline_track = base;
    in.opcode = (char *)(uintptr_t)s->name;
    n->misfits += fmt_npf_fill(&in.base, &args, NULL, NULL, sc);
    in.start_ts = s->ts_ns;
    in.duration_ns = s->dur_ns;
    r.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
    r.instruction = &in;
    ingest_perfetto_neuron_dev_record(n, &r);
  } else if (strcmp(base, FMT_NPF_ROW_CC) == 0) {
    Nex__CcOp c = NEX__CC_OP__INIT;
    c.operation = (char *)(uintptr_t)s->name;
    n->misfits += fmt_npf_fill(&c.base, &args, NULL, NULL, sc);
    c.start_ts = s->ts_ns;
    c.duration_ns = s->dur_ns;
    r.record_case = NEX__NTFF_RECORD__RECORD_CC_OP;
    r.cc_op = &c;
    ingest_perfetto_neuron_dev_record(n, &r);
  } else { /* a DMA queue */
    Nex__DmaPacket p = NEX__DMA_PACKET__INIT;
    p.queue_name = base;
    n->misfits += fmt_npf_fill(&p.base, &args, NULL, NULL, sc);
    p.start_ts = s->ts_ns;
    p.duration_ns = s->dur_ns;
    r.record_case = NEX__NTFF_RECORD__RECORD_DMA;
    r.dma = &p;
    ingest_perfetto_neuron_dev_record(n, &r);
  }
  free(base);
  fmt_npf_scratch_reset(sc);
  return 0;
}

static int
ingest_perfetto_neuron_dev_counter(void *ud,
                                   const struct fmt_perfetto_counter *c) {
  struct ingest_perfetto_neuron *n = ud;
  ingest_file_pos(n->g, c->offset);
  Nex__NtffRecord r = NEX__NTFF_RECORD__INIT;
  size_t len = strlen(c->name), ul = strlen(FMT_NPF_USAGE);
  size_t sl = strlen(FMT_NPF_SEMAPHORE);
  char *series = NULL;
  if (strncmp(c->name, FMT_NPF_SEMAPHORE, sl) == 0) {
    Nex__SemaphoreUpdate u = NEX__SEMAPHORE_UPDATE__INIT;
    u.timestamp = c->ts_ns;
    u.id = (char *)(uintptr_t)(c->name + sl);
    u.value = (int32_t)c->value;
    r.record_case = NEX__NTFF_RECORD__RECORD_SEMAPHORE;
    r.semaphore = &u;
    ingest_perfetto_neuron_dev_record(n, &r);
  } else {
    Nex__UsageSample u = NEX__USAGE_SAMPLE__INIT;
    bool usage = len > ul && strcmp(c->name + len - ul, FMT_NPF_USAGE) == 0;
    series = xstrndup(c->name, usage ? len - ul : len);
    u.timestamp = c->ts_ns;
    u.series = series;
    u.util_percent = c->value;
    r.record_case = NEX__NTFF_RECORD__RECORD_USAGE;
    r.usage = &u;
    ingest_perfetto_neuron_dev_record(n, &r);
  }
  free(series);
  return 0;
}

/* ---------------------------------------------------------------- files */

static void ingest_perfetto_neuron_warning(void *ud, uint64_t offset,
                                           const char *msg) {
  struct ingest_perfetto_neuron *n = ud;
  ingest_skipped(n->g, 1);
  ingest_warn(n->g, "Corrupt Data", n->rel, offset, "%s", msg);
}

/* Whether a row name is a device export's: "<Engine> Engine - Row <k>" or
 * the Executions row. */
static bool ingest_perfetto_neuron_device_row(const char *name) {
  size_t bl, el = strlen(FMT_NPF_ENGINE_SUFFIX);
  if (strcmp(name, FMT_NPF_ROW_EXECUTIONS) == 0)
    return true;
  return fmt_npf_row_base(name, &bl) && bl > el &&
         strncmp(name + bl - el, FMT_NPF_ENGINE_SUFFIX, el) == 0;
}

/* Records a probe looks at before it gives up: a trace that is not the
 * Neuron tools' says so in its first tracks and slices. */
#define NPF_PROBE_RECORDS 4096

static int
ingest_perfetto_neuron_probe_track(void *ud,
                                   const struct fmt_perfetto_track *t) {
  uint64_t *seen = ud;
  struct fmt_npf_row r;
  const char *name = ingest_perfetto_neuron_row_name(t);
  if (fmt_npf_row_parse(name, &r) && strncmp(r.source, "neuron_", 7) == 0)
    return NPF_SYSTEM;
  if (ingest_perfetto_neuron_device_row(name))
    return NPF_DEVICE;
  return ++*seen > NPF_PROBE_RECORDS ? NPF_OTHER : 0;
}

static int
ingest_perfetto_neuron_probe_slice(void *ud,
                                   const struct fmt_perfetto_slice *s) {
  (void)ud;
  if (s->args_json && strstr(s->args_json, "\"trace_event_source\""))
    return NPF_SYSTEM;
  return NPF_OTHER;
}

static int
ingest_perfetto_neuron_probe_counter(void *ud,
                                     const struct fmt_perfetto_counter *c) {
  uint64_t *seen = ud;
  (void)c;
  return ++*seen > NPF_PROBE_RECORDS ? NPF_OTHER : 0;
}

/* What the trace at path is: NPF_SYSTEM, NPF_DEVICE or NPF_OTHER, from its
 * first tracks and slice. */
static int ingest_perfetto_neuron_probe(const char *path) {
  uint64_t seen = 0;
  struct fmt_perfetto_cb cb = {&seen,
                               ingest_perfetto_neuron_probe_track,
                               ingest_perfetto_neuron_probe_slice,
                               ingest_perfetto_neuron_probe_counter,
                               NULL,
                               0};
  char *cause = NULL;
  int rc = fmt_perfetto_read(path, &cb, NULL, &cause);
  free(cause);
  return rc == NPF_SYSTEM || rc == NPF_DEVICE ? rc : NPF_OTHER;
}

/* The file name of rel without its extension (malloc'd). */
static char *ingest_perfetto_neuron_stem(const char *rel) {
  const char *b = strrchr(rel, '/');
  b = b ? b + 1 : rel;
  const char *dot = strstr(b, ".pftrace");
  if (!dot)
    dot = strchr(b, '.');
  return dot ? xstrndup(b, (size_t)(dot - b)) : xstrdup(b);
}

/* Reads rel (of --dir) with the system or the device callbacks. */
static void ingest_perfetto_neuron_file(struct ingest_perfetto_neuron *n,
                                        const char *rel, int kind) {
  struct ing *g = n->g;
  char *path = ingest_path(g, rel);
  n->rel = rel;
  n->stem = ingest_perfetto_neuron_stem(rel);
  n->bad_args = n->misfits = 0;
  n->dev_open = 0;
  struct fmt_perfetto_cb cb = {n,
                               ingest_perfetto_neuron_track,
                               ingest_perfetto_neuron_sys_slice,
                               ingest_perfetto_neuron_sys_counter,
                               ingest_perfetto_neuron_warning,
                               1};
  if (kind == NPF_DEVICE) {
    cb.slice = ingest_perfetto_neuron_dev_slice;
    cb.counter = ingest_perfetto_neuron_dev_counter;
  }
  struct fmt_perfetto_stats st = {0};
  char *cause = NULL;
  size_t seen = n->nseen;
  if (fmt_perfetto_pipe_read(path, &cb, &st, &cause) < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  }
  ingest_skipped(g, st.skipped + st.no_state);
  if (n->dev_open)
    ingest_device_end(g);
  if (n->bad_args)
    ingest_warn(g, "Corrupt Data", rel, 0,
                "%" PRIu64 " slices had debug annotations that are not a JSON "
                "object: stored without them",
                n->bad_args);
  if (n->misfits)
    ingest_warn(g, "Corrupt Data", rel, 0,
                "%" PRIu64 " debug annotations had a value their field (id, "
                "lnc_idx, exec_id...) cannot hold: left out",
                n->misfits);
  if (kind == NPF_SYSTEM && n->nseen > seen)
    ingest_warn(g, "Missing Data", rel, 0,
                "a Perfetto export does not carry the capture's trace_info: "
                "the SystemProfileMetadata rows of its %zu processes have no "
                "first/last timestamps, NTFF version or HBM capacity",
                n->nseen - seen);
  free(cause);
  free(path);
  free(n->stem);
  n->stem = NULL;
}

/* Whether the folder of rel holds a system export (then rel, a device
 * export, is read with it). */
static bool ingest_perfetto_neuron_has_system(const struct ing *g,
                                              const char *rel) {
  const char *b = strrchr(rel, '/');
  int dl = b ? (int)(b - rel) : 0;
  struct stat sb;
  bool found = false;
  for (int gz = 0; gz < 2 && !found; gz++) {
    char *p =
        xasprintf("%s/%.*s%s" FMT_NPF_SYSTEM_FILE "%s", ingest_opts(g)->dir, dl,
                  rel, dl ? "/" : "", gz ? ".gz" : "");
    found = stat(p, &sb) == 0;
    free(p);
  }
  return found;
}

static int ingest_perfetto_neuron_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* After a system export: every device export of its folder, each as the
 * device profile its nc_exec_running named. */
static void
ingest_perfetto_neuron_read_devices(struct ingest_perfetto_neuron *n,
                                    const char *sys_rel) {
  const char *b = strrchr(sys_rel, '/');
  int dl = b ? (int)(b - sys_rel) : 0;
  char *dir = xasprintf("%s/%.*s", ingest_opts(n->g)->dir, dl, sys_rel);
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL;
  size_t nn = 0;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, FMT_NPF_DEVICE_PREFIX,
                strlen(FMT_NPF_DEVICE_PREFIX)) == 0 &&
        strstr(e->d_name, ".pftrace")) {
      names = xrealloc(names, (nn + 1) * sizeof *names);
      names[nn++] = xstrdup(e->d_name);
    }
  if (d)
    closedir(d);
  if (nn > 1)
    qsort(names, nn, sizeof *names, ingest_perfetto_neuron_cmp_str);
  for (size_t i = 0; i < nn; i++) {
    char *rel = xasprintf("%.*s%s%s", dl, sys_rel, dl ? "/" : "", names[i]);
    n->dev = NULL;
    for (size_t k = 0; k < n->ndevs; k++)
      if (strcmp(n->devs[k].file, names[i]) == 0)
        n->dev = &n->devs[k];
    char *stem = ingest_perfetto_neuron_stem(names[i]);
    if (!ingest_opts(n->g)->ignore_device &&
        filter_keep_instance(ingest_opts(n->g)->filter,
                             n->dev ? n->dev->instance : stem))
      ingest_perfetto_neuron_file(n, rel, NPF_DEVICE);
    free(stem);
    free(rel);
    free(names[i]);
  }
  free(names);
  free(dir);
}

static void ingest_perfetto_neuron_free(struct ingest_perfetto_neuron *n) {
  for (size_t i = 0; i < n->nprocs; i++)
    free(n->procs[i].instance);
  for (size_t i = 0; i < n->nseen; i++)
    free(n->seen[i]);
  for (size_t i = 0; i < n->ndevs; i++) {
    free(n->devs[i].file);
    free(n->devs[i].instance);
    free(n->devs[i].model_id);
    free(n->devs[i].model_name);
  }
  free(n->procs);
  free(n->seen);
  free(n->devs);
  fmt_npf_scratch_free(&n->sc);
  for (size_t i = 0; i < NPF_ROWS; i++) {
    free(n->rows[i].name);
    free(n->ctrs[i].name);
    free(n->ctrs[i].inst);
  }
}

bool ingest_perfetto_neuron_read(struct ing *g, const char *rel) {
  char *path = ingest_path(g, rel);
  int kind = ingest_perfetto_neuron_probe(path);
  free(path);
  if (kind == NPF_OTHER)
    return false;
  if (kind == NPF_DEVICE && (ingest_opts(g)->ignore_device ||
                             ingest_perfetto_neuron_has_system(g, rel)))
    return true; /* read after its system export, or not at all */
  struct ingest_perfetto_neuron n = {.g = g};
  ingest_perfetto_neuron_file(&n, rel, kind);
  if (kind == NPF_SYSTEM)
    ingest_perfetto_neuron_read_devices(&n, rel);
  ingest_context_set(g, NULL, -1);
  ingest_perfetto_neuron_free(&n);
  return true;
}
