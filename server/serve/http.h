/* http.h -- the libmicrohttpd side: static files from the web root and
 * the REST API (api.c), on connections that net.c accepted.
 *
 * The daemon has no listening socket (MHD_USE_NO_LISTEN_SOCKET) and runs a
 * thread per connection, so handlers may block on SQLite.  Every request's
 * Host must name this server (403 otherwise); headers are limited to
 * 16 KiB (431) and bodies to 1 MiB (413).
 *
 * Ownership: the app is borrowed; a socket given to http_add_connection()
 * belongs to MHD from then on, even when the call fails.
 */
#ifndef NEX_HTTP_H
#define NEX_HTTP_H

#include <sys/socket.h>

struct app;
struct http;

#define HTTP_MAX_HEADERS (16 * 1024)
#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_TIMEOUT_S 60 /* idle keep-alive connections are closed */

/* Starts the daemon for `a`; `bind` is the --bind value, for the Host
 * check.  Returns 0, or a negative errno-style code with *cause set
 * (malloc'd). */
int http_start(struct app *a, const char *bind, struct http **out,
               char **cause);
/* Hands an accepted socket to MHD (which closes it in every case).
 * Returns 0 or -EIO. */
int http_add_connection(struct http *h, int fd, const struct sockaddr *sa,
                        socklen_t len);
/* Stops the daemon, closing its connections, and frees h (NULL allowed). */
void http_stop(struct http *h);

#endif
