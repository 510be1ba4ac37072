/* fmt_chrome_args.c -- what a Chrome trace event's args, ids and metadata
 * say: flow ids and endpoints, async and flow identities, merged begin/end
 * args, metadata records and counter samples.  See fmt_chrome_args.h; the
 * reading and the phase rules are fmt_chrome.c's.
 */
#include "fmt_chrome_args.h"
#include "jval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char uchar;

/* Reports a flow endpoint through the flow callback. */
static int fmt_chrome_args_emit_flow(struct rd *r, char phase, const char *id,
                                     const char *pid, const char *tid,
                                     int64_t ts, int enclosing, uint64_t off) {
  struct fmt_chrome_flow f = {phase, id, pid, tid, ts, enclosing, off};
  return r->cb && r->cb->flow ? r->cb->flow(r->cb->ud, &f) : 0;
}

void fmt_chrome_args_flow_ids(struct rd *r, const struct jtok_span *args) {
  struct jtok_span v, el;
  r->nfids = 0;
  if (args->kind != JTOK_OBJ || !memmem(args->p, args->n, "\"flow_id\"", 9) ||
      !jtok_find(args, "flow_id", &v))
    return;
  const uchar *p = v.p + 1, *end = v.p + v.n;
  int one = v.kind != JTOK_ARR;
  while (one || jtok_element(&p, end, &el) == JTOK_OK) {
    uint64_t id;
    if (one)
      el = v;
    if ((el.kind == JTOK_STR || el.kind == JTOK_NUM) &&
        !jval_u64(jval_text(&r->sb[SB_TEXT], &el, &r->sb[SB_SCRATCH]), &id)) {
      if (r->nfids == r->capfids) {
        r->capfids = r->capfids ? r->capfids * 2 : 8;
        r->fids = xrealloc(r->fids, r->capfids * sizeof *r->fids);
      }
      r->fids[r->nfids++] = id;
    }
    if (one)
      break;
  }
}

const char *fmt_chrome_args_idtext(struct rd *r, const struct ev *e,
                                   const char *pid) {
  struct sbuf *b = &r->sb[SB_ID];
  struct jtok_span v;
  int local = 0;
  if (e->id.kind != JTOK_NONE && e->id.kind != JTOK_OBJ &&
      e->id.kind != JTOK_ARR)
    v = e->id;
  else if (!jtok_find(&e->id2, "global", &v) &&
           !(local = jtok_find(&e->id2, "local", &v)))
    return NULL;
  sbuf_reset(b);
  if (e->scope.kind != JTOK_NONE) {
    jval_add(b, &e->scope, &r->sb[SB_SCRATCH]);
    sbuf_addc(b, ':');
  }
  if (local)
    sbuf_printf(b, "local:%s:", pid);
  jval_add(b, &v, &r->sb[SB_SCRATCH]);
  return b->s;
}

int fmt_chrome_args_flow_v1(struct rd *r, const struct ev *e, char ph,
                            const char *cat, const char *pid, const char *tid,
                            int64_t ts) {
  int enclosing = ph != 'f' || jtok_is(&e->bp, "e") ||
                  (cat && (strstr(cat, "input") || strstr(cat, "ipc.flow")));
  const char *idt = fmt_chrome_args_idtext(r, e, pid);
  if (!idt)
    return jtok_skipped(&r->warn, e->off, "flow event '%c' without id: skipped",
                        ph);
  struct sbuf *fid = &r->sb[SB_TEXT];
  sbuf_reset(fid);
  sbuf_adds(fid, cat ? cat : "");
  sbuf_addc(fid, ':');
  sbuf_adds(fid, idt);
  return fmt_chrome_args_emit_flow(r, ph, fid->s, pid, tid, ts, enclosing,
                                   e->off);
}

int fmt_chrome_args_flow_v2(struct rd *r, const struct ev *e, const char *pid,
                            const char *tid, int64_t ts) {
  int in = jtok_true(&e->flow_in), out = jtok_true(&e->flow_out);
  const struct jtok_span *id =
      e->bind_id.kind != JTOK_NONE ? &e->bind_id : &e->id;
  if ((!in && !out) || id->kind == JTOK_NONE)
    return 0;
  struct sbuf *b = &r->sb[SB_ID];
  sbuf_reset(b);
  sbuf_adds(b, "v2:");
  jval_add(b, id, &r->sb[SB_SCRATCH]);
  return fmt_chrome_args_emit_flow(r,
                                   in && out ? 't'
                                   : out     ? 's'
                                             : 'f',
                                   b->s, pid, tid, ts, 1, e->off);
}

/* 1 if the text a is an empty object. */
static int fmt_chrome_args_empty(const char *a) {
  if (*a != '{')
    return 0;
  for (a++; jtok_blank((uchar)*a); a++)
    ;
  return *a == '}';
}

/* Appends the members of object text a to out, leaving out those whose
 * key object `skip` (may be NULL) also has. */
static void fmt_chrome_args_members(struct sbuf *out, const char *a,
                                    const struct jtok_span *skip) {
  const uchar *p = (const uchar *)a + 1, *end = (const uchar *)a + strlen(a);
  struct jtok_span k, v, dup;
  while (jtok_member(&p, end, &k, &v) == JTOK_OK) {
    if (skip && jtok_findn(skip, k.p, k.n, &dup))
      continue;
    if (out->len > 1)
      sbuf_addc(out, ',');
    sbuf_add(out, (const char *)k.p - 1, k.n + 2);
    sbuf_addc(out, ':');
    if (v.kind == JTOK_STR)
      sbuf_add(out, (const char *)v.p - 1, v.n + 2);
    else
      sbuf_add(out, (const char *)v.p, v.n);
  }
}

const char *fmt_chrome_args_merge(struct sbuf *out, const char *a,
                                  const char *b) {
  if (!b || fmt_chrome_args_empty(b) || *b != '{')
    return a;
  if (!a || fmt_chrome_args_empty(a) || *a != '{')
    return b;
  struct jtok_span bs = {(const uchar *)b, strlen(b), JTOK_OBJ, 0};
  sbuf_reset(out);
  sbuf_addc(out, '{');
  fmt_chrome_args_members(out, a, &bs);
  fmt_chrome_args_members(out, b, NULL);
  sbuf_addc(out, '}');
  return out->s;
}

int fmt_chrome_args_meta(struct rd *r, const struct ev *e, const char *name,
                         const char *pid, const char *tid) {
  static const struct {
    const char *kind, *arg;
    int thread;
  } kinds[] = {{"process_name", "name", 0},
               {"process_labels", "labels", 0},
               {"process_sort_index", "sort_index", 0},
               {"thread_name", "name", 1},
               {"thread_sort_index", "sort_index", 1}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    struct jtok_span v;
    if (strcmp(name, kinds[i].kind))
      continue;
    if (!jtok_find(&e->args, kinds[i].arg, &v) || v.kind == JTOK_LIT)
      return jtok_skipped(&r->warn, e->off,
                          "metadata event '%s' without args.%s: skipped", name,
                          kinds[i].arg);
    struct fmt_chrome_meta m = {
        name, pid, kinds[i].thread ? tid : NULL,
        jval_text(&r->sb[SB_ARGS], &v, &r->sb[SB_SCRATCH])};
    return r->cb && r->cb->meta ? r->cb->meta(r->cb->ud, &m) : 0;
  }
  return jtok_skipped(&r->warn, e->off,
                      "unsupported metadata event '%s': skipped", name);
}

/* Reads a counter value: a JSON number, or a string holding a whole
 * decimal number (".75", "246.", "+10.5"), as Perfetto reads them.
 * Returns 0 with *out set, -1 if v is no finite number. */
static int fmt_chrome_args_value(const struct jtok_span *v, double *out) {
  char num[64], *stop;
  if ((v->kind != JTOK_NUM && v->kind != JTOK_STR) || !v->n ||
      v->n >= sizeof num || v->fl)
    return -1;
  memcpy(num, v->p, v->n);
  num[v->n] = '\0';
  if (v->kind == JTOK_STR && strspn(num, "0123456789+-.eE") != v->n)
    return -1;
  double x = strtod(num, &stop);
  if (*stop || stop == num || !isfinite(x))
    return -1;
  *out = x;
  return 0;
}

int fmt_chrome_args_counter(struct rd *r, const struct ev *e, const char *name,
                            const char *pid, int64_t ts) {
  const char *idt = fmt_chrome_args_idtext(r, e, pid);
  struct sbuf *cname = &r->sb[SB_CNAME];
  if (idt) { /* a counter with an id is its own series set: name[id] */
    sbuf_reset(cname);
    sbuf_printf(cname, "%s[%s]", name, idt);
    name = cname->s;
  }
  int n = 0, rc = 0;
  if (e->args.kind == JTOK_OBJ) {
    const uchar *p = e->args.p + 1, *end = e->args.p + e->args.n;
    struct jtok_span k, v;
    while (!rc && jtok_member(&p, end, &k, &v) == JTOK_OK) {
      double x;
      if (fmt_chrome_args_value(&v, &x))
        continue;
      struct fmt_chrome_counter c = {
          pid, name, jval_text(&r->sb[SB_TEXT], &k, &r->sb[SB_SCRATCH]),
          ts,  x,    e->off};
      n++;
      rc = r->cb && r->cb->counter ? r->cb->counter(r->cb->ud, &c) : 0;
    }
  }
  if (!n)
    jtok_skipped(&r->warn, e->off,
                 "counter event '%s' without numeric args: skipped", name);
  return rc;
}
