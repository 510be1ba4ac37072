/* ingest.h -- profile directory -> store.
 *
 * Runs discovery, the decoders, and the normalisation (base tracks,
 * interning, hardware clock alignment, lanes, flows, LOD) and writes a new
 * store file, renamed into place only when complete.  An unchanged
 * directory (same files, sizes and mtimes, same filters) reuses its store.
 * Bad input never stops the ingest: each unusable file or record becomes a
 * Warning row and one line on stderr naming the file and byte offset.
 *
 * Ownership: strings in ingest_opts are borrowed for the call; *cause
 * strings are malloc'd for the caller to free.
 */
#ifndef NEX_INGEST_H
#define NEX_INGEST_H

#include <stddef.h>
#include <stdint.h>


struct filter;

/* How far an ingest is, as published to the page. */
struct ingest_progress {
  uint64_t files_done, files_total;
  uint64_t events;            /* records stored so far */
  uint64_t bytes, bytes_total;
  char file[512];             /* file being read, relative to --dir */
};

enum ingest_progress_style { INGEST_QUIET, INGEST_BAR, INGEST_LINES };

/* The default sort budget (ingest_opts.sort_budget): the slices', less
 * the flow endpoints' (ingest_flows.h); half of it bounds the instruction
 * dependencies resolved in memory (ingest_deps.h). */
#define INGEST_SORT_BUDGET (64u << 20)

struct ingest_opts {
  const char *dir;              /* the profile directory */
  const char *db_path;          /* the store file to build or reuse */
  const struct filter *filter;  /* never NULL */
  int ignore_device, ignore_system;
  int force;                    /* rebuild even if the store is current */
  enum ingest_progress_style style;
  size_t sort_budget;           /* bytes of slices held in memory for
                                   their sort before spilling; 0:
                                   INGEST_SORT_BUDGET */
  /* Optional callbacks, called from the ingest thread. */
  void (*on_progress)(void *ud, const struct ingest_progress *p);
  void (*on_warning)(void *ud, const char *file, uint64_t offset,
                     const char *msg);
  void *ud;
};

struct ingest_stats {
  uint64_t events;     /* slices + counter samples stored */
  uint64_t warnings;   /* Warning rows */
  uint64_t skipped;    /* records or files that could not be used */
  uint64_t bytes;      /* bytes read */
  /* rate counters summed by a scan of the stored slices after the load
   * rather than as their slices were placed (ingest_rates.h) */
  uint64_t rates_scanned;
  int reused;          /* 1 if an existing current store was reused */
  double seconds;
};

/* Builds (or reuses) the store for o->dir at o->db_path.  Returns 0 or a
 * negative errno-style code with *cause set when no store could be made
 * (unreadable dir, full disk, ...); no partial store is left behind. */
int ingest_run(const struct ingest_opts *o, struct ingest_stats *st,
               char **cause);

/* The default store path for `dir`: "$XDG_CACHE_HOME (or ~/.cache, or
 * /tmp)/neuron-explorer-server/<hash of the real path>.db", creating the
 * folder.  Returns a malloc'd path or NULL with *cause set. */
char *ingest_default_db_path(const char *dir, char **cause);

#endif
