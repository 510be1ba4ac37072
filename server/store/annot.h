/* annot.h -- the annotations database: flags, notes and named areas the
 * user writes, kept in a small SQLite file of their own beside the store
 * (never inside it: a re-ingest replaces the store and keeps them).
 *
 * The file is created on the first write; until then the list is empty.
 * One connection, opened on first use and guarded by a mutex: every
 * function may be called from any thread.  Records refer to tracks and
 * events by what survives a re-ingest (a track path, an event's start and
 * name), never by store ids; the query layer maps them (query_annot.h).
 *
 * Ownership: annot_new() returns an object the caller frees with
 * annot_free().  Records filled by annot_list()/annot_get() own their
 * strings: free them with annot_rec_free()/annot_list_free().  *cause
 * strings are malloc'd, the caller frees them.
 */
#ifndef NEX_ANNOT_H
#define NEX_ANNOT_H

#include <stddef.h>
#include <stdint.h>

/* The file beside a store <db>: <db>.notes.sqlite. */
#define ANNOT_SUFFIX ".notes.sqlite"

/* Limits: bytes of text, bytes of a colour, annotations in one file. */
#define ANNOT_MAX_TEXT 4096
#define ANNOT_MAX_COLOR 32
#define ANNOT_MAX_COUNT 100000

/* One annotation.  kind: "flag" (a time), "note" (on an event, or a time),
 * "area" (a named range [ts, end)).  track: the track path (NULL: none);
 * event_name: a note on an event names it (the event is the one of that
 * name starting at ts on track); text and color may be NULL. */
struct annot_rec {
  int64_t id;
  char kind[8];
  int64_t ts, end;
  char *track, *event_name, *text, *color;
};

struct annot;

/* An annotations database at `path` (nothing is opened yet).  Never
 * fails. */
struct annot *annot_new(const char *path);
/* Closes the connection, if any, and frees a.  NULL allowed. */
void annot_free(struct annot *a);
/* The file's path (borrowed, constant). */
const char *annot_path(const struct annot *a);

/* Every annotation, by ts then id, into a new array *out of *n records
 * (free with annot_list_free()).  An absent file is an empty list.
 * Returns 0, or -EIO with *cause set. */
int annot_list(struct annot *a, struct annot_rec **out, size_t *n,
               char **cause);
void annot_list_free(struct annot_rec *recs, size_t n);

/* Annotation `id` into *out (free its strings with annot_rec_free()).
 * Returns 0, -ENOENT (no such id) or -EIO, with *cause set. */
int annot_get(struct annot *a, int64_t id, struct annot_rec *out, char **cause);
void annot_rec_free(struct annot_rec *r);

/* Adds r (its id is ignored), creating the file if need be; *id gets the
 * new id.  Returns 0, -EINVAL (text or colour over the limits, end < ts,
 * unknown kind), -ENOSPC (ANNOT_MAX_COUNT annotations already) or -EIO,
 * with *cause set. */
int annot_add(struct annot *a, const struct annot_rec *r, int64_t *id,
              char **cause);
/* Replaces annotation r->id by r.  Returns 0, -EINVAL as annot_add(),
 * -ENOENT or -EIO, with *cause set. */
int annot_update(struct annot *a, const struct annot_rec *r, char **cause);
/* Deletes annotation `id`.  Returns 0, -ENOENT or -EIO, with *cause set. */
int annot_delete(struct annot *a, int64_t id, char **cause);

#endif
