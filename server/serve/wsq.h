/* wsq.h -- time-range queries over the WebSocket: the client sends
 * requests with its own ids (slices, counters, search, event,
 * device-profile) and gets the answers on the same connection, window
 * answers first coarse then final, as binary frames (wsbin.h); a request
 * can be cancelled, by id or by replacing its group (doc/api.md, "Queries
 * over /ws").
 *
 * Threads: ws.c's service thread calls wsq_service() and every wsq_conn_*
 * function; a small pool of worker threads runs the queries, each on its
 * own read-only connection to the current store.  Workers never touch a
 * connection: they post answers to a list and wake the service thread with
 * lws_cancel_service(); the service thread queues the answers per
 * connection and writes one per WRITEABLE.  Cancelling sets the request's
 * flag, which the worker's SQLite progress handler reads, so the query
 * stops at once; an answer of a cancelled request is never sent.
 *
 * Back-pressure: a connection has at most WSQ_MAX_JOBS requests in work and
 * WSQ_MAX_QUEUED bytes of answers waiting; beyond either the server stops
 * reading it until it drains.  A final answer drops the coarse answer of
 * the same request if it still waits, and cancelling drops waiting answers.
 *
 * Memory: the unread answers of a connection (what waits, and what
 * libwebsockets holds of the last write) stay within WSQ_MAX_QUEUED, those
 * of all connections within WSQ_MAX_QUEUED_TOTAL, each plus the one answer
 * being queued: past either, the oldest unread answers are dropped first
 * (a dropped final answer becomes a 503 "dropped" error, so the client
 * knows).  While the total is over its cap, every connection with more
 * than WSQ_MAX_QUEUED / 32 unread gets no more of its queries run.  When a
 * connection that held many answers closes, the freed memory is given
 * back to the system (malloc_trim).  The environment variables
 * NEX_WSQ_CONN_BYTES and NEX_WSQ_TOTAL_BYTES replace the two caps (tests).
 *
 * Ownership: the app and the lws context are borrowed and must outlive the
 * wsq.  A struct wsq_conn belongs to the wsq: it is freed after
 * wsq_conn_close(), once the last of its requests has ended.
 */
#ifndef NEX_WSQ_H
#define NEX_WSQ_H

#include <stdbool.h>
#include <stddef.h>

struct app;
struct lws;
struct lws_context;
struct wsq;
struct wsq_conn;

#define WSQ_WORKERS 3
#define WSQ_MAX_JOBS 64
#define WSQ_MAX_QUEUED (32u << 20)
#define WSQ_MAX_QUEUED_TOTAL (128u << 20)
/* A request message may not be longer. */
#define WSQ_MAX_MESSAGE 65536
/* Progressive windows: a first answer at px / WSQ_COARSE_DIV, for requests
 * of at least WSQ_COARSE_MIN_PX pixels. */
#define WSQ_COARSE_DIV 16
#define WSQ_COARSE_MIN_PX 256

/* Starts the worker threads.  Returns 0, or a negative errno-style code
 * with *cause set (malloc'd). */
int wsq_start(struct app *a, struct lws_context *ctx, struct wsq **out,
              char **cause);
/* Stops the workers: requests in work are cancelled and end.  Call after
 * the service thread stopped and before lws_context_destroy(). */
void wsq_stop(struct wsq *q);
/* Frees q (after lws_context_destroy(), which closes every connection).
 * NULL allowed. */
void wsq_free(struct wsq *q);

/* Service thread only. */

/* Takes the answers the workers posted (on LWS_CALLBACK_EVENT_WAIT_CANCELLED)
 * and asks for WRITEABLE where some wait. */
void wsq_service(struct wsq *q);
/* A new WebSocket (LWS_CALLBACK_ESTABLISHED). */
struct wsq_conn *wsq_conn_new(struct wsq *q, struct lws *wsi);
/* A piece of a client message (LWS_CALLBACK_RECEIVE); `last` marks the
 * message's end.  Answers malformed requests itself.  Returns 0. */
int wsq_conn_receive(struct wsq_conn *c, const void *in, size_t len, bool last,
                     bool binary);
/* Whether answers wait to be written. */
bool wsq_conn_pending(const struct wsq_conn *c);
/* A WRITEABLE turn came: libwebsockets has written what earlier writes
 * left (call first in every LWS_CALLBACK_SERVER_WRITEABLE). */
void wsq_conn_flushed(struct wsq_conn *c);
/* Writes the next answer, if any (LWS_CALLBACK_SERVER_WRITEABLE), and asks
 * for WRITEABLE again if more wait.  Returns 0, or -1 if the write failed
 * (close the connection). */
int wsq_conn_write(struct wsq_conn *c);
/* The connection closed: cancels its requests and drops its answers.  NULL
 * allowed. */
void wsq_conn_close(struct wsq_conn *c);

#endif
