/* net.h -- the one listening socket.  net.c accepts connections on
 * --bind/--port, peeks at each new connection's request line without
 * blocking the others (one poll() loop over pending sockets, each with a
 * deadline) and hands "GET /ws" to libwebsockets (ws.c) and everything else
 * to libmicrohttpd (http.c).  The connection budget (budget.h) admits
 * every accepted connection first: past it, the connection waiting longest
 * for its headers is evicted, or the new one gets 503 and is closed.
 *
 * Threads: net_start() starts the HTTP daemon (thread per connection), the
 * WebSocket service thread and the acceptor thread; net_stop() stops them
 * in that reverse order: acceptor, WebSocket, HTTP.
 *
 * Ownership: the app is borrowed and must outlive the server; accepted
 * sockets belong to net.c until handed over, then to MHD or lws.
 */
#ifndef NEX_NET_H
#define NEX_NET_H

struct app;
struct net;

/* Starts serving `a` on bind:port.  bind is a host name or address
 * ("127.0.0.1", "::1", "localhost", "0.0.0.0"); every address it resolves
 * to is listened on.  port 0 picks a free port (see net_port()).  Returns 0,
 * or a negative errno-style code with *cause set (malloc'd, the caller frees
 * it), e.g. -EADDRINUSE naming the port. */
int net_start(struct app *a, const char *bind, int port, struct net **out,
              char **cause);
/* The port actually listened on. */
int net_port(const struct net *n);
/* Closes the listener, then stops WebSocket and HTTP serving and frees n
 * (NULL allowed).  Connections in flight are closed. */
void net_stop(struct net *n);

#endif
