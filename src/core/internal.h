/* src/core/internal.h — helpers shared by every module of libanytime:
 * setting the thread's error detail, logging to the installed sink, the
 * monotonic clock and reading a whole file. Not part of the public API. */
#ifndef ANYTIME_CORE_INTERNAL_H
#define ANYTIME_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anytime/clock.h"
#include "anytime/log.h"
#include "anytime/status.h"

/* at_fail() and AT_PRINTF are public (anytime/status.h); at_now_ns() too
 * (anytime/clock.h). */

/* Clear this thread's detail text. */
void at_clear_error(void);

/* Log one line through the installed sink (no-op without one). */
void at_log(at_log_level level, const char *component, const char *fmt, ...)
    AT_PRINTF(3, 4);
/* Whether a message at `level` would reach the sink. */
int at_log_enabled(at_log_level level);

/* Name the calling thread (at most 15 bytes are kept), as seen in
 * /proc/PID/task/TID/comm. libanytime's threads are "at-worker",
 * "at-batcher", "at-holdq", "at-gen" and "at-gen-turns". */
void at_thread_name(const char *name);

/* Read a whole regular file into a malloc'ed, NUL-terminated buffer (*out,
 * the caller frees it; *len its length without the NUL, len may be NULL).
 * Returns AT_OK, AT_ERR_NOT_FOUND (no such file), AT_ERR_IO (not a regular
 * file, a read error), AT_ERR_LIMIT (over max_bytes), AT_ERR_NOMEM; the
 * detail starts with `what` and names the path. Any thread (src/core/file.c). */
at_status at_read_file(const char *path, size_t max_bytes, const char *what, char **out,
                       size_t *len);

/* The last error's message, prefixed with "`where`: " (a file's path, say,
 * when a parser's detail does not name it); returns s. Per thread, as
 * at_fail() (src/core/status.c). */
at_status at_fail_in(at_status s, const char *where);

/* qsort's comparator for doubles, ascending (src/core/sort.c). */
int at_cmp_double(const void *a, const void *b);

#endif /* ANYTIME_CORE_INTERNAL_H */
