/* wsbin.h -- the binary frames that carry window answers (slices,
 * counters) on /ws: the rows of query_slices_rows() and
 * query_counters_rows() as typed-array columns (doc/api.md, "Binary window
 * frames").
 *
 * A worker thread builds a frame: wsbin_new(), then wsbin_sink() is given
 * to the query, then wsbin_finish() encodes (and compresses) it, so that
 * the WebSocket service thread only copies bytes: it writes the frame with
 * wsbin_write(), which adds the names (string ids -> text) that this
 * connection has not been sent yet: struct wsbin_names remembers them, one
 * per connection.
 *
 * Ownership: wsbin_new() and wsbin_names_new() results are freed with
 * wsbin_free() and wsbin_names_free(); wsbin_write() returns a malloc'd
 * buffer for the caller to free.  A frame is used by one thread at a time.
 */
#ifndef NEX_WSBIN_H
#define NEX_WSBIN_H

#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wsbin_kind { WSBIN_SLICES = 1, WSBIN_COUNTERS = 2 };

/* Frame flags (byte 9 of the header). */
#define WSBIN_FINAL 1   /* the last answer to the request */
#define WSBIN_COARSE 2  /* a first answer at a coarser resolution */
#define WSBIN_DEFLATE 4 /* what follows the names is raw deflate */

/* Size of the fixed header. */
#define WSBIN_HEADER 64

struct wsbin;

/* A frame to fill with the rows of one answer of kind `kind`. */
struct wsbin *wsbin_new(enum wsbin_kind kind);
/* The sink to give query_slices_rows() / query_counters_rows(); borrowed,
 * valid as long as b. */
const struct query_sink *wsbin_sink(struct wsbin *b);
/* Whether the rows do not depend on the resolution: every track was read
 * from raw events and no lane or series was cut at its row limit, so the
 * same window at a finer resolution has the same rows. */
bool wsbin_exact(const struct wsbin *b);
/* Encodes the rows as the answer to request `id` for window w (start, end,
 * px; resolution as query.c computes it), flags WSBIN_FINAL or
 * WSBIN_COARSE, and frees them: a frame waiting to be written keeps only
 * its bytes and names (call wsbin_exact() before).  `deflate`: compresses
 * the part after the names (raw deflate, flag WSBIN_DEFLATE) when that
 * makes it smaller.  Returns 0, or -ERANGE with e filled when a string id
 * does not fit 32 bits. */
int wsbin_finish(struct wsbin *b, uint32_t id, int flags,
                 const struct query_window *w, bool deflate,
                 struct query_err *e);
/* Bytes of the encoded frame, names not counted (after wsbin_finish()). */
size_t wsbin_size(const struct wsbin *b);
/* Request id and flags given to wsbin_finish(). */
uint32_t wsbin_id(const struct wsbin *b);
int wsbin_flags(const struct wsbin *b);
void wsbin_free(struct wsbin *b);

/* The names one connection was sent: string id -> hash of its text (a
 * store replaced by a re-ingest may give an id another text). */
struct wsbin_names;
struct wsbin_names *wsbin_names_new(void);
void wsbin_names_free(struct wsbin_names *n);

/* The finished frame as bytes, after `pre` bytes of headroom (LWS_PRE),
 * with the names of b that `sent` does not hold with the same text; they
 * are added to `sent`.  Returns a malloc'd buffer of pre + *len bytes. */
unsigned char *wsbin_write(const struct wsbin *b, struct wsbin_names *sent,
                           size_t pre, size_t *len);

#endif
