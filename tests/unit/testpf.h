/* testpf.h -- writing Perfetto traces in the unit tests: a packet as one
 * frame of a Trace (`repeated TracePacket packet = 1`). */
#ifndef NEX_TESTPF_H
#define NEX_TESTPF_H

#include "perfetto_trace.pb-c.h"
#include "util.h"

#include <stdlib.h>

/* Appends packet p to b as one frame of a Trace. */
static inline void testpf_put(struct sbuf *b,
                              const Perfetto__Protos__TracePacket *p) {
  size_t n = perfetto__protos__trace_packet__get_packed_size(p);
  uint8_t *buf = xmalloc(n ? n : 1);
  perfetto__protos__trace_packet__pack(p, buf);
  sbuf_addc(b, 0x0a);
  for (size_t v = n;; v >>= 7) {
    sbuf_addc(b, (char)(v < 0x80 ? v : (v & 0x7f) | 0x80));
    if (v < 0x80)
      break;
  }
  sbuf_add(b, (const char *)buf, n);
  free(buf);
}

#endif
