/* fmt_perfetto_pipe.h -- fmt_perfetto_read() with the decoding on a thread
 * of its own.
 *
 * The decoder thread copies every record into batches (recpipe.h); the
 * calling thread makes the callbacks, so the caller sees exactly the calls
 * fmt_perfetto_read() would make, in the same order, on its own thread.
 * A record's track is the caller side's copy of the decoder's track as it
 * was when the record was made: one copy per track uuid, brought up to
 * date before a record whenever the decoder's track changed (a name given
 * later, a pid learnt from a parent), so a track's pointer stays the same
 * from record to record as the decoder's does.
 *
 * Ownership: as for fmt_perfetto_read(): the pointers inside a record are
 * valid only during its callback.
 */
#ifndef NEX_FMT_PERFETTO_PIPE_H
#define NEX_FMT_PERFETTO_PIPE_H

#include "fmt_perfetto.h"

/* Reads the trace at `path` as fmt_perfetto_read() does and returns what
 * it would: 0, a negative errno-style code with *cause (the caller frees
 * it), or the first non-zero value a callback returned (the decoding then
 * stops and no further callback is made).  `st` is filled when the
 * decoding has ended (may be NULL). */
int fmt_perfetto_pipe_read(const char *path, const struct fmt_perfetto_cb *cb,
                           struct fmt_perfetto_stats *st, char **cause);

#endif
