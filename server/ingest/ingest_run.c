/* ingest_run.c -- ingest_run(): discovery, the files of each process in
 * order (system traces, framework JSON, device profiles), the standalone
 * traces, then the flow binding, the derived rows and the store's
 * metadata; and the default store path of a profile.  See ingest.h,
 * ingest_core.h and ingest_readers.h. */
#include "filter.h"
#include "ingest_core.h"
#include "ingest_readers.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The store layout this build writes (schema.sql plus the meaning of its
 * rows, e.g. LOD runs, lanes by nesting depth): a store of another version
 * is built again. */
#define INGEST_SCHEMA_VERSION "17"

static void ingest_run_read_file(struct ing *g, const char *rel,
                                 void (*fn)(struct ing *g, const char *rel)) {
  ingest_file_begin(g, rel);
  fn(g, rel);
  char *path = ingest_path(g, rel);
  struct stat sb;
  ingest_file_end(g, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
  free(path);
}

/* The JSON files read already as vendor exports or runtime dumps
 * (borrowed from the discovery). */
struct ingest_run_json {
  const char **done;
  int n;
};

/* Whether a JSON file was read already as a vendor export. */
static bool ingest_run_json_done(const struct ingest_run_json *j,
                                 const char *rel) {
  for (int i = 0; i < j->n; i++)
    if (j->done[i] == rel)
      return true;
  return false;
}

static void ingest_run_process_json(struct ing *g, const char *rel) {
  ingest_chrome_read(g, rel, ingest_context_instance(g), ingest_context_pid(g));
}

static void ingest_run_standalone_json(struct ing *g, const char *rel) {
  ingest_chrome_read(g, rel, NULL, -1);
}

/* Reads the vendor JSON exports among all JSON files first; remembers
 * them so that the Chrome reader skips them. */
static void ingest_run_vendor_json(struct ing *g,
                                   struct ingest_run_json *json) {
  const struct discover_result *d = g->d;
  int n = d->n_json;
  for (int i = 0; i < d->n_procs; i++)
    n += d->procs[i].n_json;
  char **rels = xcalloc((size_t)(n ? n : 1), sizeof *rels);
  bool *handled = xcalloc((size_t)(n ? n : 1), sizeof *handled);
  int k = 0;
  for (int i = 0; i < d->n_json; i++)
    rels[k++] = d->json[i];
  for (int i = 0; i < d->n_procs; i++)
    for (int j = 0; j < d->procs[i].n_json; j++)
      rels[k++] = d->procs[i].json[j];
  int nv = ingest_vjson_read_all(g, rels, n, handled);
  if (nv + ingest_nrtjson_read_all(g, rels, n, handled) > 0) {
    json->done = xcalloc((size_t)n, sizeof *json->done);
    for (int i = 0; i < n; i++)
      if (handled[i])
        json->done[json->n++] = rels[i];
  }
  free(rels);
  free(handled);
}

static void ingest_run_profile(struct ing *g, const struct discover_process *p,
                               const struct ingest_run_json *j,
                               const char *profile_base) {
  char *instance = NULL;
  int64_t pid = p->pid;
  bool system = p->trace_info && !g->o->ignore_system;
  if (system) {
    ingest_file_begin(g, p->trace_info);
    bool keep = ingest_system_trace_info(g, p, &instance, &pid);
    ingest_file_end(g, 0);
    if (!keep) {
      free(instance);
      return;
    }
  } else {
    instance = xstrdup(*p->instance_id ? p->instance_id : profile_base);
    if (!filter_keep_instance(g->o->filter, instance)) {
      free(instance);
      return;
    }
  }
  if (pid < 0)
    pid = 0;
  ingest_context_set(g, instance, pid);
  size_t tracks_before = g->tn;
  ingest_process(g, instance, pid, NULL, p->rel);
  if (!g->o->ignore_system) {
    if (p->ntrace)
      ingest_run_read_file(g, p->ntrace, ingest_system_ntrace);
    if (p->cpu_util)
      ingest_run_read_file(g, p->cpu_util, ingest_system_cpu_util);
    if (p->host_mem)
      ingest_run_read_file(g, p->host_mem, ingest_system_host_mem);
    for (int i = 0; i < p->n_json; i++)
      if (!ingest_run_json_done(j, p->json[i]))
        ingest_run_read_file(g, p->json[i], ingest_run_process_json);
  }
  if (!g->o->ignore_device)
    for (int i = 0; i < p->n_devices; i++) {
      ingest_file_begin(g, p->devices[i].ntff);
      ingest_device_read(g, &p->devices[i], profile_base);
      ingest_file_end(g, p->devices[i].size);
    }
  ingest_drain_tracks(g, tracks_before);
  ingest_stats_flush(g);
  ingest_context_set(g, NULL, ingest_context_pid(g));
  free(instance);
}

static void ingest_run_info(struct ing *g, const char *key, const char *value) {
  store_writer_exec(g->w, "INSERT OR REPLACE INTO store_info VALUES (?, ?)",
                    "tt", key, value);
}

int ingest_run(const struct ingest_opts *o, struct ingest_stats *st,
               char **cause) {
  memset(st, 0, sizeof *st);
  int64_t t0 = util_now_ns();
  struct discover_result *d;
  int rc = discover_run(o->dir, &d, cause);
  if (rc < 0)
    return rc;
  char fp[17];
  {
    struct sbuf b = {0};
    sbuf_printf(&b, "schema-%s|%s|%s|dev=%d|sys=%d", INGEST_SCHEMA_VERSION,
                d->fingerprint, filter_describe(o->filter), o->ignore_device,
                o->ignore_system);
    snprintf(fp, sizeof fp, "%016llx",
             (unsigned long long)util_hash(b.s, b.len));
    sbuf_free(&b);
  }
  if (!o->force &&
      store_is_current(o->db_path, fp, &st->events, &st->warnings)) {
    st->reused = 1;
    st->seconds = (double)(util_now_ns() - t0) / 1e9;
    discover_free(d);
    return 0;
  }
  struct store_writer *w;
  rc = store_writer_open(o->db_path, &w, cause);
  if (rc < 0) {
    discover_free(d);
    return rc;
  }
  struct ing *g = ingest_sink_open(o, w, d, st, t0);
  struct ingest_run_json json = {0};
  for (int i = 0; i < d->n_messages; i++) { /* what discovery left out */
    st->skipped++;
    ingest_warn(g, "Missing Data", NULL, 0, "%s", d->messages[i]);
  }
  char *base = ingest_profile_base(o->dir);
  if (!o->ignore_system)
    ingest_run_vendor_json(g, &json);
  for (int i = 0; i < d->n_procs; i++)
    ingest_run_profile(g, &d->procs[i], &json, base);
  if (!o->ignore_system) {
    ingest_context_set(g, NULL, -1);
    for (int i = 0; i < d->n_json; i++)
      if (!ingest_run_json_done(&json, d->json[i]))
        ingest_run_read_file(g, d->json[i], ingest_run_standalone_json);
    for (int i = 0; i < d->n_perfetto; i++)
      ingest_run_read_file(g, d->perfetto[i], ingest_perfetto_read);
  }
  int64_t t1 = util_now_ns();
  ingest_system_rates(g);
  size_t done = ingest_finish_tracks(g, 0);
  int64_t t2 = util_now_ns();
  size_t endpoints = 0;
  rc = ingest_chrome_bind_flows(g, &endpoints);
  if (rc < 0 && !g->failed)
    g->failed = rc;
  if ((rc = ingest_flows_flush(g)) < 0 && !g->failed)
    g->failed = rc;
  if (g->failed) {
    /* our own spill file could not be read back (a disk error): no store
     * rather than one missing events; a store being served stays */
    *cause = xasprintf("cannot read back the temporary spill file beside "
                       "%s: %s",
                       o->db_path, strerror(-g->failed));
    rc = g->failed;
    ingest_sink_close(g);
    free(json.done);
    discover_free(d);
    free(base);
    store_writer_abort(w);
    st->seconds = (double)(util_now_ns() - t0) / 1e9;
    return rc;
  }
  st->rates_scanned = (uint64_t)ingest_system_derived(g);
  ingest_finish_tracks(g, done);
  int64_t t3 = util_now_ns();
  log_debug("ingest: read %.2f s, tracks %.2f s, derived %.2f s (rate "
            "counters scanned: %" PRIu64 ")",
            (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9,
            (double)(t3 - t2) / 1e9, st->rates_scanned);
  ingest_stats_flush(g);
  char *real = realpath(o->dir, NULL);
  ingest_run_info(g, "schema_version", INGEST_SCHEMA_VERSION);
  ingest_run_info(g, "fingerprint", fp);
  ingest_run_info(g, "dir", real ? real : o->dir);
  ingest_run_info(g, "profile_name", base);
  char nflows[24];
  snprintf(nflows, sizeof nflows, "%zu", endpoints);
  ingest_run_info(g, "chrome_flow_endpoints", nflows);
  free(real);
  free(base);
  ingest_progress(g, true);
  if (g->bar_drawn)
    fputc('\n', stderr);
  if (g->warned_stderr > INGEST_STDERR_WARNINGS)
    log_warn("%" PRIu64 " more warnings: see the Warning table",
             g->warned_stderr - INGEST_STDERR_WARNINGS);
  ingest_sink_close(g);
  free(json.done);
  discover_free(d);
  int64_t t4 = util_now_ns();
  rc = store_writer_finish(w, cause);
  log_debug("ingest: finish %.2f s", (double)(util_now_ns() - t4) / 1e9);
  st->seconds = (double)(util_now_ns() - t0) / 1e9;
  return rc;
}

char *ingest_default_db_path(const char *dir, char **cause) {
  char *real = realpath(dir, NULL);
  if (!real) {
    *cause = xasprintf("cannot resolve --dir %s: %s", dir, strerror(errno));
    return NULL;
  }
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  char *base = xdg && *xdg ? xasprintf("%s/neuron-explorer-server", xdg)
               : home && *home
                   ? xasprintf("%s/.cache/neuron-explorer-server", home)
                   : xstrdup("/tmp/neuron-explorer-server");
  char *parent = xstrndup(base, (size_t)(strrchr(base, '/') - base));
  mkdir(parent, 0700);
  free(parent);
  if (mkdir(base, 0700) != 0 && errno != EEXIST) {
    *cause = xasprintf("cannot create cache folder %s: %s (use --db)", base,
                       strerror(errno));
    free(base);
    free(real);
    return NULL;
  }
  char *path = xasprintf("%s/%016llx.db", base,
                         (unsigned long long)util_hash(real, strlen(real)));
  free(base);
  free(real);
  return path;
}
