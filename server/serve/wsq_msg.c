/* wsq_msg.c -- see wsq_msg.h.
 *
 * Reading order: the answers, then the requests.
 */
#include "wsq_msg.h"
#include "query.h"
#include "util.h"
#include "wsbin.h"
#include "wsq.h"

#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* answers */

void wsq_msg_free(struct wsq_msg *m) {
  if (!m)
    return;
  wsbin_free(m->bin);
  free(m->text);
  free(m->group);
  free(m);
}

size_t wsq_msg_size(const struct wsq_msg *m) {
  return m->bin ? wsbin_size(m->bin) : m->len;
}

/* A buffer starting with LWS_PRE bytes of headroom, for a text. */
static void wsq_msg_text_begin(struct sbuf *b) {
  static const char zero[LWS_PRE];
  sbuf_add(b, zero, LWS_PRE);
}

static void wsq_msg_text_end(struct wsq_msg *m, struct sbuf *b) {
  m->text = (unsigned char *)b->s;
  m->len = b->len - LWS_PRE;
}

static void wsq_msg_add_id(struct sbuf *b, bool has_id, uint32_t id) {
  sbuf_adds(b, "\"id\":");
  if (has_id)
    sbuf_add_u64(b, id);
  else
    sbuf_adds(b, "null");
}

struct wsq_msg *wsq_msg_result(bool has_id, uint32_t id, int status,
                               const char *data, size_t len) {
  struct wsq_msg *m = xcalloc(1, sizeof *m);
  struct sbuf b = {0};
  wsq_msg_text_begin(&b);
  sbuf_adds(&b, "{\"type\":\"result\",");
  wsq_msg_add_id(&b, has_id, id);
  sbuf_printf(&b, ",\"status\":%d,\"data\":", status);
  if (data)
    sbuf_add(&b, data, len);
  else
    sbuf_adds(&b, "null");
  sbuf_addc(&b, '}');
  wsq_msg_text_end(m, &b);
  m->has_id = has_id;
  m->id = id;
  return m;
}

struct wsq_msg *wsq_msg_error(bool has_id, uint32_t id,
                              const struct query_err *e) {
  struct sbuf d = {0};
  sbuf_adds(&d, "{\"error\":");
  sbuf_add_json_str(&d, e->code, strlen(e->code));
  sbuf_adds(&d, ",\"detail\":");
  sbuf_add_json_str(&d, e->detail, strlen(e->detail));
  sbuf_addc(&d, '}');
  struct wsq_msg *m = wsq_msg_result(has_id, id, e->status, d.s, d.len);
  sbuf_free(&d);
  return m;
}

struct wsq_msg *wsq_msg_text(uint32_t id, const char *json) {
  struct wsq_msg *m = xcalloc(1, sizeof *m);
  struct sbuf b = {0};
  wsq_msg_text_begin(&b);
  sbuf_adds(&b, json);
  wsq_msg_text_end(m, &b);
  m->has_id = true;
  m->id = id;
  return m;
}

/* ------------------------------------------------------------------ */
/* requests */

/* An integer given as a JSON integer or a string of digits. */
static bool wsq_msg_int(json_t *v, int64_t *out) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return true;
  }
  return json_is_string(v) && util_parse_i64(json_string_value(v), out) == 0;
}

/* A request id: a JSON integer 0..2^32-1. */
static bool wsq_msg_u32(json_t *v, uint32_t *id) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > (json_int_t)UINT32_MAX)
    return false;
  *id = (uint32_t)json_integer_value(v);
  return true;
}

/* The window fields of a slices or counters request. */
static int wsq_msg_window(json_t *m, struct wsq_req *r, struct query_err *e) {
  json_t *tracks = json_object_get(m, "tracks");
  json_t *prog = json_object_get(m, "progressive");
  json_t *deflate = json_object_get(m, "deflate");
  int64_t px;
  size_t n = json_array_size(tracks);
  if (!json_is_array(tracks) || n < 1 || n > QUERY_MAX_TRACKS)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'tracks' must list 1 to %d base track ids",
                      QUERY_MAX_TRACKS);
  r->tracks = xcalloc(n, sizeof *r->tracks);
  r->n_tracks = n;
  for (size_t i = 0; i < n; i++)
    if (!wsq_msg_int(json_array_get(tracks, i), &r->tracks[i]))
      return query_fail(e, -EINVAL, 400, "bad_parameter",
                        "field 'tracks' must hold base track ids (strings of "
                        "digits or integers)");
  if (!wsq_msg_int(json_object_get(m, "start"), &r->start) ||
      !wsq_msg_int(json_object_get(m, "end"), &r->end))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "fields 'start' and 'end' are required: ns as strings "
                      "of digits or integers");
  if (!wsq_msg_int(json_object_get(m, "px"), &px) || px < 1 ||
      px > QUERY_MAX_PX)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'px' must be an integer from 1 to %d",
                      QUERY_MAX_PX);
  if ((prog && !json_is_boolean(prog)) ||
      (deflate && !json_is_boolean(deflate)))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "fields 'progressive' and 'deflate' must be true or "
                      "false");
  r->deflate = !deflate || json_is_true(deflate);
  r->px = (int)px;
  r->progressive = (!prog || json_is_true(prog)) && px >= WSQ_COARSE_MIN_PX;
  return 0;
}

/* Adds the query argument key=value (value from a JSON string or
 * integer). */
static int wsq_msg_add_arg(struct wsq_req *r, const char *key, json_t *v,
                           struct query_err *e) {
  char *val;
  if (json_is_string(v))
    val = xstrdup(json_string_value(v));
  else if (json_is_integer(v))
    val = xasprintf("%lld", (long long)json_integer_value(v));
  else
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field '%s' must be a string or an integer", key);
  r->args = xrealloc(r->args, 2 * (r->n_args + 1) * sizeof *r->args);
  r->args[2 * r->n_args] = xstrdup(key);
  r->args[2 * r->n_args + 1] = val;
  r->n_args++;
  return 0;
}

static int wsq_msg_search(json_t *m, struct wsq_req *r, struct query_err *e) {
  static const char *const keys[] = {"q",        "start",  "end",    "page",
                                     "per_page", "domain", "profile"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    json_t *v = json_object_get(m, keys[i]);
    int rc = v ? wsq_msg_add_arg(r, keys[i], v, e) : 0;
    if (rc < 0)
      return rc;
  }
  r->path = xstrdup("/api/v1/search");
  return 0;
}

/* An event or (drill) device-profile request. */
static int wsq_msg_event(json_t *m, struct wsq_req *r, bool drill,
                         struct query_err *e) {
  const char *key = json_string_value(json_object_get(m, "key"));
  if (!key || !*key || strchr(key, '/') || strlen(key) > 200)
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'key' must be an event key <track>:<lane>:<ts>");
  r->path =
      xasprintf("/api/v1/events/%s%s", key, drill ? "/device-profile" : "");
  return 0;
}

/* {"type":"cancel","ids":[...],"group":"..."} */
static int wsq_msg_cancel(json_t *m, struct wsq_req *r, struct query_err *e) {
  json_t *ids = json_object_get(m, "ids");
  json_t *group = json_object_get(m, "group");
  size_t i;
  json_t *v;
  r->type = WSQ_MSG_CANCEL;
  if ((ids && !json_is_array(ids)) || (group && !json_is_string(group)) ||
      (!ids && !group))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "a cancel names 'ids' (an array of request ids) or a "
                      "'group'");
  r->ids = xcalloc(json_array_size(ids) + 1, sizeof *r->ids);
  json_array_foreach(ids, i, v) {
    if (!wsq_msg_u32(v, &r->ids[r->n_ids++]))
      return query_fail(e, -EINVAL, 400, "bad_parameter",
                        "field 'ids' must hold request ids (integers "
                        "0..2^32-1)");
  }
  r->group = group ? xstrdup(json_string_value(group)) : NULL;
  return 0;
}

/* A query of type `type` (one of the known ones). */
static int wsq_msg_query(json_t *m, const char *type, struct wsq_req *r,
                         struct query_err *e) {
  json_t *group = json_object_get(m, "group");
  json_t *replace = json_object_get(m, "replace");
  r->type = WSQ_MSG_QUERY;
  if (group && (!json_is_string(group) || !*json_string_value(group) ||
                strlen(json_string_value(group)) > WSQ_MAX_GROUP))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'group' must be a string of 1 to %d bytes",
                      WSQ_MAX_GROUP);
  if (replace &&
      (!json_is_boolean(replace) || (json_is_true(replace) && !group)))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'replace' must be true or false, and needs a "
                      "'group'");
  r->replace = replace && json_is_true(replace);
  r->group = group ? xstrdup(json_string_value(group)) : NULL;
  json_t *gen = json_object_get(m, "gen");
  if (gen && (!json_is_string(gen) || strlen(json_string_value(gen)) > 64))
    return query_fail(e, -EINVAL, 400, "bad_parameter",
                      "field 'gen' must be the store generation (a string)");
  if (gen && wsq_msg_add_arg(r, "gen", gen, e) < 0)
    return -EINVAL;
  if (strcmp(type, "slices") == 0 || strcmp(type, "counters") == 0) {
    r->kind = strcmp(type, "slices") == 0 ? WSQ_SLICES : WSQ_COUNTERS;
    return wsq_msg_window(m, r, e); /* a progressive one has a high phase */
  }
  r->kind = WSQ_API;
  if (strcmp(type, "search") == 0)
    return wsq_msg_search(m, r, e);
  r->high = true;
  return wsq_msg_event(m, r, strcmp(type, "event") != 0, e);
}

int wsq_msg_parse(const char *text, size_t len, struct wsq_req *r,
                  struct query_err *e) {
  static const char *const queries[] = {"slices", "counters", "search", "event",
                                        "device-profile"};
  json_error_t je;
  json_t *m = json_loadb(text, len, 0, &je);
  const char *type = json_string_value(json_object_get(m, "type"));
  size_t i = 0, n = sizeof queries / sizeof *queries;
  int rc;
  memset(r, 0, sizeof *r);
  if (!json_is_object(m) || !type)
    rc = query_fail(e, -EINVAL, 400, "bad_request",
                    "a request is a JSON object with a 'type' and an 'id'%s%s",
                    m ? "" : ": ", m ? "" : je.text);
  else if (strcmp(type, "cancel") == 0)
    rc = wsq_msg_cancel(m, r, e);
  else if (!wsq_msg_u32(json_object_get(m, "id"), &r->id))
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'id' is required: an integer from 0 to "
                    "4294967295");
  else {
    r->has_id = true;
    r->type = WSQ_MSG_STATS;
    while (i < n && strcmp(type, queries[i]) != 0)
      i++;
    if (strcmp(type, "stats") == 0)
      rc = 0;
    else if (i < n)
      rc = wsq_msg_query(m, type, r, e);
    else
      rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                      "unknown request type '%.64s': slices, counters, "
                      "search, event, device-profile, cancel or stats",
                      type);
  }
  json_decref(m);
  return rc;
}

void wsq_msg_req_clear(struct wsq_req *r) {
  free(r->group);
  free(r->ids);
  free(r->tracks);
  free(r->path);
  for (size_t i = 0; i < 2 * r->n_args; i++)
    free(r->args[i]);
  free(r->args);
  memset(r, 0, sizeof *r);
}

const char *wsq_msg_arg(void *req, const char *key) {
  const struct wsq_req *r = req;
  for (size_t i = 0; i < r->n_args; i++)
    if (strcmp(r->args[2 * i], key) == 0)
      return r->args[2 * i + 1];
  return NULL;
}
