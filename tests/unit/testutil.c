/* testutil.c -- see testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "testutil.h"

#include "../fuzz/fuzz_fmt.h"
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static char *testutil_dir;

int testutil_setup(void **state) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  testutil_dir = xasprintf("%s/%s.XXXXXX", base, program_invocation_short_name);
  return mkdtemp(testutil_dir) ? 0 : -1;
}

/* nftw callback: removes one file or (emptied) directory. */
static int testutil_remove(const char *path, const struct stat *st, int flag,
                           struct FTW *ftw) {
  remove(path);
  return 0;
}

int testutil_teardown(void **state) {
  nftw(testutil_dir, testutil_remove, 16, FTW_DEPTH | FTW_PHYS);
  free(testutil_dir);
  testutil_dir = NULL;
  return 0;
}

char *testutil_path(const char *name) {
  return xasprintf("%s/%s", testutil_dir, name);
}

char *testutil_srcpath(const char *fmt, ...) {
  const char *src = getenv("NEX_SRCDIR") ? getenv("NEX_SRCDIR") : SRCDIR;
  char *rel;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&rel, fmt, ap);
  va_end(ap);
  assert_true(n >= 0);
  char *p = xasprintf("%s/%s", src, rel);
  free(rel);
  return p;
}

void testutil_write(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

char *testutil_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  struct sbuf b = {0};
  char buf[65536];
  size_t n;
  assert_non_null(f);
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    sbuf_add(&b, buf, n);
  fclose(f);
  if (!b.s)
    sbuf_add(&b, "", 0);
  *len = b.len;
  return b.s;
}

int testutil_cause(int rc, char *cause) {
  if (rc < 0)
    assert_non_null(cause);
  else
    assert_null(cause);
  free(cause);
  return rc;
}

int testutil_replay(const char *rel, const char *prefix) {
  char *dir = testutil_srcpath("%s", rel);
  int n = fuzz_fmt_replay(dir, prefix);
  free(dir);
  assert_true(n >= 0);
  return n;
}
