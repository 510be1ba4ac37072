/* fmt_neff.c -- see fmt_neff.h. */
#include "fmt_neff.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Field offsets and widths of the header (KLR/NEFF/Basic.lean). */
enum {
  FMT_NEFF_OFF_PACKAGE_VERSION = 0,
  FMT_NEFF_OFF_HEADER_SIZE = 8,
  FMT_NEFF_OFF_DATA_SIZE = 16,
  FMT_NEFF_OFF_MAJOR = 24,
  FMT_NEFF_OFF_MINOR = 32,
  FMT_NEFF_OFF_BUILD = 40,
  FMT_NEFF_LEN_BUILD = 128,
  FMT_NEFF_OFF_NUM_TPB = 168,
  FMT_NEFF_OFF_HASH = 172,
  FMT_NEFF_LEN_HASH = 64,
  FMT_NEFF_OFF_UUID = 236,
  FMT_NEFF_LEN_UUID = 32,
  FMT_NEFF_OFF_NAME = 268,
  FMT_NEFF_LEN_NAME = 256,
  FMT_NEFF_OFF_REQUESTED_TPB = 524,
};

static uint64_t fmt_neff_get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static uint32_t fmt_neff_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void fmt_neff_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void fmt_neff_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* Copies the NUL-padded text field of `width` bytes at p into out (width + 1
 * bytes), stopping at the first NUL; other bytes outside printable ASCII
 * become '?'. */
static void fmt_neff_get_text(char *out, const uint8_t *p, size_t width) {
  size_t i;
  for (i = 0; i < width && p[i]; i++)
    out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
  out[i] = '\0';
}

/* Renders n bytes at p as lowercase hex into out (2n + 1 bytes). */
static void fmt_neff_get_hex(char *out, const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = '\0';
}

static int fmt_neff_hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Parses the hex string s into at most `width` bytes at p (the rest stays
 * zero).  Returns 0, or -EINVAL if s is not an even number of hex digits or
 * is longer than the field. */
static int fmt_neff_put_hex(uint8_t *p, const char *s, size_t width) {
  size_t len = strlen(s);
  if (len % 2 || len / 2 > width)
    return -EINVAL;
  for (size_t i = 0; i < len / 2; i++) {
    int hi = fmt_neff_hex_digit(s[2 * i]),
        lo = fmt_neff_hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -EINVAL;
    p[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

/* Reads up to FMT_NEFF_HEADER_SIZE bytes from the start of the regular file
 * fd into b.  Returns 0 and sets *have and *file_size, or a negative errno
 * code (-EINVAL if fd is not a regular file). */
static int fmt_neff_read_head(int fd, uint8_t *b, size_t *have,
                              uint64_t *file_size) {
  struct stat st;
  if (fstat(fd, &st) < 0)
    return -errno;
  if (!S_ISREG(st.st_mode))
    return -EINVAL;
  *file_size = (uint64_t)st.st_size;
  *have = 0;
  while (*have < FMT_NEFF_HEADER_SIZE) {
    ssize_t got =
        pread(fd, b + *have, FMT_NEFF_HEADER_SIZE - *have, (off_t)*have);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return -errno;
    if (got == 0)
      break;
    *have += (size_t)got;
  }
  return 0;
}

int fmt_neff_read(const char *path, struct fmt_neff_header *h, char **cause) {
  memset(h, 0, sizeof *h);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    *cause = xasprintf("%s: %s", path, strerror(err));
    return -err;
  }
  uint8_t b[FMT_NEFF_HEADER_SIZE];
  size_t have = 0;
  uint64_t file_size = 0;
  int rc = fmt_neff_read_head(fd, b, &have, &file_size);
  close(fd);
  if (rc < 0) {
    *cause = xasprintf("%s: %s", path,
                       rc == -EINVAL ? "not a regular file" : strerror(-rc));
    return rc;
  }
  if (have < FMT_NEFF_HEADER_SIZE || file_size < FMT_NEFF_HEADER_SIZE) {
    *cause = xasprintf("%s: offset %zu: truncated NEFF header (file is %zu "
                       "bytes, the header needs %u)",
                       path, have, have, FMT_NEFF_HEADER_SIZE);
    return -EPIPE;
  }
  h->package_version = fmt_neff_get_u64(b + FMT_NEFF_OFF_PACKAGE_VERSION);
  h->header_size = fmt_neff_get_u64(b + FMT_NEFF_OFF_HEADER_SIZE);
  h->data_size = fmt_neff_get_u64(b + FMT_NEFF_OFF_DATA_SIZE);
  if (h->header_size != FMT_NEFF_HEADER_SIZE) {
    *cause = xasprintf("%s: offset %d: header_size is %" PRIu64 ", expected %u",
                       path, FMT_NEFF_OFF_HEADER_SIZE, h->header_size,
                       FMT_NEFF_HEADER_SIZE);
    return -EBADMSG;
  }
  if (h->data_size != file_size - FMT_NEFF_HEADER_SIZE) {
    *cause = xasprintf("%s: offset %d: data_size is %" PRIu64
                       " but the file holds %" PRIu64 " bytes after the header",
                       path, FMT_NEFF_OFF_DATA_SIZE, h->data_size,
                       file_size - FMT_NEFF_HEADER_SIZE);
    return -EBADMSG;
  }
  h->major_version = fmt_neff_get_u64(b + FMT_NEFF_OFF_MAJOR);
  h->minor_version = fmt_neff_get_u64(b + FMT_NEFF_OFF_MINOR);
  fmt_neff_get_text(h->build_version, b + FMT_NEFF_OFF_BUILD,
                    FMT_NEFF_LEN_BUILD);
  h->num_tpb = fmt_neff_get_u32(b + FMT_NEFF_OFF_NUM_TPB);
  size_t hash_len = h->package_version == 1   ? 32
                    : h->package_version == 2 ? 16
                                              : FMT_NEFF_LEN_HASH;
  fmt_neff_get_hex(h->hash_hex, b + FMT_NEFF_OFF_HASH, hash_len);
  fmt_neff_get_hex(h->uuid_hex, b + FMT_NEFF_OFF_UUID, FMT_NEFF_LEN_UUID);
  fmt_neff_get_text(h->name, b + FMT_NEFF_OFF_NAME, FMT_NEFF_LEN_NAME);
  h->requested_tpb_count = fmt_neff_get_u32(b + FMT_NEFF_OFF_REQUESTED_TPB);
  return 0;
}

int fmt_neff_write(FILE *f, const struct fmt_neff_header *h,
                   const void *payload, size_t payload_len) {
  uint8_t b[FMT_NEFF_HEADER_SIZE] = {0};
  fmt_neff_put_u64(b + FMT_NEFF_OFF_PACKAGE_VERSION, h->package_version);
  fmt_neff_put_u64(b + FMT_NEFF_OFF_HEADER_SIZE, FMT_NEFF_HEADER_SIZE);
  fmt_neff_put_u64(b + FMT_NEFF_OFF_DATA_SIZE, payload_len);
  fmt_neff_put_u64(b + FMT_NEFF_OFF_MAJOR, h->major_version);
  fmt_neff_put_u64(b + FMT_NEFF_OFF_MINOR, h->minor_version);
  memcpy(b + FMT_NEFF_OFF_BUILD, h->build_version,
         strnlen(h->build_version, FMT_NEFF_LEN_BUILD));
  fmt_neff_put_u32(b + FMT_NEFF_OFF_NUM_TPB, h->num_tpb);
  if (fmt_neff_put_hex(b + FMT_NEFF_OFF_HASH, h->hash_hex, FMT_NEFF_LEN_HASH) <
          0 ||
      fmt_neff_put_hex(b + FMT_NEFF_OFF_UUID, h->uuid_hex, FMT_NEFF_LEN_UUID) <
          0)
    return -EINVAL;
  memcpy(b + FMT_NEFF_OFF_NAME, h->name, strnlen(h->name, FMT_NEFF_LEN_NAME));
  fmt_neff_put_u32(b + FMT_NEFF_OFF_REQUESTED_TPB, h->requested_tpb_count);
  errno = 0;
  if (fwrite(b, 1, sizeof b, f) != sizeof b ||
      (payload_len && fwrite(payload, 1, payload_len, f) != payload_len))
    return errno ? -errno : -EIO;
  return 0;
}
