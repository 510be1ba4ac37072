/* fmt_vjson.h -- streaming decoder for the vendor tool's JSON exports
 * (`view --output-format json`): system_profile.json and the device JSON
 * of each model or NeuronCore (device_profile_*.json, legacy ntff.json).
 *
 * Records are reported as the protobuf-c messages of proto/ -- those that
 * ntrace.pb, cpu_util.pb, host_mem.pb, trace_info.pb and *.ntff hold -- so
 * they are stored by the same code as the capture files.  A JSON field
 * fills the message field of the same name or of a vendor alias (for
 * instance duration_ns -> duration, lnc_idx -> nc_idx, label ->
 * timeline_track; see the tables in fmt_vjson.c); numbers written as
 * strings are accepted.  A field the message has no place for, or whose
 * value does not convert, goes to the message's `attributes` list; messages
 * without one (samples) drop it with one warning per section and key.
 *
 * Timestamps are taken as exported: Unix-epoch ns for system records --
 * hardware events included, the vendor tool has aligned them already (the
 * raw device clock, when exported, stays in the nc_start_timestamp_ns /
 * nc_stop_timestamp_ns attributes) -- and the device timeline for device
 * records.
 *
 * Ownership: every message and pointer passed to a callback is borrowed and
 * valid only during that callback; copy what you keep.
 */
#ifndef NEX_FMT_VJSON_H
#define NEX_FMT_VJSON_H

#include <stddef.h>
#include <stdint.h>

#include "common.pb-c.h"
#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

enum fmt_vjson_kind {
  FMT_VJSON_NONE = 0, /* not a vendor JSON export */
  FMT_VJSON_SYSTEM,   /* system_profile.json */
  FMT_VJSON_DEVICE    /* device JSON */
};

/* Where a record comes from: what the capture formats keep per file rather
 * than per record. */
struct fmt_vjson_origin {
  const char *section;     /* the top-level key: "trace_events", "dma"... */
  const char *instance_id; /* the record's instance_id, "" when absent */
  const char *process_id;  /* the record's process_id as text, "" when absent */
  uint64_t offset;         /* byte offset of the record (after gunzip) */
};

struct fmt_vjson_cb {
  void *ud;
  /* Each returns 0 to go on, non-zero to stop reading (the read then
   * returns that value).  NULL callbacks are allowed. */

  /* trace_events / trace_event: a SystemEvent (an event of a nested
   * {"<type>": [...]} list carries the attribute event_type = <type>);
   * HBM usage samples (any section whose name contains "hbm"): HbmUsage. */
  int (*ntrace)(void *ud, const struct fmt_vjson_origin *o,
                const Nex__NtraceRecord *r);
  /* cpu_util samples. */
  int (*cpu)(void *ud, const struct fmt_vjson_origin *o,
             const Nex__CpuUsage *c);
  /* mem_usage samples. */
  int (*host_mem)(void *ud, const struct fmt_vjson_origin *o,
                  const Nex__HostMemUsage *m);
  /* system_profile_metadata entries. */
  int (*trace_info)(void *ud, const struct fmt_vjson_origin *o,
                    const Nex__TraceInfo *t);
  /* device_profile_list entries: the NeuronCore (-1 if not given) and the
   * name of its device JSON file without ".json". */
  int (*device_profile)(void *ud, const struct fmt_vjson_origin *o, int nc_idx,
                        const char *name);
  /* instruction / dma records of the device JSON: an Instruction or a
   * DmaPacket. */
  int (*ntff)(void *ud, const struct fmt_vjson_origin *o,
              const Nex__NtffRecord *r);
  /* Any other section (summary, layer_summary, annotation, profile_info,
   * summary_groups...): one call per record -- per element of an array, or
   * once for an object or a scalar -- with its members flattened (nested
   * values as JSON text). */
  int (*other)(void *ud, const struct fmt_vjson_origin *o,
               Nex__Attribute *const *attrs, size_t n);
  /* A record or field that could not be used: skipped, reading goes on. */
  void (*warning)(void *ud, uint64_t offset, const char *msg);
};

struct fmt_vjson_stats {
  uint64_t bytes;           /* bytes of JSON read (after gunzip) */
  uint64_t records;         /* records reported through the callbacks */
  uint64_t skipped;         /* records reported through warning */
  enum fmt_vjson_kind kind; /* the sections seen: system, device or none */
};

/* Reads the export at `path` (gzip detected by magic bytes) and calls `cb`
 * for every record.  Returns 0 when the file was read to its end (even with
 * skipped records), a negative errno-style code when it could not be opened
 * or is not a JSON object at all (and *cause says why; free it), or the
 * non-zero value a callback returned.  `st` may be NULL. */
int fmt_vjson_read(const char *path, const struct fmt_vjson_cb *cb,
                   struct fmt_vjson_stats *st, char **cause);

/* Reads at most the first 64 KiB of `path` and returns what it is, from the
 * first top-level key that tells (FMT_VJSON_NONE for a Chrome trace or any
 * other JSON), or a negative errno-style code on I/O error. */
int fmt_vjson_probe(const char *path);

#endif
