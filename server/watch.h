/* watch.h -- tells when files appear in or change under the profile
 * directory (inotify), so a running server can re-ingest and an open page
 * can refresh without a reload.
 *
 * The watcher runs its own thread.  After a change it waits until the
 * directory has been quiet for WATCH_QUIET_MS (a capture still being
 * written produces a stream of events), then calls the callback once with
 * the relative paths that changed.  Store files (*.db, *.db.tmp) and
 * annotation files (*.notes.sqlite*, annot.h) are ignored.
 *
 * Ownership: the file names passed to the callback are borrowed for the
 * call.  watch_stop() joins the thread and frees the watcher.
 */
#ifndef NEX_WATCH_H
#define NEX_WATCH_H

#define WATCH_QUIET_MS 1000

struct watch;

typedef void (*watch_fn)(void *ud, const char *const *files, int n);

/* Starts watching `dir` and every folder below it.  Returns 0 or a
 * negative errno-style code with *cause set. */
int watch_start(const char *dir, watch_fn fn, void *ud, struct watch **out,
                char **cause);
/* Stops the thread (NULL allowed). */
void watch_stop(struct watch *w);

#endif
