/* hostcheck.h -- which Host and Origin values name this server.
 *
 * Used by http.c (Host of every request) and ws.c (Host and Origin of every
 * WebSocket upgrade) against DNS rebinding and cross-site requests.  Pure
 * functions; nothing is allocated.
 */
#ifndef NEX_HOSTCHECK_H
#define NEX_HOSTCHECK_H

#include <stdbool.h>

/* Whether a Host header value (or the host:port part of an Origin) names
 * this server: localhost, 127.0.0.1 or [::1] with any port, or the literal
 * --bind address when it is not a wildcard.  Used by http.c and ws.c
 * against DNS rebinding and cross-site WebSocket hijacking. */
bool hostcheck_allowed(const char *host, const char *bind);

#endif
