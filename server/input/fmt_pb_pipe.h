/* fmt_pb_pipe.h -- the records of a capture file (fmt_pb.h) unpacked on a
 * thread of their own.
 *
 * The decoder thread reads an open reader from where it stands to the end,
 * as fmt_pb_next() would, and unpacks each record straight into a recpipe
 * batch (the message and every string, array and sub-message it points
 * to; a record that needs more room than offered, some 8 bytes per byte of
 * encoding, is unpacked by the reader and copied whole); the calling
 * thread gets the records in order, so it sees what a fmt_pb_next()
 * loop would see, while the next records are unpacked on the other core.
 * Memory stays bounded: a few batches of about 1 MiB wait at most.
 *
 * Ownership: a record and its message live in their batch and are valid
 * only during the callback; the reader stays the caller's (do not use it
 * until fmt_pb_pipe_each returns).
 */
#ifndef NEX_FMT_PB_PIPE_H
#define NEX_FMT_PB_PIPE_H

#include "fmt_pb.h"
#include "util.h"

/* One record, as fmt_pb_next() returned it, with the text the prep
 * callback wrote for it. */
struct fmt_pb_pipe_rec {
  int rc;                /* 1, -EBADMSG (skipped) or -EPIPE (the last) */
  ProtobufCMessage *msg; /* rc 1: the message, else NULL */
  uint64_t offset;       /* fmt_pb_next()'s *offset */
  uint64_t pos;          /* fmt_pb_pos() after the record */
  const char *text;      /* prep's text, NUL-terminated; NULL when empty */
  size_t text_len;
};

/* Returns 0 to go on, non-zero to stop reading. */
typedef int (*fmt_pb_pipe_fn)(void *ud, const struct fmt_pb_pipe_rec *rec);

/* Work for the decoder thread: called there for each message that
 * decodes, it may write text about it into out (empty when called), which
 * the record then carries.  It may only read m and what prep_ud holds for
 * it alone (it runs beside the caller's thread). */
typedef void (*fmt_pb_pipe_prep_fn)(void *prep_ud, const ProtobufCMessage *m,
                                    struct sbuf *out);

/* Calls fn for every record of r from its position to the end of the file
 * (or up to and including a -EPIPE), unpacked as messages of descriptor d,
 * in order, on this thread; prep (NULL: none) for each message first, on
 * the decoder thread.  Returns the first non-zero value fn returned (no
 * record follows it), else 0.  Without a thread it reads on this one. */
int fmt_pb_pipe_each(struct fmt_pb *r, const ProtobufCMessageDescriptor *d,
                     fmt_pb_pipe_prep_fn prep, void *prep_ud, fmt_pb_pipe_fn fn,
                     void *ud);

#endif
