/* tracks.c -- grouping modes -> display tracks (see tracks.h). */
#include "tracks.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tracks_mode_names[] = {
    "default", "cpu_device", "neuroncore", "thread",
    "process", "instance",   "device"};

int tracks_mode_parse(const char *s, enum tracks_mode *out) {
  if (!s || !*s) {
    *out = TRACKS_DEFAULT;
    return 0;
  }
  for (int i = TRACKS_DEFAULT; i <= TRACKS_INSTANCE; i++)
    if (strcmp(s, tracks_mode_names[i]) == 0) {
      *out = (enum tracks_mode)i;
      return 0;
    }
  return -EINVAL;
}

const char *tracks_mode_name(enum tracks_mode m) {
  return tracks_mode_names[m];
}

static bool tracks_is(const char *a, const char *b) {
  return a && strcmp(a, b) == 0;
}

static bool tracks_digit(char c) { return c >= '0' && c <= '9'; }

/* Appends a name as one path component: trimmed, and '/' written as
 * U+2215 (a '/' would split the tree). */
static void tracks_add_name(struct sbuf *b, const char *s) {
  size_t n;
  while (*s == ' ')
    s++;
  for (n = strlen(s); n > 0 && s[n - 1] == ' '; n--)
    ;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '/')
      sbuf_adds(b, "\xe2\x88\x95");
    else
      sbuf_addc(b, s[i]);
  }
}

/* Whether s holds the decimal v as a word of its own ("stream 7 ", 7). */
static bool tracks_has_number(const char *s, int64_t v) {
  char num[24];
  size_t k = (size_t)snprintf(num, sizeof num, "%lld", (long long)v);
  for (const char *p = strstr(s, num); p; p = strstr(p + 1, num))
    if ((p == s || (!tracks_digit(p[-1]) && p[-1] != '-')) &&
        !tracks_digit(p[k]))
      return true;
  return false;
}

/* "/<name> <n>" as Perfetto names a process or thread: "<what> <n>"
 * without a name; the name alone when it holds n already or when the
 * trace gave the id as text (the name). */
static void tracks_named_seg(struct sbuf *b, const char *name, int64_t n,
                             bool named, const char *what) {
  sbuf_addc(b, '/');
  if (!name || !name[strspn(name, " ")]) {
    sbuf_printf(b, "%s %lld", what, (long long)n);
    return;
  }
  tracks_add_name(b, name);
  if (!named && !tracks_has_number(name, n))
    sbuf_printf(b, " %lld", (long long)n);
}

/* "/<process>" of a Chrome track, its labels in parentheses. */
static void tracks_process_seg(struct sbuf *b, const struct tracks_row *r) {
  tracks_named_seg(b, r->pname, r->pid, r->pnamed, "Process");
  if (r->plabels && r->plabels[strspn(r->plabels, " ")]) {
    sbuf_adds(b, " (");
    tracks_add_name(b, r->plabels);
    sbuf_addc(b, ')');
  }
}

static void tracks_thread_seg(struct sbuf *b, const struct tracks_row *r) {
  tracks_named_seg(b, r->tname, r->tid, r->tnamed, "Thread");
}

/* Appends "/<tag><n>" ("?" for an unknown number). */
static void tracks_seg(struct sbuf *b, const char *tag, int64_t n) {
  if (n == TRACKS_NONE)
    sbuf_printf(b, "/%s?", tag);
  else
    sbuf_printf(b, "/%s%lld", tag, (long long)n);
}

/* The name of a system event track (framework / neuron_rt / neuron_hw and
 * any other event source) in a mode. */
static void tracks_event_name(struct sbuf *b, const struct tracks_row *r,
                              enum tracks_mode m) {
  const char *src = r->source;
  bool hw = tracks_is(src, "neuron_hw"), rt = tracks_is(src, "neuron_rt");
  if (m == TRACKS_INSTANCE)
    return;
  if (r->chrome) { /* a standalone trace: no framework layer */
    tracks_process_seg(b, r);
    if (m != TRACKS_PROCESS)
      tracks_thread_seg(b, r);
    return;
  }
  if (m == TRACKS_NEURONCORE && r->nc != TRACKS_NONE) {
    tracks_seg(b, "NC:", r->nc);
    return;
  }
  tracks_seg(b, "PID:", r->pid);
  switch (m) {
  case TRACKS_PROCESS:
    return;
  case TRACKS_THREAD:
  case TRACKS_NEURONCORE:
    tracks_seg(b, "TID:", r->tid);
    return;
  case TRACKS_CPU_DEVICE:
    if (hw) {
      tracks_seg(b, "Worker:", r->worker != TRACKS_NONE ? r->worker : r->nc);
      sbuf_adds(b, "/neuron_hw");
    } else {
      tracks_seg(b, "TID:", r->tid);
      sbuf_printf(b, "/%s", src);
    }
    return;
  default:
    break;
  }
  sbuf_printf(b, "/%s", src);
  if (hw) {
    if (r->nc == TRACKS_NONE)
      tracks_seg(b, "Worker:", r->worker);
    else
      sbuf_printf(b, "/NC%lld:%lld", (long long)r->nc,
                  (long long)(r->pcore != TRACKS_NONE ? r->pcore : r->nc));
  } else if (rt && r->nc != TRACKS_NONE) {
    tracks_seg(b, "NC:", r->nc);
  } else if (!rt && r->stream != TRACKS_NONE) {
    tracks_seg(b, "Stream:", r->stream);
  } else if (!rt && r->tname) {
    tracks_thread_seg(b, r);
  } else {
    tracks_seg(b, "TID:", r->tid);
  }
}

/* Device profile tracks: the row label with a kind prefix. */
static void tracks_device_name(struct sbuf *b, const struct tracks_row *r) {
  const char *s = r->source, *l = r->label;
  if (tracks_is(s, "engine"))
    sbuf_adds(b, l ? l : "engine");
  else if (tracks_is(s, "dma"))
    sbuf_printf(b, "DMA/%s", l ? l : "?");
  else if (tracks_is(s, "cc"))
    sbuf_printf(b, "CC/%s", l ? l : "?");
  else if (tracks_is(s, "semaphore"))
    sbuf_printf(b, "Semaphore/%s", l ? l : "?");
  else if (tracks_is(s, "sbuf") || tracks_is(s, "psum"))
    sbuf_printf(b, "%s_usage", s);
  else if (tracks_is(s, "mfu"))
    sbuf_adds(b, "mfu_estimated");
  else if (tracks_is(s, "dma_throughput"))
    sbuf_adds(b, s);
  else if (l)
    sbuf_printf(b, "%s/%s", s, l);
  else
    sbuf_adds(b, s);
}

char *tracks_name(const struct tracks_row *r, enum tracks_mode m) {
  struct sbuf b = {0};
  const char *s = r->source;
  if (m == TRACKS_DEVICE || tracks_is(r->domain, "device")) {
    tracks_device_name(&b, r);
    return b.s;
  }
  sbuf_adds(&b, r->instance_id ? r->instance_id : "?");
  if (tracks_is(s, "neuron_hbm_usage")) {
    tracks_seg(&b, "ND:", r->device);
    tracks_seg(&b, "HBM:", r->hbm);
    sbuf_adds(&b, "/neuron_hbm_usage");
  } else if (tracks_is(s, "host_to_device_transfers") ||
             tracks_is(s, "device_to_host_transfers")) {
    tracks_seg(&b, "NC:", r->nc);
    sbuf_printf(&b, "/%s", s);
  } else if (tracks_is(s, "host_to_device_bandwidth") ||
             tracks_is(s, "device_to_host_bandwidth")) {
    tracks_seg(&b, "NC:", r->nc);
    sbuf_printf(&b, "/%.*s/transfer_bandwidth",
                (int)(strlen(s) - strlen("_bandwidth")), s);
  } else if (tracks_is(s, "host_mem")) {
    sbuf_adds(&b, "/host_memory_usage");
  } else if (tracks_is(s, "host_cpu_util")) {
    sbuf_printf(&b, "/CPU:%s/host_cpu_util", r->cpu_id ? r->cpu_id : "?");
  } else if (tracks_is(r->kind, "counter")) {
    if (r->chrome)
      tracks_process_seg(&b, r);
    else
      tracks_seg(&b, "PID:", r->pid);
    sbuf_addc(&b, '/');
    tracks_add_name(&b, r->label ? r->label : s);
  } else {
    tracks_event_name(&b, r, m);
  }
  return b.s;
}

/* Sort rank: event tracks, then the extra tracks in the documented order;
 * device tracks: engines (in the vendor's order), DMA, CC, counters. */
static int tracks_rank(const struct tracks_row *r) {
  static const char *const sys[] = {"neuron_hbm_usage",
                                    "host_to_device_transfers",
                                    "device_to_host_transfers",
                                    "host_to_device_bandwidth",
                                    "device_to_host_bandwidth",
                                    "host_mem",
                                    "host_cpu_util"};
  static const int sys_rank[] = {1, 2, 2, 3, 3, 4, 5};
  static const char *const engines[] = {"Tensor", "TensorMatrix", "Vector",
                                        "Scalar", "GpSimd",       "Sync"};
  static const char *const dev[] = {
      "dma", "cc", "sbuf", "psum", "dma_throughput", "mfu", "semaphore"};
  if (tracks_is(r->domain, "device")) {
    if (tracks_is(r->source, "engine")) {
      for (int i = 0; i < 6; i++)
        if (tracks_is(r->label, engines[i]))
          return i;
      return 6;
    }
    for (int i = 0; i < 7; i++)
      if (tracks_is(r->source, dev[i]))
        return 10 + i;
    return 20;
  }
  for (int i = 0; i < 7; i++)
    if (tracks_is(r->source, sys[i]))
      return sys_rank[i];
  return 0;
}

/* Known path components sort in data-flow order, not alphabetically. */
static int tracks_component_rank(const char *s, size_t n) {
  static const char *const order[] = {"framework", "neuron_rt", "neuron_hw"};
  for (int i = 0; i < 3; i++)
    if (strlen(order[i]) == n && memcmp(s, order[i], n) == 0)
      return i;
  return -1;
}

/* Compares two path components; digit runs compare as numbers. */
static int tracks_natural_cmp(const char *a, size_t an, const char *b,
                              size_t bn) {
  size_t i = 0, j = 0;
  while (i < an && j < bn) {
    if (tracks_digit(a[i]) && tracks_digit(b[j])) {
      while (i < an && a[i] == '0')
        i++;
      while (j < bn && b[j] == '0')
        j++;
      size_t si = i, sj = j;
      while (i < an && tracks_digit(a[i]))
        i++;
      while (j < bn && tracks_digit(b[j]))
        j++;
      if (i - si != j - sj)
        return i - si < j - sj ? -1 : 1;
      int c = memcmp(a + si, b + sj, i - si);
      if (c)
        return c;
    } else {
      if (a[i] != b[j])
        return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
      i++;
      j++;
    }
  }
  return (i < an) - (j < bn);
}

/* A display track being built; key[k]: the order of path component k
 * before its text (k = 1: a Chrome process, 2: a Chrome thread), when
 * has[k]. */
struct tracks_item {
  const struct tracks_row *r;
  char *name;
  int rank;
  int64_t key[3];
  bool has[3];
};

/* A Chrome process's or thread's place: its sort index, else its number
 * (ids given as text last). */
static int64_t tracks_sort_key(int64_t sort, int64_t n, int named) {
  return sort != TRACKS_NONE ? sort : named ? INT64_MAX : n;
}

static void tracks_item_keys(struct tracks_item *it, enum tracks_mode m) {
  const struct tracks_row *r = it->r;
  if (!r->chrome || m == TRACKS_INSTANCE || tracks_is(r->domain, "device"))
    return;
  it->has[1] = true;
  it->key[1] = tracks_sort_key(r->psort, r->pid, r->pnamed);
  it->has[2] = m != TRACKS_PROCESS && tracks_is(r->kind, "slices");
  it->key[2] = tracks_sort_key(r->tsort, r->tid, r->tnamed);
}

static int tracks_path_cmp(const struct tracks_item *x,
                           const struct tracks_item *y) {
  const char *a = x->name, *b = y->name;
  for (int k = 0;; k++) {
    size_t an = strcspn(a, "/"), bn = strcspn(b, "/");
    int ra = tracks_component_rank(a, an), rb = tracks_component_rank(b, bn);
    int c = (ra >= 0 && rb >= 0) ? ra - rb : tracks_natural_cmp(a, an, b, bn);
    if (c && k < 3 && x->has[k] && y->has[k] && x->key[k] != y->key[k])
      return x->key[k] < y->key[k] ? -1 : 1;
    if (c)
      return c;
    if (!a[an] || !b[bn])
      return (a[an] != 0) - (b[bn] != 0);
    a += an + 1;
    b += bn + 1;
  }
}

static int tracks_item_cmp(const void *pa, const void *pb) {
  const struct tracks_item *a = pa, *b = pb;
  if (a->rank != b->rank)
    return a->rank - b->rank;
  int c = tracks_path_cmp(a, b);
  if (c)
    return c;
  c = strcmp(a->r->kind, b->r->kind);
  if (c)
    return c;
  return a->r->id < b->r->id ? -1 : a->r->id > b->r->id;
}

static json_t *tracks_id_string(int64_t id) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", (long long)id);
  return json_string(buf);
}

/* A JSON string that is valid even if s is not UTF-8. */
static json_t *tracks_json_string(const char *s) {
  json_t *j = json_string(s);
  return j ? j : json_string("(not UTF-8)");
}

/* Builds one display track from items[0..n) (same name and kind). */
static json_t *tracks_display(const struct tracks_item *it, size_t n,
                              enum tracks_mode m) {
  const struct tracks_row *r0 = it[0].r;
  bool counter = tracks_is(r0->kind, "counter");
  json_t *t = json_object(), *base = json_array();
  int64_t lanes = 0, events = 0;
  const char *source = r0->source;
  char *id = xasprintf("%s:%s", tracks_mode_name(m), it[0].name);
  const char *slash = strrchr(it[0].name, '/');
  for (size_t i = 0; i < n; i++) {
    const struct tracks_row *r = it[i].r;
    json_t *b = json_object();
    json_object_set_new(b, "id", tracks_id_string(r->id));
    if (!counter)
      json_object_set_new(b, "lanes", json_integer(r->lanes));
    json_array_append_new(base, b);
    lanes += r->lanes;
    events += r->event_count;
    if (!tracks_is(r->source, source))
      source = "mixed";
  }
  json_object_set_new(t, "id", tracks_json_string(id));
  json_object_set_new(t, "name", tracks_json_string(it[0].name));
  json_object_set_new(
      t, "group",
      slash ? json_stringn(it[0].name, (size_t)(slash - it[0].name))
            : json_string(""));
  json_object_set_new(t, "kind", json_string(counter ? "counter" : "slices"));
  json_object_set_new(t, "source", tracks_json_string(source));
  if (!counter)
    json_object_set_new(t, "lanes", json_integer(lanes));
  json_object_set_new(t, "base", base);
  json_object_set_new(t, "event_count", json_integer(events));
  if (counter) {
    if (r0->series)
      json_object_set(t, "series", r0->series);
    else
      json_object_set_new(t, "series", json_array());
    json_object_set_new(t, "unit",
                        tracks_json_string(r0->unit ? r0->unit : ""));
  }
  if (tracks_is(r0->source, "host_mem") ||
      tracks_is(r0->source, "host_cpu_util"))
    json_object_set_new(t, "hidden_by_default", json_true());
  free(id);
  return t;
}

json_t *tracks_group(const struct tracks_row *rows, size_t n,
                     enum tracks_mode m) {
  struct tracks_item *it = xcalloc(n ? n : 1, sizeof *it);
  json_t *out = json_array();
  for (size_t i = 0; i < n; i++) {
    it[i].r = &rows[i];
    it[i].name = tracks_name(&rows[i], m);
    it[i].rank = tracks_rank(&rows[i]);
    tracks_item_keys(&it[i], m);
  }
  qsort(it, n, sizeof *it, tracks_item_cmp);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && strcmp(it[j].name, it[i].name) == 0 &&
           strcmp(it[j].r->kind, it[i].r->kind) == 0)
      j++;
    json_array_append_new(out, tracks_display(it + i, j - i, m));
    i = j;
  }
  for (size_t i = 0; i < n; i++)
    free(it[i].name);
  free(it);
  return out;
}
