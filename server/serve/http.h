/* http.h -- the libmicrohttpd side: static files from the web root and
 * the REST API (api.c), on connections that net.c accepted.
 *
 * The daemon has no listening socket (MHD_USE_NO_LISTEN_SOCKET) and runs a
 * thread per connection, so handlers may block on SQLite.  Every request's
 * Host must name this server (403 otherwise); headers are limited to
 * 16 KiB (431) and bodies to 1 MiB (413).  Each connection's entry in the
 * connection budget (budget.h) is told when a request starts and ends, and
 * when the connection closes.
 *
 * Ownership: the app is borrowed; a socket given to http_add_connection()
 * belongs to MHD from then on, even when the call fails, but for -EBUSY.
 */
#ifndef NEX_HTTP_H
#define NEX_HTTP_H

#include <sys/socket.h>

struct app;
struct budget;
struct http;

#define HTTP_MAX_HEADERS (16 * 1024)
#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_TIMEOUT_S 60 /* idle keep-alive connections are closed */
/* libmicrohttpd's own limit: net.c's budget stays well below it. */
#define HTTP_MAX_CONNECTIONS 512

/* Starts the daemon for `a`; `bind` is the --bind value, for the Host
 * check; `budget` (borrowed, must outlive h) holds the entries of the
 * connections it is given.  Returns 0, or a negative errno-style code with
 * *cause set (malloc'd). */
int http_start(struct app *a, const char *bind, struct budget *budget,
               struct http **out, char **cause);
/* Hands an accepted socket to MHD.  Returns 0, or -EIO (MHD closed it),
 * or -EBUSY when MHD holds nearly its limit of connections, counting
 * those still being cleaned up (the socket is still the caller's). */
int http_add_connection(struct http *h, int fd, const struct sockaddr *sa,
                        socklen_t len);
/* Stops the daemon, closing its connections, and frees h (NULL allowed). */
void http_stop(struct http *h);

#endif
