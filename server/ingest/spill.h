/* spill.h -- an unlinked temporary file beside the store, where the ingest
 * puts what does not fit its memory budget (slices waiting for their
 * sort, flow binding data) and reads it back.
 *
 * The file is created on the first write, in the store's directory (so it
 * is on the same disk as the store, not in a small /tmp), unlinked at once
 * so that nothing is left behind whatever happens.  When it cannot be
 * created or is full, spill_write fails from then on and the caller keeps
 * its data in memory: what was written stays readable.
 *
 * Ownership: spill_new copies the path; spill_free closes the file.
 */
#ifndef NEX_SPILL_H
#define NEX_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spill;

/* A spill file for the store at store_path (not created yet); what names
 * its data in the warning logged when it cannot be used. */
struct spill *spill_new(const char *store_path, const char *what);
/* Closes the file (NULL allowed). */
void spill_free(struct spill *s);

/* Appends len bytes and sets *off to where they are.  Returns 0, or -1
 * when there is no spill file or no more room in it (logged once). */
int spill_write(struct spill *s, const void *p, size_t len, uint64_t *off);
/* Whether spill_write may still succeed (false once it failed). */
bool spill_usable(const struct spill *s);
/* Reads len bytes at off.  Returns 0, or -EIO (or the read's error). */
int spill_read(struct spill *s, void *p, size_t len, uint64_t off);

#endif
