/* fmt_chrome.h -- streaming decoder for the Chrome Trace Event Format.
 *
 * Reads *.json and *.json.gz traces (JSON Array or Object format) record by
 * record with bounded memory and reports normalized records through
 * callbacks.  Knows nothing of SQLite.
 *
 * Ownership: every pointer inside a record passed to a callback is borrowed
 * and valid only during that callback; copy what you keep.
 */
#ifndef NEX_FMT_CHROME_H
#define NEX_FMT_CHROME_H

#include <stddef.h>
#include <stdint.h>

/* A slice or instant.  X events; B/E pairs matched per (pid, tid) stack;
 * b/e (and legacy S/F) async pairs matched by (cat, id, name); n, i/I and R
 * are instants (dur_ns = 0, instant = 1).  An unmatched B or b is reported at
 * the end with incomplete = 1 and a duration up to the last timestamp of the
 * trace. */
struct fmt_chrome_slice {
  const char *name;        /* never NULL ("" when absent) */
  const char *cat;         /* NULL when absent */
  const char *pid;         /* pid as text: "12", "-3", "Browser"; "0" when
                              absent; never NULL */
  const char *tid;         /* tid as text, the pid when absent; for async
                              slices the async id scope "async:<cat>:<id>";
                              never NULL */
  int64_t ts_ns;           /* exact, from the decimal text (+ baseTimeNanoseconds) */
  int64_t dur_ns;          /* >= 0 */
  int instant;             /* 1 for i/I/n/R and zero-length marks */
  int incomplete;          /* 1 for an unmatched B/b */
  int async;               /* 1 for b/e/n, S/T/F */
  const char *args_json;   /* the raw "args" object text (UTF-8 repaired), or NULL */
  const uint64_t *flow_ids;/* flow ids named by args.flow_id (list of strings
                              or numbers): framework -> runtime chain */
  size_t n_flow_ids;
  uint64_t offset;         /* byte offset of the event in the (decompressed) file */
};

/* One counter sample: a C event produces one sample per numeric args key
 * (a number, or a string holding a whole decimal number such as "3.5",
 * ".75" or "+10.5"). */
struct fmt_chrome_counter {
  const char *pid;
  const char *name;        /* event name */
  const char *series;      /* the args key */
  int64_t ts_ns;
  double value;
  uint64_t offset;
};

/* A flow endpoint: v1 s/t/f events and v2 bind_id/flow_in/flow_out.  The
 * decoder does not bind it to a slice: binding happens after all slices
 * exist (s -> enclosing slice; f -> next slice starting at or after ts on
 * that thread, or the enclosing one when enclosing = 1, i.e. bp:"e").  For
 * v2 flows the decoder reports the slice's own ts and enclosing = 1. */
struct fmt_chrome_flow {
  char phase;              /* 's', 't' or 'f' */
  const char *id;          /* scoped flow id text: "<cat>:<id>" (v1) or "v2:<id>" */
  const char *pid;
  const char *tid;
  int64_t ts_ns;
  int enclosing;
  uint64_t offset;
};

/* M events: process_name, thread_name, process_sort_index,
 * thread_sort_index, process_labels. */
struct fmt_chrome_meta {
  const char *kind;        /* the M event's name */
  const char *pid;
  const char *tid;         /* NULL for process-level metadata */
  const char *value;       /* args.name / args.sort_index / args.labels as text */
};

struct fmt_chrome_cb {
  void *ud;
  /* Each returns 0 to go on, non-zero to stop reading (the read then returns
   * that value). */
  int (*slice)(void *ud, const struct fmt_chrome_slice *s);
  int (*counter)(void *ud, const struct fmt_chrome_counter *c);
  int (*flow)(void *ud, const struct fmt_chrome_flow *f);
  int (*meta)(void *ud, const struct fmt_chrome_meta *m);
  /* A record that could not be used: skipped, counted, reading goes on. */
  void (*warning)(void *ud, uint64_t offset, const char *msg);
};

struct fmt_chrome_stats {
  uint64_t bytes;          /* bytes of JSON read (after gunzip) */
  uint64_t events;         /* elements of the event array */
  uint64_t skipped;        /* events reported through warning */
  char rank[64];           /* distributedInfo.rank as text, "" when absent */
  char display_time_unit[8]; /* displayTimeUnit ("ms" or "ns"; display
                                only, timestamps stay us), "" when absent */
};

/* Reads the trace at `path` (gzip detected by magic bytes) and calls `cb`
 * for every record.  Returns 0 when the file was read to its end (even with
 * skipped records), a negative errno-style code when it could not be opened
 * or is not JSON at all (and *cause says why; free it), or the non-zero
 * value a callback returned.  `st` may be NULL. */
int fmt_chrome_read(const char *path, const struct fmt_chrome_cb *cb,
                    struct fmt_chrome_stats *st, char **cause);

/* Reads at most the first 64 KiB of `path` and returns 1 if it looks like a
 * Chrome trace (array of event objects or object with traceEvents), 0 if not,
 * negative on I/O error.  If it is, copies distributedInfo.rank into
 * rank (size rank_len) when it appears before the events, else "". */
int fmt_chrome_probe(const char *path, char *rank, size_t rank_len);

#endif
