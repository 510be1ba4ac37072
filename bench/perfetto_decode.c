/* perfetto_decode.c -- the Perfetto decoder alone, on a generated trace.
 *
 *   perfetto_decode [EVENTS] [FILE]
 *   perfetto_decode --read FILE
 *
 * Writes FILE (default /tmp/perfetto_decode.pftrace, removed at the end)
 * with EVENTS track events (default 4000000) as the Perfetto SDK writes
 * them: one sequence per thread (8 threads), interned names, categories and
 * annotation names, SEQ_NEEDS_INCREMENTAL_STATE packets, slice begin/end
 * pairs nested two deep, one debug annotation on each begin and a flow id
 * on one begin in 16.  Then, in the same run, it times:
 *
 *   scan    the frames only (varint walk of the file in memory): the floor;
 *   unpack  protobuf_c_message_unpack + free of every packet (default
 *           allocator): the library's own cost;
 *   decode  fmt_perfetto_read with callbacks that only count: ours (the
 *           best of three runs, by CPU time: the machine may be shared).
 *
 * and prints "<name> events=N seconds=T cpu_seconds=C events_per_s=R
 * events_per_cpu_s=P" per line (CPU time: the machine may be shared).
 * With --read it only decodes FILE (an existing trace, kept), three times
 * with the args as JSON ("decode") and three times packed as the Neuron
 * mapping reads them ("decode-packed").
 */
#include "fmt_perfetto.h"
#include "perfetto_trace.pb-c.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PERFETTO_DECODE_THREADS 8

struct perfetto_decode_buf {
  uint8_t *p;
  size_t n, cap;
};

static void perfetto_decode_put(struct perfetto_decode_buf *b, const void *s,
                                size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p)
      abort();
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void perfetto_decode_varint(struct perfetto_decode_buf *b, uint64_t v) {
  uint8_t t[10];
  size_t n = 0;
  for (; v >= 0x80; v >>= 7)
    t[n++] = (uint8_t)(v | 0x80);
  t[n++] = (uint8_t)v;
  perfetto_decode_put(b, t, n);
}

/* Field key then varint value. */
static void perfetto_decode_field(struct perfetto_decode_buf *b, uint32_t key,
                                  uint64_t v) {
  perfetto_decode_varint(b, key);
  perfetto_decode_varint(b, v);
}

/* Field key then the bytes of m (length-delimited). */
static void perfetto_decode_sub(struct perfetto_decode_buf *b, uint32_t key,
                                const struct perfetto_decode_buf *m) {
  perfetto_decode_varint(b, key);
  perfetto_decode_varint(b, m->n);
  perfetto_decode_put(b, m->p, m->n);
}

/* An interned entry {iid = 1, name = 2}. */
static void perfetto_decode_entry(struct perfetto_decode_buf *b, uint32_t key,
                                  uint64_t iid, const char *name) {
  struct perfetto_decode_buf e = {0};
  perfetto_decode_field(&e, 0x08, iid);
  perfetto_decode_varint(&e, 0x12);
  perfetto_decode_varint(&e, strlen(name));
  perfetto_decode_put(&e, name, strlen(name));
  perfetto_decode_sub(b, key, &e);
  free(e.p);
}

static void perfetto_decode_packet(FILE *f,
                                   const struct perfetto_decode_buf *p) {
  struct perfetto_decode_buf frame = {0};
  perfetto_decode_sub(&frame, 0x0a, p);
  if (fwrite(frame.p, 1, frame.n, f) != frame.n)
    abort();
  free(frame.p);
}

/* Writes the trace; returns its track events. */
static uint64_t perfetto_decode_write(const char *path, uint64_t events) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  static const char *const names[] = {"forward",     "matmul", "allreduce",
                                      "nrt_execute", "copy",   "softmax"};
  struct perfetto_decode_buf p = {0}, m = {0}, a = {0};
  for (int t = 1; t <= PERFETTO_DECODE_THREADS; t++) {
    /* the thread's track and the sequence's interned data */
    p.n = m.n = a.n = 0;
    perfetto_decode_field(&p, 0x50, (uint64_t)t); /* sequence id */
    perfetto_decode_field(&p, 0x68, 1);           /* state cleared */
    perfetto_decode_field(&a, 0x08, 10);          /* pid */
    perfetto_decode_field(&a, 0x10, (uint64_t)t); /* tid */
    perfetto_decode_sub(&m, 0x22, &a);            /* thread */
    perfetto_decode_field(&m, 0x08, (uint64_t)t); /* uuid */
    perfetto_decode_sub(&p, 0x1e2, &m);           /* track_descriptor */
    m.n = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      perfetto_decode_entry(&m, 0x12, i + 1, names[i]); /* event_names */
    perfetto_decode_entry(&m, 0x0a, 1, "neuron");       /* categories */
    perfetto_decode_entry(&m, 0x1a, 1, "exec_id");      /* arg names */
    perfetto_decode_sub(&p, 0x62, &m);                  /* interned_data */
    a.n = m.n = 0;
    perfetto_decode_field(&a, 0x58, (uint64_t)t); /* track_uuid */
    perfetto_decode_sub(&m, 0x5a, &a);            /* track_event_defaults */
    perfetto_decode_sub(&p, 0x1da, &m);           /* trace_packet_defaults */
    perfetto_decode_packet(f, &p);
  }
  uint64_t ts = 1000000, n = 0;
  for (uint64_t i = 0; n < events; i++) {
    /* per thread in turn: B(outer) B(inner) E E */
    uint64_t t = i % PERFETTO_DECODE_THREADS + 1;
    for (int k = 0; k < 4 && n < events; k++, n++) {
      bool begin = k < 2;
      p.n = m.n = 0;
      perfetto_decode_field(&p, 0x50, t);
      perfetto_decode_field(&p, 0x68, 2); /* needs incremental state */
      perfetto_decode_field(&p, 0x40, ts += 37);
      perfetto_decode_field(&m, 0x48, begin ? 1 : 2); /* type */
      if (begin) {
        perfetto_decode_field(&m, 0x50, (i + (uint64_t)k) % 6 + 1); /* name */
        perfetto_decode_field(&m, 0x18, 1);                         /* cat */
        a.n = 0;
        perfetto_decode_field(&a, 0x08, 1); /* name_iid */
        perfetto_decode_field(&a, 0x20, i); /* int_value */
        perfetto_decode_sub(&m, 0x22, &a);  /* debug annotation */
        if (k == 0 && i % 16 == 0) {
          uint64_t v = i / 16 + 1; /* flow_ids = 47, fixed64 (LE host) */
          perfetto_decode_put(&m, "\xf9\x02", 2);
          perfetto_decode_put(&m, &v, 8);
        }
      }
      perfetto_decode_sub(&p, 0x5a, &m); /* track_event */
      perfetto_decode_packet(f, &p);
    }
  }
  free(p.p);
  free(m.p);
  free(a.p);
  return fclose(f) == 0 ? n : 0;
}

static double perfetto_decode_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Reads a frame varint of data[*at..n); 0 when cut. */
static uint64_t perfetto_decode_get(const uint8_t *d, size_t n, size_t *at) {
  uint64_t v = 0;
  for (int sh = 0; *at < n && sh < 64; sh += 7) {
    uint8_t c = d[(*at)++];
    v |= (uint64_t)(c & 0x7f) << sh;
    if (c < 0x80)
      return v;
  }
  return 0;
}

/* The baselines: walks the frames, unpacking each when unpack is set.
 * Returns the track event packets. */
static uint64_t perfetto_decode_frames(const uint8_t *d, size_t n,
                                       bool unpack) {
  uint64_t events = 0;
  for (size_t at = 0; at < n;) {
    perfetto_decode_get(d, n, &at); /* key: field 1 */
    size_t len = (size_t)perfetto_decode_get(d, n, &at);
    if (len > n - at)
      break;
    if (unpack) {
      Perfetto__Protos__TracePacket *p =
          perfetto__protos__trace_packet__unpack(NULL, len, d + at);
      events += p && p->track_event;
      perfetto__protos__trace_packet__free_unpacked(p, NULL);
    } else {
      events += len > 8; /* descriptors are counted too: a floor */
    }
    at += len;
  }
  return events;
}

/* What the counting callbacks count. */
struct perfetto_decode_counts {
  uint64_t slices, counters;
};

static int perfetto_decode_count(void *ud, const struct fmt_perfetto_slice *s) {
  (void)s;
  ((struct perfetto_decode_counts *)ud)->slices++;
  return 0;
}

static int perfetto_decode_count_c(void *ud,
                                   const struct fmt_perfetto_counter *c) {
  (void)c;
  ((struct perfetto_decode_counts *)ud)->counters++;
  return 0;
}

static double perfetto_decode_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Decodes path three times with counting callbacks, the args packed or
 * not, and prints the run of least CPU time as `name`.  Returns
 * fmt_perfetto_read's value. */
static int perfetto_decode_read(const char *path, const char *name,
                                int packed) {
  double best_cpu = 0, best_wall = 0;
  struct perfetto_decode_counts n = {0};
  struct fmt_perfetto_cb cb = {
      &n, NULL, perfetto_decode_count, perfetto_decode_count_c, NULL, packed};
  struct fmt_perfetto_stats st;
  int rc = 0;
  for (int run = 0; run < 3 && rc == 0; run++) {
    n = (struct perfetto_decode_counts){0};
    char *cause = NULL;
    double w0 = perfetto_decode_now(), c0 = perfetto_decode_cpu();
    rc = fmt_perfetto_read(path, &cb, &st, &cause);
    double cpu = perfetto_decode_cpu() - c0, wall = perfetto_decode_now() - w0;
    if (rc != 0)
      fprintf(stderr, "perfetto_decode: %s\n", cause ? cause : "stopped");
    free(cause);
    if (run == 0 || cpu < best_cpu) {
      best_cpu = cpu;
      best_wall = wall;
    }
  }
  printf("%s events=%" PRIu64 " slices=%" PRIu64 " counters=%" PRIu64
         " bytes=%" PRIu64 " seconds=%.3f cpu_seconds=%.3f events_per_s=%.0f "
         "events_per_cpu_s=%.0f MB_per_s=%.0f\n",
         name, st.events, n.slices, n.counters, st.bytes, best_wall, best_cpu,
         (double)st.events / best_wall, (double)st.events / best_cpu,
         (double)st.bytes / 1e6 / best_wall);
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--read") == 0)
    return perfetto_decode_read(argv[2], "decode", 0) != 0 ||
           perfetto_decode_read(argv[2], "decode-packed", 1) != 0;
  uint64_t want = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
  const char *path = argc > 2 ? argv[2] : "/tmp/perfetto_decode.pftrace";
  uint64_t events = perfetto_decode_write(path, want);
  if (!events) {
    fprintf(stderr, "perfetto_decode: cannot write %s\n", path);
    return 1;
  }
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f);
  rewind(f);
  uint8_t *d = malloc(n);
  if (!d || fread(d, 1, n, f) != n)
    return 1;
  fclose(f);
  printf("trace events=%" PRIu64 " bytes=%zu\n", events, n);

  for (int unpack = 0; unpack < 2; unpack++) {
    double w0 = perfetto_decode_now(), c0 = perfetto_decode_cpu();
    uint64_t k = perfetto_decode_frames(d, n, unpack);
    double cpu = perfetto_decode_cpu() - c0, wall = perfetto_decode_now() - w0;
    printf("%s events=%" PRIu64 " seconds=%.3f cpu_seconds=%.3f "
           "events_per_s=%.0f events_per_cpu_s=%.0f\n",
           unpack ? "unpack" : "scan", k, wall, cpu, (double)k / wall,
           (double)k / cpu);
  }
  free(d);
  int rc = perfetto_decode_read(path, "decode", 0);
  remove(path);
  return rc != 0;
}
