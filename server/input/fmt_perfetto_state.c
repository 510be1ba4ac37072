/* fmt_perfetto_state.c -- the Perfetto decoder's shared state: maps,
 * text repair, warnings, interned strings and tracks (see
 * fmt_perfetto_priv.h).  The bottom of the decoder: it calls none of its
 * other files. */
#include "fmt_perfetto_priv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ map */

static size_t fmt_perfetto_state_map_at(const struct fmt_perfetto_map *m,
                                        uint64_t k) {
  uint64_t h = k * 0x9E3779B97F4A7C15ull;
  return (size_t)(h ^ (h >> 29)) & (m->cap - 1);
}

void *fmt_perfetto_state_map_get(const struct fmt_perfetto_map *m, uint64_t k) {
  if (!m->cap)
    return NULL;
  for (size_t i = fmt_perfetto_state_map_at(m, k);;
       i = (i + 1) & (m->cap - 1)) {
    if (!m->vals[i])
      return NULL;
    if (m->keys[i] == k)
      return m->vals[i];
  }
}

void **fmt_perfetto_state_map_slot(struct fmt_perfetto_map *m, uint64_t k) {
  if ((m->n + 1) * 2 > m->cap) {
    struct fmt_perfetto_map b = {.cap = m->cap ? m->cap * 2 : 16};
    b.keys = xmalloc(sizeof *b.keys * b.cap);
    b.vals = xcalloc(b.cap, sizeof *b.vals);
    for (size_t i = 0; i < m->cap; i++)
      if (m->vals[i])
        *fmt_perfetto_state_map_slot(&b, m->keys[i]) = m->vals[i];
    free(m->keys);
    free(m->vals);
    *m = b;
    m->n = 0;
    for (size_t i = 0; i < m->cap; i++)
      m->n += m->vals[i] != NULL;
  }
  size_t i = fmt_perfetto_state_map_at(m, k);
  for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
    if (m->keys[i] == k)
      return &m->vals[i];
  m->keys[i] = k;
  m->n++;
  return &m->vals[i];
}

void fmt_perfetto_state_map_clear(struct fmt_perfetto_map *m,
                                  void (*fr)(void *)) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->vals[i] && fr)
      fr(m->vals[i]);
  free(m->keys);
  free(m->vals);
  *m = (struct fmt_perfetto_map){0};
}

/* ------------------------------------------------------------ text */

const char *fmt_perfetto_state_clean(struct sbuf *b, const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (unsigned char)s[i] < 0x80)
    i++;
  if (i == n)
    return s;
  sbuf_reset(b);
  sbuf_add_utf8(b, s, n);
  return b->s;
}

char *fmt_perfetto_state_dup(const char *s, size_t n) {
  struct sbuf b = {0};
  const char *c = fmt_perfetto_state_clean(&b, s, n);
  char *out = c == b.s ? b.s : xstrndup(s, n);
  if (c != b.s)
    sbuf_free(&b);
  return out;
}

void fmt_perfetto_state_warn(struct fmt_perfetto *r, const char *fmt, ...) {
  r->st->skipped++;
  if (!r->cb->warning)
    return;
  va_list ap;
  va_start(ap, fmt);
  char tmp[512];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  r->cb->warning(r->cb->ud, r->offset, tmp);
}

struct fmt_perfetto_str *fmt_perfetto_state_str(const char *s, size_t n) {
  char *c = fmt_perfetto_state_dup(s, n);
  size_t len = strlen(c);
  struct fmt_perfetto_str *e = xmalloc(sizeof *e + len + 1);
  e->len = len;
  e->plain = util_json_plain((const unsigned char *)c, len) == len;
  memcpy(e->s, c, len + 1);
  free(c);
  return e;
}

const struct fmt_perfetto_str *
fmt_perfetto_state_interned_str(const struct fmt_perfetto_seq *q, int kind,
                                uint64_t iid) {
  return fmt_perfetto_state_map_get(&q->interned, iid * 4 + (uint64_t)kind);
}

const char *fmt_perfetto_state_interned(const struct fmt_perfetto_seq *q,
                                        int kind, uint64_t iid) {
  const struct fmt_perfetto_str *e =
      fmt_perfetto_state_interned_str(q, kind, iid);
  return e ? e->s : NULL;
}

/* ------------------------------------------------------------ tracks */

struct fmt_perfetto_trk *fmt_perfetto_state_track(struct fmt_perfetto *r,
                                                  uint64_t uuid) {
  struct fmt_perfetto_trk *t = fmt_perfetto_state_map_get(&r->tracks, uuid);
  if (t)
    return t;
  if (r->tracks.n >= FMT_PERFETTO_MAX_TRACKS) {
    if (!r->warned_tracks)
      fmt_perfetto_state_warn(r,
                              "more than %u tracks: the events of later ones "
                              "are skipped",
                              FMT_PERFETTO_MAX_TRACKS);
    r->warned_tracks = true;
    return NULL;
  }
  t = xcalloc(1, sizeof *t);
  t->pub.uuid = uuid;
  t->pub.unit_multiplier = 1;
  t->own_pid = t->own_tid = -1;
  if (uuid == FMT_PERFETTO_DEFAULT_TRACK)
    t->pub.name = t->name = xstrdup("Default Track");
  *fmt_perfetto_state_map_slot(&r->tracks, uuid) = t;
  r->tgen++;
  fmt_perfetto_state_track_report(r, t);
  return t;
}

void fmt_perfetto_state_track_resolve(struct fmt_perfetto *r,
                                      struct fmt_perfetto_trk *t) {
  if (t->resolved == r->tgen)
    return;
  t->resolved = r->tgen;
  t->pub.pid = t->own_pid;
  t->pub.tid = t->own_tid;
  const struct fmt_perfetto_trk *p = t;
  for (int d = 0; d < 32 && t->pub.pid < 0 && p->pub.parent_uuid; d++) {
    p = fmt_perfetto_state_map_get(&r->tracks, p->pub.parent_uuid);
    if (!p || p == t)
      break;
    t->pub.pid = p->own_pid;
    if (t->pub.tid < 0)
      t->pub.tid = p->own_tid;
  }
}

void fmt_perfetto_state_track_report(struct fmt_perfetto *r,
                                     struct fmt_perfetto_trk *t) {
  fmt_perfetto_state_track_resolve(r, t);
  if (r->cb->track && !r->rc)
    r->rc = r->cb->track(r->cb->ud, &t->pub);
}
