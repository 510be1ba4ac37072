/* ingest_readers.h -- the readers of server/ingest/, one file per input
 * kind, each writing through the sink (ingest_sink.h): what ingest_run.c
 * dispatches to, and what readers of one kind lend each other (a vendor
 * export is read through the functions of the capture files).  Every
 * reader keeps its own state (ingest_state) and frees it; problems become
 * Warning rows.  Not a public interface.
 */
#ifndef NEX_INGEST_READERS_H
#define NEX_INGEST_READERS_H

#include "fmt_pb.h"
#include "fmt_pb_pipe.h"
#include "ingest_sink.h"

#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

/* ------------------------------------------------------------ system
 * ingest_system.c: the system traces of a process and the derived rows.
 *
 * Opens a capture file of --dir (system trace or NTFF); on failure records
 * the warning and returns NULL (close with fmt_pb_close).
 * ingest_system_pb_error records a fmt_pb_next() failure. */
struct fmt_pb *ingest_system_pb_open(struct ing *g, const char *rel,
                                     const char *magic);
void ingest_system_pb_error(struct ing *g, const char *rel, int rc,
                            uint64_t off);
/* What a capture file's record goes to: its message (rec->msg), its
 * prep text, the record's byte offset for the warnings it makes; with the
 * file. */
typedef void (*ingest_system_pb_fn)(struct ing *g, const char *rel,
                                    const struct fmt_pb_pipe_rec *rec);
/* Reads the records of r (file rel) from its position to its end,
 * unpacked on a thread of their own (fmt_pb_pipe.h) as messages of
 * descriptor d, with prep (NULL: none) run there for each: fn for each,
 * the progress position after each, and a Warning for each record that
 * cannot be used. */
void ingest_system_pb_records(struct ing *g, const char *rel, struct fmt_pb *r,
                              const ProtobufCMessageDescriptor *d,
                              fmt_pb_pipe_prep_fn prep, ingest_system_pb_fn fn);
/* Reads one file of the current process (ingest_context_*): ntrace.pb
 * (its timestamp_sync_points first, then its events and HBM samples),
 * cpu_util.pb, host_mem.pb. */
void ingest_system_ntrace(struct ing *g, const char *rel);
void ingest_system_cpu_util(struct ing *g, const char *rel);
void ingest_system_host_mem(struct ing *g, const char *rel);
/* Reads p's trace_info.pb: sets *instance (malloc'd, the caller frees it)
 * and *pid, writes the SystemProfileMetadata row.  Returns false if the
 * instance is filtered out (no row then). */
bool ingest_system_trace_info(struct ing *g, const struct discover_process *p,
                              char **instance, int64_t *pid);
/* Every file was read: the transfer tracks are watched for their
 * bandwidth counters (ingest_rates.h) before they are placed. */
void ingest_system_rates(struct ing *g);
/* The rows derived from what is stored, once every track was placed:
 * transfer bandwidth and DMA throughput counters, device time offsets.
 * Returns how many of the counters took a scan of the stored slices. */
int ingest_system_derived(struct ing *g);

/* One system event of the current process.  device_clock: hardware
 * events carry the raw device clock and are aligned through the
 * timestamp_sync_points of the process's ntrace.pb; else their timestamps
 * are on the CPU clock already (vendor exports). */
void ingest_system_event(struct ing *g, const Nex__SystemEvent *e,
                         bool device_clock);
/* Samples of the current instance. */
void ingest_system_hbm(struct ing *g, const Nex__HbmUsage *h);
void ingest_system_cpu_sample(struct ing *g, const Nex__CpuUsage *c);
void ingest_system_mem_sample(struct ing *g, const Nex__HostMemUsage *m);
/* A SystemProfileMetadata row (ti may be NULL); file names the source of
 * the dropped-events warning. */
void ingest_system_metadata(struct ing *g, const char *instance, int64_t pid,
                            const Nex__TraceInfo *ti, const char *dir,
                            const char *file);
/* Device profile dp_id's first execution ran (nc, exec_id): where the
 * current process's timestamp_sync_point of it lies on the cpu clock
 * becomes the hint of the device time offset (nothing without one). */
void ingest_system_device_hint(struct ing *g, int64_t dp_id, int nc,
                               int64_t exec_id);

/* ------------------------------------------------------------ Chrome
 * ingest_chrome.c: reads one Chrome trace; instance/pid name the process
 * it belongs to, or NULL/-1 for a standalone trace (grouped by rank or
 * file name). */
void ingest_chrome_read(struct ing *g, const char *rel, const char *instance,
                        int64_t pid);

/* ingest_chrome_bind.c: the flow endpoints of the Chrome traces, bound to
 * slices once all slices exist.  What the binding needs is kept per track
 * (a track hook) in bounded memory: beyond a budget it goes to an unlinked
 * spill file beside the store.
 *
 * A Chrome file begins (returns its number; rel is borrowed until the
 * binding) and ends (max_offset: the largest offset of its endpoints). */
uint32_t ingest_chrome_bind_file(struct ing *g, const char *rel);
void ingest_chrome_bind_file_end(struct ing *g, uint64_t max_offset);
/* A track that has flow endpoints or may have slices they bind to: it
 * keeps the history of its slices from now on. */
void ingest_chrome_bind_track(struct itrack *t);
/* An endpoint on track t (made a binding track first): phase 's', 't' or
 * 'f', enclosing for an 'f' with bp:"e". */
void ingest_chrome_bind_endpoint(struct ing *g, struct itrack *t, uint32_t file,
                                 uint64_t offset, int64_t ts, int64_t flow_id,
                                 char phase, bool enclosing);
/* Binds the endpoints of the tracks not bound yet (a track is bound, and
 * its slice_flow rows written, when it is finished: every slice placed),
 * warns of the unbound endpoints in file order, writes the flow table's
 * rows and frees the binding's state; *endpoints: how many were read.
 * Returns 0, or a negative errno when the spill file or the store could
 * not be read back (the flows are then incomplete: the ingest fails). */
int ingest_chrome_bind_flows(struct ing *g, size_t *endpoints);

/* ------------------------------------------------------------ Perfetto
 * ingest_perfetto.c: reads one Perfetto trace of --dir as a standalone
 * trace (grouped by its file name). */
void ingest_perfetto_read(struct ing *g, const char *rel);

/* ingest_perfetto_neuron.c: a Perfetto trace written by the Neuron tools
 * (recognised by its naming and debug arguments) into the tables of a
 * native capture; a system export also reads the device exports beside
 * it.  Returns false, having read nothing, for any other trace. */
bool ingest_perfetto_neuron_read(struct ing *g, const char *rel);

/* ------------------------------------------------------------ device
 * ingest_device.c: reads one NTFF (and its NEFF header) as a device
 * profile of the current process. */
void ingest_device_read(struct ing *g, const struct discover_device *dev,
                        const char *profile_base);

/* A device profile from any source: begin (a DeviceProfileList row, and
 * Metadata when there is a header), records, end (totals).  Strings are
 * borrowed; NULL ones are stored as NULL; session < 0: model mode. */
struct ingest_device_info {
  const char *name, *ntff_file, *neff_file, *model_name, *model_id;
  int nc, pcore;
  int64_t session;
  const Nex__NtffHeader *header; /* may be NULL */
};
void ingest_device_begin(struct ing *g, const struct ingest_device_info *d);
void ingest_device_record(struct ing *g, const Nex__NtffRecord *rec);
void ingest_device_end(struct ing *g);

/* ------------------------------------------------------------ JSON dumps
 * ingest_vjson.c: the vendor's JSON exports (system_profile.json and the
 * device JSON), through the same functions as the capture files.  Reads
 * every system export of the list first (their device_profile_list names
 * the instance, process and NeuronCore of each device JSON), then the
 * device ones.  Returns how many of the files were vendor exports; the
 * others are left for the Chrome reader and flagged in *handled. */
int ingest_vjson_read_all(struct ing *g, char **rels, int n, bool *handled);
/* ingest_nrtjson.c: the runtime's JSON event dumps among the files not
 * handled yet (recognised by content), each as the system trace of its
 * process folder (or of the profile); flags them in *handled and returns
 * how many. */
int ingest_nrtjson_read_all(struct ing *g, char **rels, int n, bool *handled);

#endif
