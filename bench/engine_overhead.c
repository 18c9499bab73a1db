/* bench/engine_overhead.c — what the engine costs per request.
 *
 * Three paths run the same model on the same input, one request at a time:
 *   bare    a raw ONNX Runtime Run loop: our own OrtSession (same options as
 *           the engine: 1 intra-op thread, no spinning, ORT_ENABLE_ALL) with
 *           the input OrtValues created once, outside the loop;
 *   session at_session_run on the engine's shared session (validation,
 *           zero-copy tensor wrapping, output views);
 *   engine  at_engine_submit -> completion callback with one worker; the
 *           latency is taken inside the callback (submitted_ns -> callback),
 *           so it includes queueing and the worker's wake-up.
 * The engine's overhead is median(engine) - median(bare). Each pass times
 * ITERS requests per path (paths interleaved per pass); the summary is the
 * median of the pass medians and the range of pass medians.
 *
 * usage: bench_engine_overhead MODEL.onnx [passes=7] [iters=2000] [seq=26]
 * MODEL must take input_ids/attention_mask [batch, seq] int64 (batch 1 used).
 */
#include <dlfcn.h>
#include <onnxruntime_c_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/anytime.h"
#include "core/internal.h"

/* The bare side of the comparison: the library the build configured, opened
 * directly (no anytime in between), and a session with the options
 * anytime's workers use. Failures print and exit. */
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


static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static double median_us(uint64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  return (n % 2 ? (double)v[n / 2] : 0.5 * (double)(v[n / 2 - 1] + v[n / 2])) / 1000.0;
}
/* the median of v[0..n) without reordering v (at_profile_median sorts) */
static double median_d(const double *v, int n) {
  double t[64];
  memcpy(t, v, (size_t)n * sizeof *v);
  return at_profile_median(t, (size_t)n);
}

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int done;
  uint64_t lat_ns;
} waiter;

static void on_done(void *user, at_status st, const at_outputs *o, const at_timing *t,
                    const char *err) {
  uint64_t now = at_now_ns();
  waiter *w = user;
  if (st != AT_OK) {
    fprintf(stderr, "engine: %s: %s\n", at_strerror(st), err);
    exit(1);
  }
  (void)o;
  pthread_mutex_lock(&w->m);
  w->lat_ns = now - t->submitted_ns;
  w->done = 1;
  pthread_cond_signal(&w->c);
  pthread_mutex_unlock(&w->m);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.onnx [passes=7] [iters=2000] [seq=26]\n", argv[0]);
    return 2;
  }
  const char *model = argv[1];
  int passes = argc > 2 ? atoi(argv[2]) : 7;
  int iters = argc > 3 ? atoi(argv[3]) : 2000;
  int64_t seq = argc > 4 ? atoll(argv[4]) : 26;
  if (passes < 1 || passes > 64 || iters < 10 || seq < 1 || seq > 512) return 2;

  int64_t *ids = calloc((size_t)seq, 8), *mask = calloc((size_t)seq, 8);
  for (int64_t i = 0; i < seq; i++) ids[i] = 1 + (i * 7) % 90, mask[i] = 1;
  ids[0] = 2;
  int64_t shape[2] = {1, seq};

  /* bare ORT */
  OrtSession *sess = bare_ort_session(model, ORT_LOGGING_LEVEL_WARNING);
  OrtMemoryInfo *mi;
  CHECK(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi));
  OrtValue *in[2] = {0};
  CHECK(api->CreateTensorWithDataAsOrtValue(mi, ids, (size_t)seq * 8, shape, 2,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[0]));
  CHECK(api->CreateTensorWithDataAsOrtValue(mi, mask, (size_t)seq * 8, shape, 2,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[1]));
  const char *in_names[2] = {"input_ids", "attention_mask"};
  size_t n_out;
  CHECK(api->SessionGetOutputCount(sess, &n_out));
  OrtAllocator *alloc;
  CHECK(api->GetAllocatorWithDefaultOptions(&alloc));
  char *out_names[16];
  for (size_t i = 0; i < n_out && i < 16; i++)
    CHECK(api->SessionGetOutputName(sess, i, alloc, &out_names[i]));

  /* anytime engine with one worker */
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = 1;
  at_engine *e;
  if (at_engine_create(&ep, &e) != AT_OK || at_engine_add_variant(e, "m", model, NULL, NULL) != AT_OK ||
      at_engine_start(e) != AT_OK)
    return fprintf(stderr, "engine: %s\n", at_last_error()), 1;
  at_session *as = at_engine_variant_session(e, 0);
  at_tensor tin[2] = {
      {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, seq}, .data = ids},
      {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, seq}, .data = mask},
  };
  waiter w;
  pthread_mutex_init(&w.m, NULL);
  pthread_cond_init(&w.c, NULL);

  uint64_t *lat = malloc(sizeof(uint64_t) * (size_t)iters);
  double bare[64], sessm[64], eng[64], over[64];
  for (int p = -1; p < passes; p++) { /* pass -1 warms up */
    for (int i = 0; i < iters; i++) {
      OrtValue *outs[16] = {0};
      uint64_t t0 = at_now_ns();
      CHECK(api->Run(sess, NULL, in_names, (const OrtValue *const *)in, 2,
                     (const char *const *)out_names, n_out, outs));
      lat[i] = at_now_ns() - t0;
      for (size_t k = 0; k < n_out; k++) api->ReleaseValue(outs[k]);
    }
    double b = median_us(lat, iters);
    for (int i = 0; i < iters; i++) {
      at_outputs *o;
      uint64_t t0 = at_now_ns();
      if (at_session_run(as, tin, 2, NULL, 0, &o) != AT_OK) return 1;
      lat[i] = at_now_ns() - t0;
      at_outputs_free(o);
    }
    double s = median_us(lat, iters);
    for (int i = 0; i < iters; i++) {
      w.done = 0;
      if (at_engine_submit(e, 0, tin, 2, NULL, 0, on_done, &w) != AT_OK) return 1;
      pthread_mutex_lock(&w.m);
      while (!w.done) pthread_cond_wait(&w.c, &w.m);
      pthread_mutex_unlock(&w.m);
      lat[i] = w.lat_ns;
    }
    double en = median_us(lat, iters);
    if (p < 0) continue;
    bare[p] = b, sessm[p] = s, eng[p] = en, over[p] = en - b;
    printf("pass %d: bare %.1f us  session %.1f us  engine %.1f us  overhead %.1f us\n", p + 1,
           b, s, en, en - b);
  }
  double mn = over[0], mx = over[0];
  for (int p = 1; p < passes; p++) mn = over[p] < mn ? over[p] : mn, mx = over[p] > mx ? over[p] : mx;
  printf("summary: model=%s seq=%lld batch=1 passes=%d iters=%d\n", model, (long long)seq, passes,
         iters);
  printf("  bare ORT Run   median %.1f us\n", median_d(bare, passes));
  printf("  at_session_run median %.1f us\n", median_d(sessm, passes));
  printf("  engine submit->callback median %.1f us\n", median_d(eng, passes));
  printf("  engine overhead median %.1f us (range %.1f .. %.1f over passes)\n",
         median_d(over, passes), mn, mx);
  at_engine_destroy(e);
  return 0;
}
