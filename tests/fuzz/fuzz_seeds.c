/* fuzz_seeds.c -- writes the seed corpus of the fuzz targets.
 *
 * Usage: fuzz_seeds DIR.  Writes DIR/corpus-pb/seed-<type> (the selector
 * byte of fuzz_fmt_pb, then a small valid file with every record kind of
 * that type) and DIR/corpus-neff/seed-<n> (valid NEFF files).
 */
#include "fmt_neff.h"
#include "fmt_pb.h"
#include "fuzz_fmt.h"
#include "util.h"

#include "cpu_util.pb-c.h"
#include "host_mem.pb-c.h"
#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "trace_info.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Opens dir/name for writing; exits on failure. */
static FILE *fuzz_seeds_create(const char *dir, const char *name) {
  char *p = xasprintf("%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f) {
    perror(p);
    exit(1);
  }
  free(p);
  return f;
}

/* Starts seed dir/seed-name: the selector byte and the file header. */
static FILE *fuzz_seeds_pb(const char *dir, const char *name,
                           enum fuzz_fmt_pb_type t, const char *magic) {
  char *file = xasprintf("seed-%s", name);
  FILE *f = fuzz_seeds_create(dir, file);
  free(file);
  fputc((int)t, f);
  fmt_pb_write_header(f, magic);
  return f;
}

static void fuzz_seeds_close(FILE *f) {
  if (ferror(f) || fclose(f) != 0) {
    perror("fuzz_seeds");
    exit(1);
  }
}

static void fuzz_seeds_ntrace(const char *dir) {
  FILE *f =
      fuzz_seeds_pb(dir, "ntrace", FUZZ_FMT_PB_NTRACE, FMT_PB_MAGIC_NTRACE);
  Nex__Attribute a = NEX__ATTRIBUTE__INIT;
  a.key = "bytes";
  a.value = "4096";
  a.is_number = 1;
  Nex__Attribute *attrs[] = {&a};
  uint64_t flows[] = {1, 2, 1ull << 40};
  Nex__SystemEvent ev = NEX__SYSTEM_EVENT__INIT;
  ev.id = 1;
  ev.name = "nc_exec_running";
  ev.timestamp = 1732233600000000000ll;
  ev.duration = 2500;
  ev.source = NEX__TRACE_EVENT_SOURCE__NEURON_HW;
  ev.thread_id = 98399;
  ev.nc_idx = 3;
  ev.pcore_idx = -1;
  ev.worker_gid = 7;
  ev.exec_id = 42;
  ev.model_id = 10001;
  ev.model_name = "bert";
  ev.n_flow_id = 3;
  ev.flow_id = flows;
  ev.parent_id = 5;
  ev.framework_stream_id = -1;
  ev.nrt_sequence_id = 9;
  ev.cpu_timestamp_ns = 1732233600000000000ll;
  ev.nc_timestamp_ns = 123456;
  ev.type = 3;
  ev.size = 4096;
  ev.flop_count = 10;
  ev.mac_count = 5;
  ev.n_attributes = 1;
  ev.attributes = attrs;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &ev;
  fmt_pb_write_msg(f, &rec.base);
  Nex__HbmUsage hbm = NEX__HBM_USAGE__INIT;
  hbm.timestamp = 1732233600000000001ll;
  hbm.device_idx = 1;
  hbm.total_bytes = 1ull << 34;
  hbm.weights_bytes = 1ull << 30;
  hbm.unknown_bytes = 3;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
  rec.hbm = &hbm;
  fmt_pb_write_msg(f, &rec.base);
  fuzz_seeds_close(f);
}

static void fuzz_seeds_trace_info(const char *dir) {
  FILE *f = fuzz_seeds_pb(dir, "trace_info", FUZZ_FMT_PB_TRACE_INFO,
                          FMT_PB_MAGIC_TRACE_INFO);
  char *files[] = {"ntrace.pb", "profile_nc_0_session_0.ntff"};
  Nex__Attribute a = NEX__ATTRIBUTE__INIT;
  a.key = "k";
  a.value = "v";
  Nex__Attribute *attrs[] = {&a};
  Nex__TraceInfo ti = NEX__TRACE_INFO__INIT;
  ti.instance_id = "i-012590440bb9fd263";
  ti.process_id = 98399;
  ti.first_ts_ns = 1;
  ti.last_ts_ns = 2;
  ti.hbm_capacity_bytes = 1ull << 34;
  ti.dropped_events = 1;
  ti.stored_events = 2;
  ti.ntff_version = 6;
  ti.n_files = 2;
  ti.files = files;
  ti.instance_type = "trn1.32xlarge";
  ti.runtime_version = "2.22";
  ti.driver_version = "2.18";
  ti.collectives_version = "2.22";
  ti.num_neuron_devices = 16;
  ti.num_neuroncores = 32;
  ti.n_attributes = 1;
  ti.attributes = attrs;
  fmt_pb_write_msg(f, &ti.base);
  fuzz_seeds_close(f);
}

static void fuzz_seeds_samples(const char *dir) {
  FILE *f = fuzz_seeds_pb(dir, "cpu_util", FUZZ_FMT_PB_CPU_UTIL,
                          FMT_PB_MAGIC_CPU_UTIL);
  Nex__CpuUsage c = NEX__CPU_USAGE__INIT;
  c.timestamp = 1732233600000000000ll;
  c.cpu_id = "average";
  c.util_percent = 42.5;
  fmt_pb_write_msg(f, &c.base);
  c.cpu_id = "0";
  fmt_pb_write_msg(f, &c.base);
  fuzz_seeds_close(f);
  f = fuzz_seeds_pb(dir, "host_mem", FUZZ_FMT_PB_HOST_MEM,
                    FMT_PB_MAGIC_HOST_MEM);
  Nex__HostMemUsage h = NEX__HOST_MEM_USAGE__INIT;
  h.timestamp = 1732233600000000000ll;
  h.used_bytes = 1ull << 33;
  h.used_percent = 12.5;
  fmt_pb_write_msg(f, &h.base);
  fuzz_seeds_close(f);
}

static void fuzz_seeds_ntff(const char *dir) {
  FILE *f = fuzz_seeds_pb(dir, "ntff", FUZZ_FMT_PB_NTFF, FMT_PB_MAGIC_NTFF);
  Nex__Attribute a = NEX__ATTRIBUTE__INIT;
  a.key = "k";
  a.value = "1";
  a.is_number = 1;
  Nex__Attribute *attrs[] = {&a};
  Nex__NtffRecord rec = NEX__NTFF_RECORD__INIT;
  Nex__NtffHeader hd = NEX__NTFF_HEADER__INIT;
  hd.ntff_version = 6;
  hd.nc_idx = 1;
  hd.neff_hash = 395760075800974ull;
  hd.session_id = -1;
  hd.model_name = "bert";
  hd.ticks_per_nanosec = 1.4;
  hd.instance_type = "trn2.48xlarge";
  hd.peak_flops = 1e14;
  hd.n_attributes = 1;
  hd.attributes = attrs;
  rec.record_case = NEX__NTFF_RECORD__RECORD_HEADER;
  rec.header = &hd;
  fmt_pb_write_msg(f, &rec.base);
  Nex__Instruction in = NEX__INSTRUCTION__INIT;
  in.start_ts = 10;
  in.duration_ns = 5;
  in.engine = "tensor";
  in.timeline_track = "Tensor";
  in.opcode = "MATMULT";
  in.operands = "a,b";
  in.hlo_name = "dot.1";
  in.framework_op = "linear";
  in.raw_flops = 1000;
  uint64_t deps[] = {7, UINT64_MAX};
  in.n_inst_dep_ids = 2;
  in.inst_dep_ids = deps;
  in.n_attributes = 1;
  in.attributes = attrs;
  rec.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
  rec.instruction = &in;
  fmt_pb_write_msg(f, &rec.base);
  Nex__DmaPacket dma = NEX__DMA_PACKET__INIT;
  dma.start_ts = 11;
  dma.duration_ns = 3;
  dma.queue_name = "qSyncIO0";
  dma.queue_type = "io";
  dma.variable = "input0";
  dma.transfer_bytes = 64;
  rec.record_case = NEX__NTFF_RECORD__RECORD_DMA;
  rec.dma = &dma;
  fmt_pb_write_msg(f, &rec.base);
  Nex__SemaphoreUpdate sem = NEX__SEMAPHORE_UPDATE__INIT;
  sem.timestamp = 12;
  sem.id = "S[10]";
  sem.value = 2;
  sem.update_source = "Sync";
  sem.update_operation_type = "set";
  rec.record_case = NEX__NTFF_RECORD__RECORD_SEMAPHORE;
  rec.semaphore = &sem;
  fmt_pb_write_msg(f, &rec.base);
  Nex__ExecutionInfo ex = NEX__EXECUTION_INFO__INIT;
  ex.execution_index = 1;
  ex.neff_name = "neff_395760075800974.neff";
  ex.execution_start_ts = 1;
  ex.execution_end_ts = 100;
  ex.exec_id = 42;
  rec.record_case = NEX__NTFF_RECORD__RECORD_EXECUTION;
  rec.execution = &ex;
  fmt_pb_write_msg(f, &rec.base);
  Nex__CcOp cc = NEX__CC_OP__INIT;
  cc.start_ts = 20;
  cc.duration_ns = 30;
  cc.operation = "AllGather";
  cc.algorithm = "ring";
  cc.dtype = "bf16";
  rec.record_case = NEX__NTFF_RECORD__RECORD_CC_OP;
  rec.cc_op = &cc;
  fmt_pb_write_msg(f, &rec.base);
  Nex__UsageSample us = NEX__USAGE_SAMPLE__INIT;
  us.timestamp = 25;
  us.series = "psum";
  us.util_percent = 50;
  rec.record_case = NEX__NTFF_RECORD__RECORD_USAGE;
  rec.usage = &us;
  fmt_pb_write_msg(f, &rec.base);
  fuzz_seeds_close(f);
}

static void fuzz_seeds_neff(const char *dir) {
  struct fmt_neff_header h = {.package_version = 1,
                              .major_version = 2,
                              .minor_version = 17,
                              .build_version = "2.17.0",
                              .num_tpb = 2,
                              .hash_hex = "00112233445566778899aabbccddeeff"
                                          "00112233445566778899aabbccddeeff",
                              .uuid_hex = "0123456789abcdef0123456789abcdef",
                              .name = "model",
                              .requested_tpb_count = 2};
  FILE *f = fuzz_seeds_create(dir, "seed-sha256");
  fmt_neff_write(f, &h, "payload-bytes", 13);
  fuzz_seeds_close(f);
  h.package_version = 2;
  strcpy(h.hash_hex, "d41d8cd98f00b204e9800998ecf8427e");
  f = fuzz_seeds_create(dir, "seed-md5");
  fmt_neff_write(f, &h, NULL, 0);
  fuzz_seeds_close(f);
}

/* Creates dir/sub and returns its path (caller frees); exits on failure. */
static char *fuzz_seeds_mkdir(const char *dir, const char *sub) {
  char *p = xasprintf("%s/%s", dir, sub);
  if (mkdir(p, 0755) < 0 && errno != EEXIST) {
    perror(p);
    exit(1);
  }
  return p;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  char *pb = fuzz_seeds_mkdir(argv[1], "corpus-pb");
  char *neff = fuzz_seeds_mkdir(argv[1], "corpus-neff");
  fuzz_seeds_ntrace(pb);
  fuzz_seeds_trace_info(pb);
  fuzz_seeds_samples(pb);
  fuzz_seeds_ntff(pb);
  fuzz_seeds_neff(neff);
  free(pb);
  free(neff);
  return 0;
}
