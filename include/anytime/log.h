/* anytime/log.h — where the library's log lines go.
 *
 * The library never prints and never exits. Everything it has to say (its own
 * messages and ONNX Runtime's, routed through a custom ORT logger) is handed
 * to one process-wide sink installed by the program. With no sink installed,
 * messages are dropped.
 *
 * Thread-safety: at_log_set_sink() may be called at any time from any thread;
 * the sink itself is called from whichever thread logs (worker threads, ORT's
 * threads) and must therefore be thread-safe.
 */
#ifndef ANYTIME_LOG_H
#define ANYTIME_LOG_H

#include "anytime/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum at_log_level {
  AT_LOG_DEBUG = 0,
  AT_LOG_INFO = 1,
  AT_LOG_WARN = 2,
  AT_LOG_ERROR = 3,
} at_log_level;

/* A log sink. `component` is a short module name ("ort", "engine", ...);
 * `message` is one line without a trailing newline; both are valid only for
 * the duration of the call. */
typedef void (*at_log_fn)(void *user, at_log_level level, const char *component,
                          const char *message);

/* Install `fn` (NULL to drop messages) and the lowest level passed to it. */
AT_API void at_log_set_sink(at_log_fn fn, void *user, at_log_level min_level);

/* "debug", "info", "warn", "error". Static; never NULL. */
AT_API const char *at_log_level_name(at_log_level level);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_LOG_H */
