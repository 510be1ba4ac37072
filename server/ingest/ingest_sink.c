/* ingest_sink.c -- the sink's small services to the readers (see
 * ingest_sink.h): the run's options and discovery, the current context,
 * the readers' per-run states, the args JSON of the next slice, the
 * slices of trace formats, ids, interning, the process and thread tables.
 * Tracks, slices, counters, warnings and progress are in ingest.c. */
#include "argtext.h"
#include "filter.h"
#include "ingest_core.h"
#include "ingest_flows.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ run */

const struct ingest_opts *ingest_opts(const struct ing *g) { return g->o; }

const struct discover_result *ingest_discovery(const struct ing *g) {
  return g->d;
}

char *ingest_path(const struct ing *g, const char *rel) {
  return xasprintf("%s/%s", g->o->dir, rel);
}

void ingest_skipped(struct ing *g, uint64_t n) { g->st->skipped += n; }

void ingest_file_pos(struct ing *g, uint64_t pos) { g->file_pos = pos; }

bool ingest_keep_event(struct ing *g, uint64_t pos, const char *name) {
  g->file_pos = pos;
  return filter_keep_event(g->o->filter, name);
}

/* ------------------------------------------------------------ context */

void ingest_context_set(struct ing *g, const char *instance, int64_t pid) {
  if (instance != g->instance) {
    free(g->instance);
    g->instance = instance ? xstrdup(instance) : NULL;
  }
  g->pid = pid;
}

const char *ingest_context_instance(const struct ing *g) { return g->instance; }

int64_t ingest_context_pid(const struct ing *g) { return g->pid; }

bool ingest_context_kept(const struct ing *g) {
  return filter_keep_instance(g->o->filter, g->instance);
}

/* ------------------------------------------------------------ states */

/* The slot of key, or NULL. */
static struct ingest_state *ingest_state_slot(const struct ing *g,
                                              const void *key) {
  for (size_t i = 0; i < INGEST_STATES; i++)
    if (g->states[i].key == key)
      return (struct ingest_state *)(uintptr_t)&g->states[i];
  return NULL;
}

void *ingest_state(const struct ing *g, const void *key) {
  struct ingest_state *s = ingest_state_slot(g, key);
  return s ? s->state : NULL;
}

void ingest_state_set(struct ing *g, const void *key, void *state,
                      void (*free_fn)(void *state)) {
  struct ingest_state *s = ingest_state_slot(g, key);
  if (!s && !(s = ingest_state_slot(g, NULL)))
    fatal("more than %d reader states", INGEST_STATES);
  if (s->state && s->free)
    s->free(s->state);
  *s = state ? (struct ingest_state){key, state, free_fn}
             : (struct ingest_state){0};
}

void *ingest_state_make(struct ing *g, const void *key, size_t size,
                        void (*free_fn)(void *state)) {
  void *s = ingest_state(g, key);
  if (!s) {
    s = xcalloc(1, size);
    ingest_state_set(g, key, s, free_fn ? free_fn : free);
  }
  return s;
}

/* Frees every reader's state (the end of the run). */
void ingest_states_free(struct ing *g) {
  for (size_t i = 0; i < INGEST_STATES; i++)
    if (g->states[i].key)
      ingest_state_set(g, g->states[i].key, NULL, NULL);
}

/* ------------------------------------------------------------ args JSON */

struct sbuf *ingest_args_text(struct ing *g) {
  return &g->args;
}

void ingest_args_take(struct ing *g, struct lanes_item *it) {
  it->args_len = argtext_end(&g->args);
  it->args = it->args_len ? g->args.s : NULL;
}

void ingest_item_flows(struct ing *g, struct lanes_item *it,
                       const uint64_t *ids, size_t n) {
  if (n > g->flows_cap) {
    g->flows_cap = n;
    free(g->flows);
    g->flows = xmalloc(sizeof *g->flows * n);
  }
  for (size_t i = 0; i < n; i++)
    g->flows[i] = ids[i] & INT64_MAX;
  it->flows = n ? g->flows : NULL;
  it->n_flows = (int)n;
}

int64_t ingest_intern(struct ing *g, const char *s) {
  return store_writer_intern(g->w, s);
}

void ingest_flow_end(struct ing *g, int64_t flow_id, int64_t track,
                     int64_t lane, int64_t ts, int64_t id) {
  ingest_flows_add(g->ends, flow_id, track, lane, ts, id);
}

int ingest_flows_flush(struct ing *g) {
  return ingest_flows_write(g->ends, g->w);
}

struct store_writer *ingest_writer(struct ing *g) {
  return g->w;
}

int64_t ingest_id(struct ing *g, uint64_t id) {
  if (id == 0 || id > INT64_MAX)
    return INGEST_SYNTHETIC_ID + g->next_id++;
  return (int64_t)id;
}

/* ------------------------------------------------------------ processes */

void ingest_process(struct ing *g, const char *instance, int64_t pid,
                    const char *name, const char *dir) {
  store_writer_exec(g->w,
                    "INSERT INTO process (instance_id, pid, name, dir) "
                    "VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET "
                    "name = coalesce(excluded.name, name), "
                    "dir = coalesce(dir, excluded.dir)",
                    "titt", instance, pid, name, dir);
}
