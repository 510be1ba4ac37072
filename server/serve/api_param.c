/* api_param.c -- the query parameters of the REST handlers (see
 * api_param.h). */
#include "api_param.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Answers a bad parameter through ap->fail with the detail formatted as
 * printf does (at most 511 bytes). */
static void api_param_fail(const struct api_param *ap, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void api_param_fail(const struct api_param *ap, const char *fmt, ...) {
  char detail[512];
  va_list ap2;
  va_start(ap2, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap2);
  va_end(ap2);
  ap->fail(ap->fail_ctx, detail);
}

const char *api_param_show(const char *v, char *buf, size_t n) {
  snprintf(buf, n, "%.64s%s", v, strlen(v) > 64 ? "..." : "");
  return buf;
}

bool api_param_int(const struct api_param *ap, const char *key, int64_t min,
                   int64_t max, bool required, int64_t def, int64_t *out) {
  const char *v = ap->arg(ap->ctx, key);
  char buf[80];
  if (!v) {
    if (required) {
      api_param_fail(ap, "parameter '%s' is required", key);
      return false;
    }
    *out = def;
    return true;
  }
  if (util_parse_i64(v, out) < 0 || *out < min || *out > max) {
    api_param_fail(
        ap, "parameter '%s' must be an integer from %lld to %lld, got '%s'",
        key, (long long)min, (long long)max,
        api_param_show(v, buf, sizeof buf));
    return false;
  }
  return true;
}

bool api_param_tracks(const struct api_param *ap, int64_t *ids, size_t *n) {
  const char *v = ap->arg(ap->ctx, "tracks");
  char buf[80];
  *n = 0;
  if (!v || !*v) {
    api_param_fail(ap,
                   "parameter 'tracks' is required: a comma-separated list of "
                   "base track ids");
    return false;
  }
  for (const char *p = v;;) {
    size_t len = strcspn(p, ",");
    char one[24];
    if (*n == QUERY_MAX_TRACKS) {
      api_param_fail(ap, "parameter 'tracks' lists more than %d track ids",
                     QUERY_MAX_TRACKS);
      return false;
    }
    if (len == 0 || len >= sizeof one) {
      api_param_fail(ap,
                     "parameter 'tracks' must be comma-separated integers, got "
                     "'%s'",
                     api_param_show(v, buf, sizeof buf));
      return false;
    }
    memcpy(one, p, len);
    one[len] = '\0';
    if (util_parse_i64(one, &ids[*n]) < 0) {
      api_param_fail(ap,
                     "parameter 'tracks' must be comma-separated integers, got "
                     "'%s'",
                     api_param_show(one, buf, sizeof buf));
      return false;
    }
    (*n)++;
    if (!p[len])
      return true;
    p += len + 1;
  }
}

bool api_param_window(const struct api_param *ap, bool required, bool px,
                      struct query_window *w) {
  int64_t v;
  if (!api_param_int(ap, "start", INT64_MIN, INT64_MAX, required, INT64_MIN,
                     &w->start) ||
      !api_param_int(ap, "end", INT64_MIN, INT64_MAX, required, INT64_MAX,
                     &w->end))
    return false;
  if (w->end <= w->start) {
    api_param_fail(ap, "parameter 'end' must be greater than 'start'");
    return false;
  }
  if (px) {
    if (!api_param_int(ap, "px", 1, QUERY_MAX_PX, true, 0, &v))
      return false;
    w->px = (int)v;
  }
  return true;
}
