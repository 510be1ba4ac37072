/* api.h -- routing and REST handlers of /api/v1/ (doc/api.md), independent
 * of the HTTP library: http.c fills a struct api_request and sends the
 * struct api_response.
 *
 * Ownership: the request is borrowed.  The response (its malloc'd body and
 * filename, its stream) belongs to the caller, who calls api_response_free()
 * exactly once: it frees the body and filename and closes the stream.  A
 * caller that keeps the body (http.c hands it to the HTTP library) sets
 * rs->body to NULL first.
 */
#ifndef NEX_API_H
#define NEX_API_H

#include "util.h"

#include <sqlite3.h>
#include <stddef.h>

struct app;

struct api_request {
  const char *method; /* "GET", "HEAD", "POST", ... */
  const char *path;   /* decoded URL path, starting with "/api/" */
  /* A query-string argument, or NULL when absent. */
  const char *(*arg)(void *ctx, const char *key);
  void *arg_ctx;
  const char *body; /* POST body (NUL-terminated), or NULL */
  size_t body_len;
  /* A request header (same ctx as arg), or NULL when absent; the callback
   * is NULL for callers that are not HTTP (no header checks then). */
  const char *(*header)(void *ctx, const char *name);
};

/* A streamed body: next() appends the next piece and returns 1 if more
 * follows, 0 after the last piece, <0 on error (the connection is then cut:
 * the status line has been sent). */
struct api_stream {
  int (*next)(void *ctx, struct sbuf *out);
  void (*close)(void *ctx);
  void *ctx;
};

struct api_response {
  int status;
  const char *content_type; /* static string */
  char *body;               /* malloc'd, or NULL when streamed */
  size_t len;
  struct api_stream stream; /* next != NULL: the body is streamed */
  const char *allow;        /* 405: the Allow header value */
  char *filename;           /* attachment name, or NULL (malloc'd) */
  int retry_after;          /* > 0: the Retry-After header, in seconds */
};

/* Handles one API request.  Never fails: errors are answers with a status
 * and a JSON {"error", "detail"} body. */
void api_handle(struct app *a, const struct api_request *rq,
                struct api_response *rs);
/* The same, reading through the caller's connection `db` (a read-only
 * store connection the caller holds and keeps; the WebSocket workers of
 * wsq.c).  /profile, /db and /export, which need the app's pool itself,
 * answer 404 here. */
void api_handle_db(struct app *a, sqlite3 *db, const struct api_request *rq,
                   struct api_response *rs);
/* Frees the body and filename and closes the stream, if any. */
void api_response_free(struct api_response *rs);
/* The 409 body {"error":"stale","detail",...,"generation":cur} for a
 * request made with store generation `want` (text of JSON) while the store
 * is generation `cur`, or NULL when they are the same: the ids the client
 * holds may mean other things now.  The caller frees the text. */
char *api_stale(const char *want, const char *cur);

/* Fills rs with an error answer {"error": code, "detail": detail}. */
void api_error(struct api_response *rs, int status, const char *code,
               const char *detail);

#endif
