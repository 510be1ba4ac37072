/* synth.c -- neuron-explorer-synth: options, profile layout, manifest.
 *
 * Writes a realistic, seeded profile directory in our capture formats:
 * per process folder trace_info.pb, ntrace.pb, cpu_util.pb, host_mem.pb,
 * trace.json, and (device-profile model|session) NEFFs and NTFFs.  The same
 * options always give byte-identical output.  See tools/synth.h.
 */
#include "synth.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SYNTH_PROG "neuron-explorer-synth"

const char *const synth_name_str[SN_COUNT] = {
    [SN_NRT_LOAD] = "nrt_load",
    [SN_NRT_LOAD_COLLECTIVES] = "nrt_load_collectives",
    [SN_DMEM_BUF_COPYIN] = "dmem_buf_copyin",
    [SN_NRT_TENSOR_WRITE] = "nrt_tensor_write",
    [SN_NRT_EXECUTE] = "nrt_execute",
    [SN_TIMESTAMP_SYNC_POINT] = "timestamp_sync_point",
    [SN_NC_EXEC_RUNNING] = "nc_exec_running",
    [SN_CC_EXEC_BARRIER] = "cc_exec_barrier",
    [SN_CC_RUNNING] = "cc_running",
    [SN_NRT_TENSOR_READ] = "nrt_tensor_read",
    [SN_DMEM_BUF_COPYOUT] = "dmem_buf_copyout",
    [SN_PROFILER_STEP] = "ProfilerStep#",
    [SN_ATEN_LINEAR] = "aten::linear",
    [SN_ATEN_T] = "aten::t",
    [SN_ATEN_MATMUL] = "aten::matmul",
    [SN_ATEN_MSE_LOSS] = "aten::mse_loss",
    [SN_ATEN_SUB] = "aten::sub",
    [SN_ATEN_POW] = "aten::pow",
    [SN_ATEN_MEAN] = "aten::mean",
    [SN_ATEN_ITEM] = "aten::item",
    [SN_ATEN_LOCAL_SCALAR_DENSE] = "aten::_local_scalar_dense",
    [SN_PY_CALL_IMPL] = "torch/nn/modules/module.py(1527): _call_impl",
    [SN_PY_MATMUL] = "<built-in method matmul of type object at 0x7f1c2d9e4a40>",
};

/* --------------------------------------------------------------------- PRNG */

uint64_t synth_rng_next(struct synth_rng *r) {
  uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

double synth_rng_unit(struct synth_rng *r) {
  return (double)(synth_rng_next(r) >> 11) * 0x1.0p-53;
}

int64_t synth_rng_range(struct synth_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(synth_rng_next(r) % ((uint64_t)(hi - lo) + 1));
}

double synth_rng_uniform(struct synth_rng *r, double lo, double hi) {
  return lo + (hi - lo) * synth_rng_unit(r);
}

uint64_t synth_rng_stream(uint64_t a, uint64_t b, uint64_t c) {
  struct synth_rng r = {a};
  uint64_t x = synth_rng_next(&r);
  r.s = x ^ (b * UINT64_C(0xd1b54a32d192ed03));
  x = synth_rng_next(&r);
  r.s = x ^ (c * UINT64_C(0x8cb92ba72f3d8dd7));
  return synth_rng_next(&r);
}

/* ------------------------------------------------------------------ options */

static void synth_usage(FILE *f) {
  fprintf(f, "Usage: " SYNTH_PROG " --out DIR [options]\n"
             "Writes a seeded, realistic Neuron profile directory.\n\n"
             "  --out DIR                 output directory (created; must be "
             "empty)\n"
             "  --seed N                  random seed (default 1)\n"
             "  --instances N             instances (default 1)\n"
             "  --processes N             processes per instance (default 2)\n"
             "  --cores N                 logical NeuronCores per process "
             "(default 2)\n"
             "  --steps N                 training steps (default 20)\n"
             "  --target-events N         choose --steps so that the profile "
             "holds N\n"
             "                            system events (within 1%%)\n"
             "  --device-profile MODE     none, model (default) or session\n"
             "  --device-instructions N   instructions per execution "
             "(default 2000)\n"
             "  --no-framework            no framework events (trace.json)\n"
             "  --format FORMAT           native (default), systrace-json: "
             "the\n"
             "                            runtime events as the runtime's JSON"
             " dump\n"
             "                            (ntrace_events.json, no ntrace.pb),"
             " or\n"
             "                            pftrace: the Neuron tools' Perfetto"
             " export\n"
             "                            (system_profile.pftrace and "
             "device_profile_model_*)\n"
             "  --manifest FILE           write the exact record counts as "
             "JSON\n"
             "  --help                    this text\n");
}

static void synth_die_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void synth_die_usage(const char *fmt, ...) {
  va_list ap;
  fputs(SYNTH_PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry '" SYNTH_PROG " --help'.\n", stderr);
  exit(2);
}

/* Parses option `name`'s value as an integer in [lo, hi] or exits 2. */
static int64_t synth_opt_int(const char *name, const char *v, int64_t lo,
                             int64_t hi) {
  int64_t x;
  if (util_parse_i64(v, &x) != 0 || x < lo || x > hi)
    synth_die_usage("--%s: '%s' is not an integer in %" PRId64 "..%" PRId64,
                    name, v, lo, hi);
  return x;
}

uint64_t synth_events_for_steps(const struct synth_opts *o, int64_t steps) {
  unsigned __int128 c = (unsigned)o->cores, st = (uint64_t)steps;
  unsigned __int128 per = c * (2 + 7 * st + 2 * (st / 4));
  if (o->framework)
    per += st * (SYNTH_FW_FIXED + SYNTH_FW_PER_CORE * c);
  unsigned __int128 total =
      per * (unsigned)o->instances * (unsigned)o->processes;
  return total > UINT64_MAX ? UINT64_MAX : (uint64_t)total;
}

/* The step count whose event total is closest to o->target_events; exits 2
 * when no step count comes within 1%. */
static int64_t synth_steps_for_target(const struct synth_opts *o) {
  uint64_t want = (uint64_t)o->target_events;
  int64_t lo = 1, hi = 1000000000;
  while (lo < hi) { /* smallest step count reaching the target */
    int64_t mid = lo + (hi - lo) / 2;
    if (synth_events_for_steps(o, mid) >= want)
      hi = mid;
    else
      lo = mid + 1;
  }
  int64_t best = lo;
  uint64_t got = synth_events_for_steps(o, lo);
  uint64_t err = got > want ? got - want : want - got;
  if (lo > 1) {
    uint64_t below = synth_events_for_steps(o, lo - 1);
    if (want - below < err) {
      best = lo - 1;
      got = below;
      err = want - below;
    }
  }
  if (err > want / 100)
    synth_die_usage("--target-events %" PRIu64 ": the nearest this layout "
                    "gives is %" PRIu64 " events (%" PRId64 " steps)",
                    want, got, best);
  return best;
}

static void synth_parse(int argc, char **argv, struct synth_opts *o) {
  enum {
    O_SEED = 256,
    O_INST,
    O_PROC,
    O_CORES,
    O_STEPS,
    O_TARGET,
    O_DEV,
    O_DEVINS,
    O_NOFW,
    O_FORMAT,
    O_MANIFEST,
    O_HELP,
    O_OUT
  };
  static const struct option longopts[] = {
      {"out", required_argument, NULL, O_OUT},
      {"seed", required_argument, NULL, O_SEED},
      {"instances", required_argument, NULL, O_INST},
      {"processes", required_argument, NULL, O_PROC},
      {"cores", required_argument, NULL, O_CORES},
      {"steps", required_argument, NULL, O_STEPS},
      {"target-events", required_argument, NULL, O_TARGET},
      {"device-profile", required_argument, NULL, O_DEV},
      {"device-instructions", required_argument, NULL, O_DEVINS},
      {"no-framework", no_argument, NULL, O_NOFW},
      {"format", required_argument, NULL, O_FORMAT},
      {"manifest", required_argument, NULL, O_MANIFEST},
      {"help", no_argument, NULL, O_HELP},
      {NULL, 0, NULL, 0}};
  *o = (struct synth_opts){.seed = 1,
                           .instances = 1,
                           .processes = 2,
                           .cores = 2,
                           .steps = 20,
                           .devmode = SYNTH_DEV_MODEL,
                           .device_instructions = 2000,
                           .framework = 1};
  int steps_given = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case O_OUT:
      o->out = optarg;
      break;
    case O_SEED:
      o->seed = (uint64_t)synth_opt_int("seed", optarg, 0, INT64_MAX);
      break;
    case O_INST:
      o->instances = (int)synth_opt_int("instances", optarg, 1, 256);
      break;
    case O_PROC:
      o->processes = (int)synth_opt_int("processes", optarg, 1, 1024);
      break;
    case O_CORES:
      o->cores = (int)synth_opt_int("cores", optarg, 1, 128);
      break;
    case O_STEPS:
      o->steps = synth_opt_int("steps", optarg, 1, 1000000000);
      steps_given = 1;
      break;
    case O_TARGET:
      o->target_events =
          synth_opt_int("target-events", optarg, 1, INT64_C(1000000000000));
      break;
    case O_DEV:
      if (!strcmp(optarg, "none"))
        o->devmode = SYNTH_DEV_NONE;
      else if (!strcmp(optarg, "model"))
        o->devmode = SYNTH_DEV_MODEL;
      else if (!strcmp(optarg, "session"))
        o->devmode = SYNTH_DEV_SESSION;
      else
        synth_die_usage("--device-profile: '%s' is not none, model or "
                        "session",
                        optarg);
      break;
    case O_DEVINS:
      o->device_instructions =
          synth_opt_int("device-instructions", optarg, 0, 1000000);
      break;
    case O_NOFW:
      o->framework = 0;
      break;
    case O_FORMAT:
      if (strcmp(optarg, "native") && strcmp(optarg, "systrace-json") &&
          strcmp(optarg, "pftrace"))
        synth_die_usage("--format: '%s' is not native, systrace-json or "
                        "pftrace",
                        optarg);
      o->systrace_json = !strcmp(optarg, "systrace-json");
      o->pftrace = !strcmp(optarg, "pftrace");
      break;
    case O_MANIFEST:
      o->manifest = optarg;
      break;
    case O_HELP:
      synth_usage(stdout);
      exit(0);
    default:
      if (optopt >= O_SEED)
        synth_die_usage("option '%s' needs a value", argv[optind - 1]);
      synth_die_usage("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    synth_die_usage("unexpected argument '%s'", argv[optind]);
  if (!o->out || !*o->out)
    synth_die_usage("--out DIR is required");
  if (o->target_events && steps_given)
    synth_die_usage("--steps and --target-events exclude each other");
  if (o->target_events)
    o->steps = synth_steps_for_target(o);
  if (synth_events_for_steps(o, o->steps) > UINT64_C(1000000000000))
    synth_die_usage("more than 10^12 events requested; use fewer steps, "
                    "processes or cores");
}

/* -------------------------------------------------------------------- files */

int synth_mkdirs(const char *path) {
  char *p = xstrdup(path);
  int rc = 0;
  for (char *q = p + 1;; q++) {
    if (*q != '/' && *q)
      continue;
    char c = *q;
    *q = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      rc = -errno;
      break;
    }
    if (!c)
      break;
    *q = c;
  }
  free(p);
  return rc;
}

FILE *synth_fopen(const char *dir, const char *name) {
  char *path = xasprintf("%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  free(path);
  return f;
}

int synth_fclose(FILE *f) {
  int err = ferror(f);
  errno = 0;
  if (fclose(f) != 0 || err)
    return errno ? -errno : -EIO;
  return 0;
}

/* Creates --out; exits 2 if it exists and is not an empty directory, so that
 * two profiles never mix. */
static void synth_prepare_out(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        closedir(d);
        synth_die_usage("--out %s: directory is not empty", dir);
      }
    closedir(d);
    return;
  }
  if (errno == ENOTDIR)
    synth_die_usage("--out %s: not a directory", dir);
  int rc = synth_mkdirs(dir);
  if (rc < 0)
    synth_die_usage("--out %s: %s", dir, strerror(-rc));
}

/* ------------------------------------------------------------------- layout */

/* Instance ids: "i-" and 17 hex digits, distinct. */
static void synth_layout_instances(struct synth *s) {
  s->instance_ids = xcalloc((size_t)s->o.instances, sizeof(char *));
  for (int i = 0; i < s->o.instances; i++) {
    struct synth_rng r = {synth_rng_stream(s->o.seed, 1, (uint64_t)i)};
    for (;;) {
      uint64_t a = synth_rng_next(&r), b = synth_rng_next(&r);
      char *id = xasprintf("i-%01x%016" PRIx64, (unsigned)(a & 0xf), b);
      int dup = 0;
      for (int j = 0; j < i; j++)
        dup |= !strcmp(s->instance_ids[j], id);
      if (!dup) {
        s->instance_ids[i] = id;
        break;
      }
      free(id);
    }
  }
}

/* One model per pipeline stage: NeuronCore n runs model n % 2.  Model 0's
 * hash exceeds INT64_MAX (as real ones do), model 1's has 15 digits. */
static void synth_layout_models(struct synth *s) {
  s->n_models = s->o.cores < 2 ? s->o.cores : 2;
  s->models = xcalloc((size_t)s->n_models, sizeof *s->models);
  for (int k = 0; k < s->n_models; k++) {
    struct synth_model *m = &s->models[k];
    struct synth_rng r = {synth_rng_stream(s->o.seed, 2, (uint64_t)k)};
    uint64_t h = synth_rng_next(&r);
    m->k = k;
    m->hash = k == 0
                  ? h | (UINT64_C(1) << 63)
                  : UINT64_C(100000000000000) + h % UINT64_C(800000000000000);
    snprintf(m->file, sizeof m->file, "neff_%" PRIu64 ".neff", m->hash);
    snprintf(m->name, sizeof m->name, "model_%d.neff", k);
    snprintf(m->path, sizeof m->path, "/tmp/model_%d.neff", k);
    m->exec_ns = synth_rng_range(&r, 1200000, 2600000);
    /* about 30% of the 95 TFLOP/s peak */
    m->mac_count = (uint64_t)(0.3 * 95e12 * (double)m->exec_ns * 1e-9 / 2);
  }
}

/* Fills process p (instance i, index j) and its cores; `pids` holds the
 * pids already taken on the instance. */
static void synth_layout_process(struct synth *s, struct synth_proc *p, int i,
                                 int j, const int64_t *pids) {
  int cores = s->o.cores;
  struct synth_rng r = {
      synth_rng_stream(s->o.seed, 3, (uint64_t)(i * s->o.processes + j))};
  p->inst = i;
  p->index = j;
  p->global = i * s->o.processes + j;
  p->instance_id = s->instance_ids[i];
  for (;;) { /* pid .. pid + cores are this process's thread ids */
    p->pid = synth_rng_range(&r, 100000, 3999999);
    int clash = 0;
    for (int k = 0; k < j; k++)
      clash |= llabs(pids[k] - p->pid) <= cores + 1;
    if (!clash)
      break;
  }
  p->start = p->global == 0 ? SYNTH_BASE_NS
                            : SYNTH_BASE_NS + synth_rng_range(&r, 0, 20000000);
  if (s->o.devmode == SYNTH_DEV_SESSION) {
    time_t sec = (time_t)(p->start / 1000000000);
    struct tm tm;
    char stamp[32];
    gmtime_r(&sec, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
    p->dir = xasprintf("%s_pid_%" PRId64 "/%s", p->instance_id, p->pid, stamp);
  } else {
    p->dir = xasprintf("%s_pid_%" PRId64, p->instance_id, p->pid);
  }
  p->path = xasprintf("%s/%s", s->o.out, p->dir);
  p->cores = xcalloc((size_t)cores, sizeof *p->cores);
  int stride = cores > 4 ? cores : 4;
  for (int n = 0; n < cores; n++) {
    struct synth_core *c = &p->cores[n];
    c->nc = n;
    c->pcore = j * stride + n;
    c->worker_gid = p->global * cores + n;
    c->tid = p->pid + 1 + n;
    c->drift_ppb = synth_rng_range(&r, -20000, 20000);
    c->origin = INT64_C(1500000000) + n * INT64_C(7000000) +
                synth_rng_range(&r, 0, 1000000);
    c->model = &s->models[n % s->n_models];
  }
}

static void synth_free_process(struct synth_proc *p) {
  free(p->dir);
  free(p->path);
  free(p->cores);
}

/* ----------------------------------------------------------------- progress */

void synth_progress(struct synth *s, uint64_t n) {
  s->events_done += n;
  int64_t now = util_now_ns();
  if (now - s->progress_ns < 1000000000)
    return;
  s->progress_ns = now;
  fprintf(stderr, SYNTH_PROG ": %" PRIu64 " of %" PRIu64 " events (%.0f%%)\n",
          s->events_done, s->events_total,
          100.0 * (double)s->events_done / (double)s->events_total);
}

void synth_add_device_profile(struct synth *s, const char *file, int nc,
                              uint64_t executions, uint64_t instructions,
                              uint64_t inst_deps) {
  sbuf_printf(&s->profiles_json,
              "%s\n  {\"file\":\"%s\",\"nc\":%d,\"executions\":%" PRIu64
              ",\"instructions\":%" PRIu64 ",\"inst_deps\":%" PRIu64 "}",
              s->profiles_json.len ? "," : "", file, nc, executions,
              instructions, inst_deps);
}

/* ----------------------------------------------------------------- manifest */

static int synth_write_manifest(const struct synth *s, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -errno;
  const struct synth_counts *c = &s->c;
  uint64_t n_proc = (uint64_t)s->o.instances * (uint64_t)s->o.processes;
  fprintf(f,
          "{\"tables\":{\"SystemProfileEvents\":%" PRIu64
          ",\"SystemProfileHbmUsage\":%" PRIu64 ",\"CpuUsage\":%" PRIu64
          ",\"HostMemUsage\":%" PRIu64 ",\"SystemProfileMetadata\":%" PRIu64
          ",\"DeviceProfileList\":%" PRIu64 ",\"ExecutionInfo\":%" PRIu64
          ",\"Instruction\":%" PRIu64 ",\"DmaPacket\":%" PRIu64
          ",\"SemaphoreUpdate\":%" PRIu64 "},\n\"events\":{",
          c->rt + c->hw + c->fw, c->hbm, c->cpu, c->hostmem, c->metadata,
          c->device_profiles, c->executions, c->instructions, c->dma,
          c->semaphores);
  const char *sep = "";
  for (int k = 0; k < SN_COUNT; k++) {
    if (k == SN_PROFILER_STEP || !c->events[k])
      continue;
    fprintf(f, "%s\n  \"%s\":%" PRIu64, sep, synth_name_str[k], c->events[k]);
    sep = ",";
  }
  /* every process writes ProfilerStep#<s> once per step */
  for (int64_t st = 0; c->events[SN_PROFILER_STEP] && st < s->o.steps; st++)
    fprintf(f, ",\n  \"ProfilerStep#%" PRId64 "\":%" PRIu64, st, n_proc);
  fprintf(f,
          "},\n\"sources\":{\"neuron_rt\":%" PRIu64 ",\"neuron_hw\":%" PRIu64
          ",\"framework\":%" PRIu64 "},\n\"instances\":[",
          c->rt, c->hw, c->fw);
  for (int i = 0; i < s->o.instances; i++)
    fprintf(f, "%s\"%s\"", i ? "," : "", s->instance_ids[i]);
  fprintf(f,
          "],\n\"processes\":[%s],\n\"flows\":%" PRIu64
          ",\n\"inst_deps\":%" PRIu64
          ",\n\"device_profiles\":[%s],\n\"first_ts\":\"%" PRId64
          "\",\"last_ts\":\"%" PRId64 "\"}\n",
          s->processes_json.s ? s->processes_json.s : "", c->flows,
          c->inst_deps,
          s->profiles_json.s ? s->profiles_json.s : "", s->first_ts,
          s->last_ts);
  return synth_fclose(f);
}

/* --------------------------------------------------------------------- main */

static int synth_run(struct synth *s) {
  int64_t *pids = xcalloc((size_t)s->o.processes, sizeof *pids);
  char *cause = NULL;
  int rc = s->o.pftrace ? synth_pftrace_open(s, &cause) : 0;
  for (int i = 0; i < s->o.instances && rc == 0; i++) {
    for (int j = 0; j < s->o.processes && rc == 0; j++) {
      struct synth_proc p = {0};
      synth_layout_process(s, &p, i, j, pids);
      pids[j] = p.pid;
      rc = synth_sys_process(s, &p, &cause);
      if (rc == 0 && s->o.systrace_json)
        rc = synth_nrtjson_process(s, &p, &cause);
      if (rc == 0 && s->o.pftrace)
        rc = synth_pftrace_process(s, &p, &cause);
      if (rc == 0) {
        sbuf_printf(
            &s->processes_json,
            "%s\n  {\"instance_id\":\"%s\",\"pid\":%" PRId64 ",\"dir\":\"%s\"}",
            s->processes_json.len ? "," : "", p.instance_id, p.pid, p.dir);
        if (p.global == 0 || p.first_ts < s->first_ts)
          s->first_ts = p.first_ts;
        if (p.global == 0 || p.last_ts > s->last_ts)
          s->last_ts = p.last_ts;
      }
      synth_free_process(&p);
    }
  }
  char *cause2 = NULL;
  int rc2 = synth_pftrace_close(s, &cause2);
  if (rc == 0 && rc2 < 0) {
    rc = rc2;
    cause = cause2;
    cause2 = NULL;
  }
  free(cause2);
  if (rc < 0)
    fprintf(stderr, SYNTH_PROG ": %s\n", cause ? cause : strerror(-rc));
  free(cause);
  free(pids);
  return rc;
}

static void synth_free(struct synth *s) {
  for (int i = 0; i < s->o.instances && s->instance_ids; i++)
    free(s->instance_ids[i]);
  free(s->instance_ids);
  free(s->models);
  sbuf_free(&s->processes_json);
  sbuf_free(&s->profiles_json);
}

int main(int argc, char **argv) {
  struct synth s = {0};
  synth_parse(argc, argv, &s.o);
  synth_prepare_out(s.o.out);
  s.next_id = SYNTH_ID_BASE;
  s.next_flow = SYNTH_FLOW_BASE;
  s.events_total = synth_events_for_steps(&s.o, s.o.steps);
  s.progress_ns = util_now_ns();
  int64_t t0 = s.progress_ns;
  synth_layout_instances(&s);
  synth_layout_models(&s);
  int rc = synth_run(&s);
  if (rc == 0 && s.o.manifest) {
    rc = synth_write_manifest(&s, s.o.manifest);
    if (rc < 0)
      fprintf(stderr, SYNTH_PROG ": --manifest %s: %s\n", s.o.manifest,
              strerror(-rc));
  }
  if (rc == 0) {
    double sec = (double)(util_now_ns() - t0) * 1e-9;
    fprintf(stderr,
            SYNTH_PROG ": wrote %" PRIu64 " system events (%" PRId64
                       " steps) in %.2f s, %.0f events/s\n",
            s.events_done, s.o.steps, sec,
            sec > 0 ? (double)s.events_done / sec : 0.0);
  }
  synth_free(&s);
  return rc == 0 ? 0 : 1;
}
