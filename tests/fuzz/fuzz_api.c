/* fuzz_api.c -- libFuzzer target for the REST API's parameter handling:
 * every request goes through api_handle() against a small store, as the
 * HTTP layer would send it.  An answer of 500 or more aborts (a 5xx is a
 * bug: every parameter problem must be a 4xx).
 *
 * Input: text lines.  Line 1 is the path (prefixed with "/api/v1/" unless
 * it starts with '/'); a path starting with "POST ", "PATCH " or "DELETE "
 * is a request of that method whose body is everything after the first
 * empty line.  Other lines are query arguments "key=value".  Annotations
 * are written to a file beside the store.
 */
#include "annot.h"
#include "api.h"
#include "app.h"
#include "lod.h"
#include "store.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_API_ARGS 32

static struct app *fuzz_api_app;

/* A store of two slice tracks (one with two lanes and LOD rows), a
 * counter track, a flow between them and a device profile. */
static void fuzz_api_store(const char *path) {
  struct store_writer *w;
  char *cause = NULL;
  if (store_writer_open(path, &w, &cause) < 0) {
    fprintf(stderr, "fuzz_api: %s\n", cause);
    abort();
  }
  int64_t base = 1766072157000000000LL;
  int64_t exec = store_writer_intern(w, "nrt_execute");
  int64_t run = store_writer_intern(w, "nc_exec_running");
  struct store_track t = {.kind = "slices",
                          .domain = "system",
                          .source = "neuron_rt",
                          .instance_id = "i-1",
                          .pid = 10,
                          .tid = 11,
                          .has_pid = 1,
                          .has_tid = 1,
                          .nc_idx = 0,
                          .pcore_idx = -1,
                          .worker_gid = -1,
                          .stream_id = -1,
                          .device_idx = -1,
                          .hbm_idx = -1};
  int64_t rt = store_writer_track(w, &t);
  t.source = "neuron_hw";
  t.pcore_idx = 0;
  t.worker_gid = 0;
  int64_t hw = store_writer_track(w, &t);
  struct store_track c = {.kind = "counter",
                          .domain = "system",
                          .source = "host_cpu_util",
                          .instance_id = "i-1",
                          .nc_idx = -1,
                          .pcore_idx = -1,
                          .worker_gid = -1,
                          .stream_id = -1,
                          .device_idx = -1,
                          .hbm_idx = -1,
                          .cpu_id = "0"};
  int64_t cpu = store_writer_track(w, &c);
  struct lod *lod = lod_new(rt, 1);
  for (int i = 0; i < 300; i++) {
    int64_t ts = base + i * 1000;
    store_writer_slice(w, rt, i % 2, ts, i + 1, 1500, exec, 0,
                       "{\"exec_id\":1,\"flow_id\":[\"5\"]}", 29);
    lod_slice(lod, w, i % 2, ts, 1500, i + 1, exec, 0);
    store_writer_slice(w, hw, 0, ts + 100, 1000 + i, 500, run, 0,
                       "{\"exec_id\":1}", 13);
    store_writer_counter(w, cpu, 0, ts, i, (double)(i % 100));
  }
  lod_flush(lod, w);
  lod_free(lod);
  store_writer_counter_lod(w, cpu, 0, 1, base >> 8, base, 0, 99, 99, 300);
  store_writer_flow(w, 5, rt, 0, base, 1);
  store_writer_flow(w, 5, hw, 0, base + 100, 1000);
  store_writer_name_stat(w, exec, rt, 300, 450000);
  store_writer_name_stat(w, run, hw, 300, 150000);
  struct store_track_stats st = {2, 1500, 300, base, base + 300000, 1};
  store_writer_track_stats(w, rt, &st);
  st.lanes = 1;
  st.lod_min_level = -1;
  store_writer_track_stats(w, hw, &st);
  st.lanes = 0;
  store_writer_track_stats(w, cpu, &st);
  store_writer_exec(w,
                    "INSERT INTO process (instance_id, pid, name, dir) "
                    "VALUES ('i-1', 10, NULL, 'i-1_pid_10')",
                    "");
  store_writer_exec(w,
                    "INSERT INTO DeviceProfileList (device_profile_name, "
                    "instance_id, process_id, nc_id, model_id, ntff_file, "
                    "first_ts, last_ts, time_offset_ns) VALUES ('p_i-1_pid_10_"
                    "nc_0_model_7', 'i-1', 10, 0, '7', 'x.ntff', 0, 5000, ?)",
                    "i", base);
  store_writer_exec(w,
                    "INSERT INTO ExecutionInfo (device_profile_id, "
                    "execution_index, execution_start_ts, execution_end_ts, "
                    "exec_id) VALUES (1, 0, 0, 5000, 1)",
                    "");
  if (store_writer_finish(w, &cause) < 0) {
    fprintf(stderr, "fuzz_api: %s\n", cause);
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char dir[] = "/tmp/nex-fuzz-api-XXXXXX";
  if (!mkdtemp(dir))
    abort();
  char *path = xasprintf("%s/store.db", dir);
  fuzz_api_store(path);
  struct store_pool *pool;
  char *cause = NULL;
  if (store_pool_open(path, 2, &pool, &cause) < 0)
    abort();
  fuzz_api_app = app_new(dir, dir);
  app_set_ready(fuzz_api_app, pool, 900, 0);
  char *notes = xasprintf("%s%s", path, ANNOT_SUFFIX);
  app_set_annotations(fuzz_api_app, annot_new(notes));
  free(notes);
  free(path);
  return 0;
}

struct fuzz_api_args {
  char *key[FUZZ_API_ARGS], *value[FUZZ_API_ARGS];
  int n;
};

static const char *fuzz_api_arg(void *ctx, const char *key) {
  struct fuzz_api_args *a = ctx;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->key[i], key) == 0)
      return a->value[i];
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fuzz_api_app)
    LLVMFuzzerInitialize(NULL, NULL);
  char *text = xstrndup((const char *)data, size); /* stops at a NUL */
  char *body = strstr(text, "\n\n");
  if (body) {
    *body = '\0';
    body += 2;
  }
  struct fuzz_api_args args = {0};
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  const char *method = "GET";
  char *path = NULL;
  static const char *const writes[] = {"POST", "PATCH", "DELETE"};
  for (size_t i = 0; line && i < sizeof writes / sizeof writes[0]; i++) {
    size_t n = strlen(writes[i]);
    if (strncmp(line, writes[i], n) == 0 && line[n] == ' ') {
      method = writes[i];
      line += n + 1;
      break;
    }
  }
  if (line)
    path = line[0] == '/' ? xstrdup(line) : xasprintf("/api/v1/%s", line);
  else
    path = xstrdup("/api/v1/health");
  while ((line = strtok_r(NULL, "\n", &save)) && args.n < FUZZ_API_ARGS) {
    char *eq = strchr(line, '=');
    if (!eq)
      continue;
    *eq = '\0';
    args.key[args.n] = line;
    args.value[args.n++] = eq + 1;
  }
  struct api_request rq = {.method = method,
                           .path = path,
                           .arg = fuzz_api_arg,
                           .arg_ctx = &args,
                           .body = body && strcmp(method, "GET") ? body : NULL,
                           .body_len = body ? strlen(body) : 0};
  struct api_response rs = {0};
  api_handle(fuzz_api_app, &rq, &rs);
  if (rs.stream.next) {
    struct sbuf b = {0};
    for (int i = 0; i < 4 && rs.stream.next(rs.stream.ctx, &b) > 0; i++)
      sbuf_reset(&b);
    sbuf_free(&b);
  }
  if (rs.status >= 500) {
    fprintf(stderr, "fuzz_api: %s %s -> %d %.*s\n", method, path, rs.status,
            (int)(rs.len < 300 ? rs.len : 300), rs.body ? rs.body : "");
    abort();
  }
  api_response_free(&rs);
  free(path);
  free(text);
  return 0;
}
