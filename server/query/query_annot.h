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

/* GET /annotations: {"file": path, "annotations": [...]} by ts. */
int query_annot_list(sqlite3 *db, struct annot *a, json_t **out,
                     struct query_err *e);
/* POST /annotations: adds the annotation the JSON object body describes;
 * *out is it as GET lists it (201). */
int query_annot_add(sqlite3 *db, struct annot *a, json_t *body, json_t **out,
                    struct query_err *e);
/* PATCH /annotations/{id}: changes the fields body names; *out the
 * annotation after the change. */
int query_annot_update(sqlite3 *db, struct annot *a, int64_t id, json_t *body,
                       json_t **out, struct query_err *e);
/* DELETE /annotations/{id}. */
int query_annot_delete(struct annot *a, int64_t id, struct query_err *e);

#endif
