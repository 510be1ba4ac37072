/* query_annot.h -- annotations (annot.h) as the REST API shows them: JSON
 * in and out, with the track paths and event references of the records
 * mapped to the current store's track ids and event keys.
 *
 * A record keeps what survives a re-ingest: a track as its path (kind,
 * domain, source, instance, pid, tid, NeuronCore, ... joined by '/'), a
 * note's event as (track path, start ts, name).  Written from an id or key
 * of the current store; read back as the id or key that names the same
 * thing in the store then current (null when it is gone).
 *
 * db: a pooled read-only store connection the caller holds.  Errors as in
 * query.h (0 or a negative code with e filled).  Ownership: *out is a new
 * reference for the caller; body is borrowed.
 */
#ifndef NEX_QUERY_ANNOT_H
#define NEX_QUERY_ANNOT_H

#include "annot.h"
#include "query.h"

/* One request on the annotations: GET or HEAD (the list), POST (adds the
 * annotation the JSON object `body` describes), PATCH (changes the fields
 * `body` names of annotation `id`), DELETE (annotation `id`); body is the
 * request's text of body_len bytes (NULL: none).  *out: {"file",
 * "annotations": [...]} by ts; the annotation added or changed; or
 * {"deleted": id}.  db may be NULL for DELETE. */
int query_annot(sqlite3 *db, struct annot *a, const char *method, int64_t id,
                const char *body, size_t body_len, json_t **out,
                struct query_err *e);

#endif
