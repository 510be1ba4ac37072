/* api_param.h -- query parameters of the REST handlers (api.c): integers,
 * track lists and windows, each checked; a wrong one is reported through
 * the caller's fail callback with a detail naming the parameter.  Nothing
 * here is owned: the getter, its context and the callback are the
 * caller's. */
#ifndef NEX_API_PARAM_H
#define NEX_API_PARAM_H

#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the parameters come from and where a bad one is reported. */
struct api_param {
  const char *(*arg)(void *ctx, const char *key); /* NULL when absent */
  void *ctx;
  void (*fail)(void *fail_ctx, const char *detail);
  void *fail_ctx;
};

/* Quotes at most 64 bytes of a user value v for an error message, into
 * buf (n bytes); returns buf. */
const char *api_param_show(const char *v, char *buf, size_t n);

/* The integer parameter key in [min, max] into *out; def when absent
 * and not required.  Returns false, reported through ap->fail, when it is
 * missing and required, malformed or out of range. */
bool api_param_int(const struct api_param *ap, const char *key, int64_t min,
                   int64_t max, bool required, int64_t def, int64_t *out);

/* tracks=ID,ID,... into ids (room for QUERY_MAX_TRACKS), their number in
 * *n.  Returns false, reported through ap->fail, when absent or malformed. */
bool api_param_tracks(const struct api_param *ap, int64_t *ids, size_t *n);

/* start/end into w (required, or the whole range when absent), and px when
 * wanted.  Returns false, reported through ap->fail, when a value is wrong or
 * end <= start. */
bool api_param_window(const struct api_param *ap, bool required, bool px,
                      struct query_window *w);

#endif
