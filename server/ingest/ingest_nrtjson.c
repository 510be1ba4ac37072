/* ingest_nrtjson.c -- the runtime's own JSON event dump (what
 * nrt_sys_trace_fetch_events returns, saved to a file) into the same
 * tables as ntrace.pb: fmt_nrtjson pairs the records and maps the device
 * clock; this file gives each dump its process and hands the events to
 * ingest_system_event and the HBM samples to ingest_system_hbm.  See
 * ingest_readers.h. */
#include "filter.h"
#include "fmt_nrtjson.h"
#include "ingest_readers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ingest_nrtjson {
  struct ing *g;
  const char *rel;
};

static int ingest_nrtjson_record(void *ud, uint64_t offset,
                                 const Nex__NtraceRecord *r) {
  struct ingest_nrtjson *v = ud;
  ingest_file_pos(v->g, offset);
  if (r->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
    ingest_system_event(v->g, r->event, false);
  else if (r->record_case == NEX__NTRACE_RECORD__RECORD_HBM)
    ingest_system_hbm(v->g, r->hbm);
  return 0;
}

static void ingest_nrtjson_warning(void *ud, uint64_t offset, const char *msg) {
  struct ingest_nrtjson *v = ud;
  ingest_skipped(v->g, 1);
  ingest_warn(v->g, "Corrupt Data", v->rel, offset, "%s", msg);
}

/* The process folder that holds file rel, or NULL. */
static const struct discover_process *ingest_nrtjson_owner(struct ing *g,
                                                           const char *rel) {
  const struct discover_result *d = ingest_discovery(g);
  for (int i = 0; i < d->n_procs; i++)
    for (int j = 0; j < d->procs[i].n_json; j++)
      if (strcmp(d->procs[i].json[j], rel) == 0)
        return &d->procs[i];
  return NULL;
}

/* Reads one dump as the system trace of its process: the one of its
 * <instance>_pid_<pid> folder, else the profile (named after --dir, pid
 * 0). */
static void ingest_nrtjson_file(struct ing *g, const char *rel) {
  const struct discover_process *p = ingest_nrtjson_owner(g, rel);
  char *instance = p && *p->instance_id
                       ? xstrdup(p->instance_id)
                       : ingest_profile_base(ingest_opts(g)->dir);
  int64_t pid = p && p->pid > 0 ? p->pid : 0;
  if (!filter_keep_instance(ingest_opts(g)->filter, instance)) {
    free(instance);
    return;
  }
  struct ingest_nrtjson v = {g, rel};
  ingest_context_set(g, instance, pid);
  ingest_file_begin(g, rel);
  ingest_process(g, instance, pid, NULL, NULL);
  char *path = ingest_path(g, rel);
  struct fmt_nrtjson_cb cb = {&v, ingest_nrtjson_record,
                              ingest_nrtjson_warning};
  struct fmt_nrtjson_stats st;
  char *cause = NULL;
  if (fmt_nrtjson_read(path, &cb, &st, &cause) < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "unreadable");
  } else {
    if (st.unpaired_start || st.unpaired_stop)
      ingest_warn(g, "Missing Data", rel, 0,
                  "%" PRIu64 " start records without their stop (kept as "
                  "incomplete events) and %" PRIu64 " stop records without "
                  "their start (dropped)",
                  st.unpaired_start, st.unpaired_stop);
    if (st.clock_missing)
      ingest_warn(g, "Clock", rel, 0,
                  "%" PRIu64 " hardware events had no timestamp_sync with "
                  "their exec_id; aligned with the nearest sync of their "
                  "NeuronCore (or left in device clock when the core has "
                  "none)",
                  st.clock_missing);
  }
  struct stat sb;
  ingest_file_end(g, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
  free(cause);
  free(path);
  ingest_context_set(g, NULL, -1);
  free(instance);
}

int ingest_nrtjson_read_all(struct ing *g, char **rels, int n, bool *handled) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    if (handled[i])
      continue;
    char *path = ingest_path(g, rels[i]);
    handled[i] = fmt_nrtjson_probe(path) == 1;
    free(path);
    if (handled[i]) {
      ingest_nrtjson_file(g, rels[i]);
      count++;
    }
  }
  return count;
}
