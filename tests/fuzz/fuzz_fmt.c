/* fuzz_fmt.c -- see fuzz_fmt.h. */
#include "fuzz_fmt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_fmt_write_all(int fd, const uint8_t *p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, p + done, n - done);
    if (w <= 0)
      abort();
    done += (size_t)w;
  }
}

int fuzz_fmt_file(const uint8_t *p, size_t n, char *path, size_t cap) {
  int fd = memfd_create("fuzz_fmt", MFD_CLOEXEC);
  if (fd < 0)
    abort();
  fuzz_fmt_write_all(fd, p, n);
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

/* Reads the whole file dir/name and runs the fuzz target on it; aborts if
 * the file cannot be read. */
static void fuzz_fmt_replay_one(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) < 0)
    abort();
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n ? n : 1);
  if (!b || fread(b, 1, n, f) != n)
    abort();
  fclose(f);
  fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(b, n);
  free(b);
}

int fuzz_fmt_replay(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' ||
        strncmp(e->d_name, prefix, strlen(prefix)) != 0)
      continue;
    fuzz_fmt_replay_one(dir, e->d_name);
    n++;
  }
  closedir(d);
  return n;
}
