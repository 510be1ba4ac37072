/* fmt_npf.c -- the naming of the Neuron tools' Perfetto export (see
 * fmt_npf.h). */
#include "fmt_npf.h"

#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Fields whose debug argument the vendor names otherwise. */
static const struct fmt_npf_alias {
  const ProtobufCMessageDescriptor *d;
  const char *field, *arg;
} fmt_npf_aliases[] = {
    {&nex__system_event__descriptor, "source", "trace_event_source"},
    {&nex__system_event__descriptor, "nc_idx", "lnc_idx"},
    {&nex__instruction__descriptor, "start_ts", "timestamp"},
    {&nex__instruction__descriptor, "duration_ns", "duration"},
    {&nex__instruction__descriptor, "timeline_track", "label"},
    {&nex__instruction__descriptor, "framework_op", "layer"},
    {&nex__dma_packet__descriptor, "start_ts", "timestamp"},
    {&nex__dma_packet__descriptor, "duration_ns", "duration"},
    {&nex__cc_op__descriptor, "start_ts", "timestamp"},
    {&nex__cc_op__descriptor, "duration_ns", "duration"},
};
#define FMT_NPF_NALIAS (sizeof fmt_npf_aliases / sizeof fmt_npf_aliases[0])

const char *fmt_npf_arg_name(const ProtobufCMessageDescriptor *d,
                             const ProtobufCFieldDescriptor *f) {
  for (size_t i = 0; i < FMT_NPF_NALIAS; i++)
    if (fmt_npf_aliases[i].d == d && strcmp(fmt_npf_aliases[i].field,
                                            f->name) == 0)
      return fmt_npf_aliases[i].arg;
  return f->name;
}

const ProtobufCFieldDescriptor *
fmt_npf_field(const ProtobufCMessageDescriptor *d, const char *arg) {
  for (size_t i = 0; i < FMT_NPF_NALIAS; i++)
    if (fmt_npf_aliases[i].d == d && strcmp(fmt_npf_aliases[i].arg, arg) == 0)
      return protobuf_c_message_descriptor_get_field_by_name(
          d, fmt_npf_aliases[i].field);
  return protobuf_c_message_descriptor_get_field_by_name(d, arg);
}

/* Reads "<prefix><digits>-" at *s: the number, and moves past it; -1 and
 * *s unchanged when absent. */
static int64_t fmt_npf_part(const char **s, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(*s, prefix, n) != 0)
    return -1;
  const char *p = *s + n;
  char *end;
  long long v = strtoll(p, &end, 10);
  if (end == p || *end != '-' || v < 0)
    return -1;
  *s = end + 1;
  return v;
}

bool fmt_npf_row_parse(const char *name, struct fmt_npf_row *r) {
  char *end;
  if (strncmp(name, "Thread ", 7) == 0) {
    long long v = strtoll(name + 7, &end, 10);
    if (end == name + 7 || *end)
      return false;
    *r = (struct fmt_npf_row){-1, -1, v, "framework"};
    return true;
  }
  const char *s = name;
  r->worker = fmt_npf_part(&s, "gid");
  r->nc = fmt_npf_part(&s, "nc");
  if (r->nc < 0) /* an earlier spelling: nrt-nc<n>-tid<t>-<source> */
    r->nc = fmt_npf_part(&s, "nrt-nc");
  r->tid = fmt_npf_part(&s, "tid");
  r->source = s;
  return (r->worker >= 0 || r->nc >= 0 || r->tid >= 0) &&
         strncmp(s, "neuron_", 7) == 0;
}

bool fmt_npf_process_parse(const char *name, size_t *inst_len, int64_t *pid) {
  const char *p = strstr(name, "-pid");
  if (!p || p == name)
    return false;
  const char *last;
  while ((last = strstr(p + 1, "-pid")))
    p = last;
  if (util_parse_i64(p + 4, pid) != 0 || *pid < 0)
    return false;
  *inst_len = (size_t)(p - name);
  return true;
}

bool fmt_npf_row_base(const char *name, size_t *base_len) {
  const char *p = strstr(name, FMT_NPF_ROW_SUFFIX);
  if (!p || p == name)
    return false;
  int64_t k;
  if (util_parse_i64(p + strlen(FMT_NPF_ROW_SUFFIX), &k) != 0 || k < 0)
    return false;
  *base_len = (size_t)(p - name);
  return true;
}
