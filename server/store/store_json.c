/* store_json.c -- nex_json_member(json, label).  See store_json.h. */
#include "store_json.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Longest integer answered by the scan (int64 holds every 18 digits). */
#define STORE_JSON_DIGITS 18

/* What the scan makes of the text. */
enum store_json_scan {
  STORE_JSON_FOUND,   /* the member, answered */
  STORE_JSON_MISSING, /* no such member: NULL */
  STORE_JSON_ASK      /* anything else: json_extract answers */
};

static const unsigned char *store_json_ws(const unsigned char *p,
                                          const unsigned char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* Past the string whose opening quote is at p; NULL when it is cut.
 * *esc: whether it holds a backslash. */
static const unsigned char *
store_json_str(const unsigned char *p, const unsigned char *end, bool *esc) {
  *esc = false;
  for (p++; p < end; p++) {
    if (*p == '\\') {
      *esc = true;
      if (++p == end)
        return NULL;
    } else if (*p == '"') {
      return p + 1;
    }
  }
  return NULL;
}

/* Past the value at p (a string, an object or array with what it holds,
 * or a bare token); NULL when it is cut. */
static const unsigned char *store_json_skip(const unsigned char *p,
                                            const unsigned char *end) {
  bool esc;
  if (*p == '"')
    return store_json_str(p, end, &esc);
  int depth = 0;
  while (p < end) {
    if (*p == '"') {
      if (!(p = store_json_str(p, end, &esc)))
        return NULL;
      continue;
    }
    if (*p == '{' || *p == '[') {
      depth++;
    } else if (*p == '}' || *p == ']') {
      if (depth == 0)
        return p;
      if (--depth == 0)
        return p + 1;
    } else if (depth == 0 && (*p == ',' || *p == ' ' || *p == '\t' ||
                              *p == '\n' || *p == '\r')) {
      return p;
    }
    p++;
  }
  return depth == 0 ? p : NULL;
}

/* Whether v[0, n) is an integer the scan answers (at most
 * STORE_JSON_DIGITS digits, no leading zero): then *x is it. */
static bool store_json_digits(const unsigned char *v, size_t n, int64_t *x) {
  size_t neg = n && *v == '-', digits = n - neg;
  if (digits == 0 || digits > STORE_JSON_DIGITS ||
      (v[neg] == '0' && digits > 1))
    return false;
  int64_t r = 0;
  for (size_t i = neg; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return false;
    r = r * 10 + (v[i] - '0');
  }
  *x = neg ? -r : r;
  return true;
}

/* Answers the value v[0, n) of the member found, when the scan can. */
static enum store_json_scan store_json_value(sqlite3_context *ctx,
                                             const unsigned char *v, size_t n) {
  if (n && *v == '"') {
    bool esc;
    if (store_json_str(v, v + n, &esc) != v + n || esc)
      return STORE_JSON_ASK;
    sqlite3_result_text(ctx, (const char *)v + 1, (int)n - 2, SQLITE_TRANSIENT);
    return STORE_JSON_FOUND;
  }
  if (n == 4 && memcmp(v, "true", 4) == 0) {
    sqlite3_result_int(ctx, 1);
    return STORE_JSON_FOUND;
  }
  if (n == 5 && memcmp(v, "false", 5) == 0) {
    sqlite3_result_int(ctx, 0);
    return STORE_JSON_FOUND;
  }
  if (n == 4 && memcmp(v, "null", 4) == 0) {
    sqlite3_result_null(ctx);
    return STORE_JSON_FOUND;
  }
  int64_t x;
  if (!store_json_digits(v, n, &x))
    return STORE_JSON_ASK;
  sqlite3_result_int64(ctx, x);
  return STORE_JSON_FOUND;
}

/* Looks for member label (ln bytes) of the object at p[0, end): found,
 * its value is (*v)[0, *vn). */
static enum store_json_scan store_json_scan(const unsigned char *p,
                                            const unsigned char *end,
                                            const char *label, size_t ln,
                                            const unsigned char **v,
                                            size_t *vn) {
  p = store_json_ws(p, end);
  if (p == end || *p++ != '{')
    return STORE_JSON_ASK;
  for (bool first = true;; first = false) {
    p = store_json_ws(p, end);
    if (p < end && *p == '}' && first)
      return store_json_ws(p + 1, end) == end ? STORE_JSON_MISSING
                                              : STORE_JSON_ASK;
    bool esc;
    const unsigned char *k = p, *ke;
    if (p == end || *p != '"' || !(ke = store_json_str(p, end, &esc)) || esc)
      return STORE_JSON_ASK;
    p = store_json_ws(ke, end);
    if (p == end || *p++ != ':')
      return STORE_JSON_ASK;
    p = store_json_ws(p, end);
    const unsigned char *vb = p;
    if (p == end || !(p = store_json_skip(p, end)) || p == vb)
      return STORE_JSON_ASK;
    const unsigned char *vend = p;
    p = store_json_ws(p, end);
    if (p == end || (*p != ',' && *p != '}'))
      return STORE_JSON_ASK;
    if ((size_t)(ke - k) == ln + 2 && memcmp(k + 1, label, ln) == 0) {
      /* the first of duplicates, as json_extract; what follows is not
       * checked */
      *v = vb;
      *vn = (size_t)(vend - vb);
      return STORE_JSON_FOUND;
    }
    if (*p++ == '}')
      return store_json_ws(p, end) == end ? STORE_JSON_MISSING : STORE_JSON_ASK;
  }
}

/* json_extract's own answer (or error) for json and label. */
static void store_json_ask(sqlite3_context *ctx, sqlite3_value *json,
                           sqlite3_value *label) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      db, "SELECT json_extract(?1, '$.\"' || ?2 || '\"')", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_value(st, 1, json);
    sqlite3_bind_value(st, 2, label);
    rc = sqlite3_step(st);
  }
  if (rc == SQLITE_ROW)
    sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
  else
    sqlite3_result_error(ctx, sqlite3_errmsg(db), -1);
  sqlite3_finalize(st);
}

static void store_json_member(sqlite3_context *ctx, int argc,
                              sqlite3_value **argv) {
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(ctx); /* as json_extract */
    return;
  }
  const unsigned char *j = sqlite3_value_text(argv[0]), *v;
  const char *label = (const char *)sqlite3_value_text(argv[1]);
  int n = sqlite3_value_bytes(argv[0]);
  size_t vn;
  enum store_json_scan r =
      j && label && sqlite3_value_type(argv[0]) == SQLITE_TEXT &&
              !strpbrk(label, "\"\\.[$")
          ? store_json_scan(j, j + n, label, strlen(label), &v, &vn)
          : STORE_JSON_ASK;
  if (r == STORE_JSON_FOUND)
    r = store_json_value(ctx, v, vn);
  if (r == STORE_JSON_MISSING)
    sqlite3_result_null(ctx);
  else if (r == STORE_JSON_ASK)
    store_json_ask(ctx, argv[0], argv[1]);
}

enum store_json_num store_json_real(const char *text, size_t len,
                                    const char *label, double *x) {
  if (!text)
    return STORE_JSON_NULL;
  const unsigned char *p = (const unsigned char *)text, *v;
  size_t vn;
  if (strpbrk(label, "\"\\.[$"))
    return STORE_JSON_OTHER;
  switch (store_json_scan(p, p + len, label, strlen(label), &v, &vn)) {
  case STORE_JSON_MISSING:
    return STORE_JSON_NULL;
  case STORE_JSON_FOUND:
    break;
  default:
    return STORE_JSON_OTHER;
  }
  if (vn == 4 && memcmp(v, "null", 4) == 0)
    return STORE_JSON_NULL;
  if (vn >= 2 && *v == '"') { /* the text of a string, read by CAST */
    v++;
    vn -= 2;
  }
  /* both the integer and the text of one convert to the double nearest
   * to it */
  int64_t i;
  if (!store_json_digits(v, vn, &i))
    return STORE_JSON_OTHER;
  *x = (double)i;
  return STORE_JSON_NUM;
}

int store_json_register(sqlite3 *db) {
  return sqlite3_create_function(db, "nex_json_member", 2,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                 store_json_member, NULL, NULL);
}
