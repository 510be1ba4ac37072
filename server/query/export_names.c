/* export_names.c -- the vendor's process and thread naming of the
 * Perfetto exports (see export_names.h). */
#include "export_names.h"

#include <stdlib.h>
#include <string.h>

/* The Perfetto row name of a system track that is not a standalone
 * Chrome trace's. */
static void export_names_thread(struct sbuf *b, const struct tracks_row *r) {
  if (strcmp(r->source, "framework") == 0) {
    if (r->stream != TRACKS_NONE)
      sbuf_printf(b, "Stream %lld", (long long)r->stream);
    else
      sbuf_printf(b, "Thread %lld", (long long)r->tid);
    return;
  }
  if (r->worker != TRACKS_NONE)
    sbuf_printf(b, "gid%lld-", (long long)r->worker);
  if (r->nc != TRACKS_NONE)
    sbuf_printf(b, "nc%lld-", (long long)r->nc);
  if (r->tid != TRACKS_NONE)
    sbuf_printf(b, "tid%lld-", (long long)r->tid);
  sbuf_adds(b, r->source);
}

/* Whether the written pid p belongs to a process other than track k's:
 * an earlier one, or a standalone Chrome trace's that keeps its own. */
static bool export_names_pid_taken(const int64_t *procs,
                                   const struct tracks_row *r, size_t n,
                                   size_t k, int64_t p) {
  for (size_t i = 0; i < n; i++)
    if ((i < k && procs[i] == p) || (i >= k && r[i].chrome &&
                                     r[i].pid == p && !r[i].pnamed))
      return true;
  return false;
}

int64_t *export_names_procs(const struct tracks_row *r, size_t n) {
  int64_t *procs = xcalloc(n ? n : 1, sizeof *procs);
  int64_t next = 1;
  for (size_t i = 0; i < n; i++) {
    size_t j;
    for (j = 0; j < i; j++)
      if (r[j].pid == r[i].pid &&
          strcmp(r[j].instance_id, r[i].instance_id) == 0)
        break;
    if (j < i) {
      procs[i] = procs[j];
    } else if (r[i].chrome && !r[i].pnamed &&
               !export_names_pid_taken(procs, r, i, i, r[i].pid)) {
      procs[i] = r[i].pid;
    } else {
      while (export_names_pid_taken(procs, r, n, i, next))
        next++;
      procs[i] = next++;
    }
  }
  return procs;
}

bool export_names_first(const int64_t *procs, size_t k) {
  for (size_t j = 0; j < k; j++)
    if (procs[j] == procs[k])
      return false;
  return true;
}

void export_names_track(const struct tracks_row *r, struct sbuf *pname,
                        struct sbuf *tname) {
  if (r->chrome) {
    if (r->pname)
      sbuf_adds(pname, r->pname);
    if (r->tname)
      sbuf_adds(tname, r->tname);
    return;
  }
  sbuf_printf(pname, "%s-pid%lld", r->instance_id, (long long)r->pid);
  export_names_thread(tname, r);
}
