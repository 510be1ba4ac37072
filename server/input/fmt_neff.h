/* fmt_neff.h -- the public 1024-byte NEFF header (compiled model files,
 * neff_<hash>[_vnc_<n>].neff): reader and writer.
 *
 * Layout (little-endian, see doc/formats.md): 0 package_version u64,
 * 8 header_size u64 (1024), 16 data_size u64, 24 major u64, 32 minor u64,
 * 40 build version char[128], 168 num_tpb u32, 172 hash [64] raw bytes,
 * 236 uuid [32] raw bytes, 268 name char[256], 524 requested_tpb_count u32,
 * 528 tpb_per_node [64], zero padding to 1024; then data_size bytes of
 * payload (a gzipped tar).
 *
 * Ownership: struct fmt_neff_header is a plain value filled by the reader
 * (no pointers inside).  Strings *cause returned through out-parameters are
 * malloc'd; the caller frees.
 */
#ifndef NEX_FMT_NEFF_H
#define NEX_FMT_NEFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FMT_NEFF_HEADER_SIZE 1024u

struct fmt_neff_header {
  uint64_t package_version; /* 1 = tgz + sha256, 2 = tgz + md5 */
  uint64_t header_size;     /* always 1024 */
  uint64_t data_size;       /* payload bytes after the header */
  uint64_t major_version, minor_version;
  char build_version[129]; /* printable ASCII, NUL-terminated */
  uint32_t num_tpb;        /* NeuronCores required */
  /* Lowercase hex of the hash field: 32 bytes (64 digits) for package
   * version 1, 16 bytes (32 digits) for version 2, else all 64 bytes. */
  char hash_hex[129];
  char uuid_hex[65]; /* lowercase hex of the 32 uuid bytes */
  char name[257];    /* model name, printable ASCII, NUL-terminated */
  uint32_t requested_tpb_count;
};

/* Reads and checks the header of the NEFF at `path` (only its first 1024
 * bytes are read).  Text fields are copied up to their first NUL and never
 * past their fixed width; bytes outside printable ASCII become '?'.
 * Returns 0 and fills *h, or a negative errno-style code and sets *cause (a
 * message naming the file and the offset): -ENOENT/-EACCES/... from the OS,
 * -EPIPE if the file is shorter than the header, -EBADMSG if header_size is
 * not 1024 or data_size does not match the file size. */
int fmt_neff_read(const char *path, struct fmt_neff_header *h, char **cause);

/* Writes a NEFF: a header built from *h (header_size is written as 1024,
 * data_size as payload_len; h->header_size and h->data_size are ignored),
 * then the payload.  hash_hex and uuid_hex are hex strings of at most 64
 * and 32 bytes (an empty string writes zeros).  Returns 0, -EINVAL for a
 * hex string that is not hex or too long, or a negative errno-style code
 * from writing. */
int fmt_neff_write(FILE *f, const struct fmt_neff_header *h,
                   const void *payload, size_t payload_len);

#endif
