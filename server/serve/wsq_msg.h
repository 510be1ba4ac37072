/* wsq_msg.h -- the message layer of the queries over the WebSocket (wsq.h):
 * a client's JSON text message parsed into a struct wsq_req, and the
 * messages sent back, a binary frame (wsbin.h) or a JSON text.  No threads
 * and no connections here: the scheduler (wsq.c) runs the requests.
 *
 * Ownership: a wsq_req owns its arrays and strings (wsq_msg_req_clear()
 * frees them; a struct copy moves them).  A wsq_msg owns its frame, text
 * and group (wsq_msg_free()).
 */
#ifndef NEX_WSQ_MSG_H
#define NEX_WSQ_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct query_err;
struct wsbin;
struct wsq_job;

/* A request's group name may not be longer. */
#define WSQ_MAX_GROUP 64

enum wsq_msg_type { WSQ_MSG_QUERY, WSQ_MSG_CANCEL, WSQ_MSG_STATS };
enum wsq_kind { WSQ_SLICES, WSQ_COUNTERS, WSQ_API };

/* A parsed client message. */
struct wsq_req {
  enum wsq_msg_type type;
  bool has_id;
  uint32_t id;
  char *group; /* a query's group, or the group a cancel names; or NULL */
  /* WSQ_MSG_CANCEL: the request ids it names */
  uint32_t *ids;
  size_t n_ids;
  /* WSQ_MSG_QUERY */
  enum wsq_kind kind;
  bool high;        /* a small lookup (event, device-profile) */
  bool replace;     /* cancel the other requests of its group first */
  bool progressive; /* a window in two phases: coarse, then final */
  bool deflate;     /* compress its frames */
  int64_t *tracks;  /* windows */
  size_t n_tracks;
  int64_t start, end;
  int px;
  char *path;  /* WSQ_API: the REST path and its query arguments */
  char **args; /* key, value pairs */
  size_t n_args;
};

/* Parses one whole client message into *r.  Returns 0, or a negative
 * errno-style code with e set to the error to answer (r->has_id and r->id
 * say which request it answers; free r all the same). */
int wsq_msg_parse(const char *text, size_t len, struct wsq_req *r,
                  struct query_err *e);
/* Frees what r holds and zeroes it. */
void wsq_msg_req_clear(struct wsq_req *r);
/* The value of query argument `key` of the wsq_req `req`, or NULL: the
 * argument callback of an api_request (api.h). */
const char *wsq_msg_arg(void *req, const char *key);

/* A message: posted by a worker (job set), then waiting to be written on
 * its connection.  Holds a frame, or a text with LWS_PRE bytes of headroom,
 * or nothing (a terminal post of a job without an answer). */
struct wsq_msg {
  struct wsq_msg *next;
  uint64_t seq;        /* order of queueing, over every connection */
  struct wsq_job *job; /* posts only */
  bool terminal;       /* posts only */
  bool has_id, coarse;
  bool final; /* the last answer to a request */
  uint32_t id;
  char *group;
  struct wsbin *bin;
  unsigned char *text; /* LWS_PRE + len bytes */
  size_t len;
};

/* Frees m and what it holds.  NULL allowed. */
void wsq_msg_free(struct wsq_msg *m);
/* The bytes m will take on the wire (for back-pressure). */
size_t wsq_msg_size(const struct wsq_msg *m);
/* {"type":"result","id":ID,"status":S,"data":DATA}, DATA the len bytes of
 * JSON at data (null when data is NULL).  The caller owns the message. */
struct wsq_msg *wsq_msg_result(bool has_id, uint32_t id, int status,
                               const char *data, size_t len);
/* A result whose data is {"error": e->code, "detail": e->detail}, with
 * e->status.  The caller owns the message. */
struct wsq_msg *wsq_msg_error(bool has_id, uint32_t id,
                              const struct query_err *e);
/* The JSON text `json` as the answer to request id.  The caller owns the
 * message. */
struct wsq_msg *wsq_msg_text(uint32_t id, const char *json);

#endif
