/* filter.h -- the system-trace filters of the command line:
 *   --system-trace-filter-neuron-core   "0,2,4" or "0-3" (combinable: "0-3,8")
 *   --system-trace-filter-event-type    names and the groups "hardware" and
 *                                       "software"; "^x" excludes x
 *   --system-trace-filter-instance-id   instance ids
 * An empty or absent filter keeps everything.
 *
 * Ownership: a struct filter owns its lists; free it with filter_free().
 */
#ifndef NEX_FILTER_H
#define NEX_FILTER_H

#include <stdbool.h>

struct filter;

/* Returns a filter keeping everything. */
struct filter *filter_new(void);
void filter_free(struct filter *f);

/* Each parser returns 0, or -EINVAL and sets *cause (malloc'd, naming the
 * bad item) when the list is malformed.  Parsing a second list of the same
 * kind replaces the first. */
int filter_set_cores(struct filter *f, const char *list, char **cause);
int filter_set_event_types(struct filter *f, const char *list, char **cause);
int filter_set_instances(struct filter *f, const char *list, char **cause);

/* True if `name` belongs to the documented hardware group. */
bool filter_is_hardware(const char *name);

/* True if an event passes: nc < 0 means "no NeuronCore" and always passes
 * the core filter. */
bool filter_keep_core(const struct filter *f, int nc);
bool filter_keep_event(const struct filter *f, const char *name);
bool filter_keep_instance(const struct filter *f, const char *instance_id);

/* A short text describing the active filters ("" when none), used in the
 * store fingerprint.  Borrowed; valid until the next set call or free. */
const char *filter_describe(const struct filter *f);

#endif
