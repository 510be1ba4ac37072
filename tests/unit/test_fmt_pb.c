/* test_fmt_pb.c -- the framed protobuf reader and writer (server/fmt_pb.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/fuzz_fmt.h"
#include "fmt_pb.h"
#include "testutil.h"
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
#include <sys/wait.h>
#include <unistd.h>

/* Creates tmp/name and writes the header of `magic`. */
static FILE *create_pb(const char *name, const char *magic) {
  char *p = testutil_path(name);
  FILE *f = fopen(p, "wb");
  free(p);
  assert_non_null(f);
  assert_int_equal(fmt_pb_write_header(f, magic), 0);
  return f;
}

/* Writes n raw bytes as tmp/name. */
static void write_raw(const char *name, const void *b, size_t n) {
  char *p = testutil_path(name);
  testutil_write(p, b, n);
  free(p);
}

static struct fmt_pb *open_ok(const char *name, const char *magic) {
  char *p = testutil_path(name), *cause = NULL;
  struct fmt_pb *r = NULL;
  assert_int_equal(fmt_pb_open(p, magic, &r, &cause), 0);
  assert_null(cause);
  free(p);
  return r;
}

/* Opens tmp/name expecting error `want`; returns the cause (caller frees),
 * which must name the file. */
static char *open_fails(const char *name, const char *magic, int want) {
  char *p = testutil_path(name), *cause = NULL;
  struct fmt_pb *r = (struct fmt_pb *)1;
  assert_int_equal(fmt_pb_open(p, magic, &r, &cause), want);
  assert_null(r);
  assert_non_null(cause);
  assert_non_null(strstr(cause, p));
  free(p);
  return cause;
}

/* ------------------------------------------------------------ formats */

static void test_ntrace_round_trip(void **state) {
  FILE *f = create_pb("ntrace.pb", FMT_PB_MAGIC_NTRACE);
  Nex__Attribute a1 = NEX__ATTRIBUTE__INIT, a2 = NEX__ATTRIBUTE__INIT;
  a1.key = "queue";
  a1.value = "qSyncIO0";
  a2.key = "bytes";
  a2.value = "4096";
  a2.is_number = 1;
  Nex__Attribute *attrs[] = {&a1, &a2};
  uint64_t flows[] = {7, UINT64_MAX};
  Nex__SystemEvent ev = NEX__SYSTEM_EVENT__INIT;
  ev.id = 18446744073709551557ull;
  ev.name = "nc_exec_running";
  ev.timestamp = 1732233600123456789ll;
  ev.duration = 2500000;
  ev.source = NEX__TRACE_EVENT_SOURCE__NEURON_HW;
  ev.thread_id = 98399;
  ev.nc_idx = 3;
  ev.pcore_idx = -1;
  ev.worker_gid = 17;
  ev.exec_id = 42;
  ev.model_id = 10001;
  ev.model_name = "llama-3-8b";
  ev.n_flow_id = 2;
  ev.flow_id = flows;
  ev.parent_id = 5;
  ev.framework_stream_id = -2;
  ev.nrt_sequence_id = 123;
  ev.cpu_timestamp_ns = 1732233600000000000ll;
  ev.nc_timestamp_ns = 987654321;
  ev.type = 12;
  ev.size = 1ull << 40;
  ev.flop_count = 3;
  ev.mac_count = 4;
  ev.n_attributes = 2;
  ev.attributes = attrs;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &ev;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);

  Nex__HbmUsage hbm = NEX__HBM_USAGE__INIT;
  hbm.timestamp = 1732233600200000000ll;
  hbm.device_idx = 1;
  hbm.hbm_idx = 2;
  hbm.total_bytes = 96ull << 30;
  hbm.weights_bytes = 16ull << 30;
  hbm.dma_rings_collectives_bytes = 12345;
  hbm.unknown_bytes = 1;
  Nex__NtraceRecord rec2 = NEX__NTRACE_RECORD__INIT;
  rec2.record_case = NEX__NTRACE_RECORD__RECORD_HBM;
  rec2.hbm = &hbm;
  assert_int_equal(fmt_pb_write_msg(f, &rec2.base), 0);
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("ntrace.pb", FMT_PB_MAGIC_NTRACE);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off),
                   1);
  assert_int_equal(off, 8);
  Nex__NtraceRecord *got = (Nex__NtraceRecord *)m;
  assert_int_equal(got->record_case, NEX__NTRACE_RECORD__RECORD_EVENT);
  Nex__SystemEvent *e = got->event;
  assert_true(e->id == 18446744073709551557ull);
  assert_string_equal(e->name, "nc_exec_running");
  assert_true(e->timestamp == 1732233600123456789ll);
  assert_int_equal(e->duration, 2500000);
  assert_int_equal(e->source, NEX__TRACE_EVENT_SOURCE__NEURON_HW);
  assert_int_equal(e->thread_id, 98399);
  assert_int_equal(e->nc_idx, 3);
  assert_int_equal(e->pcore_idx, -1);
  assert_int_equal(e->worker_gid, 17);
  assert_int_equal(e->exec_id, 42);
  assert_int_equal(e->model_id, 10001);
  assert_string_equal(e->model_name, "llama-3-8b");
  assert_int_equal(e->n_flow_id, 2);
  assert_int_equal(e->flow_id[0], 7);
  assert_true(e->flow_id[1] == UINT64_MAX);
  assert_int_equal(e->parent_id, 5);
  assert_int_equal(e->framework_stream_id, -2);
  assert_int_equal(e->nrt_sequence_id, 123);
  assert_true(e->cpu_timestamp_ns == 1732233600000000000ll);
  assert_int_equal(e->nc_timestamp_ns, 987654321);
  assert_int_equal(e->type, 12);
  assert_true(e->size == 1ull << 40);
  assert_int_equal(e->flop_count, 3);
  assert_int_equal(e->mac_count, 4);
  assert_int_equal(e->n_attributes, 2);
  assert_string_equal(e->attributes[0]->key, "queue");
  assert_string_equal(e->attributes[0]->value, "qSyncIO0");
  assert_false(e->attributes[0]->is_number);
  assert_string_equal(e->attributes[1]->key, "bytes");
  assert_string_equal(e->attributes[1]->value, "4096");
  assert_true(e->attributes[1]->is_number);
  uint64_t second = fmt_pb_pos(r);

  assert_int_equal(fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off),
                   1);
  assert_int_equal(off, second);
  got = (Nex__NtraceRecord *)m;
  assert_int_equal(got->record_case, NEX__NTRACE_RECORD__RECORD_HBM);
  assert_true(got->hbm->timestamp == 1732233600200000000ll);
  assert_int_equal(got->hbm->device_idx, 1);
  assert_int_equal(got->hbm->hbm_idx, 2);
  assert_true(got->hbm->total_bytes == 96ull << 30);
  assert_true(got->hbm->weights_bytes == 16ull << 30);
  assert_int_equal(got->hbm->dma_rings_collectives_bytes, 12345);
  assert_int_equal(got->hbm->unknown_bytes, 1);
  assert_int_equal(got->hbm->io_bytes, 0);

  assert_int_equal(fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off),
                   0);
  assert_null(m);
  assert_int_equal(fmt_pb_pos(r), fmt_pb_size(r));
  assert_int_equal(fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off),
                   0);
  fmt_pb_close(r);
}

static void test_trace_info_round_trip(void **state) {
  FILE *f = create_pb("trace_info.pb", FMT_PB_MAGIC_TRACE_INFO);
  char *files[] = {"ntrace.pb", "profile_nc_0_session_0.ntff",
                   "neff_395760075800974.neff"};
  Nex__Attribute a = NEX__ATTRIBUTE__INIT;
  a.key = "capture_mode";
  a.value = "session";
  Nex__Attribute *attrs[] = {&a};
  Nex__TraceInfo ti = NEX__TRACE_INFO__INIT;
  ti.instance_id = "i-012590440bb9fd263";
  ti.process_id = 98399;
  ti.first_ts_ns = 1732233600000000000ll;
  ti.last_ts_ns = 1732233660000000000ll;
  ti.hbm_capacity_bytes = 24ull << 30;
  ti.dropped_events = 17;
  ti.stored_events = 1000000;
  ti.ntff_version = 6;
  ti.n_files = 3;
  ti.files = files;
  ti.instance_type = "trn1.32xlarge";
  ti.runtime_version = "2.22.14";
  ti.driver_version = "2.18.12";
  ti.collectives_version = "2.22.26";
  ti.num_neuron_devices = 16;
  ti.num_neuroncores = 32;
  ti.n_attributes = 1;
  ti.attributes = attrs;
  assert_int_equal(fmt_pb_write_msg(f, &ti.base), 0);
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("trace_info.pb", FMT_PB_MAGIC_TRACE_INFO);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off), 1);
  Nex__TraceInfo *g = (Nex__TraceInfo *)m;
  assert_string_equal(g->instance_id, "i-012590440bb9fd263");
  assert_int_equal(g->process_id, 98399);
  assert_true(g->first_ts_ns == 1732233600000000000ll);
  assert_true(g->last_ts_ns == 1732233660000000000ll);
  assert_true(g->hbm_capacity_bytes == 24ull << 30);
  assert_int_equal(g->dropped_events, 17);
  assert_int_equal(g->stored_events, 1000000);
  assert_int_equal(g->ntff_version, 6);
  assert_int_equal(g->n_files, 3);
  assert_string_equal(g->files[0], "ntrace.pb");
  assert_string_equal(g->files[1], "profile_nc_0_session_0.ntff");
  assert_string_equal(g->files[2], "neff_395760075800974.neff");
  assert_string_equal(g->instance_type, "trn1.32xlarge");
  assert_string_equal(g->runtime_version, "2.22.14");
  assert_string_equal(g->driver_version, "2.18.12");
  assert_string_equal(g->collectives_version, "2.22.26");
  assert_int_equal(g->num_neuron_devices, 16);
  assert_int_equal(g->num_neuroncores, 32);
  assert_int_equal(g->n_attributes, 1);
  assert_string_equal(g->attributes[0]->key, "capture_mode");
  assert_string_equal(g->attributes[0]->value, "session");
  assert_int_equal(fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off), 0);
  fmt_pb_close(r);
}

static void test_cpu_util_round_trip(void **state) {
  FILE *f = create_pb("cpu_util.pb", FMT_PB_MAGIC_CPU_UTIL);
  static const char *const ids[] = {"0", "1", "average"};
  for (int i = 0; i < 30; i++) {
    Nex__CpuUsage c = NEX__CPU_USAGE__INIT;
    c.timestamp = 1732233600000000000ll + (int64_t)(i / 3) * 1000000000;
    c.cpu_id = (char *)ids[i % 3];
    c.util_percent = i * 2.5;
    assert_int_equal(fmt_pb_write_msg(f, &c.base), 0);
  }
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("cpu_util.pb", FMT_PB_MAGIC_CPU_UTIL);
  ProtobufCMessage *m;
  uint64_t off;
  int n = 0, rc;
  while ((rc = fmt_pb_next(r, &nex__cpu_usage__descriptor, &m, &off)) == 1) {
    Nex__CpuUsage *c = (Nex__CpuUsage *)m;
    assert_true(c->timestamp ==
                1732233600000000000ll + (int64_t)(n / 3) * 1000000000);
    assert_string_equal(c->cpu_id, ids[n % 3]);
    assert_true(c->util_percent == n * 2.5);
    n++;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(n, 30);
  fmt_pb_close(r);
}

static void test_host_mem_round_trip(void **state) {
  FILE *f = create_pb("host_mem.pb", FMT_PB_MAGIC_HOST_MEM);
  for (int i = 0; i < 5; i++) {
    Nex__HostMemUsage h = NEX__HOST_MEM_USAGE__INIT;
    h.timestamp = 1732233600000000000ll + (int64_t)i * 1000000000;
    h.used_bytes = (100ull + (uint64_t)i) << 30;
    h.used_percent = 12.5 + i;
    assert_int_equal(fmt_pb_write_msg(f, &h.base), 0);
  }
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("host_mem.pb", FMT_PB_MAGIC_HOST_MEM);
  ProtobufCMessage *m;
  uint64_t off;
  int n = 0, rc;
  while ((rc = fmt_pb_next(r, &nex__host_mem_usage__descriptor, &m, &off)) ==
         1) {
    Nex__HostMemUsage *h = (Nex__HostMemUsage *)m;
    assert_true(h->timestamp ==
                1732233600000000000ll + (int64_t)n * 1000000000);
    assert_true(h->used_bytes == (100ull + (uint64_t)n) << 30);
    assert_true(h->used_percent == 12.5 + n);
    n++;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(n, 5);
  fmt_pb_close(r);
}

static void test_ntff_round_trip(void **state) {
  FILE *f = create_pb("x.ntff", FMT_PB_MAGIC_NTFF);
  Nex__NtffRecord rec;
  Nex__NtffHeader hd = NEX__NTFF_HEADER__INIT;
  hd.ntff_version = 6;
  hd.nc_idx = 2;
  hd.pcore_idx = 4;
  hd.neff_hash = 14382885777943380728ull;
  hd.session_id = -1;
  hd.model_name = "bert";
  hd.ticks_per_nanosec = 1.4;
  hd.num_physical_cores = 8;
  hd.instance_type = "trn2.48xlarge";
  hd.first_hw_timestamp = 1000;
  hd.last_hw_timestamp = 9000000;
  hd.tensor_engine_num_rows = 128;
  hd.tensor_engine_num_cols = 512;
  hd.neuroncore_clock_freq = 2.8;
  hd.hbm_ddr_bandwidth = 2.9e12;
  hd.peak_flops = 1.3e14;
  Nex__Instruction in = NEX__INSTRUCTION__INIT;
  in.start_ts = 1100;
  in.duration_ns = 64;
  in.engine = "tensor";
  in.timeline_track = "TensorMatrix";
  in.opcode = "MATMULT";
  in.operands = "src=[0:128] dst=psum[0]";
  in.id = 77;
  in.pc = 0x1000;
  in.hlo_name = "dot.5";
  in.framework_op = "layer1/linear";
  in.raw_flops = 4194304;
  in.hbm_read_bytes = 65536;
  in.hbm_write_bytes = 32768;
  in.execution_index = 1;
  Nex__DmaPacket dma = NEX__DMA_PACKET__INIT;
  dma.start_ts = 1200;
  dma.duration_ns = 300;
  dma.id = 9;
  dma.queue_name = "qSyncIO0";
  dma.queue_idx = 3;
  dma.queue_type = "io";
  dma.engine_idx = 5;
  dma.read_bytes = 1024;
  dma.write_bytes = 2048;
  dma.transfer_bytes = 3072;
  dma.variable = "input0";
  Nex__SemaphoreUpdate sem = NEX__SEMAPHORE_UPDATE__INIT;
  sem.timestamp = 1300;
  sem.id = "S[10]";
  sem.value = -3;
  sem.update_source = "Sync";
  sem.update_operation_type = "increment";
  Nex__ExecutionInfo ex = NEX__EXECUTION_INFO__INIT;
  ex.execution_index = 1;
  ex.neff_name = "neff_14382885777943380728.neff";
  ex.execution_start_ts = 1000;
  ex.execution_end_ts = 9000000;
  ex.num_subgraphs = 2;
  ex.row_count = 123456;
  ex.exec_id = 42;
  Nex__CcOp cc = NEX__CC_OP__INIT;
  cc.start_ts = 5000;
  cc.duration_ns = 7000;
  cc.operation = "AllGather";
  cc.algorithm = "ring";
  cc.num_elements = 1u << 20;
  cc.dtype = "bf16";
  cc.op_id = 3;
  cc.input_size = 2u << 20;
  cc.output_size = 64u << 20;
  Nex__UsageSample us = NEX__USAGE_SAMPLE__INIT;
  us.timestamp = 6000;
  us.series = "sbuf";
  us.util_percent = 87.5;

  nex__ntff_record__init(&rec);
  rec.record_case = NEX__NTFF_RECORD__RECORD_HEADER;
  rec.header = &hd;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
  rec.instruction = &in;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_DMA;
  rec.dma = &dma;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_SEMAPHORE;
  rec.semaphore = &sem;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_EXECUTION;
  rec.execution = &ex;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_CC_OP;
  rec.cc_op = &cc;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  rec.record_case = NEX__NTFF_RECORD__RECORD_USAGE;
  rec.usage = &us;
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("x.ntff", FMT_PB_MAGIC_NTFF);
  ProtobufCMessage *m;
  uint64_t off;
  const ProtobufCMessageDescriptor *d = &nex__ntff_record__descriptor;
  Nex__NtffRecord *g;

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_HEADER);
  assert_int_equal(g->header->ntff_version, 6);
  assert_int_equal(g->header->nc_idx, 2);
  assert_int_equal(g->header->pcore_idx, 4);
  assert_true(g->header->neff_hash == 14382885777943380728ull);
  assert_int_equal(g->header->session_id, -1);
  assert_string_equal(g->header->model_name, "bert");
  assert_true(g->header->ticks_per_nanosec == 1.4);
  assert_int_equal(g->header->num_physical_cores, 8);
  assert_string_equal(g->header->instance_type, "trn2.48xlarge");
  assert_int_equal(g->header->first_hw_timestamp, 1000);
  assert_int_equal(g->header->last_hw_timestamp, 9000000);
  assert_int_equal(g->header->tensor_engine_num_rows, 128);
  assert_int_equal(g->header->tensor_engine_num_cols, 512);
  assert_true(g->header->neuroncore_clock_freq == 2.8);
  assert_true(g->header->hbm_ddr_bandwidth == 2.9e12);
  assert_true(g->header->peak_flops == 1.3e14);
  assert_int_equal(g->header->n_attributes, 0);

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_INSTRUCTION);
  assert_int_equal(g->instruction->start_ts, 1100);
  assert_int_equal(g->instruction->duration_ns, 64);
  assert_string_equal(g->instruction->engine, "tensor");
  assert_string_equal(g->instruction->timeline_track, "TensorMatrix");
  assert_string_equal(g->instruction->opcode, "MATMULT");
  assert_string_equal(g->instruction->operands, "src=[0:128] dst=psum[0]");
  assert_int_equal(g->instruction->id, 77);
  assert_int_equal(g->instruction->pc, 0x1000);
  assert_string_equal(g->instruction->hlo_name, "dot.5");
  assert_string_equal(g->instruction->framework_op, "layer1/linear");
  assert_int_equal(g->instruction->raw_flops, 4194304);
  assert_int_equal(g->instruction->hbm_read_bytes, 65536);
  assert_int_equal(g->instruction->hbm_write_bytes, 32768);
  assert_int_equal(g->instruction->execution_index, 1);

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_DMA);
  assert_int_equal(g->dma->start_ts, 1200);
  assert_int_equal(g->dma->duration_ns, 300);
  assert_int_equal(g->dma->id, 9);
  assert_string_equal(g->dma->queue_name, "qSyncIO0");
  assert_int_equal(g->dma->queue_idx, 3);
  assert_string_equal(g->dma->queue_type, "io");
  assert_int_equal(g->dma->engine_idx, 5);
  assert_int_equal(g->dma->read_bytes, 1024);
  assert_int_equal(g->dma->write_bytes, 2048);
  assert_int_equal(g->dma->transfer_bytes, 3072);
  assert_string_equal(g->dma->variable, "input0");

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_SEMAPHORE);
  assert_int_equal(g->semaphore->timestamp, 1300);
  assert_string_equal(g->semaphore->id, "S[10]");
  assert_int_equal(g->semaphore->value, -3);
  assert_string_equal(g->semaphore->update_source, "Sync");
  assert_string_equal(g->semaphore->update_operation_type, "increment");

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_EXECUTION);
  assert_int_equal(g->execution->execution_index, 1);
  assert_string_equal(g->execution->neff_name,
                      "neff_14382885777943380728.neff");
  assert_int_equal(g->execution->execution_start_ts, 1000);
  assert_int_equal(g->execution->execution_end_ts, 9000000);
  assert_int_equal(g->execution->num_subgraphs, 2);
  assert_int_equal(g->execution->row_count, 123456);
  assert_int_equal(g->execution->exec_id, 42);

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_CC_OP);
  assert_int_equal(g->cc_op->start_ts, 5000);
  assert_int_equal(g->cc_op->duration_ns, 7000);
  assert_string_equal(g->cc_op->operation, "AllGather");
  assert_string_equal(g->cc_op->algorithm, "ring");
  assert_int_equal(g->cc_op->num_elements, 1u << 20);
  assert_string_equal(g->cc_op->dtype, "bf16");
  assert_int_equal(g->cc_op->op_id, 3);
  assert_int_equal(g->cc_op->input_size, 2u << 20);
  assert_int_equal(g->cc_op->output_size, 64u << 20);

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  g = (Nex__NtffRecord *)m;
  assert_int_equal(g->record_case, NEX__NTFF_RECORD__RECORD_USAGE);
  assert_int_equal(g->usage->timestamp, 6000);
  assert_string_equal(g->usage->series, "sbuf");
  assert_true(g->usage->util_percent == 87.5);

  assert_int_equal(fmt_pb_next(r, d, &m, &off), 0);
  fmt_pb_close(r);
}

/* -------------------------------------------------------- bad headers */

static void test_missing_file(void **state) {
  free(open_fails("does-not-exist.pb", FMT_PB_MAGIC_NTRACE, -ENOENT));
}

static void test_empty_file(void **state) {
  write_raw("empty.pb", "", 0);
  free(open_fails("empty.pb", FMT_PB_MAGIC_NTRACE, -ENODATA));
}

static void test_wrong_magic(void **state) {
  FILE *f = create_pb("magic.pb", FMT_PB_MAGIC_TRACE_INFO);
  assert_int_equal(fclose(f), 0);
  char *cause = open_fails("magic.pb", FMT_PB_MAGIC_NTRACE, -EPROTO);
  assert_non_null(strstr(cause, "offset 0"));
  assert_non_null(strstr(cause, "\"NXTI\""));
  free(cause);
}

static void test_unknown_version(void **state) {
  write_raw("version.pb", "NXTR\x02\x00\x00\x00", 8);
  char *cause = open_fails("version.pb", FMT_PB_MAGIC_NTRACE, -ENOTSUP);
  assert_non_null(strstr(cause, "offset 4"));
  assert_non_null(strstr(cause, "version 2"));
  free(cause);
}

static void test_truncated_header(void **state) {
  write_raw("short.pb", "NXTR\x01", 5);
  char *cause = open_fails("short.pb", FMT_PB_MAGIC_NTRACE, -EPIPE);
  assert_non_null(strstr(cause, "offset 5"));
  free(cause);
}

static void test_header_only(void **state) {
  FILE *f = create_pb("header-only.pb", FMT_PB_MAGIC_HOST_MEM);
  assert_int_equal(fclose(f), 0);
  struct fmt_pb *r = open_ok("header-only.pb", FMT_PB_MAGIC_HOST_MEM);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__host_mem_usage__descriptor, &m, &off),
                   0);
  assert_int_equal(off, 8);
  fmt_pb_close(r);
}

static void test_writer_rejects_bad_magic(void **state) {
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(fmt_pb_write_header(f, "NXT"), -EINVAL);
  assert_int_equal(fclose(f), 0);
}

/* -------------------------------------------------------- bad records */

/* Writes three CpuUsage records to tmp/name (header included) and returns
 * the offsets of their length prefixes in off[0..2] and the file size in
 * off[3]. */
static void write_three(const char *name, uint64_t off[4]) {
  FILE *f = create_pb(name, FMT_PB_MAGIC_CPU_UTIL);
  for (int i = 0; i < 3; i++) {
    off[i] = (uint64_t)ftell(f);
    Nex__CpuUsage c = NEX__CPU_USAGE__INIT;
    c.timestamp = 1000 + i;
    c.cpu_id = "average";
    c.util_percent = 50;
    assert_int_equal(fmt_pb_write_msg(f, &c.base), 0);
  }
  off[3] = (uint64_t)ftell(f);
  assert_int_equal(fclose(f), 0);
}

static void test_truncated_record(void **state) {
  uint64_t at[4];
  write_three("trunc.pb", at);
  char *p = testutil_path("trunc.pb");
  assert_int_equal(truncate(p, (off_t)(at[2] + 5)), 0);
  free(p);
  struct fmt_pb *r = open_ok("trunc.pb", FMT_PB_MAGIC_CPU_UTIL);
  ProtobufCMessage *m;
  uint64_t off;
  const ProtobufCMessageDescriptor *d = &nex__cpu_usage__descriptor;
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(off, at[0]);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(off, at[1]);
  assert_int_equal(((Nex__CpuUsage *)m)->timestamp, 1001);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, at[2]);
  assert_null(m);
  off = 0;
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, at[2]);
  fmt_pb_close(r);
}

static void test_truncated_length_prefix(void **state) {
  /* A varint that the file ends inside of. */
  write_raw("trunc-varint.pb", "NXCU\x01\x00\x00\x00\x02\x08\x01\x90", 12);
  struct fmt_pb *r = open_ok("trunc-varint.pb", FMT_PB_MAGIC_CPU_UTIL);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__cpu_usage__descriptor, &m, &off), 1);
  assert_int_equal(((Nex__CpuUsage *)m)->timestamp, 1);
  assert_int_equal(fmt_pb_next(r, &nex__cpu_usage__descriptor, &m, &off),
                   -EPIPE);
  assert_int_equal(off, 11);
  fmt_pb_close(r);
}

static void test_corrupt_record_skipped(void **state) {
  uint64_t at[4];
  write_three("corrupt.pb", at);
  /* Record 1 is prefix, 08 e9 07 (timestamp), 12 07 "average" (cpu_id),
   * 19 + 8 bytes (util_percent): its cpu_id length becomes 127, past the
   * end of the record, while the framing stays intact. */
  char *p = testutil_path("corrupt.pb");
  FILE *f = fopen(p, "r+b");
  free(p);
  assert_non_null(f);
  assert_int_equal(fseek(f, (long)at[1] + 5, SEEK_SET), 0);
  assert_int_equal(fputc(0x7f, f), 0x7f);
  assert_int_equal(fclose(f), 0);

  struct fmt_pb *r = open_ok("corrupt.pb", FMT_PB_MAGIC_CPU_UTIL);
  ProtobufCMessage *m;
  uint64_t off;
  const ProtobufCMessageDescriptor *d = &nex__cpu_usage__descriptor;
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(((Nex__CpuUsage *)m)->timestamp, 1000);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EBADMSG);
  assert_int_equal(off, at[1]);
  assert_null(m);
  assert_int_equal(fmt_pb_pos(r), at[2]);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(off, at[2]);
  assert_int_equal(((Nex__CpuUsage *)m)->timestamp, 1002);
  assert_string_equal(((Nex__CpuUsage *)m)->cpu_id, "average");
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 0);
  fmt_pb_close(r);
}

/* A zero-filled region where a length belongs (a preallocated or sparse
 * tail) is one -EBADMSG when records follow it, one -EPIPE when it runs to
 * the end: never one error per zero byte. */
static void test_zero_runs(void **state) {
  static const char b[] = "NXHM\x01\x00\x00\x00"
                          "\x02\x08\x05"
                          "\x00\x00\x00\x00\x00\x00\x00"
                          "\x02\x08\x06"
                          "\x00\x00\x00";
  write_raw("zeros.pb", b, sizeof b - 1);
  struct fmt_pb *r = open_ok("zeros.pb", FMT_PB_MAGIC_HOST_MEM);
  const ProtobufCMessageDescriptor *d = &nex__host_mem_usage__descriptor;
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(((Nex__HostMemUsage *)m)->timestamp, 5);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EBADMSG);
  assert_int_equal(off, 11);
  assert_int_equal(fmt_pb_pos(r), 18);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(((Nex__HostMemUsage *)m)->timestamp, 6);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, 21);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  fmt_pb_close(r);

  /* The same file grown to 32 MiB with zeros: still one error per run. */
  char *p = testutil_path("zeros.pb");
  FILE *f = fopen(p, "r+b");
  free(p);
  assert_non_null(f);
  assert_int_equal(ftruncate(fileno(f), 8 + (32 << 20)), 0);
  assert_int_equal(fclose(f), 0);
  r = open_ok("zeros.pb", FMT_PB_MAGIC_HOST_MEM);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EBADMSG);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, 21);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  fmt_pb_close(r);
}

static void test_huge_length_prefix(void **state) {
  /* One good record, then a prefix of 2^32 (> FMT_PB_MAX_RECORD), then
   * bytes that must never be read as a record. */
  static const char b[] = "NXHM\x01\x00\x00\x00"
                          "\x02\x08\x05"
                          "\x80\x80\x80\x80\x10"
                          "\x08\x06";
  write_raw("huge.pb", b, sizeof b - 1);
  struct fmt_pb *r = open_ok("huge.pb", FMT_PB_MAGIC_HOST_MEM);
  ProtobufCMessage *m;
  uint64_t off;
  const ProtobufCMessageDescriptor *d = &nex__host_mem_usage__descriptor;
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1);
  assert_int_equal(((Nex__HostMemUsage *)m)->timestamp, 5);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, 11);
  fmt_pb_close(r);
}

static void test_max_record_plus_one(void **state) {
  /* FMT_PB_MAX_RECORD + 1 = 0x1000001, present in full: still refused. */
  size_t len = FMT_PB_MAX_RECORD + 1;
  uint8_t *b = xcalloc(1, 8 + 4 + len);
  memcpy(b, "NXHM\x01\x00\x00\x00\x81\x80\x80\x08", 12);
  write_raw("max1.pb", b, 12 + len);
  free(b);
  struct fmt_pb *r = open_ok("max1.pb", FMT_PB_MAGIC_HOST_MEM);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__host_mem_usage__descriptor, &m, &off),
                   -EPIPE);
  assert_int_equal(off, 8);
  fmt_pb_close(r);
}

static void test_overlong_varint(void **state) {
  /* 11 continuation bytes; then a 10-byte varint overflowing 64 bits. */
  static const char b1[] = "NXHM\x01\x00\x00\x00"
                           "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00";
  static const char b2[] = "NXHM\x01\x00\x00\x00"
                           "\x00"
                           "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02";
  const ProtobufCMessageDescriptor *d = &nex__host_mem_usage__descriptor;
  ProtobufCMessage *m;
  uint64_t off;
  write_raw("varint1.pb", b1, sizeof b1 - 1);
  struct fmt_pb *r = open_ok("varint1.pb", FMT_PB_MAGIC_HOST_MEM);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, 8);
  fmt_pb_close(r);
  write_raw("varint2.pb", b2, sizeof b2 - 1);
  r = open_ok("varint2.pb", FMT_PB_MAGIC_HOST_MEM);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), 1); /* empty record */
  assert_int_equal(((Nex__HostMemUsage *)m)->timestamp, 0);
  assert_int_equal(fmt_pb_next(r, d, &m, &off), -EPIPE);
  assert_int_equal(off, 9);
  fmt_pb_close(r);
}

static void test_large_record_grows_arena(void **state) {
  /* A TraceInfo with 200000 file names and 50000 attributes needs several
   * MiB of arena: unpack runs out of it part-way (strings, then
   * submessages) and is retried in a larger one. */
  enum { N = 200000, A = 50000 };
  char **files = xmalloc(N * sizeof *files);
  for (int i = 0; i < N; i++)
    files[i] = xasprintf("profile_nc_%d_session_0.ntff", i);
  Nex__Attribute *attr = xmalloc(A * sizeof *attr);
  Nex__Attribute **attrs = xmalloc(A * sizeof *attrs);
  for (int i = 0; i < A; i++) {
    nex__attribute__init(&attr[i]);
    attr[i].key = files[i];
    attr[i].value = "1";
    attrs[i] = &attr[i];
  }
  Nex__TraceInfo ti = NEX__TRACE_INFO__INIT;
  ti.n_files = N;
  ti.files = files;
  ti.n_attributes = A;
  ti.attributes = attrs;
  FILE *f = create_pb("big.pb", FMT_PB_MAGIC_TRACE_INFO);
  assert_int_equal(fmt_pb_write_msg(f, &ti.base), 0);
  ti.n_files = 1;
  ti.n_attributes = 0;
  assert_int_equal(fmt_pb_write_msg(f, &ti.base), 0);
  assert_int_equal(fclose(f), 0);
  struct fmt_pb *r = open_ok("big.pb", FMT_PB_MAGIC_TRACE_INFO);
  ProtobufCMessage *m;
  uint64_t off;
  assert_int_equal(fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off), 1);
  Nex__TraceInfo *g = (Nex__TraceInfo *)m;
  assert_int_equal(g->n_files, N);
  assert_string_equal(g->files[N - 1], files[N - 1]);
  assert_int_equal(g->n_attributes, A);
  assert_string_equal(g->attributes[A - 1]->key, files[A - 1]);
  assert_string_equal(g->attributes[A - 1]->value, "1");
  assert_int_equal(fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off), 1);
  assert_int_equal(((Nex__TraceInfo *)m)->n_files, 1);
  assert_int_equal(fmt_pb_next(r, &nex__trace_info__descriptor, &m, &off), 0);
  fmt_pb_close(r);
  for (int i = 0; i < N; i++)
    free(files[i]);
  free(files);
  free(attr);
  free(attrs);
}

enum { MILLION = 1000000 };

/* Peak resident set of this process image in KiB (VmHWM), or -1.  Unlike
 * getrusage()'s ru_maxrss it does not include what the image had before
 * exec (Linux carries that over), so a re-executed child measures itself. */
static long peak_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib;
}

/* The reading half of test_million_records_constant_memory, run in a fresh
 * process (this program re-executed with --read-million PATH) so that its
 * peak RSS is its own.  Returns the exit status: 0 if all records read back
 * and the peak RSS stayed under 64 MiB. */
static int read_million(const char *path) {
  struct fmt_pb *r;
  char *cause = NULL;
  if (fmt_pb_open(path, FMT_PB_MAGIC_NTRACE, &r, &cause) < 0)
    return 2;
  ProtobufCMessage *m;
  uint64_t off;
  int64_t n = 0;
  int rc;
  while ((rc = fmt_pb_next(r, &nex__ntrace_record__descriptor, &m, &off)) ==
         1) {
    Nex__NtraceRecord *g = (Nex__NtraceRecord *)m;
    if (g->event->nrt_sequence_id != n || g->event->nc_idx != n % 32)
      return 3;
    n++;
  }
  fmt_pb_close(r);
  if (rc != 0 || n != MILLION)
    return 4;
  long kib = peak_rss_kib();
  printf("# million records: peak RSS of the reader %ld KiB\n", kib);
  return kib > 0 && kib < 64 * 1024 ? 0 : 5;
}

/* A million NtraceRecord events (about 90 MB) are read by a fresh process
 * whose peak RSS must stay under 64 MiB: the reader keeps neither records
 * nor the pages it has read. */
static void test_million_records_constant_memory(void **state) {
  FILE *f = create_pb("million.pb", FMT_PB_MAGIC_NTRACE);
  Nex__SystemEvent ev = NEX__SYSTEM_EVENT__INIT;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &ev;
  ev.name = "nrt_execute";
  ev.model_name = "a-model-name-long-enough-to-matter";
  ev.source = NEX__TRACE_EVENT_SOURCE__NEURON_RT;
  for (int i = 0; i < MILLION; i++) {
    ev.id = (uint64_t)i;
    ev.timestamp = 1732233600000000000ll + (int64_t)i * 1000;
    ev.duration = 900;
    ev.thread_id = 98399;
    ev.nc_idx = i % 32;
    ev.exec_id = i / 10;
    ev.nrt_sequence_id = i;
    assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  }
  long size = ftell(f);
  assert_int_equal(fclose(f), 0);
  assert_true(size > 80l << 20);

  char *p = testutil_path("million.pb");
  fflush(stdout);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/proc/self/exe", "test_fmt_pb", "--read-million", p, (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  unlink(p);
  free(p);
}

/* fmt_pb_field finds a sub-message and a string without decoding, and
 * fmt_pb_next_raw + fmt_pb_decode give the same record as fmt_pb_next. */
static void test_field_peek(void **state) {
  (void)state;
  Nex__SystemEvent ev = NEX__SYSTEM_EVENT__INIT;
  ev.id = 7;
  ev.name = "timestamp_sync_point";
  ev.timestamp = 123456789;
  ev.exec_id = 3;
  Nex__NtraceRecord rec = NEX__NTRACE_RECORD__INIT;
  rec.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  rec.event = &ev;
  uint8_t buf[256];
  size_t n = nex__ntrace_record__pack(&rec, buf);
  const uint8_t *sub, *name;
  size_t sublen, namelen;
  assert_int_equal(fmt_pb_field(buf, n, 1, &sub, &sublen), 1);
  assert_int_equal(fmt_pb_field(sub, sublen, 2, &name, &namelen), 1);
  assert_int_equal(namelen, strlen(ev.name));
  assert_memory_equal(name, ev.name, namelen);
  assert_int_equal(fmt_pb_field(buf, n, 2, &sub, &sublen), 0); /* absent */
  assert_int_equal(fmt_pb_field(buf, n - 3, 1, &sub, &sublen), 0); /* cut */
  const uint8_t bad[] = {0x0f, 0x01}; /* wire type 7 */
  assert_int_equal(fmt_pb_field(bad, sizeof bad, 1, &sub, &sublen), 0);

  char *path = testutil_path("peek.pb");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fmt_pb_write_header(f, FMT_PB_MAGIC_NTRACE), 0);
  assert_int_equal(fmt_pb_write_msg(f, &rec.base), 0);
  fclose(f);
  struct fmt_pb *r;
  char *cause = NULL;
  assert_int_equal(fmt_pb_open(path, FMT_PB_MAGIC_NTRACE, &r, &cause), 0);
  const uint8_t *data;
  size_t len;
  uint64_t off;
  assert_int_equal(fmt_pb_next_raw(r, &data, &len, &off), 1);
  assert_int_equal(off, 8);
  assert_int_equal(len, n);
  Nex__NtraceRecord *got = (Nex__NtraceRecord *)fmt_pb_decode(
      r, &nex__ntrace_record__descriptor, data, len);
  assert_non_null(got);
  assert_int_equal(got->event->exec_id, 3);
  assert_int_equal(got->event->timestamp, 123456789);
  assert_int_equal(fmt_pb_next_raw(r, &data, &len, &off), 0);
  fmt_pb_close(r);
  free(path);
}

/* ------------------------------------------------ regression inputs */

/* Replays every tests/data/regress/pb-* input through the fuzz target,
 * which aborts on any broken invariant. */
static void test_regress_inputs(void **state) {
  int n = testutil_replay("tests/data/regress", "pb-");
  printf("# %d regression inputs replayed\n", n);
  assert_true(n > 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--read-million") == 0)
    return read_million(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ntrace_round_trip),
      cmocka_unit_test(test_field_peek),
      cmocka_unit_test(test_trace_info_round_trip),
      cmocka_unit_test(test_cpu_util_round_trip),
      cmocka_unit_test(test_host_mem_round_trip),
      cmocka_unit_test(test_ntff_round_trip),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_empty_file),
      cmocka_unit_test(test_wrong_magic),
      cmocka_unit_test(test_unknown_version),
      cmocka_unit_test(test_truncated_header),
      cmocka_unit_test(test_header_only),
      cmocka_unit_test(test_writer_rejects_bad_magic),
      cmocka_unit_test(test_truncated_record),
      cmocka_unit_test(test_truncated_length_prefix),
      cmocka_unit_test(test_corrupt_record_skipped),
      cmocka_unit_test(test_zero_runs),
      cmocka_unit_test(test_huge_length_prefix),
      cmocka_unit_test(test_max_record_plus_one),
      cmocka_unit_test(test_overlong_varint),
      cmocka_unit_test(test_large_record_grows_arena),
      cmocka_unit_test(test_million_records_constant_memory),
      cmocka_unit_test(test_regress_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_setup, testutil_teardown);
}
