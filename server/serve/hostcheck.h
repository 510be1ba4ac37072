/* hostcheck.h -- which Host and Origin values name this server.
 *
 * Used by http.c (Host of every request), ws.c (Host and Origin of every
 * WebSocket upgrade) and api.c (Origin of writes) against DNS rebinding and
 * cross-site requests.  Pure
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

/* Whether a request that writes comes from this server's own pages: its
 * Sec-Fetch-Site header (`site`, NULL when absent) is same-origin or none,
 * and its Origin (NULL when absent) is http(s)://<host>.  Used by api.c for
 * POST, PATCH and DELETE (http.c has checked Host). */
bool hostcheck_same_origin(const char *site, const char *origin,
                           const char *host);

#endif
