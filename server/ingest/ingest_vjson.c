/* ingest_vjson.c -- the vendor tool's JSON exports (system_profile.json and
 * the device JSON of each NeuronCore) into the same tables as the capture
 * files: fmt_vjson reports the protobuf-c records of proto/, and this file
 * hands them to the functions that store ntrace.pb, cpu_util.pb,
 * host_mem.pb, trace_info.pb and NTFF records.  See ingest_readers.h. */
#include "fmt_vjson.h"
#include "ingest_readers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A device_profile_list entry of a system export: where a device JSON
 * belongs. */
struct ingest_vjson_dev {
  char *name, *instance;
  int64_t pid;
  int nc;
};

struct ingest_vjson {
  struct ing *g;
  const char *rel;
  char *stem;                    /* file name without .json[.gz] */
  struct ingest_vjson_dev *devs; /* from every system export */
  size_t ndevs;
  int device_open;
};

static char *ingest_vjson_stem(const char *rel) {
  const char *b = strrchr(rel, '/');
  b = b ? b + 1 : rel;
  size_t n = strlen(b);
  if (n > 8 && strcmp(b + n - 8, ".json.gz") == 0)
    n -= 8;
  else if (n > 5 && strcmp(b + n - 5, ".json") == 0)
    n -= 5;
  return xstrndup(b, n);
}

/* Makes the record's process current (creating its process row). */
static void ingest_vjson_origin(struct ingest_vjson *v,
                                const struct fmt_vjson_origin *o) {
  const char *inst =
      o->instance_id && *o->instance_id ? o->instance_id : v->stem;
  int64_t pid = 0;
  if (o->process_id && *o->process_id &&
      util_parse_i64(o->process_id, &pid) != 0)
    pid = 0;
  const char *cur = ingest_context_instance(v->g);
  if (cur && strcmp(cur, inst) == 0 && ingest_context_pid(v->g) == pid)
    return;
  ingest_context_set(v->g, inst, pid);
  ingest_process(v->g, inst, pid, NULL, NULL);
}

static int ingest_vjson_ntrace(void *ud, const struct fmt_vjson_origin *o,
                               const Nex__NtraceRecord *r) {
  struct ingest_vjson *v = ud;
  ingest_file_pos(v->g, o->offset);
  ingest_vjson_origin(v, o);
  if (!ingest_context_kept(v->g))
    return 0;
  if (r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
    ingest_system_event(v->g, r->event, false);
  else if (r->record_case == NEX__NTRACE_RECORD__RECORD_HBM)
    ingest_system_hbm(v->g, r->hbm);
  return 0;
}

static int ingest_vjson_cpu(void *ud, const struct fmt_vjson_origin *o,
                            const Nex__CpuUsage *c) {
  struct ingest_vjson *v = ud;
  ingest_vjson_origin(v, o);
  if (ingest_context_kept(v->g))
    ingest_system_cpu_sample(v->g, c);
  return 0;
}

static int ingest_vjson_mem(void *ud, const struct fmt_vjson_origin *o,
                            const Nex__HostMemUsage *m) {
  struct ingest_vjson *v = ud;
  ingest_vjson_origin(v, o);
  if (ingest_context_kept(v->g))
    ingest_system_mem_sample(v->g, m);
  return 0;
}

static int ingest_vjson_info(void *ud, const struct fmt_vjson_origin *o,
                             const Nex__TraceInfo *t) {
  struct ingest_vjson *v = ud;
  ingest_vjson_origin(v, o);
  ingest_system_metadata(v->g, ingest_context_instance(v->g),
                         ingest_context_pid(v->g), t, NULL, v->rel);
  return 0;
}

static int ingest_vjson_devlist(void *ud, const struct fmt_vjson_origin *o,
                                int nc, const char *name) {
  struct ingest_vjson *v = ud;
  ingest_vjson_origin(v, o);
  v->devs = xrealloc(v->devs, sizeof *v->devs * (v->ndevs + 1));
  v->devs[v->ndevs++] = (struct ingest_vjson_dev){
      xstrdup(name), xstrdup(ingest_context_instance(v->g)),
      ingest_context_pid(v->g), nc};
  return 0;
}

/* Opens the device profile of this device JSON at its first record. */
static void ingest_vjson_device_open(struct ingest_vjson *v) {
  const struct ingest_vjson_dev *d = NULL;
  for (size_t i = 0; i < v->ndevs; i++)
    if (strcmp(v->devs[i].name, v->stem) == 0)
      d = &v->devs[i];
  ingest_context_set(v->g, d ? d->instance : v->stem, d ? d->pid : 0);
  ingest_process(v->g, ingest_context_instance(v->g), ingest_context_pid(v->g),
                 NULL, NULL);
  if (!d)
    ingest_warn(v->g, "Missing Data", v->rel, 0,
                "no device_profile_list entry names this device JSON; its "
                "instance and process are unknown");
  struct ingest_device_info info = {.name = v->stem,
                                    .ntff_file = v->rel,
                                    .nc = d ? d->nc : -1,
                                    .pcore = -1,
                                    .session = -1};
  ingest_device_begin(v->g, &info);
  v->device_open = 1;
}

static int ingest_vjson_ntff(void *ud, const struct fmt_vjson_origin *o,
                             const Nex__NtffRecord *r) {
  struct ingest_vjson *v = ud;
  ingest_file_pos(v->g, o->offset);
  if (!v->device_open)
    ingest_vjson_device_open(v);
  ingest_device_record(v->g, r);
  return 0;
}

static void ingest_vjson_warning(void *ud, uint64_t offset, const char *msg) {
  struct ingest_vjson *v = ud;
  ingest_skipped(v->g, 1);
  ingest_warn(v->g, "Corrupt Data", v->rel, offset, "%s", msg);
}

/* Reads one export of the expected kind. */
static void ingest_vjson_file(struct ingest_vjson *v, const char *rel) {
  struct ing *g = v->g;
  v->rel = rel;
  v->stem = ingest_vjson_stem(rel);
  v->device_open = 0;
  ingest_file_begin(g, rel);
  char *path = ingest_path(g, rel);
  struct fmt_vjson_cb cb = {.ud = v,
                            .ntrace = ingest_vjson_ntrace,
                            .cpu = ingest_vjson_cpu,
                            .host_mem = ingest_vjson_mem,
                            .trace_info = ingest_vjson_info,
                            .device_profile = ingest_vjson_devlist,
                            .ntff = ingest_vjson_ntff,
                            .warning = ingest_vjson_warning};
  char *cause = NULL;
  if (fmt_vjson_read(path, &cb, NULL, &cause) < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  }
  if (v->device_open)
    ingest_device_end(g);
  struct stat sb;
  ingest_file_end(g, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
  free(cause);
  free(path);
  free(v->stem);
  v->stem = NULL;
}

int ingest_vjson_read_all(struct ing *g, char **rels, int n, bool *handled) {
  struct ingest_vjson v = {.g = g};
  int *kind = xcalloc((size_t)(n ? n : 1), sizeof *kind);
  int count = 0;
  for (int i = 0; i < n; i++) {
    char *path = ingest_path(g, rels[i]);
    kind[i] = fmt_vjson_probe(path);
    free(path);
    handled[i] = kind[i] == FMT_VJSON_SYSTEM || kind[i] == FMT_VJSON_DEVICE;
    count += handled[i];
  }
  for (int pass = FMT_VJSON_SYSTEM; pass <= FMT_VJSON_DEVICE; pass++)
    for (int i = 0; i < n; i++)
      if (kind[i] == pass) {
        ingest_vjson_file(&v, rels[i]);
      }
  ingest_context_set(g, NULL, -1);
  for (size_t i = 0; i < v.ndevs; i++) {
    free(v.devs[i].name);
    free(v.devs[i].instance);
  }
  free(v.devs);
  free(kind);
  return count;
}
