/* anytime/status.h — the one status convention of the anytime C API.
 *
 * Every fallible public function returns an at_status. AT_OK is zero; every
 * other value is an error. The codes come from one X-macro table so the enum,
 * at_status_name() and at_strerror() can never drift apart; new codes are only
 * ever appended. Human-readable detail about the most recent failure on the
 * calling thread is available from at_last_error() (like dlerror()).
 *
 * Thread-safety: every function here is safe to call from any thread.
 */
#ifndef ANYTIME_STATUS_H
#define ANYTIME_STATUS_H

#include "anytime/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes a path field of the API holds, its NUL included: Linux's PATH_MAX,
 * so any path the kernel accepts fits (configuration paths, model files,
 * caches). Longer ones are refused by name where they are read. */
#define AT_PATH_CAP 4096

/* X(name, value, description) — append only, never renumber. */
#define AT_STATUS_TABLE(X)                                                     \
  X(AT_OK, 0, "success")                                                       \
  X(AT_ERR_INVALID_ARG, 1, "invalid argument")                                 \
  X(AT_ERR_NOMEM, 2, "out of memory")                                          \
  X(AT_ERR_IO, 3, "I/O error")                                                 \
  X(AT_ERR_RUNTIME_LOAD, 4, "ONNX Runtime library could not be loaded")        \
  X(AT_ERR_RUNTIME_VERSION, 5, "ONNX Runtime library version mismatch")        \
  X(AT_ERR_ORT, 6, "ONNX Runtime reported an error")                           \
  X(AT_ERR_MODEL, 7, "model is invalid or unsupported")                        \
  X(AT_ERR_NOT_FOUND, 8, "not found")                                          \
  X(AT_ERR_SHAPE, 9, "tensor name, type or shape does not match the model")    \
  X(AT_ERR_QUEUE_FULL, 10, "queue is full")                                    \
  X(AT_ERR_SHUTDOWN, 11, "shutting down")                                      \
  X(AT_ERR_PARSE, 12, "could not parse input")                                 \
  X(AT_ERR_UNSUPPORTED, 13, "unsupported")                                     \
  X(AT_ERR_STATE, 14, "call not allowed in the current state")                 \
  X(AT_ERR_LIMIT, 15, "a configured limit was exceeded")                       \
  X(AT_ERR_THREAD, 16, "could not start a thread")

typedef enum at_status {
#define AT_STATUS_ENUM_(name, value, desc) name = value,
  AT_STATUS_TABLE(AT_STATUS_ENUM_)
#undef AT_STATUS_ENUM_
} at_status;

/* The enumerator's name, e.g. "AT_ERR_SHAPE"; "AT_UNKNOWN_STATUS" for values
 * outside the table. Returns a static string; never NULL. */
AT_API const char *at_status_name(at_status s);

/* A short description of the code, e.g. "queue is full". Static; never NULL. */
AT_API const char *at_strerror(at_status s);

/* Detail about the most recent failing anytime call made on this thread (for
 * example which input had the wrong shape), or "" if none. The string is
 * owned by the library, stays valid until the next anytime call on this
 * thread, and must not be freed. */
AT_API const char *at_last_error(void);

#if defined(__GNUC__) && !defined(AT_PRINTF)
#define AT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#elif !defined(AT_PRINTF)
#define AT_PRINTF(f, a)
#endif

/* Record detail text for at_last_error() on this thread and return `s`, so a
 * failure reads `return at_fail(AT_ERR_SHAPE, "input %s ...", name);`.
 * Code built on the library (the CLI, embedders) may use it for their own
 * failures so that one reporting path prints them. */
AT_API at_status at_fail(at_status s, const char *fmt, ...) AT_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_STATUS_H */
