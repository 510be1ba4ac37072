/* discover.h -- walk a profile directory and name the role of every file.
 *
 * Layout (reference neuron-explorer.md section 1): one folder per process,
 * "<instance-id>_pid_<pid>", with an optional "<timestamp>" level below it;
 * a folder is a system profile only if it holds trace_info.pb.  Device
 * traces: "<hash>_instid_<i>_vnc_<n>.ntff", "<hash>_vnc_<n>.ntff" (model
 * mode, paired with "neff_<hash>[_vnc_<n>].neff" or "neffs/graph_<hash>.neff"
 * by hash), "profile_nc_<n>_session_<s>.ntff" (session mode), other *.ntff.
 * JSON files (*.json, *.json.gz: Chrome traces, vendor exports, runtime
 * event dumps -- the readers tell them apart by content) inside a process
 * folder belong to it; elsewhere they stand alone.  Discovery only looks at
 * names and sizes; it opens no file.  Perfetto traces (*.pftrace,
 * *.perfetto-trace, and their .gz) always stand alone.
 *
 * Ownership: discover_run() returns a result the caller frees with
 * discover_free(); every string in it belongs to the result.
 */
#ifndef NEX_DISCOVER_H
#define NEX_DISCOVER_H

#include <stdint.h>

enum discover_mode { DISCOVER_MODEL, DISCOVER_SESSION, DISCOVER_OTHER };

struct discover_device {
  char *ntff;             /* path relative to the profile directory */
  char *neff;             /* paired NEFF (relative), or NULL */
  enum discover_mode mode;
  uint64_t hash;          /* model mode: the NEFF hash from the name; else 0 */
  int nc;                 /* vnc (model) or nc (session) from the name; -1 */
  int64_t session;        /* session mode; -1 otherwise */
  uint64_t size;
};

struct discover_process {
  char *rel;              /* folder relative to the profile dir ("" = top) */
  char *instance_id;      /* from the folder name ("" if not a pid folder) */
  int64_t pid;            /* from the folder name; -1 if not a pid folder */
  /* Paths relative to the profile directory, NULL when absent. */
  char *trace_info, *ntrace, *cpu_util, *host_mem;
  char **json;            /* JSON files (traces, exports, dumps) of it */
  int n_json;
  struct discover_device *devices;
  int n_devices;
};

struct discover_result {
  struct discover_process *procs; /* sorted by rel */
  int n_procs;
  char **json;            /* *.json / *.json.gz outside process folders */
  int n_json;
  char **perfetto;        /* Perfetto traces, wherever they are */
  int n_perfetto;
  char **messages;        /* e.g. "No metadata found for system profile: X" */
  int n_messages;
  char **neffs;           /* every NEFF found (relative paths) */
  int n_neffs;
  char fingerprint[17];   /* hex hash of every file's path, size and mtime */
  uint64_t total_bytes;   /* bytes of the files to be read */
  int n_files;
};

/* Walks `dir` (at most 8 levels deep; symbolic links followed, a link back
 * to a folder on the way refused).  Returns 0 and sets *out, or a negative
 * errno-style code with *cause set when `dir` cannot be read at all.  Every
 * file or folder that is not read becomes a message naming it and why
 * (unreadable, broken or looping link, FIFO or device, unknown name). */
int discover_run(const char *dir, struct discover_result **out, char **cause);

void discover_free(struct discover_result *r);

#endif
