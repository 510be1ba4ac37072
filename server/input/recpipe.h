/* recpipe.h -- a decoder on a thread of its own, its records handed to the
 * calling thread in batches.
 *
 * The decoder thread copies every record it reports (a struct, the strings
 * and arrays it points to) into batches of about 1 MiB; the calling thread
 * takes the batches in order and replays the records, so the caller sees
 * exactly the calls the decoder made, in the same order, on its own thread,
 * while the next part of the file is decoded on the other core.  At most a
 * few batches wait between the two threads: memory stays bounded whatever
 * the file size.  fmt_chrome_pipe.c and fmt_perfetto_pipe.c put their
 * decoders behind it.
 *
 * Ownership: a record's body lives in its batch; replay() may read it only
 * during its call.
 */
#ifndef NEX_RECPIPE_H
#define NEX_RECPIPE_H

#include <stddef.h>
#include <stdint.h>

/* Strings of a record at most (recpipe_put). */
#define RECPIPE_STRS 6

struct recpipe;

/* ---------------------------------------------------------- decoder side */

/* A pointer field of a record (at) and the len bytes it points to. */
struct recpipe_blob {
  const void **at;
  size_t len;
};
/* Queues a record of `kind`: a copy of the size bytes at c, then a copy of
 * the bytes of each of the nb blobs b (fields of c; one of 0 bytes takes
 * no room and its field is left as it is), one after the other, then the
 * strings *f[0..n) (fields of c; NULL ones take no room).  In the copy the
 * blob and string fields point at their copies.  The body is aligned for
 * any struct; a blob is too when the blobs before it are (put the arrays
 * of 8-byte values first). */
void recpipe_put(struct recpipe *p, uint32_t kind, void *c, size_t size,
                 const struct recpipe_blob *b, int nb, const char **const f[],
                 int n);
/* A record of `kind` filled in place: recpipe_begin returns room for at
 * most `max` bytes of body (aligned as recpipe_put's), recpipe_end queues
 * it with the `used` bytes the decoder wrote there (used <= max).  No other
 * recpipe call may come between the two. */
void *recpipe_begin(struct recpipe *p, uint32_t kind, size_t max);
void recpipe_end(struct recpipe *p, size_t used);
/* Takes back the record recpipe_begin made instead of queueing it (the
 * decoder found it needs more room, or none). */
void recpipe_cancel(struct recpipe *p);
/* 1 once the calling thread stopped taking records, else 0: what the
 * decoder's callbacks return, so that the decoding stops. */
int recpipe_stopped(struct recpipe *p);

/* A decoder's warning as a record of `kind` (its body a struct
 * recpipe_warning). */
struct recpipe_warning {
  uint64_t offset;
  const char *msg;
};
void recpipe_put_warning(struct recpipe *p, uint32_t kind, uint64_t offset,
                         const char *msg);

/* ---------------------------------------------------------- caller side */

/* The decoder: run on the new thread, records queued with recpipe_put;
 * what it returns is its own business (keep it in arg). */
typedef void (*recpipe_decode_fn)(struct recpipe *p, void *arg);
/* Replays one record on the calling thread; non-zero stops the replay. */
typedef int (*recpipe_replay_fn)(void *ud, uint32_t kind, const void *body);

/* Runs decode(p, arg) on a thread of its own and replay(ud, ...) for each
 * of its records in order on this one until a replay returns non-zero;
 * waits for the decoder to end.  When no thread can be started, decode
 * runs on this thread and each record is replayed as it is put.  Returns
 * the first non-zero replay value, or 0 when every record was replayed. */
int recpipe_run(recpipe_decode_fn decode, void *arg, recpipe_replay_fn replay,
                void *ud);

/* What a piped read returns, from recpipe_run()'s value rc and what the
 * decoder's own read returned (dec_rc, *dec_cause): rc when a replay
 * stopped it, else dec_rc, whose cause then goes to *cause (the caller
 * frees it; cause may be NULL).  *dec_cause is consumed either way. */
int recpipe_result(int rc, int dec_rc, char **dec_cause, char **cause);

#endif
