/* watch.c -- see watch.h. */
#include "watch.h"
#include "annot.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_MASK                                                             \
  (IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)
#define WATCH_MAX_DEPTH 8

struct watch {
  int ifd, stop_fd;
  pthread_t th;
  watch_fn fn;
  void *ud;
  char **dirs; /* by watch descriptor */
  int ndirs;
  char **changed;
  int nchanged;
};

static void watch_add(struct watch *w, const char *root, const char *rel,
                      int depth) {
  char *path = *rel ? xasprintf("%s/%s", root, rel) : xstrdup(root);
  int wd = inotify_add_watch(w->ifd, path, WATCH_MASK | IN_ONLYDIR);
  if (wd >= 0) {
    if (wd >= w->ndirs) {
      w->dirs = xrealloc(w->dirs, sizeof *w->dirs * (size_t)(wd + 1));
      for (int i = w->ndirs; i <= wd; i++)
        w->dirs[i] = NULL;
      w->ndirs = wd + 1;
    }
    free(w->dirs[wd]);
    w->dirs[wd] = xstrdup(rel);
  }
  DIR *d = depth < WATCH_MAX_DEPTH ? opendir(path) : NULL;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.' || de->d_type != DT_DIR)
      continue;
    char *child =
        *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
    watch_add(w, root, child, depth + 1);
    free(child);
  }
  if (d)
    closedir(d);
  free(path);
}

static bool watch_ignored(const char *name) {
  size_t n = strlen(name);
  return name[0] == '.' || (n >= 3 && strcmp(name + n - 3, ".db") == 0) ||
         (n >= 7 && strcmp(name + n - 7, ".db.tmp") == 0) ||
         (n >= 11 && strcmp(name + n - 11, ".db-journal") == 0) ||
         strstr(name, ANNOT_SUFFIX) != NULL; /* and its -journal */
}

static void watch_note(struct watch *w, const char *rel) {
  for (int i = 0; i < w->nchanged; i++)
    if (strcmp(w->changed[i], rel) == 0)
      return;
  w->changed =
      xrealloc(w->changed, sizeof *w->changed * (size_t)(w->nchanged + 1));
  w->changed[w->nchanged++] = xstrdup(rel);
}

struct watch_thread_arg {
  struct watch *w;
  char *root;
};

static void *watch_thread(void *arg) {
  struct watch_thread_arg *a = arg;
  struct watch *w = a->w;
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    struct pollfd p[2] = {{w->ifd, POLLIN, 0}, {w->stop_fd, POLLIN, 0}};
    int timeout = w->nchanged ? WATCH_QUIET_MS : -1;
    int n = poll(p, 2, timeout);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 || (p[1].revents & POLLIN))
      break;
    if (n == 0) { /* quiet long enough: report */
      w->fn(w->ud, (const char *const *)w->changed, w->nchanged);
      for (int i = 0; i < w->nchanged; i++)
        free(w->changed[i]);
      w->nchanged = 0;
      continue;
    }
    ssize_t len = read(w->ifd, buf, sizeof buf);
    for (char *q = buf; len > 0 && q < buf + len;) {
      struct inotify_event *ev = (struct inotify_event *)q;
      q += sizeof *ev + ev->len;
      if (ev->wd < 0 || ev->wd >= w->ndirs || !w->dirs[ev->wd] || !ev->len ||
          watch_ignored(ev->name))
        continue;
      const char *dir = w->dirs[ev->wd];
      char *rel = *dir ? xasprintf("%s/%s", dir, ev->name) : xstrdup(ev->name);
      if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
        watch_add(w, a->root, rel, 1);
      watch_note(w, rel);
      free(rel);
    }
  }
  free(a->root);
  free(a);
  return NULL;
}

int watch_start(const char *dir, watch_fn fn, void *ud, struct watch **out,
                char **cause) {
  struct watch *w = xcalloc(1, sizeof *w);
  w->fn = fn;
  w->ud = ud;
  w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  w->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (w->ifd < 0 || w->stop_fd < 0) {
    int e = errno;
    *cause = xasprintf("inotify: %s", strerror(e));
    if (w->ifd >= 0)
      close(w->ifd);
    if (w->stop_fd >= 0)
      close(w->stop_fd);
    free(w);
    return -e;
  }
  watch_add(w, dir, "", 0);
  struct watch_thread_arg *a = xmalloc(sizeof *a);
  a->w = w;
  a->root = xstrdup(dir);
  if (pthread_create(&w->th, NULL, watch_thread, a) != 0)
    fatal("cannot start the watch thread");
  *out = w;
  return 0;
}

void watch_stop(struct watch *w) {
  if (!w)
    return;
  uint64_t one = 1;
  if (write(w->stop_fd, &one, sizeof one) < 0)
    fatal("watch: cannot signal the thread");
  pthread_join(w->th, NULL);
  close(w->ifd);
  close(w->stop_fd);
  for (int i = 0; i < w->ndirs; i++)
    free(w->dirs[i]);
  free(w->dirs);
  for (int i = 0; i < w->nchanged; i++)
    free(w->changed[i]);
  free(w->changed);
  free(w);
}
