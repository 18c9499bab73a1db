/* src/ort/runtime.c — opening ONNX Runtime and enforcing the version lock.
 *
 * The library is dlopen()ed (never linked) so a wrong release is refused with
 * a message naming both versions instead of failing in the dynamic loader on
 * versioned symbols. Initialisation runs once per process (pthread_once) and
 * its outcome, success or failure, is sticky. It also creates the one OrtEnv
 * every session shares, with a logger that forwards ORT's messages to the
 * anytime log sink.
 *
 * DESIGN: all globals below are written only inside init_once() and read
 * after pthread_once() returns, which orders the writes before the reads; no
 * other lock is needed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "ort/ort_internal.h"

#ifndef AT_ORT_RELEASE
#error "AT_ORT_RELEASE must be defined by the build (cmake/OrtSdk.cmake)"
#endif
#ifndef AT_ORT_DEFAULT_LIB
#define AT_ORT_DEFAULT_LIB "libonnxruntime.so"
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static at_status g_status = AT_ERR_RUNTIME_LOAD;
static char g_error[1024];
static const OrtApi *g_api;
static OrtEnv *g_env;
static char g_lib_path[1024];
static char g_lib_release[64];
static int g_mismatch;
static char **g_providers;
static int g_n_providers;
static atomic_long g_live[2]; /* at_ort_live_kind */

static void ort_logger(void *param, OrtLoggingLevel severity, const char *category,
                       const char *logid, const char *code_location,
                       const char *message) {
  (void)param;
  (void)logid;
  (void)code_location;
  at_log_level lvl = AT_LOG_DEBUG;
  if (severity >= ORT_LOGGING_LEVEL_ERROR) lvl = AT_LOG_ERROR;
  else if (severity == ORT_LOGGING_LEVEL_WARNING) lvl = AT_LOG_WARN;
  else if (severity == ORT_LOGGING_LEVEL_INFO) lvl = AT_LOG_INFO;
  /* Saving an optimised graph for the artifact cache always draws this
   * warning; the cache key includes the CPU features it warns about, so it
   * is expected and not worth a warning line on every first start. */
  if (lvl == AT_LOG_WARN && message && strstr(message, "hardware specific optimizations"))
    lvl = AT_LOG_INFO;
  at_log(lvl, "ort", "[%s] %s", category ? category : "", message ? message : "");
}

static at_status init_fail(at_status s, const char *fmt, const char *a, const char *b,
                           const char *c) {
  snprintf(g_error, sizeof g_error, fmt, a, b, c);
  return s;
}

static at_status do_init(void) {
  const char *env_path = getenv("ANYTIME_ORT_LIB");
  const char *path = (env_path && *env_path) ? env_path : AT_ORT_DEFAULT_LIB;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && !(env_path && *env_path)) {
    /* The configured SDK moved away: fall back to the loader's search path. */
    path = "libonnxruntime.so";
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    const char *why = dlerror();
    return init_fail(AT_ERR_RUNTIME_LOAD,
                     "cannot open ONNX Runtime library '%s': %s (set ANYTIME_ORT_LIB to "
                     "the libonnxruntime.so of release %s)",
                     path, why ? why : "unknown error", AT_ORT_RELEASE);
  }
  snprintf(g_lib_path, sizeof g_lib_path, "%s", path);
  typedef const OrtApiBase *(*get_base_fn)(void);
  get_base_fn get_base;
  *(void **)&get_base = dlsym(h, "OrtGetApiBase");
  if (!get_base) {
    return init_fail(AT_ERR_RUNTIME_LOAD,
                     "'%s' is not an ONNX Runtime library (no OrtGetApiBase)%s%s", path,
                     "", "");
  }
  const OrtApiBase *base = get_base();
  const char *lib_ver = base ? base->GetVersionString() : NULL;
  snprintf(g_lib_release, sizeof g_lib_release, "%s", lib_ver ? lib_ver : "unknown");
  if (strcmp(g_lib_release, AT_ORT_RELEASE) != 0) {
    const char *allow = getenv("ANYTIME_ALLOW_ORT_MISMATCH");
    if (!(allow && strcmp(allow, "1") == 0)) {
      char detail[512];
      snprintf(detail, sizeof detail, "%s", path);
      return init_fail(AT_ERR_RUNTIME_VERSION,
                       "the library '%s' is release %s, "
                       "but anytime was built against release %s. Point ANYTIME_ORT_LIB "
                       "at a matching library or rebuild; ANYTIME_ALLOW_ORT_MISMATCH=1 "
                       "overrides this check for experiments.",
                       detail, g_lib_release, AT_ORT_RELEASE);
    }
    g_mismatch = 1;
  }
  g_api = base->GetApi(ORT_API_VERSION);
  if (!g_api) {
    char api[16];
    snprintf(api, sizeof api, "%d", ORT_API_VERSION);
    return init_fail(AT_ERR_RUNTIME_VERSION,
                     "ONNX Runtime library release %s does not provide API version %s "
                     "(anytime was built against release %s)",
                     g_lib_release, api, AT_ORT_RELEASE);
  }
  OrtStatus *st = g_api->CreateEnvWithCustomLogger(ort_logger, NULL,
                                                   ORT_LOGGING_LEVEL_WARNING, "anytime",
                                                   &g_env);
  if (st) {
    snprintf(g_error, sizeof g_error, "cannot create the ONNX Runtime environment: %s",
             g_api->GetErrorMessage(st));
    g_api->ReleaseStatus(st);
    return AT_ERR_ORT;
  }
  /* No usage-telemetry events from a server library (best effort: a failure
   * here changes nothing anytime relies on). This stops events, not ORT's
   * telemetry files, which are made earlier: the anytime program sets
   * ORT_DISABLE_TELEMETRY=1 before loading ORT for those (src/cli/main.c). */
  st = g_api->DisableTelemetryEvents(g_env);
  if (st) g_api->ReleaseStatus(st);
  st = g_api->GetAvailableProviders(&g_providers, &g_n_providers);
  if (st) {
    g_api->ReleaseStatus(st);
    g_providers = NULL;
    g_n_providers = 0;
  }
  return AT_OK;
}

void at_ort_live_add(at_ort_live_kind kind, long delta) {
  atomic_fetch_add(&g_live[kind], delta);
}

void at_runtime_live_objects(long *sessions, long *values) {
  if (sessions) *sessions = atomic_load(&g_live[AT_ORT_LIVE_SESSION]);
  if (values) *values = atomic_load(&g_live[AT_ORT_LIVE_VALUE]);
}

/* ANYTIME_ORT_LEAK_CHECK=1: at exit, anything still live is a leak. */
static void leak_check(void) {
  long s, v;
  at_runtime_live_objects(&s, &v);
  if (s == 0 && v == 0) return;
  fflush(NULL);
  fprintf(stderr,
          "anytime: ANYTIME_ORT_LEAK_CHECK: %ld ONNX Runtime session(s) and %ld value(s) "
          "were never released\n",
          s, v);
  _exit(70);
}

static void init_once(void) {
  g_status = do_init();
  const char *lc = getenv("ANYTIME_ORT_LEAK_CHECK");
  if (g_status == AT_OK && lc && strcmp(lc, "1") == 0) atexit(leak_check);
  if (g_status == AT_OK && g_mismatch) {
    at_log(AT_LOG_WARN, "ort",
           "!!! ANYTIME_ALLOW_ORT_MISMATCH=1: running ONNX Runtime %s from '%s' although "
           "anytime was built against %s. Results and performance are NOT the tested "
           "configuration. !!!",
           g_lib_release, g_lib_path, AT_ORT_RELEASE);
  }
}

at_status at_runtime_init(void) {
  pthread_once(&g_once, init_once);
  if (g_status != AT_OK) return at_fail(g_status, "%s", g_error);
  return AT_OK;
}

const OrtApi *at_ort_api(void) { return g_api; }
OrtEnv *at_ort_env(void) { return g_env; }

const char *at_runtime_compiled_release(void) { return AT_ORT_RELEASE; }

at_status at_runtime_version_info(at_version_info *out) {
  if (!out) return at_fail(AT_ERR_INVALID_ARG, "out is NULL");
  at_status s = at_runtime_init();
  if (s != AT_OK) return s;
  out->anytime_version = AT_VERSION_STRING;
  out->header_api_version = ORT_API_VERSION;
  out->compiled_release = AT_ORT_RELEASE;
  out->library_release = g_lib_release;
  out->library_path = g_lib_path;
  out->mismatch = g_mismatch;
  out->providers = (const char *const *)g_providers;
  out->n_providers = g_n_providers;
  return AT_OK;
}

at_status at_ort_fail(OrtStatus *st, at_status code, const char *what) {
  at_status r = at_fail(code, "%s: %s", what, g_api->GetErrorMessage(st));
  g_api->ReleaseStatus(st);
  return r;
}
