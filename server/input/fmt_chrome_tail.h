/* fmt_chrome_tail.h -- the top-level members that follow a trace's
 * traceEvents array, read backwards from the end of the file.
 *
 * Kineto writes baseTimeNanoseconds after the events, and every timestamp
 * depends on it: without this module the decoder has to skim the whole
 * file once before reading it.  Reading its last 64 KiB backwards finds
 * the members after the array at once: keys and string values without
 * escapes, numbers, literals, objects and arrays whose brackets match
 * within the window.  Anything else (an escape in a plain member, a gzip
 * file, a member longer than the window) is left to the forward skim.
 *
 * The one guess: an array whose opening bracket lies before the window is
 * taken for the events'.  A baseTimeNanoseconds before such an array and
 * after the events is then missed; the decoder says so in a warning when it
 * reaches it (no real writer lays a trace out that way).
 */
#ifndef NEX_FMT_CHROME_TAIL_H
#define NEX_FMT_CHROME_TAIL_H

#include <stdint.h>

/* Reads the end of the plain JSON file at `path`.  Returns 1 when the
 * members after the traceEvents array were read and one of them, the last
 * one if several, is baseTimeNanoseconds with a decimal value (*base_ns
 * set); 0 when they were read and none is; -1 when the end of the file
 * could not be read that way (the caller skims the file instead). */
int fmt_chrome_tail_base(const char *path, int64_t *base_ns);

#endif
