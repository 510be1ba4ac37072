/* fuzz_fmt_perfetto.c -- libFuzzer target of the Perfetto trace decoder.
 *
 * Input: the bytes of a trace (protobuf or gzip), written to a memfd and
 * read with fmt_perfetto_read().  Every text of every record must be valid
 * UTF-8, every args_json must parse as a JSON object (jansson), durations
 * must not be negative, a failure must come with a cause naming an offset.
 * Each packet of a plain trace that the wire walker takes must equal what
 * protobuf-c's unpacker makes of it (both packed again, fields unknown to
 * the schema left out; the debug annotations the walker kept plain put
 * back as protobuf-c unpacks them, each written as JSON the same from its
 * bytes as from that struct).
 * Read again with packed args, every slice's args must be what the first
 * read gave as JSON, and every packed one must fill the Neuron mapping's
 * messages (fmt_npf_fill: the system event with its skip list, the device
 * records) exactly as its JSON does: the messages packed, the misfits, the
 * skipped values.
 * Also linked into test_fmt_perfetto, which replays the files of
 * tests/data/perfetto/ and the inputs kept in tests/data/regress/ whose
 * names start with "perfetto-".
 */
#include "arena.h"
#include "fmt_npf.h"
#include "fmt_perfetto_priv.h"
#include "fuzz_fmt.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts unless each of the n texts is valid UTF-8 (jansson refuses to
 * make a string of anything else); NULL texts are allowed. */
static void fuzz_fmt_perfetto_texts(const char *const *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    json_t *j = v[i] ? json_string(v[i]) : json_null();
    if (!j)
      abort();
    json_decref(j);
  }
}

static void fuzz_fmt_perfetto_track_ok(const struct fmt_perfetto_track *t) {
  if (!t || t->unit_multiplier < 1)
    abort();
  const char *v[] = {t->name, t->process_name, t->thread_name};
  fuzz_fmt_perfetto_texts(v, 3);
}

static int fuzz_fmt_perfetto_track(void *ud,
                                   const struct fmt_perfetto_track *t) {
  fuzz_fmt_perfetto_track_ok(t);
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_perfetto_slice(void *ud,
                                   const struct fmt_perfetto_slice *s) {
  fuzz_fmt_perfetto_track_ok(s->track);
  const char *v[] = {s->name, s->cat};
  fuzz_fmt_perfetto_texts(v, 2);
  if (!s->name || s->dur_ns < 0 || (s->n_flow_ids && !s->flow_ids))
    abort();
  if (s->args_json) {
    json_error_t err;
    json_t *j = json_loads(s->args_json,
                           JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
    if (!json_is_object(j))
      abort();
    json_decref(j);
  }
  ++*(uint64_t *)ud;
  return 0;
}

static int fuzz_fmt_perfetto_counter(void *ud,
                                     const struct fmt_perfetto_counter *c) {
  fuzz_fmt_perfetto_track_ok(c->track);
  const char *v[] = {c->name, c->unit};
  fuzz_fmt_perfetto_texts(v, 2);
  if (!c->name)
    abort();
  ++*(uint64_t *)ud;
  return 0;
}

static void fuzz_fmt_perfetto_warning(void *ud, uint64_t offset,
                                      const char *msg) {
  (void)ud;
  (void)offset;
  if (!msg || !*msg)
    abort();
}

/* Drops the unknown fields of m and its sub-messages (the walker skips
 * them; protobuf-c keeps them to pack again), freed as free_unpacked()
 * would with the default allocator (malloc). */
static void fuzz_fmt_perfetto_strip(ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    free(m->unknown_fields[i].data);
  free(m->unknown_fields);
  m->unknown_fields = NULL;
  m->n_unknown_fields = 0;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    char *at = (char *)m + f->offset;
    if (f->type != PROTOBUF_C_TYPE_MESSAGE)
      continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(size_t *)((char *)m + f->quantifier_offset);
      for (size_t k = 0; k < n; k++)
        fuzz_fmt_perfetto_strip((*(ProtobufCMessage ***)at)[k]);
    } else if (*(ProtobufCMessage **)at &&
               (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
                *(uint32_t *)((char *)m + f->quantifier_offset) == f->id)) {
      fuzz_fmt_perfetto_strip(*(ProtobufCMessage **)at);
    }
  }
}

/* m packed again (malloc'd, *n bytes). */
static uint8_t *fuzz_fmt_perfetto_pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n ? *n : 1);
  if (!b || protobuf_c_message_pack(m, b) != *n)
    abort();
  return b;
}

/* Puts the annotations the walker kept aside back into its track event
 * (the array in the arena), each plain one as protobuf-c unpacks it
 * (malloc'd, kept in frees[i] for the caller to free) after checking that
 * both ways of writing it as JSON agree. */
static void fuzz_fmt_perfetto_annotations(struct fmt_perfetto_wire *w,
                                          struct arena *ar,
                                          Perfetto__Protos__TrackEvent *e,
                                          ProtobufCMessage **frees) {
  size_t n;
  const struct fmt_perfetto_ann *ann = fmt_perfetto_wire_annotations(w, &n);
  if (n && !e)
    abort();
  if (!n)
    return;
  e->n_debug_annotations = n;
  e->debug_annotations = arena_alloc(ar, n * sizeof *e->debug_annotations);
  struct fmt_perfetto_seq q = {0}; /* nothing interned: "iid:<n>" */
  struct sbuf a = {0}, b = {0};
  for (size_t i = 0; i < n; i++) {
    Perfetto__Protos__DebugAnnotation *m = ann[i].m;
    if (!m) {
      m = perfetto__protos__debug_annotation__unpack(NULL, ann[i].n, ann[i].p);
      if (!m)
        abort();
      frees[i] = &m->base;
      struct fmt_perfetto_ann s = {.m = m};
      sbuf_reset(&a);
      sbuf_reset(&b);
      fmt_perfetto_args_ann(&a, &q, &ann[i]);
      fmt_perfetto_args_ann(&b, &q, &s);
      if (a.len != b.len || memcmp(a.s, b.s, a.len) != 0)
        abort();
    }
    e->debug_annotations[i] = m;
  }
  sbuf_free(&a);
  sbuf_free(&b);
}

/* Whether the walker takes the packet p[0, n); aborts when protobuf-c
 * then disagrees with it. */
static bool fuzz_fmt_perfetto_wire_one(struct fmt_perfetto_wire *w,
                                       struct arena *ar, const uint8_t *p,
                                       size_t n) {
  Perfetto__Protos__TracePacket *a = fmt_perfetto_wire_packet(w, p, n);
  if (!a)
    return false;
  size_t nann;
  fmt_perfetto_wire_annotations(w, &nann);
  ProtobufCMessage **frees = calloc(nann ? nann : 1, sizeof *frees);
  if (!frees)
    abort();
  fuzz_fmt_perfetto_annotations(w, ar, a->track_event, frees);
  Perfetto__Protos__TracePacket *b =
      perfetto__protos__trace_packet__unpack(NULL, n, p);
  if (!b)
    abort();
  fuzz_fmt_perfetto_strip(&b->base);
  size_t na, nb;
  uint8_t *pa = fuzz_fmt_perfetto_pack(&a->base, &na);
  uint8_t *pb = fuzz_fmt_perfetto_pack(&b->base, &nb);
  if (na != nb || memcmp(pa, pb, na) != 0)
    abort();
  free(pa);
  free(pb);
  perfetto__protos__trace_packet__free_unpacked(b, NULL);
  for (size_t i = 0; i < nann; i++)
    if (frees[i])
      protobuf_c_message_free_unpacked(frees[i], NULL);
  free(frees);
  return true;
}

/* Reads a varint of p[*at, n); false when cut. */
static bool fuzz_fmt_perfetto_varint(const uint8_t *p, size_t n, size_t *at,
                                     uint64_t *v) {
  *v = 0;
  for (int sh = 0; *at < n && sh < 64; sh += 7) {
    uint8_t c = p[(*at)++];
    *v |= (uint64_t)(c & 0x7f) << sh;
    if (c < 0x80)
      return true;
  }
  return false;
}

size_t fuzz_fmt_perfetto_wire(const uint8_t *data, size_t size) {
  struct arena a = {0};
  struct fmt_perfetto_wire *w = fmt_perfetto_wire_new(&a);
  size_t at = 0, taken = 0;
  uint64_t key, len;
  /* the frames `packet = 1` of a Trace, up to the first malformed one */
  while (fuzz_fmt_perfetto_varint(data, size, &at, &key) && key == 0x0a &&
         fuzz_fmt_perfetto_varint(data, size, &at, &len) && len <= size - at) {
    taken += fuzz_fmt_perfetto_wire_one(w, &a, data + at, (size_t)len);
    arena_reset(&a);
    at += (size_t)len;
  }
  arena_free(&a);
  fmt_perfetto_wire_free(w);
  return taken;
}

/* The args of every slice of a read, as JSON (packed ones written so). */
struct fuzz_fmt_perfetto_args {
  char **v;
  size_t n;
  struct fmt_npf_scratch sc[2];
};

/* Aborts unless skipped values a and b read the same. */
static void fuzz_fmt_perfetto_same_value(const struct jtok_span *a,
                                         const struct jtok_span *b,
                                         struct fmt_npf_scratch *sc) {
  const char *sa = fmt_npf_value_str(a, sc), *sb = fmt_npf_value_str(b, sc);
  int64_t i[2];
  uint64_t u[2];
  double d[2];
  bool na = fmt_npf_value_num(a, &i[0], &u[0], &d[0]),
       nb = fmt_npf_value_num(b, &i[1], &u[1], &d[1]);
  if (!sa != !sb || (sa && strcmp(sa, sb) != 0) || na != nb ||
      (na && (i[0] != i[1] || u[0] != u[1] ||
              memcmp(&d[0], &d[1], sizeof d[0]) != 0)))
    abort();
}

/* Aborts unless packed args p[0, n) fill each message of the Neuron
 * mapping as their JSON text json does. */
static void fuzz_fmt_perfetto_fill_same(struct fuzz_fmt_perfetto_args *r,
                                        const uint8_t *p, size_t n,
                                        const char *json) {
  static const char *const skip[] = {"instance_id", "process_id",
                                     "timestamp_unit", "device_profile", NULL};
  const ProtobufCMessageDescriptor *ds[] = {
      &nex__system_event__descriptor,   &nex__ntff_header__descriptor,
      &nex__execution_info__descriptor, &nex__instruction__descriptor,
      &nex__dma_packet__descriptor,     &nex__cc_op__descriptor};
  for (size_t k = 0; k < sizeof ds / sizeof *ds; k++) {
    const char *const *sk = k == 0 ? skip : NULL;
    struct jtok_span got[2][4];
    uint64_t misfits[2];
    uint8_t *b[2];
    size_t nb[2];
    for (int w = 0; w < 2; w++) {
      ProtobufCMessage *m = arena_alloc(&r->sc[w].a, ds[k]->sizeof_message);
      protobuf_c_message_init(ds[k], m);
      struct fmt_npf_args a;
      if (w)
        fmt_npf_args_open(&a, json);
      else
        fmt_npf_args_packed(&a, p, n);
      misfits[w] = fmt_npf_fill(m, &a, sk, got[w], &r->sc[w]);
      b[w] = fuzz_fmt_perfetto_pack(m, &nb[w]);
    }
    if (misfits[0] != misfits[1] || nb[0] != nb[1] ||
        memcmp(b[0], b[1], nb[0]) != 0)
      abort();
    for (size_t i = 0; sk && sk[i]; i++)
      fuzz_fmt_perfetto_same_value(&got[0][i], &got[1][i], &r->sc[0]);
    free(b[0]);
    free(b[1]);
    fmt_npf_scratch_reset(&r->sc[0]);
    fmt_npf_scratch_reset(&r->sc[1]);
  }
}

static int fuzz_fmt_perfetto_args_slice(void *ud,
                                        const struct fmt_perfetto_slice *s) {
  struct fuzz_fmt_perfetto_args *r = ud;
  struct sbuf b = {0};
  if (s->args_packed) {
    fmt_perfetto_args_json(&b, s->args_packed, s->args_packed_len);
    fuzz_fmt_perfetto_fill_same(r, s->args_packed, s->args_packed_len, b.s);
  } else if (s->args_json) {
    sbuf_adds(&b, s->args_json);
  }
  r->v = realloc(r->v, (r->n + 1) * sizeof *r->v);
  if (!r->v)
    abort();
  r->v[r->n++] = b.len ? b.s : NULL;
  if (!b.len)
    sbuf_free(&b);
  return 0;
}

/* Aborts unless the trace at path gives the same args, packed or not. */
static void fuzz_fmt_perfetto_packed(const char *path) {
  struct fuzz_fmt_perfetto_args r[2] = {{0}};
  for (int k = 0; k < 2; k++) {
    struct fmt_perfetto_cb cb = {&r[k], NULL, fuzz_fmt_perfetto_args_slice,
                                 NULL,  NULL, k};
    char *cause = NULL;
    fmt_perfetto_read(path, &cb, NULL, &cause);
    free(cause);
  }
  if (r[0].n != r[1].n)
    abort();
  for (size_t i = 0; i < r[0].n; i++) {
    if (!r[0].v[i] != !r[1].v[i] ||
        (r[0].v[i] && strcmp(r[0].v[i], r[1].v[i]) != 0))
      abort();
    free(r[0].v[i]);
    free(r[1].v[i]);
  }
  for (int k = 0; k < 2; k++) {
    free(r[k].v);
    fmt_npf_scratch_free(&r[k].sc[0]);
    fmt_npf_scratch_free(&r[k].sc[1]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_fmt_perfetto_wire(data, size);
  char path[64];
  int fd = fuzz_fmt_file(data, size, path, sizeof path);
  uint64_t records = 0;
  struct fmt_perfetto_cb cb = {&records,
                               fuzz_fmt_perfetto_track,
                               fuzz_fmt_perfetto_slice,
                               fuzz_fmt_perfetto_counter,
                               fuzz_fmt_perfetto_warning,
                               0};
  struct fmt_perfetto_stats st;
  char *cause = NULL;
  int rc = fmt_perfetto_read(path, &cb, &st, &cause);
  if (rc < 0) {
    if (!cause || (size && !strstr(cause, "offset") && rc != -ENODATA))
      abort();
    free(cause);
  } else if (rc > 0 || cause) {
    abort();
  }
  fuzz_fmt_perfetto_packed(path);
  close(fd);
  return 0;
}
