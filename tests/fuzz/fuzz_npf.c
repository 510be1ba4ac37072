/* fuzz_npf.c -- libFuzzer target of the Neuron mapping of Perfetto
 * exports: a system export and a device export written into a directory
 * of their own and ingested (ingest_run: discovery, the Perfetto decoder,
 * the Neuron naming and arguments, the device drill-down, the store).
 *
 * Input: a 4-byte little-endian length S, then S bytes written as
 * system_profile.pftrace (fewer if the input is shorter); what follows, if
 * it holds a NUL, is a file name up to the NUL (a '/' in it becomes '_')
 * and the bytes of that device export after it (the name is prefixed with
 * "device_profile_model_" unless it starts so, and given ".pftrace"
 * unless it ends so).  tests/data/npf-fuzz/README.md says how its seeds
 * were made.
 *
 * Aborts when the ingest does not build a store (bad input must become
 * Warning rows), or when the store holds a slice of negative duration, an
 * args text that is not a JSON object, a slice or sample on a track that
 * does not exist, or a Warning row without a message.
 *
 * Also linked into test_npf_seeds, which replays tests/data/npf-fuzz/ and
 * the inputs kept in tests/data/regress/ whose names start with "npf-".
 */
#include "filter.h"
#include "fuzz_fmt.h"
#include "ingest.h"
#include "log.h"
#include "store_vtab.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_NPF_PREFIX "device_profile_model_"
#define FUZZ_NPF_SUFFIX ".pftrace"
#define FUZZ_NPF_NAME 200 /* bytes of a device file name kept */

struct fuzz_npf_counts fuzz_npf_last;

/* The folder holding the input's directory and store (made once). */
static char fuzz_npf_base[4096];

static void fuzz_npf_write(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    abort();
  fuzz_fmt_write_all(fd, p, n);
  close(fd);
}

/* The device file name of the input's name bytes name[0, n). */
static char *fuzz_npf_dev_name(const uint8_t *name, size_t n) {
  if (n > FUZZ_NPF_NAME)
    n = FUZZ_NPF_NAME;
  char *s = xstrndup((const char *)name, n);
  for (char *c = s; *c; c++)
    if (*c == '/')
      *c = '_';
  size_t len = strlen(s), sl = strlen(FUZZ_NPF_SUFFIX);
  bool prefixed = strncmp(s, FUZZ_NPF_PREFIX, strlen(FUZZ_NPF_PREFIX)) == 0;
  bool suffixed = len >= sl && strcmp(s + len - sl, FUZZ_NPF_SUFFIX) == 0;
  char *full =
      xasprintf("%s/in/%s%s%s", fuzz_npf_base, prefixed ? "" : FUZZ_NPF_PREFIX,
                s, suffixed ? "" : FUZZ_NPF_SUFFIX);
  free(s);
  return full;
}

/* The first integer the query `sql` answers on db. */
static int64_t fuzz_npf_count(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW)
    abort();
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Aborts unless the store at path holds what the header promises; sets
 * fuzz_npf_last. */
static void fuzz_npf_check(const char *path) {
  sqlite3 *db;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
      store_vtab_register(db) != SQLITE_OK)
    abort();
  static const char *const bad[] = {
      "SELECT count(*) FROM slice WHERE dur < 0",
      "SELECT count(*) FROM slice WHERE args IS NOT NULL AND "
      "(NOT json_valid(args) OR json_type(args) != 'object')",
      "SELECT count(*) FROM slice WHERE track NOT IN (SELECT id FROM track)",
      "SELECT count(*) FROM counter WHERE track NOT IN (SELECT id FROM "
      "track)",
      "SELECT count(*) FROM Warning WHERE message IS NULL OR message = ''",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (fuzz_npf_count(db, bad[i]) != 0) {
      fprintf(stderr, "fuzz_npf: the store breaks: %s\n", bad[i]);
      abort();
    }
  fuzz_npf_last = (struct fuzz_npf_counts){
      .slices = fuzz_npf_count(db, "SELECT count(*) FROM slice"),
      .samples = fuzz_npf_count(db, "SELECT count(*) FROM counter"),
      .warnings = fuzz_npf_count(db, "SELECT count(*) FROM Warning"),
      .devices = fuzz_npf_count(db, "SELECT count(*) FROM DeviceProfileList"),
      .instructions = fuzz_npf_count(db, "SELECT count(*) FROM Instruction")};
  sqlite3_close(db);
}

/* Makes the base folder (TMPDIR or /tmp) once; it is left behind empty. */
static void fuzz_npf_init(void) {
  if (fuzz_npf_base[0])
    return;
  const char *tmp = getenv("TMPDIR");
  snprintf(fuzz_npf_base, sizeof fuzz_npf_base, "%s/fuzz_npf.XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(fuzz_npf_base))
    abort();
  log_set_level(LOG_ERROR); /* the inputs' warnings are expected */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_npf_init();
  if (size < 4)
    return 0;
  size_t n = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
             (size_t)data[3] << 24;
  data += 4;
  size -= 4;
  if (n > size)
    n = size;
  char *dir = xasprintf("%s/in", fuzz_npf_base);
  char *sys = xasprintf("%s/system_profile.pftrace", dir);
  char *db = xasprintf("%s/store.db", fuzz_npf_base);
  char *dev = NULL;
  if (mkdir(dir, 0755) < 0)
    abort();
  fuzz_npf_write(sys, data, n);
  const uint8_t *nul = memchr(data + n, '\0', size - n);
  if (nul) {
    dev = fuzz_npf_dev_name(data + n, (size_t)(nul - (data + n)));
    fuzz_npf_write(dev, nul + 1, size - (size_t)(nul + 1 - data));
  }
  struct filter *f = filter_new();
  struct ingest_opts o = {.dir = dir, .db_path = db, .filter = f, .force = 1};
  struct ingest_stats st;
  char *cause = NULL;
  int rc = ingest_run(&o, &st, &cause);
  if (rc != 0) {
    fprintf(stderr, "fuzz_npf: no store: %s\n", cause ? cause : "(no cause)");
    abort();
  }
  fuzz_npf_check(db);
  filter_free(f);
  if (unlink(sys) < 0 || (dev && unlink(dev) < 0) || rmdir(dir) < 0 ||
      unlink(db) < 0)
    abort();
  free(dev);
  free(db);
  free(sys);
  free(dir);
  return 0;
}
