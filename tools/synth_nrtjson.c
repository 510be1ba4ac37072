/* synth_nrtjson.c -- --format systrace-json: rewrites the ntrace.pb of a
 * process folder as the runtime's own JSON event dump
 * (nrt_sys_trace_fetch_events' {"events":[...],"data_version":2}) in
 * ntrace_events.json, and removes ntrace.pb.
 *
 * Like the runtime, which drains one ring per NeuronCore, the dump is
 * grouped by core: one pass over ntrace.pb per core (and a first one for
 * the HBM samples), so nothing is held in memory beyond one record.  Each
 * event becomes a start and a stop record sharing (nc_idx, tracking_id),
 * written together in ntrace.pb's completion order; a timestamp_sync_point
 * becomes one timestamp_sync instant.  Hardware events keep their device
 * clock in timestamp_ns and data.nc_timestamp_ns, as the runtime writes
 * them; the collectives barrier carries no exec_id (the runtime's does
 * not).  An HBM sample becomes a dma_mem_alloc instant and stop whose
 * totals are the sample's total and tensor bytes.  Event names take the
 * runtime's spelling (fmt_nrtjson_runtime_name).
 */
#include "synth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt_nrtjson.h"
#include "fmt_pb.h"
#include "ntrace.pb-c.h"

struct synth_nrtjson {
  FILE *f;
  struct sbuf b;
  uint64_t n, next_tracking;
};

/* Opens record `phase` of event type `type`: every key but data and
 * timestamp_ns, then "data":{ (the caller adds its members). */
static void synth_nrtjson_head(struct synth_nrtjson *w, const char *type,
                               const char *phase, uint64_t id, int nc,
                               uint64_t tracking, int64_t tid, int gid) {
  sbuf_reset(&w->b);
  sbuf_printf(&w->b,
              "%s{\"event_type\":\"%s\",\"phase\":\"%s\",\"id\":%" PRIu64
              ",\"nc_idx\":%d,\"nc_local_id\":0,\"tracking_id\":%" PRIu64
              ",\"thread_id\":%" PRId64 ",\"worker_gid\":%d,\"data\":{",
              w->n++ ? "," : "", type, phase, id, nc, tracking, tid, gid);
}

/* Closes the data object and the record, and writes it. */
static void synth_nrtjson_tail(struct synth_nrtjson *w, int64_t ts) {
  if (w->b.s[w->b.len - 1] == ',')
    w->b.len--;
  sbuf_printf(&w->b, "},\"timestamp_ns\":%" PRId64 "}", ts);
  fwrite(w->b.s, 1, w->b.len, w->f);
}

static void synth_nrtjson_u64(struct synth_nrtjson *w, const char *key,
                              uint64_t v) {
  sbuf_printf(&w->b, "\"%s\":%" PRIu64 ",", key, v);
}

/* The data of a start: the event's fields and attributes the runtime has
 * keys for. */
static void synth_nrtjson_data(struct synth_nrtjson *w,
                               const Nex__SystemEvent *e, int hw) {
  int exec = !strcmp(e->name, "nc_exec_running");
  if (exec)
    synth_nrtjson_u64(w, "device_core_idx", (uint64_t)e->pcore_idx);
  if (e->exec_id && strcmp(e->name, "cc_exec_barrier"))
    synth_nrtjson_u64(w, "exec_id", (uint64_t)e->exec_id);
  if (hw)
    synth_nrtjson_u64(w, "nc_timestamp_ns", (uint64_t)e->timestamp);
  if (e->model_id)
    synth_nrtjson_u64(w, "model_id", e->model_id);
  if (e->model_name && *e->model_name) {
    sbuf_adds(&w->b, "\"model_name\":");
    sbuf_add_json_str(&w->b, e->model_name, strlen(e->model_name));
    sbuf_addc(&w->b, ',');
  }
  if (e->size)
    synth_nrtjson_u64(w, "size", e->size);
  for (size_t i = 0; i < e->n_attributes; i++) {
    const Nex__Attribute *a = e->attributes[i];
    sbuf_add_json_str(&w->b, a->key, strlen(a->key));
    sbuf_addc(&w->b, ':');
    if (a->is_number)
      sbuf_adds(&w->b, a->value);
    else
      sbuf_add_json_str(&w->b, a->value, strlen(a->value));
    sbuf_addc(&w->b, ',');
  }
}

static void synth_nrtjson_event(struct synth_nrtjson *w,
                                const Nex__SystemEvent *e) {
  const char *type = fmt_nrtjson_runtime_name(e->name);
  int hw = e->source == NEX__TRACE_EVENT_SOURCE__NEURON_HW;
  uint64_t tracking = e->id;
  if (!strcmp(e->name, "timestamp_sync_point")) {
    synth_nrtjson_head(w, type, "instant", e->id, e->nc_idx, tracking,
                       e->thread_id, e->worker_gid);
    synth_nrtjson_u64(w, "exec_id", (uint64_t)e->exec_id);
    synth_nrtjson_u64(w, "nc_timestamp_ns", (uint64_t)e->nc_timestamp_ns);
    synth_nrtjson_u64(w, "cpu_timestamp_ns", (uint64_t)e->cpu_timestamp_ns);
    synth_nrtjson_tail(w, e->nc_timestamp_ns);
    return;
  }
  synth_nrtjson_head(w, type, "start", e->id, e->nc_idx, tracking, e->thread_id,
                     e->worker_gid);
  synth_nrtjson_data(w, e, hw);
  synth_nrtjson_tail(w, e->timestamp);
  synth_nrtjson_head(w, type, "stop", e->id, e->nc_idx, tracking, e->thread_id,
                     e->worker_gid);
  if (hw)
    synth_nrtjson_u64(w, "nc_timestamp_ns",
                      (uint64_t)(e->timestamp + e->duration));
  synth_nrtjson_tail(w, e->timestamp + e->duration);
}

static void synth_nrtjson_hbm(struct synth_nrtjson *w, const Nex__HbmUsage *h) {
  uint64_t t = w->next_tracking++;
  synth_nrtjson_head(w, "dma_mem_alloc", "instant", t, 0, t, 0, -1);
  sbuf_printf(&w->b,
              "\"hbm_idx\":%d,\"is_nc_hbm\":true,\"is_aligned\":false,"
              "\"mla_idx\":%d,\"usage_type\":\"tensors\"",
              h->hbm_idx, h->device_idx);
  synth_nrtjson_tail(w, h->timestamp);
  synth_nrtjson_head(w, "dma_mem_alloc", "stop", t, 0, t, 0, -1);
  synth_nrtjson_u64(w, "allocated_bytes", 4096);
  synth_nrtjson_u64(w, "total_bytes", h->total_bytes);
  synth_nrtjson_u64(w, "usage_type_total_bytes", h->tensors_bytes);
  synth_nrtjson_u64(w, "return_code", 0);
  sbuf_printf(&w->b, "\"physical_address\":\"0x%" PRIx64 "\"",
              UINT64_C(0x400000000) + (t & 0xffffff) * 4096);
  synth_nrtjson_tail(w, h->timestamp);
}

/* Writes the records of core nc (-1: the HBM samples) of ntrace.pb. */
static int synth_nrtjson_pass(struct synth_nrtjson *w, const char *pb, int nc,
                              char **cause) {
  struct fmt_pb *r;
  int rc = fmt_pb_open(pb, FMT_PB_MAGIC_NTRACE, &r, cause);
  if (rc < 0)
    return rc;
  ProtobufCMessage *m;
  uint64_t off;
  while ((rc = fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off)) > 0) {
    const Nex__NtraceRecord *rec = (const Nex__NtraceRecord *)m;
    if (rec->record_case == NEX__NTRACE_RECORD__RECORD_HBM && nc < 0)
      synth_nrtjson_hbm(w, rec->hbm);
    else if (rec->record_case == NEX__NTRACE_RECORD__RECORD_EVENT &&
             rec->event->nc_idx == nc)
      synth_nrtjson_event(w, rec->event);
  }
  fmt_pb_close(r);
  if (rc < 0)
    *cause = xasprintf("%s: unreadable record at byte %" PRIu64, pb, off);
  return rc;
}

int synth_nrtjson_process(struct synth *s, const struct synth_proc *p,
                          char **cause) {
  char *pb = xasprintf("%s/ntrace.pb", p->path);
  struct synth_nrtjson w = {.next_tracking = UINT64_C(1) << 50};
  w.f = synth_fopen(p->path, "ntrace_events.json");
  int rc = w.f ? 0 : -errno;
  if (rc < 0)
    *cause = xasprintf("%s/ntrace_events.json: %s", p->dir, strerror(-rc));
  if (rc == 0)
    fputs("{\"events\":[", w.f);
  for (int nc = -1; nc < s->o.cores && rc == 0; nc++)
    rc = synth_nrtjson_pass(&w, pb, nc, cause);
  if (w.f) {
    fputs("],\"data_version\":2}", w.f);
    int rc2 = synth_fclose(w.f);
    if (rc == 0 && rc2 < 0) {
      rc = rc2;
      *cause = xasprintf("%s/ntrace_events.json: %s", p->dir, strerror(-rc));
    }
  }
  if (rc == 0 && unlink(pb) != 0) {
    rc = -errno;
    *cause = xasprintf("%s: %s", pb, strerror(-rc));
  }
  sbuf_free(&w.b);
  free(pb);
  return rc;
}
