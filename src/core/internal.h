/* src/core/internal.h — helpers shared by every module of libanytime:
 * setting the thread's error detail, logging to the installed sink, and the
 * monotonic clock. Not part of the public API. */
#ifndef ANYTIME_CORE_INTERNAL_H
#define ANYTIME_CORE_INTERNAL_H

#include <stdint.h>

#include "anytime/log.h"
#include "anytime/status.h"

#if defined(__GNUC__)
#define AT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define AT_PRINTF(f, a)
#endif

/* Record detail text for at_last_error() on this thread and return `s`, so a
 * failure reads `return at_fail(AT_ERR_SHAPE, "input %s ...", name);`. */
at_status at_fail(at_status s, const char *fmt, ...) AT_PRINTF(2, 3);
/* Clear this thread's detail text. */
void at_clear_error(void);

/* Log one line through the installed sink (no-op without one). */
void at_log(at_log_level level, const char *component, const char *fmt, ...)
    AT_PRINTF(3, 4);
/* Whether a message at `level` would reach the sink. */
int at_log_enabled(at_log_level level);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t at_now_ns(void);

#endif /* ANYTIME_CORE_INTERNAL_H */
