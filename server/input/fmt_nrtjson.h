/* fmt_nrtjson.h -- streaming decoder for the Neuron runtime's own JSON event
 * dump: the document nrt_sys_trace_fetch_events() returns,
 * {"events":[...],"data_version":2}, saved to a file (gzip allowed).
 *
 * Each element of "events" is one start, stop or instant record with the
 * keys event_type, phase, id, nc_idx, nc_local_id, tracking_id, thread_id,
 * worker_gid, data, timestamp_ns and nrta_seq_id.  A start and its stop
 * share (nc_idx, tracking_id); the decoder pairs them in bounded memory
 * (at most FMT_NRTJSON_MAX_OPEN open starts of FMT_NRTJSON_MAX_OPEN_BYTES
 * in all) and reports each pair as one
 * SystemEvent -- the protobuf-c record ntrace.pb holds -- when its stop is
 * read, so records come in completion order.  Starts still open at the end
 * (or beyond the bound) are reported as incomplete events (attribute
 * incomplete = 1, duration up to the last timestamp of their clock);
 * stops without a start are counted and dropped.
 *
 * Clocks: an event whose data carries nc_timestamp_ns is on the device
 * clock of its NeuronCore (the runtime puts that time in timestamp_ns).  It
 * is mapped to the CPU clock here through the timestamp_sync records
 * (exec_id, nc_timestamp_ns, cpu_timestamp_ns), read in a first pass over
 * the file: the sync of the same (nc_idx, exec_id), else -- for events
 * without an exec_id, such as the collectives barrier -- the latest sync of
 * the NeuronCore at or before the event's device time.  The raw device
 * times stay in the nc_start_timestamp_ns / nc_stop_timestamp_ns
 * attributes.  Hardware events without data.device_core_idx take the
 * physical core the NeuronCore's other records name.
 *
 * DMA memory records (dma_mem_alloc / dma_mem_dealloc: an instant or start
 * with hbm_idx, mla_idx and usage_type, then a stop with total_bytes and
 * usage_type_total_bytes) become HbmUsage samples at the stop, not events.
 *
 * Names: event_type is kept, except the runtime spellings of the table in
 * fmt_nrtjson.c (tensor_write, timestamp_sync, model_load...), which take
 * the names the vendor tool shows and the capture files hold
 * (nrt_tensor_write, timestamp_sync_point, nrt_load...); the original
 * spelling stays in the event_type attribute.
 *
 * Ownership: every message and pointer passed to a callback is borrowed and
 * valid only during that callback; copy what you keep.
 */
#ifndef NEX_FMT_NRTJSON_H
#define NEX_FMT_NRTJSON_H

#include <stddef.h>
#include <stdint.h>

#include "ntrace.pb-c.h"

/* Open starts held while waiting for their stop, and their bytes. */
#define FMT_NRTJSON_MAX_OPEN (1u << 16)
#define FMT_NRTJSON_MAX_OPEN_BYTES (64u << 20)

struct fmt_nrtjson_cb {
  void *ud;
  /* A SystemEvent or an HbmUsage sample; `offset` is the byte offset (after
   * gunzip) of the record that completed it.  Returns 0 to go on, non-zero
   * to stop reading (the read then returns that value).  May be NULL. */
  int (*ntrace)(void *ud, uint64_t offset, const Nex__NtraceRecord *r);
  /* A record that could not be used: skipped, reading goes on. */
  void (*warning)(void *ud, uint64_t offset, const char *msg);
};

struct fmt_nrtjson_stats {
  uint64_t bytes;          /* bytes of JSON read (after gunzip) */
  uint64_t records;        /* records reported through ntrace */
  uint64_t skipped;        /* records reported through warning */
  uint64_t unpaired_start; /* starts without a stop: incomplete events */
  uint64_t unpaired_stop;  /* stops without a start: dropped */
  uint64_t clock_missing;  /* device events without their own sync point */
  int64_t data_version;    /* -1 when absent */
};

/* Reads the dump at `path` and calls `cb` for every record.  Returns 0 when
 * the file was read to its end (even with skipped records), a negative
 * errno-style code when it cannot be opened or is not a JSON object (and
 * *cause says why; free it), or the non-zero value a callback returned.
 * `st` may be NULL. */
int fmt_nrtjson_read(const char *path, const struct fmt_nrtjson_cb *cb,
                     struct fmt_nrtjson_stats *st, char **cause);

/* Reads at most the first 64 KiB of `path`: 1 if it is a runtime event dump
 * (a top-level "events" array whose first element has an event_type, or an
 * empty one beside "data_version"), 0 if not, or a negative errno-style
 * code on I/O error. */
int fmt_nrtjson_probe(const char *path);

/* The name an event_type is shown and stored under (the argument itself
 * when it has no other spelling).  Static storage or the argument. */
const char *fmt_nrtjson_display_name(const char *event_type);

/* The reverse: the runtime's event_type for a shown name (the argument
 * itself when it has no other spelling).  Used by the generator. */
const char *fmt_nrtjson_runtime_name(const char *name);

#endif
