/* export.h -- GET /api/v1/export: perfetto (Chrome-trace JSON), pftrace
 * (Perfetto protobuf, export_pftrace.h), summary-text, summary-json and csv
 * (SystemProfileEvents rows), produced
 * piece by piece so that a whole-profile export never sits in memory.
 *
 * Ownership: an export borrows the connection given to export_open() until
 * export_close(); pieces are appended to the caller's sbuf.
 */
#ifndef NEX_EXPORT_H
#define NEX_EXPORT_H

#include "query.h"

#include <sqlite3.h>
#include <stdint.h>

struct export;

/* Starts an export of the system events starting in [start, end) in
 * `format` ("perfetto", "pftrace", "summary-text", "summary-json" or "csv").  Returns
 * 0, or a negative code with e filled (-EINVAL for an unknown format). */
int export_open(sqlite3 *db, const char *format, int64_t start, int64_t end,
                struct export **out, struct query_err *e);
/* The Content-Type and the suggested file name of the answer (borrowed). */
const char *export_content_type(const struct export *x);
const char *export_filename(const struct export *x);
/* Appends the next piece (about 64 KiB) to out.  Returns 1 if more follows,
 * 0 after the last piece, or a negative code with e filled. */
int export_next(struct export *x, struct sbuf *out, struct query_err *e);
/* Ends the export (NULL allowed). */
void export_close(struct export *x);

#endif
