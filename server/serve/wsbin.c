/* wsbin.c -- binary frames of window answers (see wsbin.h).
 *
 * Layout (little-endian; doc/api.md has the reference): a 64-byte header,
 * the names new to the connection, then the body: the frame's dictionary
 * of string ids, the directory (per track a record, then one record per
 * lane or series) and the columns -- the body compressed with raw deflate
 * when the client did not say no.  Every section and column starts at a
 * multiple of 8 bytes, so that a browser can lay typed arrays straight over the
 * received buffer.  Integer columns are as narrow as their values allow: the
 * low 32 bits at 1, 2 or 4 bytes, plus a column of the high 32 bits only when
 * some value needs it.  Times are relative to the frame's base, the
 * earliest of the window start and every row, so they are never negative;
 * names and groups are indexes into the dictionary, so they fit a byte or
 * two; a row's busy time goes as its idle time (dur - busy), 0 for a
 * single event, so a lane of single events costs a byte a row before
 * deflate.
 */
#include "wsbin.h"
#include "util.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* One track of the answer. */
struct wsbin_track {
  int64_t id;
  int level;
  char *source;       /* counters only */
  size_t first_group; /* index into groups */
  size_t n_groups;
};

/* One lane (slices) or series (counters). */
struct wsbin_group {
  int64_t key; /* lane or series number */
  int level;   /* counters: the series' level */
  size_t n;    /* rows */
  bool truncated;
  char *name, *unit; /* counters only */
};

struct wsbin_name {
  int64_t id;
  uint64_t hash;
  char *text;
};

/* A growable column of 8-byte values: integers or (counters' min, max,
 * last) doubles. */
struct wsbin_col {
  union {
    int64_t *v;
    double *d;
  };
  size_t n, cap;
};

struct wsbin {
  enum wsbin_kind kind;
  struct query_sink sink;
  struct wsbin_track *tracks;
  size_t n_tracks, cap_tracks;
  struct wsbin_group *groups;
  size_t n_groups, cap_groups;
  struct wsbin_name *names;
  size_t n_names, cap_names;
  struct wsbin_col ts, dur, name, grp, count, busy; /* dur..busy: slices */
  struct wsbin_col min, max, last;                  /* counters: doubles */
  /* after wsbin_finish() */
  unsigned char head[WSBIN_HEADER];
  struct sbuf body; /* dictionary, directory and columns */
};

/* ---- building (the sink) ---- */

/* Appends n 8-byte values (int64_t or double) to c. */
static void wsbin_col_add(struct wsbin_col *c, const void *v, size_t n) {
  if (n == 0) /* an empty lane: nothing to copy (and maybe no buffers) */
    return;
  if (c->n + n > c->cap) {
    c->cap = c->n + n > 2 * c->cap ? c->n + n : 2 * c->cap;
    c->v = xrealloc(c->v, c->cap * 8);
  }
  memcpy(c->v + c->n, v, n * 8);
  c->n += n;
}

static struct wsbin_group *wsbin_group_add(struct wsbin *b) {
  if (b->n_groups == b->cap_groups) {
    b->cap_groups = b->cap_groups ? 2 * b->cap_groups : 64;
    b->groups = xrealloc(b->groups, b->cap_groups * sizeof *b->groups);
  }
  struct wsbin_group *g = &b->groups[b->n_groups++];
  memset(g, 0, sizeof *g);
  b->tracks[b->n_tracks - 1].n_groups++;
  return g;
}

static void wsbin_group_clear(struct wsbin_group *g) {
  free(g->name);
  free(g->unit);
}

static void wsbin_on_track(void *ud, int64_t track, int level,
                           const char *source, bool restart) {
  struct wsbin *b = ud;
  struct wsbin_track *t;
  if (restart && b->n_tracks) { /* drop the lanes of the previous attempt */
    t = &b->tracks[b->n_tracks - 1];
    size_t rows = 0;
    for (size_t i = t->first_group; i < b->n_groups; i++) {
      rows += b->groups[i].n;
      wsbin_group_clear(&b->groups[i]);
    }
    b->n_groups = t->first_group;
    t->n_groups = 0;
    t->level = level;
    b->ts.n -= rows;
    b->dur.n -= rows;
    b->name.n -= rows;
    b->grp.n -= rows;
    b->count.n -= rows;
    b->busy.n -= rows;
    return;
  }
  if (b->n_tracks == b->cap_tracks) {
    b->cap_tracks = b->cap_tracks ? 2 * b->cap_tracks : 16;
    b->tracks = xrealloc(b->tracks, b->cap_tracks * sizeof *b->tracks);
  }
  t = &b->tracks[b->n_tracks++];
  t->id = track;
  t->level = level;
  t->source = b->kind == WSBIN_COUNTERS ? xstrdup(source ? source : "") : NULL;
  t->first_group = b->n_groups;
  t->n_groups = 0;
}

static void wsbin_on_lane(void *ud, int64_t lane, const int64_t *ts,
                          const int64_t *dur, const int64_t *name,
                          const int64_t *grp, const int64_t *count,
                          const int64_t *busy, size_t n, bool truncated) {
  struct wsbin *b = ud;
  struct wsbin_group *g = wsbin_group_add(b);
  g->key = lane;
  g->level = b->tracks[b->n_tracks - 1].level;
  g->n = n;
  g->truncated = truncated;
  wsbin_col_add(&b->ts, ts, n);
  wsbin_col_add(&b->dur, dur, n);
  wsbin_col_add(&b->name, name, n);
  wsbin_col_add(&b->grp, grp, n);
  wsbin_col_add(&b->count, count, n);
  wsbin_col_add(&b->busy, busy, n);
}

static void wsbin_on_series(void *ud, int64_t series, int level,
                            const char *name, const char *unit,
                            const int64_t *ts, const double *min,
                            const double *max, const double *last,
                            const int64_t *count, size_t n, bool truncated) {
  struct wsbin *b = ud;
  struct wsbin_group *g = wsbin_group_add(b);
  g->key = series;
  g->level = level;
  g->n = n;
  g->truncated = truncated;
  g->name = xstrdup(name ? name : "");
  g->unit = xstrdup(unit ? unit : "");
  wsbin_col_add(&b->ts, ts, n);
  wsbin_col_add(&b->min, min, n);
  wsbin_col_add(&b->max, max, n);
  wsbin_col_add(&b->last, last, n);
  wsbin_col_add(&b->count, count, n);
}

static void wsbin_on_name(void *ud, int64_t id, const char *text) {
  struct wsbin *b = ud;
  if (b->n_names == b->cap_names) {
    b->cap_names = b->cap_names ? 2 * b->cap_names : 64;
    b->names = xrealloc(b->names, b->cap_names * sizeof *b->names);
  }
  size_t len = strlen(text);
  b->names[b->n_names++] =
      (struct wsbin_name){id, util_hash(text, len), xstrdup(text)};
}

struct wsbin *wsbin_new(enum wsbin_kind kind) {
  struct wsbin *b = xcalloc(1, sizeof *b);
  b->kind = kind;
  b->sink = (struct query_sink){b, wsbin_on_track, wsbin_on_lane,
                                wsbin_on_series, wsbin_on_name};
  return b;
}

const struct query_sink *wsbin_sink(struct wsbin *b) { return &b->sink; }

bool wsbin_exact(const struct wsbin *b) {
  for (size_t i = 0; i < b->n_groups; i++)
    if (b->groups[i].level >= 0 || b->groups[i].truncated)
      return false;
  for (size_t i = 0; i < b->n_tracks; i++)
    if (b->kind == WSBIN_SLICES && b->tracks[i].level >= 0)
      return false;
  return true;
}

/* Frees the rows (tracks, groups, columns); the names stay. */
static void wsbin_rows_free(struct wsbin *b) {
  for (size_t i = 0; i < b->n_tracks; i++)
    free(b->tracks[i].source);
  for (size_t i = 0; i < b->n_groups; i++)
    wsbin_group_clear(&b->groups[i]);
  free(b->tracks);
  free(b->groups);
  b->tracks = NULL;
  b->groups = NULL;
  b->n_tracks = b->n_groups = b->cap_tracks = b->cap_groups = 0;
  struct wsbin_col *cols[] = {&b->ts,   &b->dur, &b->name, &b->grp, &b->count,
                              &b->busy, &b->min, &b->max,  &b->last};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
    free(cols[i]->v);
    *cols[i] = (struct wsbin_col){0};
  }
}

/* ---- encoding ---- */

static void wsbin_put(struct sbuf *s, const void *p, size_t n) {
  sbuf_add(s, p, n);
}

static void wsbin_u32(struct sbuf *s, uint32_t v) {
  v = htole32(v);
  wsbin_put(s, &v, 4);
}

static void wsbin_i64(struct sbuf *s, int64_t v) {
  uint64_t u = htole64((uint64_t)v);
  wsbin_put(s, &u, 8);
}

static void wsbin_f64(struct sbuf *s, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  u = htole64(u);
  wsbin_put(s, &u, 8);
}

static void wsbin_pad8(struct sbuf *s) {
  static const char zero[8];
  if (s->len % 8)
    wsbin_put(s, zero, 8 - s->len % 8);
}

/* A string: its bytes (the length was written before). */
static void wsbin_str(struct sbuf *s, const char *t) {
  wsbin_put(s, t, strlen(t));
}

/* Writes the n values v[i] - minus as a column: an 8-byte descriptor {u8
 * width, u8 high width, 6 zero bytes}, then the values, then, if their high
 * 32 bits are not all zero, the high parts; each part padded to 8.  Width
 * 1, 2 or 4: unsigned low 32 bits (high width 0, 1, 2 or 4); width 8:
 * doubles (a column with a negative value, never here in practice). */
static void wsbin_int_col(struct sbuf *s, const int64_t *v, size_t n,
                          int64_t minus) {
  uint64_t lo_max = 0, hi_max = 0;
  bool neg = false;
  for (size_t i = 0; i < n; i++) {
    int64_t x = v[i] - minus;
    if (x < 0)
      neg = true;
    uint64_t u = (uint64_t)x;
    if ((u & 0xffffffffu) > lo_max)
      lo_max = u & 0xffffffffu;
    if ((u >> 32) > hi_max)
      hi_max = u >> 32;
  }
  int w = neg ? 8 : lo_max <= UINT8_MAX ? 1 : lo_max <= UINT16_MAX ? 2 : 4;
  int hw = neg || !hi_max         ? 0
           : hi_max <= UINT8_MAX  ? 1
           : hi_max <= UINT16_MAX ? 2
                                  : 4;
  unsigned char d[8] = {(unsigned char)w, (unsigned char)hw};
  wsbin_put(s, d, 8);
  unsigned char *p = xmalloc(n * 8 + 1);
  for (int part = 0; part < (hw ? 2 : 1); part++) {
    int pw = part ? hw : w;
    for (size_t i = 0; i < n; i++) {
      uint64_t u = (uint64_t)(v[i] - minus);
      uint32_t x = part ? (uint32_t)(u >> 32) : (uint32_t)u;
      if (pw == 8) {
        double dv = (double)(v[i] - minus);
        memcpy(&u, &dv, 8);
        u = htole64(u);
        memcpy(p + 8 * i, &u, 8);
      } else if (pw == 4) {
        x = htole32(x);
        memcpy(p + 4 * i, &x, 4);
      } else if (pw == 2) {
        uint16_t y = htole16((uint16_t)x);
        memcpy(p + 2 * i, &y, 2);
      } else {
        p[i] = (uint8_t)x;
      }
    }
    wsbin_put(s, p, n * (size_t)pw);
    wsbin_pad8(s);
  }
  free(p);
}

/* A column of doubles: descriptor {8, 0, ...}, then the values. */
static void wsbin_double_col(struct sbuf *s, const double *v, size_t n) {
  unsigned char d[8] = {8, 0};
  wsbin_put(s, d, 8);
  for (size_t i = 0; i < n; i++)
    wsbin_f64(s, v[i]);
  wsbin_pad8(s);
}

/* The frame's dictionary of string ids: entry 0 is 0 (no name), the others
 * every id the name and grp columns use, in order of first use; the
 * columns are rewritten as indexes into it. */
struct wsbin_dict {
  int64_t *key; /* open addressing, 0 = empty */
  uint32_t *idx;
  size_t cap;
  int64_t *ids; /* the dictionary */
  size_t n;
};

static void wsbin_dict_init(struct wsbin_dict *d) {
  d->cap = 256;
  d->key = xcalloc(d->cap, sizeof *d->key);
  d->idx = xcalloc(d->cap, sizeof *d->idx);
  d->ids = xmalloc(sizeof *d->ids);
  d->ids[0] = 0;
  d->n = 1;
}

static void wsbin_dict_free(struct wsbin_dict *d) {
  free(d->key);
  free(d->idx);
  free(d->ids);
}

/* The index of string id `id` in the dictionary, added if new. */
static uint32_t wsbin_dict_index(struct wsbin_dict *d, int64_t id) {
  if (id == 0)
    return 0;
  if ((d->n + 1) * 2 > d->cap) {
    free(d->key);
    free(d->idx);
    d->cap *= 2;
    d->key = xcalloc(d->cap, sizeof *d->key);
    d->idx = xcalloc(d->cap, sizeof *d->idx);
    for (uint32_t k = 1; k < d->n; k++) { /* rehash */
      size_t i = (size_t)util_hash(&d->ids[k], 8) & (d->cap - 1);
      while (d->key[i])
        i = (i + 1) & (d->cap - 1);
      d->key[i] = d->ids[k];
      d->idx[i] = k;
    }
  }
  size_t i = (size_t)util_hash(&id, 8) & (d->cap - 1);
  while (d->key[i] && d->key[i] != id)
    i = (i + 1) & (d->cap - 1);
  if (!d->key[i]) {
    d->ids = xrealloc(d->ids, (d->n + 1) * sizeof *d->ids);
    d->ids[d->n] = id;
    d->key[i] = id;
    d->idx[i] = (uint32_t)d->n++;
  }
  return d->idx[i];
}

static void wsbin_directory(struct wsbin *b) {
  struct sbuf *s = &b->body;
  for (size_t i = 0; i < b->n_tracks; i++) {
    const struct wsbin_track *t = &b->tracks[i];
    wsbin_i64(s, t->id);
    wsbin_u32(s, (uint32_t)t->level);
    wsbin_u32(s, (uint32_t)t->n_groups);
    wsbin_u32(s, t->source ? (uint32_t)strlen(t->source) : 0);
    wsbin_u32(s, 0);
    if (t->source)
      wsbin_str(s, t->source);
    wsbin_pad8(s);
    for (size_t k = 0; k < t->n_groups; k++) {
      const struct wsbin_group *g = &b->groups[t->first_group + k];
      if (b->kind == WSBIN_SLICES) {
        wsbin_u32(s, (uint32_t)g->key);
        wsbin_u32(s, (uint32_t)g->n);
        wsbin_u32(s, g->truncated ? 1 : 0);
        wsbin_u32(s, 0);
      } else {
        wsbin_u32(s, (uint32_t)g->key);
        wsbin_u32(s, (uint32_t)g->level);
        wsbin_u32(s, (uint32_t)g->n);
        wsbin_u32(s, g->truncated ? 1 : 0);
        wsbin_u32(s, (uint32_t)strlen(g->name));
        wsbin_u32(s, (uint32_t)strlen(g->unit));
        wsbin_str(s, g->name);
        wsbin_str(s, g->unit);
        wsbin_pad8(s);
      }
    }
  }
}

/* Replaces the body by its raw deflate (level 1: speed over size) if that
 * is smaller; returns whether it did. */
static bool wsbin_deflate(struct sbuf *body) {
  z_stream z = {0};
  if (body->len < 1024 ||
      deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  uLong cap = deflateBound(&z, (uLong)body->len);
  unsigned char *out = xmalloc(cap + 1);
  z.next_in = (unsigned char *)body->s;
  z.avail_in = (uInt)body->len;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  size_t n = cap - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END || n >= body->len) {
    free(out);
    return false;
  }
  free(body->s);
  out[n] = '\0'; /* an sbuf stays NUL-terminated */
  body->s = (char *)out;
  body->len = n;
  body->cap = cap + 1;
  return true;
}

int wsbin_finish(struct wsbin *b, uint32_t id, int flags,
                 const struct query_window *w, bool deflate,
                 struct query_err *e) {
  int64_t base = w->start;
  struct wsbin_dict dict = {0};
  for (size_t i = 0; i < b->ts.n; i++)
    if (b->ts.v[i] < base)
      base = b->ts.v[i];
  wsbin_dict_init(&dict);
  for (size_t i = 0; i < b->name.n; i++) {
    b->name.v[i] = wsbin_dict_index(&dict, b->name.v[i]);
    b->grp.v[i] = wsbin_dict_index(&dict, b->grp.v[i]);
  }
  for (size_t i = 0; i < dict.n; i++)
    if (dict.ids[i] < 0 || dict.ids[i] > (int64_t)UINT32_MAX) {
      int64_t bad = dict.ids[i];
      wsbin_dict_free(&dict);
      return query_fail(e, -ERANGE, 500, "store_error",
                        "string id %lld does not fit a binary frame",
                        (long long)bad);
    }
  /* header, without n_names (wsbin_write() puts it in) */
  struct sbuf h = {0};
  wsbin_put(&h, "NXB2", 4);
  wsbin_u32(&h, id);
  unsigned char k[4] = {(unsigned char)b->kind, (unsigned char)flags};
  wsbin_put(&h, k, 4);
  wsbin_u32(&h, b->kind == WSBIN_SLICES ? (uint32_t)dict.n : 0);
  wsbin_i64(&h, base);
  wsbin_i64(&h, w->start);
  wsbin_i64(&h, w->end);
  wsbin_i64(&h, query_resolution(w));
  wsbin_u32(&h, (uint32_t)w->px);
  wsbin_u32(&h, 0);
  wsbin_u32(&h, (uint32_t)b->n_tracks);
  wsbin_u32(&h, (uint32_t)b->ts.n);
  memcpy(b->head, h.s, WSBIN_HEADER);
  sbuf_free(&h);

  sbuf_reset(&b->body);
  if (b->kind == WSBIN_SLICES) {
    for (size_t i = 0; i < dict.n; i++)
      wsbin_u32(&b->body, (uint32_t)dict.ids[i]);
    wsbin_pad8(&b->body);
  }
  wsbin_dict_free(&dict);
  wsbin_directory(b);
  wsbin_int_col(&b->body, b->ts.v, b->ts.n, base);
  if (b->kind == WSBIN_SLICES) {
    wsbin_int_col(&b->body, b->dur.v, b->dur.n, 0);
    wsbin_int_col(&b->body, b->name.v, b->name.n, 0);
    wsbin_int_col(&b->body, b->grp.v, b->grp.n, 0);
  } else {
    wsbin_double_col(&b->body, b->min.d, b->min.n);
    wsbin_double_col(&b->body, b->max.d, b->max.n);
    wsbin_double_col(&b->body, b->last.d, b->last.n);
  }
  wsbin_int_col(&b->body, b->count.v, b->count.n, 0);
  if (b->kind == WSBIN_SLICES) { /* idle = dur - busy: 0 for single events */
    for (size_t i = 0; i < b->busy.n; i++)
      b->busy.v[i] = b->dur.v[i] - b->busy.v[i];
    wsbin_int_col(&b->body, b->busy.v, b->busy.n, 0);
  }
  wsbin_rows_free(b); /* a frame waiting to be sent keeps only its bytes */
  if (deflate && wsbin_deflate(&b->body))
    b->head[9] |= WSBIN_DEFLATE;
  /* it may wait long: no spare capacity (deflate's buffer is its bound) */
  b->body.s = xrealloc(b->body.s, b->body.len + 1);
  b->body.s[b->body.len] = '\0';
  b->body.cap = b->body.len + 1;
  return 0;
}

size_t wsbin_size(const struct wsbin *b) { return WSBIN_HEADER + b->body.len; }

uint32_t wsbin_id(const struct wsbin *b) {
  uint32_t v;
  memcpy(&v, b->head + 4, 4);
  return le32toh(v);
}

int wsbin_flags(const struct wsbin *b) { return b->head[9]; }

void wsbin_free(struct wsbin *b) {
  if (!b)
    return;
  wsbin_rows_free(b);
  for (size_t i = 0; i < b->n_names; i++)
    free(b->names[i].text);
  free(b->names);
  sbuf_free(&b->body);
  free(b);
}

/* ---- the names a connection was sent ---- */

/* Open addressing on id; id 0 (never a string id) marks an empty slot. */
struct wsbin_names {
  int64_t *id;
  uint64_t *hash;
  size_t n, cap;
};

struct wsbin_names *wsbin_names_new(void) {
  return xcalloc(1, sizeof(struct wsbin_names));
}

void wsbin_names_free(struct wsbin_names *n) {
  if (!n)
    return;
  free(n->id);
  free(n->hash);
  free(n);
}

static size_t wsbin_names_slot(const struct wsbin_names *n, int64_t id) {
  size_t i = (size_t)util_hash(&id, sizeof id) & (n->cap - 1);
  while (n->id[i] && n->id[i] != id)
    i = (i + 1) & (n->cap - 1);
  return i;
}

/* Records id -> hash; returns whether it was already there with it. */
static bool wsbin_names_put(struct wsbin_names *n, int64_t id, uint64_t hash) {
  if ((n->n + 1) * 2 > n->cap) {
    struct wsbin_names t = {0};
    t.cap = n->cap ? 2 * n->cap : 256;
    t.id = xcalloc(t.cap, sizeof *t.id);
    t.hash = xcalloc(t.cap, sizeof *t.hash);
    for (size_t i = 0; i < n->cap; i++)
      if (n->id[i]) {
        size_t j = wsbin_names_slot(&t, n->id[i]);
        t.id[j] = n->id[i];
        t.hash[j] = n->hash[i];
        t.n++;
      }
    free(n->id);
    free(n->hash);
    *n = t;
  }
  size_t i = wsbin_names_slot(n, id);
  if (n->id[i] == id && n->hash[i] == hash)
    return true;
  if (!n->id[i])
    n->n++;
  n->id[i] = id;
  n->hash[i] = hash;
  return false;
}

unsigned char *wsbin_write(const struct wsbin *b, struct wsbin_names *sent,
                           size_t pre, size_t *len) {
  struct sbuf names = {0};
  uint32_t n_new = 0;
  for (size_t i = 0; i < b->n_names; i++) {
    const struct wsbin_name *nm = &b->names[i];
    if (nm->id <= 0 || wsbin_names_put(sent, nm->id, nm->hash))
      continue;
    wsbin_u32(&names, (uint32_t)nm->id);
    wsbin_u32(&names, (uint32_t)strlen(nm->text));
    wsbin_str(&names, nm->text);
    n_new++;
  }
  wsbin_pad8(&names);
  *len = WSBIN_HEADER + names.len + b->body.len;
  unsigned char *out = xmalloc(pre + *len), *p = out + pre;
  uint32_t nn = htole32(n_new);
  memcpy(p, b->head, WSBIN_HEADER);
  memcpy(p + 52, &nn, 4);
  if (names.len)
    memcpy(p + WSBIN_HEADER, names.s, names.len);
  if (b->body.len)
    memcpy(p + WSBIN_HEADER + names.len, b->body.s, b->body.len);
  sbuf_free(&names);
  return out;
}
