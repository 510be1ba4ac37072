/* ingest_syncs.c -- see ingest_syncs.h. */
#include "ingest_syncs.h"
#include "fmt_pb.h"
#include "sort.h"
#include "util.h"

#include "ntrace.pb-c.h"

#include <stdlib.h>
#include <string.h>

static inline int ingest_syncs_cmp(const void *a, const void *b) {
  const struct ingest_sync *x = a, *y = b;
  if (x->nc != y->nc)
    return x->nc < y->nc ? -1 : 1;
  return x->exec_id < y->exec_id ? -1 : x->exec_id > y->exec_id;
}

static void ingest_syncs_add(struct ingest_syncs *s,
                             const Nex__SystemEvent *e) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 1024;
    s->v = xrealloc(s->v, sizeof *s->v * s->cap);
  }
  s->v[s->n++] = (struct ingest_sync){e->nc_idx, e->exec_id,
                                      e->cpu_timestamp_ns, e->nc_timestamp_ns};
}

void ingest_syncs_read(struct ingest_syncs *s, const char *path) {
  static const char sync[] = "timestamp_sync_point";
  s->n = 0;
  struct fmt_pb *r = NULL;
  char *cause = NULL;
  int rc = fmt_pb_open(path, FMT_PB_MAGIC_NTRACE, &r, &cause);
  free(cause); /* pass 2 reports it */
  if (rc < 0)
    return;
  const uint8_t *data, *ev, *name;
  size_t len, evlen, namelen;
  uint64_t off;
  while (fmt_pb_next_raw(r, &data, &len, &off) > 0) {
    if (!fmt_pb_field(data, len, 1, &ev, &evlen) ||
        !fmt_pb_field(ev, evlen, 2, &name, &namelen) ||
        namelen != sizeof sync - 1 || memcmp(name, sync, namelen) != 0)
      continue;
    Nex__NtraceRecord *m = (Nex__NtraceRecord *)fmt_pb_decode(
        r, &nex__ntrace_record__descriptor, data, len);
    if (m && m->record_case == NEX__NTRACE_RECORD__RECORD_EVENT)
      ingest_syncs_add(s, m->event);
  }
  fmt_pb_close(r);
  if (s->n > 1) {
    struct ingest_sync *tmp = xmalloc(sizeof *tmp * s->n);
    sort_stable(s->v, s->n, sizeof *s->v, tmp, ingest_syncs_cmp);
    free(tmp);
  }
}

const struct ingest_sync *ingest_syncs_find(const struct ingest_syncs *s,
                                            int nc, int64_t exec_id,
                                            bool *exact) {
  size_t lo = 0, hi = s->n;
  struct ingest_sync key = {nc, exec_id, 0, 0};
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ingest_syncs_cmp(&s->v[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < s->n && s->v[lo].nc == nc && s->v[lo].exec_id == exec_id) {
    *exact = true;
    return &s->v[lo];
  }
  *exact = false;
  if (lo > 0 && s->v[lo - 1].nc == nc)
    return &s->v[lo - 1];
  if (lo < s->n && s->v[lo].nc == nc)
    return &s->v[lo];
  return NULL;
}

void ingest_syncs_free(struct ingest_syncs *s) {
  free(s->v);
  *s = (struct ingest_syncs){0};
}
