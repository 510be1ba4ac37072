/* fuzz_fmt.h -- what the fuzz targets of the file decoders share, and the
 * replay of their kept inputs by the unit tests.
 *
 * Ownership: fuzz_fmt_file() returns a descriptor the caller closes.
 */
#ifndef NEX_FUZZ_FMT_H
#define NEX_FUZZ_FMT_H

#include <stddef.h>
#include <stdint.h>

/* The selector byte of fuzz_fmt_pb (first input byte, taken modulo
 * FUZZ_FMT_PB_TYPES): which record type the rest of the input holds. */
enum fuzz_fmt_pb_type {
  FUZZ_FMT_PB_NTRACE,
  FUZZ_FMT_PB_TRACE_INFO,
  FUZZ_FMT_PB_CPU_UTIL,
  FUZZ_FMT_PB_HOST_MEM,
  FUZZ_FMT_PB_NTFF,
  FUZZ_FMT_PB_TYPES
};

/* The libFuzzer entry point each target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes the n bytes at p to fd; aborts if that fails (the harness cannot
 * go on). */
void fuzz_fmt_write_all(int fd, const uint8_t *p, size_t n);

/* Writes n bytes into a new memory file and sets path (of `cap` bytes) to a
 * name that opens it.  Returns its descriptor; aborts if that fails (the
 * harness cannot go on). */
int fuzz_fmt_file(const uint8_t *p, size_t n, char *path, size_t cap);

/* Runs LLVMFuzzerTestOneInput on every file of `dir` whose name starts with
 * `prefix`.  Returns how many, or -errno if dir cannot be read. */
int fuzz_fmt_replay(const char *dir, const char *prefix);

/* fuzz_fmt_perfetto.c: checks each packet frame of the plain Perfetto
 * trace data[0, size) (up to the first frame that is not a packet) that
 * the decoder's wire walker takes against protobuf-c's unpacker, aborting
 * when they differ.  Returns how many packets the walker took. */
size_t fuzz_fmt_perfetto_wire(const uint8_t *data, size_t size);

/* fuzz_npf.c: what the store of the last input held (for the tests that
 * replay its seeds). */
struct fuzz_npf_counts {
  int64_t slices, samples, warnings, devices, instructions;
};
extern struct fuzz_npf_counts fuzz_npf_last;

#endif
