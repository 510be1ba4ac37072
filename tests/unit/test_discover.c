/* test_discover.c -- profile directory layouts: the timestamp level, file
 * roles, NEFF<->NTFF pairing, session NTFFs, folders without metadata,
 * standalone Chrome traces, and the fingerprint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "discover.h"
#include "util.h"

static char root[256];

/* Creates root/rel (and its folders) holding `size` bytes. */
static void touch(const char *rel, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (size_t i = 0; i < size; i++)
    fputc('x', f);
  fclose(f);
}

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "%s/nex-discover-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(root));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  return system(cmd);
}

static const struct discover_process *proc(const struct discover_result *r,
                                           const char *rel) {
  for (int i = 0; i < r->n_procs; i++)
    if (strcmp(r->procs[i].rel, rel) == 0)
      return &r->procs[i];
  fail_msg("no process folder %s", rel);
  return NULL;
}

static void test_model_mode_flat(void **state) {
  (void)state;
  const char *p = "i-0b1ea78ca2865fd32_pid_1765325";
  char rel[256];
  const char *files[] = {"trace_info.pb", "ntrace.pb", "cpu_util.pb",
                         "host_mem.pb", "trace.json",
                         "neff_605291374318702.neff",
                         "605291374318702_instid_0_vnc_0.ntff",
                         "605291374318702_instid_0_vnc_1.ntff",
                         "307444798579300_vnc_2.ntff",
                         "neff_307444798579300_vnc_2.neff"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    snprintf(rel, sizeof rel, "%s/%s", p, files[i]);
    touch(rel, 10);
  }
  struct discover_result *r;
  char *cause = NULL;
  assert_int_equal(discover_run(root, &r, &cause), 0);
  assert_int_equal(r->n_procs, 1);
  const struct discover_process *dp = proc(r, p);
  assert_string_equal(dp->instance_id, "i-0b1ea78ca2865fd32");
  assert_int_equal(dp->pid, 1765325);
  assert_string_equal(dp->trace_info, "i-0b1ea78ca2865fd32_pid_1765325/trace_info.pb");
  assert_non_null(dp->ntrace);
  assert_non_null(dp->cpu_util);
  assert_non_null(dp->host_mem);
  assert_int_equal(dp->n_json, 1);
  assert_int_equal(dp->n_devices, 3);
  int paired = 0;
  for (int i = 0; i < dp->n_devices; i++) {
    const struct discover_device *d = &dp->devices[i];
    assert_int_equal(d->mode, DISCOVER_MODEL);
    assert_non_null(d->neff);
    if (d->hash == 605291374318702ULL) {
      assert_string_equal(d->neff, "i-0b1ea78ca2865fd32_pid_1765325/neff_605291374318702.neff");
      paired++;
    } else {
      assert_int_equal(d->hash, 307444798579300ULL);
      assert_int_equal(d->nc, 2);
      assert_string_equal(d->neff, "i-0b1ea78ca2865fd32_pid_1765325/neff_307444798579300_vnc_2.neff");
    }
  }
  assert_int_equal(paired, 2);
  assert_int_equal(r->n_messages, 0);
  assert_int_equal(r->n_files, 8); /* NEFFs are headers only: not counted */
  assert_int_equal(r->total_bytes, 80);
  discover_free(r);
}

static void test_session_mode_timestamp_level(void **state) {
  (void)state;
  touch("i-012590440bb9fd263_pid_98399/20251218T153556/trace_info.pb", 1);
  touch("i-012590440bb9fd263_pid_98399/20251218T153556/ntrace.pb", 1);
  touch("i-012590440bb9fd263_pid_98399/20251218T153556/profile_nc_3_session_7.ntff", 0);
  touch("i-012590440bb9fd263_pid_98399/20251218T153556/plugins/profile/x/host.trace.json.gz", 1);
  touch("neffs/graph_1234.neff", 1);
  touch("i-012590440bb9fd263_pid_98400/20251218T153556/1234_vnc_0.ntff", 1);
  struct discover_result *r;
  char *cause = NULL;
  assert_int_equal(discover_run(root, &r, &cause), 0);
  assert_int_equal(r->n_procs, 2);
  const struct discover_process *a =
      proc(r, "i-012590440bb9fd263_pid_98399/20251218T153556");
  assert_int_equal(a->pid, 98399);
  assert_non_null(a->trace_info);
  assert_int_equal(a->n_json, 1);
  assert_int_equal(a->n_devices, 1);
  assert_int_equal(a->devices[0].mode, DISCOVER_SESSION);
  assert_int_equal(a->devices[0].nc, 3);
  assert_int_equal(a->devices[0].session, 7);
  assert_int_equal(a->devices[0].size, 0); /* an empty NTFF is listed */
  const struct discover_process *b =
      proc(r, "i-012590440bb9fd263_pid_98400/20251218T153556");
  assert_null(b->trace_info);
  assert_int_equal(b->n_devices, 1);
  assert_string_equal(b->devices[0].neff, "neffs/graph_1234.neff"); /* sibling */
  assert_int_equal(r->n_neffs, 1);
  discover_free(r);
}

static void test_no_metadata_message(void **state) {
  (void)state;
  touch("i-0aa_pid_1/ntrace.pb", 5);
  touch("i-0aa_pid_1/cpu_util.pb", 5);
  touch("i-0aa_pid_2/trace_info.pb", 5);
  touch("i-0aa_pid_2/ntrace.pb", 5);
  touch("rank_3.trace.json", 5);
  touch("notes.txt", 5);
  touch("store.db", 5); /* a store inside the profile is not profile data */
  struct discover_result *r;
  char *cause = NULL;
  assert_int_equal(discover_run(root, &r, &cause), 0);
  assert_int_equal(r->n_messages, 2);
  assert_string_equal(r->messages[0],
                      "Skipped notes.txt: not a profile file this server reads");
  assert_string_equal(r->messages[1],
                      "No metadata found for system profile: i-0aa_pid_1");
  assert_null(proc(r, "i-0aa_pid_1")->ntrace);
  assert_null(proc(r, "i-0aa_pid_1")->cpu_util);
  assert_non_null(proc(r, "i-0aa_pid_2")->ntrace);
  assert_int_equal(r->n_json, 1);
  assert_string_equal(r->json[0], "rank_3.trace.json");
  discover_free(r);
}

/* Links are followed, loops and special files are named, never silent. */
static void test_links_and_special_files(void **state) {
  (void)state;
  touch("real/trace.json", 5);
  touch("i-0aa_pid_1/trace_info.pb", 5);
  char *p = xasprintf("%s/i-0aa_pid_1/ntrace.pb", root);
  char *t = xasprintf("%s/real/trace.json", root);
  char *l = xasprintf("%s/linked.json", root);
  char *loop = xasprintf("%s/real/back", root);
  char *dangling = xasprintf("%s/gone.json", root);
  char *fifo = xasprintf("%s/i-0aa_pid_1/pipe.json", root);
  char *ntrace_link = xasprintf("%s/i-0aa_pid_1/ntrace.pb", root);
  free(p);
  assert_int_equal(symlink(t, l), 0);
  assert_int_equal(symlink(root, loop), 0);
  assert_int_equal(symlink("/nonexistent/x.json", dangling), 0);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  touch("elsewhere/ntrace.pb", 7);
  char *target = xasprintf("%s/elsewhere/ntrace.pb", root);
  assert_int_equal(symlink(target, ntrace_link), 0);
  struct discover_result *r;
  char *cause = NULL;
  assert_int_equal(discover_run(root, &r, &cause), 0);
  /* the linked trace and the real one; the linked ntrace.pb is read */
  assert_int_equal(r->n_json, 2);
  assert_string_equal(r->json[0], "linked.json");
  assert_string_equal(r->json[1], "real/trace.json");
  assert_string_equal(proc(r, "i-0aa_pid_1")->ntrace, "i-0aa_pid_1/ntrace.pb");
  const char *want[] = {
      "Skipped gone.json: broken symbolic link",
      "Skipped elsewhere/ntrace.pb: system capture files belong in an "
      "<instance-id>_pid_<pid> folder",
      "Skipped i-0aa_pid_1/pipe.json: a FIFO",
      "Skipped real/back: symbolic link loop",
  };
  int found = 0;
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    for (int j = 0; j < r->n_messages; j++)
      if (strcmp(r->messages[j], want[i]) == 0)
        found++;
  for (int j = 0; j < r->n_messages; j++)
    print_message("# %s\n", r->messages[j]);
  assert_int_equal(r->n_messages, 4);
  assert_int_equal(found, 4);
  discover_free(r);
  free(t), free(l), free(loop), free(dangling), free(fifo), free(ntrace_link);
  free(target);
}

static void test_fingerprint(void **state) {
  (void)state;
  touch("i-1_pid_1/trace_info.pb", 5);
  struct discover_result *a, *b, *c, *d;
  char *cause = NULL;
  assert_int_equal(discover_run(root, &a, &cause), 0);
  assert_int_equal(discover_run(root, &b, &cause), 0);
  assert_string_equal(a->fingerprint, b->fingerprint);
  touch("i-1_pid_1/x.db", 3); /* stores do not change it */
  assert_int_equal(discover_run(root, &d, &cause), 0);
  assert_string_equal(a->fingerprint, d->fingerprint);
  touch("i-1_pid_1/ntrace.pb", 1);
  assert_int_equal(discover_run(root, &c, &cause), 0);
  assert_string_not_equal(a->fingerprint, c->fingerprint);
  discover_free(a);
  discover_free(b);
  discover_free(c);
  discover_free(d);
}

static void test_missing_dir(void **state) {
  (void)state;
  struct discover_result *r = NULL;
  char *cause = NULL;
  char path[300];
  snprintf(path, sizeof path, "%s/nope", root);
  assert_int_equal(discover_run(path, &r, &cause), -ENOENT);
  assert_non_null(strstr(cause, "nope"));
  free(cause);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_model_mode_flat, setup, teardown),
      cmocka_unit_test_setup_teardown(test_session_mode_timestamp_level, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_metadata_message, setup, teardown),
      cmocka_unit_test_setup_teardown(test_links_and_special_files, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_fingerprint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_dir, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
