/* synth_pftrace.c -- --format pftrace: rewrites each process folder (written
 * already in our capture formats) as the Neuron tools' Perfetto export
 * (`view --output-format perfetto`): its system events, HBM, CPU and host
 * memory samples are appended to the profile's system_profile.pftrace, each
 * of its device traces becomes a device_profile_model_<id>_...pftrace, and
 * the capture files are removed.
 *
 * Naming as the vendor's export (fmt_npf.h): a Perfetto process per
 * profiled process, "<instance>-pid<pid>"; a row per (worker, NeuronCore,
 * thread, source), "gid<w>-nc<n>-tid<t>-<source>"; every field of the
 * event as a debug argument (instance_id, process_id, thread_id, lnc_idx,
 * worker_gid, trace_event_source, model_name, exec_id, ...), and on the
 * nc_exec_running of a profiled execution the name of its device export in
 * device_profile.  Hardware events are on the CPU clock, aligned through
 * the timestamp_sync_point of their exec_id as the vendor tool does; their
 * device clock stays in nc_start_timestamp_ns / nc_stop_timestamp_ns.
 * The framework's trace.json goes into the system export too, a row
 * "Thread <tid>" per thread, each slice with the instance, process,
 * thread, name, time and source arguments and its own category and args.
 * Samples are counter tracks named as the timeline names them.  A device
 * export has a process "Instructions <pcore>" whose rows are "<Engine>
 * Engine - Row <k>", "<queue> - Row <k>" and "CC-core - Row <k>"
 * (overlapping slices stacked on further rows), an "Executions" row of
 * instants (the NTFF header rides on the first), and counter tracks
 * "Semaphore <id>" and "<series> Usage".
 *
 * Every record is written as it is read; the memory held is the tracks,
 * the sync points of one process and the executions of each device trace.
 */
#include "synth_pftrace.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_util.pb-c.h"
#include "fmt_chrome.h"
#include "fmt_npf.h"
#include "fmt_pb.h"
#include "host_mem.pb-c.h"
#include "jtok.h"
#include "jval.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "perfetto_trace.pb-c.h"
#include "trace_info.pb-c.h"

/* The device export of one NeuronCore of the process being converted. */
struct synth_pftrace_dev {
  char *name; /* file name */
  int64_t *execs;
  size_t nexecs;
};

struct synth_pftrace {
  struct synth_pftrace_out sys;
  char *path;
};

/* A timestamp_sync_point of the process being converted. */
struct synth_pftrace_sync {
  int nc;
  int64_t exec_id, cpu, dev;
};

/* ------------------------------------------------------------- devices */

/* The device export of core nc: its file name and executions, or NULL. */
static const struct synth_pftrace_dev *
synth_pftrace_dev_of(const struct synth_pftrace_dev *devs, int cores, int nc,
                     int64_t exec_id) {
  if (nc < 0 || nc >= cores || !devs[nc].name)
    return NULL;
  for (size_t i = 0; i < devs[nc].nexecs; i++)
    if (devs[nc].execs[i] == exec_id)
      return &devs[nc];
  return NULL;
}

/* One NTFF record into the device export o (process track proc). */
static void synth_pftrace_ntff(struct synth_pftrace_out *o, uint64_t proc,
                               int32_t pid, const Nex__NtffRecord *r,
                               ProtobufCBinaryData *header,
                               struct synth_pftrace_dev *dev) {
  struct synth_pftrace_out_args a = {.n = 0};
  char *base = NULL;
  switch (r->record_case) {
  case NEX__NTFF_RECORD__RECORD_HEADER: {
    header->len = protobuf_c_message_get_packed_size(&r->header->base);
    header->data = xmalloc(header->len ? header->len : 1);
    protobuf_c_message_pack(&r->header->base, header->data);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_INSTRUCTION: {
    const Nex__Instruction *in = r->instruction;
    base = xasprintf("%s" FMT_NPF_ENGINE_SUFFIX, in->timeline_track);
    synth_pftrace_out_fields(&a, &in->base);
    struct synth_pftrace_out_track *t = synth_pftrace_out_row(
        o, base, proc, pid, in->start_ts, in->start_ts + in->duration_ns);
    synth_pftrace_out_slice(o, t->uuid, in->opcode, in->start_ts,
                            in->duration_ns, 0, &a, NULL, 0);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_DMA: {
    const Nex__DmaPacket *d = r->dma;
    synth_pftrace_out_fields(&a, &d->base);
    struct synth_pftrace_out_track *t = synth_pftrace_out_row(
        o, d->queue_name, proc, pid, d->start_ts, d->start_ts + d->duration_ns);
    synth_pftrace_out_slice(o, t->uuid,
                            *d->variable ? d->variable : d->queue_name,
                            d->start_ts, d->duration_ns, 0, &a, NULL, 0);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_CC_OP: {
    const Nex__CcOp *c = r->cc_op;
    synth_pftrace_out_fields(&a, &c->base);
    struct synth_pftrace_out_track *t =
        synth_pftrace_out_row(o, FMT_NPF_ROW_CC, proc, pid, c->start_ts,
                              c->start_ts + c->duration_ns);
    synth_pftrace_out_slice(o, t->uuid, c->operation, c->start_ts,
                            c->duration_ns, 0, &a, NULL, 0);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_EXECUTION: {
    const Nex__ExecutionInfo *e = r->execution;
    Nex__NtffHeader *h = NULL;
    if (header->data) { /* the header rides on the first execution */
      h = nex__ntff_header__unpack(NULL, header->len, header->data);
      free(header->data);
      header->data = NULL;
      if (h)
        synth_pftrace_out_fields(&a, &h->base);
    }
    synth_pftrace_out_fields(&a, &e->base);
    struct synth_pftrace_out_track *t =
        synth_pftrace_out_track(o, FMT_NPF_ROW_EXECUTIONS, proc, pid);
    synth_pftrace_out_slice(o, t->uuid, e->neff_name, e->execution_start_ts, 0,
                            1, &a, NULL, 0);
    if (h)
      nex__ntff_header__free_unpacked(h, NULL);
    dev->execs = xrealloc(dev->execs, (dev->nexecs + 1) * sizeof *dev->execs);
    dev->execs[dev->nexecs++] = e->exec_id;
    break;
  }
  case NEX__NTFF_RECORD__RECORD_SEMAPHORE:
    base = xasprintf(FMT_NPF_SEMAPHORE "%s", r->semaphore->id);
    synth_pftrace_out_counter(o, base, r->semaphore->timestamp,
                              r->semaphore->value);
    break;
  case NEX__NTFF_RECORD__RECORD_USAGE:
    base = xasprintf("%s" FMT_NPF_USAGE, r->usage->series);
    synth_pftrace_out_counter(o, base, r->usage->timestamp,
                              r->usage->util_percent);
    break;
  default:
    break;
  }
  free(base);
  synth_pftrace_out_args_free(&a);
}

/* Converts the NTFF `ntff` of process p into a device export beside the
 * system one; fills dev (its name and executions). */
static int synth_pftrace_device(struct synth *s, const struct synth_proc *p,
                                const char *ntff,
                                struct synth_pftrace_dev *devs, char **cause) {
  struct fmt_pb *r;
  char *path = xasprintf("%s/%s", p->path, ntff);
  int rc = fmt_pb_open(path, FMT_PB_MAGIC_NTFF, &r, cause);
  if (rc < 0) {
    free(path);
    return rc;
  }
  struct synth_pftrace_out o = {.n = 0};
  struct synth_pftrace_dev *dev = NULL;
  ProtobufCBinaryData header = {0, NULL};
  uint64_t proc = 0;
  int32_t pid = 0;
  ProtobufCMessage *m;
  uint64_t off = 0;
  while (rc == 0 &&
         (rc = fmt_pb_next(r, &nex__ntff_record__descriptor, &m, &off)) > 0) {
    const Nex__NtffRecord *rec = (const Nex__NtffRecord *)m;
    rc = 0;
    if (!dev) { /* the header comes first: it names the core and model */
      const Nex__NtffHeader *h =
          rec->record_case == NEX__NTFF_RECORD__RECORD_HEADER ? rec->header
                                                              : NULL;
      if (!h || h->nc_idx < 0 || h->nc_idx >= s->o.cores) {
        rc = -EINVAL;
        break;
      }
      dev = &devs[h->nc_idx];
      dev->name = xasprintf(
          FMT_NPF_DEVICE_PREFIX "%" PRIu64 "_%s_pid_%" PRId64 "_nc_%d.pftrace",
          p->cores[h->nc_idx].model->hash, p->instance_id, p->pid, h->nc_idx);
      o.f = synth_fopen(s->o.out, dev->name);
      if (!o.f) {
        rc = -errno;
        break;
      }
      pid = h->pcore_idx + 1;
      char *pname = xasprintf("Instructions %d", h->pcore_idx);
      proc = synth_pftrace_out_process(&o, pid, pname);
      free(pname);
    }
    synth_pftrace_ntff(&o, proc, pid, rec, &header, dev);
  }
  fmt_pb_close(r);
  free(header.data);
  if (o.f) {
    int rc2 = synth_fclose(o.f);
    rc = rc < 0 ? rc : rc2;
  }
  if (rc < 0 && !*cause)
    *cause = xasprintf("%s: %s at byte %" PRIu64, path, strerror(-rc), off);
  if (rc == 0 && unlink(path) != 0) {
    rc = -errno;
    *cause = xasprintf("%s: %s", path, strerror(-rc));
  }
  synth_pftrace_out_free(&o);
  free(path);
  return rc;
}

/* -------------------------------------------------------------- system */

static int synth_pftrace_sync_find(const struct synth_pftrace_sync *v, size_t n,
                                   int nc, int64_t exec_id) {
  for (size_t i = 0; i < n; i++)
    if (v[i].nc == nc && v[i].exec_id == exec_id)
      return (int)i;
  return -1;
}

/* One system event of process p (Perfetto process proc). */
static void
synth_pftrace_event(struct synth_pftrace *w, const struct synth_proc *p,
                    uint64_t proc, const Nex__SystemEvent *e,
                    const struct synth_pftrace_sync *syncs, size_t nsync,
                    const struct synth_pftrace_dev *devs, int cores) {
  Nex__SystemEvent c = *e;
  int hw = e->source == NEX__TRACE_EVENT_SOURCE__NEURON_HW;
  int sync = !strcmp(e->name, "timestamp_sync_point");
  Nex__Attribute at[2] = {NEX__ATTRIBUTE__INIT, NEX__ATTRIBUTE__INIT};
  Nex__Attribute **attrs =
      xcalloc(e->n_attributes + 2, sizeof *attrs); /* the event's + 2 */
  char t0[24], t1[24];
  if (e->n_attributes)
    memcpy(attrs, e->attributes, e->n_attributes * sizeof *attrs);
  c.attributes = attrs;
  if (sync) {
    c.timestamp = e->cpu_timestamp_ns;
  } else if (hw) { /* to the CPU clock; the device clock as attributes */
    int k = synth_pftrace_sync_find(syncs, nsync, e->nc_idx, e->exec_id);
    if (k >= 0)
      c.timestamp = syncs[k].cpu + (e->timestamp - syncs[k].dev);
    snprintf(t0, sizeof t0, "%" PRId64, e->timestamp);
    snprintf(t1, sizeof t1, "%" PRId64, e->timestamp + e->duration);
    at[0].key = synth_pbstr("nc_start_timestamp_ns");
    at[0].value = t0;
    at[1].key = synth_pbstr("nc_stop_timestamp_ns");
    at[1].value = t1;
    at[0].is_number = at[1].is_number = 1;
    attrs[c.n_attributes++] = &at[0];
    attrs[c.n_attributes++] = &at[1];
  }
  struct synth_pftrace_out_args a = {.n = 0};
  synth_pftrace_out_str(&a, "instance_id", p->instance_id, 0);
  synth_pftrace_out_str(&a, "process_id", xasprintf("%" PRId64, p->pid), 1);
  synth_pftrace_out_fields(&a, &c.base);
  if (c.nc_idx == 0) /* a default the fields left out */
    synth_pftrace_out_i64(&a, "lnc_idx", 0);
  if (c.worker_gid == 0)
    synth_pftrace_out_i64(&a, "worker_gid", 0);
  if (c.pcore_idx == 0)
    synth_pftrace_out_i64(&a, "pcore_idx", 0);
  synth_pftrace_out_str(&a, "timestamp_unit", "ns", 0);
  const struct synth_pftrace_dev *dev =
      !strcmp(e->name, "nc_exec_running")
          ? synth_pftrace_dev_of(devs, cores, e->nc_idx, e->exec_id)
          : NULL;
  if (dev)
    synth_pftrace_out_str(&a, "device_profile", dev->name, 0);
  char *row =
      xasprintf("gid%d-nc%d-tid%" PRId64 "-%s", e->worker_gid, e->nc_idx,
                e->thread_id, hw ? "neuron_hw" : "neuron_rt");
  struct synth_pftrace_out_track *t =
      synth_pftrace_out_track(&w->sys, row, proc, (int32_t)(p->global + 1));
  /* hardware slices are named with their model, as the vendor's are */
  char *name = hw && *e->model_name ? xasprintf("%s %s", e->name, e->model_name)
                                    : xstrdup(e->name);
  synth_pftrace_out_slice(&w->sys, t->uuid, name, c.timestamp, e->duration,
                          sync, &a, e->flow_id, e->n_flow_id);
  free(name);
  free(row);
  free(attrs);
  synth_pftrace_out_args_free(&a);
}

/* The HBM sample h of instance inst: one counter per byte count. */
static void synth_pftrace_hbm(struct synth_pftrace *w, const char *inst,
                              const Nex__HbmUsage *h) {
  const ProtobufCMessageDescriptor *d = &nex__hbm_usage__descriptor;
  for (unsigned k = 0; k < d->n_fields; k++) {
    const ProtobufCFieldDescriptor *f = &d->fields[k];
    if (f->type != PROTOBUF_C_TYPE_UINT64)
      continue;
    char *name = xasprintf("%s/ND:%d/HBM:%d/neuron_hbm_usage %s", inst,
                           h->device_idx, h->hbm_idx, f->name);
    synth_pftrace_out_counter(
        &w->sys, name, h->timestamp,
        (double)*(const uint64_t *)((const char *)h + f->offset));
    free(name);
  }
}

/* Reads every record of capture file `name` of p with descriptor d and
 * calls fn on it. */
static int synth_pftrace_each(const struct synth_proc *p, const char *name,
                              const char *magic,
                              const ProtobufCMessageDescriptor *d,
                              void (*fn)(void *ud, const ProtobufCMessage *m),
                              void *ud, char **cause) {
  char *path = xasprintf("%s/%s", p->path, name);
  struct fmt_pb *r = NULL;
  int rc = fmt_pb_open(path, magic, &r, cause);
  ProtobufCMessage *m;
  uint64_t off = 0;
  if (rc == 0) {
    while ((rc = fmt_pb_next(r, d, &m, &off)) > 0)
      fn(ud, m);
    fmt_pb_close(r);
  }
  if (rc < 0 && !*cause)
    *cause = xasprintf("%s: unreadable record at byte %" PRIu64, path, off);
  if (rc == 0 && unlink(path) != 0) {
    rc = -errno;
    *cause = xasprintf("%s: %s", path, strerror(-rc));
  }
  free(path);
  return rc;
}

/* What the record callbacks of one process need. */
struct synth_pftrace_ctx {
  struct synth_pftrace *w;
  const struct synth_proc *p;
  uint64_t proc;
  struct synth_pftrace_sync *syncs;
  size_t nsync;
  const struct synth_pftrace_dev *devs;
  int cores;
};

static void synth_pftrace_sync_rec(void *ud, const ProtobufCMessage *m) {
  struct synth_pftrace_ctx *c = ud;
  const Nex__NtraceRecord *r = (const Nex__NtraceRecord *)m;
  if (r->record_case != NEX__NTRACE_RECORD__RECORD_EVENT ||
      strcmp(r->event->name, "timestamp_sync_point"))
    return;
  c->syncs = xrealloc(c->syncs, (c->nsync + 1) * sizeof *c->syncs);
  c->syncs[c->nsync++] = (struct synth_pftrace_sync){
      r->event->nc_idx, r->event->exec_id, r->event->cpu_timestamp_ns,
      r->event->nc_timestamp_ns};
}

static void synth_pftrace_ntrace_rec(void *ud, const ProtobufCMessage *m) {
  struct synth_pftrace_ctx *c = ud;
  const Nex__NtraceRecord *r = (const Nex__NtraceRecord *)m;
  if (r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
    synth_pftrace_event(c->w, c->p, c->proc, r->event, c->syncs, c->nsync,
                        c->devs, c->cores);
  else if (r->record_case == NEX__NTRACE_RECORD__RECORD_HBM)
    synth_pftrace_hbm(c->w, c->p->instance_id, r->hbm);
}

static void synth_pftrace_cpu_rec(void *ud, const ProtobufCMessage *m) {
  struct synth_pftrace_ctx *c = ud;
  const Nex__CpuUsage *u = (const Nex__CpuUsage *)m;
  char *name =
      xasprintf("%s/CPU:%s/host_cpu_util", c->p->instance_id, u->cpu_id);
  synth_pftrace_out_counter(&c->w->sys, name, u->timestamp, u->util_percent);
  free(name);
}

static void synth_pftrace_mem_rec(void *ud, const ProtobufCMessage *m) {
  struct synth_pftrace_ctx *c = ud;
  const Nex__HostMemUsage *u = (const Nex__HostMemUsage *)m;
  char *name = xasprintf("%s/host_memory_usage used_bytes", c->p->instance_id);
  synth_pftrace_out_counter(&c->w->sys, name, u->timestamp,
                            (double)u->used_bytes);
  free(name);
  name = xasprintf("%s/host_memory_usage used_percent", c->p->instance_id);
  synth_pftrace_out_counter(&c->w->sys, name, u->timestamp, u->used_percent);
  free(name);
}

static void synth_pftrace_skip_rec(void *ud, const ProtobufCMessage *m) {
  (void)ud, (void)m;
}

/* ----------------------------------------------------------- framework */

/* The members of a Chrome event's args object (json, or NULL), each a
 * debug argument under its own key: strings as such, other values as
 * their JSON text.  The keys go to keys[] (*nkeys of them, at most `room`)
 * for the caller to free. */
static void synth_pftrace_fw_args(struct synth_pftrace_out_args *a,
                                  const char *json, char **keys, size_t room,
                                  size_t *nkeys) {
  const unsigned char *p = (const unsigned char *)(json ? json : "");
  const unsigned char *end = p + strlen((const char *)p);
  while (p < end && jtok_blank(*p))
    p++;
  if (p == end || *p++ != '{')
    return;
  struct jtok_span k, v;
  struct sbuf scratch = {0};
  while (*nkeys < room && jtok_member(&p, end, &k, &v) == JTOK_OK) {
    struct sbuf kb = {0}, vb = {0};
    jval_decode(&kb, &k);
    keys[(*nkeys)++] = kb.s ? kb.s : xstrdup("");
    if (v.kind == JTOK_STR) {
      jval_decode(&vb, &v);
      synth_pftrace_out_str(a, keys[*nkeys - 1], vb.s ? vb.s : xstrdup(""), 1);
    } else {
      jval_json(&vb, &v, &scratch);
      synth_pftrace_out_json(a, keys[*nkeys - 1],
                             vb.s ? vb.s : xstrdup("null"));
    }
  }
  sbuf_free(&scratch);
}

/* A framework event of the process being converted, on its row "Thread
 * <tid>" with the arguments the vendor's export gives framework events
 * (instance, process, thread, name, time, source) and the event's own
 * category and args. */
static int synth_pftrace_fw_slice(void *ud, const struct fmt_chrome_slice *s) {
  struct synth_pftrace_ctx *c = ud;
  int64_t tid = 0;
  util_parse_i64(s->tid, &tid); /* our trace.json: numbers */
  char *row = xasprintf(FMT_NPF_ROW_THREAD "%" PRId64, tid);
  struct synth_pftrace_out_track *t = synth_pftrace_out_track(
      &c->w->sys, row, c->proc, (int32_t)(c->p->global + 1));
  struct synth_pftrace_out_args a = {.n = 0};
  char *keys[SYNTH_PFTRACE_MAX_ARGS];
  size_t nkeys = 0;
  synth_pftrace_out_str(&a, "instance_id", c->p->instance_id, 0);
  synth_pftrace_out_str(&a, "process_id", xasprintf("%" PRId64, c->p->pid), 1);
  synth_pftrace_out_i64(&a, "thread_id", tid);
  synth_pftrace_out_str(&a, "name", s->name, 0);
  synth_pftrace_out_i64(&a, "timestamp", s->ts_ns);
  synth_pftrace_out_i64(&a, "duration", s->dur_ns);
  synth_pftrace_out_str(&a, "trace_event_source", "framework", 0);
  if (s->cat)
    synth_pftrace_out_str(&a, "cat", s->cat, 0);
  synth_pftrace_fw_args(&a, s->args_json, keys,
                        SYNTH_PFTRACE_MAX_ARGS - a.n - 1, &nkeys);
  synth_pftrace_out_str(&a, "timestamp_unit", "ns", 0);
  synth_pftrace_out_slice(&c->w->sys, t->uuid, s->name, s->ts_ns, s->dur_ns,
                          s->instant, &a, s->flow_ids, s->n_flow_ids);
  synth_pftrace_out_args_free(&a);
  for (size_t i = 0; i < nkeys; i++)
    free(keys[i]);
  free(row);
  return 0;
}

/* Moves the framework trace of p (trace.json, when there is one) into the
 * system export, as the vendor's export carries framework events. */
static int synth_pftrace_framework(struct synth_pftrace_ctx *c, char **cause) {
  char *path = xasprintf("%s/trace.json", c->p->path);
  struct fmt_chrome_cb cb = {.ud = c, .slice = synth_pftrace_fw_slice};
  struct fmt_chrome_stats st;
  int rc = 0;
  if (access(path, F_OK) == 0) {
    rc = fmt_chrome_read(path, &cb, &st, cause);
    if (rc == 0 && unlink(path) != 0) {
      rc = -errno;
      *cause = xasprintf("%s: %s", path, strerror(-rc));
    }
  }
  free(path);
  return rc;
}

/* Converts the device traces of p (removing them and their NEFFs). */
static int synth_pftrace_devices(struct synth *s, const struct synth_proc *p,
                                 struct synth_pftrace_dev *devs, char **cause) {
  DIR *dir = opendir(p->path);
  if (!dir) {
    *cause = xasprintf("%s: %s", p->path, strerror(errno));
    return -errno;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir))) {
    size_t n = strlen(e->d_name);
    if (n > 5 && !strcmp(e->d_name + n - 5, ".ntff")) {
      rc = synth_pftrace_device(s, p, e->d_name, devs, cause);
    } else if (n > 5 && !strcmp(e->d_name + n - 5, ".neff")) {
      char *path = xasprintf("%s/%s", p->path, e->d_name);
      if (unlink(path) != 0) {
        rc = -errno;
        *cause = xasprintf("%s: %s", path, strerror(-rc));
      }
      free(path);
    }
  }
  closedir(dir);
  return rc;
}

int synth_pftrace_process(struct synth *s, const struct synth_proc *p,
                          char **cause) {
  struct synth_pftrace *w = s->pftrace;
  struct synth_pftrace_dev *devs = xcalloc((size_t)s->o.cores, sizeof *devs);
  struct synth_pftrace_ctx c = {
      .w = w, .p = p, .devs = devs, .cores = s->o.cores};
  int rc = synth_pftrace_devices(s, p, devs, cause);
  char *pname = xasprintf("%s-pid%" PRId64, p->instance_id, p->pid);
  c.proc = synth_pftrace_out_process(&w->sys, (int32_t)(p->global + 1), pname);
  free(pname);
  char *pb = xasprintf("%s/ntrace.pb", p->path);
  struct fmt_pb *r;
  if (rc == 0 && (rc = fmt_pb_open(pb, FMT_PB_MAGIC_NTRACE, &r, cause)) == 0) {
    ProtobufCMessage *m;
    uint64_t off;
    while (fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off) > 0)
      synth_pftrace_sync_rec(&c, m);
    fmt_pb_close(r);
  }
  free(pb);
  if (rc == 0)
    rc = synth_pftrace_each(p, "ntrace.pb", FMT_PB_MAGIC_NTRACE,
                            &nex__ntrace_record__descriptor,
                            synth_pftrace_ntrace_rec, &c, cause);
  if (rc == 0)
    rc = synth_pftrace_each(p, "cpu_util.pb", FMT_PB_MAGIC_CPU_UTIL,
                            &nex__cpu_usage__descriptor, synth_pftrace_cpu_rec,
                            &c, cause);
  if (rc == 0)
    rc = synth_pftrace_each(p, "host_mem.pb", FMT_PB_MAGIC_HOST_MEM,
                            &nex__host_mem_usage__descriptor,
                            synth_pftrace_mem_rec, &c, cause);
  if (rc == 0) /* its metadata has no place in the export */
    rc = synth_pftrace_each(p, "trace_info.pb", FMT_PB_MAGIC_TRACE_INFO,
                            &nex__trace_info__descriptor,
                            synth_pftrace_skip_rec, &c, cause);
  if (rc == 0)
    rc = synth_pftrace_framework(&c, cause);
  /* the folder goes: nothing is left in it */
  if (rc == 0 && rmdir(p->path) == 0 && strchr(p->dir, '/')) {
    char *up = xasprintf("%s/%.*s", s->o.out,
                         (int)(strchr(p->dir, '/') - p->dir), p->dir);
    rmdir(up);
    free(up);
  }
  for (int i = 0; i < s->o.cores; i++) {
    free(devs[i].name);
    free(devs[i].execs);
  }
  free(devs);
  free(c.syncs);
  return rc;
}

int synth_pftrace_open(struct synth *s, char **cause) {
  struct synth_pftrace *w = xcalloc(1, sizeof *w);
  w->path = xasprintf("%s/" FMT_NPF_SYSTEM_FILE, s->o.out);
  w->sys.f = fopen(w->path, "wb");
  s->pftrace = w;
  if (!w->sys.f) {
    *cause = xasprintf("%s: %s", w->path, strerror(errno));
    return -errno;
  }
  return 0;
}

int synth_pftrace_close(struct synth *s, char **cause) {
  struct synth_pftrace *w = s->pftrace;
  int rc = 0;
  if (!w)
    return 0;
  if (w->sys.f && (rc = synth_fclose(w->sys.f)) < 0)
    *cause = xasprintf("%s: %s", w->path, strerror(-rc));
  synth_pftrace_out_free(&w->sys);
  free(w->path);
  free(w);
  s->pftrace = NULL;
  return rc;
}
