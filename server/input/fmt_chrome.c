/* fmt_chrome.c -- see fmt_chrome.h.
 *
 * Reading order: the open begins (B, b, S) waiting for their end, emitting
 * slices, the phase rules, the event array, the top-level object and the
 * entry points.  The reader state is fmt_chrome_args.h's; what an event's
 * args, ids and metadata say (flows, counters, M events, merged args)
 * fmt_chrome_args.c's.  The byte source is jsrc's, tokenizing jtok's, a
 * value's text and numbers jval's.
 */
#include "fmt_chrome.h"
#include "fmt_chrome_args.h"
#include "fmt_chrome_tail.h"
#include "jtok.h"
#include "jval.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char uchar;

#define CHROME_PROBE_BYTES (64u << 10)

/* ------------------------------------------------------------ matching */

/* An open B, b or S waiting for its end. */
struct open {
  char *name, *cat, *pid, *tid, *args;
  uint64_t *fids;
  size_t nfids;
  int64_t ts;
  uint64_t off;
  int async;
};

static struct stack *map_get(struct map *m, const char *k, size_t klen,
                             int create) {
  if (create && (m->n + 1) * 4 > m->cap * 3) {
    struct map g = {xcalloc(m->cap ? m->cap * 2 : 64, sizeof *g.s),
                    m->cap ? m->cap * 2 : 64, m->n};
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->s[i].key)
        continue;
      size_t j = m->s[i].h & (g.cap - 1);
      while (g.s[j].key)
        j = (j + 1) & (g.cap - 1);
      g.s[j] = m->s[i];
    }
    free(m->s);
    *m = g;
  }
  if (!m->cap)
    return NULL;
  uint64_t h = util_hash(k, klen);
  size_t i = h & (m->cap - 1);
  for (; m->s[i].key; i = (i + 1) & (m->cap - 1))
    if (m->s[i].h == h && m->s[i].klen == klen && !memcmp(m->s[i].key, k, klen))
      return &m->s[i].st;
  if (!create)
    return NULL;
  m->s[i].key = xmalloc(klen ? klen : 1);
  memcpy(m->s[i].key, k, klen);
  m->s[i].klen = klen;
  m->s[i].h = h;
  m->n++;
  return &m->s[i].st;
}

/* Removes the entry holding stack st (which must be empty). */
static void map_del(struct map *m, struct stack *st) {
  size_t mask = m->cap - 1;
  size_t i =
      (size_t)((struct slot *)((char *)st - offsetof(struct slot, st)) - m->s);
  free(m->s[i].key);
  free(m->s[i].st.v);
  for (size_t j = (i + 1) & mask; m->s[j].key; j = (j + 1) & mask) {
    size_t home = m->s[j].h & mask;
    /* Move j into the hole unless its home lies cyclically in (i, j]. */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      m->s[i] = m->s[j];
      i = j;
    }
  }
  memset(&m->s[i], 0, sizeof m->s[i]);
  m->n--;
}

static void stack_push(struct stack *st, struct open *o) {
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 4;
    st->v = xrealloc(st->v, st->cap * sizeof *st->v);
  }
  st->v[st->n++] = o;
}

static void open_free(struct open *o) {
  free(o->name);
  free(o->cat);
  free(o->pid);
  free(o->tid);
  free(o->args);
  free(o->fids);
  free(o);
}

/* ------------------------------------------------------------ emitting */

static int emit_slice(struct rd *r, const struct fmt_chrome_slice *sl) {
  return r->cb && r->cb->slice ? r->cb->slice(r->cb->ud, sl) : 0;
}

static void ts_seen(struct rd *r, int64_t end_ns) {
  if (!r->have_ts || end_ns > r->ts_max)
    r->ts_max = end_ns;
  r->have_ts = 1;
}

static struct open *open_new(struct rd *r, const char *name, const char *cat,
                             const char *pid, const char *tid, const char *args,
                             int64_t ts, uint64_t off, int async) {
  struct open *o = xcalloc(1, sizeof *o);
  o->name = xstrdup(name);
  o->cat = cat ? xstrdup(cat) : NULL;
  o->pid = xstrdup(pid);
  o->tid = xstrdup(tid);
  o->args = args ? xstrdup(args) : NULL;
  if (r->nfids) {
    o->fids = xmalloc(r->nfids * sizeof *o->fids);
    memcpy(o->fids, r->fids, r->nfids * sizeof *o->fids);
    o->nfids = r->nfids;
  }
  o->ts = ts;
  o->off = off;
  o->async = async;
  return o;
}

/* Emits the slice of an open begin closed at end_ts (end args and
 * r->fids merged in) and frees it. */
static int open_close(struct rd *r, struct open *o, int64_t end_ts,
                      const char *end_args, int incomplete) {
  if (r->nfids) {
    o->fids = xrealloc(o->fids, (o->nfids + r->nfids) * sizeof *o->fids);
    memcpy(o->fids + o->nfids, r->fids, r->nfids * sizeof *o->fids);
    o->nfids += r->nfids;
  }
  struct fmt_chrome_slice sl = {
      .name = o->name,
      .cat = o->cat,
      .pid = o->pid,
      .tid = o->tid,
      .ts_ns = o->ts,
      .dur_ns = end_ts > o->ts ? end_ts - o->ts : 0,
      .incomplete = incomplete,
      .async = o->async,
      .args_json = fmt_chrome_args_merge(&r->sb[SB_MERGE], o->args, end_args),
      .flow_ids = o->fids,
      .n_flow_ids = o->nfids,
      .offset = o->off,
  };
  int rc = emit_slice(r, &sl);
  open_free(o);
  return rc;
}

/* The B/E stack of a thread (key "pid\0tid") or the open begins of an
 * async id (key "<class>cat\0id"). */
static struct stack *rd_stack(struct rd *r, struct map *m, char cls,
                              const char *a, const char *b, int create) {
  struct sbuf *k = &r->sb[SB_KEY];
  sbuf_reset(k);
  if (cls)
    sbuf_addc(k, cls);
  sbuf_adds(k, a);
  sbuf_add(k, "", 1);
  sbuf_adds(k, b);
  return map_get(m, k->s, k->len, create);
}

/* Applies the phase rules to a parsed event. */
static int ev_process(struct rd *r, const struct ev *e) {
  if (e->members == 0)
    return jtok_skipped(&r->warn, e->off, "empty event object {}: skipped");
  const char *phs = jval_text(&r->sb[SB_TEXT], &e->ph, &r->sb[SB_SCRATCH]);
  if (e->ph.kind != JTOK_STR || !*phs)
    return jtok_skipped(&r->warn, e->off, "event without \"ph\": skipped");
  char ph = phs[0];
  if (phs[1] || !strchr("XBEiIRCMbenSTpFstf", ph))
    return jtok_skipped(&r->warn, e->off, "unsupported phase '%.16s': skipped",
                        phs);
  struct sbuf *sb = r->sb, *tmp = &r->sb[SB_SCRATCH];
  const char *name = jval_text(&sb[SB_NAME], &e->name, tmp);
  const char *cat = jval_text(&sb[SB_CAT], &e->cat, tmp);
  const char *pid = jval_text(&sb[SB_PID], &e->pid, tmp);
  const char *tid = jval_text(&sb[SB_TID], &e->tid, tmp);
  if (!name)
    name = "";
  if (!pid) /* as Perfetto: no pid is pid 0, no tid is thread pid */
    pid = "0";
  if (!tid)
    tid = pid;
  if (ph == 'M')
    return fmt_chrome_args_meta(r, e, name, pid, tid);

  int64_t ts, dur = 0, end;
  if (e->ts.kind == JTOK_NONE)
    return jtok_skipped(&r->warn, e->off, "'%c' event without \"ts\": skipped",
                        ph);
  if ((e->ts.kind != JTOK_NUM && e->ts.kind != JTOK_STR) ||
      jval_decimal(e->ts.p, e->ts.n, 3, &ts) ||
      __builtin_add_overflow(ts, r->base_ns, &ts))
    return jtok_skipped(
        &r->warn, e->off, "'%c' event with bad \"ts\" %.*s: skipped", ph,
        (int)(e->ts.n < 40 ? e->ts.n : 40), (const char *)e->ts.p);
  /* A missing, bad or negative dur gives a zero-length X. */
  if (ph == 'X' && (e->dur.kind == JTOK_NUM || e->dur.kind == JTOK_STR) &&
      (jval_decimal(e->dur.p, e->dur.n, 3, &dur) || dur < 0 ||
       __builtin_add_overflow(ts, dur, &end)))
    dur = 0;
  ts_seen(r, ts + dur);
  const char *args = NULL;
  if (e->args.kind != JTOK_NONE) {
    sbuf_reset(&sb[SB_ARGS]);
    jval_json(&sb[SB_ARGS], &e->args, tmp);
    args = sb[SB_ARGS].s;
  }
  r->nfids = 0;
  if (strchr("XBbSEeF", ph))
    fmt_chrome_args_flow_ids(r, &e->args);

  struct fmt_chrome_slice sl = {.name = name,
                                .cat = cat,
                                .pid = pid,
                                .tid = tid,
                                .ts_ns = ts,
                                .args_json = args,
                                .flow_ids = r->fids,
                                .n_flow_ids = r->nfids,
                                .offset = e->off};
  const char *idt;
  struct stack *st;
  int rc;
  switch (ph) {
  case 'X':
    sl.dur_ns = dur;
    rc = emit_slice(r, &sl);
    return rc ? rc : fmt_chrome_args_flow_v2(r, e, pid, tid, ts);
  case 'B':
    st = rd_stack(r, &r->stacks, 0, pid, tid, 1);
    stack_push(st, open_new(r, name, cat, pid, tid, args, ts, e->off, 0));
    return fmt_chrome_args_flow_v2(r, e, pid, tid, ts);
  case 'E':
    st = rd_stack(r, &r->stacks, 0, pid, tid, 0);
    if (!st || !st->n)
      return jtok_skipped(
          &r->warn, e->off,
          "'E' event without an open 'B' on pid %s tid %s: skipped", pid, tid);
    rc = open_close(r, st->v[--st->n], ts, args, 0);
    if (!st->n)
      map_del(&r->stacks, st);
    return rc;
  case 'i':
  case 'I':
  case 'R':
    sl.instant = 1;
    return emit_slice(r, &sl);
  case 'C':
    return fmt_chrome_args_counter(r, e, name, pid, ts);
  case 's':
  case 't':
  case 'f':
    return fmt_chrome_args_flow_v1(r, e, ph, cat, pid, tid, ts);
  default: /* async: b e n (nestable), S T p F (legacy) */
    break;
  }
  if (!(idt = fmt_chrome_args_idtext(r, e, pid)))
    return jtok_skipped(&r->warn, e->off,
                        "async event '%c' without id: skipped", ph);
  struct sbuf *ab = &r->sb[SB_ATID];
  sbuf_reset(ab);
  sbuf_printf(ab, "async:%s:%s", cat ? cat : "", idt);
  const char *atid = ab->s;
  char cls = strchr("ben", ph) ? 'b' : 'S';
  sl.tid = atid;
  sl.async = 1;
  rc = 0;
  switch (ph) {
  case 'n':
  case 'T':
  case 'p':
    sl.instant = 1;
    rc = emit_slice(r, &sl);
    break;
  case 'b':
  case 'S':
    st = rd_stack(r, &r->async, cls, cat ? cat : "", idt, 1);
    stack_push(st, open_new(r, name, cat, pid, atid, args, ts, e->off, 1));
    break;
  default: /* e, F: close the innermost open begin with the same name */
    st = rd_stack(r, &r->async, cls, cat ? cat : "", idt, 0);
    size_t i = st ? st->n : 0;
    while (i > 0 && e->name.kind != JTOK_NONE &&
           strcmp(st->v[i - 1]->name, name))
      i--;
    if (i == 0) {
      jtok_skipped(&r->warn, e->off,
                   "'%c' event '%s' without an open '%c' for id %s: "
                   "skipped",
                   ph, name, ph == 'e' ? 'b' : 'S', idt);
      break;
    }
    struct open *o = st->v[i - 1];
    memmove(st->v + i - 1, st->v + i, (st->n - i) * sizeof *st->v);
    if (!--st->n)
      map_del(&r->async, st);
    rc = open_close(r, o, ts, args, 0);
  }
  return rc;
}

/* Maps an event key to its field. */
static struct jtok_span *ev_field(struct ev *e, const struct jtok_span *k) {
  const char *s = (const char *)k->p;
  if (k->fl)
    return NULL;
#define KEY(str, field)                                                        \
  if (k->n == sizeof str - 1 && !memcmp(s, str, sizeof str - 1))               \
  return &e->field
  switch (k->n) {
  case 2:
    KEY("ph", ph);
    KEY("ts", ts);
    KEY("id", id);
    KEY("bp", bp);
    break;
  case 3:
    KEY("pid", pid);
    KEY("tid", tid);
    KEY("cat", cat);
    KEY("dur", dur);
    KEY("id2", id2);
    break;
  case 4:
    KEY("name", name);
    KEY("args", args);
    break;
  case 5:
    KEY("scope", scope);
    break;
  case 7:
    KEY("bind_id", bind_id);
    KEY("flow_in", flow_in);
    break;
  case 8:
    KEY("flow_out", flow_out);
    break;
  }
#undef KEY
  return NULL;
}

/* Parses the event object at *pp (a '{') into e; a member whose value is
 * null counts as absent. */
static int ev_parse(const uchar **pp, const uchar *end, struct ev *e) {
  const uchar *p = *pp + 1;
  memset(e, 0, sizeof *e);
  for (;;) {
    struct jtok_span k, v, *f;
    int rc = jtok_member(&p, end, &k, &v);
    if (rc == JTOK_END)
      break;
    if (rc != JTOK_OK) {
      if (rc == JTOK_BAD)
        *pp = p;
      return rc;
    }
    e->members++;
    if ((f = ev_field(e, &k))) {
      *f = v;
      if (v.kind == JTOK_LIT && v.n == 4 && !memcmp(v.p, "null", 4))
        f->kind = JTOK_NONE; /* null is absence */
    }
  }
  *pp = p;
  return JTOK_OK;
}

/* Reads the event object at the cursor. */
static int rd_event(struct rd *r) {
  struct jsrc *s = &r->src;
  uint64_t off = jsrc_off(s, s->p);
  r->st->events++;
  for (;;) {
    const uchar *q = s->p;
    int rc = ev_parse(&q, s->end, &r->ev);
    if (rc == JTOK_OK && (size_t)(q - s->p) <= JTOK_MAX_VALUE) {
      s->p = q;
      r->ev.off = off;
      return ev_process(r, &r->ev);
    }
    if (rc == JTOK_BAD) {
      uint64_t at = jsrc_off(s, q);
      s->p = q;
      jtok_skipped(&r->warn, off,
                   "malformed event (unexpected byte 0x%02x at offset %llu): "
                   "skipped, resynchronised at the next event",
                   *q, (unsigned long long)at);
      jtok_resync(&r->src);
      return 0;
    }
    if (rc == JTOK_OK || (size_t)(s->end - s->p) > JTOK_MAX_VALUE) {
      jtok_skipped(&r->warn, off, "event larger than %u MiB: skipped",
                   JTOK_MAX_VALUE >> 20);
      jtok_skip(&r->src);
      return 0;
    }
    if (!jsrc_fill(s)) {
      jtok_skipped(&r->warn, off, "event cut by the end of the file: skipped");
      s->p = s->end;
      return 0;
    }
  }
}

/* A byte at array level that does not start an object: a JSON value is a
 * skipped element, anything else is garbage skipped up to the next , { or
 * ]. */
static void rd_garbage(struct rd *r) {
  struct jsrc *s = &r->src;
  uint64_t off = jsrc_off(s, s->p);
  struct jtok_span v;
  if (*s->p && strchr("\"[-0123456789tfn", *s->p) && !jtok_value(&r->src, &v)) {
    r->st->events++;
    jtok_skipped(&r->warn, off,
                 "array element is not an event object: skipped");
    return;
  }
  jtok_note(&r->warn, off,
            "unexpected bytes between events: skipped up to the next "
            "event");
  for (;;) {
    while (s->p < s->end && *s->p != ',' && *s->p != '{' && *s->p != ']')
      s->p++;
    if (s->p < s->end || !jsrc_fill(s))
      return;
  }
}

/* Reads the event array whose '[' is behind the cursor, up to its ']' or
 * the end of input (a missing ']' is allowed). */
static int rd_events(struct rd *r) {
  for (;;) {
    if (jtok_ws(&r->src))
      return 0;
    uchar c = *r->src.p;
    if (c == ']') {
      r->src.p++;
      return 0;
    }
    if (c == ',') {
      r->src.p++;
      continue;
    }
    if (c != '{') {
      rd_garbage(r);
      continue;
    }
    int rc = rd_event(r);
    if (rc)
      return rc;
  }
}

static void rd_prescan(struct rd *r);

/* Handles a small top-level value of the Object format. */
static void rd_top_value(struct rd *r, const char *key) {
  struct jtok_span v;
  uint64_t off = jsrc_off(&r->src, r->src.p);
  int64_t ns;
  if (strcmp(key, "baseTimeNanoseconds") && strcmp(key, "displayTimeUnit") &&
      strcmp(key, "distributedInfo")) {
    jtok_skip(&r->src);
    return;
  }
  if (jtok_value(&r->src, &v)) {
    jtok_note(&r->warn, off, "malformed value of top-level key \"%s\": ignored",
              key);
    jtok_skip(&r->src);
    return;
  }
  if (!strcmp(key, "baseTimeNanoseconds")) {
    if ((v.kind == JTOK_NUM || v.kind == JTOK_STR) &&
        !jval_decimal(v.p, v.n, 0, &ns)) {
      if (r->prescanned && r->saw_events && !r->have_base)
        jtok_note(&r->warn, off,
                  "baseTimeNanoseconds comes before a top-level array of "
                  "more than 64 KiB that follows the events: not applied to "
                  "the events' timestamps");
      r->base_ns = ns;
      r->have_base = 1;
    } else {
      jtok_note(&r->warn, off, "bad baseTimeNanoseconds: ignored");
    }
  } else if (!strcmp(key, "displayTimeUnit")) {
    if (jtok_is(&v, "ms") || jtok_is(&v, "ns"))
      snprintf(r->st->display_time_unit, sizeof r->st->display_time_unit,
               "%.2s", (const char *)v.p);
    else
      jtok_note(&r->warn, off,
                "displayTimeUnit is neither \"ms\" nor \"ns\": ignored");
  } else {
    struct jtok_span rank;
    if (jtok_find(&v, "rank", &rank) && rank.kind != JTOK_OBJ &&
        rank.kind != JTOK_ARR)
      snprintf(r->st->rank, sizeof r->st->rank, "%s",
               jval_text(&r->sb[SB_TEXT], &rank, &r->sb[SB_SCRATCH]));
  }
}

enum rd_mode { RD_MAIN, RD_PRESCAN, RD_PROBE };

/* Reads the members of the top-level object whose '{' is behind the
 * cursor.  RD_MAIN reads the events; RD_PRESCAN skips them to learn the
 * keys that follow; RD_PROBE stops at the traceEvents key. */
static int rd_object(struct rd *r, enum rd_mode mode) {
  struct jsrc *s = &r->src;
  struct sbuf *key = &r->sb[SB_KEY];
  for (;;) {
    struct jtok_span k;
    if (!jtok_next_member(s))
      return 0;
    uint64_t off = jsrc_off(s, s->p);
    if (*s->p != '"' || jtok_value(&r->src, &k)) {
      jtok_note(&r->warn, off,
                "malformed top-level object: the rest of the file is "
                "ignored");
      return 0;
    }
    sbuf_reset(key);
    jval_decode(key, &k);
    if (jtok_ws(&r->src) || *s->p != ':') {
      jtok_note(&r->warn, off,
                "top-level key without a value: the rest of the file is "
                "ignored");
      return 0;
    }
    s->p++;
    if (jtok_ws(&r->src))
      return 0;
    if (!key->s || strcmp(key->s, "traceEvents")) {
      rd_top_value(r, key->s ? key->s : "");
      continue;
    }
    if (*s->p != '[') {
      jtok_note(&r->warn, off, "traceEvents is not an array: ignored");
      jtok_skip(&r->src);
      continue;
    }
    r->saw_events = 1;
    if (mode == RD_PROBE)
      return 0;
    if (mode == RD_PRESCAN) {
      jtok_skip(&r->src);
      continue;
    }
    if (!r->have_base && !r->prescanned)
      rd_prescan(r);
    s->p++;
    int rc = rd_events(r);
    if (rc)
      return rc;
  }
}

static void rd_init(struct rd *r, const char *path,
                    const struct fmt_chrome_cb *cb,
                    struct fmt_chrome_stats *st) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->cb = cb;
  r->st = st;
  r->warn = (struct jtok_warn){cb ? cb->warning : NULL, cb ? cb->ud : NULL,
                               &st->skipped};
  memset(st, 0, sizeof *st);
}

static void rd_free(struct rd *r) {
  struct map *maps[] = {&r->stacks, &r->async};
  for (int m = 0; m < 2; m++) {
    for (size_t i = 0; i < maps[m]->cap; i++) {
      struct slot *sl = &maps[m]->s[i];
      for (size_t j = 0; j < sl->st.n; j++)
        open_free(sl->st.v[j]);
      free(sl->st.v);
      free(sl->key);
    }
    free(maps[m]->s);
  }
  for (int i = 0; i < SB_N; i++)
    sbuf_free(&r->sb[i]);
  free(r->fids);
  jsrc_close(&r->src);
}

/* Opens the source and moves to the first byte of the document.  Returns
 * 0, or a negative errno code with *cause set. */
static int rd_open(struct rd *r, uint64_t limit, char **cause) {
  int rc = jsrc_open(&r->src, r->path, limit, cause);
  if (rc)
    return rc;
  struct jsrc *s = &r->src;
  if (jtok_ws(s)) {
    if (cause)
      *cause =
          xasprintf("%s: %s", r->path, s->err ? s->err : "no JSON in the file");
    return s->err ? -EBADMSG : -ENODATA;
  }
  return 0;
}

/* Learns the top-level keys that follow traceEvents (Kineto writes
 * baseTimeNanoseconds after the events): from the end of the file when it
 * reads back plainly (fmt_chrome_tail.h), else with a second, skipping
 * pass. */
static void rd_prescan(struct rd *r) {
  struct rd pre;
  struct fmt_chrome_stats st;
  int64_t ns;
  r->prescanned = 1;
  int tail = fmt_chrome_tail_base(r->path, &ns);
  if (tail >= 0) { /* the members after the events, read from the end */
    r->base_ns = tail ? ns : 0;
    r->have_base = tail;
    return;
  }
  rd_init(&pre, r->path, NULL, &st);
  if (!rd_open(&pre, 0, NULL) && *pre.src.p == '{') {
    pre.src.p++;
    rd_object(&pre, RD_PRESCAN);
    if (pre.have_base) {
      r->base_ns = pre.base_ns;
      r->have_base = 1;
    }
    if (!r->st->rank[0])
      memcpy(r->st->rank, st.rank, sizeof st.rank);
  }
  rd_free(&pre);
}

static int open_cmp(const void *a, const void *b) {
  const struct open *x = *(struct open *const *)a,
                    *y = *(struct open *const *)b;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Emits every begin still open, in file order, as an incomplete slice up
 * to the last timestamp of the trace. */
static int rd_finish(struct rd *r) {
  struct map *maps[] = {&r->stacks, &r->async};
  struct open **all = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (int m = 0; m < 2; m++) {
    for (size_t i = 0; i < maps[m]->cap; i++) {
      struct stack *st = &maps[m]->s[i].st;
      for (size_t j = 0; j < st->n; j++) {
        if (n == cap) {
          cap = cap ? cap * 2 : 16;
          all = xrealloc(all, cap * sizeof *all);
        }
        all[n++] = st->v[j];
      }
      st->n = 0;
    }
  }
  if (n)
    qsort(all, n, sizeof *all, open_cmp);
  r->nfids = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc)
      open_free(all[i]);
    else
      rc = open_close(r, all[i], r->ts_max, NULL, 1);
  }
  free(all);
  return rc;
}

int fmt_chrome_read(const char *path, const struct fmt_chrome_cb *cb,
                    struct fmt_chrome_stats *st, char **cause) {
  struct fmt_chrome_stats local;
  struct rd r;
  rd_init(&r, path, cb, st ? st : &local);
  int rc = rd_open(&r, 0, cause);
  if (rc) {
    rd_free(&r);
    return rc;
  }
  uchar c = *r.src.p++;
  if (c == '[') {
    rc = rd_events(&r);
  } else if (c == '{') {
    rc = rd_object(&r, RD_MAIN);
    if (!rc && !r.saw_events) {
      if (cause)
        *cause =
            xasprintf("%s: not a Chrome trace (no traceEvents array)", path);
      rc = -EPROTO;
    }
  } else {
    if (cause)
      *cause = xasprintf("%s: not a Chrome trace (JSON array or object "
                         "expected, found byte 0x%02x)",
                         path, c);
    rc = -EPROTO;
  }
  if (!rc)
    rc = rd_finish(&r);
  if (!rc)
    jtok_finish(&r.src, &r.warn, "trace");
  r.st->bytes = jsrc_off(&r.src, r.src.p);
  rd_free(&r);
  return rc;
}

int fmt_chrome_probe(const char *path, char *rank, size_t rank_len) {
  struct fmt_chrome_stats st;
  struct rd r;
  int yes = 0;
  if (rank_len)
    rank[0] = '\0';
  rd_init(&r, path, NULL, &st);
  int rc = rd_open(&r, CHROME_PROBE_BYTES, NULL);
  if (rc) {
    rd_free(&r);
    return rc == -ENODATA ? 0 : rc;
  }
  uchar c = *r.src.p++;
  if (c == '[') {
    yes = !jtok_ws(&r.src) && (*r.src.p == '{' || *r.src.p == ']');
  } else if (c == '{') {
    rd_object(&r, RD_PROBE);
    yes = r.saw_events;
    if (yes && rank_len)
      snprintf(rank, rank_len, "%s", st.rank);
  }
  rd_free(&r);
  return yes;
}
