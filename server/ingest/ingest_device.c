/* ingest_device.c -- NTFF device traces (and their NEFF headers) into the
 * store: DeviceProfileList, Metadata, ExecutionInfo, NeffHeader, the
 * device tracks (engine rows, DMA queues, semaphores, usage counters) and
 * the instruction dependencies (inst_dep).  See ingest_readers.h. */
#include "argtext.h"
#include "fmt_neff.h"
#include "ingest_deps.h"
#include "ingest_rates.h"
#include "ingest_readers.h"

#include "ntff.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Totals of the device profile being read; exec_id/exec_index: its first
 * execution that names an exec_id (exec_id 0: none yet). */
struct ingest_device_totals {
  int pcore, nc;
  int64_t instructions, dmas, first, last;
  int64_t inst_deps;                  /* entries of the inst_dep_ids read */
  double flops, transpose_flops, hbm; /* transpose: of TRANSPOSE opcodes */
  int64_t exec_id, exec_index;
  size_t first_track; /* tracks created since then may be its own */
};

/* The reader's state for the run: the device profile being read, and
 * the resolution of instruction dependencies (made when one has some). */
struct ingest_device_state {
  int64_t dp_id;
  struct ingest_device_totals dev;
  struct ingest_deps *deps;
  struct sbuf name; /* a DMA slice's name being made */
};

static const char ingest_device_key; /* its ingest_state key */

static void ingest_device_state_free(void *state) {
  struct ingest_device_state *dv = state;
  ingest_deps_free(dv->deps);
  sbuf_free(&dv->name);
  free(dv);
}

/* The reader's state, created on first use. */
static struct ingest_device_state *ingest_device_state(struct ing *g) {
  return ingest_state_make(g, &ingest_device_key,
                           sizeof(struct ingest_device_state),
                           ingest_device_state_free);
}

/* The description of a track of the device profile being read. */
static struct store_track ingest_device_desc(struct ing *g, const char *kind,
                                             const char *source,
                                             const char *label, int pcore) {
  struct store_track d =
      ingest_desc(kind, "device", source, ingest_context_instance(g));
  d.pid = ingest_context_pid(g);
  d.has_pid = 1;
  d.pcore_idx = pcore;
  d.device_profile_id = ingest_device_state(g)->dp_id;
  d.label = label;
  return d;
}

/* A slice with the args text args[0, args_len) (none when args_len is
 * 0). */
static void ingest_device_slice(struct ing *g, const char *source,
                                const char *label, int pcore, int64_t ts,
                                int64_t dur, int64_t id, const char *name,
                                const char *grp, const char *args,
                                size_t args_len) {
  struct store_track d = ingest_device_desc(g, "slices", source, label, pcore);
  struct lanes_item it = {.ts = ts,
                          .dur = dur,
                          .id = id,
                          .name = ingest_intern(g, name),
                          .grp = grp && *grp ? ingest_intern(g, grp) : 0,
                          .args = args_len ? args : NULL,
                          .args_len = args_len};
  ingest_slice(g, ingest_track(g, &d), &it);
}

static void ingest_device_counter(struct ing *g, const char *source,
                                  const char *label, int pcore, int64_t ts,
                                  double v) {
  struct store_track d = ingest_device_desc(g, "counter", source, label, pcore);
  ingest_counter(g, ingest_track(g, &d), 0, ts, v);
}

static void ingest_device_span(struct ingest_device_totals *t, int64_t ts,
                               int64_t end) {
  if (t->instructions + t->dmas == 0 || ts < t->first)
    t->first = ts;
  if (end > t->last)
    t->last = end;
}

/* Writes the members of rec's args (an instruction's, a DMA packet's or a
 * collective operation's; none for the other records) into the object
 * begun in b.  Reads rec alone: the decoder thread runs it too. */
static void ingest_device_args(struct sbuf *b, const Nex__NtffRecord *rec) {
  switch (rec->record_case) {
  case NEX__NTFF_RECORD__RECORD_INSTRUCTION: {
    const Nex__Instruction *in = rec->instruction;
    argtext_str(b, "engine", in->engine);
    argtext_str(b, "operands", in->operands);
    argtext_i64(b, "pc", (int64_t)in->pc);
    argtext_str(b, "hlo_name", in->hlo_name);
    argtext_str(b, "framework_op", in->framework_op);
    if (in->raw_flops)
      argtext_i64(b, "raw_flops", (int64_t)in->raw_flops);
    if (in->hbm_read_bytes)
      argtext_i64(b, "hbm_read_bytes", (int64_t)in->hbm_read_bytes);
    if (in->hbm_write_bytes)
      argtext_i64(b, "hbm_write_bytes", (int64_t)in->hbm_write_bytes);
    argtext_i64(b, "execution_index", in->execution_index);
    argtext_list(b, "inst_dep_ids", in->inst_dep_ids, in->n_inst_dep_ids,
                 false);
    argtext_attrs(b, in->attributes, in->n_attributes);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_DMA: {
    const Nex__DmaPacket *p = rec->dma;
    argtext_str(b, "queue_type", p->queue_type);
    argtext_i64(b, "queue_idx", p->queue_idx);
    argtext_i64(b, "engine_idx", p->engine_idx);
    argtext_i64(b, "read_bytes", (int64_t)p->read_bytes);
    argtext_i64(b, "write_bytes", (int64_t)p->write_bytes);
    argtext_i64(b, "transfer_bytes", (int64_t)p->transfer_bytes);
    argtext_str(b, "variable", p->variable);
    argtext_attrs(b, p->attributes, p->n_attributes);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_CC_OP: {
    const Nex__CcOp *c = rec->cc_op;
    argtext_str(b, "algorithm", c->algorithm);
    argtext_i64(b, "num_elements", (int64_t)c->num_elements);
    argtext_str(b, "dtype", c->dtype);
    argtext_i64(b, "input_size", (int64_t)c->input_size);
    argtext_i64(b, "output_size", (int64_t)c->output_size);
    break;
  }
  default:
    break;
  }
}

/* Stores rec, a slice's with the args text args[0, args_len) (none when
 * args_len is 0). */
static void ingest_device_put(struct ing *g, const Nex__NtffRecord *rec,
                              const char *args, size_t args_len) {
  struct ingest_device_state *dv = ingest_device_state(g);
  int pcore = dv->dev.pcore;
  struct ingest_device_totals *tot = &dv->dev;
  switch (rec->record_case) {
  case NEX__NTFF_RECORD__RECORD_INSTRUCTION: {
    const Nex__Instruction *in = rec->instruction;
    ingest_device_span(tot, in->start_ts, in->start_ts + in->duration_ns);
    tot->instructions++;
    tot->inst_deps += (int64_t)in->n_inst_dep_ids;
    tot->flops += (double)in->raw_flops;
    if (strcmp(in->opcode, "TRANSPOSE") == 0)
      tot->transpose_flops += (double)in->raw_flops;
    tot->hbm += (double)in->hbm_read_bytes + (double)in->hbm_write_bytes;
    ingest_device_slice(
        g, "engine", *in->timeline_track ? in->timeline_track : "Unknown",
        pcore, in->start_ts, in->duration_ns,
        in->id ? (int64_t)in->id : ingest_id(g, 0), /* the signed vendor id */
        *in->opcode ? in->opcode : "(no opcode)", in->framework_op, args,
        args_len);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_DMA: {
    const Nex__DmaPacket *p = rec->dma;
    ingest_device_span(tot, p->start_ts, p->start_ts + p->duration_ns);
    tot->dmas++;
    const char *q = *p->queue_name ? p->queue_name : "unknown";
    struct sbuf *name = &ingest_device_state(g)->name;
    sbuf_reset(name);
    sbuf_adds(name, "dma ");
    sbuf_adds(name, *p->variable ? p->variable : q);
    ingest_device_slice(g, "dma", q, pcore, p->start_ts, p->duration_ns,
                        ingest_id(g, p->id), name->s, NULL, args, args_len);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_SEMAPHORE: {
    const Nex__SemaphoreUpdate *s = rec->semaphore;
    ingest_device_counter(g, "semaphore", *s->id ? s->id : "unknown", pcore,
                          s->timestamp, s->value);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_EXECUTION: {
    const Nex__ExecutionInfo *e = rec->execution;
    store_writer_exec(
        ingest_writer(g),
        "INSERT OR REPLACE INTO ExecutionInfo (device_profile_id, "
        "execution_index, neff_name, execution_start_ts, "
        "execution_end_ts, num_subgraphs, row_count, exec_id) "
        "VALUES (?,?,?,?,?,?,?,?)",
        "iitiiiiI", dv->dp_id, (int64_t)e->execution_index, e->neff_name,
        e->execution_start_ts, e->execution_end_ts, (int64_t)e->num_subgraphs,
        (int64_t)e->row_count, e->exec_id > 0 ? e->exec_id : -1);
    if (e->exec_id > 0 && (dv->dev.exec_id == 0 ||
                           (int64_t)e->execution_index < dv->dev.exec_index)) {
      dv->dev.exec_id = e->exec_id;
      dv->dev.exec_index = (int64_t)e->execution_index;
    }
    break;
  }
  case NEX__NTFF_RECORD__RECORD_CC_OP: {
    const Nex__CcOp *c = rec->cc_op;
    ingest_device_slice(g, "cc", "CC", pcore, c->start_ts, c->duration_ns,
                        ingest_id(g, c->op_id),
                        *c->operation ? c->operation : "cc_op", NULL, args,
                        args_len);
    break;
  }
  case NEX__NTFF_RECORD__RECORD_USAGE: {
    const Nex__UsageSample *u = rec->usage;
    ingest_device_counter(g, *u->series ? u->series : "usage",
                          *u->series ? u->series : "usage", pcore, u->timestamp,
                          u->util_percent);
    break;
  }
  default:
    break;
  }
}

void ingest_device_record(struct ing *g, const Nex__NtffRecord *rec) {
  struct sbuf *b = ingest_args_text(g);
  argtext_begin(b);
  ingest_device_args(b, rec);
  size_t n = argtext_end(b);
  ingest_device_put(g, rec, b->s, n);
}

/* The args text of an NTFF record, made on the decoder thread (a
 * fmt_pb_pipe_prep_fn). */
static void ingest_device_prep(void *ud, const ProtobufCMessage *m,
                               struct sbuf *out) {
  (void)ud;
  argtext_begin(out);
  ingest_device_args(out, (const Nex__NtffRecord *)m);
  argtext_end(out);
}

static void ingest_device_neff(struct ing *g, const char *rel,
                               char **model_name) {
  char *path = ingest_path(g, rel);
  struct fmt_neff_header h;
  char *cause = NULL;
  int rc = fmt_neff_read(path, &h, &cause);
  free(path);
  if (rc < 0) {
    ingest_skipped(g, 1);
    ingest_warn(g, "Corrupt Data", rel, 0, "%s", cause ? cause : "bad NEFF");
    free(cause);
    return;
  }
  store_writer_exec(ingest_writer(g),
                    "INSERT OR IGNORE INTO NeffHeader (file, network_name, "
                    "uuid, hash, header_size, data_size, package_version, "
                    "major_version, minor_version, build_version, "
                    "neuroncore_count, requested_tpb_count) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    "ttttiiiiitii", rel, h.name, h.uuid_hex, h.hash_hex,
                    (int64_t)h.header_size, (int64_t)h.data_size,
                    (int64_t)h.package_version, (int64_t)h.major_version,
                    (int64_t)h.minor_version, h.build_version,
                    (int64_t)h.num_tpb, (int64_t)h.requested_tpb_count);
  if (*h.name && !*model_name)
    *model_name = xstrdup(h.name);
}

void ingest_device_begin(struct ing *g, const struct ingest_device_info *d) {
  struct ingest_device_state *dv = ingest_device_state(g);
  const Nex__NtffHeader *h = d->header;
  dv->dp_id = store_writer_exec(
      ingest_writer(g),
      "INSERT INTO DeviceProfileList (device_profile_name, instance_id, "
      "process_id, nc_id, pcore_idx, session_id, model_id, model_name, "
      "ntff_file, neff_file, peak_flops, hbm_ddr_bandwidth) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
      "ttiiIIttttrr", d->name, ingest_context_instance(g),
      ingest_context_pid(g), (int64_t)d->nc, (int64_t)d->pcore, d->session,
      d->model_id, d->model_name, d->ntff_file, d->neff_file,
      h ? h->peak_flops : 0.0, h ? h->hbm_ddr_bandwidth : 0.0);
  if (h)
    store_writer_exec(
        ingest_writer(g),
        "INSERT INTO Metadata (device_profile_id, profile_schema_version, "
        "ntff_version, num_physical_cores, first_hw_timestamp, "
        "last_hw_timestamp, ticks_per_nanosec, instance_type, neuroncore_idx, "
        "tensor_engine_num_rows, tensor_engine_num_cols, "
        "neuroncore_clock_freq, hbm_ddr_bandwidth) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        "itiiiirtiiirr", dv->dp_id, "7.4.0", (int64_t)h->ntff_version,
        (int64_t)h->num_physical_cores, h->first_hw_timestamp,
        h->last_hw_timestamp, h->ticks_per_nanosec,
        *h->instance_type ? h->instance_type : NULL, (int64_t)d->nc,
        (int64_t)h->tensor_engine_num_rows, (int64_t)h->tensor_engine_num_cols,
        h->neuroncore_clock_freq, h->hbm_ddr_bandwidth);
  memset(&dv->dev, 0, sizeof dv->dev);
  dv->dev.first_track = ingest_track_n(g);
  dv->dev.pcore = d->pcore;
  dv->dev.nc = d->nc;
}

/* The next slice track of the profile being read whose source is
 * `source`, from track index *i on (*i moves past it); NULL when none is
 * left. */
static struct itrack *ingest_device_next(struct ing *g,
                                         const struct ingest_device_state *dv,
                                         size_t *i, const char *source) {
  while (*i < ingest_track_n(g)) {
    struct itrack *x = ingest_track_at(g, (*i)++);
    const struct store_track *s = ingest_track_desc(x);
    if (s->device_profile_id == dv->dp_id && strcmp(s->kind, "slices") == 0 &&
        s->source && strcmp(s->source, source) == 0)
      return x;
  }
  return NULL;
}

void ingest_device_end(struct ing *g) {
  struct ingest_device_state *dv = ingest_device_state(g);
  struct ingest_device_totals *t = &dv->dev;
  bool any = t->instructions + t->dmas > 0;
  struct itrack *x;
  store_writer_exec(ingest_writer(g),
                    "UPDATE DeviceProfileList SET first_ts=?, last_ts=?, "
                    "instruction_count=?, dma_count=?, total_flops=?, "
                    "transpose_flops=?, hbm_bytes=? WHERE id=?",
                    "IIiirrri", any ? t->first : -1, any ? t->last : -1,
                    t->instructions, t->dmas, t->flops, t->transpose_flops,
                    t->hbm, dv->dp_id);
  if (t->inst_deps) {
    if (!dv->deps) {
      size_t budget = ingest_opts(g)->sort_budget;
      dv->deps = ingest_deps_new((budget ? budget : INGEST_SORT_BUDGET) / 2);
    }
    for (size_t i = t->first_track;
         (x = ingest_device_next(g, dv, &i, "engine"));)
      ingest_deps_watch(dv->deps, x);
  }
  if (t->dmas > 0) { /* the DMA throughput counter (ingest_rates.h) */
    struct ingest_rate *r = ingest_rates_begin(
        g, INGEST_RATE_DMA, dv->dp_id, t->first, t->last, "transfer_bytes");
    for (size_t i = t->first_track;
         r && (x = ingest_device_next(g, dv, &i, "dma"));)
      ingest_rates_watch(r, x);
  }
  ingest_drain_device(g, t->first_track, dv->dp_id);
  if (t->inst_deps)
    ingest_deps_write(g, dv->deps, dv->dp_id);
  if (t->exec_id)
    ingest_system_device_hint(g, dv->dp_id, t->nc, t->exec_id);
}

/* An NTFF record after the header (ingest_system_pb_records). */
static void ingest_device_pb_record(struct ing *g, const char *rel,
                                    const struct fmt_pb_pipe_rec *x) {
  ingest_device_put(g, (Nex__NtffRecord *)x->msg, x->text, x->text_len);
  (void)rel;
}

void ingest_device_read(struct ing *g, const struct discover_device *dev,
                        const char *profile_base) {
  if (dev->size == 0) {
    /* Normal: a NeuronCore the process owned but never ran on. */
    ingest_warn(g, "Missing Data", dev->ntff, 0,
                "empty device trace (the NeuronCore never ran)");
    return;
  }
  struct fmt_pb *r = ingest_system_pb_open(g, dev->ntff, FMT_PB_MAGIC_NTFF);
  if (!r)
    return;
  ProtobufCMessage *m;
  uint64_t off;
  int rc = fmt_pb_next(r, &nex__ntff_record__descriptor, &m, &off);
  Nex__NtffRecord *first = rc == 1 ? (Nex__NtffRecord *)m : NULL;
  const Nex__NtffHeader *h =
      first && first->record_case == NEX__NTFF_RECORD__RECORD_HEADER
          ? first->header
          : NULL;
  if (rc < 0)
    ingest_system_pb_error(g, dev->ntff, rc, off);
  if (!h)
    ingest_warn(
        g, "Missing Data", dev->ntff, 0,
        "NTFF has no header record; NeuronCore and model taken from the "
        "file name");
  int nc = h ? h->nc_idx : dev->nc;
  int pcore = h ? h->pcore_idx : -1;
  int64_t session = h ? h->session_id : dev->session;
  uint64_t hash = h && h->neff_hash ? h->neff_hash : dev->hash;
  bool session_mode = dev->mode == DISCOVER_SESSION ||
                      (h && session >= 0 && dev->mode != DISCOVER_MODEL);
  char *model_name = h && *h->model_name ? xstrdup(h->model_name) : NULL;
  if (dev->neff)
    ingest_device_neff(g, dev->neff, &model_name);
  char *name = session_mode
                   ? xasprintf("%s_%s_pid_%" PRId64 "_nc_%d_session_%" PRId64,
                               profile_base, ingest_context_instance(g),
                               ingest_context_pid(g), nc, session)
                   : xasprintf("%s_%s_pid_%" PRId64 "_nc_%d_model_%" PRIu64,
                               profile_base, ingest_context_instance(g),
                               ingest_context_pid(g), nc, hash);
  char model_id[24];
  snprintf(model_id, sizeof model_id, "%" PRIu64, hash);
  struct ingest_device_info info = {.name = name,
                                    .ntff_file = dev->ntff,
                                    .neff_file = dev->neff,
                                    .model_name = model_name,
                                    .model_id = session_mode ? NULL : model_id,
                                    .nc = nc,
                                    .pcore = pcore,
                                    .session = session_mode ? session : -1,
                                    .header = h};
  ingest_device_begin(g, &info);
  if (first && !h)
    ingest_device_record(g, first);
  if (rc != 0 && rc != -EPIPE)
    ingest_system_pb_records(g, dev->ntff, r, &nex__ntff_record__descriptor,
                             ingest_device_prep, ingest_device_pb_record);
  ingest_device_end(g);
  free(name);
  free(model_name);
  fmt_pb_close(r);
}
