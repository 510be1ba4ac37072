/* tracks.h -- grouping modes -> the display track list (names as the vendor
 * tool shows them).  Pure functions over track rows; no SQL here (query.c
 * reads the rows).
 *
 * Ownership: rows and their strings are borrowed for the duration of a
 * call; returned char * and json_t * belong to the caller (free() /
 * json_decref()).
 */
#ifndef NEX_TRACKS_H
#define NEX_TRACKS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An integer column that was NULL in the store. */
#define TRACKS_NONE INT64_MIN

enum tracks_mode {
  TRACKS_DEFAULT = 0,
  TRACKS_CPU_DEVICE,
  TRACKS_NEURONCORE,
  TRACKS_THREAD,
  TRACKS_PROCESS,
  TRACKS_INSTANCE,
  TRACKS_DEVICE /* the tracks of one device profile */
};

/* One row of the track table. */
struct tracks_row {
  int64_t id;
  const char *kind;   /* "slices" | "counter" */
  const char *domain; /* "system" | "device" */
  const char *source;
  const char *instance_id;
  const char *cpu_id;                                       /* NULL when none */
  const char *label;                                        /* NULL when none */
  int64_t pid, tid, nc, pcore, worker, stream, device, hbm; /* TRACKS_NONE */
  int64_t lanes, event_count;
  json_t *series;   /* counters: array of series names (borrowed), or NULL */
  const char *unit; /* counters: unit of series 0, or NULL */
  /* What the process and thread tables say of the track's pid and tid
   * (Chrome metadata): names and labels (NULL when none), sort indexes
   * (TRACKS_NONE when none); pnamed/tnamed: the trace gave the pid/tid as
   * text (the name), the number is synthetic; chrome: the track is of a
   * standalone Chrome trace (no Neuron process folder). */
  const char *pname, *plabels, *tname;
  int64_t psort, tsort;
  int pnamed, tnamed, chrome;
};

/* Parses a grouping mode name as used by GET /tracks?grouping= ("default",
 * "cpu_device", "neuroncore", "thread", "process", "instance"; NULL or ""
 * means default).  Returns 0, or -EINVAL for an unknown name. */
int tracks_mode_parse(const char *s, enum tracks_mode *out);
/* The name of a mode ("default" ...); "device" for TRACKS_DEVICE. */
const char *tracks_mode_name(enum tracks_mode m);

/* The display name of a base track in a mode, e.g.
 * "i-0b1e/PID:1765325/neuron_hw/NC0:4"; a standalone Chrome trace's track
 * "rank 0/python3 25286 (CPU)/thread 25286 (python3)" (names as Perfetto
 * shows them, process labels in parentheses, '/' inside a name written
 * as U+2215).  Returns a new string. */
char *tracks_name(const struct tracks_row *r, enum tracks_mode m);

/* Groups rows into display tracks, in tree order: event tracks first (by
 * path, numbers compared as numbers, framework < neuron_rt < neuron_hw;
 * Chrome processes and threads by their sort index, else pid or tid),
 * then HBM, transfers, bandwidth, host memory and CPU tracks (these last
 * two "hidden_by_default").  Rows with equal names and kind merge; their
 * lanes add up.  Returns a new JSON array of track
 * objects as documented for GET /api/v1/tracks. */
json_t *tracks_group(const struct tracks_row *rows, size_t n,
                     enum tracks_mode m);

#endif
