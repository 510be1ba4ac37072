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
#include "store.h"
#include "util.h"

#include "../unit/teststore.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_API_ARGS 32

static struct app *fuzz_api_app;

/* A store of two slice tracks (1: two lanes and LOD rows, 2: one lane),
 * a counter track with LOD rows (3), a flow between the slice tracks and a
 * device profile (1). */
static void fuzz_api_store(const char *path) {
  struct store_writer *w = teststore_open(path);
  int64_t base = 1766072157000000000LL;
  struct store_track t = teststore_track("slices", "neuron_rt");
  int64_t rt = store_writer_track(w, &t);
  t.source = "neuron_hw";
  t.pcore_idx = 0;
  t.worker_gid = 0;
  int64_t hw = store_writer_track(w, &t);
  struct store_track c = teststore_track("counter", "host_cpu_util");
  c.has_pid = c.has_tid = 0;
  c.nc_idx = -1;
  c.cpu_id = "0";
  int64_t cpu = store_writer_track(w, &c);
  teststore_slices(
      w, rt,
      &(struct teststore_slices){.name = "nrt_execute",
                                 .args = "{\"exec_id\":1,\"flow_id\":[\"5\"]}",
                                 .n = 300,
                                 .lanes = 2,
                                 .lod_level = 1,
                                 .ts0 = base,
                                 .step = 1000,
                                 .dur = 1500,
                                 .id0 = 1});
  teststore_slices(w, hw,
                   &(struct teststore_slices){.name = "nc_exec_running",
                                              .args = "{\"exec_id\":1}",
                                              .n = 300,
                                              .lod_level = -1,
                                              .ts0 = base + 100,
                                              .step = 1000,
                                              .dur = 500,
                                              .id0 = 1000});
  teststore_counter(w, cpu, 300, base, 2);
  store_writer_flow(w, STORE_FLOW_BY_ID | STORE_FLOW_BY_SLICE, 5, rt, 0, base,
                    1);
  store_writer_flow(w, STORE_FLOW_BY_ID | STORE_FLOW_BY_SLICE, 5, hw, 0,
                    base + 100, 1000);
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
  teststore_finish(w);
}

/* Removes the store and its folder at exit (the replay in make check). */
static char *fuzz_api_dir, *fuzz_api_path;
/* Removes the store, the annotations file (and any journal of theirs) and
 * the directory. */
static void fuzz_api_cleanup(void) {
  DIR *d = opendir(fuzz_api_dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.') {
      char *f = xasprintf("%s/%s", fuzz_api_dir, e->d_name);
      unlink(f);
      free(f);
    }
  if (d)
    closedir(d);
  rmdir(fuzz_api_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  static char dir[] = "/tmp/nex-fuzz-api-XXXXXX";
  if (!mkdtemp(dir))
    abort();
  fuzz_api_dir = dir;
  fuzz_api_path = xasprintf("%s/store.db", dir);
  atexit(fuzz_api_cleanup);
  fuzz_api_store(fuzz_api_path);
  struct store_pool *pool;
  char *cause = NULL;
  if (store_pool_open(fuzz_api_path, 2, &pool, &cause) < 0)
    abort();
  fuzz_api_app = app_new(dir, dir);
  app_set_ready(fuzz_api_app, pool, 900, 0);
  char *notes = xasprintf("%s%s", fuzz_api_path, ANNOT_SUFFIX);
  app_set_annotations(fuzz_api_app, annot_new(notes));
  free(notes);
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
