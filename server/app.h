/* app.h -- the daemon's shared state: what the ingest thread publishes and
 * the HTTP/WebSocket threads read.
 *
 * One struct app per process.  All functions are thread-safe.  The ingest
 * side calls app_set_*; the serving side reads snapshots.  ws.c registers a
 * listener to be told when something changed (it then wakes its service
 * thread with lws_cancel_service()).
 *
 * Ownership: strings passed in are copied; snapshots returned are owned by
 * the caller (free with app_snapshot_free / json_decref as stated).
 */
#ifndef NEX_APP_H
#define NEX_APP_H

#include <stdint.h>
#include <jansson.h>

#include "ingest.h"

struct store_pool;
struct annot;

enum app_phase { APP_LOADING = 0, APP_READY, APP_FAILED };


/* A kind of change, for listeners. */
enum app_event { APP_EV_PROGRESS, APP_EV_READY, APP_EV_FAILED, APP_EV_WARNING,
                 APP_EV_NEW_DATA };

struct app;

/* Creates the state (phase LOADING).  `dir` is the profile directory,
 * `web_root` the folder of the static files.  Never fails. */
struct app *app_new(const char *dir, const char *web_root);
/* Frees the state and closes its store pools (no request may hold one). */
void app_free(struct app *a);

const char *app_dir(const struct app *a);      /* borrowed, constant */
const char *app_web_root(const struct app *a); /* borrowed, constant */

/* Ingest side.  Records the progress; the listener is told at most ten
 * times a second (and at once after app_notify_new_data()). */
void app_set_progress(struct app *a, const struct ingest_progress *p);
/* Publishes a finished store: the app takes ownership of `pool` (closing
 * the previous one when no request uses it any more) and becomes READY. */
void app_set_ready(struct app *a, struct store_pool *pool, uint64_t events,
                   uint64_t warnings);
/* The ingest failed with `error`: phase FAILED (a published store, if
 * any, keeps answering). */
void app_set_failed(struct app *a, const char *error);
/* Tells the listener of a warning and keeps it for new clients, the first
 * 100 only (app_notify_new_data() starts the list over). */
void app_add_warning(struct app *a, const char *file, uint64_t offset,
                     const char *message);
/* Files changed under --dir (re-ingest starts; phase goes back to LOADING
 * only when the new store is published, so queries keep answering). */
void app_notify_new_data(struct app *a, const char *const *files, int n);

/* Serving side.  Returns the current phase and copies the progress. */
enum app_phase app_phase(struct app *a, struct ingest_progress *p);
/* Borrows the current store pool, or NULL if none is ready; every
 * non-NULL result must be given back with app_release_pool(). */
struct store_pool *app_acquire_pool(struct app *a);
/* Gives back a pool from app_acquire_pool(); a replaced pool is closed by
 * its last user. */
void app_release_pool(struct app *a, struct store_pool *pool);

/* The annotations database (annot.h): app_set_annotations() hands it to
 * the app, which frees it in app_free(); app_annotations() borrows it (NULL
 * when none was set), valid until app_free(). */
void app_set_annotations(struct app *a, struct annot *n);
struct annot *app_annotations(struct app *a);

/* Listener: called (from the ingest thread, with no lock held) after every
 * change, with a JSON message as documented in doc/api.md for the
 * WebSocket; the listener must not block and must json_incref what it keeps. */
typedef void (*app_listener)(void *ud, enum app_event ev, json_t *msg);
/* Sets (fn NULL: removes) the one listener; waits for a call in flight. */
void app_set_listener(struct app *a, app_listener fn, void *ud);

/* Messages to send a newly connected WebSocket client: hello, and the
 * warnings so far (at most 100).  Returns a new JSON array. */
json_t *app_hello_messages(struct app *a);

#endif
