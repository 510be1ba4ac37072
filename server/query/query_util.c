/* query_util.c -- what every part of the read side uses (see query.h,
 * query_priv.h): the statement cache, errors, JSON values of columns, args
 * objects, event keys, small aggregates and the lane cursors of k-way
 * merges.
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int query_fail(struct query_err *e, int rc, int status, const char *code,
               const char *fmt, ...) {
  va_list ap;
  e->status = status;
  snprintf(e->code, sizeof e->code, "%s", code);
  va_start(ap, fmt);
  vsnprintf(e->detail, sizeof e->detail, fmt, ap);
  va_end(ap);
  return rc;
}

/* A store error on db. */
int query_util_db_fail(struct query_err *e, sqlite3 *db) {
  return query_fail(e, -EIO, 500, "store_error", "store query failed: %s",
                    sqlite3_errmsg(db));
}

sqlite3_stmt *query_stmt(sqlite3 *db, const char *sql, struct query_err *e) {
  sqlite3_stmt *s;
  for (s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s))
    if (!sqlite3_stmt_busy(s) && strcmp(sqlite3_sql(s), sql) == 0) {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      return s;
    }
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) !=
      SQLITE_OK) {
    query_util_db_fail(e, db);
    return NULL;
  }
  return s;
}

/* Binds the parameters ?1..?n of s to v[0..n-1]. */
void query_util_bind_i64(sqlite3_stmt *s, const int64_t *v, int n) {
  for (int i = 0; i < n; i++)
    sqlite3_bind_int64(s, i + 1, v[i]);
}

/* A statement that is not cached (finalize it): for the many cursors of one
 * merge, which must not share a cached statement. */
sqlite3_stmt *query_util_stmt_once(sqlite3 *db, const char *sql,
                                   struct query_err *e) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
    query_util_db_fail(e, db);
    return NULL;
  }
  return s;
}

void query_add_i64_str(struct sbuf *b, int64_t v) {
  sbuf_addc(b, '"');
  sbuf_add_i64(b, v);
  sbuf_addc(b, '"');
}

json_t *query_json_text(const char *s) {
  if (!s)
    return json_null();
  json_t *j = json_string(s);
  if (j)
    return j;
  struct sbuf b = {0};
  sbuf_add_json_str(&b, s, strlen(s));
  j = json_loads(b.s, JSON_DECODE_ANY, NULL);
  sbuf_free(&b);
  return j ? j : json_string("");
}

/* A JSON value for an id: a string, as every id leaves the server. */
json_t *query_util_id(int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return json_string(buf);
}

/* Column i as an id string, or null. */
json_t *query_util_col_id(sqlite3_stmt *s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL)
    return json_null();
  if (sqlite3_column_type(s, i) == SQLITE_INTEGER)
    return query_util_id(sqlite3_column_int64(s, i));
  return query_json_text((const char *)sqlite3_column_text(s, i));
}

/* Column i as an integer, or null. */
json_t *query_util_col_int(sqlite3_stmt *s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL)
    return json_null();
  return json_integer(sqlite3_column_int64(s, i));
}

json_t *query_util_col_text(sqlite3_stmt *s, int i) {
  return query_json_text((const char *)sqlite3_column_text(s, i));
}

/* Whether an integer is exact in a JavaScript number. */
static bool query_util_js_safe(int64_t v) {
  return v <= 9007199254740992LL && v >= -9007199254740992LL;
}

/* Any column as JSON: integers beyond 2^53 become strings. */
json_t *query_util_col_any(sqlite3_stmt *s, int i) {
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_INTEGER: {
    int64_t v = sqlite3_column_int64(s, i);
    return query_util_js_safe(v) ? json_integer(v) : query_util_id(v);
  }
  case SQLITE_FLOAT: {
    double d = sqlite3_column_double(s, i);
    return isfinite(d) ? json_real(d) : json_null();
  }
  case SQLITE_TEXT:
    return query_util_col_text(s, i);
  case SQLITE_BLOB: {
    const unsigned char *p = sqlite3_column_blob(s, i);
    int n = sqlite3_column_bytes(s, i);
    struct sbuf b = {0};
    sbuf_adds(&b, "x'");
    for (int k = 0; k < n; k++)
      sbuf_printf(&b, "%02x", p[k]);
    sbuf_addc(&b, '\'');
    json_t *j = json_string(b.s);
    sbuf_free(&b);
    return j;
  }
  default:
    return json_null();
  }
}

/* The current row as an object keyed by column name. */
json_t *query_util_row_object(sqlite3_stmt *s) {
  json_t *o = json_object();
  for (int i = 0; i < sqlite3_column_count(s); i++)
    json_object_set_new(o, sqlite3_column_name(s, i), query_util_col_any(s, i));
  return o;
}

json_t *query_args(const char *s) {
  if (!s)
    return NULL;
  struct sbuf b = {0};
  bool in_str = false;
  for (const char *p = s; *p;) {
    if (in_str) {
      if (*p == '\\' && p[1]) {
        sbuf_add(&b, p, 2);
        p += 2;
        continue;
      }
      if (*p == '"')
        in_str = false;
      sbuf_addc(&b, *p++);
      continue;
    }
    if (*p == '"') {
      in_str = true;
      sbuf_addc(&b, *p++);
      continue;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      const char *q = p + (*p == '-');
      size_t digits = strspn(q, "0123456789");
      const char *end = q + digits;
      size_t n = strcspn(end, ",]} \t\r\n");
      bool integer = n == 0;
      if (integer &&
          (digits > 16 ||
           (digits == 16 && strncmp(q, "9007199254740992", 16) > 0))) {
        sbuf_addc(&b, '"');
        sbuf_add(&b, p, (size_t)(end - p));
        sbuf_addc(&b, '"');
      } else {
        sbuf_add(&b, p, (size_t)(end - p) + n);
        end += n;
      }
      p = end;
      continue;
    }
    sbuf_addc(&b, *p++);
  }
  json_t *j = b.s ? json_loads(b.s, 0, NULL) : NULL;
  sbuf_free(&b);
  if (j && !json_is_object(j)) {
    json_decref(j);
    j = NULL;
  }
  return j;
}

int query_parse_key(const char *key, int64_t *track, int64_t *lane,
                    int64_t *ts) {
  int64_t v[3];
  const char *p = key;
  for (int i = 0; i < 3; i++) {
    size_t n = strcspn(p, ":");
    if ((i < 2 && p[n] != ':') || (i == 2 && p[n] != '\0') || n == 0 || n > 20)
      return -EINVAL;
    char buf[24];
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (util_parse_i64(buf, &v[i]) < 0)
      return -EINVAL;
    p += n + 1;
  }
  *track = v[0];
  *lane = v[1];
  *ts = v[2];
  return 0;
}

/* The slot of key (> 0) in the open-addressing table keys[cap] (cap a power
 * of two, the table never full); claims it, counting it in *n, when key is
 * absent. */
size_t query_util_slot(int64_t *keys, size_t cap, size_t *n, int64_t key) {
  size_t i = (size_t)util_hash(&key, sizeof key) & (cap - 1);
  while (keys[i] && keys[i] != key)
    i = (i + 1) & (cap - 1);
  if (!keys[i]) {
    keys[i] = key;
    (*n)++;
  }
  return i;
}

char *query_util_dup_col(sqlite3_stmt *s, int i) {
  const unsigned char *t = sqlite3_column_text(s, i);
  return t ? xstrdup((const char *)t) : NULL;
}

int64_t query_util_int_col(sqlite3_stmt *s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? TRACKS_NONE
                                                  : sqlite3_column_int64(s, i);
}

/* Runs a one-row query; *out gets column 0 as int64 (def when NULL). */
int query_util_scalar(sqlite3 *db, const char *sql, int64_t def, int64_t *out,
                      struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, sql, e);
  if (!s)
    return -EIO;
  int rc = sqlite3_step(s);
  *out = (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
             ? sqlite3_column_int64(s, 0)
             : def;
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}

/* Every row of a query as an array of objects (small tables only). */
int query_util_all_rows(sqlite3 *db, const char *sql, json_t **out,
                        struct query_err *e) {
  sqlite3_stmt *s = query_stmt(db, sql, e);
  int rc;
  if (!s)
    return -EIO;
  *out = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(*out, query_util_row_object(s));
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(*out);
    return query_util_db_fail(e, db);
  }
  return 0;
}

char *query_util_key(int64_t track, int64_t lane, int64_t ts) {
  return xasprintf("%lld:%lld:%lld", (long long)track, (long long)lane,
                   (long long)ts);
}

/* A min-heap of lane cursors keyed by ts. */
void query_util_heap_down(struct query_cursor_lane **h, size_t n, size_t i) {
  for (;;) {
    size_t m = i, l = 2 * i + 1, r = l + 1;
    if (l < n && h[l]->ts < h[m]->ts)
      m = l;
    if (r < n && h[r]->ts < h[m]->ts)
      m = r;
    if (m == i)
      return;
    struct query_cursor_lane *t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

/* Steps a lane cursor: 1 row, 0 done, <0 error. */
int query_util_lane_step(sqlite3 *db, struct query_cursor_lane *c,
                         struct query_err *e) {
  int rc = sqlite3_step(c->s);
  if (rc == SQLITE_ROW) {
    c->ts = sqlite3_column_int64(c->s, 0);
    c->end = c->ts + sqlite3_column_int64(c->s, 1);
    return 1;
  }
  return rc == SQLITE_DONE ? 0 : query_util_db_fail(e, db);
}
