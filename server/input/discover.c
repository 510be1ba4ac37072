/* discover.c -- see discover.h. */
#include "discover.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISCOVER_MAX_DEPTH 8

struct discover_file {
  char *rel;
  uint64_t size;
  int64_t mtime_ns;
};

struct discover_walk {
  struct discover_file *files;
  int n, cap;
  struct discover_result *res;
};

static void discover_add_msg(struct discover_result *r, char *msg) {
  r->messages =
      xrealloc(r->messages, sizeof(char *) * (size_t)(r->n_messages + 1));
  r->messages[r->n_messages++] = msg;
}

static bool discover_ends(const char *s, const char *suffix);

/* Store files (when --db points inside the profile) are not profile data. */
static bool discover_is_store(const char *name) {
  return discover_ends(name, ".db") || discover_ends(name, ".db.tmp") ||
         discover_ends(name, ".db-journal");
}

/* The folders from --dir down to the one being read, to refuse a symbolic
 * link that leads back to one of them. */
struct discover_ancestor {
  dev_t dev;
  ino_t ino;
  const struct discover_ancestor *up;
};

static bool discover_on_path(const struct discover_ancestor *a,
                             const struct stat *st) {
  for (; a; a = a->up)
    if (a->dev == st->st_dev && a->ino == st->st_ino)
      return true;
  return false;
}

static const char *discover_kind(mode_t m) {
  return S_ISFIFO(m)   ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
                       : "not a regular file";
}

static void discover_walk_dir(struct discover_walk *w, int dirfd,
                              const char *rel, int depth,
                              const struct discover_ancestor *up) {
  DIR *d = fdopendir(dirfd);
  if (!d) {
    close(dirfd);
    return;
  }
  struct stat self;
  struct discover_ancestor me = {0, 0, up};
  if (fstat(dirfd, &self) == 0)
    me.dev = self.st_dev, me.ino = self.st_ino;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    struct stat st;
    char *child =
        rel[0] ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
    /* Symbolic links are followed, to files and to folders alike. */
    if (fstatat(dirfd, de->d_name, &st, 0) != 0) {
      discover_add_msg(w->res,
                       xasprintf("Skipped %s: %s", child,
                                 errno == ENOENT ? "broken symbolic link"
                                 : errno == ELOOP
                                     ? "symbolic link loop"
                                     : strerror(errno)));
      free(child);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      int fd = -1;
      if (discover_on_path(&me, &st))
        discover_add_msg(w->res,
                         xasprintf("Skipped %s: symbolic link loop", child));
      else if (depth + 1 >= DISCOVER_MAX_DEPTH)
        discover_add_msg(w->res, xasprintf("Skipped %s: deeper than %d levels",
                                           child, DISCOVER_MAX_DEPTH));
      else if ((fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY)) < 0)
        discover_add_msg(w->res, xasprintf("Cannot read folder %s: %s", child,
                                           strerror(errno)));
      else
        discover_walk_dir(w, fd, child, depth + 1, &me);
      free(child);
    } else if (!S_ISREG(st.st_mode)) {
      discover_add_msg(w->res, xasprintf("Skipped %s: %s", child,
                                         discover_kind(st.st_mode)));
      free(child);
    } else if (!discover_is_store(de->d_name)) {
      if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->files = xrealloc(w->files, sizeof *w->files * (size_t)w->cap);
      }
      w->files[w->n++] = (struct discover_file){
          child, (uint64_t)st.st_size,
          (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
    } else {
      free(child);
    }
  }
  closedir(d);
}

static int discover_cmp_file(const void *a, const void *b) {
  return strcmp(((const struct discover_file *)a)->rel,
                ((const struct discover_file *)b)->rel);
}

static const char *discover_base(const char *rel) {
  const char *s = strrchr(rel, '/');
  return s ? s + 1 : rel;
}

static bool discover_ends(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Parses digits at *p into *v; advances *p.  Returns false if none. */
static bool discover_digits(const char **p, uint64_t *v) {
  const char *s = *p;
  uint64_t x = 0;
  if (!isdigit((unsigned char)*s))
    return false;
  while (isdigit((unsigned char)*s)) {
    if (x > (UINT64_MAX - 9) / 10)
      return false;
    x = x * 10 + (uint64_t)(*s++ - '0');
  }
  *p = s;
  *v = x;
  return true;
}

/* "<inst>_pid_<digits>": sets instance and pid, returns true. */
static bool discover_pid_folder(const char *name, char **instance,
                                int64_t *pid) {
  const char *m = strstr(name, "_pid_");
  if (!m || m == name)
    return false;
  const char *p = m + 5;
  uint64_t v;
  if (!discover_digits(&p, &v) || *p || v > INT64_MAX)
    return false;
  *instance = xstrndup(name, (size_t)(m - name));
  *pid = (int64_t)v;
  return true;
}

/* Parses an NTFF file name into dev's mode, hash, nc and session. */
static void discover_parse_ntff(const char *base, struct discover_device *dev) {
  const char *p = base;
  uint64_t a, b, c;
  dev->mode = DISCOVER_OTHER;
  dev->hash = 0;
  dev->nc = -1;
  dev->session = -1;
  if (strncmp(p, "profile_nc_", 11) == 0) {
    p += 11;
    if (discover_digits(&p, &a) && strncmp(p, "_session_", 9) == 0) {
      p += 9;
      if (discover_digits(&p, &b) && strcmp(p, ".ntff") == 0 && a < 65536 &&
          b < INT64_MAX) {
        dev->mode = DISCOVER_SESSION;
        dev->nc = (int)a;
        dev->session = (int64_t)b;
      }
    }
    return;
  }
  if (!discover_digits(&p, &a))
    return;
  if (strncmp(p, "_instid_", 8) == 0) {
    p += 8;
    if (!discover_digits(&p, &b))
      return;
  }
  if (strncmp(p, "_vnc_", 5) != 0)
    return;
  p += 5;
  if (discover_digits(&p, &c) && strcmp(p, ".ntff") == 0 && c < 65536) {
    dev->mode = DISCOVER_MODEL;
    dev->hash = a;
    dev->nc = (int)c;
  }
}

/* The hash of a NEFF name (neff_<h>.neff, neff_<h>_vnc_<n>.neff,
 * graph_<h>.neff), or 0. */
static uint64_t discover_neff_hash(const char *base) {
  const char *p;
  uint64_t h;
  if (strncmp(base, "neff_", 5) == 0)
    p = base + 5;
  else if (strncmp(base, "graph_", 6) == 0)
    p = base + 6;
  else
    return 0;
  if (!discover_digits(&p, &h))
    return 0;
  return (strcmp(p, ".neff") == 0 || strncmp(p, "_vnc_", 5) == 0) ? h : 0;
}

static char *discover_dirname(const char *rel) {
  const char *s = strrchr(rel, '/');
  return s ? xstrndup(rel, (size_t)(s - rel)) : xstrdup("");
}

/* The process folder a file belongs to: the nearest ancestor named
 * <inst>_pid_<pid>, descending one timestamp level if the file is below
 * one.  Returns the folder (relative) that holds the capture, or NULL. */
static char *discover_owner(const char *rel, char **instance, int64_t *pid) {
  char *dir = discover_dirname(rel);
  char *best = NULL;
  /* Walk the path components; remember the deepest pid folder. */
  size_t len = strlen(dir);
  for (size_t i = 0; i <= len; i++) {
    if (i == len || dir[i] == '/') {
      size_t start = i;
      while (start > 0 && dir[start - 1] != '/')
        start--;
      char *comp = xstrndup(dir + start, i - start);
      char *inst;
      int64_t p;
      if (discover_pid_folder(comp, &inst, &p)) {
        free(*instance);
        *instance = inst;
        *pid = p;
        free(best);
        /* The capture folder: the pid folder, or its direct child. */
        size_t end = i;
        if (end < len) {
          size_t j = end + 1;
          while (j < len && dir[j] != '/')
            j++;
          end = j;
        }
        best = xstrndup(dir, end);
      }
      free(comp);
    }
  }
  free(dir);
  return best;
}

static struct discover_process *discover_proc(struct discover_result *r,
                                              const char *rel,
                                              const char *instance,
                                              int64_t pid) {
  for (int i = 0; i < r->n_procs; i++)
    if (strcmp(r->procs[i].rel, rel) == 0)
      return &r->procs[i];
  r->procs = xrealloc(r->procs, sizeof *r->procs * (size_t)(r->n_procs + 1));
  struct discover_process *p = &r->procs[r->n_procs++];
  memset(p, 0, sizeof *p);
  p->rel = xstrdup(rel);
  p->instance_id = xstrdup(instance ? instance : "");
  p->pid = pid;
  return p;
}

static void discover_push(char ***v, int *n, const char *s) {
  *v = xrealloc(*v, sizeof(char *) * (size_t)(*n + 1));
  (*v)[(*n)++] = xstrdup(s);
}

static bool discover_is_json(const char *base) {
  return discover_ends(base, ".json") || discover_ends(base, ".json.gz");
}

static bool discover_is_perfetto(const char *base) {
  return discover_ends(base, ".pftrace") ||
         discover_ends(base, ".pftrace.gz") ||
         discover_ends(base, ".perfetto-trace") ||
         discover_ends(base, ".perfetto-trace.gz");
}

/* Pairs each model-mode device with a NEFF of the same hash: one in the
 * same folder first, else anywhere in the tree. */
static void discover_pair(struct discover_result *r) {
  for (int i = 0; i < r->n_procs; i++) {
    struct discover_process *p = &r->procs[i];
    for (int j = 0; j < p->n_devices; j++) {
      struct discover_device *d = &p->devices[j];
      if (d->mode != DISCOVER_MODEL)
        continue;
      char *dir = discover_dirname(d->ntff);
      const char *any = NULL;
      for (int k = 0; k < r->n_neffs; k++) {
        if (discover_neff_hash(discover_base(r->neffs[k])) != d->hash)
          continue;
        char *nd = discover_dirname(r->neffs[k]);
        bool same = strcmp(nd, dir) == 0;
        free(nd);
        if (same) {
          any = r->neffs[k];
          break;
        }
        if (!any)
          any = r->neffs[k];
      }
      free(dir);
      if (any)
        d->neff = xstrdup(any);
    }
  }
}

/* Why a file of --dir is not read (a message for the Warning table). */
static char *discover_unknown(const char *rel, const char *base,
                              bool in_process) {
  if (!in_process && (strcmp(base, "trace_info.pb") == 0 ||
                      strcmp(base, "ntrace.pb") == 0 ||
                      strcmp(base, "cpu_util.pb") == 0 ||
                      strcmp(base, "host_mem.pb") == 0))
    return xasprintf("Skipped %s: system capture files belong in an "
                     "<instance-id>_pid_<pid> folder",
                     rel);
  return xasprintf("Skipped %s: not a profile file this server reads", rel);
}

static int discover_cmp_proc(const void *a, const void *b) {
  return strcmp(((const struct discover_process *)a)->rel,
                ((const struct discover_process *)b)->rel);
}

int discover_run(const char *dir, struct discover_result **out, char **cause) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    int e = errno;
    *cause = xasprintf("cannot open --dir %s: %s", dir, strerror(e));
    return -e;
  }
  struct discover_result *r = xcalloc(1, sizeof *r);
  struct discover_walk w = {.res = r};
  discover_walk_dir(&w, fd, "", 0, NULL);
  if (w.n > 1)
    qsort(w.files, (size_t)w.n, sizeof *w.files, discover_cmp_file);

  uint64_t h = util_hash("nex-discover-1", 14);
  for (int i = 0; i < w.n; i++) {
    struct discover_file *f = &w.files[i];
    const char *base = discover_base(f->rel);
    char buf[64];
    int n = snprintf(buf, sizeof buf, "|%llu|%lld|",
                     (unsigned long long)f->size, (long long)f->mtime_ns);
    h ^= util_hash(f->rel, strlen(f->rel));
    h = h * 1099511628211ULL ^ util_hash(buf, (size_t)n);

    char *instance = NULL;
    int64_t pid = -1;
    char *owner = discover_owner(f->rel, &instance, &pid);
    struct discover_process *p = NULL;
    if (owner) /* the capture folder: where trace_info.pb/ntrace.pb live */
      p = discover_proc(r, owner, instance, pid);
    bool counted = true;
    if (discover_ends(base, ".neff")) {
      discover_push(&r->neffs, &r->n_neffs, f->rel);
      counted = false; /* only their 1 KiB header is read */
    } else if (discover_ends(base, ".ntff")) {
      if (!p)
        p = discover_proc(r, "", "", -1);
      p->devices =
          xrealloc(p->devices, sizeof *p->devices * (size_t)(p->n_devices + 1));
      struct discover_device *d = &p->devices[p->n_devices++];
      memset(d, 0, sizeof *d);
      d->ntff = xstrdup(f->rel);
      d->size = f->size;
      discover_parse_ntff(base, d);
    } else if (p && strcmp(base, "trace_info.pb") == 0) {
      free(p->trace_info);
      p->trace_info = xstrdup(f->rel);
    } else if (p && strcmp(base, "ntrace.pb") == 0) {
      free(p->ntrace);
      p->ntrace = xstrdup(f->rel);
    } else if (p && strcmp(base, "cpu_util.pb") == 0) {
      free(p->cpu_util);
      p->cpu_util = xstrdup(f->rel);
    } else if (p && strcmp(base, "host_mem.pb") == 0) {
      free(p->host_mem);
      p->host_mem = xstrdup(f->rel);
    } else if (discover_is_perfetto(base)) {
      discover_push(&r->perfetto, &r->n_perfetto, f->rel);
    } else if (discover_is_json(base)) {
      if (p)
        discover_push(&p->json, &p->n_json, f->rel);
      else
        discover_push(&r->json, &r->n_json, f->rel);
    } else {
      counted = false;
      discover_add_msg(r, discover_unknown(f->rel, base, p != NULL));
    }
    if (counted) {
      r->total_bytes += f->size;
      r->n_files++;
    }
    free(owner);
    free(instance);
  }
  snprintf(r->fingerprint, sizeof r->fingerprint, "%016llx",
           (unsigned long long)h);

  /* A folder with system files but no trace_info.pb is not a system
   * profile: its system files are left out, as the vendor tool does. */
  for (int i = 0; i < r->n_procs; i++) {
    struct discover_process *p = &r->procs[i];
    if (!p->trace_info && (p->ntrace || p->cpu_util || p->host_mem)) {
      discover_add_msg(
          r, xasprintf("No metadata found for system profile: %s", p->rel));
      free(p->ntrace);
      free(p->cpu_util);
      free(p->host_mem);
      p->ntrace = p->cpu_util = p->host_mem = NULL;
    }
  }
  discover_pair(r);
  if (r->n_procs > 1)
    qsort(r->procs, (size_t)r->n_procs, sizeof *r->procs, discover_cmp_proc);
  for (int i = 0; i < w.n; i++)
    free(w.files[i].rel);
  free(w.files);
  *out = r;
  return 0;
}

static void discover_free_strv(char **v, int n) {
  for (int i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void discover_free(struct discover_result *r) {
  if (!r)
    return;
  for (int i = 0; i < r->n_procs; i++) {
    struct discover_process *p = &r->procs[i];
    free(p->rel);
    free(p->instance_id);
    free(p->trace_info);
    free(p->ntrace);
    free(p->cpu_util);
    free(p->host_mem);
    discover_free_strv(p->json, p->n_json);
    for (int j = 0; j < p->n_devices; j++) {
      free(p->devices[j].ntff);
      free(p->devices[j].neff);
    }
    free(p->devices);
  }
  free(r->procs);
  discover_free_strv(r->json, r->n_json);
  discover_free_strv(r->perfetto, r->n_perfetto);
  discover_free_strv(r->messages, r->n_messages);
  discover_free_strv(r->neffs, r->n_neffs);
  free(r);
}
