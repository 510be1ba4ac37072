/* fuzz_fmt_neff.c -- libFuzzer target of the NEFF header reader.
 *
 * Input: the bytes of a NEFF file, written to a memfd and read with
 * fmt_neff_read(); the text fields must come back NUL-terminated within
 * their width and printable.  Also linked into test_fmt_neff, which replays
 * the inputs kept in tests/data/regress/neff-*.
 */
#include "fmt_neff.h"
#include "fuzz_fmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts unless s is printable ASCII and NUL-terminated within cap bytes. */
static void fuzz_fmt_neff_check_text(const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  if (n == cap)
    abort();
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  struct fmt_neff_header h;
  char *cause = NULL;
  int rc = fmt_neff_read(path, &h, &cause);
  close(fd);
  if (rc < 0) {
    if (!cause || (rc != -EPIPE && rc != -EBADMSG))
      abort();
    free(cause);
    return 0;
  }
  if (h.header_size != FMT_NEFF_HEADER_SIZE ||
      h.data_size != size - FMT_NEFF_HEADER_SIZE)
    abort();
  fuzz_fmt_neff_check_text(h.build_version, sizeof h.build_version);
  fuzz_fmt_neff_check_text(h.name, sizeof h.name);
  fuzz_fmt_neff_check_text(h.hash_hex, sizeof h.hash_hex);
  fuzz_fmt_neff_check_text(h.uuid_hex, sizeof h.uuid_hex);
  return 0;
}
