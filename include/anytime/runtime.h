/* anytime/runtime.h — loading ONNX Runtime and the version lock.
 *
 * anytime is built against one ONNX Runtime release (cmake/ort-version.txt).
 * The library is opened with dlopen() at run time rather than linked, so that
 * a different release on the loader path produces a clear refusal naming both
 * versions instead of a loader error. Before any session is created the
 * library's GetVersionString() must equal the release anytime was compiled
 * against; otherwise at_runtime_init() fails with AT_ERR_RUNTIME_VERSION.
 *
 * Which library file is opened: $ANYTIME_ORT_LIB if set, else the SDK library
 * the build was configured with (an absolute path recorded at build time),
 * else "libonnxruntime.so" from the loader's search path.
 *
 * Override for experiments: ANYTIME_ALLOW_ORT_MISMATCH=1 lets a mismatched
 * library load; every start then logs an AT_LOG_WARN line naming both versions
 * and at_runtime_version_info() reports mismatch = 1.
 *
 * Thread-safety: at_runtime_init() is idempotent and safe to call from many
 * threads at once (one initialisation wins; the others wait and get its
 * result). The other functions are safe from any thread after a successful
 * init.
 */
#ifndef ANYTIME_RUNTIME_H
#define ANYTIME_RUNTIME_H

#include "anytime/api.h"

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* anytime's own version. */
#define AT_VERSION_STRING "0.1.0"

typedef struct at_version_info {
  const char *anytime_version;   /* AT_VERSION_STRING */
  int header_api_version;        /* ORT_API_VERSION anytime was compiled with */
  const char *compiled_release;  /* ORT release configured at build time */
  const char *library_release;   /* GetVersionString() of the loaded library */
  const char *library_path;      /* the file that was dlopen()ed */
  int mismatch;                  /* 1 if loaded under ANYTIME_ALLOW_ORT_MISMATCH */
  const char *const *providers;  /* available execution providers */
  int n_providers;
} at_version_info;

/* Load ONNX Runtime, check its version and create the process-wide ORT
 * environment (with a logger that forwards to the anytime log sink).
 * Returns AT_OK, AT_ERR_RUNTIME_LOAD (file missing or not an ORT library;
 * at_last_error() names the path and dlerror()), AT_ERR_RUNTIME_VERSION
 * (at_last_error() names both versions) or AT_ERR_ORT. A failure is sticky:
 * later calls return the same status and message. */
AT_API at_status at_runtime_init(void);

/* Fill `out` with version facts. Requires a successful at_runtime_init().
 * The strings are owned by the library and live until process exit.
 * Returns AT_OK, AT_ERR_INVALID_ARG (out is NULL) or the init failure. */
AT_API at_status at_runtime_version_info(at_version_info *out);

/* ONNX Runtime objects anytime created and has not released yet: sessions
 * (at_session_*) and tensor values (inputs of a Run in progress, outputs
 * not yet freed with at_outputs_free). The process-wide environment is not
 * counted: it lives until exit by design. Either pointer may be NULL.
 * With ANYTIME_ORT_LEAK_CHECK=1 in the environment when ORT is loaded, a
 * process that exits with any of them still live says so on stderr and
 * exits 70 instead: the check that finds a session or value anytime forgot
 * to release, which LeakSanitizer cannot tell from ORT's own lifetime
 * allocations in a stripped library (tests/lsan.supp). Any thread. */
AT_API void at_runtime_live_objects(long *sessions, long *values);

/* The ORT release anytime was compiled against, e.g. "1.30.0". Static. */
AT_API const char *at_runtime_compiled_release(void);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_RUNTIME_H */
