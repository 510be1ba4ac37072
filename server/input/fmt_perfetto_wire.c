/* fmt_perfetto_wire.c -- the hot packets of a trace (a TracePacket
 * holding a TrackEvent) read by the wire walker (pbwire.h) straight into
 * protobuf-c's structs (see fmt_perfetto_priv.h), their debug annotations
 * kept aside, plain ones as their bytes.  The walker takes the packet and
 * the parts of a TrackEvent; any other packet goes to protobuf-c.  The
 * fuzz target compares its result with protobuf-c's on every packet it
 * takes.
 */
#include "arena.h"
#include "fmt_perfetto_priv.h"
#include "pbwire.h"

#include <stdlib.h>

/* The messages read here: the packet and the parts of a TrackEvent. */
static const ProtobufCMessageDescriptor *const fmt_perfetto_wire_msgs[] = {
    &perfetto__protos__trace_packet__descriptor,
    &perfetto__protos__track_event__descriptor,
    &perfetto__protos__track_event__legacy_event__descriptor,
    &perfetto__protos__debug_annotation__descriptor,
    &perfetto__protos__debug_annotation__nested_value__descriptor,
};

#define FMT_PERFETTO_WIRE_MSGS 5        /* the messages above */
#define FMT_PERFETTO_WIRE_EVENT 1       /* TrackEvent's index there */
#define FMT_PERFETTO_WIRE_ANNOTATION 3  /* DebugAnnotation's */
#define FMT_PERFETTO_WIRE_ANNOTATIONS 4 /* TrackEvent.debug_annotations */

struct fmt_perfetto_wire {
  struct arena *a;
  ProtobufCAllocator al; /* the arena's */
  struct pbwire *w;
  struct fmt_perfetto_ann *ann; /* the packet's annotations */
  size_t nann;
};

static void *fmt_perfetto_wire_alloc(void *a, size_t n) {
  return arena_alloc(a, n);
}

static void fmt_perfetto_wire_nofree(void *a, void *p) {
  (void)a;
  (void)p;
}

/* A debug annotation of the track event, v[0, n): kept plain when it is
 * (fmt_perfetto_args_plain), else read as a struct.  Returns false to give
 * up. */
static bool fmt_perfetto_wire_annotation(void *ud, struct pbwire *pw,
                                         const uint8_t *v, size_t n,
                                         int depth) {
  struct fmt_perfetto_wire *w = ud;
  struct fmt_perfetto_ann *a =
      arena_push(w->a, (void **)&w->ann, w->nann++, sizeof *w->ann);
  if (fmt_perfetto_args_plain(v, n, a)) /* sets a's bytes either way */
    return true;
  return depth < PBWIRE_DEPTH &&
         (a->m = pbwire_read(pw, FMT_PERFETTO_WIRE_ANNOTATION, v, n,
                             depth + 1)) != NULL;
}

struct fmt_perfetto_wire *fmt_perfetto_wire_new(struct arena *a) {
  struct fmt_perfetto_wire *w = xcalloc(1, sizeof *w);
  w->a = a;
  w->al = (ProtobufCAllocator){fmt_perfetto_wire_alloc,
                               fmt_perfetto_wire_nofree, a};
  /* the stream's unknown fields are not used */
  w->w =
      pbwire_new(fmt_perfetto_wire_msgs, FMT_PERFETTO_WIRE_MSGS, &w->al, false);
  pbwire_hook(w->w, FMT_PERFETTO_WIRE_EVENT, FMT_PERFETTO_WIRE_ANNOTATIONS,
              fmt_perfetto_wire_annotation, w);
  return w;
}

void fmt_perfetto_wire_free(struct fmt_perfetto_wire *w) {
  if (!w)
    return;
  pbwire_free(w->w);
  free(w);
}

Perfetto__Protos__TracePacket *
fmt_perfetto_wire_packet(struct fmt_perfetto_wire *w, const uint8_t *data,
                         size_t len) {
  w->ann = NULL;
  w->nann = 0;
  return pbwire_read(w->w, 0, data, len, 0);
}

const struct fmt_perfetto_ann *
fmt_perfetto_wire_annotations(const struct fmt_perfetto_wire *w, size_t *n) {
  *n = w->nann;
  return w->ann;
}
