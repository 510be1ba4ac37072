/* test_fmt_chrome.c -- the Chrome Trace Event Format decoder
 * (server/fmt_chrome.c).
 *
 * The public traces of the shared traces directory (NEX_SHARED_TRACES, else
 * $NEX_SRCDIR/../shared/traces; missing = failure) are decoded and their
 * counts compared with those computed independently by
 * tests/unit/chrome_counts.py.  The hand-made files of tests/data/chrome/
 * are decoded to an exact log of records; generated files cover gzip, the
 * window refills of big files and the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_chrome.h"
#include "fmt_chrome_pipe.h"
#include "fmt_chrome_tail.h"
#include "jval.h"
#include "testutil.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char *data_path(const char *name) {
  return testutil_srcpath("tests/data/chrome/%s", name);
}

/* Writes s as a gzip file made of `members` concatenated gzip members. */
static void write_gz(const char *path, const char *s, size_t n, int members) {
  size_t at = 0;
  for (int m = 0; m < members; m++) {
    size_t part = m == members - 1 ? n - at : n / (size_t)members;
    gzFile g = gzopen(path, m ? "ab1" : "wb1");
    assert_non_null(g);
    while (part > 0) {
      unsigned chunk = part > (1u << 30) ? 1u << 30 : (unsigned)part;
      assert_int_equal(gzwrite(g, s + at, chunk), (int)chunk);
      at += chunk;
      part -= chunk;
    }
    assert_int_equal(gzclose(g), Z_OK);
  }
}

/* ------------------------------------------------------------ recorder */

/* Collects what the decoder reports: a text log (one line per record) or
 * only its hash, the counts, and the pids and (pid, tid) pairs seen. */
struct rec {
  int keep_log;
  struct sbuf log;
  uint64_t hash;
  const char *file; /* the file's bytes, to check offsets; may be NULL */
  size_t file_len;
  long slices, instants, incomplete, async, counters, flows[3], meta, warns;
  char **procs, **threads;
  size_t nprocs, nthreads, cap_procs, cap_threads;
  long stop_at; /* slice callback returns 7 at this slice (1-based) */
  int no_sets;  /* do not collect pids and (pid, tid) pairs */
};

static void rec_line(struct rec *r, const char *line) {
  if (r->keep_log) {
    sbuf_adds(&r->log, line);
    sbuf_addc(&r->log, '\n');
  }
  r->hash = (r->hash ^ util_hash(line, strlen(line))) * 1099511628211ULL;
}

static void rec_add(char ***v, size_t *n, size_t *cap, char *s) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    *v = xrealloc(*v, *cap * sizeof **v);
  }
  (*v)[(*n)++] = s;
}

static void rec_proc(struct rec *r, const char *pid) {
  if (!r->no_sets)
    rec_add(&r->procs, &r->nprocs, &r->cap_procs, xstrdup(pid));
}

static void rec_thread(struct rec *r, const char *pid, const char *tid) {
  rec_proc(r, pid);
  if (r->no_sets)
    return;
  char *k = xmalloc(strlen(pid) + strlen(tid) + 2);
  sprintf(k, "%s%c%s", pid, 1, tid);
  rec_add(&r->threads, &r->nthreads, &r->cap_threads, k);
}

/* An offset must name the '{' of an event of the file. */
static void rec_check_offset(struct rec *r, uint64_t off, const char *name) {
  if (!r->file)
    return;
  assert_true(off < r->file_len);
  assert_int_equal(r->file[off], '{');
  int plain = *name != '\0';
  for (const char *c = name; *c; c++)
    plain &= *c > 0x20 && *c < 0x7f && *c != '"' && *c != '\\';
  if (plain) { /* the name is written in that event */
    const char *eol = memchr(r->file + off, '\n', r->file_len - off);
    size_t n = eol ? (size_t)(eol - r->file - off) : r->file_len - off;
    char *ev = xstrndup(r->file + off, n);
    assert_non_null(strstr(ev, name));
    free(ev);
  }
}

static int rec_slice(void *ud, const struct fmt_chrome_slice *s) {
  struct rec *r = ud;
  char fl[5], *p = fl, *ids, *line;
  struct sbuf b = {0};
  if (s->instant)
    *p++ = 'i';
  if (s->incomplete)
    *p++ = 'c';
  if (s->async)
    *p++ = 'a';
  if (p == fl)
    *p++ = '-';
  *p = '\0';
  for (size_t i = 0; i < s->n_flow_ids; i++)
    sbuf_printf(&b, "%s%llu", i ? "," : "", (unsigned long long)s->flow_ids[i]);
  ids = b.s ? b.s : xstrdup("");
  assert_non_null(s->name);
  assert_non_null(s->pid);
  assert_non_null(s->tid);
  assert_true(s->dur_ns >= 0);
  line = xasprintf("S|%s|%s|%s|%s|%lld|%lld|%s|%s|%s", s->name,
                   s->cat ? s->cat : "(null)", s->pid, s->tid,
                   (long long)s->ts_ns, (long long)s->dur_ns, fl,
                   s->args_json ? s->args_json : "(null)", ids);
  rec_line(r, line);
  free(line);
  free(ids);
  rec_check_offset(r, s->offset, s->name);
  if (s->incomplete)
    r->incomplete++;
  else if (s->instant)
    r->instants++;
  else
    r->slices++;
  if (s->async) {
    r->async++;
    rec_proc(r, s->pid);
  } else {
    rec_thread(r, s->pid, s->tid);
  }
  return r->stop_at && r->slices + r->instants + r->incomplete == r->stop_at
             ? 7
             : 0;
}

static int rec_counter(void *ud, const struct fmt_chrome_counter *c) {
  struct rec *r = ud;
  char *line = xasprintf("C|%s|%s|%s|%lld|%.17g", c->pid, c->name, c->series,
                         (long long)c->ts_ns, c->value);
  rec_line(r, line);
  free(line);
  rec_check_offset(r, c->offset, "");
  r->counters++;
  rec_proc(r, c->pid);
  return 0;
}

static int rec_flow(void *ud, const struct fmt_chrome_flow *f) {
  struct rec *r = ud;
  char *line = xasprintf("F|%c|%s|%s|%s|%lld|%d", f->phase, f->id, f->pid,
                         f->tid, (long long)f->ts_ns, f->enclosing);
  rec_line(r, line);
  free(line);
  rec_check_offset(r, f->offset, "");
  assert_non_null(strchr("stf", f->phase));
  r->flows[f->phase == 's' ? 0 : f->phase == 't' ? 1 : 2]++;
  rec_thread(r, f->pid, f->tid);
  return 0;
}

static int rec_meta(void *ud, const struct fmt_chrome_meta *m) {
  struct rec *r = ud;
  char *line = xasprintf("M|%s|%s|%s|%s", m->kind, m->pid,
                         m->tid ? m->tid : "(null)", m->value);
  rec_line(r, line);
  free(line);
  r->meta++;
  if (m->tid)
    rec_thread(r, m->pid, m->tid);
  else
    rec_proc(r, m->pid);
  return 0;
}

static void rec_warning(void *ud, uint64_t offset, const char *msg) {
  struct rec *r = ud;
  char *line = xasprintf("W|%llu|%s", (unsigned long long)offset, msg);
  rec_line(r, line);
  free(line);
  r->warns++;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Number of distinct strings of v (sorts v). */
static size_t distinct(char **v, size_t n) {
  size_t d = 0;
  if (!n)
    return 0;
  qsort(v, n, sizeof *v, str_cmp);
  for (size_t i = 0; i < n; i++)
    d += i == 0 || strcmp(v[i], v[i - 1]) != 0;
  return d;
}

static void rec_free(struct rec *r) {
  for (size_t i = 0; i < r->nprocs; i++)
    free(r->procs[i]);
  for (size_t i = 0; i < r->nthreads; i++)
    free(r->threads[i]);
  free(r->procs);
  free(r->threads);
  sbuf_free(&r->log);
}

/* Decodes path into r; returns what fmt_chrome_read returned. */
static int decode(const char *path, struct rec *r,
                  struct fmt_chrome_stats *st) {
  struct fmt_chrome_cb cb = {r,        rec_slice, rec_counter,
                             rec_flow, rec_meta,  rec_warning};
  char *cause = NULL;
  int rc = fmt_chrome_read(path, &cb, st, &cause);
  return testutil_cause(rc, cause);
}

/* Expected log lines may say "W|@<marker>|message": the offset is that of
 * <marker> in the file.  A line ending in '*' matches any line with that
 * prefix. */
static void expect_log(const char *file, const char *log,
                       const char *const *lines) {
  const char *at = log;
  int ok = 1;
  size_t i;
  for (i = 0; lines[i]; i++) {
    char *want = xstrdup(lines[i]);
    if (!strncmp(want, "W|@", 3)) {
      char *bar = strchr(want + 3, '|');
      assert_non_null(bar);
      *bar = '\0';
      const char *m = strstr(file, want + 3);
      assert_non_null(m);
      char *w = xasprintf("W|%ld|%s", (long)(m - file), bar + 1);
      free(want);
      want = w;
    }
    const char *eol = strchr(at, '\n');
    size_t n = strlen(want);
    int prefix = n && want[n - 1] == '*';
    size_t got = eol ? (size_t)(eol - at) : strlen(at);
    int same = prefix ? got >= n - 1 && !memcmp(at, want, n - 1)
                      : got == n && !memcmp(at, want, n);
    if (!same) {
      print_error("line %zu: expected\n  %s\ngot\n  %.*s\n", i + 1, want,
                  (int)got, at);
      ok = 0;
    }
    free(want);
    if (!eol) {
      i++;
      break;
    }
    at = eol + 1;
  }
  if (*at || lines[i]) {
    print_error("log has %s lines than expected; full log:\n%s\n",
                *at ? "more" : "fewer", log);
    ok = 0;
  }
  assert_true(ok);
}

/* Decodes tests/data/chrome/<name> and checks the exact log and stats. */
static void check_file(const char *name, const char *const *lines,
                       unsigned long long events, unsigned long long skipped,
                       struct fmt_chrome_stats *st_out) {
  char *path = data_path(name);
  size_t len;
  char *file = testutil_slurp(path, &len);
  struct rec r = {.keep_log = 1, .file = file, .file_len = len};
  struct fmt_chrome_stats st;
  assert_int_equal(decode(path, &r, &st), 0);
  expect_log(file, r.log.s ? r.log.s : "", lines);
  assert_int_equal(st.events, events);
  assert_int_equal(st.skipped, skipped);
  assert_int_equal(st.bytes, len);
  if (st_out)
    *st_out = st;
  rec_free(&r);
  free(file);
  free(path);
}

/* ------------------------------------------------------------ public traces */

/* Decodes path and compares the counts with those chrome_counts.py
 * computes from the same file; r gets the records. */
static void compare_counts(const char *path, struct rec *r) {
  char *script = testutil_srcpath("tests/unit/chrome_counts.py");
  char *cmd = xasprintf("python3 '%s' '%s'", script, path);
  char key[64];
  long long want;
  int keys = 0;
  struct fmt_chrome_stats st;
  assert_int_equal(decode(path, r, &st), 0);
  long long got[] = {(long long)st.events,
                     (long long)st.skipped,
                     r->slices,
                     r->instants,
                     r->incomplete,
                     r->async,
                     r->counters,
                     r->flows[0],
                     r->flows[1],
                     r->flows[2],
                     r->meta,
                     (long long)distinct(r->procs, r->nprocs),
                     (long long)distinct(r->threads, r->nthreads)};
  static const char *const names[] = {
      "events", "skipped",   "slices", "instants", "incomplete",
      "async",  "counters",  "flow_s", "flow_t",   "flow_f",
      "meta",   "processes", "threads"};
  FILE *py = popen(cmd, "r");
  assert_non_null(py);
  while (fscanf(py, "%63s %lld", key, &want) == 2) {
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      if (strcmp(key, names[i]))
        continue;
      keys++;
      if (got[i] != want)
        print_error("%s: %s: decoder %lld, chrome_counts.py %lld\n", path, key,
                    got[i], want);
      assert_int_equal(got[i], want);
    }
  }
  assert_int_equal(pclose(py), 0);
  assert_int_equal(keys, sizeof names / sizeof names[0]);
  assert_true(st.events > 0);
  assert_int_equal(r->warns, (long)st.skipped);
  free(cmd);
  free(script);
}

static void test_shared_traces(void **state) {
  const char *env = getenv("NEX_SHARED_TRACES");
  char *dir = env ? xstrdup(env) : testutil_srcpath("../shared/traces");
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (!d)
    print_error("shared traces directory %s: %s\n", dir, strerror(errno));
  assert_non_null(d);
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (!(l > 5 && !strcmp(e->d_name + l - 5, ".json")) &&
        !(l > 8 && !strcmp(e->d_name + l - 8, ".json.gz")))
      continue;
    char *path = xasprintf("%s/%s", dir, e->d_name);
    char rank[64];
    struct rec r = {0};
    n++;
    compare_counts(path, &r);
    assert_int_equal(fmt_chrome_probe(path, rank, sizeof rank), 1);
    printf("# %s: %ld slices, %ld flow endpoints: as counted\n", e->d_name,
           r.slices + r.instants, r.flows[0] + r.flows[1] + r.flows[2]);
    rec_free(&r);
    free(path);
  }
  closedir(d);
  assert_true(n >= 6); /* the README of the directory lists six traces */
  free(dir);
}

/* Interleaved B/E on a few threads and b/e/n, S/F on many ids, with
 * unmatched ends and never-ended begins, from a fixed pseudo-random
 * sequence: the matching (and the map's deletes) against the counter. */
static void test_random_matching(void **state) {
  char *path = testutil_path("random.json");
  FILE *f = fopen(path, "w");
  uint64_t x = 88172645463325252ULL;
  struct rec r = {0};
  assert_non_null(f);
  fputs("[\n", f);
  for (int i = 0; i < 40000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    static const char ph[] = "BEBEEbebenSFFSTX";
    char p = ph[x % 16];
    unsigned id = (unsigned)(x >> 8) % 3000, tid = (unsigned)(x >> 20) % 5;
    fprintf(f,
            "%s{\"ph\":\"%c\",\"name\":\"n%u\",\"cat\":\"c%u\","
            "\"id\":%u,\"pid\":1,\"tid\":%u,\"ts\":%d,\"dur\":1}\n",
            i ? "," : "", p, (unsigned)(x >> 30) % 3, (unsigned)(x >> 40) % 2,
            id, tid, i);
  }
  fputs("]\n", f);
  assert_int_equal(fclose(f), 0);
  compare_counts(path, &r);
  /* all the rules had work: 8792 ends matched, 8747 begins left open,
   * 14868 async slices and instants */
  assert_true(r.slices > 5000 && r.incomplete > 5000 && r.async > 10000);
  rec_free(&r);
  unlink(path);
  free(path);
}

/* ------------------------------------------------------------ hand-made */

static void test_basic(void **state) {
  static const char *const lines[] = {
      "M|process_name|1|(null)|Main",
      "M|thread_name|1|2|worker",
      "M|process_sort_index|1|(null)|-3",
      "M|thread_sort_index|1|2|4",
      "M|process_labels|1|(null)|a,b",
      "W|@{\"ph\":\"M\",\"name\":\"num_cpus\"|unsupported metadata event "
      "'num_cpus': skipped",
      "W|@{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":3|metadata "
      "event 'thread_name' without args.name: skipped",
      "S|step|op|1|2|10000|5500|-|{\"k\":1}|",
      "S|inner|(null)|1|2|21000|1250|-|(null)|",
      "S|outer|op|1|2|20000|10000|-|{\"a\":1,\"b\":3,\"c\":\"x\"}|",
      "S|mark|(null)|1|2|25000|0|i|(null)|",
      "S|old|(null)|1|2|26000|0|i|(null)|",
      "S|navigationStart|(null)|1|2|27000|0|i|(null)|",
      "C|1|mem|used|28000|10",
      "C|1|mem|free|28000|2.5",
      "C|1|ctr[0x1]|v|29000|-1000",
      "W|@{\"ph\":\"C\",\"name\":\"empty\"|counter event 'empty' without "
      "numeric args: skipped",
      "S|neg|(null)|1|3|40000|0|-|(null)|",
      "S|nan|(null)|1|3|41000|1000|-|{\"v\":null,\"w\":[null,1]}|",
      NULL};
  check_file("basic.json", lines, 20, 3, NULL);
}

static void test_tolerance(void **state) {
  static const char *const lines[] = {
      "W|@{},|empty event object {}: skipped",
      "S|strpid|(null)|Browser|-7|1000|1000|-|(null)|",
      "S|huge|(null)|123456789012345678901234567890|18446744073709551616|2000|"
      "0|-|(null)|",
      "W|@{\"ph\":\"X\",\"name\":\"nots\"|'X' event without \"ts\": skipped",
      "W|@{\"ph\":\"X\",\"name\":\"badts\"|'X' event with bad \"ts\" abc: "
      "skipped",
      "W|@xyz|unexpected bytes between events: skipped up to the next event",
      "W|@{\"ph\":\"E\"|'E' event without an open 'B' on pid 1 tid 1: skipped",
      "W|@{\"ph\":\"D\"|unsupported phase 'D': skipped",
      "W|@{\"ph\":\"N\"|unsupported phase 'N': skipped",
      "W|@{\"ph\":\"O\"|unsupported phase 'O': skipped",
      "W|@{\"ph\":\"P\"|unsupported phase 'P': skipped",
      "W|@42|array element is not an event object: skipped",
      "W|@{\"name\":\"noph\"|event without \"ph\": skipped",
      "S||(null)|1|1|7000|1000|-|(null)|",
      "W|@{\"ph\":\"X\",\"name\":\"broken\"|malformed event (unexpected byte "
      "0x7d at offset *",
      "S|after|(null)|1|1|9000|2000|-|(null)|",
      "W|@{\"ph\":\"X\",\"name\":\"cut-li|malformed event (unexpected byte "
      "0x0a at offset *",
      "S|resumed|(null)|1|1|10000|0|i|(null)|",
      "S|last|(null)|1|1|20000|0|i|(null)|",
      /* the B never ended runs to the last timestamp, 20 us */
      "S|open|(null)|1|1|4000|16000|c|(null)|", NULL};
  check_file("tolerance.json", lines, 19, 12, NULL);
}

/* The rules of Perfetto's JSON importer: no tid is thread pid, no pid is
 * pid 0; counter values in numeric strings are numbers; a trailing comma
 * in args keeps the event and its args (and leaves the copied text). */
static void test_perfetto_rules(void **state) {
  static const char *const lines[] = {
      "S|notid|(null)|7|7|1000|2000|-|(null)|",
      "S|nopid|(null)|0|0|3000|1000|-|(null)|",
      "M|thread_name|7|7|main",
      "C|5|str|dot|4000|0.75",
      "C|5|str|tail|4000|246",
      "C|5|str|zero|4000|50",
      "C|5|str|plus|4000|10.5",
      "C|5|str|n|4000|-2",
      "W|@{\"ph\":\"C\",\"name\":\"nonum\"|counter event 'nonum' without "
      "numeric args: skipped",
      "S|nested|(null)|1|2|7000|1000|-|{\"l\":[1,2],\"o\":{\"s\":\"a,}\" "
      "}}|",
      "W|@{\"ph\":\"X\",\"name\":\"bad\"|malformed event (unexpected byte "
      "0x2c at offset *",
      "S|after|(null)|1|2|9000|0|-|(null)|",
      "S|trail|c|1|async:c:1|6000|3000|ca|{\"k\":1}|",
      NULL};
  check_file("perfetto.json", lines, 9, 2, NULL);
}

static void test_truncated(void **state) {
  static const char *const lines[] = {
      "S|a|(null)|1|1|1000|1000|-|(null)|",
      "W|@{\"ph\":\"X\",\"name\":\"cut\"|event cut by the end of the file: "
      "skipped",
      NULL};
  check_file("truncated.json", lines, 2, 1, NULL);
}

static void test_object(void **state) {
  /* ts + baseTimeNanoseconds (1 s, written after the events), exact:
   * "1766072157039689.700" us is 1766072157039689700 ns; digits below the
   * ns round half away from zero. */
  static const char *const lines[] = {
      "S|a|(null)|1|1|1766072158039689700|1|-|(null)|",
      "S|b|(null)|1|1|1001500000|1|-|(null)|",
      "S|c|(null)|1|1|999996750|123457|-|(null)|",
      "S|d|(null)|1|1|1000000000|123456|-|(null)|",
      "W|@{\"ph\": \"X\", \"name\": \"e\"|'X' event with bad \"ts\" 9.3e18: "
      "skipped",
      NULL};
  struct fmt_chrome_stats st;
  char rank[64], *path = data_path("object.json");
  check_file("object.json", lines, 5, 1, &st);
  assert_string_equal(st.rank, "5");
  assert_string_equal(st.display_time_unit, "ns");
  assert_int_equal(fmt_chrome_probe(path, rank, sizeof rank), 1);
  assert_string_equal(rank, "5");
  free(path);
}

static void test_object_tail(void **state) {
  /* Every top-level key after the events: found by the pre-pass. */
  static const char *const lines[] = {
      "S|a|(null)|1|1|1005|0|i|(null)|",
      "W|@\"us\"|displayTimeUnit is neither \"ms\" nor \"ns\": ignored", NULL};
  struct fmt_chrome_stats st;
  char rank[64] = "x", *path = data_path("object_tail.json");
  check_file("object_tail.json", lines, 1, 0, &st);
  assert_string_equal(st.rank, "7");
  assert_string_equal(st.display_time_unit, "");
  assert_int_equal(fmt_chrome_probe(path, rank, sizeof rank), 1);
  assert_string_equal(rank, ""); /* the rank comes after the events */
  free(path);
}

static void test_tail(void **state) {
  /* The members after the events read from the end of the file: found
   * when plain, left to the skimming pass (-1) when not. */
  static const struct {
    const char *tail;
    int rc;
    int64_t ns;
  } cases[] = {
      {"], \"traceName\": \"t\", \"baseTimeNanoseconds\": 17}\n", 1, 17},
      {"]\n,\"baseTimeNanoseconds\":\"1.5e3\" ,\"x\":null\r\n}\n\n", 1, 1500},
      {"],\"baseTimeNanoseconds\":5,\"baseTimeNanoseconds\":\"bad\"}", 1, 5},
      {"],\"baseTimeNanoseconds\":5,\"baseTimeNanoseconds\":6}", 1, 6},
      {"], \"displayTimeUnit\": \"ms\", \"n\": -1.5e-3, \"t\": true}", 0, 0},
      {"]}", 0, 0},
      {"], \"d\": {\"rank\": \"}\\\"[\\\\\"}, \"baseTimeNanoseconds\": 9}", 1,
       9},
      {"], \"a\": [1, {\"b\": [\"]\"]}], \"baseTimeNanoseconds\": 9}", 1, 9},
      {"], \"a\": [1}, \"baseTimeNanoseconds\": 9}", -1, 0},
      {"], \"traceEvents\": 3}", -1, 0},
      {"], \"s\": \"a\\\"b\", \"baseTimeNanoseconds\": 9}", -1, 0},
      {"], \"baseTimeNanoseconds\": 9", -1, 0},
      {"], \"baseTimeNanoseconds\": 9}\n@@", -1, 0}, /* @@: 2 zero bytes */
      {"] \"baseTimeNanoseconds\": 9}", -1, 0},
  };
  char *path = testutil_path("tail.json");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct sbuf b = {0};
    sbuf_adds(&b,
              "{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"a\",\"ts\":1}\n");
    sbuf_adds(&b, cases[i].tail);
    char *at = strstr(b.s, "@@");
    if (at)
      memset(at, 0, 2);
    testutil_write(path, b.s, b.len);
    int64_t ns = -1;
    int rc = fmt_chrome_tail_base(path, &ns);
    if (rc != cases[i].rc || (rc == 1 && ns != cases[i].ns))
      print_error("tail case %zu: rc %d ns %lld\n", i, rc, (long long)ns);
    assert_int_equal(rc, cases[i].rc);
    if (rc == 1)
      assert_int_equal(ns, cases[i].ns);
    sbuf_free(&b);
  }
  /* the decoder: the base read from the end applies to every event */
  testutil_write(path,
                 "{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"a\","
                 "\"pid\":1,\"tid\":1,\"ts\":1}],"
                 "\"baseTimeNanoseconds\": 1000000}",
                 94);
  struct rec r = {.keep_log = 1};
  assert_int_equal(decode(path, &r, NULL), 0);
  assert_string_equal(r.log.s, "S|a|(null)|1|1|1001000|0|i|(null)|\n");
  rec_free(&r);
  /* a base before an array of more than 64 KiB after the events: missed,
   * and the decoder says so */
  struct sbuf big = {0};
  sbuf_adds(&big, "{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"a\","
                  "\"pid\":1,\"tid\":1,\"ts\":1}],"
                  "\"baseTimeNanoseconds\": 7, \"samples\": [0");
  for (int k = 0; k < 40000; k++)
    sbuf_adds(&big, ",1");
  sbuf_adds(&big, "]}");
  testutil_write(path, big.s, big.len);
  struct rec w = {.keep_log = 1};
  assert_int_equal(decode(path, &w, NULL), 0);
  assert_string_equal(w.log.s,
                      "S|a|(null)|1|1|1000|0|i|(null)|\n"
                      "W|86|baseTimeNanoseconds comes before a top-level array "
                      "of more than 64 KiB that follows the events: not "
                      "applied to the events' timestamps\n");
  rec_free(&w);
  sbuf_free(&big);
  /* a tail of more than 64 KiB, a gzip file: skimmed */
  struct sbuf b = {0};
  sbuf_adds(&b, "{\"traceEvents\": [], \"pad\": \"");
  for (int k = 0; k < 70000; k++)
    sbuf_addc(&b, 'p');
  sbuf_adds(&b, "\", \"baseTimeNanoseconds\": 3}");
  testutil_write(path, b.s, b.len);
  int64_t ns;
  assert_int_equal(fmt_chrome_tail_base(path, &ns), -1);
  char *gz = testutil_path("tail.json.gz");
  write_gz(gz, "{\"traceEvents\": [], \"baseTimeNanoseconds\": 3}", 45, 1);
  assert_int_equal(fmt_chrome_tail_base(gz, &ns), -1);
  unlink(gz);
  free(gz);
  sbuf_free(&b);
  unlink(path);
  free(path);
}

static void test_async(void **state) {
  static const char *const lines[] = {
      "S|note|c1|1|async:c1:0x10|3000|0|ia|(null)|",
      /* e closes the innermost open b of its name: req, under sub */
      "S|req|c1|1|async:c1:0x10|1000|9000|a|{\"a\":1,\"b\":2}|",
      "W|@{\"ph\":\"e\",\"cat\":\"c2\"|'e' event 'req' without an open 'b' "
      "for id 0x10: skipped",
      "S|x|c1|2|async:c1:local:2:0x5|4000|2000|a|(null)|",
      "S|g|c1|3|async:c1:sc:0x6|5000|3000|a|(null)|",
      "W|@{\"ph\":\"b\",\"cat\":\"c1\",\"name\":\"noid\"|async event 'b' "
      "without id: skipped",
      "S|leg|c1|1|async:c1:7|21000|0|ia|{\"step\":\"s1\"}|",
      "S|leg|c1|1|async:c1:7|22000|0|ia|(null)|",
      "S|leg|c1|1|async:c1:7|20000|5000|a|(null)|",
      "W|@{\"ph\":\"F\",\"cat\":\"c1\",\"name\":\"leg\",\"id\":7,\"pid\":1,"
      "\"tid\":1,\"ts\":26|'F' event 'leg' without an open 'S' for id 7: "
      "skipped",
      "S|sub|c1|1|async:c1:0x10|2000|28000|ca|(null)|",
      "S|same|c1|1|async:c1:0x10|30000|0|ca|(null)|", NULL};
  check_file("async.json", lines, 16, 3, NULL);
}

static void test_flows(void **state) {
  static const char *const lines[] = {
      "F|s|task:0xafbf7fb30669feb0|1|2|1000|1",
      "F|t|task:0xafbf7fb30669feb0|1|3|2000|1",
      "F|f|task:0xafbf7fb30669feb0|1|4|3000|0",
      "F|f|ac2g:42|0|7|4000|1",
      "F|s|c:local:5:9|5|1|5000|1",
      "F|f|input.x:g1|5|1|6000|1",
      "W|@{\"ph\":\"f\",\"cat\":\"c\",\"name\":\"noid\"|flow event 'f' without "
      "id: skipped",
      "S|v2out|(null)|1|1|10000|1000|-|(null)|",
      "F|s|v2:0x99|1|1|10000|1",
      "S|v2in|(null)|1|2|12000|1000|-|(null)|",
      "F|f|v2:0x99|1|2|12000|1",
      "F|t|v2:77|1|3|14000|1",
      "S|v2step|(null)|1|3|14000|1000|-|(null)|",
      "S|v2none|(null)|1|1|16000|1000|-|(null)|",
      "S|fw|(null)|1|1|20000|5000|-|{\"flow_id\":[\"281474976710685\","
      "\"0x10\",12]}|281474976710685,16,12",
      "S|fw1|(null)|1|1|21000|1000|-|{\"nested\":{\"flow_id\":[\"1\"]},"
      "\"flow_id\":\"18446744073709551615\"}|18446744073709551615",
      "S|fwb|(null)|1|5|30000|1000|-|{\"flow_id\":[2,\"bad\",-1]}|1,2",
      NULL};
  check_file("flows.json", lines, 16, 1, NULL);
}

static void test_utf8(void **state) {
  static const char *const lines[] = {
      "S|bad\xef\xbf\xbd\xef\xbf\xbdname|c\xc3\xa9|1|1|1000|1000|-|{\"s\":"
      "\"x\xef\xbf\xbd\xef\xbf\xbdy\",\"ok\":\"\xe2\x82\xac\",\"k\xef\xbf\xbd"
      "ey\":1}|",
      "S|esc\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd\n\"q\"|(null)|1|1|2000|1000|-|"
      "(null)|",
      "S|he said \"hi\" ok|(null)|1|1|3000|1000|-|{\"q\":\"a \\\"b\\\" c\"}|",
      "S|tab\there|(null)|1|1|4000|1000|-|{\"t\":\"a\\u0009b\"}|", NULL};
  /* The log splits the second name at its newline: compare by hand. */
  char *path = data_path("utf8.json");
  struct rec r = {.keep_log = 1};
  struct fmt_chrome_stats st;
  assert_int_equal(decode(path, &r, &st), 0);
  struct sbuf want = {0};
  for (int i = 0; lines[i]; i++) {
    sbuf_adds(&want, lines[i]);
    sbuf_addc(&want, '\n');
  }
  assert_string_equal(r.log.s, want.s);
  assert_int_equal(st.events, 4);
  assert_int_equal(st.skipped, 0);
  sbuf_free(&want);
  rec_free(&r);
  free(path);
}

/* ------------------------------------------------------------ generated */

static void test_gzip(void **state) {
  char *plain = data_path("flows.json"), *gz = testutil_path("flows.json.gz");
  char *two = testutil_path("flows2.json.gz"),
       *cut = testutil_path("cut.json.gz");
  char *bad = testutil_path("bad.json.gz");
  size_t len;
  char *file = testutil_slurp(plain, &len);
  struct rec a = {.keep_log = 1}, b = {.keep_log = 1}, c = {.keep_log = 1};
  struct rec d = {.keep_log = 1};
  struct fmt_chrome_stats st;
  char *cause = NULL;

  write_gz(gz, file, len, 1);
  write_gz(two, file, len, 2);
  assert_int_equal(decode(plain, &a, NULL), 0);
  assert_int_equal(decode(gz, &b, &st), 0);
  assert_int_equal(st.bytes, len);
  assert_string_equal(a.log.s, b.log.s);
  assert_int_equal(decode(two, &c, &st), 0);
  assert_int_equal(st.bytes, len);
  assert_string_equal(a.log.s, c.log.s);
  assert_int_equal(fmt_chrome_probe(gz, NULL, 0), 1);

  /* A gzip file cut in the middle: what was inflated is read, then one
   * warning names the cut. */
  size_t glen;
  char *g = testutil_slurp(gz, &glen);
  testutil_write(cut, g, glen / 2);
  assert_int_equal(decode(cut, &d, &st), 0);
  assert_true(st.events > 0 && st.events < 16);
  assert_non_null(strstr(d.log.s, "gzip stream truncated"));

  /* Gzip magic followed by garbage: no JSON at all. */
  testutil_write(bad, "\x1f\x8b\x08\x00garbage-garbage-garbage", 27);
  assert_int_equal(fmt_chrome_read(bad, NULL, NULL, &cause), -EBADMSG);
  assert_non_null(strstr(cause, "gzip data corrupt"));
  free(cause);

  free(g);
  rec_free(&a);
  rec_free(&b);
  rec_free(&c);
  rec_free(&d);
  free(file);
  free(plain);
  free(gz);
  free(two);
  free(cut);
  free(bad);
}

/* Writes s to both outputs. */
static void put2(FILE *f, gzFile g, struct sbuf *s) {
  assert_int_equal(fwrite(s->s, 1, s->len, f), s->len);
  assert_int_equal(gzwrite(g, s->s, (unsigned)s->len), (int)s->len);
  sbuf_reset(s);
}

/* Writes a Kineto-like trace of n groups of 6 events -- X cpu_op, B/E, a
 * flow s/f pair, a counter -- in Object format with the base time last,
 * as plain and gzip files.  Returns its size. */
static size_t gen_trace(const char *plain, const char *gz, long n) {
  FILE *f = fopen(plain, "wb");
  gzFile g = gzopen(gz, "wb1");
  struct sbuf b = {0};
  size_t total = 0;
  assert_non_null(f);
  assert_non_null(g);
  sbuf_adds(&b, "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n");
  for (long i = 0; i < n; i++) {
    long ts = 1000 + i * 10;
    sbuf_printf(&b,
                "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
                "\"aten::op%ld\", \"pid\": 11, \"tid\": %ld,\n    \"ts\": "
                "%ld.%03ld, \"dur\": 3.125,\n    \"args\": {\n      "
                "\"External id\": %ld, \"Input Dims\": [[%ld, 64], []]\n    }\n"
                "  },\n",
                i % 97, i % 4, ts, i % 1000, i, i % 13);
    sbuf_printf(&b,
                "  {\"ph\": \"B\", \"name\": \"span\", \"pid\": 11, \"tid\": "
                "\"t%ld\", \"ts\": %ld},\n  {\"ph\": \"E\", \"pid\": 11, "
                "\"tid\": \"t%ld\", \"ts\": %ld.5},\n",
                i % 3, ts, i % 3, ts + 4);
    sbuf_printf(&b,
                "  {\"ph\": \"s\", \"id\": %ld, \"pid\": 11, \"tid\": 0, "
                "\"ts\": %ld, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n  "
                "{\"ph\": \"f\", \"id\": %ld, \"pid\": 0, \"tid\": 7, \"ts\": "
                "%ld, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n",
                i, ts, i, ts + 5);
    sbuf_printf(
        &b,
        "  {\"ph\": \"C\", \"name\": \"mem\", \"pid\": 11, \"ts\": %ld, "
        "\"args\": {\"used\": %ld}}%s\n",
        ts, i * 3, i == n - 1 ? "" : ",");
    total += b.len;
    put2(f, g, &b);
  }
  sbuf_adds(&b, "  ],\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n");
  total += b.len;
  put2(f, g, &b);
  sbuf_free(&b);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(gzclose(g), Z_OK);
  return total;
}

static void test_large(void **state) {
  /* ~76 MB: more than two mmap windows (32 MiB) and ~19 gzip refills. */
  const long n = 150000;
  char *plain = testutil_path("big.json"), *gz = testutil_path("big.json.gz");
  struct rec a = {.no_sets = 1}, g = {.no_sets = 1};
  struct fmt_chrome_stats sa, sg;
  struct rusage ru;

  size_t len = gen_trace(plain, gz, n);
  assert_true(len > 70u << 20);
  assert_int_equal(decode(plain, &a, &sa), 0);
  assert_int_equal(decode(gz, &g, &sg), 0);
  assert_int_equal(sa.events, 6 * n);
  assert_int_equal(sa.skipped, 0);
  assert_int_equal(sa.bytes, len);
  assert_int_equal(sg.bytes, len);
  assert_int_equal(a.slices, 2 * n);
  assert_int_equal(a.counters, n);
  assert_int_equal(a.flows[0], n);
  assert_int_equal(a.flows[2], n);
  assert_int_equal(a.warns, 0);
  assert_true(a.hash == g.hash); /* the same records in the same order */
  /* Memory stays bounded: mapped pages are given back as the window moves
   * on, the gzip window keeps only the unconsumed tail.  (AddressSanitizer
   * keeps freed memory in quarantine: no bound there.) */
  assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
#ifndef __SANITIZE_ADDRESS__
  assert_true(ru.ru_maxrss < 128 * 1024);
#endif
  rec_free(&a);
  rec_free(&g);
  unlink(plain);
  unlink(gz);
  free(plain);
  free(gz);
}

static void test_huge_event(void **state) {
  /* One event of 65 MiB of args is skipped; the next one is read.  Both as
   * a mapped file and through the gzip window. */
  size_t big = 65u << 20;
  struct sbuf b = {0};
  sbuf_adds(&b, "[{\"ph\":\"X\",\"name\":\"huge\",\"ts\":1,\"args\":{\"s\":\"");
  size_t head = b.len;
  b.s = xrealloc(b.s, head + big + 256);
  memset(b.s + head, 'a', big);
  b.len = head + big;
  b.cap = head + big + 256;
  sbuf_adds(&b, "\"}},\n{\"ph\":\"i\",\"name\":\"next\",\"pid\":1,\"tid\":1,"
                "\"ts\":2}]");
  char *paths[] = {testutil_path("huge.json"), testutil_path("huge.json.gz")};
  testutil_write(paths[0], b.s, b.len);
  write_gz(paths[1], b.s, b.len, 1);
  for (int i = 0; i < 2; i++) {
    struct rec r = {.keep_log = 1};
    struct fmt_chrome_stats st;
    assert_int_equal(decode(paths[i], &r, &st), 0);
    assert_string_equal(r.log.s, "W|1|event larger than 64 MiB: skipped\n"
                                 "S|next|(null)|1|1|2000|0|i|(null)|\n");
    assert_int_equal(st.events, 2);
    assert_int_equal(st.skipped, 1);
    rec_free(&r);
    unlink(paths[i]);
    free(paths[i]);
  }
  sbuf_free(&b);
}

static void test_errors(void **state) {
  static const struct {
    const char *name, *text;
    int rc;
    const char *cause;
  } cases[] = {
      {"empty.json", "", -ENODATA, "empty file"},
      {"blank.json", " \n\t ", -ENODATA, "no JSON"},
      {"text.json", "hello", -EPROTO, "found byte 0x68"},
      {"other.json", "{\"trace_events\": [{\"a\": 1}]}", -EPROTO,
       "no traceEvents"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = testutil_path(cases[i].name), *cause = NULL;
    testutil_write(p, cases[i].text, strlen(cases[i].text));
    assert_int_equal(fmt_chrome_read(p, NULL, NULL, &cause), cases[i].rc);
    assert_non_null(cause);
    assert_non_null(strstr(cause, cases[i].name));
    assert_non_null(strstr(cause, cases[i].cause));
    assert_int_equal(fmt_chrome_probe(p, NULL, 0), 0);
    free(cause);
    free(p);
  }
  char *missing = testutil_path("missing.json"), *cause = NULL;
  assert_int_equal(fmt_chrome_read(missing, NULL, NULL, &cause), -ENOENT);
  assert_non_null(strstr(cause, "missing.json"));
  free(cause);
  assert_int_equal(fmt_chrome_probe(missing, NULL, 0), -ENOENT);
  char *dir = testutil_path("adir");
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(fmt_chrome_read(dir, NULL, NULL, &cause), -EISDIR);
  free(cause);
  free(dir);
  free(missing);
}

static void test_stop(void **state) {
  /* A callback's non-zero return stops the read and is returned. */
  char *path = data_path("basic.json");
  struct rec r = {.keep_log = 1, .stop_at = 2};
  assert_int_equal(decode(path, &r, NULL), 7);
  assert_int_equal(r.slices + r.instants + r.incomplete, 2);
  assert_null(strstr(r.log.s, "outer"));
  rec_free(&r);
  free(path);
}

/* Decodes path with fmt_chrome_read() and with fmt_chrome_pipe_read():
 * the same calls in the same order, the same result, stats and cause.
 * Returns the log of the calls (the caller frees it). */
static char *decode_both(const char *path, long stop_at) {
  struct rec r[2] = {{.keep_log = 1, .stop_at = stop_at, .no_sets = 1},
                     {.keep_log = 1, .stop_at = stop_at, .no_sets = 1}};
  struct fmt_chrome_stats st[2];
  char *cause[2] = {NULL, NULL};
  int rc[2];
  for (int i = 0; i < 2; i++) {
    struct fmt_chrome_cb cb = {&r[i],    rec_slice, rec_counter,
                               rec_flow, rec_meta,  rec_warning};
    rc[i] = i ? fmt_chrome_pipe_read(path, &cb, &st[i], &cause[i])
              : fmt_chrome_read(path, &cb, &st[i], &cause[i]);
  }
  assert_int_equal(rc[1], rc[0]);
  assert_string_equal(r[1].log.s ? r[1].log.s : "",
                      r[0].log.s ? r[0].log.s : "");
  assert_string_equal(cause[1] ? cause[1] : "", cause[0] ? cause[0] : "");
  if (rc[0] >= 0 && !stop_at) { /* stopped: the decoder may have read on */
    assert_int_equal(st[1].events, st[0].events);
    assert_int_equal(st[1].skipped, st[0].skipped);
    assert_int_equal(st[1].bytes, st[0].bytes);
    assert_string_equal(st[1].rank, st[0].rank);
  }
  char *log = r[0].log.s ? xstrdup(r[0].log.s) : xstrdup("");
  for (int i = 0; i < 2; i++) {
    rec_free(&r[i]);
    free(cause[i]);
  }
  return log;
}

static void test_pipe(void **state) {
  /* The decoder on its own thread makes the same calls: on every test
   * file, on a trace of many batches, on records larger than a batch, on
   * a stop and on errors. */
  static const char *const files[] = {
      "async.json",        "basic.json",    "flows.json",
      "kineto_order.json", "names.json",    "object.json",
      "object_tail.json",  "perfetto.json", "tolerance.json",
      "truncated.json",    "utf8.json"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *path = data_path(files[i]);
    free(decode_both(path, 0));
    free(path);
  }
  char *plain = testutil_path("pipe.json"), *gz = testutil_path("pipe.json.gz");
  gen_trace(plain, gz, 20000); /* ~10 MB: many batches */
  free(decode_both(plain, 0));
  free(decode_both(gz, 0));
  char *log = decode_both(plain, 15000);
  assert_int_equal(strlen(log) > 0, 1);
  free(log);
  /* args of 3 MiB, beside small events: outsized batches */
  struct sbuf b = {0};
  sbuf_adds(&b, "[");
  for (int k = 0; k < 3; k++) {
    sbuf_printf(&b,
                "{\"ph\":\"X\",\"name\":\"big%d\",\"ts\":%d,\"dur\":1,"
                "\"args\":{\"s\":\"",
                k, k);
    for (int j = 0; j < (3 << 20) / 64; j++)
      sbuf_adds(
          &b,
          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde,");
    sbuf_printf(&b, "\"}},{\"ph\":\"i\",\"name\":\"small%d\",\"ts\":%d},", k,
                k);
  }
  sbuf_adds(&b, "{\"ph\":\"i\",\"name\":\"end\",\"ts\":9}]");
  testutil_write(plain, b.s, b.len);
  log = decode_both(plain, 0);
  assert_non_null(strstr(log, "|big2|"));
  assert_non_null(strstr(log, "|end|"));
  free(log);
  sbuf_free(&b);
  /* errors: the decoder's cause */
  testutil_write(plain, "hello", 5);
  free(decode_both(plain, 0));
  unlink(plain);
  unlink(gz);
  char *missing = testutil_path("pipe-missing.json");
  free(decode_both(missing, 0));
  free(missing);
  free(plain);
  free(gz);
}

static void test_probe(void **state) {
  static const struct {
    const char *name, *text;
    int yes;
  } cases[] = {
      {"arr.json", " [ {\"ph\":\"X\"}", 1},
      {"empty_arr.json", "[]", 1},
      {"numbers.json", "[1, 2]", 0},
      {"obj.json", "{\"a\": {\"b\": [1, 2, \"]\"]}, \"traceEvents\": []}", 1},
      {"vendor.json", "{\"trace_events\": [], \"mem_usage\": []}", 0},
      {"bom.json", "\xef\xbb\xbf{\"traceEvents\": []}", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = testutil_path(cases[i].name);
    testutil_write(p, cases[i].text, strlen(cases[i].text));
    assert_int_equal(fmt_chrome_probe(p, NULL, 0), cases[i].yes);
    free(p);
  }
  /* The events start after the first 64 KiB: not recognised. */
  struct sbuf b = {0};
  sbuf_adds(&b, "{\"otherData\": \"");
  for (int i = 0; i < 70000; i++)
    sbuf_addc(&b, 'x');
  sbuf_adds(&b, "\", \"traceEvents\": []}");
  char *p = testutil_path("late.json");
  testutil_write(p, b.s, b.len);
  assert_int_equal(fmt_chrome_probe(p, NULL, 0), 0);
  assert_int_equal(fmt_chrome_read(p, NULL, NULL, NULL), 0);
  free(p);
  sbuf_free(&b);
}

/* Replays the hand-made files and every tests/data/regress/chrome-* input
 * through the fuzz target (its invariants: valid UTF-8, args that parse,
 * messages that pack). */
static void test_regress_inputs(void **state) {
  int n = testutil_replay("tests/data/chrome", "");
  int m = testutil_replay("tests/data/regress", "chrome-");
  assert_true(n >= 2);
  printf("# %d data files and %d regression inputs replayed\n", n, m);
}

/* Decimal numbers (ts and dur in µs to ns, args): exact values, rounding
 * half away from zero, and the plain-number fast path against the general
 * parser on random numbers (the same text with "e0" takes the general
 * path). */
static void test_decimal(void **state) {
  (void)state;
  static const struct {
    const char *s;
    int scale, rc;
    int64_t v;
  } c[] = {
      {"4458676417768.751", 3, 0, 4458676417768751},
      {"1.0005", 3, 0, 1001},
      {"-1.0005", 3, 0, -1001},
      {"1.00049", 3, 0, 1000},
      {"999999999999999.9999", 3, 0, 1000000000000000000},
      {"1234567890123456.5", 3, 0, 1234567890123456500},
      {"9999999999999999.5", 3, -ERANGE, 0},
      {"9223372036854775.807", 3, 0, INT64_MAX},
      {"9223372036854775.808", 3, -ERANGE, 0},
      {"-9223372036854775.808", 3, 0, INT64_MIN},
      {"0.0", 3, 0, 0},
      {"-0", 3, 0, 0},
      {"0012", 3, 0, 12000},
      {"1.", 3, 0, 1000},
      {".5", 3, 0, 500},
      {"+5", 3, 0, 5000},
      {"1e3", 3, 0, 1000000},
      {"1.5e-3", 3, 0, 2},
      {"7.5", 0, 0, 8},
      {"-7.5", 0, 0, -8},
      {"7.49", 0, 0, 7},
      {"-", 3, -EINVAL, 0},
      {"1.2.3", 3, -EINVAL, 0},
      {"12a", 0, -EINVAL, 0},
      {"", 0, -EINVAL, 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    int64_t v = 0;
    int rc = jval_decimal((const unsigned char *)c[i].s, strlen(c[i].s),
                          c[i].scale, &v);
    if (rc != c[i].rc || (rc == 0 && v != c[i].v))
      print_error("%s (scale %d): rc %d, %lld\n", c[i].s, c[i].scale, rc,
                  (long long)v);
    assert_int_equal(rc, c[i].rc);
    if (rc == 0)
      assert_int_equal(v, c[i].v);
  }
  srand(7);
  for (int i = 0; i < 200000; i++) {
    char s[64];
    int n = 0;
    if (rand() % 3 == 0)
      s[n++] = '-';
    for (int k = 1 + rand() % 20; k > 0; k--)
      s[n++] = (char)('0' + rand() % 10);
    if (rand() % 2) {
      s[n++] = '.';
      for (int k = 1 + rand() % 8; k > 0; k--)
        s[n++] = (char)('0' + rand() % 10);
    }
    memcpy(s + n, "e0", 3);
    int scale = rand() % 4;
    int64_t a = 0, b = 0;
    int ra = jval_decimal((const unsigned char *)s, (size_t)n, scale, &a);
    int rb = jval_decimal((const unsigned char *)s, (size_t)n + 2, scale, &b);
    if (ra != rb || a != b)
      print_error("%s (scale %d): %d %lld, general %d %lld\n", s, scale, ra,
                  (long long)a, rb, (long long)b);
    assert_int_equal(ra, rb);
    assert_int_equal(a, b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_traces),
      cmocka_unit_test(test_random_matching),
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_tolerance),
      cmocka_unit_test(test_perfetto_rules),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_object),
      cmocka_unit_test(test_object_tail),
      cmocka_unit_test(test_tail),
      cmocka_unit_test(test_async),
      cmocka_unit_test(test_flows),
      cmocka_unit_test(test_utf8),
      cmocka_unit_test(test_gzip),
      cmocka_unit_test(test_large),
      cmocka_unit_test(test_huge_event),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_stop),
      cmocka_unit_test(test_pipe),
      cmocka_unit_test(test_probe),
      cmocka_unit_test(test_regress_inputs),
      cmocka_unit_test(test_decimal),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
