/* log.h -- logging to stderr and fatal errors.
 *
 * log_* print one line "neuron-explorer-server: <level>: <msg>" to stderr.
 * fatal() prints and exits with status 1: only for the impossible.
 */
#ifndef NEX_LOG_H
#define NEX_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Messages below `level` are not printed (default LOG_INFO). */
void log_set_level(enum log_level level);
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
