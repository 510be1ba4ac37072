/* ingest_system.c -- the Neuron system traces of a process (ntrace.pb
 * with its timestamp_sync_points, cpu_util.pb, host_mem.pb, trace_info.pb),
 * the capture files' framing errors, and the rows derived once everything
 * is stored (transfer bandwidth, DMA throughput, device time offsets).
 * See ingest_readers.h. */
#include "argtext.h"
#include "filter.h"
#include "fmt_pb_pipe.h"
#include "ingest_rates.h"
#include "ingest_readers.h"
#include "ingest_syncs.h"

#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where a device profile's first execution ran on the system clock: the
 * cpu time of its timestamp_sync_point (finds its nc_exec_running fast). */
struct idevhint {
  int64_t dp_id, cpu_ts;
};

/* An event's track found before in the ntrace.pb being read: the numbers
 * and the source (one of ingest_system_source_name's texts, compared by
 * address) that chose it; the file's process and instance are the same
 * for all. */
struct isystrack {
  const char *source;
  int64_t tid, worker_gid, stream_id;
  int nc_idx, pcore_idx;
  struct itrack *t;
};

#define INGEST_SYSTEM_TRACKS 64 /* slots of the tracks found before */

/* The reader's state for the run: the sync points of the process being
 * read, sorted by (nc, exec_id), its hardware events aligned without their
 * own; while an ntrace.pb is read, the tracks its events went to (tracks
 * on: the slots are in use); the device profiles' hints. */
struct ingest_system_state {
  struct ingest_syncs syncs;
  uint64_t clock_missing;
  bool tracks_on;
  struct isystrack tracks[INGEST_SYSTEM_TRACKS];
  struct idevhint *hints;
  size_t nhints;
};

static const char ingest_system_key; /* its ingest_state key */

static void ingest_system_state_free(void *state) {
  struct ingest_system_state *s = state;
  ingest_syncs_free(&s->syncs);
  free(s->hints);
  free(s);
}

/* The reader's state, created on first use. */
static struct ingest_system_state *ingest_system_state(struct ing *g) {
  return ingest_state_make(g, &ingest_system_key,
                           sizeof(struct ingest_system_state),
                           ingest_system_state_free);
}

/* ------------------------------------------------------------ ntrace */

void ingest_system_device_hint(struct ing *g, int64_t dp_id, int nc,
                               int64_t exec_id) {
  struct ingest_system_state *ss = ingest_system_state(g);
  bool exact;
  const struct ingest_sync *s =
      ingest_syncs_find(&ss->syncs, nc, exec_id, &exact);
  if (!s || !exact || !s->cpu)
    return;
  ss->hints = xrealloc(ss->hints, (ss->nhints + 1) * sizeof *ss->hints);
  ss->hints[ss->nhints++] = (struct idevhint){dp_id, s->cpu};
}

void ingest_system_pb_error(struct ing *g, const char *rel, int rc,
                            uint64_t off) {
  ingest_skipped(g, 1);
  if (rc == -EBADMSG)
    ingest_warn(g, "Corrupt Data", rel, off, "corrupt record skipped");
  else
    ingest_warn(g, "Corrupt Data", rel, off,
                "file truncated or framing corrupt; the rest of the file is "
                "skipped");
}

/* Opens a capture file; on failure records the warning and returns NULL. */
struct fmt_pb *ingest_system_pb_open(struct ing *g, const char *rel,
                                     const char *magic) {
  char *path = ingest_path(g, rel);
  struct fmt_pb *r = NULL;
  char *cause = NULL;
  int rc = fmt_pb_open(path, magic, &r, &cause);
  free(path);
  if (rc < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, rc == -ENODATA ? "Missing Data" : "Corrupt Data", rel, 0,
                "%s", cause ? cause : "cannot open");
    free(cause);
    return NULL;
  }
  return r;
}

static const char *ingest_system_source_name(Nex__TraceEventSource s,
                                             const char *name) {
  switch (s) {
  case NEX__TRACE_EVENT_SOURCE__NEURON_RT:
    return "neuron_rt";
  case NEX__TRACE_EVENT_SOURCE__NEURON_HW:
    return "neuron_hw";
  case NEX__TRACE_EVENT_SOURCE__FRAMEWORK:
    return "framework";
  default:
    return filter_is_hardware(name) ? "neuron_hw" : "neuron_rt";
  }
}

/* The name an event is stored under. */
static const char *ingest_system_name(const Nex__SystemEvent *e) {
  return e->name && *e->name ? e->name : "(unnamed)";
}

/* Whether e is a hardware event (its source, or its name when the source
 * is not set). */
static bool ingest_system_hw(const Nex__SystemEvent *e, const char *name) {
  return strcmp(ingest_system_source_name(e->source, name), "neuron_hw") == 0;
}

/* Writes the members of e's args into the object begun in b (no thread's
 * state is read: the decoder thread runs it too). */
static void ingest_system_args(struct sbuf *b, const Nex__SystemEvent *e,
                               bool device_clock) {
  const char *name = ingest_system_name(e);
  if (strcmp(name, "timestamp_sync_point") == 0) {
    argtext_i64(b, "cpu_timestamp_ns", e->cpu_timestamp_ns);
    argtext_i64(b, "nc_timestamp_ns", e->nc_timestamp_ns);
  } else if (device_clock && ingest_system_hw(e, name)) {
    argtext_i64(b, "nc_start_timestamp_ns", e->timestamp);
    argtext_i64(b, "nc_stop_timestamp_ns", e->timestamp + e->duration);
  }
  if (e->exec_id)
    argtext_i64(b, "exec_id", e->exec_id);
  if (e->model_id)
    argtext_u64(b, "model_id", e->model_id);
  argtext_str(b, "model_name", e->model_name);
  argtext_list(b, "flow_id", e->flow_id, e->n_flow_id, true);
  if (e->parent_id)
    argtext_u64(b, "parent_id", e->parent_id);
  if (e->nrt_sequence_id)
    argtext_i64(b, "nrt_sequence_id", e->nrt_sequence_id);
  if (e->type)
    argtext_i64(b, "type", e->type);
  if (e->size)
    argtext_u64(b, "size", e->size);
  if (e->flop_count)
    argtext_u64(b, "flop_count", e->flop_count);
  if (e->mac_count)
    argtext_u64(b, "mac_count", e->mac_count);
  argtext_attrs(b, e->attributes, e->n_attributes);
}

/* The track of d (an event's, made by ingest_system_put): from the slots
 * while an ntrace.pb is read, else ingest_track(). */
static struct itrack *ingest_system_track(struct ing *g,
                                          const struct store_track *d) {
  struct ingest_system_state *ss = ingest_system_state(g);
  if (!ss->tracks_on)
    return ingest_track(g, d);
  uint64_t h = (uint64_t)(uintptr_t)d->source;
  const int64_t k[] = {d->tid, d->worker_gid, d->stream_id, d->nc_idx,
                       d->pcore_idx};
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    h = (h ^ (uint64_t)k[i]) * 0x9e3779b97f4a7c15ULL;
  struct isystrack *x = &ss->tracks[h >> 58 & (INGEST_SYSTEM_TRACKS - 1)];
  if (x->t && x->source == d->source && x->tid == d->tid &&
      x->worker_gid == d->worker_gid && x->stream_id == d->stream_id &&
      x->nc_idx == d->nc_idx && x->pcore_idx == d->pcore_idx)
    return x->t;
  *x = (struct isystrack){d->source,         d->tid,    d->worker_gid,
                          d->stream_id,      d->nc_idx, d->pcore_idx,
                          ingest_track(g, d)};
  return x->t;
}

/* Stores e with the args text args[0, args_len) (NULL: none); events the
 * filter drops are not stored. */
static void ingest_system_put(struct ing *g, const Nex__SystemEvent *e,
                              bool device_clock, const char *args,
                              size_t args_len) {
  const char *name = ingest_system_name(e);
  if (!filter_keep_event(ingest_opts(g)->filter, name) ||
      !filter_keep_core(ingest_opts(g)->filter, e->nc_idx))
    return;
  const char *source = ingest_system_source_name(e->source, name);
  bool hw = strcmp(source, "neuron_hw") == 0;
  int64_t ts = e->timestamp;
  if (strcmp(name, "timestamp_sync_point") == 0) {
    ts = e->cpu_timestamp_ns;
  } else if (hw && device_clock) {
    struct ingest_system_state *ss = ingest_system_state(g);
    bool exact;
    const struct ingest_sync *s =
        ingest_syncs_find(&ss->syncs, e->nc_idx, e->exec_id, &exact);
    if (s) {
      ts = s->cpu + (e->timestamp - s->dev);
      if (!exact)
        ss->clock_missing++;
    } else {
      ss->clock_missing++;
    }
  }

  struct store_track d =
      ingest_desc("slices", "system", source, ingest_context_instance(g));
  d.pid = ingest_context_pid(g);
  d.has_pid = 1;
  d.tid = e->thread_id;
  d.has_tid = 1;
  d.nc_idx = e->nc_idx;
  if (hw) {
    d.pcore_idx = e->pcore_idx;
    d.worker_gid = e->worker_gid;
  }
  if (strcmp(source, "framework") == 0 && e->framework_stream_id > 0)
    d.stream_id = e->framework_stream_id;
  struct itrack *t = ingest_system_track(g, &d);

  struct lanes_item it = {.ts = ts,
                          .dur = e->duration,
                          .id = ingest_id(g, e->id),
                          .name = ingest_intern(g, name),
                          .args = args_len ? args : NULL,
                          .args_len = args_len};
  ingest_item_flows(g, &it, e->flow_id, e->n_flow_id);
  /* host<->device copies also go to the transfer track of their NC */
  bool in = strcmp(name, "dmem_buf_copyin") == 0;
  if ((in || strcmp(name, "dmem_buf_copyout") == 0) && e->nc_idx >= 0) {
    struct store_track x = ingest_desc("slices", "system",
                                       in ? "host_to_device_transfers"
                                          : "device_to_host_transfers",
                                       ingest_context_instance(g));
    x.nc_idx = e->nc_idx;
    struct lanes_item copy = it;
    copy.flows = NULL;
    copy.n_flows = 0;
    ingest_slice(g, ingest_track(g, &x), &copy);
  }
  ingest_slice(g, t, &it);
}

void ingest_system_event(struct ing *g, const Nex__SystemEvent *e,
                         bool device_clock) {
  struct sbuf *b = ingest_args_text(g);
  argtext_begin(b);
  ingest_system_args(b, e, device_clock);
  size_t n = argtext_end(b);
  ingest_system_put(g, e, device_clock, b->s, n);
}

void ingest_system_hbm(struct ing *g, const Nex__HbmUsage *h) {
  struct store_track d = ingest_desc("counter", "system", "neuron_hbm_usage",
                                     ingest_context_instance(g));
  d.device_idx = h->device_idx;
  d.hbm_idx = h->hbm_idx;
  struct itrack *t = ingest_track(g, &d);
  const uint64_t v[23] = {h->total_bytes,
                          h->generic_bytes,
                          h->tensor_instructions_bytes,
                          h->scalar_instructions_bytes,
                          h->gpsimd_instructions_bytes,
                          h->io_bytes,
                          h->dram_spill_bytes,
                          h->weights_bytes,
                          h->profiler_buffers_bytes,
                          h->scalar_table_bytes,
                          h->vector_instructions_bytes,
                          h->sync_instructions_bytes,
                          h->shared_scratchpad_bytes,
                          h->tensors_bytes,
                          h->ucode_lib_bytes,
                          h->gpsimd_stdio_bytes,
                          h->collectives_bytes,
                          h->scratchpad_bytes,
                          h->dma_rings_runtime_bytes,
                          h->dma_rings_spill_bytes,
                          h->dma_rings_io_bytes,
                          h->dma_rings_collectives_bytes,
                          h->unknown_bytes};
  for (int i = 0; i < 23; i++)
    ingest_counter(g, t, i, h->timestamp, (double)v[i]);
}

/* A capture file being read by ingest_system_pb_records. */
struct ingest_system_each {
  struct ing *g;
  const char *rel;
  ingest_system_pb_fn fn;
};

static int ingest_system_each_record(void *ud,
                                     const struct fmt_pb_pipe_rec *x) {
  const struct ingest_system_each *e = ud;
  ingest_file_pos(e->g, x->pos);
  if (x->rc > 0)
    e->fn(e->g, e->rel, x);
  else
    ingest_system_pb_error(e->g, e->rel, x->rc, x->offset);
  return 0;
}

void ingest_system_pb_records(struct ing *g, const char *rel, struct fmt_pb *r,
                              const ProtobufCMessageDescriptor *d,
                              fmt_pb_pipe_prep_fn prep,
                              ingest_system_pb_fn fn) {
  struct ingest_system_each e = {g, rel, fn};
  fmt_pb_pipe_each(r, d, prep, NULL, ingest_system_each_record, &e);
}

/* Opens a capture file and reads all its records (messages of descriptor
 * d) with ingest_system_pb_records. */
static void ingest_system_pb_each(struct ing *g, const char *rel,
                                  const char *magic,
                                  const ProtobufCMessageDescriptor *d,
                                  fmt_pb_pipe_prep_fn prep,
                                  ingest_system_pb_fn fn) {
  struct fmt_pb *r = ingest_system_pb_open(g, rel, magic);
  if (!r)
    return;
  ingest_system_pb_records(g, rel, r, d, prep, fn);
  fmt_pb_close(r);
}

/* The args text of an ntrace event, made on the decoder thread (a
 * fmt_pb_pipe_prep_fn). */
static void ingest_system_ntrace_prep(void *ud, const ProtobufCMessage *m,
                                      struct sbuf *out) {
  const Nex__NtraceRecord *rec = (const Nex__NtraceRecord *)m;
  (void)ud;
  if (rec->record_case != NEX__NTRACE_RECORD__RECORD_EVENT)
    return;
  argtext_begin(out);
  ingest_system_args(out, rec->event, true);
  argtext_end(out);
}

static void ingest_system_ntrace_record(struct ing *g, const char *rel,
                                        const struct fmt_pb_pipe_rec *x) {
  Nex__NtraceRecord *rec = (Nex__NtraceRecord *)x->msg;
  if (rec->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
    ingest_system_put(g, rec->event, true, x->text, x->text_len);
  else if (rec->record_case == NEX__NTRACE_RECORD__RECORD_HBM)
    ingest_system_hbm(g, rec->hbm);
  else {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, x->offset,
                "record of unknown kind skipped");
  }
}

/* ntrace.pb: pass 1 collects the sync points (ingest_syncs.h), pass 2
 * stores the events. */
void ingest_system_ntrace(struct ing *g, const char *rel) {
  struct ingest_system_state *ss = ingest_system_state(g);
  char *path = ingest_path(g, rel);
  ingest_syncs_read(&ss->syncs, path);
  free(path);
  ss->clock_missing = 0;
  memset(ss->tracks, 0, sizeof ss->tracks); /* the process is new */
  ss->tracks_on = true;
  ingest_system_pb_each(g, rel, FMT_PB_MAGIC_NTRACE,
                        &nex__ntrace_record__descriptor,
                        ingest_system_ntrace_prep, ingest_system_ntrace_record);
  ss->tracks_on = false;
  ingest_syncs_free(&ss->syncs); /* not kept for the files read next */
  if (ss->clock_missing)
    ingest_warn(g, "Clock", rel, 0,
                "%" PRIu64 " hardware events had no timestamp_sync_point with "
                "their exec_id; aligned with the nearest sync point of their "
                "NeuronCore (or left in device clock when the core has none)",
                ss->clock_missing);
}

/* ------------------------------------------------------------ samples */

void ingest_system_cpu_sample(struct ing *g, const Nex__CpuUsage *c) {
  struct store_track d = ingest_desc("counter", "system", "host_cpu_util",
                                     ingest_context_instance(g));
  d.cpu_id = *c->cpu_id ? c->cpu_id : "unknown";
  ingest_counter(g, ingest_track(g, &d), 0, c->timestamp, c->util_percent);
}

void ingest_system_mem_sample(struct ing *g, const Nex__HostMemUsage *h) {
  struct store_track d =
      ingest_desc("counter", "system", "host_mem", ingest_context_instance(g));
  struct itrack *t = ingest_track(g, &d);
  ingest_counter(g, t, 0, h->timestamp, (double)h->used_bytes);
  ingest_counter(g, t, 1, h->timestamp, h->used_percent);
}

static void ingest_system_cpu_record(struct ing *g, const char *rel,
                                     const struct fmt_pb_pipe_rec *x) {
  ingest_system_cpu_sample(g, (Nex__CpuUsage *)x->msg);
  (void)rel;
}

void ingest_system_cpu_util(struct ing *g, const char *rel) {
  ingest_system_pb_each(g, rel, FMT_PB_MAGIC_CPU_UTIL,
                        &nex__cpu_usage__descriptor, NULL,
                        ingest_system_cpu_record);
}

static void ingest_system_mem_record(struct ing *g, const char *rel,
                                     const struct fmt_pb_pipe_rec *x) {
  ingest_system_mem_sample(g, (Nex__HostMemUsage *)x->msg);
  (void)rel;
}

void ingest_system_host_mem(struct ing *g, const char *rel) {
  ingest_system_pb_each(g, rel, FMT_PB_MAGIC_HOST_MEM,
                        &nex__host_mem_usage__descriptor, NULL,
                        ingest_system_mem_record);
}

static void ingest_system_fmt_time(int64_t ns, char *buf, size_t n) {
  time_t s = (time_t)(ns / 1000000000LL);
  struct tm tm;
  gmtime_r(&s, &tm);
  char tmp[32];
  strftime(tmp, sizeof tmp, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, n, "%s.%09lld +0000 UTC", tmp, (long long)(ns % 1000000000LL));
}

void ingest_system_metadata(struct ing *g, const char *instance, int64_t pid,
                            const Nex__TraceInfo *ti, const char *dir,
                            const char *file) {
  char first[64] = "", last[64] = "", first_ns[24] = "", last_ns[24] = "";
  if (ti) {
    ingest_system_fmt_time(ti->first_ts_ns, first, sizeof first);
    ingest_system_fmt_time(ti->last_ts_ns, last, sizeof last);
    snprintf(first_ns, sizeof first_ns, "%" PRId64, ti->first_ts_ns);
    snprintf(last_ns, sizeof last_ns, "%" PRId64, ti->last_ts_ns);
  }
  store_writer_exec(
      ingest_writer(g),
      "INSERT INTO SystemProfileMetadata (instance_id, process_id, first_ts, "
      "last_ts, first_ts_ns, last_ts_ns, ntff_version, hbm_capacity_bytes, "
      "dropped_events, stored_events, instance_type, runtime_version, "
      "driver_version, dir) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      "titttt"
      "IIIItttt",
      instance, pid, ti ? first : NULL, ti ? last : NULL, ti ? first_ns : NULL,
      ti ? last_ns : NULL, ti ? (int64_t)ti->ntff_version : -1,
      ti ? (int64_t)ti->hbm_capacity_bytes : -1,
      ti ? (int64_t)ti->dropped_events : -1,
      ti ? (int64_t)ti->stored_events : -1,
      ti && *ti->instance_type ? ti->instance_type : NULL,
      ti && *ti->runtime_version ? ti->runtime_version : NULL,
      ti && *ti->driver_version ? ti->driver_version : NULL, dir);
  if (ti && ti->dropped_events)
    ingest_warn(g, "Missing Data", file, 0,
                "%" PRIu64 " trace events were dropped during capture (stored "
                "%" PRIu64 " out of %" PRIu64 " total events)",
                ti->dropped_events, ti->stored_events,
                ti->stored_events + ti->dropped_events);
}

/* Reads trace_info.pb; sets ingest_context_instance(g)/pid overrides.  Returns
 * false if the profile is filtered out. */
bool ingest_system_trace_info(struct ing *g, const struct discover_process *p,
                              char **instance, int64_t *pid) {
  *instance = xstrdup(p->instance_id);
  *pid = p->pid;
  struct fmt_pb *r =
      ingest_system_pb_open(g, p->trace_info, FMT_PB_MAGIC_TRACE_INFO);
  Nex__TraceInfo *ti = NULL;
  if (r) {
    ProtobufCMessage *m;
    uint64_t off;
    int rc = fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off);
    if (rc == 1)
      ti = (Nex__TraceInfo *)m;
    else if (rc < 0)
      ingest_system_pb_error(g, p->trace_info, rc, off);
    else
      ingest_warn(g, "Missing Data", p->trace_info, 0,
                  "trace_info.pb is empty");
  }
  if (ti && *ti->instance_id) {
    free(*instance);
    *instance = xstrdup(ti->instance_id);
  }
  if (ti && ti->process_id > 0)
    *pid = ti->process_id;
  bool keep = filter_keep_instance(ingest_opts(g)->filter, *instance);
  if (keep)
    ingest_system_metadata(g, *instance, *pid, ti, p->rel, p->trace_info);
  fmt_pb_close(r);
  return keep;
}

/* ------------------------------------------------------------ derived */

void ingest_system_rates(struct ing *g) {
  for (size_t i = 0; i < ingest_track_n(g); i++) {
    struct itrack *t = ingest_track_at(g, i);
    const struct store_track *d = ingest_track_desc(t);
    int64_t first, last;
    ingest_track_span(t, &first, &last);
    if (ingest_track_count(t) > 0 && strcmp(d->kind, "slices") == 0 &&
        d->source &&
        (strcmp(d->source, "host_to_device_transfers") == 0 ||
         strcmp(d->source, "device_to_host_transfers") == 0))
      ingest_rates_watch(ingest_rates_begin(g, INGEST_RATE_TRANSFER,
                                            ingest_track_id(t), first, last,
                                            "size"),
                         t);
  }
}

struct ingest_system_rows {
  struct ing *g;
  int64_t *ids;
  char **inst;
  int *nc;
  char **src;
  size_t n;
};

static int ingest_system_collect_row(void *ud, sqlite3_stmt *st) {
  struct ingest_system_rows *c = ud;
  c->ids = xrealloc(c->ids, sizeof *c->ids * (c->n + 1));
  c->inst = xrealloc(c->inst, sizeof *c->inst * (c->n + 1));
  c->nc = xrealloc(c->nc, sizeof *c->nc * (c->n + 1));
  c->src = xrealloc(c->src, sizeof *c->src * (c->n + 1));
  c->ids[c->n] = sqlite3_column_int64(st, 0);
  c->inst[c->n] = xstrdup((const char *)sqlite3_column_text(st, 1));
  c->nc[c->n] = sqlite3_column_int(st, 2);
  c->src[c->n] = xstrdup((const char *)sqlite3_column_text(st, 3));
  c->n++;
  return 0;
}

static void ingest_system_collect_free(struct ingest_system_rows *c) {
  for (size_t i = 0; i < c->n; i++) {
    free(c->inst[i]);
    free(c->src[i]);
  }
  free(c->ids);
  free(c->inst);
  free(c->nc);
  free(c->src);
}

/* Sets DeviceProfileList.time_offset_ns: the system start of the first
 * execution's nc_exec_running (`where` narrows the slices searched) minus
 * its device start. */
#define INGEST_SYSTEM_SQL_OFFSET(where)                                        \
  "UPDATE DeviceProfileList SET time_offset_ns = ("                            \
  " SELECT s.ts - e.execution_start_ts"                                        \
  " FROM (SELECT * FROM ExecutionInfo x WHERE x.device_profile_id ="           \
  "       DeviceProfileList.id AND x.exec_id IS NOT NULL"                      \
  "       ORDER BY x.execution_index LIMIT 1) e,"                              \
  "      track t CROSS JOIN slice s ON s.track = t.id"                         \
  " WHERE t.domain = 'system' AND t.source = 'neuron_hw'"                      \
  "   AND t.instance_id = DeviceProfileList.instance_id"                       \
  "   AND t.pid = DeviceProfileList.process_id"                                \
  "   AND t.nc_idx = DeviceProfileList.nc_id" where                            \
  "   AND s.name = (SELECT id FROM str WHERE s = 'nc_exec_running')"           \
  "   AND json_extract(s.args, '$.exec_id') = e.exec_id LIMIT 1)"

int ingest_system_derived(struct ing *g) {
  struct ingest_system_state *ss = ingest_system_state(g);
  int scans = 0;
  /* host<->device transfer bandwidth, per instance, NC and direction */
  struct ingest_system_rows c = {.g = g};
  int rc = store_writer_query(
      ingest_writer(g), ingest_system_collect_row, &c,
      "SELECT id, instance_id, coalesce(nc_idx, -1), "
      "source || ' ' || first_ts || ' ' || last_ts || ' ' || event_count "
      "FROM track WHERE source IN ('host_to_device_transfers',"
      "'device_to_host_transfers') AND event_count > 0 "
      "ORDER BY id",
      "");
  if (rc < 0)
    ingest_warn(g, "Missing Data", NULL, 0,
                "no transfer bandwidth counters: %s", strerror(-rc));
  for (size_t i = 0; i < c.n; i++) {
    char src[32];
    long long first, last, count;
    if (sscanf(c.src[i], "%31s %lld %lld %lld", src, &first, &last, &count) !=
        4)
      continue;
    bool in = strcmp(src, "host_to_device_transfers") == 0;
    struct store_track d = ingest_desc("counter", "system",
                                       in ? "host_to_device_bandwidth"
                                          : "device_to_host_bandwidth",
                                       c.inst[i]);
    d.nc_idx = c.nc[i];
    scans +=
        ingest_rates_emit(g, ingest_track(g, &d), INGEST_RATE_TRANSFER,
                          c.ids[i], first, last, count,
                          "SELECT ts, dur, coalesce(CAST(nex_json_member(args, "
                          "'size') AS REAL), 0) FROM slice WHERE track = ?");
  }
  ingest_system_collect_free(&c);
  /* DMA throughput per device profile */
  struct ingest_system_rows dp = {.g = g};
  rc = store_writer_query(
      ingest_writer(g), ingest_system_collect_row, &dp,
      "SELECT id, instance_id, coalesce(pcore_idx, -1), "
      "process_id || ' ' || first_ts || ' ' || last_ts || ' ' || dma_count "
      "FROM DeviceProfileList WHERE dma_count > 0 ORDER BY id",
      "");
  if (rc < 0)
    ingest_warn(g, "Missing Data", NULL, 0, "no DMA throughput counters: %s",
                strerror(-rc));
  for (size_t i = 0; i < dp.n; i++) {
    long long pid, first, last, count;
    if (sscanf(dp.src[i], "%lld %lld %lld %lld", &pid, &first, &last, &count) !=
        4)
      continue;
    struct store_track d =
        ingest_desc("counter", "device", "dma_throughput", dp.inst[i]);
    d.pid = pid;
    d.has_pid = 1;
    d.pcore_idx = dp.nc[i];
    d.device_profile_id = dp.ids[i];
    d.label = "dma_throughput";
    scans += ingest_rates_emit(
        g, ingest_track(g, &d), INGEST_RATE_DMA, dp.ids[i], first, last, count,
        /* CROSS JOIN: track first, then each DMA track's
         * slices by key (not a scan of every slice) */
        "SELECT s.ts, s.dur, coalesce(CAST(nex_json_member("
        "s.args, 'transfer_bytes') AS REAL), 0) FROM track t "
        "CROSS JOIN slice s ON s.track = t.id WHERE "
        "t.device_profile_id = ? AND t.source = 'dma'");
  }
  ingest_system_collect_free(&dp);
  /* device timeline -> system timeline, through the first execution's
   * nc_exec_running: first near the cpu time of its sync point (lanes by
   * equality so the ts range uses the key), then, for the rest, anywhere
   * on the track */
  for (size_t i = 0; i < ss->nhints; i++)
    store_writer_exec(
        ingest_writer(g),
        INGEST_SYSTEM_SQL_OFFSET("   AND s.lane IN (0, 1, 2, 3, 4, 5, 6, 7)"
                                 "   AND s.ts BETWEEN ?2 - 10000000000 AND "
                                 "?2 + 10000000000") " WHERE id = ?1",
        "ii", ss->hints[i].dp_id, ss->hints[i].cpu_ts);
  store_writer_exec(
      ingest_writer(g),
      INGEST_SYSTEM_SQL_OFFSET("") " WHERE time_offset_ns IS NULL", "");
  return scans;
}
