/* filter.c -- see filter.h. */
#include "filter.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FILTER_MAX_CORE 4096

struct strlist {
  char **v;
  int n;
};

struct filter {
  bool *cores; /* NULL: all cores; else FILTER_MAX_CORE flags */
  struct strlist types_in, types_out, instances;
  bool hw_in, sw_in, hw_out, sw_out;
  char *desc;
};

#define FILTER_HW(s)                                                           \
  { s, sizeof s - 1 }
static const struct {
  const char *s;
  size_t n;
} filter_hw_names[] = {
    FILTER_HW("nc_exec_running"),      FILTER_HW("cc_running"),
    FILTER_HW("cc_exec_barrier"),      FILTER_HW("numerical_err"),
    FILTER_HW("nrt_model_switch"),     FILTER_HW("nc_model_switch"),
    FILTER_HW("timestamp_sync_point"), FILTER_HW("hw_notify")};

struct filter *filter_new(void) {
  struct filter *f = xcalloc(1, sizeof *f);
  f->desc = xstrdup("");
  return f;
}

static void strlist_clear(struct strlist *l) {
  for (int i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

static void strlist_add(struct strlist *l, const char *s, size_t n) {
  l->v = xrealloc(l->v, sizeof *l->v * (size_t)(l->n + 1));
  l->v[l->n++] = xstrndup(s, n);
}

static bool strlist_has(const struct strlist *l, const char *s) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0)
      return true;
  return false;
}

void filter_free(struct filter *f) {
  if (!f)
    return;
  free(f->cores);
  strlist_clear(&f->types_in);
  strlist_clear(&f->types_out);
  strlist_clear(&f->instances);
  free(f->desc);
  free(f);
}

/* Splits `list` at commas, trimming blanks; calls fn for each item.  Returns
 * what fn returns first non-zero, -EINVAL on an empty item. */
static int filter_split(const char *list, char **cause,
                        int (*fn)(void *ud, const char *s, size_t n,
                                  char **cause),
                        void *ud) {
  const char *p = list;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *s = p;
    while (n && isspace((unsigned char)*s))
      s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
      n--;
    if (n == 0) {
      *cause = xasprintf("empty item in filter list \"%s\"", list);
      return -EINVAL;
    }
    int rc = fn(ud, s, n, cause);
    if (rc)
      return rc;
    if (!e)
      return 0;
    p = e + 1;
  }
}

static void filter_update_desc(struct filter *f) {
  struct sbuf b = {0};
  if (f->cores) {
    sbuf_adds(&b, "cores=");
    for (int i = 0; i < FILTER_MAX_CORE; i++)
      if (f->cores[i])
        sbuf_printf(&b, "%d,", i);
    sbuf_addc(&b, ';');
  }
  if (f->types_in.n || f->types_out.n || f->hw_in || f->sw_in || f->hw_out ||
      f->sw_out) {
    sbuf_printf(&b, "types=%s%s%s%s", f->hw_in ? "hardware," : "",
                f->sw_in ? "software," : "", f->hw_out ? "^hardware," : "",
                f->sw_out ? "^software," : "");
    for (int i = 0; i < f->types_in.n; i++)
      sbuf_printf(&b, "%s,", f->types_in.v[i]);
    for (int i = 0; i < f->types_out.n; i++)
      sbuf_printf(&b, "^%s,", f->types_out.v[i]);
    sbuf_addc(&b, ';');
  }
  if (f->instances.n) {
    sbuf_adds(&b, "instances=");
    for (int i = 0; i < f->instances.n; i++)
      sbuf_printf(&b, "%s,", f->instances.v[i]);
    sbuf_addc(&b, ';');
  }
  free(f->desc);
  f->desc = b.s ? b.s : xstrdup("");
}

static int filter_parse_uint(const char *s, size_t n, int *out) {
  if (n == 0 || n > 9)
    return -EINVAL;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -EINVAL;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

static int filter_core_item(void *ud, const char *s, size_t n, char **cause) {
  bool *cores = ud;
  const char *dash = memchr(s, '-', n);
  int lo, hi;
  if (dash) {
    if (filter_parse_uint(s, (size_t)(dash - s), &lo) ||
        filter_parse_uint(dash + 1, n - (size_t)(dash - s) - 1, &hi))
      goto bad;
  } else {
    if (filter_parse_uint(s, n, &lo))
      goto bad;
    hi = lo;
  }
  if (lo > hi || hi >= FILTER_MAX_CORE)
    goto bad;
  for (int i = lo; i <= hi; i++)
    cores[i] = true;
  return 0;
bad:
  *cause = xasprintf("bad NeuronCore item \"%.*s\" (expected N or N-M, "
                     "0 <= N <= M < %d)",
                     (int)n, s, FILTER_MAX_CORE);
  return -EINVAL;
}

int filter_set_cores(struct filter *f, const char *list, char **cause) {
  bool *cores = xcalloc(FILTER_MAX_CORE, sizeof *cores);
  int rc = filter_split(list, cause, filter_core_item, cores);
  if (rc) {
    free(cores);
    return rc;
  }
  free(f->cores);
  f->cores = cores;
  filter_update_desc(f);
  return 0;
}

static int filter_type_item(void *ud, const char *s, size_t n, char **cause) {
  struct filter *f = ud;
  bool out = s[0] == '^';
  if (out)
    s++, n--;
  if (n == 0) {
    *cause = xstrdup("\"^\" must be followed by an event name or group");
    return -EINVAL;
  }
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' &&
        s[i] != ':' && s[i] != '-') {
      *cause = xasprintf("bad event type \"%.*s\"", (int)n, s);
      return -EINVAL;
    }
  bool hw = n == 8 && memcmp(s, "hardware", 8) == 0;
  bool sw = n == 8 && memcmp(s, "software", 8) == 0;
  if (hw)
    *(out ? &f->hw_out : &f->hw_in) = true;
  else if (sw)
    *(out ? &f->sw_out : &f->sw_in) = true;
  else
    strlist_add(out ? &f->types_out : &f->types_in, s, n);
  return 0;
}

int filter_set_event_types(struct filter *f, const char *list, char **cause) {
  strlist_clear(&f->types_in);
  strlist_clear(&f->types_out);
  f->hw_in = f->sw_in = f->hw_out = f->sw_out = false;
  int rc = filter_split(list, cause, filter_type_item, f);
  if (rc) {
    strlist_clear(&f->types_in);
    strlist_clear(&f->types_out);
    f->hw_in = f->sw_in = f->hw_out = f->sw_out = false;
  }
  filter_update_desc(f);
  return rc;
}

static int filter_instance_item(void *ud, const char *s, size_t n,
                                char **cause) {
  (void)cause;
  strlist_add(ud, s, n);
  return 0;
}

int filter_set_instances(struct filter *f, const char *list, char **cause) {
  strlist_clear(&f->instances);
  int rc = filter_split(list, cause, filter_instance_item, &f->instances);
  if (rc)
    strlist_clear(&f->instances);
  filter_update_desc(f);
  return rc;
}

bool filter_is_hardware(const char *name) {
  /* most other names are told apart by their length */
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof filter_hw_names / sizeof *filter_hw_names; i++)
    if (filter_hw_names[i].n == n && memcmp(name, filter_hw_names[i].s, n) == 0)
      return true;
  return false;
}

bool filter_keep_core(const struct filter *f, int nc) {
  if (!f->cores || nc < 0)
    return true;
  return nc < FILTER_MAX_CORE && f->cores[nc];
}

bool filter_keep_event(const struct filter *f, const char *name) {
  if (!f->types_in.n && !f->types_out.n && !f->hw_in && !f->sw_in &&
      !f->hw_out && !f->sw_out)
    return true; /* no event filter: not even the name looked at */
  bool hw = filter_is_hardware(name);
  if (strlist_has(&f->types_out, name) || (hw && f->hw_out) ||
      (!hw && f->sw_out))
    return false;
  bool any_in = f->types_in.n || f->hw_in || f->sw_in;
  if (!any_in)
    return true;
  return strlist_has(&f->types_in, name) || (hw && f->hw_in) ||
         (!hw && f->sw_in);
}

bool filter_keep_instance(const struct filter *f, const char *instance_id) {
  return f->instances.n == 0 || strlist_has(&f->instances, instance_id);
}

const char *filter_describe(const struct filter *f) { return f->desc; }
