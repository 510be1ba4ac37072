/* fmt_chrome_pipe.h -- fmt_chrome_read() with the decoding on a thread of
 * its own.
 *
 * The decoder thread copies every record (its strings and flow ids with
 * it) into batches of about 1 MiB; the calling thread takes the batches
 * in order and makes the callbacks, so the caller sees exactly the calls
 * fmt_chrome_read() would make, in the same order, on its own thread,
 * while the next part of the file is being decoded on the other core.
 * At most a few batches wait between the two threads: memory stays
 * bounded whatever the file size.
 *
 * Ownership: as for fmt_chrome_read(): the pointers inside a record are
 * valid only during its callback.
 */
#ifndef NEX_FMT_CHROME_PIPE_H
#define NEX_FMT_CHROME_PIPE_H

#include "fmt_chrome.h"

/* Reads the trace at `path` as fmt_chrome_read() does and returns what it
 * would: 0, a negative errno-style code with *cause (the caller frees it),
 * or the first non-zero value a callback returned (the decoding then stops
 * and no further callback is made).  `st` is filled when the decoding has
 * ended (may be NULL).  Without a thread (or without callbacks) it decodes
 * on the caller's. */
int fmt_chrome_pipe_read(const char *path, const struct fmt_chrome_cb *cb,
                         struct fmt_chrome_stats *st, char **cause);

#endif
