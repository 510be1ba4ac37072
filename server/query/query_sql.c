/* query_sql.c -- POST /db/{name}/_search: the guarded SQL endpoint and
 * the table schema (see query.h).
 */
#include "query_priv.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Bounds on what one answer of the SQL endpoint may hold, besides
 * QUERY_SQL_MAX_ROWS: any one value (SQLITE_LIMIT_LENGTH), and all the text
 * and blob bytes of the rows (then "truncated"). */
#define QUERY_SQL_MAX_VALUE (16 * 1024 * 1024)
#define QUERY_SQL_MAX_BYTES ((size_t)64 * 1024 * 1024)

struct query_guard {
  int64_t deadline_ns;
  bool timed_out;
  char denied[96]; /* what the authorizer refused */
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

/* Only reads, SELECTs and harmless functions pass. */
static int query_sql_authorize(void *ud, int action, const char *a1,
                               const char *a2, const char *dbname,
                               const char *trigger) {
  struct query_guard *g = ud;
  if (action == SQLITE_SELECT || action == SQLITE_READ)
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

/* The error of a failed prepare or step on the SQL endpoint. */
static int query_sql_fail(sqlite3 *db, const struct query_guard *g,
                          struct query_err *e) {
  if (g->denied[0])
    return query_fail(e, -EPERM, 403, "refused",
                      "%s is not allowed: the SQL endpoint runs one read-only "
                      "SELECT",
                      g->denied);
  if (g->timed_out)
    return query_fail(e, -EINVAL, 400, "sql_timeout",
                      "the query ran longer than %d ms and was stopped",
                      QUERY_SQL_TIMEOUT_MS);
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

int query_sql(const char *path, const char *sql, json_t **out,
              struct query_err *e) {
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  const char *tail = NULL;
  struct query_guard g = {0};
  int rc;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    rc = query_fail(e, -EIO, 500, "store_error", "cannot open the store: %s",
                    db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return rc;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, QUERY_SQL_MAX_VALUE);
  sqlite3_busy_timeout(db, 2000);
  sqlite3_exec(db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
  sqlite3_set_authorizer(db, query_sql_authorize, &g);
  g.deadline_ns = util_now_ns() + (int64_t)QUERY_SQL_TIMEOUT_MS * 1000000;
  sqlite3_progress_handler(db, 1000, query_sql_progress, &g);
  rc = sqlite3_prepare_v2(db, sql, -1, &s, &tail);
  if (rc != SQLITE_OK) {
    rc = query_sql_fail(db, &g, e);
  } else if (!s) {
    rc = query_fail(e, -EINVAL, 400, "bad_parameter",
                    "field 'query' holds no SQL statement");
  } else if (!sqlite3_stmt_readonly(s)) {
    rc = query_fail(e, -EPERM, 403, "refused",
                    "only read-only SELECT statements are allowed");
  } else {
    rc = query_sql_single(db, tail, e);
  }
  if (rc == 0) {
    int ncol = sqlite3_column_count(s), step;
    json_t *cols = json_array(), *rows = json_array();
    bool truncated = false;
    size_t bytes = 0;
    for (int i = 0; i < ncol; i++)
      json_array_append_new(cols, query_json_text(sqlite3_column_name(s, i)));
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      if (json_array_size(rows) == QUERY_SQL_MAX_ROWS ||
          bytes > QUERY_SQL_MAX_BYTES) {
        truncated = true;
        break;
      }
      json_t *row = json_array();
      for (int i = 0; i < ncol; i++) {
        int type = sqlite3_column_type(s, i);
        json_array_append_new(row, query_util_col_any(s, i));
        if (type == SQLITE_TEXT || type == SQLITE_BLOB)
          bytes += (size_t)sqlite3_column_bytes(s, i);
      }
      json_array_append_new(rows, row);
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
      rc = query_sql_fail(db, &g, e);
      json_decref(cols);
      json_decref(rows);
    } else {
      *out = json_pack("{s:o, s:o, s:b}", "columns", cols, "rows", rows,
                       "truncated", truncated);
    }
  }
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
