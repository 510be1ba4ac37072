/* test_budget.c -- the connection budget (server/serve/budget.c): which
 * connection a new one evicts, the loopback reserve, the WebSocket cap.
 * Connections are socket pairs: an evicted one is shut down, so its peer
 * reads the end of the stream at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "budget.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connection: fd as the server holds it, peer as the client does. */
struct conn {
  int fd, peer;
  uint64_t id;
};

static struct sockaddr_in addr_of(const char *ip) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

/* Opens a connection from ip and admits it; c->id is 0 if refused. */
static void admit(struct budget *b, struct conn *c, const char *ip) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  c->fd = sv[0];
  c->peer = sv[1];
  struct sockaddr_in a = addr_of(ip);
  c->id = budget_admit(b, c->fd, (struct sockaddr *)&a);
}

/* Whether c was evicted: the budget forgot it and its peer reads EOF. */
static int evicted(struct budget *b, const struct conn *c) {
  char x;
  int eof = recv(c->peer, &x, 1, MSG_DONTWAIT) == 0;
  assert_int_equal(budget_find(b, c->fd) == 0, eof);
  return eof;
}

/* c has a request answered: busy, then waiting again (an idle
 * keep-alive). */
static void serve(struct budget *b, const struct conn *c) {
  assert_int_equal(budget_set(b, c->id, BUDGET_BUSY), 0);
  assert_int_equal(budget_set(b, c->id, BUDGET_WAITING), 0);
}

static void closeall(struct conn *c, int n) {
  for (int i = 0; i < n; i++) {
    close(c[i].fd);
    close(c[i].peer);
  }
}

/* A request answered makes an idle keep-alive: silent connections go
 * before it, oldest first, even the ones that came after it. */
static void test_silent_before_keepalive(void **state) {
  (void)state;
  struct budget *b = budget_new(3, 0, 1);
  struct conn c[8];
  admit(b, &c[0], "10.0.0.1"); /* the page: one request answered */
  serve(b, &c[0]);
  admit(b, &c[1], "10.0.0.2"); /* silent */
  admit(b, &c[2], "10.0.0.3"); /* silent */
  admit(b, &c[3], "10.0.0.4"); /* full: the oldest silent one goes */
  assert_true(c[3].id > 0);
  assert_true(evicted(b, &c[1]));
  assert_false(evicted(b, &c[0]));
  admit(b, &c[4], "10.0.0.5");
  assert_true(evicted(b, &c[2]));
  admit(b, &c[5], "10.0.0.6");
  assert_true(evicted(b, &c[3]));
  assert_false(evicted(b, &c[0]));
  /* only served ones and one silent one left: the silent one goes */
  serve(b, &c[4]);
  admit(b, &c[6], "10.0.0.7");
  assert_true(evicted(b, &c[5]));
  /* then, c[6] busy, the keep-alive that has waited longest */
  assert_int_equal(budget_set(b, c[6].id, BUDGET_BUSY), 0);
  admit(b, &c[7], "10.0.0.8");
  assert_true(evicted(b, &c[0]));
  assert_false(evicted(b, &c[4]));
  closeall(c, 8);
  budget_free(b);
}

/* Busy connections and WebSockets are never evicted: with none waiting,
 * a new connection is refused. */
static void test_busy_refused(void **state) {
  (void)state;
  struct budget *b = budget_new(2, 0, 1);
  struct conn c[3];
  admit(b, &c[0], "10.0.0.1");
  admit(b, &c[1], "10.0.0.2");
  assert_int_equal(budget_set(b, c[0].id, BUDGET_BUSY), 0);
  assert_int_equal(budget_set(b, c[1].id, BUDGET_WS), 0);
  admit(b, &c[2], "10.0.0.3");
  assert_int_equal(c[2].id, 0);
  assert_false(evicted(b, &c[0]));
  assert_false(evicted(b, &c[1]));
  closeall(c, 3);
  budget_free(b);
}

/* The reserve is the loopback peers': another address can neither take
 * it nor evict a loopback connection; a second WebSocket over max_ws is
 * refused. */
static void test_reserve_and_ws_cap(void **state) {
  (void)state;
  struct budget *b = budget_new(3, 1, 1);
  struct conn c[5];
  admit(b, &c[0], "127.0.0.1");
  admit(b, &c[1], "10.0.0.1");
  admit(b, &c[2], "10.0.0.2");    /* the last unreserved slot is taken: */
  assert_true(evicted(b, &c[1])); /* it evicts the other remote one */
  assert_true(c[2].id > 0);
  assert_int_equal(budget_set(b, c[2].id, BUDGET_BUSY), 0);
  admit(b, &c[3], "10.0.0.3"); /* no remote one waits: refused */
  assert_int_equal(c[3].id, 0);
  assert_false(evicted(b, &c[0]));
  admit(b, &c[4], "127.0.0.1"); /* the reserve */
  assert_true(c[4].id > 0);
  assert_int_equal(budget_set(b, c[0].id, BUDGET_WS), 0);
  assert_true(budget_ws_full(b));
  assert_int_equal(budget_set(b, c[4].id, BUDGET_WS), -EBUSY);
  budget_leave(b, c[0].id);
  assert_false(budget_ws_full(b));
  closeall(c, 5);
  budget_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_silent_before_keepalive),
      cmocka_unit_test(test_busy_refused),
      cmocka_unit_test(test_reserve_and_ws_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
