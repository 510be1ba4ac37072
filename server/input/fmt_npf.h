/* fmt_npf.h -- the naming of the Neuron tools' Perfetto export
 * (`view --output-format perfetto`): system_profile.pftrace and
 * device_profile_model_<id>.pftrace.  What the generator writes and the
 * ingest reads back: process names "<instance>-pid<pid>", system rows
 * "gid<worker>-nc<lnc>-tid<tid>-<source>", device rows "<Engine> Engine -
 * Row <k>", counter tracks named as the timeline names them, and the debug
 * argument names of the fields of our proto/ messages (the vendor's where
 * they differ: timestamp, duration, label, layer, trace_event_source,
 * lnc_idx).
 *
 * Ownership: returned strings are static; parsed names point into the
 * caller's string; filled messages point into the arguments and the
 * scratch (struct fmt_npf_scratch).
 */
#ifndef NEX_FMT_NPF_H
#define NEX_FMT_NPF_H

#include "arena.h"
#include "jtok.h"
#include "util.h"

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FMT_NPF_SYSTEM_FILE "system_profile.pftrace"
#define FMT_NPF_DEVICE_PREFIX "device_profile_model_"
/* Rows of a device export that are not engines or DMA queues. */
#define FMT_NPF_ROW_EXECUTIONS "Executions"
#define FMT_NPF_ROW_THREAD "Thread " /* framework rows: "Thread <tid>" */
#define FMT_NPF_ROW_CC "CC-core"
#define FMT_NPF_ROW_SUFFIX " - Row "
#define FMT_NPF_ENGINE_SUFFIX " Engine"
/* Counter tracks of a device export: "Semaphore <id>", "<series> Usage". */
#define FMT_NPF_SEMAPHORE "Semaphore "
#define FMT_NPF_USAGE " Usage"

/* The debug argument name of field f of message d: the vendor's name where
 * it has one, else the field's own name. */
const char *fmt_npf_arg_name(const ProtobufCMessageDescriptor *d,
                             const ProtobufCFieldDescriptor *f);
/* The field of d that debug argument `arg` fills (by the vendor's name or
 * the field's own), or NULL. */
const ProtobufCFieldDescriptor *
fmt_npf_field(const ProtobufCMessageDescriptor *d, const char *arg);

/* A system row name "gid<w>-nc<n>-tid<t>-<source>" (each numbered part may
 * be absent: -1), or "Thread <tid>" (source "framework"). */
struct fmt_npf_row {
  int64_t worker, nc, tid;
  const char *source; /* points into the parsed name */
};
/* Parses a system row name; returns false when it is not one. */
bool fmt_npf_row_parse(const char *name, struct fmt_npf_row *r);
/* Parses a process name "<instance>-pid<pid>": *inst_len is the length of
 * the instance.  Returns false when it is not one. */
bool fmt_npf_process_parse(const char *name, size_t *inst_len, int64_t *pid);
/* Parses a device row "<base> - Row <k>" (engines: "<Engine> Engine - Row
 * <k>"): *base_len is the length of <base>.  Returns false when it is not
 * one. */
bool fmt_npf_row_base(const char *name, size_t *base_len);

/* Filling our messages from debug arguments: the JSON object text the
 * Perfetto decoder gives, or its packed args (fmt_perfetto.h), read in
 * place.  Both give the same messages. */
struct fmt_npf_args {
  const unsigned char *p, *end; /* the object's text, p == end: none */
  bool packed;                  /* p[0, end) holds packed args */
};
/* What filled messages hold besides pointers into the arguments: arrays
 * and texts.  Start from {0}; reset it between messages to reuse its
 * memory, free it at the end. */
struct fmt_npf_keys;
struct fmt_npf_scratch {
  struct arena a;
  struct sbuf b, tmp;        /* a text being decoded, and jval_json's scratch */
  struct fmt_npf_keys *keys; /* what argument names meant (kept by reset) */
};
/* Forgets what sc holds (what it handed out is gone), keeping its memory. */
void fmt_npf_scratch_reset(struct fmt_npf_scratch *sc);
void fmt_npf_scratch_free(struct fmt_npf_scratch *sc);
/* Sets a over json (NULL: no arguments).  Returns false when json is not
 * braces around anything (a then has none); what is inside is checked as
 * it is read. */
bool fmt_npf_args_open(struct fmt_npf_args *a, const char *json);
/* Sets a over the packed args p[0, n). */
void fmt_npf_args_packed(struct fmt_npf_args *a, const uint8_t *p, size_t n);
/* Whether argument `key` is there. */
bool fmt_npf_args_has(const struct fmt_npf_args *a, const char *key);
/* The text of value v when it is a string (kept in sc), else NULL (also
 * for an absent value: kind JTOK_NONE). */
const char *fmt_npf_value_str(const struct jtok_span *v,
                              struct fmt_npf_scratch *sc);
/* Value v as a number (a JSON number or text holding one) in int64, uint64
 * and double; false when absent, not a number, or a real beyond int64. */
bool fmt_npf_value_num(const struct jtok_span *v, int64_t *i, uint64_t *u,
                       double *d);
/* Fills message m (initialised by the caller, no attributes yet) from
 * args: each argument fills the field fmt_npf_field names (numbers may be
 * text, enums their lower-case names, repeated integers a JSON array); the
 * others, but the keys of the NULL-terminated list skip (may be NULL),
 * become attributes when m has an `attributes` field (strings as such,
 * other values as their JSON text).  skipped (NULL when skip is) gets the
 * value of each skipped key, the last one of duplicates, kind JTOK_NONE
 * when absent.  What a name means is remembered in sc by the address of d
 * and of skip: pass one unchanging skip list per address.  Returns how many
 * arguments named a field their value does not fit (left out), plus 1 when the
 * text stops being valid JSON.  m points into sc until it is reset. */
uint64_t fmt_npf_fill(ProtobufCMessage *m, const struct fmt_npf_args *args,
                      const char *const *skip, struct jtok_span *skipped,
                      struct fmt_npf_scratch *sc);
/* The value of enum e named s (case-insensitive), or -1. */
int fmt_npf_enum(const ProtobufCEnumDescriptor *e, const char *s);

#endif
