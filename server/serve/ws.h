/* ws.h -- the libwebsockets side: /ws with subprotocol "nex.v1" pushes the
 * app's messages (hello, progress, ready, warning, new-data, failed; see
 * doc/api.md) to every connected page.
 *
 * One lws service thread owns every WebSocket.  Messages from the ingest
 * thread go through a bounded ring and lws_cancel_service(); each client
 * has a position in the ring and gets one lws_write() per WRITEABLE.  A
 * slow client skips progress messages that a newer one superseded; one that
 * falls behind the whole ring gets a fresh hello instead of a backlog.
 * Upgrades whose Origin does not match Host, whose Host is not this
 * server, or that do not ask for "nex.v1" are refused.  The same sockets
 * carry the time-range queries of wsq.h: ws.c hands it the client's
 * messages, and the WRITEABLE turns when no push waits.
 *
 * Ownership: the app is borrowed and must outlive the ws; sockets given to
 * ws_adopt() belong to lws from then on.
 */
#ifndef NEX_WS_H
#define NEX_WS_H

struct app;
struct budget;
struct ws;

#define WS_SUBPROTOCOL "nex.v1"

/* Creates the lws context (no listening socket of its own), starts its
 * service thread and registers as the app's listener.  `bind` is the
 * --bind value, for the Host check; `budget` (borrowed, must outlive w)
 * holds the entries of the sockets it adopts: an established WebSocket is
 * marked BUDGET_WS, or closed when there are too many.  Returns 0, or a
 * negative errno-style code with *cause set (malloc'd). */
int ws_start(struct app *a, const char *bind, struct budget *budget,
             struct ws **out, char **cause);
/* Hands an accepted socket whose request line is "GET /ws" to the service
 * thread (thread-safe; lws closes the socket if adoption fails). */
void ws_adopt(struct ws *w, int fd);
/* Unregisters from the app, stops the service thread, closes every
 * WebSocket and frees w (NULL allowed). */
void ws_stop(struct ws *w);

#endif
