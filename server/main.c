/* main.c -- options, start-up and shut-down order of neuron-explorer-server.
 *
 *   neuron-explorer-server --dir DIR [options]
 *
 * Start-up: parse options, check --dir, start the one-port server (unless
 * --ingest-only), run the ingest in a background thread that publishes its
 * progress and the finished store through app.h, then wait for SIGINT or
 * SIGTERM.  Shut-down: stop the server, join the ingest, free the state.
 */
#include "annot.h"
#include "app.h"
#include "export.h"
#include "filter.h"
#include "ingest.h"
#include "log.h"
#include "net.h"
#include "query.h"
#include "store.h"
#include "util.h"
#include "watch.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAIN_POOL_SIZE 4
#define MAIN_WARM_BYTES (32 << 20) /* coarse LOD read when a store opens */
/* and then, in the background, at the lowest priority */
#define MAIN_WARM_MORE_BYTES (1024LL << 20)
/* Buffers from this size on are mapped and unmapped whole: while an
 * ingest runs, and while the server only answers (main_ingest_once). */
#define MAIN_MMAP_INGEST (1 << 20)
#define MAIN_MMAP_SERVE (32 << 20)
/* Free bytes at the top of a heap kept for the next buffers: glibc's
 * default while an ingest runs (8 MiB in each thread's heap took the
 * peak RSS past 256 MiB), twice the mapping threshold when serving (as
 * glibc's dynamic threshold kept). */
#define MAIN_TRIM_INGEST (128 << 10)
#define MAIN_TRIM_SERVE (64 << 20)

/* Exit statuses (doc/neuron-explorer-server.1). */
enum {
  EXIT_OK = 0,
  EXIT_SKIPPED = 1, /* --ingest-only: the store is complete but some input
                       could not be used (see the Warning table) */
  EXIT_USAGE = 2,   /* bad option, missing or unreadable --dir */
  EXIT_INGEST = 3,  /* no store could be built */
  EXIT_SERVE = 4,   /* the server could not start */
  EXIT_INTERRUPTED = 5 /* SIGINT/SIGTERM before the first ingest ended */
};

struct main_opts {
  const char *dir, *db, *bind, *web_root, *out_format, *out_file;
  int port, ingest_only, quiet, verbose, force, no_watch;
  struct ingest_opts ingest;
  struct filter *filter;
};

static void main_usage(FILE *f) {
  fputs(
      "usage: neuron-explorer-server --dir DIR [options]\n"
      "\n"
      "Ingests a Neuron profile directory into SQLite and serves the viewer\n"
      "and its API on one port (open http://localhost:3001).\n"
      "\n"
      "  --dir DIR          profile directory (required)\n"
      "  --db FILE          store file (default: a cache folder, not DIR)\n"
      "  --port N           port (default 3001)\n"
      "  --bind ADDR        address to listen on (default 127.0.0.1)\n"
      "  --web-root DIR     static files of the viewer (default: installed)\n"
      "  --ingest-only      build the store and exit (status 1 if some input\n"
      "                     was skipped)\n"
      "  --force            rebuild the store even if it is current\n"
      "  --no-watch         do not re-ingest when files under DIR change\n"
      "  --system-trace-filter-neuron-core LIST    e.g. 0,2,4 or 0-3\n"
      "  --system-trace-filter-event-type LIST     names, hardware, software,\n"
      "                                            ^name to exclude\n"
      "  --system-trace-filter-instance-id LIST    instance ids\n"
      "  --ignore-device-profile   skip device traces (NTFF)\n"
      "  --ignore-system-profile   skip system traces\n"
      "  --output-format FMT  ingest, then write perfetto (Chrome-trace JSON\n"
      "                     that Perfetto opens), pftrace (Perfetto\n"
      "                     protobuf), json (the vendor's\n"
      "                     system_profile.json shape), csv, summary-text\n"
      "                     or summary-json, and exit\n"
      "  --output-file F    where --output-format writes (default stdout)\n"
      "  --quiet            no progress output\n"
      "  --verbose          debug lines too: the ingest's phases and their\n"
      "                     times, the HTTP and WebSocket libraries'\n"
      "                     messages\n"
      "  --version, --help\n"
      "\n"
      "Exit status: 0 done, 1 some input skipped (--ingest-only), 2 usage,\n"
      "3 no store could be built, 4 cannot listen, 5 interrupted (SIGINT or\n"
      "SIGTERM) during the first ingest, its temporary store removed.\n",
      f);
}

static int main_parse(int argc, char **argv, struct main_opts *o) {
  enum {
    OPT_DIR = 256,
    OPT_DB,
    OPT_PORT,
    OPT_BIND,
    OPT_WEB,
    OPT_INGEST_ONLY,
    OPT_FORCE,
    OPT_NO_WATCH,
    OPT_F_CORE,
    OPT_F_TYPE,
    OPT_F_INST,
    OPT_IGN_DEV,
    OPT_IGN_SYS,
    OPT_QUIET,
    OPT_VERBOSE,
    OPT_VERSION,
    OPT_HELP,
    OPT_OUT_FORMAT,
    OPT_OUT_FILE
  };
  static const struct option longs[] = {
      {"dir", required_argument, NULL, OPT_DIR},
      {"db", required_argument, NULL, OPT_DB},
      {"port", required_argument, NULL, OPT_PORT},
      {"bind", required_argument, NULL, OPT_BIND},
      {"web-root", required_argument, NULL, OPT_WEB},
      {"ingest-only", no_argument, NULL, OPT_INGEST_ONLY},
      {"force", no_argument, NULL, OPT_FORCE},
      {"no-watch", no_argument, NULL, OPT_NO_WATCH},
      {"system-trace-filter-neuron-core", required_argument, NULL, OPT_F_CORE},
      {"system-trace-filter-event-type", required_argument, NULL, OPT_F_TYPE},
      {"system-trace-filter-instance-id", required_argument, NULL, OPT_F_INST},
      {"ignore-device-profile", no_argument, NULL, OPT_IGN_DEV},
      {"ignore-system-profile", no_argument, NULL, OPT_IGN_SYS},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"verbose", no_argument, NULL, OPT_VERBOSE},
      {"version", no_argument, NULL, OPT_VERSION},
      {"help", no_argument, NULL, OPT_HELP},
      {"output-format", required_argument, NULL, OPT_OUT_FORMAT},
      {"output-file", required_argument, NULL, OPT_OUT_FILE},
      {NULL, 0, NULL, 0}};
  int c;
  char *cause = NULL;
  int64_t v;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case OPT_DIR:
      o->dir = optarg;
      break;
    case OPT_DB:
      o->db = optarg;
      break;
    case OPT_PORT:
      if (util_parse_i64(optarg, &v) || v < 0 || v > 65535) {
        log_error("--port: expected a number from 0 (any free port) to "
                  "65535, got \"%s\"",
                  optarg);
        return -1;
      }
      o->port = (int)v;
      break;
    case OPT_BIND:
      o->bind = optarg;
      break;
    case OPT_WEB:
      o->web_root = optarg;
      break;
    case OPT_INGEST_ONLY:
      o->ingest_only = 1;
      break;
    case OPT_FORCE:
      o->force = 1;
      break;
    case OPT_NO_WATCH:
      o->no_watch = 1;
      break;
    case OPT_F_CORE:
      rc = filter_set_cores(o->filter, optarg, &cause);
      break;
    case OPT_F_TYPE:
      rc = filter_set_event_types(o->filter, optarg, &cause);
      break;
    case OPT_F_INST:
      rc = filter_set_instances(o->filter, optarg, &cause);
      break;
    case OPT_IGN_DEV:
      o->ingest.ignore_device = 1;
      break;
    case OPT_IGN_SYS:
      o->ingest.ignore_system = 1;
      break;
    case OPT_QUIET:
      o->quiet = 1;
      break;
    case OPT_VERBOSE:
      o->verbose = 1;
      break;
    case OPT_VERSION:
      printf("neuron-explorer-server %s\n", PACKAGE_VERSION);
      exit(EXIT_OK);
    case OPT_HELP:
      main_usage(stdout);
      exit(EXIT_OK);
    case OPT_OUT_FORMAT:
      o->out_format = optarg;
      break;
    case OPT_OUT_FILE:
      o->out_file = optarg;
      break;
    default:
      main_usage(stderr);
      return -1;
    }
    if (rc) {
      log_error("%s: %s", longs[c - OPT_DIR].name, cause);
      free(cause);
      return -1;
    }
  }
  if (optind < argc) {
    log_error("unexpected argument \"%s\" (the profile directory goes "
              "after --dir)",
              argv[optind]);
    return -1;
  }
  if (o->out_file && !o->out_format) {
    log_error("--output-file needs --output-format");
    return -1;
  }
  if (o->quiet && o->verbose) {
    log_error("--quiet and --verbose contradict each other: give one");
    return -1;
  }
  if (o->verbose)
    log_set_level(LOG_DEBUG);
  if (!o->dir) {
    log_error("--dir is required: the profile directory to open");
    return -1;
  }
  struct stat sb;
  if (stat(o->dir, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
      access(o->dir, R_OK | X_OK) != 0) {
    log_error("--dir %s: %s", o->dir,
              errno ? strerror(errno) : "not a readable directory");
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- export */

/* Writes the whole store in o->out_format to o->out_file (or stdout).
 * Returns an exit status. */
static int main_export(struct main_opts *o, const char *db_path) {
  char *cause = NULL;
  struct store_pool *pool;
  if (store_pool_open(db_path, 1, &pool, &cause) < 0) {
    log_error("cannot open the store: %s", cause);
    free(cause);
    return EXIT_INGEST;
  }
  sqlite3 *db = store_pool_get(pool);
  /* one pass over the whole store: read through SQLite's bounded page
   * cache, not the pool's memory map, whose pages would all stay resident
   * (the RSS grew to the store's size) */
  sqlite3_exec(db, "PRAGMA mmap_size=0", NULL, NULL, NULL);
  struct query_err e = {0};
  struct export *x;
  int status = EXIT_OK;
  if (export_open(db, o->out_format, INT64_MIN, INT64_MAX, &x, &e) < 0) {
    log_error("--output-format %s: %s", o->out_format, e.detail);
    status = EXIT_USAGE;
  } else {
    FILE *f = o->out_file ? fopen(o->out_file, "w") : stdout;
    if (!f) {
      log_error("--output-file %s: %s", o->out_file, strerror(errno));
      status = EXIT_USAGE;
    }
    struct sbuf b = {0};
    int rc = 1;
    while (f && rc > 0) {
      sbuf_reset(&b);
      rc = export_next(x, &b, &e);
      if (rc < 0)
        log_error("export: %s", e.detail);
      else if (fwrite(b.s, 1, b.len, f) != b.len)
        rc = -EIO;
    }
    if (f && (rc < 0 || (f != stdout ? fclose(f) : fflush(f)) != 0)) {
      log_error("cannot write the export: %s",
                rc < 0 && rc != -EIO ? e.detail : strerror(errno));
      status = EXIT_INGEST;
    }
    sbuf_free(&b);
    export_close(x);
  }
  store_pool_put(pool, db);
  store_pool_close(pool);
  return status;
}

/* ---------------------------------------------------------------- serve */

struct main_ingest {
  struct main_opts *o;
  struct app *app;
  char *db_path;
  int rc;
  uint64_t skipped;
  struct watch *watch; /* started by the ingest thread once it is done */
  atomic_int done;     /* the first ingest and the watcher's start are over */
  pthread_t waiter;    /* --ingest-only: the thread waiting for signals */
};

static void main_on_progress(void *ud, const struct ingest_progress *p) {
  app_set_progress(ud, p);
}

static void main_on_warning(void *ud, const char *file, uint64_t offset,
                            const char *msg) {
  app_add_warning(ud, file, offset, msg);
}

/* Reads the finer LOD levels of store `arg` (malloc'd, freed here) on a
 * connection of its own at the lowest CPU and I/O priority, so that
 * after a restart the windows of a few seconds find their pages in the
 * page cache too. */
static void *main_warm_thread(void *arg) {
  char *path = arg;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  setpriority(PRIO_PROCESS, (id_t)tid, 19);
  /* IOPRIO_WHO_PROCESS (1) of this thread, class IDLE (3 << 13) */
  syscall(SYS_ioprio_set, 1, tid, 3 << 13);
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
    query_warm(db, MAIN_WARM_MORE_BYTES);
  sqlite3_close(db);
  free(path);
  return NULL;
}

/* Starts main_warm_thread on store `path` (detached: it holds nothing the
 * server frees, and a store replaced meanwhile stays readable to it). */
static void main_warm_more(const char *path) {
  pthread_t th;
  pthread_attr_t at;
  char *p = xstrdup(path);
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &at, main_warm_thread, p) != 0)
    free(p);
  pthread_attr_destroy(&at);
}

/* Runs one ingest and publishes the result.  Returns 0 or negative. */
static int main_ingest_once(struct main_ingest *mi) {
  char *cause = NULL;
  struct ingest_stats st;
  mi->o->ingest.db_path = mi->db_path;
  /* A fixed threshold: glibc's own rises to the size of each big buffer
   * freed (up to 32 MiB), after which the ingest's chunks, sort buffers
   * and batches come from the threads' heaps and their freed pages stay
   * there (the ingest of 115 M events: peak RSS 387 MiB, 293 MiB with
   * this alone).  Answers keep their buffers in the heaps: mapping each
   * anew cost the viewport benchmark 7 % of its throughput. */
  mallopt(M_MMAP_THRESHOLD, MAIN_MMAP_INGEST);
  mallopt(M_TRIM_THRESHOLD, MAIN_TRIM_INGEST);
  int rc = ingest_run(&mi->o->ingest, &st, &cause);
  mallopt(M_MMAP_THRESHOLD, MAIN_MMAP_SERVE);
  mallopt(M_TRIM_THRESHOLD, MAIN_TRIM_SERVE);
  if (rc < 0) {
    log_error("ingest failed: %s", cause);
    if (mi->app)
      app_set_failed(mi->app, cause);
    free(cause);
    return rc;
  }
  mi->skipped = st.skipped;
  if (!mi->o->quiet)
    log_info("%s %s: %llu events, %llu warnings, %.2f s",
             st.reused ? "reopened" : "ingested", mi->db_path,
             (unsigned long long)st.events, (unsigned long long)st.warnings,
             st.seconds);
  if (!mi->app)
    return 0;
  struct store_pool *pool;
  rc = store_pool_open(mi->db_path, MAIN_POOL_SIZE, &pool, &cause);
  if (rc < 0) {
    log_error("cannot open the store: %s", cause);
    app_set_failed(mi->app, cause);
    free(cause);
    return rc;
  }
  /* the names of window answers and the pages of the widest windows,
   * read now rather than by the first answers */
  sqlite3 *db = store_pool_get(pool);
  store_pool_names(pool, db);
  query_warm(db, MAIN_WARM_BYTES);
  store_pool_put(pool, db);
  app_set_ready(mi->app, pool, st.events, st.warnings);
  main_warm_more(mi->db_path);
  return 0;
}

/* Called by the watcher (its own thread) when files under --dir changed:
 * re-ingests; the old store keeps answering until the new one is ready. */
static void main_on_change(void *ud, const char *const *files, int n) {
  struct main_ingest *mi = ud;
  app_notify_new_data(mi->app, files, n);
  main_ingest_once(mi);
}

/* The first ingest, then the watcher for new data. */
static void *main_ingest_thread(void *arg) {
  struct main_ingest *mi = arg;
  mi->rc = main_ingest_once(mi);
  char *cause = NULL;
  if (!mi->o->no_watch &&
      watch_start(mi->o->dir, main_on_change, mi, &mi->watch, &cause) < 0) {
    log_warn("not watching %s for new data: %s", mi->o->dir, cause);
    free(cause);
  }
  atomic_store(&mi->done, 1);
  return NULL;
}

/* SIGINT/SIGTERM came during an ingest, which cannot be interrupted
 * cleanly: removes its temporary store (and SQLite's files beside it), so
 * no half-written store is ever used, and exits with EXIT_INTERRUPTED (the
 * store was not built).  Does not return. */
static void main_interrupted(const char *db_path, int sig) {
  static const char *const suffix[] = {".tmp", ".tmp-journal", ".tmp-wal",
                                       ".tmp-shm"};
  for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
    char *tmp = xasprintf("%s%s", db_path, suffix[i]);
    unlink(tmp);
    free(tmp);
  }
  log_info("interrupted during the ingest (%s); no store was written",
           strsignal(sig));
  exit(EXIT_INTERRUPTED);
}

/* Runs main_ingest_once() and then wakes the waiting main thread. */
static void *main_ingest_only_thread(void *arg) {
  struct main_ingest *mi = arg;
  mi->rc = main_ingest_once(mi);
  atomic_store(&mi->done, 1);
  pthread_kill(mi->waiter, SIGUSR1);
  return NULL;
}

/* The command-line ingest (--ingest-only, --output-format): runs in its own
 * thread while this one waits for SIGINT/SIGTERM (main_interrupted(), as
 * while serving) or for the ingest's end.  Returns main_ingest_once()'s
 * value; the signals have their default handlers again. */
static int main_ingest_only(struct main_ingest *mi) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  mi->waiter = pthread_self();
  pthread_t th;
  if (pthread_create(&th, NULL, main_ingest_only_thread, mi) != 0)
    fatal("cannot start the ingest thread");
  int sig;
  do
    sigwait(&set, &sig);
  while (sig == SIGUSR1 && !atomic_load(&mi->done));
  if (sig != SIGUSR1 && !atomic_load(&mi->done))
    main_interrupted(mi->db_path, sig);
  pthread_join(th, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return mi->rc;
}

static char *main_web_root(const char *opt) {
  if (opt)
    return xstrdup(opt);
  const char *env = getenv("NEX_WEB_ROOT");
  if (env && *env)
    return xstrdup(env);
  return xstrdup(PKGDATADIR "/web");
}

static int main_serve(struct main_opts *o, char *db_path) {
  /* SIGINT/SIGTERM are taken with sigwait(); every thread started from
   * here on inherits the mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  char *web = main_web_root(o->web_root);
  char *index = xasprintf("%s/index.html", web);
  if (access(index, R_OK) != 0)
    log_error("no web page at %s (pass --web-root DIR or set NEX_WEB_ROOT); "
              "the API still answers", index);
  free(index);
  struct app *app = app_new(o->dir, web);
  char *notes = xasprintf("%s%s", db_path, ANNOT_SUFFIX);
  app_set_annotations(app, annot_new(notes));
  free(notes);
  struct net *net = NULL;
  char *cause = NULL;
  int rc = net_start(app, o->bind, o->port, &net, &cause);
  if (rc < 0) {
    log_error("cannot serve on %s:%d: %s", o->bind, o->port, cause);
    free(cause);
    app_free(app);
    free(web);
    return EXIT_SERVE;
  }
  if (!o->quiet)
    log_info("serving %s on http://%s:%d (ssh -L %d:localhost:%d <host>)",
             o->dir, strcmp(o->bind, "127.0.0.1") == 0 ? "localhost" : o->bind,
             net_port(net), net_port(net), net_port(net));
  o->ingest.ud = app;
  struct main_ingest mi = {.o = o, .app = app, .db_path = db_path};
  pthread_t th;
  if (pthread_create(&th, NULL, main_ingest_thread, &mi) != 0)
    fatal("cannot start the ingest thread");
  int sig;
  sigwait(&set, &sig);
  if (!atomic_load(&mi.done))
    main_interrupted(db_path, sig);
  if (!o->quiet)
    log_info("shutting down (%s)", strsignal(sig));
  pthread_join(th, NULL);
  watch_stop(mi.watch);
  net_stop(net);
  app_free(app);
  free(web);
  return EXIT_OK;
}

int main(int argc, char **argv) {
  struct main_opts o = {.bind = "127.0.0.1", .port = 3001};
  o.filter = filter_new();
  o.ingest.filter = o.filter;
  if (main_parse(argc, argv, &o) < 0) {
    filter_free(o.filter);
    return EXIT_USAGE;
  }
  signal(SIGPIPE, SIG_IGN);

  o.ingest.dir = o.dir;
  o.ingest.force = o.force;
  o.ingest.style = o.quiet                 ? INGEST_QUIET
                   : isatty(STDERR_FILENO) ? INGEST_BAR
                                           : INGEST_LINES;
  char *cause = NULL;
  char *db = o.db ? xstrdup(o.db) : ingest_default_db_path(o.dir, &cause);
  if (!db) {
    log_error("%s", cause);
    free(cause);
    filter_free(o.filter);
    return EXIT_USAGE;
  }
  int status;
  if (o.ingest_only || o.out_format) {
    struct main_ingest mi = {.o = &o, .db_path = db};
    if (main_ingest_only(&mi) < 0)
      status = EXIT_INGEST;
    else if (o.out_format)
      status = main_export(&o, db);
    else
      status = mi.skipped ? EXIT_SKIPPED : EXIT_OK;
  } else {
    o.ingest.on_progress = main_on_progress;
    o.ingest.on_warning = main_on_warning;
    status = main_serve(&o, db);
  }
  free(db);
  filter_free(o.filter);
  return status;
}
