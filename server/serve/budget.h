/* budget.h -- the connection budget of the one port.
 *
 * Every connection the server holds (peeked at in net.c, HTTP in
 * libmicrohttpd, WebSocket in libwebsockets) has an entry here, and there
 * are never more than `max` of them: well below libmicrohttpd's own limit,
 * because libmicrohttpd 0.9.75 (Debian 12) deadlocks its polling thread
 * when it turns a connection away at that limit.  A connection over the
 * budget first evicts one that waits for a request's headers: of those
 * that never had a request answered (silent or slow-header clients) the
 * one that has waited longest, and only when there is none, the idle
 * keep-alive connection that has waited longest (so a flood of silent
 * connections does not cut the page's keep-alive).  The evicted socket is
 * shut down, and its owner closes it as if the peer had gone.  If none
 * waits, the new connection is refused.  `reserve` slots are only for
 * loopback peers (the user's page, directly or through its SSH tunnel):
 * connections from other addresses cannot take them nor evict a loopback
 * one.  Established WebSockets are never evicted, but at most `max_ws` are
 * kept.
 *
 * Threads: every function is thread-safe.
 * Ownership: sockets stay their owners'; the budget only shuts one down to
 * evict it.  An entry is named by the id budget_admit() returned, so a
 * late budget_leave() for a closed socket whose number was reused is
 * harmless.
 */
#ifndef NEX_BUDGET_H
#define NEX_BUDGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct budget;

enum budget_state {
  BUDGET_WAITING, /* no request in progress: evictable, oldest first */
  BUDGET_BUSY,    /* an HTTP request is being answered */
  BUDGET_WS       /* an established WebSocket */
};

/* A budget of max connections, reserve of them for loopback peers, at most
 * max_ws WebSockets.  The caller frees it with budget_free(). */
struct budget *budget_new(int max, int reserve, int max_ws);
/* Frees b (NULL allowed). */
void budget_free(struct budget *b);

/* Admits the socket fd just accepted from peer sa, WAITING, evicting
 * another if needed.  Returns its id (> 0), or 0 if it is refused (the
 * caller answers 503 and closes it). */
uint64_t budget_admit(struct budget *b, int fd, const struct sockaddr *sa);
/* The id of the admitted socket fd, or 0 if it has none. */
uint64_t budget_find(struct budget *b, int fd);
/* Connection id is now in state s.  Returns 0, or -EBUSY when s is
 * BUDGET_WS and max_ws WebSockets are established (close it). */
int budget_set(struct budget *b, uint64_t id, enum budget_state s);
/* Whether max_ws WebSockets are established (a new one would be
 * refused). */
bool budget_ws_full(struct budget *b);
/* Connection id is closing (0 or an unknown id: nothing happens). */
void budget_leave(struct budget *b, uint64_t id);

#endif
