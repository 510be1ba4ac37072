/* testutil.h -- what the unit tests of the file decoders share: one
 * temporary directory per test program, paths in it and in the source
 * tree, whole files written and read, and the replay of kept inputs
 * through the program's fuzz target (tests/fuzz/fuzz_fmt.c).
 *
 * Ownership: every char * returned is the caller's to free.  The functions
 * fail the running cmocka test when the file system refuses.
 */
#ifndef NEX_TESTUTIL_H
#define NEX_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* cmocka group setup: creates the temporary directory
 * $TMPDIR/<program>.XXXXXX (TMPDIR defaults to /tmp).  Returns 0, or -1 if
 * it cannot be created. */
int testutil_setup(void **state);

/* cmocka group teardown: removes the temporary directory with everything
 * below it.  Returns 0. */
int testutil_teardown(void **state);

/* Returns "<temporary directory>/<name>". */
char *testutil_path(const char *name);

/* Returns "<source tree>/<rel>", rel formatted from fmt like printf; the
 * source tree is $NEX_SRCDIR, else the one this test was built from. */
__attribute__((format(printf, 1, 2))) char *testutil_srcpath(const char *fmt,
                                                             ...);

/* Writes the n bytes at b as the file at path (created or truncated). */
void testutil_write(const char *path, const void *b, size_t n);

/* Reads the whole file at path and sets *len to its size.  Returns its
 * bytes followed by a NUL, never NULL. */
char *testutil_slurp(const char *path, size_t *len);

/* Checks what a decoder returned: a cause (which it frees) with a negative
 * rc, none otherwise.  Returns rc. */
int testutil_cause(int rc, char *cause);

/* Runs the fuzz target on every file of <source tree>/<rel> whose name
 * starts with prefix ("" for all).  Returns how many; the directory must
 * be readable. */
int testutil_replay(const char *rel, const char *prefix);

/* protobuf-c's string fields are `char *`, but packing only reads them.
 * Returns s typed for such a field (no copy: s must outlive the packing). */
static inline char *testutil_pbstr(const char *s) {
  return (char *)(uintptr_t)s;
}

#endif
