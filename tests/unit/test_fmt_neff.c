/* test_fmt_neff.c -- the NEFF header reader and writer (server/fmt_neff.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_neff.h"
#include "testutil.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char hash_sha256[] =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
static const char uuid[] =
    "00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210";

/* The header every test starts from. */
static void sample_header(struct fmt_neff_header *h) {
  memset(h, 0, sizeof *h);
  h->package_version = 1;
  h->major_version = 2;
  h->minor_version = 17;
  strcpy(h->build_version, "2.17.0.0+abcdef");
  h->num_tpb = 8;
  strcpy(h->hash_hex, hash_sha256);
  strcpy(h->uuid_hex, uuid);
  strcpy(h->name, "llama-3-8b/graph_395760075800974");
  h->requested_tpb_count = 4;
}

/* Writes a NEFF with header h and a payload of n bytes to tmp/name and
 * returns its path (caller frees). */
static char *write_neff(const char *name, const struct fmt_neff_header *h,
                        size_t n) {
  char *p = testutil_path(name);
  uint8_t *payload = xmalloc(n);
  for (size_t i = 0; i < n; i++)
    payload[i] = (uint8_t)(i * 7);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fmt_neff_write(f, h, payload, n), 0);
  assert_int_equal(fclose(f), 0);
  free(payload);
  return p;
}

/* Overwrites n bytes at offset `at` of the file at p. */
static void patch(const char *p, long at, const void *b, size_t n) {
  FILE *f = fopen(p, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, at, SEEK_SET), 0);
  assert_int_equal(fwrite(b, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Reads p expecting error `want`; returns the cause (caller frees), which
 * must name the file. */
static char *read_fails(const char *p, int want) {
  struct fmt_neff_header h;
  char *cause = NULL;
  assert_int_equal(fmt_neff_read(p, &h, &cause), want);
  assert_non_null(cause);
  assert_non_null(strstr(cause, p));
  return cause;
}

static void test_round_trip(void **state) {
  struct fmt_neff_header in, out;
  sample_header(&in);
  char *p = write_neff("neff_395760075800974.neff", &in, 5000);
  char *cause = NULL;
  assert_int_equal(fmt_neff_read(p, &out, &cause), 0);
  assert_null(cause);
  assert_int_equal(out.package_version, 1);
  assert_int_equal(out.header_size, 1024);
  assert_int_equal(out.data_size, 5000);
  assert_int_equal(out.major_version, 2);
  assert_int_equal(out.minor_version, 17);
  assert_string_equal(out.build_version, "2.17.0.0+abcdef");
  assert_int_equal(out.num_tpb, 8);
  assert_string_equal(out.hash_hex, hash_sha256);
  assert_string_equal(out.uuid_hex, uuid);
  assert_string_equal(out.name, "llama-3-8b/graph_395760075800974");
  assert_int_equal(out.requested_tpb_count, 4);
  free(p);
}

static void test_byte_layout(void **state) {
  struct fmt_neff_header in;
  sample_header(&in);
  char *p = write_neff("layout.neff", &in, 3);
  uint8_t b[1027];
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  assert_int_equal(fread(b, 1, sizeof b + 1, f), sizeof b);
  fclose(f);
  static const uint8_t u64_1024[8] = {0x00, 0x04};
  static const uint8_t u64_3[8] = {3};
  assert_int_equal(b[0], 1);
  assert_memory_equal(b + 8, u64_1024, 8);
  assert_memory_equal(b + 16, u64_3, 8);
  assert_int_equal(b[24], 2);
  assert_int_equal(b[32], 17);
  assert_memory_equal(b + 40, "2.17.0.0+abcdef", 16);
  assert_int_equal(b[168], 8);
  assert_int_equal(b[172], 0x9f);
  assert_int_equal(b[203], 0x08);
  assert_int_equal(b[204], 0);
  assert_int_equal(b[236], 0x00);
  assert_int_equal(b[237], 0x11);
  assert_int_equal(b[267], 0x10);
  assert_memory_equal(b + 268, "llama-3-8b/", 11);
  assert_int_equal(b[524], 4);
  for (int i = 528; i < 1024; i++)
    assert_int_equal(b[i], 0);
  assert_int_equal(b[1024], 0);
  assert_int_equal(b[1025], 7);
  free(p);
}

static void test_md5_hash(void **state) {
  struct fmt_neff_header in, out;
  sample_header(&in);
  in.package_version = 2;
  strcpy(in.hash_hex, "d41d8cd98f00b204e9800998ecf8427e");
  char *p = write_neff("md5.neff", &in, 0);
  char *cause = NULL;
  assert_int_equal(fmt_neff_read(p, &out, &cause), 0);
  assert_string_equal(out.hash_hex, "d41d8cd98f00b204e9800998ecf8427e");
  assert_int_equal(out.data_size, 0);
  free(p);
}

static void test_short_file(void **state) {
  struct fmt_neff_header in;
  sample_header(&in);
  char *p = write_neff("short.neff", &in, 10);
  assert_int_equal(truncate(p, 1000), 0);
  char *cause = read_fails(p, -EPIPE);
  assert_non_null(strstr(cause, "offset 1000"));
  free(cause);
  assert_int_equal(truncate(p, 0), 0);
  cause = read_fails(p, -EPIPE);
  assert_non_null(strstr(cause, "offset 0"));
  free(cause);
  free(p);
}

static void test_missing_file(void **state) {
  char *p = testutil_path("none.neff");
  free(read_fails(p, -ENOENT));
  free(p);
}

static void test_wrong_header_size(void **state) {
  struct fmt_neff_header in;
  sample_header(&in);
  char *p = write_neff("hsize.neff", &in, 10);
  static const uint8_t u64_512[8] = {0x00, 0x02};
  patch(p, 8, u64_512, 8);
  char *cause = read_fails(p, -EBADMSG);
  assert_non_null(strstr(cause, "offset 8"));
  assert_non_null(strstr(cause, "header_size is 512"));
  free(cause);
  free(p);
}

static void test_data_size_mismatch(void **state) {
  struct fmt_neff_header in;
  sample_header(&in);
  char *p = write_neff("dsize.neff", &in, 10);
  assert_int_equal(truncate(p, 1024 + 9), 0);
  char *cause = read_fails(p, -EBADMSG);
  assert_non_null(strstr(cause, "offset 16"));
  assert_non_null(strstr(cause, "data_size is 10"));
  assert_non_null(strstr(cause, "9 bytes after the header"));
  free(cause);
  free(p);
}

static void test_unterminated_text_fields(void **state) {
  struct fmt_neff_header in, out;
  sample_header(&in);
  char *p = write_neff("unterminated.neff", &in, 1);
  uint8_t name[256], build[128];
  memset(name, 'N', sizeof name);
  memset(build, 'b', sizeof build);
  build[3] = 0x01;
  build[4] = (uint8_t)0xff;
  patch(p, 268, name, sizeof name);
  patch(p, 40, build, sizeof build);
  char *cause = NULL;
  assert_int_equal(fmt_neff_read(p, &out, &cause), 0);
  assert_int_equal(strlen(out.name), 256);
  for (int i = 0; i < 256; i++)
    assert_int_equal(out.name[i], 'N');
  assert_int_equal(strlen(out.build_version), 128);
  assert_memory_equal(out.build_version, "bbb??bbb", 8);
  assert_int_equal(out.num_tpb, 8);
  assert_int_equal(out.requested_tpb_count, 4);
  free(p);
}

static void test_writer_rejects_bad_hex(void **state) {
  struct fmt_neff_header in;
  FILE *f = tmpfile();
  assert_non_null(f);
  sample_header(&in);
  strcpy(in.hash_hex, "xyz0");
  assert_int_equal(fmt_neff_write(f, &in, NULL, 0), -EINVAL);
  sample_header(&in);
  strcpy(in.uuid_hex, "abc");
  assert_int_equal(fmt_neff_write(f, &in, NULL, 0), -EINVAL);
  sample_header(&in);
  memset(in.uuid_hex, 'a', 64);
  in.uuid_hex[64] = '\0';
  assert_int_equal(fmt_neff_write(f, &in, NULL, 0), 0);
  memset(in.hash_hex, 'a', 128);
  in.hash_hex[128] = '\0';
  assert_int_equal(fmt_neff_write(f, &in, NULL, 0), 0);
  assert_int_equal(fclose(f), 0);
}

/* Replays every tests/data/regress/neff-* input through the fuzz target,
 * which aborts on any broken invariant. */
static void test_regress_inputs(void **state) {
  int n = testutil_replay("tests/data/regress", "neff-");
  printf("# %d regression inputs replayed\n", n);
  assert_true(n > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_byte_layout),
      cmocka_unit_test(test_md5_hash),
      cmocka_unit_test(test_short_file),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_wrong_header_size),
      cmocka_unit_test(test_data_size_mismatch),
      cmocka_unit_test(test_unterminated_text_fields),
      cmocka_unit_test(test_writer_rejects_bad_hex),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
