/* wsq_out.h -- the answers waiting to be written on the query connections
 * of wsq.h, and the memory caps over them ("Memory" in wsq.h).
 *
 * Each connection has a queue (struct wsq_out); struct wsq_mem counts the
 * unread bytes of every open queue -- what waits, and what libwebsockets
 * holds of the last write -- against a cap per connection and one in
 * total.  Past either, the oldest unread answers are dropped first, over
 * every connection (each message has a sequence number); a dropped final
 * answer becomes a 503 "dropped" error for its request.  Only answers of
 * queries are dropped, never the one being queued nor those errors.  The total is
 * "full" from 3/4 of its cap until it is back to 1/2 (wsq.c then stalls
 * the connections holding more than 1/32 of their cap), and freed memory
 * is given back to the system when that changes, or when the total fell
 * to a quarter of a peak of at least WSQ_TRIM_MIN.
 *
 * Threads: the WebSocket service thread only.  Ownership: a queue owns its
 * messages; the struct wsq_mem and the queues are embedded in their
 * owners, and the wsq_mem outlives every queue opened on it.
 */
#ifndef NEX_WSQ_OUT_H
#define NEX_WSQ_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wsq_msg;

/* The peak a fall must start from to give memory back. */
#define WSQ_TRIM_MIN (32u << 20)

/* One connection's waiting messages. */
struct wsq_out {
  struct wsq_msg *head, *tail;
  size_t n, bytes;
  size_t inflight; /* bytes of the last write lws still holds (at most) */
  bool overflow;   /* answers were dropped, none written since */
  void *owner;     /* the connection, for the caller's walks */
  struct wsq_out *prev, *next; /* open queues (wsq_mem.live) */
};

struct wsq_mem {
  struct wsq_out *live;       /* open queues */
  size_t conn_cap, total_cap; /* bytes */
  size_t total;               /* unread bytes of every open queue */
  size_t peak;                /* most of total since the last trim */
  uint64_t seq;               /* of the next message queued */
  uint64_t dropped;           /* messages dropped for memory */
  bool full, trim;
};

/* Caps from the environment variables NEX_WSQ_CONN_BYTES and
 * NEX_WSQ_TOTAL_BYTES, else the given defaults. */
void wsq_mem_init(struct wsq_mem *m, size_t conn_cap, size_t total_cap);
/* Updates m->full; returns whether it changed. */
bool wsq_mem_update(struct wsq_mem *m);
/* The unread bytes at which a connection stalls: its cap, 1/32 of it while
 * the total is full. */
size_t wsq_mem_stall_at(const struct wsq_mem *m);
/* Gives freed memory back (malloc_trim) if m->trim asks for it. */
void wsq_mem_trim(struct wsq_mem *m);

/* Opens o (zeroed by the caller) on m for connection `owner`. */
void wsq_out_open(struct wsq_mem *m, struct wsq_out *o, void *owner);
/* Frees o's messages and takes o off m. */
void wsq_out_close(struct wsq_mem *m, struct wsq_out *o);
/* o's unread bytes. */
size_t wsq_out_bytes(const struct wsq_out *o);
/* Queues msg (owned by o from now on), then drops the oldest answers but
 * msg while o or the total is over its cap. */
void wsq_out_push(struct wsq_mem *m, struct wsq_out *o, struct wsq_msg *msg);
/* Takes the first message off o (the caller owns it), or NULL. */
struct wsq_msg *wsq_out_pop(struct wsq_mem *m, struct wsq_out *o);
/* Frees the messages of request `id` (has_id) or of group `group` -- only
 * coarse ones when coarse_only.  Returns how many. */
size_t wsq_out_remove(struct wsq_mem *m, struct wsq_out *o, bool has_id,
                      uint32_t id, const char *group, bool coarse_only);
/* Sets what lws holds of o's last write (0: all written); a write clears
 * o->overflow. */
void wsq_out_written(struct wsq_mem *m, struct wsq_out *o, size_t inflight);

#endif
