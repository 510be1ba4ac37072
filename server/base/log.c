/* log.c -- see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static enum log_level log_min = LOG_INFO;

void log_set_level(enum log_level level) { log_min = level; }

static void log_emit(enum log_level level, const char *fmt, va_list ap) {
  static const char *const names[] = {"debug", "info", "warning", "error"};
  if (level < log_min)
    return;
  fprintf(stderr, "neuron-explorer-server: %s: ", names[level]);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

#define LOG_DEFINE(fn, level)                                                  \
  void fn(const char *fmt, ...) {                                              \
    va_list ap;                                                                \
    va_start(ap, fmt);                                                         \
    log_emit(level, fmt, ap);                                                  \
    va_end(ap);                                                                \
  }
LOG_DEFINE(log_debug, LOG_DEBUG)
LOG_DEFINE(log_info, LOG_INFO)
LOG_DEFINE(log_warn, LOG_WARN)
LOG_DEFINE(log_error, LOG_ERROR)

void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_emit(LOG_ERROR, fmt, ap);
  va_end(ap);
  exit(1);
}
