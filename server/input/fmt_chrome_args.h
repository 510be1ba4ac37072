/* fmt_chrome_args.h -- private header of the Chrome trace decoder: its
 * reader state, shared by fmt_chrome.c (reading, phase rules, begin/end
 * matching) and fmt_chrome_args.c (what an event's args, ids and metadata
 * say), and fmt_chrome_args.c's functions.  Not for any other file: the
 * decoder's API is fmt_chrome.h.
 *
 * Ownership: struct rd owns its buffers, maps and open begins and is freed
 * by fmt_chrome.c; a const char * returned by a function below points into
 * one of r's buffers (r->sb) and is valid until that buffer is next used.
 */
#ifndef NEX_FMT_CHROME_ARGS_H
#define NEX_FMT_CHROME_ARGS_H

#include "fmt_chrome.h"
#include "jtok.h"
#include "util.h"

/* An open B, b or S waiting for its end (defined in fmt_chrome.c). */
struct open;

/* The open begins of one thread (B/E) or one async id, innermost last. */
struct stack {
  struct open **v;
  size_t n, cap;
};

/* String-keyed hash map of stacks; linear probing, backward-shift delete
 * so that finished keys (one per async id) do not pile up. */
struct slot {
  char *key;
  size_t klen;
  uint64_t h;
  struct stack st;
};

struct map {
  struct slot *s;
  size_t cap, n;
};

/* Fields of one event, as spans into the window. */
struct ev {
  uint64_t off;
  int members;
  struct jtok_span ph, name, cat, pid, tid, ts, dur, id, id2, bind_id, bp,
      scope, args, flow_in, flow_out;
};

/* Text buffers of the reader; SB_SCRATCH is only ever raw_add's scratch. */
enum {
  SB_NAME, /* event texts */
  SB_CAT,
  SB_PID,
  SB_TID,
  SB_ARGS,  /* args text, metadata value */
  SB_ID,    /* fmt_chrome_args_idtext, flow ids */
  SB_ATID,  /* async track "async:<cat>:<id>" */
  SB_CNAME, /* counter name */
  SB_TEXT,  /* short-lived texts */
  SB_KEY,   /* map keys, top-level keys */
  SB_MERGE, /* merged begin/end args */
  SB_SCRATCH,
  SB_N
};

struct rd {
  struct jsrc src;
  const char *path;
  const struct fmt_chrome_cb *cb;
  struct fmt_chrome_stats *st;
  struct jtok_warn warn; /* cb's warnings, st's skipped count */
  int64_t base_ns;
  int have_base, prescanned, saw_events;
  int64_t ts_max;
  int have_ts;
  struct ev ev;
  struct sbuf sb[SB_N];
  uint64_t *fids;
  size_t nfids, capfids;
  struct map stacks; /* B/E, key "pid\0tid" */
  struct map async;  /* b/e and S/F, key "<class>cat\0id" */
};

/* Collects args.flow_id (a list of strings or numbers, or one of them) of
 * the args object span `args` into r->fids / r->nfids (reset first). */
void fmt_chrome_args_flow_ids(struct rd *r, const struct jtok_span *args);

/* Writes the identity of an async or flow event into r->sb[SB_ID]:
 * "[scope:]id", "[scope:]global-id2" or "[scope:]local:<pid>:local-id2".
 * Returns that text, or NULL if the event has none. */
const char *fmt_chrome_args_idtext(struct rd *r, const struct ev *e,
                                   const char *pid);

/* Emits the v1 flow endpoint of an s, t or f event (phase ph), scoped by
 * its category.  Returns the flow callback's value, 0 when the event is
 * skipped (no id: a warning). */
int fmt_chrome_args_flow_v1(struct rd *r, const struct ev *e, char ph,
                            const char *cat, const char *pid, const char *tid,
                            int64_t ts);

/* Emits the v2 flow endpoint of an X or B event, if it has one: flow_out
 * starts a flow, flow_in ends one, both make a step; the id is bind_id (or
 * id when bind_id is absent).  Returns the flow callback's value or 0. */
int fmt_chrome_args_flow_v2(struct rd *r, const struct ev *e, const char *pid,
                            const char *tid, int64_t ts);

/* Merges the args text b of an end event into the args text a of its
 * begin; where both name a key the end's value wins, as in catapult.
 * Either may be NULL.  Returns the merged text (in out), a or b. */
const char *fmt_chrome_args_merge(struct sbuf *out, const char *a,
                                  const char *b);

/* Reports the M event e named `name` through the meta callback, or skips
 * it with a warning.  Returns the callback's value, else 0. */
int fmt_chrome_args_meta(struct rd *r, const struct ev *e, const char *name,
                         const char *pid, const char *tid);

/* Reports one counter sample per numeric args member of the C event e.
 * Returns the first non-zero counter callback value, else 0. */
int fmt_chrome_args_counter(struct rd *r, const struct ev *e, const char *name,
                            const char *pid, int64_t ts);

#endif
