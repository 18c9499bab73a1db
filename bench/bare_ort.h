/* bench/bare_ort.h — the benchmarks' bare ONNX Runtime: the library the build
 * configured, opened directly (no anytime in between), and a session with the
 * options anytime's workers use (1 intra-op and 1 inter-op thread, no
 * spinning, ORT_ENABLE_ALL). Shared by bench/engine_overhead.c and
 * bench/bare_throughput.c, the baselines the serving path is measured against.
 * Benchmarks only: failures print and exit. */
#ifndef ANYTIME_BENCH_BARE_ORT_H
#define ANYTIME_BENCH_BARE_ORT_H

#include <dlfcn.h>
#include <onnxruntime_c_api.h>
#include <stdio.h>
#include <stdlib.h>

static const OrtApi *api;

#define CHECK(x)                                                 \
  do {                                                           \
    OrtStatus *s_ = (x);                                         \
    if (s_) {                                                    \
      fprintf(stderr, "ORT: %s\n", api->GetErrorMessage(s_));    \
      exit(1);                                                   \
    }                                                            \
  } while (0)

/* Load ORT (sets `api`) and create a session over `model`. */
static OrtSession *bare_ort_session(const char *model, OrtLoggingLevel level) {
  void *h = dlopen(AT_ORT_DEFAULT_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", AT_ORT_DEFAULT_LIB, dlerror());
    exit(1);
  }
  const OrtApiBase *(*gb)(void);
  *(void **)&gb = dlsym(h, "OrtGetApiBase");
  api = gb()->GetApi(ORT_API_VERSION);
  OrtEnv *env;
  CHECK(api->CreateEnv(level, "bench", &env));
  OrtSessionOptions *so;
  CHECK(api->CreateSessionOptions(&so));
  CHECK(api->SetIntraOpNumThreads(so, 1));
  CHECK(api->SetInterOpNumThreads(so, 1));
  CHECK(api->AddSessionConfigEntry(so, "session.intra_op.allow_spinning", "0"));
  CHECK(api->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL));
  OrtSession *sess;
  CHECK(api->CreateSession(env, model, so, &sess));
  api->ReleaseSessionOptions(so);
  return sess;
}

#endif
