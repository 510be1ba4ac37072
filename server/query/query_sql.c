/* query_sql.c -- POST /db/{name}/_search: the guarded SQL endpoint and
 * the table schema (see query.h).
 *
 * The answer is written as JSON text straight into the caller's buffer,
 * value by value, so its limits are counted on what is sent: the budget
 * (QUERY_SQL_MAX_BYTES of JSON) and the deadline (QUERY_SQL_TIMEOUT_MS of
 * wall clock, inside SQLite through the progress handler and outside it
 * between values) are checked after every value.  Whichever is reached
 * first ends the rows with "truncated": true and a "reason"; the memory
 * held is the budget plus one value.
 */
#include "query_priv.h"
#include "store_vtab.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The most any one value may hold (SQLITE_LIMIT_LENGTH), lowered for wide
 * rows so that one row of values never holds more than half the budget
 * (blobs double as hex): SQLite makes every value of a row before the
 * first is read, so 40 columns of 16 MB would be 640 MB. */
#define QUERY_SQL_MAX_VALUE (16 * 1024 * 1024)

struct query_guard {
  int64_t deadline_ns;
  bool timed_out;
  char denied[96]; /* what the authorizer refused */
  bool stepping;   /* the one statement passed and runs */
  int ncol;        /* columns of the statement */
};

static const char *query_sql_action_name(int action) {
  switch (action) {
  case SQLITE_ATTACH:
    return "ATTACH";
  case SQLITE_DETACH:
    return "DETACH";
  case SQLITE_PRAGMA:
    return "PRAGMA";
  case SQLITE_INSERT:
    return "INSERT";
  case SQLITE_UPDATE:
    return "UPDATE";
  case SQLITE_DELETE:
    return "DELETE";
  case SQLITE_TRANSACTION:
    return "a transaction";
  case SQLITE_RECURSIVE:
    return "a recursive WITH";
  default:
    return "this statement";
  }
}

/* Only reads, SELECTs, harmless functions and the table-valued pragma
 * functions pass.  pragma_table_info(...) and its kind (SQLite has them only
 * for pragmas that return rows and change nothing) prepare their PRAGMA
 * while the statement runs: the only statements prepared then. */
static int query_sql_authorize(void *ud, int action, const char *a1,
                               const char *a2, const char *dbname,
                               const char *trigger) {
  struct query_guard *g = ud;
  if (action == SQLITE_SELECT || action == SQLITE_READ)
    return SQLITE_OK;
  /* a pragma function's table is made as if its schema row were written;
   * a real write is no read-only statement, refused after the prepare */
  if (action == SQLITE_UPDATE && a1 && strcmp(a1, "sqlite_master") == 0)
    return SQLITE_OK;
  if (action == SQLITE_PRAGMA && g->stepping)
    return SQLITE_OK;
  if (action == SQLITE_FUNCTION && a2 &&
      strcasecmp(a2, "load_extension") != 0 &&
      strcasecmp(a2, "fts3_tokenizer") != 0)
    return SQLITE_OK;
  if (!g->denied[0]) {
    if (action == SQLITE_FUNCTION)
      snprintf(g->denied, sizeof g->denied, "function %s()", a2 ? a2 : "?");
    else
      snprintf(g->denied, sizeof g->denied, "%s",
               query_sql_action_name(action));
  }
  return SQLITE_DENY;
}

static int query_sql_progress(void *ud) {
  struct query_guard *g = ud;
  if (util_now_ns() > g->deadline_ns) {
    g->timed_out = true;
    return 1;
  }
  return 0;
}

/* The first word of sql (after blanks and comments), upper-cased into buf;
 * "" when there is none. */
static const char *query_sql_verb(const char *sql, char *buf, size_t n) {
  const char *p = sql;
  size_t k = 0;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (p[0] == '-' && p[1] == '-')
      p += strcspn(p, "\n");
    else if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr(p + 2, "*/");
      p = end ? end + 2 : p + strlen(p);
    } else
      break;
  }
  while (k + 1 < n && isalpha((unsigned char)p[k])) {
    buf[k] = (char)toupper((unsigned char)p[k]);
    k++;
  }
  buf[k] = '\0';
  return buf;
}

/* The 403 of a statement refused, `what` naming it. */
static int query_sql_refused(struct query_err *e, const char *what) {
  return query_fail(e, -EPERM, 403, "refused",
                    "%s is not allowed: the SQL endpoint runs one read-only "
                    "SELECT",
                    what);
}

/* The 403 of a refused statement: named by its first word, unless that is
 * a SELECT or WITH, whose refused part the authorizer named. */
static int query_sql_refuse(const char *sql, const struct query_guard *g,
                            struct query_err *e) {
  char verb[16];
  const char *what = query_sql_verb(sql, verb, sizeof verb);
  if (!*what || strcmp(what, "SELECT") == 0 || strcmp(what, "WITH") == 0 ||
      strcmp(what, "VALUES") == 0)
    what = g->denied[0] ? g->denied : "writing";
  return query_sql_refused(e, what);
}

/* The verb that writes (INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP,
 * ALTER) sql starts with, after a WITH clause the first such word; NULL
 * when there is none.  A write into the read-only virtual table `slice`
 * fails at the prepare, before the authorizer could name it. */
static const char *query_sql_write_verb(const char *sql) {
  static const char *const verbs[] = {"INSERT", "UPDATE", "DELETE", "REPLACE",
                                      "CREATE", "DROP",   "ALTER"};
  char word[16];
  const char *first = query_sql_verb(sql, word, sizeof word);
  int with = strcmp(first, "WITH") == 0;
  for (const char *p = sql; *p; p++) {
    if (!isalpha((unsigned char)*p) ||
        (p > sql && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
      continue;
    query_sql_verb(p, word, sizeof word);
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
      if (strcmp(word, verbs[i]) == 0)
        return verbs[i];
    if (!with)
      return NULL; /* the first word is no write */
  }
  return NULL;
}

/* The error of a failed prepare or step on the SQL endpoint. */
static int query_sql_fail(sqlite3 *db, const char *sql,
                          const struct query_guard *g, struct query_err *e) {
  if (g->denied[0])
    return query_sql_refuse(sql, g, e);
  const char *write = query_sql_write_verb(sql);
  if (write)
    return query_sql_refused(e, write);
  if (g->timed_out)
    return query_fail(e, -EINVAL, 400, "sql_timeout",
                      "the query ran longer than %d ms and was stopped",
                      QUERY_SQL_TIMEOUT_MS);
  if (sqlite3_errcode(db) == SQLITE_TOOBIG) /* answered as truncated */
    return query_fail(e, -EINVAL, 400, "sql_too_big",
                      "a value is larger than %d bytes, the most one value "
                      "may hold when a row has %d column%s (%d MiB of "
                      "answer)",
                      sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1), g->ncol,
                      g->ncol == 1 ? "" : "s",
                      (int)(QUERY_SQL_MAX_BYTES >> 20));
  return query_fail(e, -EINVAL, 400, "sql_error", "%s", sqlite3_errmsg(db));
}

/* Refuses anything after the first statement but comments and ';'. */
static int query_sql_single(sqlite3 *db, const char *tail,
                            struct query_err *e) {
  while (tail && *tail) {
    sqlite3_stmt *s = NULL;
    const char *next = NULL;
    int rc = sqlite3_prepare_v2(db, tail, -1, &s, &next);
    sqlite3_finalize(s);
    if (rc != SQLITE_OK || s)
      return query_fail(e, -EINVAL, 400, "sql_error",
                        "the SQL endpoint runs exactly one statement; remove "
                        "everything after the first ';'");
    if (next == tail)
      break;
    tail = next;
  }
  return 0;
}

/* Appends column i of s's current row as a JSON value: integers beyond
 * 2^53 as strings, non-finite reals as null, blobs as "x'<hex>'". */
static void query_sql_value(struct sbuf *b, sqlite3_stmt *s, int i) {
  static const char hex[] = "0123456789abcdef";
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_INTEGER: {
    int64_t v = sqlite3_column_int64(s, i);
    bool safe = v <= 9007199254740992LL && v >= -9007199254740992LL;
    if (!safe)
      sbuf_addc(b, '"');
    sbuf_add_i64(b, v);
    if (!safe)
      sbuf_addc(b, '"');
    break;
  }
  case SQLITE_FLOAT: {
    double d = sqlite3_column_double(s, i);
    if (isfinite(d))
      sbuf_printf(b, "%.17g", d);
    else
      sbuf_adds(b, "null");
    break;
  }
  case SQLITE_TEXT:
    sbuf_add_json_str(b, (const char *)sqlite3_column_text(s, i),
                      (size_t)sqlite3_column_bytes(s, i));
    break;
  case SQLITE_BLOB: {
    const unsigned char *p = sqlite3_column_blob(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    char chunk[4096];
    sbuf_adds(b, "\"x'");
    for (size_t k = 0; k < n;) {
      size_t m = 0;
      for (; k < n && m < sizeof chunk; k++) {
        chunk[m++] = hex[p[k] >> 4];
        chunk[m++] = hex[p[k] & 15];
      }
      sbuf_add(b, chunk, m);
    }
    sbuf_adds(b, "'\"");
    break;
  }
  default:
    sbuf_adds(b, "null");
  }
}

/* The least JSON bytes column i of the current row takes. */
static size_t query_sql_value_min(sqlite3_stmt *s, int i) {
  int type = sqlite3_column_type(s, i); /* before _bytes() converts */
  if (type == SQLITE_BLOB)
    return 2 * (size_t)sqlite3_column_bytes(s, i) + 5;
  if (type == SQLITE_TEXT)
    return (size_t)sqlite3_column_bytes(s, i) + 2;
  return 1;
}

/* Writes the rows of s as the JSON array "rows" and the closing fields.
 * Returns 0, or a negative code with e filled when the statement failed
 * before the first row (a failure after it ends the rows, marked
 * truncated). */
static int query_sql_rows(sqlite3 *db, sqlite3_stmt *s, const char *sql,
                          struct query_guard *g, struct sbuf *b,
                          struct query_err *e) {
  int ncol = sqlite3_column_count(s), step = SQLITE_DONE, nrows = 0;
  size_t start = b->len;
  char reason[sizeof e->detail + 48];
  reason[0] = '\0';
  g->ncol = ncol;
  g->stepping = true;
  size_t per_value = QUERY_SQL_MAX_BYTES / 2 / (size_t)(ncol ? ncol : 1);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH,
                per_value < QUERY_SQL_MAX_VALUE ? (int)per_value
                                                : QUERY_SQL_MAX_VALUE);
  sbuf_adds(b, "{\"columns\":[");
  for (int i = 0; i < ncol; i++) {
    const char *name = sqlite3_column_name(s, i);
    if (i)
      sbuf_addc(b, ',');
    sbuf_add_json_str(b, name ? name : "", name ? strlen(name) : 0);
  }
  sbuf_adds(b, "],\"rows\":[");
  while (!reason[0] && (step = sqlite3_step(s)) == SQLITE_ROW) {
    size_t row = b->len;
    if (nrows == QUERY_SQL_MAX_ROWS) {
      snprintf(reason, sizeof reason,
               "more than %d rows: the first %d are shown", QUERY_SQL_MAX_ROWS,
               QUERY_SQL_MAX_ROWS);
      break;
    }
    sbuf_adds(b, nrows ? ",[" : "[");
    for (int i = 0; i < ncol && !reason[0]; i++) {
      if (i)
        sbuf_addc(b, ',');
      bool fits =
          b->len - start + query_sql_value_min(s, i) <= QUERY_SQL_MAX_BYTES;
      if (fits)
        query_sql_value(b, s, i);
      if (!fits || b->len - start > QUERY_SQL_MAX_BYTES)
        snprintf(reason, sizeof reason,
                 "the answer would be larger than %d MiB of JSON: the first "
                 "%d rows are shown",
                 (int)(QUERY_SQL_MAX_BYTES >> 20), nrows);
      else if (util_now_ns() > g->deadline_ns)
        snprintf(reason, sizeof reason,
                 "the query and its answer took longer than %d ms: the "
                 "first %d rows are shown",
                 QUERY_SQL_TIMEOUT_MS, nrows);
    }
    if (reason[0]) {
      b->len = row; /* whole rows only */
      break;
    }
    sbuf_addc(b, ']');
    nrows++;
  }
  if (!reason[0] && step != SQLITE_DONE) {
    int rc = query_sql_fail(db, sql, g, e);
    if (nrows == 0 && sqlite3_errcode(db) != SQLITE_TOOBIG) {
      b->len = start;
      return rc;
    }
    snprintf(reason, sizeof reason, "%s: the first %d rows are shown",
             e->detail, nrows);
  }
  sbuf_adds(b, "],\"truncated\":");
  sbuf_adds(b, reason[0] ? "true" : "false");
  if (reason[0]) {
    sbuf_adds(b, ",\"reason\":");
    sbuf_add_json_str(b, reason, strlen(reason));
  }
  sbuf_addc(b, '}');
  return 0;
}

int query_sql(const char *path, const char *sql, int timeout_ms,
              struct sbuf *out, struct query_err *e) {
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  const char *tail = NULL;
  struct query_guard g = {0};
  int rc;
  g.deadline_ns = util_now_ns() + (int64_t)timeout_ms * 1000000;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    rc = query_fail(e, -EIO, 500, "store_error", "cannot open the store: %s",
                    db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return rc;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  store_vtab_register(db);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, QUERY_SQL_MAX_VALUE);
  sqlite3_busy_timeout(db, 2000);
  /* No memory map: its pages would count again in the server's RSS. */
  sqlite3_exec(db, "PRAGMA mmap_size=0; PRAGMA cache_size=-8192", NULL, NULL,
               NULL);
  sqlite3_set_authorizer(db, query_sql_authorize, &g);
  sqlite3_progress_handler(db, 1000, query_sql_progress, &g);
  rc = sqlite3_prepare_v2(db, sql, -1, &s, &tail);
  if (rc != SQLITE_OK) {
    rc = query_sql_fail(db, sql, &g, e);
  } else if (!s) {
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'query' holds no SQL statement");
  } else if (!sqlite3_stmt_readonly(s)) {
    rc = query_sql_refuse(sql, &g, e);
  } else {
    rc = query_sql_single(db, tail, e);
  }
  if (rc == 0)
    rc = query_sql_rows(db, s, sql, &g, out, e);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rc;
}
int query_table_schema(sqlite3 *db, json_t **out, struct query_err *e) {
  sqlite3_stmt *s = query_stmt(
      db,
      "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
      "AND name NOT LIKE 'sqlite_%' ORDER BY name",
      e);
  sqlite3_stmt *c = query_stmt(
      db, "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid", e);
  int rc = SQLITE_DONE;
  if (!s || !c)
    return -EIO;
  json_t *tables = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    json_t *cols = json_array();
    sqlite3_bind_text(c, 1, (const char *)sqlite3_column_text(s, 0), -1,
                      SQLITE_TRANSIENT);
    while (sqlite3_step(c) == SQLITE_ROW)
      json_array_append_new(cols, json_pack("{s:o, s:o}", "name",
                                            query_util_col_text(c, 0), "type",
                                            query_util_col_text(c, 1)));
    sqlite3_reset(c);
    json_array_append_new(
        tables, json_pack("{s:o, s:o, s:o}", "name", query_util_col_text(s, 0),
                          "type", query_util_col_text(s, 1), "columns", cols));
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    json_decref(tables);
    return query_util_db_fail(e, db);
  }
  *out = json_pack("{s:o}", "tables", tables);
  return 0;
}
