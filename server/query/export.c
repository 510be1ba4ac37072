/* export.c -- exports of a window of the system timeline (see export.h). */
#include "export.h"
#include "export_names.h"
#include "export_pftrace.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum export_format {
  EXPORT_PERFETTO,
  EXPORT_SUMMARY_TEXT,
  EXPORT_SUMMARY_JSON,
  EXPORT_CSV,
  EXPORT_JSON,
  EXPORT_PFTRACE
};

#define EXPORT_PIECE (64 * 1024)

struct export {
  enum export_format fmt;
  struct query_export *cur; /* perfetto, csv */
  char *whole;              /* summary formats: the answer, sent once */
  int stage;                /* 0 head, 1 events, 3 counters, 2 done */
  sqlite3 *db;
  bool first; /* no event written yet (perfetto commas) */
  int64_t start, end;
  int64_t *procs; /* perfetto: per track, the pid ordinal of its process */
  struct export_pftrace *pf; /* pftrace: the protobuf writer */
};

static const struct {
  const char *name, *type, *file;
} export_formats[] = {
    [EXPORT_PERFETTO] = {"perfetto", "application/json", "system_profile.json"},
    [EXPORT_SUMMARY_TEXT] = {"summary-text", "text/plain; charset=utf-8",
                             "summary.txt"},
    [EXPORT_SUMMARY_JSON] = {"summary-json", "application/json",
                             "summary.json"},
    [EXPORT_CSV] = {"csv", "text/csv; charset=utf-8",
                    "SystemProfileEvents.csv"},
    [EXPORT_JSON] = {"json", "application/json", "system_profile.json"},
    [EXPORT_PFTRACE] = {"pftrace", "application/octet-stream",
                        "system_profile.pftrace"},
};

const char *export_content_type(const struct export *x) {
  return export_formats[x->fmt].type;
}

const char *export_filename(const struct export *x) {
  return export_formats[x->fmt].file;
}

/* ---- summary-text ---- */

/* A JSON value as summary text (strings bare, numbers as numbers). */
static void export_text_value(struct sbuf *b, json_t *v) {
  if (json_is_string(v))
    sbuf_adds(b, json_string_value(v));
  else if (json_is_real(v))
    sbuf_printf(b, "%.2f", json_real_value(v));
  else if (json_is_integer(v))
    sbuf_printf(b, "%lld", (long long)json_integer_value(v));
  else
    sbuf_adds(b, "n/a");
}

static void export_text_line(struct sbuf *b, const char *indent,
                             const char *key, json_t *v) {
  sbuf_printf(b, "%s%-32s ", indent, key);
  export_text_value(b, v);
  sbuf_addc(b, '\n');
}

static char *export_summary_text(json_t *s) {
  static const char *const top[] = {"instances", "processes",
                                    "system_profile_time_ns",
                                    "total_device_runtime_ns"};
  static const char *const dp[] = {
      "id",          "lnc",         "duration_ns", "calls",
      "mfu_percent", "hfu_percent", "mbu_percent", "instruction_count"};
  struct sbuf b = {0};
  json_t *p, *v;
  size_t i;
  const char *k;
  sbuf_adds(&b, "System Profile Summary\n");
  for (size_t t = 0; t < sizeof top / sizeof top[0]; t++)
    export_text_line(&b, "", top[t], json_object_get(s, top[t]));
  json_array_foreach(json_object_get(s, "device_profiles"), i, p) {
    sbuf_printf(&b, "\nDevice profile %s\n",
                json_string_value(json_object_get(p, "name")));
    for (size_t t = 0; t < sizeof dp / sizeof dp[0]; t++)
      export_text_line(&b, "  ", dp[t], json_object_get(p, dp[t]));
    json_object_foreach(json_object_get(p, "engines"), k, v) {
      char key[96];
      snprintf(key, sizeof key, "%s_active_time_ns", k);
      export_text_line(&b, "  ", key, json_object_get(v, "active_ns"));
      snprintf(key, sizeof key, "%s_active_time_percent", k);
      export_text_line(&b, "  ", key, json_object_get(v, "active_percent"));
      snprintf(key, sizeof key, "%s_instruction_count", k);
      export_text_line(&b, "  ", key, json_object_get(v, "instruction_count"));
    }
  }
  return b.s;
}

/* ---- perfetto (Chrome trace JSON) ---- */

/* ns as Chrome-trace microseconds with three decimals: exact text. */
static void export_us(struct sbuf *b, int64_t ns) {
  if (ns < 0) {
    sbuf_addc(b, '-');
    ns = -ns;
  }
  sbuf_add_i64(b, ns / 1000);
  sbuf_printf(b, ".%03d", (int)(ns % 1000));
}

/* Appends the "pid" and "tid" of track k as written: a standalone Chrome
 * trace's own ids (the text for those it gave as text), else the number
 * of the process (x->procs) and the track id. */
static void export_ids(const struct export *x, struct sbuf *b,
                       const struct tracks_row *r, size_t k) {
  sbuf_adds(b, ",\"pid\":");
  if (r->chrome && r->pnamed && r->pname)
    sbuf_add_json_str(b, r->pname, strlen(r->pname));
  else
    sbuf_add_i64(b, x->procs[k]);
  sbuf_adds(b, ",\"tid\":");
  if (r->chrome && r->tnamed && r->tname)
    sbuf_add_json_str(b, r->tname, strlen(r->tname));
  else
    sbuf_add_i64(b, r->chrome ? r->tid : r->id);
}

/* One M event of track k; value is a string, or with number set an
 * integer. */
static void export_meta(struct export *x, struct sbuf *b,
                        const struct tracks_row *r, size_t k, const char *what,
                        const char *key, const char *value, int64_t number) {
  if (!x->first)
    sbuf_addc(b, ',');
  x->first = false;
  sbuf_printf(b, "\n{\"ph\":\"M\",\"name\":\"%s\"", what);
  export_ids(x, b, r, k);
  sbuf_printf(b, ",\"args\":{\"%s\":", key);
  if (value)
    sbuf_add_json_str(b, value, strlen(value));
  else
    sbuf_add_i64(b, number);
  sbuf_adds(b, "}}");
}

/* The head: names, labels and sort indexes of the processes and threads
 * of every event track (export_names_procs numbers the processes). */
static void export_perfetto_head(struct export *x, struct sbuf *b) {
  size_t n;
  const struct tracks_row *r = query_export_tracks(x->cur, &n);
  x->procs = export_names_procs(r, n);
  sbuf_adds(b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  for (size_t i = 0; i < n; i++) {
    struct sbuf pname = {0}, tname = {0};
    export_names_track(&r[i], &pname, &tname);
    if (export_names_first(x->procs, i)) {
      if (pname.s)
        export_meta(x, b, &r[i], i, "process_name", "name", pname.s, 0);
      if (r[i].chrome && r[i].plabels)
        export_meta(x, b, &r[i], i, "process_labels", "labels", r[i].plabels,
                    0);
      if (r[i].chrome && r[i].psort != TRACKS_NONE)
        export_meta(x, b, &r[i], i, "process_sort_index", "sort_index", NULL,
                    r[i].psort);
    }
    if (tname.s)
      export_meta(x, b, &r[i], i, "thread_name", "name", tname.s, 0);
    if (r[i].chrome && r[i].tsort != TRACKS_NONE)
      export_meta(x, b, &r[i], i, "thread_sort_index", "sort_index", NULL,
                  r[i].tsort);
    sbuf_free(&pname);
    sbuf_free(&tname);
  }
}

/* The category an event had: the "cat" member the ingest put first in its
 * args (*len bytes of JSON string at the return value; the args after it
 * at *rest), or NULL. */
static const char *export_cat(const char *args, size_t *len,
                              const char **rest) {
  static const char key[] = "{\"cat\":\"";
  if (!args || strncmp(args, key, sizeof key - 1) != 0)
    return NULL;
  const char *p = args + sizeof key - 1;
  while (*p && *p != '"')
    p += *p == '\\' && p[1] ? 2 : 1;
  if (*p != '"')
    return NULL;
  *len = (size_t)(p + 1 - (args + sizeof key - 2));
  *rest = p + 1 + (p[1] == ',');
  return args + sizeof key - 2;
}

/* The flow endpoints of an event.  A flow none of whose events has
 * another one is written as v2 on the event itself (bind_id, the flow id
 * as a number, and flow_out where it starts, flow_in where it ends, both
 * in between); the others as v1 flow events (v2 has one bind_id per
 * event): s where the flow starts, t where it goes on, f (bp "e") where
 * it ends, at the event's ts right after it so that Perfetto and the
 * ingest bind them to it.  v2 writes the X event's members (v2 = true),
 * else the flow events after it. */
static void export_flows(struct export *x, struct sbuf *b,
                         const struct query_export_event *ev, size_t k,
                         bool v2) {
  for (const char *p = ev->flow_ends; p && *p;) {
    char *end;
    unsigned long long id = strtoull(p, &end, 10);
    if (*end != ':' || strspn(end + 1, "01") < 3)
      return;
    bool prev = end[1] == '1', next = end[2] == '1', single = end[3] == '1';
    p = end + 4 + (end[4] == ',');
    if (single && v2) {
      sbuf_printf(b, ",\"bind_id\":%llu", id);
      if (prev)
        sbuf_adds(b, ",\"flow_in\":true");
      if (next || !prev)
        sbuf_adds(b, ",\"flow_out\":true");
    }
    if (single || v2)
      continue;
    char ph = !prev ? 's' : next ? 't' : 'f';
    sbuf_printf(b,
                ",\n{\"ph\":\"%c\",\"name\":\"flow\",\"cat\":\"flow\","
                "\"id\":\"%llx\"",
                ph, id);
    if (ph == 'f')
      sbuf_adds(b, ",\"bp\":\"e\"");
    export_ids(x, b, ev->track, k);
    sbuf_adds(b, ",\"ts\":");
    export_us(b, ev->ts);
    sbuf_addc(b, '}');
  }
}

static void export_perfetto_event(struct export *x, struct sbuf *b,
                                  const struct query_export_event *ev) {
  size_t n;
  const struct tracks_row *rows = query_export_tracks(x->cur, &n);
  size_t k = (size_t)(ev->track - rows);
  bool chrome = ev->track->chrome;
  const char *src = ev->track->source, *rest = ev->args;
  size_t cl = 0;
  const char *cat = export_cat(ev->args, &cl, &rest);
  if (!x->first)
    sbuf_addc(b, ',');
  x->first = false;
  sbuf_adds(b, "\n{\"ph\":\"X\",\"name\":");
  sbuf_add_json_str(b, ev->name, strlen(ev->name));
  if (cat) {
    sbuf_adds(b, ",\"cat\":");
    sbuf_add(b, cat, cl);
  } else if (!chrome) {
    sbuf_adds(b, ",\"cat\":");
    sbuf_add_json_str(b, src, strlen(src));
  }
  export_ids(x, b, ev->track, k);
  sbuf_adds(b, ",\"ts\":");
  export_us(b, ev->ts);
  sbuf_adds(b, ",\"dur\":");
  export_us(b, ev->dur);
  export_flows(x, b, ev, k, true);
  /* the args as stored but for the category (written above); the events
   * of other tracks carry their id */
  sbuf_adds(b, ",\"args\":{");
  if (!chrome) {
    sbuf_adds(b, "\"id\":");
    query_add_i64_str(b, ev->id);
  }
  size_t al = rest ? strlen(rest) : 0;
  if (rest && !cat && rest[0] == '{') {
    rest++;
    al--;
  }
  if (al > 0 && rest[al - 1] == '}' && rest[strspn(rest, " \t\r\n")] != '}') {
    if (!chrome)
      sbuf_addc(b, ',');
    sbuf_add(b, rest, al - 1);
  }
  sbuf_adds(b, "}}");
  export_flows(x, b, ev, k, false);
}

/* ---- json: the vendor's system_profile.json shape ---- */

static void export_json_int(struct sbuf *b, const char *key, int64_t v) {
  if (v == TRACKS_NONE)
    return;
  sbuf_printf(b, ",\"%s\":", key);
  sbuf_add_i64(b, v);
}

/* One trace_events element: the SystemProfileEvents columns under the
 * export's field names (timestamp, duration), then the event's other
 * attributes; flow_id stays the list of strings it is in the store, or
 * lists the event's flows when its attributes do not. */
static void export_json_event(struct export *x, struct sbuf *b,
                              const struct query_export_event *ev) {
  const struct tracks_row *t = ev->track;
  if (!x->first)
    sbuf_addc(b, ',');
  x->first = false;
  sbuf_adds(b, "\n{\"id\":");
  query_add_i64_str(b, ev->id);
  sbuf_adds(b, ",\"name\":");
  sbuf_add_json_str(b, ev->name, strlen(ev->name));
  sbuf_adds(b, ",\"timestamp\":");
  sbuf_add_i64(b, ev->ts);
  sbuf_adds(b, ",\"duration\":");
  sbuf_add_i64(b, ev->dur);
  sbuf_adds(b, ",\"trace_event_source\":");
  sbuf_add_json_str(b, t->source, strlen(t->source));
  sbuf_adds(b, ",\"instance_id\":");
  sbuf_add_json_str(b, t->instance_id, strlen(t->instance_id));
  sbuf_adds(b, ",\"process_id\":\"");
  sbuf_add_i64(b, t->pid);
  sbuf_addc(b, '"');
  export_json_int(b, "thread_id", t->tid);
  export_json_int(b, "nc_idx", t->nc);
  export_json_int(b, "pcore_idx", t->pcore);
  export_json_int(b, "worker_gid", t->worker);
  export_json_int(b, "framework_stream_id", t->stream);
  if (ev->flows && !(ev->args && strstr(ev->args, "\"flow_id\""))) {
    /* flows the args do not list (a Chrome trace's): as the export's
     * flow_id list of strings */
    sbuf_adds(b, ",\"flow_id\":[\"");
    for (const char *p = ev->flows; *p; p++)
      if (*p == ',')
        sbuf_adds(b, "\",\"");
      else
        sbuf_addc(b, *p);
    sbuf_adds(b, "\"]");
  }
  size_t al = ev->args ? strlen(ev->args) : 0;
  if (al > 2 && ev->args[0] == '{' && ev->args[al - 1] == '}') {
    sbuf_addc(b, ',');
    sbuf_add(b, ev->args + 1, al - 2);
  }
  sbuf_addc(b, '}');
}

/* ---- csv ---- */

static void export_csv_field(struct sbuf *b, const char *s, bool last) {
  if (s && s[strcspn(s, ",\"\r\n")]) {
    sbuf_addc(b, '"');
    for (; *s; s++) {
      if (*s == '"')
        sbuf_addc(b, '"');
      sbuf_addc(b, *s);
    }
    sbuf_addc(b, '"');
  } else if (s) {
    sbuf_adds(b, s);
  }
  sbuf_addc(b, last ? '\n' : ',');
}

static void export_csv_int(struct sbuf *b, int64_t v) {
  if (v != TRACKS_NONE)
    sbuf_add_i64(b, v);
  sbuf_addc(b, ',');
}

static void export_csv_event(struct sbuf *b,
                             const struct query_export_event *ev) {
  const struct tracks_row *t = ev->track;
  sbuf_add_i64(b, ev->id);
  sbuf_addc(b, ',');
  export_csv_field(b, ev->name, false);
  sbuf_add_i64(b, ev->ts);
  sbuf_addc(b, ',');
  sbuf_add_i64(b, query_export_end(ev));
  sbuf_addc(b, ',');
  sbuf_add_i64(b, ev->dur);
  sbuf_addc(b, ',');
  export_csv_field(b, t->source, false);
  export_csv_field(b, t->instance_id, false);
  export_csv_int(b, t->pid);
  export_csv_int(b, t->tid);
  export_csv_int(b, t->nc);
  export_csv_int(b, t->pcore);
  export_csv_int(b, t->worker);
  export_csv_field(b, ev->flows, false);
  export_csv_int(b, t->stream);
  export_csv_field(b, ev->args, true);
}

/* ---- driver ---- */

int export_open(sqlite3 *db, const char *format, int64_t start, int64_t end,
                struct export **out, struct query_err *e) {
  int f;
  for (f = 0; f <= EXPORT_PFTRACE; f++)
    if (format && strcmp(format, export_formats[f].name) == 0)
      break;
  if (f > EXPORT_PFTRACE)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "parameter 'format' must be perfetto, pftrace, json, "
                      "summary-text, summary-json or csv");
  struct export *x = xcalloc(1, sizeof *x);
  int rc = 0;
  x->fmt = (enum export_format)f;
  x->db = db;
  x->start = start;
  x->end = end;
  x->first = true;
  if (x->fmt == EXPORT_SUMMARY_TEXT || x->fmt == EXPORT_SUMMARY_JSON) {
    json_t *s;
    rc = query_summary(db, &s, e);
    if (rc == 0) {
      x->whole = x->fmt == EXPORT_SUMMARY_JSON
                     ? json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                     : export_summary_text(s);
      json_decref(s);
    }
  } else {
    rc =
        query_export_open(db, start, end, x->fmt == EXPORT_PFTRACE, &x->cur, e);
  }
  if (rc < 0) {
    export_close(x);
    return rc;
  }
  *out = x;
  return 0;
}

int export_next(struct export *x, struct sbuf *out, struct query_err *e) {
  if (x->whole) {
    if (x->stage == 0)
      sbuf_adds(out, x->whole);
    x->stage = 2;
    return 0;
  }
  if (x->stage == 0) {
    if (x->fmt == EXPORT_PERFETTO) {
      export_perfetto_head(x, out);
    } else if (x->fmt == EXPORT_PFTRACE) {
      size_t n;
      const struct tracks_row *r = query_export_tracks(x->cur, &n);
      x->procs = export_names_procs(r, n);
      int rc = export_pftrace_open(x->db, x->start, x->end, r, n, x->procs,
                                   &x->pf, e);
      if (rc < 0)
        return rc;
      export_pftrace_head(x->pf, out);
    } else if (x->fmt == EXPORT_JSON) {
      sbuf_adds(out, "{\"trace_events\":[");
    } else {
      sbuf_adds(out, "id,name,start_ts,end_ts,duration_ns,trace_event_source,"
                     "instance_id,process_id,thread_id,nc_idx,pcore_idx,"
                     "worker_gid,flow_id,framework_stream_id,"
                     "extra_attributes_json\n");
    }
    x->stage = 1;
  }
  while (x->stage == 1 && out->len < EXPORT_PIECE) {
    struct query_export_event ev;
    int rc = query_export_next(x->cur, &ev, e);
    if (rc < 0)
      return rc;
    if (rc == 0) {
      if (x->fmt == EXPORT_PERFETTO || x->fmt == EXPORT_JSON)
        sbuf_adds(out, "\n]}\n");
      if (x->fmt == EXPORT_PFTRACE)
        export_pftrace_flush(x->pf, out);
      x->stage = x->fmt == EXPORT_PFTRACE ? 3 : 2; /* then its counters */
    } else if (x->fmt == EXPORT_PERFETTO) {
      export_perfetto_event(x, out, &ev);
    } else if (x->fmt == EXPORT_PFTRACE) {
      export_pftrace_event(x->pf, &ev, out);
    } else if (x->fmt == EXPORT_JSON) {
      export_json_event(x, out, &ev);
    } else {
      export_csv_event(out, &ev);
    }
  }
  while (x->stage == 3 && out->len < EXPORT_PIECE) {
    int rc = export_pftrace_counter(x->pf, out, e);
    if (rc < 0)
      return rc;
    if (rc == 0)
      x->stage = 2;
  }
  return x->stage != 2;
}

void export_close(struct export *x) {
  if (!x)
    return;
  query_export_close(x->cur);
  free(x->whole);
  free(x->procs);
  export_pftrace_free(x->pf);
  free(x);
}
