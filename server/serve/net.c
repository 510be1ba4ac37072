/* net.c -- the one listener (see net.h).
 *
 * The acceptor thread keeps every new connection in a pending set until its
 * first bytes tell where it goes; one poll() covers the listeners, the
 * pending sockets and a wake-up pipe, and each pending socket has its own
 * deadline, so a client that connects and says nothing delays no one.
 * Peeking (MSG_PEEK) consumes nothing: MHD and lws read the request
 * themselves.  Every accepted connection is first admitted by the
 * connection budget (budget.h), which may evict a waiting one; a refused
 * connection gets a 503 with Retry-After and is closed.
 */
#include "net.h"
#include "budget.h"
#include "http.h"
#include "log.h"
#include "util.h"
#include "ws.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define NET_MAX_LISTENERS 8
#define NET_MAX_PENDING 1024
#define NET_PEEK_TIMEOUT_NS (10 * 1000000000LL) /* silent clients: closed */
#define NET_PARTIAL_RETRY_NS (5 * 1000000LL)    /* cut short, or MHD full */
#define NET_ACCEPT_PAUSE_NS (100 * 1000000LL)   /* out of descriptors */
/* The connection budget: well below HTTP_MAX_CONNECTIONS, so that the
 * connections being closed after an eviction fit in between. */
#define NET_MAX_CONNS 384
#define NET_LOOPBACK_RESERVE 64 /* of them only for loopback peers */
#define NET_MAX_WS 128
/* Bytes looked at for the end of a new connection's request headers. */
#define NET_PEEK_HEADERS 4096

struct net_pending {
  int fd;
  uint64_t id;                /* its budget entry */
  int64_t deadline, retry_at; /* retry_at: wait before peeking again */
  struct sockaddr_storage sa;
  socklen_t sl;
};

struct net {
  struct app *app;
  char *bind;
  int lfd[NET_MAX_LISTENERS];
  int n_lfd;
  int port;
  int wake[2]; /* written by net_stop() */
  struct budget *budget;
  struct http *http;
  struct ws *ws;
  pthread_t thread;
  bool running;
  struct net_pending pend[NET_MAX_PENDING];
  int n_pend;
  int64_t accept_paused_until; /* out of descriptors: accept later */
};

/* ---- listening ---- */

static void net_set_port(struct sockaddr *sa, int port) {
  if (sa->sa_family == AF_INET6)
    ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
}

static int net_listen(struct net *n, const char *host, int port, char **cause) {
  struct addrinfo hints = {0}, *res = NULL;
  char service[16];
  int err = 0;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(service, sizeof service, "%d", port);
  int gai = getaddrinfo(host, service, &hints, &res);
  if (gai != 0) {
    *cause = xasprintf("--bind %s: %s", host, gai_strerror(gai));
    return -EINVAL;
  }
  for (struct addrinfo *ai = res; ai && n->n_lfd < NET_MAX_LISTENERS;
       ai = ai->ai_next) {
    int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd < 0) {
      err = errno;
      continue;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6)
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (n->port) /* port 0: the later addresses take the first one's port */
      net_set_port(ai->ai_addr, n->port);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
      err = errno;
      close(fd);
      continue;
    }
    if (!n->port) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      getsockname(fd, (struct sockaddr *)&ss, &sl);
      n->port = ss.ss_family == AF_INET6
                    ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    n->lfd[n->n_lfd++] = fd;
  }
  freeaddrinfo(res);
  if (n->n_lfd == 0) {
    *cause = xasprintf("cannot listen on %s port %d: %s", host, port,
                       strerror(err ? err : EADDRNOTAVAIL));
    return -(err ? err : EADDRNOTAVAIL);
  }
  if (err)
    log_warn("listening on %s port %d, but not on every address: %s", host,
             n->port, strerror(err));
  return 0;
}

/* ---- the acceptor thread ---- */

enum net_kind { NET_WAIT, NET_WS, NET_HTTP, NET_GONE };

/* Where a pending connection goes, from its first bytes. */
static enum net_kind net_classify(int fd) {
  static const char ws[] = "GET /ws";
  char b[8];
  ssize_t got = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0)
    return NET_GONE;
  if (got < 0)
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NET_WAIT
                                                                     : NET_GONE;
  size_t n = (size_t)got, cmp = n < 7 ? n : 7;
  if (memcmp(b, ws, cmp) != 0)
    return NET_HTTP;
  if (n < 8)
    return NET_WAIT; /* a prefix of "GET /ws ": wait for more */
  return b[7] == ' ' || b[7] == '?' ? NET_WS : NET_HTTP;
}

static void net_drop(struct net *n, int i) {
  n->pend[i] = n->pend[--n->n_pend];
}

/* Closes pending connection i, which leaves the budget. */
static void net_close(struct net *n, int i) {
  close(n->pend[i].fd);
  budget_leave(n->budget, n->pend[i].id);
  net_drop(n, i);
}

/* Over the budget: a short answer, then the connection is closed. */
static void net_refuse(int fd) {
  static const char body[] = "{\"error\":\"busy\",\"detail\":\"too many "
                             "connections; retry in a second\"}";
  char msg[256];
  int len = snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\n"
                     "Content-Type: application/json\r\nRetry-After: 1\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
  ssize_t w = send(fd, msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)w; /* best effort: the connection is closed anyway */
  close(fd);
}

/* Whether the request's headers have all arrived on fd. */
static bool net_headers_in(int fd) {
  char b[NET_PEEK_HEADERS];
  ssize_t got = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
  return got > 0 && memmem(b, (size_t)got, "\r\n\r\n", 4);
}

/* Gives pending connection i to lws or MHD.  One whose request headers
 * are all in is busy from now on, not waiting: only connections still
 * waiting for headers are evicted, so a flood of new connections does not
 * push out one whose request is about to be read.  While MHD has no room
 * (it still cleans up evicted connections) the connection stays pending
 * and is tried again shortly, until its deadline; then, or for a
 * WebSocket over the budget's cap, it gets a 503. */
static void net_hand_over(struct net *n, int i, enum net_kind kind,
                          int64_t now) {
  struct net_pending *p = &n->pend[i];
  int one = 1, rc = 0;
  setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (net_headers_in(p->fd))
    budget_set(n->budget, p->id, BUDGET_BUSY);
  if (kind == NET_WS && budget_ws_full(n->budget)) {
    rc = -EBUSY;
  } else if (kind == NET_WS) {
    ws_adopt(n->ws, p->fd);
  } else {
    rc = http_add_connection(n->http, p->fd, (struct sockaddr *)&p->sa, p->sl);
    if (rc == -EBUSY && p->deadline > now) {
      p->retry_at = now + NET_PARTIAL_RETRY_NS;
      return;
    }
  }
  if (rc == -EBUSY) /* no room */
    net_refuse(p->fd);
  if (rc < 0)
    budget_leave(n->budget, p->id); /* closed */
  net_drop(n, i);
}

static void net_accept(struct net *n, int lfd) {
  while (n->n_pend < NET_MAX_PENDING) {
    struct net_pending *p = &n->pend[n->n_pend];
    p->sl = sizeof p->sa;
    int fd = accept4(lfd, (struct sockaddr *)&p->sa, &p->sl, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        log_warn("accept: %s; pausing new connections", strerror(errno));
        n->accept_paused_until = util_now_ns() + NET_ACCEPT_PAUSE_NS;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                 errno != ECONNABORTED) {
        log_warn("accept: %s", strerror(errno));
      }
      return;
    }
    p->id = budget_admit(n->budget, fd, (struct sockaddr *)&p->sa);
    if (!p->id) {
      net_refuse(fd);
      continue;
    }
    p->fd = fd;
    p->deadline = util_now_ns() + NET_PEEK_TIMEOUT_NS;
    p->retry_at = 0;
    n->n_pend++;
  }
}

static void *net_thread(void *arg) {
  struct net *n = arg;
  struct pollfd pfd[1 + NET_MAX_LISTENERS + NET_MAX_PENDING];
  for (;;) {
    int64_t now = util_now_ns(), wake_at = INT64_MAX;
    int np = 0;
    bool accepting =
        n->n_pend < NET_MAX_PENDING && n->accept_paused_until <= now;
    if (!accepting && n->accept_paused_until > now)
      wake_at = n->accept_paused_until;
    pfd[np++] = (struct pollfd){n->wake[0], POLLIN, 0};
    for (int i = 0; i < n->n_lfd; i++)
      pfd[np++] = (struct pollfd){n->lfd[i], accepting ? POLLIN : 0, 0};
    for (int i = 0; i < n->n_pend; i++) {
      struct net_pending *p = &n->pend[i];
      bool waiting = p->retry_at > now;
      pfd[np++] = (struct pollfd){p->fd, waiting ? 0 : POLLIN, 0};
      if (p->deadline < wake_at)
        wake_at = p->deadline;
      if (waiting && p->retry_at < wake_at)
        wake_at = p->retry_at;
    }
    int timeout = -1;
    if (wake_at != INT64_MAX)
      timeout = wake_at <= now ? 0 : (int)((wake_at - now + 999999) / 1000000);
    if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR) {
      log_error("poll: %s", strerror(errno));
      break;
    }
    if (pfd[0].revents)
      break;
    now = util_now_ns();
    /* pending sockets first: their slots are reused by new ones */
    for (int i = n->n_pend - 1; i >= 0; i--) {
      struct net_pending *p = &n->pend[i];
      short re = pfd[1 + n->n_lfd + i].revents;
      bool due = re || (p->retry_at && p->retry_at <= now);
      enum net_kind k = due ? net_classify(p->fd) : NET_WAIT;
      if (k == NET_WAIT && (re & (POLLERR | POLLHUP | POLLNVAL)))
        k = NET_GONE;
      if (k == NET_WAIT) {
        if (due) /* bytes, but not enough to decide: look again shortly */
          p->retry_at = now + NET_PARTIAL_RETRY_NS;
        if (p->deadline <= now)
          net_close(n, i);
      } else if (k == NET_GONE) {
        net_close(n, i);
      } else {
        net_hand_over(n, i, k, now);
      }
    }
    for (int i = 0; i < n->n_lfd; i++)
      if (pfd[1 + i].revents & POLLIN)
        net_accept(n, n->lfd[i]);
  }
  return NULL;
}

/* ---- start and stop ---- */

int net_start(struct app *a, const char *bind, int port, struct net **out,
              char **cause) {
  struct net *n = xcalloc(1, sizeof *n);
  int rc;
  n->app = a;
  n->bind = xstrdup(bind ? bind : "127.0.0.1");
  n->wake[0] = n->wake[1] = -1;
  if (port < 0 || port > 65535) {
    *cause = xasprintf("--port %d: must be 0..65535", port);
    net_stop(n);
    return -EINVAL;
  }
  n->budget = budget_new(NET_MAX_CONNS, NET_LOOPBACK_RESERVE, NET_MAX_WS);
  if ((rc = net_listen(n, n->bind, port, cause)) < 0 ||
      (rc = http_start(a, n->bind, n->budget, &n->http, cause)) < 0 ||
      (rc = ws_start(a, n->bind, n->budget, &n->ws, cause)) < 0) {
    net_stop(n);
    return rc;
  }
  for (int i = 0; i < n->n_lfd; i++)
    fcntl(n->lfd[i], F_SETFL, fcntl(n->lfd[i], F_GETFL) | O_NONBLOCK);
  if (pipe2(n->wake, O_CLOEXEC) < 0 ||
      pthread_create(&n->thread, NULL, net_thread, n) != 0) {
    *cause = xasprintf("cannot start the acceptor thread: %s", strerror(errno));
    net_stop(n);
    return -EIO;
  }
  n->running = true;
  log_info("serving on http://%s%s%s:%d/", strchr(n->bind, ':') ? "[" : "",
           n->bind, strchr(n->bind, ':') ? "]" : "", n->port);
  *out = n;
  return 0;
}

int net_port(const struct net *n) { return n->port; }

void net_stop(struct net *n) {
  if (!n)
    return;
  if (n->running) {
    ssize_t w = write(n->wake[1], "x", 1);
    (void)w;
    pthread_join(n->thread, NULL);
  }
  for (int i = 0; i < n->n_lfd; i++)
    close(n->lfd[i]);
  for (int i = 0; i < n->n_pend; i++)
    close(n->pend[i].fd);
  if (n->wake[0] >= 0) {
    close(n->wake[0]);
    close(n->wake[1]);
  }
  ws_stop(n->ws);
  http_stop(n->http);
  budget_free(n->budget);
  free(n->bind);
  free(n);
}
