/* spill.c -- see spill.h. */
#include "spill.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct spill {
  char *dir;        /* the store's directory */
  const char *what; /* static: what is spilled, for the warnings */
  int fd;           /* -1 before the first write */
  bool failed;      /* none or full: nothing more is written */
  uint64_t size;    /* bytes written */
};

struct spill *spill_new(const char *store_path, const char *what) {
  struct spill *s = xcalloc(1, sizeof *s);
  const char *slash = strrchr(store_path, '/');
  s->dir =
      slash ? xstrndup(store_path,
                       slash == store_path ? 1 : (size_t)(slash - store_path))
            : xstrdup(".");
  s->what = what;
  s->fd = -1;
  return s;
}

void spill_free(struct spill *s) {
  if (!s)
    return;
  if (s->fd >= 0)
    close(s->fd);
  free(s->dir);
  free(s);
}

/* The file, created unlinked on first use; -1 when it cannot be. */
static int spill_open(struct spill *s) {
  if (s->failed)
    return -1;
  if (s->fd >= 0)
    return s->fd;
  s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (s->fd < 0) {
    char *tmpl = xasprintf("%s/.nex-spill-XXXXXX", s->dir);
    s->fd = mkostemp(tmpl, O_CLOEXEC);
    if (s->fd >= 0)
      unlink(tmpl);
    free(tmpl);
  }
  if (s->fd < 0) {
    s->failed = true;
    log_warn("no spill file in %s (%s): %s stays in memory", s->dir,
             strerror(errno), s->what);
  }
  return s->fd;
}

int spill_write(struct spill *s, const void *p, size_t len, uint64_t *off) {
  int fd = spill_open(s);
  if (fd < 0)
    return -1;
  for (size_t done = 0; done < len;) {
    ssize_t n =
        pwrite(fd, (const char *)p + done, len - done, (off_t)(s->size + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      log_warn("cannot write the spill file (%s): %s stays in memory",
               n < 0 ? strerror(errno) : "no space", s->what);
      s->failed = true;
      return -1;
    }
    done += (size_t)n;
  }
  *off = s->size;
  s->size += len;
  return 0;
}

bool spill_usable(const struct spill *s) { return !s->failed; }

int spill_read(struct spill *s, void *p, size_t len, uint64_t off) {
  for (size_t done = 0; done < len;) {
    ssize_t n = s->fd < 0 ? -1
                          : pread(s->fd, (char *)p + done, len - done,
                                  (off_t)(off + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 && s->fd >= 0 ? -errno : -EIO;
    done += (size_t)n;
  }
  return 0;
}
