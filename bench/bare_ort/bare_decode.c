/* bench/bare_ort/bare_decode.c — a bare ONNX Runtime greedy decode loop over
 * a Hugging Face "with past" export (or, with --gqa, a GroupQueryAttention
 * graph) that shares no code with anytime: the physical limit the generation
 * lane's decode step is measured against (bench/decode_compare.sh).
 *
 * ONNX Runtime's C header and libc only (tests/integration/layering.sh
 * checks bench/bare_ort/). One session with default options plus anytime's
 * thread settings (intra-op T, inter-op 1, no spinning, ORT_ENABLE_ALL), and
 * IO binding: by default every step binds the last step's `present.*` values
 * as the `past_key_values.*` inputs and lets ONNX Runtime allocate the
 * outputs, so nothing is copied between steps by this program. B sequences
 * of the same length (no padding), their past first filled with C positions
 * of small random values (the timing does not depend on the values); then N
 * steps, each feeding every row's argmax as its next token.
 *
 * --gqa MAXLEN instead drives a graph whose attention is ONNX Runtime's
 * com.microsoft GroupQueryAttention (tools/testmodels/make_gqa_decoder.py:
 * inputs input_ids, seqlens_k, total_sequence_length, past_key_values.*):
 * one buffer of [B, kv_heads, MAXLEN, head_dim] per layer key/value,
 * allocated here once per pass, is bound both as the past input and as the
 * present output (past-present share buffer: the kernel writes each step's
 * new row in place and copies no past), its first C positions filled as
 * above; each step binds seqlens_k = C + s (total - 1) per row and
 * total_sequence_length = C + s + 1. Needs C + N <= MAXLEN.
 *
 * Per pass: the median step time; after P passes the median and range of
 * tokens/s = B / step. The last line is machine-readable:
 *   csv,B,C,step_ms_median,tokens_per_s_median,tokens_per_s_lo,tokens_per_s_hi
 *
 *   bare_decode --model M.onnx --batch B --cached C [--steps N (16)]
 *               [--passes P (3)] [--threads T (1)] [--gqa MAXLEN]
 *               [--lib libonnxruntime.so]
 *
 * Build alone (no CMake, no anytime):
 *   cc -O2 -std=c11 -I ORT_INCLUDE bench/bare_ort/bare_decode.c -o bare_decode -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <onnxruntime_c_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BARE_DEFAULT_LIB
#define BARE_DEFAULT_LIB "libonnxruntime.so.1"
#endif
#define MAX_IO 256
#define MAX_STEPS 1024

static const OrtApi *ort;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "bare_decode: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void check(OrtStatus *s, const char *what) {
  if (s) die(what, ort->GetErrorMessage(s));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long arg_long(const char *v, const char *name, long lo, long hi) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < lo || x > hi) die("bad value for", name);
  return x;
}

static OrtSession *sess;
static OrtMemoryInfo *mem;
static char *in_names[MAX_IO], *out_names[MAX_IO];
static size_t n_in, n_out;
static int64_t kv_heads, head_dim;

static void open_session(const char *lib, const char *model, int threads) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) die("dlopen", dlerror());
  const OrtApiBase *(*get_base)(void);
  *(void **)&get_base = dlsym(h, "OrtGetApiBase");
  if (!get_base) die("no OrtGetApiBase in", lib);
  ort = get_base()->GetApi(ORT_API_VERSION);
  if (!ort) die("the library does not offer this header's API version", lib);
  OrtEnv *env;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "bare_decode", &env), "CreateEnv");
  OrtSessionOptions *so;
  check(ort->CreateSessionOptions(&so), "CreateSessionOptions");
  check(ort->SetIntraOpNumThreads(so, threads), "SetIntraOpNumThreads");
  check(ort->SetInterOpNumThreads(so, 1), "SetInterOpNumThreads");
  check(ort->AddSessionConfigEntry(so, "session.intra_op.allow_spinning", "0"), "config");
  check(ort->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL), "optimization level");
  check(ort->CreateSession(env, model, so, &sess), "CreateSession");
  ort->ReleaseSessionOptions(so);
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem), "meminfo");
  OrtAllocator *alloc;
  check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  check(ort->SessionGetInputCount(sess, &n_in), "input count");
  check(ort->SessionGetOutputCount(sess, &n_out), "output count");
  if (n_in > MAX_IO || n_out > MAX_IO) die("too many inputs or outputs", NULL);
  for (size_t i = 0; i < n_in; i++) {
    check(ort->SessionGetInputName(sess, i, alloc, &in_names[i]), "input name");
    if (strncmp(in_names[i], "past_key_values.", 16) || kv_heads) continue;
    OrtTypeInfo *ti;
    const OrtTensorTypeAndShapeInfo *tsi;
    int64_t dims[4];
    size_t nd;
    check(ort->SessionGetInputTypeInfo(sess, i, &ti), "input type");
    check(ort->CastTypeInfoToTensorInfo(ti, &tsi), "tensor info");
    check(ort->GetDimensionsCount(tsi, &nd), "dims count");
    if (nd != 4) die("a past input is not 4-D", in_names[i]);
    check(ort->GetDimensions(tsi, dims, 4), "dims");
    kv_heads = dims[1];
    head_dim = dims[3];
    ort->ReleaseTypeInfo(ti);
  }
  for (size_t i = 0; i < n_out; i++)
    check(ort->SessionGetOutputName(sess, i, alloc, &out_names[i]), "output name");
  if (kv_heads < 1 || head_dim < 1) die("no past_key_values.* input with static heads/head_dim", model);
}

static OrtValue *int64_tensor(int64_t *data, int64_t rows, int64_t cols) {
  OrtValue *v;
  int64_t shape[2] = {rows, cols};
  check(ort->CreateTensorWithDataAsOrtValue(mem, data, (size_t)(rows * cols) * sizeof *data, shape,
                                            2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &v),
        "int64 tensor");
  return v;
}

/* The index in out_names of present.X.Y for past input past_key_values.X.Y. */
static size_t present_of(const char *past) {
  char want[256];
  snprintf(want, sizeof want, "present.%s", past + 16);
  for (size_t i = 0; i < n_out; i++)
    if (!strcmp(out_names[i], want)) return i;
  die("no output for", past);
  return 0;
}

/* Greedy: each row's argmax over the last position's logits [B, S, V] is
 * its next token. */
static void greedy(OrtValue *logits_v, int B, int64_t *ids) {
  float *logits;
  OrtTensorTypeAndShapeInfo *info;
  int64_t ld[3];
  check(ort->GetTensorMutableData(logits_v, (void **)&logits), "logits");
  check(ort->GetTensorTypeAndShape(logits_v, &info), "logits shape");
  check(ort->GetDimensions(info, ld, 3), "logits dims");
  ort->ReleaseTensorTypeAndShapeInfo(info);
  for (int b = 0; b < B; b++) {
    const float *row = logits + (size_t)b * ld[1] * ld[2] + (size_t)(ld[1] - 1) * ld[2];
    int64_t best = 0;
    for (int64_t v = 1; v < ld[2]; v++)
      if (row[v] > row[best]) best = v;
    ids[b] = best;
  }
}

/* One pass: fill the past with C positions, run `steps` steps; returns the
 * median step time in seconds. */
static double pass(int B, int C, int steps) {
  OrtIoBinding *bind;
  check(ort->CreateIoBinding(sess, &bind), "CreateIoBinding");
  OrtValue *past[MAX_IO] = {0};
  float *seed_past[MAX_IO] = {0};
  size_t per = (size_t)B * kv_heads * C * head_dim;
  for (size_t i = 0; i < n_in; i++) {
    if (strncmp(in_names[i], "past_key_values.", 16)) continue;
    seed_past[i] = malloc(per * sizeof(float) + 1);
    if (!seed_past[i]) die("out of memory", NULL);
    for (size_t k = 0; k < per; k++) seed_past[i][k] = (float)((k * 2654435761u) % 2001) / 1000.0f - 1.0f;
    int64_t shape[4] = {B, kv_heads, C, head_dim};
    check(ort->CreateTensorWithDataAsOrtValue(mem, seed_past[i], per * sizeof(float), shape, 4,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &past[i]),
          "past tensor");
  }
  int64_t *ids = malloc((size_t)B * sizeof *ids), *pos = malloc((size_t)B * sizeof *pos);
  int64_t *mask = malloc((size_t)B * (C + steps + 1) * sizeof *mask);
  if (!ids || !pos || !mask) die("out of memory", NULL);
  for (int b = 0; b < B; b++) ids[b] = 100 + b;
  for (size_t k = 0; k < (size_t)B * (C + steps + 1); k++) mask[k] = 1;
  double t[MAX_STEPS];
  OrtValue **outs = NULL;
  size_t n_bound = 0;
  for (int s = 0; s < steps; s++) {
    int L = C + s;
    for (int b = 0; b < B; b++) pos[b] = L;
    OrtValue *v_ids = int64_tensor(ids, B, 1), *v_pos = int64_tensor(pos, B, 1);
    OrtValue *v_mask = int64_tensor(mask, B, L + 1);
    double t0 = now_s();
    for (size_t i = 0; i < n_in; i++) {
      OrtValue *v = !strcmp(in_names[i], "input_ids")        ? v_ids
                    : !strcmp(in_names[i], "attention_mask") ? v_mask
                    : !strcmp(in_names[i], "position_ids")   ? v_pos
                                                             : past[i];
      if (!v) die("an input this loop does not know", in_names[i]);
      check(ort->BindInput(bind, in_names[i], v), "BindInput");
    }
    for (size_t i = 0; i < n_out; i++) check(ort->BindOutputToDevice(bind, out_names[i], mem), "BindOutput");
    check(ort->RunWithBinding(sess, NULL, bind), "RunWithBinding");
    OrtAllocator *alloc;
    check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
    OrtValue **got;
    check(ort->GetBoundOutputValues(bind, alloc, &got, &n_bound), "GetBoundOutputValues");
    greedy(got[0], B, ids);
    /* the presents become the next step's pasts; the last ones are let go */
    for (size_t i = 0; i < n_in; i++)
      if (past[i] && !strncmp(in_names[i], "past_key_values.", 16)) {
        ort->ReleaseValue(past[i]);
        past[i] = got[present_of(in_names[i])];
        got[present_of(in_names[i])] = NULL;
      }
    t[s] = now_s() - t0;
    for (size_t i = 0; i < n_bound; i++)
      if (got[i]) ort->ReleaseValue(got[i]);
    check(ort->AllocatorFree(alloc, got), "free bound outputs");
    ort->ClearBoundInputs(bind);
    ort->ClearBoundOutputs(bind);
    ort->ReleaseValue(v_ids);
    ort->ReleaseValue(v_pos);
    ort->ReleaseValue(v_mask);
  }
  (void)outs;
  for (size_t i = 0; i < n_in; i++) {
    if (past[i]) ort->ReleaseValue(past[i]);
    free(seed_past[i]);
  }
  free(ids);
  free(pos);
  free(mask);
  ort->ReleaseIoBinding(bind);
  return median(t, steps);
}

static OrtValue *int32_tensor(int32_t *data, const int64_t *shape, size_t ndims, size_t count) {
  OrtValue *v;
  check(ort->CreateTensorWithDataAsOrtValue(mem, data, count * sizeof *data, shape, ndims,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, &v),
        "int32 tensor");
  return v;
}

/* The index in in_names of past_key_values.X.Y for output present.X.Y, or
 * n_in when there is none. */
static size_t past_of(const char *present) {
  char want[256];
  if (strncmp(present, "present.", 8)) return n_in;
  snprintf(want, sizeof want, "past_key_values.%s", present + 8);
  for (size_t i = 0; i < n_in; i++)
    if (!strcmp(in_names[i], want)) return i;
  return n_in;
}

/* One pass of --gqa mode: one [B, kv_heads, maxlen, head_dim] buffer per past
 * input, bound as that past and as its present (share buffer), its first C
 * positions filled; `steps` steps; returns the median step time in seconds. */
static double pass_gqa(int B, int C, int steps, int maxlen) {
  OrtIoBinding *bind;
  check(ort->CreateIoBinding(sess, &bind), "CreateIoBinding");
  OrtValue *kv[MAX_IO] = {0};
  float *buf[MAX_IO] = {0};
  size_t rows = (size_t)B * kv_heads, row = (size_t)maxlen * head_dim, seed = (size_t)C * head_dim;
  for (size_t i = 0; i < n_in; i++) {
    if (strncmp(in_names[i], "past_key_values.", 16)) continue;
    buf[i] = calloc(rows * row, sizeof(float));
    if (!buf[i]) die("out of memory", NULL);
    for (size_t r = 0; r < rows; r++)
      for (size_t k = 0; k < seed; k++)
        buf[i][r * row + k] = (float)(((r * seed + k) * 2654435761u) % 2001) / 1000.0f - 1.0f;
    int64_t shape[4] = {B, kv_heads, maxlen, head_dim};
    check(ort->CreateTensorWithDataAsOrtValue(mem, buf[i], rows * row * sizeof(float), shape, 4,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &kv[i]),
          "past/present buffer");
  }
  int64_t *ids = malloc((size_t)B * sizeof *ids);
  int32_t *seqlens = malloc((size_t)B * sizeof *seqlens), total = 0;
  if (!ids || !seqlens) die("out of memory", NULL);
  for (int b = 0; b < B; b++) ids[b] = 100 + b;
  int64_t b_shape[1] = {B};
  double t[MAX_STEPS];
  for (int s = 0; s < steps; s++) {
    for (int b = 0; b < B; b++) seqlens[b] = C + s; /* total length - 1 */
    total = C + s + 1;
    OrtValue *v_ids = int64_tensor(ids, B, 1);
    OrtValue *v_seq = int32_tensor(seqlens, b_shape, 1, (size_t)B);
    OrtValue *v_total = int32_tensor(&total, NULL, 0, 1);
    double t0 = now_s();
    for (size_t i = 0; i < n_in; i++) {
      OrtValue *v = !strcmp(in_names[i], "input_ids")               ? v_ids
                    : !strcmp(in_names[i], "seqlens_k")             ? v_seq
                    : !strcmp(in_names[i], "total_sequence_length") ? v_total
                                                                    : kv[i];
      if (!v) die("an input this loop does not know", in_names[i]);
      check(ort->BindInput(bind, in_names[i], v), "BindInput");
    }
    /* logits first, so it is the first bound output value */
    check(ort->BindOutputToDevice(bind, "logits", mem), "BindOutput logits");
    for (size_t i = 0; i < n_out; i++) {
      if (!strcmp(out_names[i], "logits")) continue;
      size_t p = past_of(out_names[i]);
      if (p == n_in) die("an output this loop does not know", out_names[i]);
      check(ort->BindOutput(bind, out_names[i], kv[p]), "BindOutput present");
    }
    check(ort->RunWithBinding(sess, NULL, bind), "RunWithBinding");
    OrtAllocator *alloc;
    check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
    OrtValue **got;
    size_t n_bound;
    check(ort->GetBoundOutputValues(bind, alloc, &got, &n_bound), "GetBoundOutputValues");
    greedy(got[0], B, ids);
    t[s] = now_s() - t0;
    for (size_t i = 0; i < n_bound; i++) ort->ReleaseValue(got[i]);
    check(ort->AllocatorFree(alloc, got), "free bound outputs");
    ort->ClearBoundInputs(bind);
    ort->ClearBoundOutputs(bind);
    ort->ReleaseValue(v_ids);
    ort->ReleaseValue(v_seq);
    ort->ReleaseValue(v_total);
  }
  for (size_t i = 0; i < n_in; i++) {
    if (kv[i]) ort->ReleaseValue(kv[i]);
    free(buf[i]);
  }
  free(ids);
  free(seqlens);
  ort->ReleaseIoBinding(bind);
  return median(t, steps);
}

int main(int argc, char **argv) {
  const char *model = NULL, *lib = BARE_DEFAULT_LIB;
  int B = 1, C = 16, steps = 16, passes = 3, threads = 1, gqa = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      printf("usage: bare_decode --model M.onnx --batch B --cached C [--steps N] [--passes P]\n"
             "                   [--threads T] [--gqa MAXLEN] [--lib libonnxruntime.so]\n"
             "A bare ONNX Runtime greedy decode loop with IO binding (see the file's top comment).\n");
      return 0;
    }
    if (!v) die("missing value for", a);
    if (!strcmp(a, "--model")) model = v;
    else if (!strcmp(a, "--lib")) lib = v;
    else if (!strcmp(a, "--batch")) B = (int)arg_long(v, a, 1, 256);
    else if (!strcmp(a, "--cached")) C = (int)arg_long(v, a, 0, 1 << 20);
    else if (!strcmp(a, "--steps")) steps = (int)arg_long(v, a, 1, MAX_STEPS);
    else if (!strcmp(a, "--passes")) passes = (int)arg_long(v, a, 1, 64);
    else if (!strcmp(a, "--threads")) threads = (int)arg_long(v, a, 1, 256);
    else if (!strcmp(a, "--gqa")) gqa = (int)arg_long(v, a, 1, 1 << 20);
    else die("unknown option", a);
    i++;
  }
  if (!model) die("--model is required", NULL);
  if (gqa && (long)C + (steps > 2 ? steps : 2) > gqa)
    die("--gqa MAXLEN must be at least C + N", NULL);
  open_session(lib, model, threads);
  if (gqa) pass_gqa(B, C, 2, gqa); /* warm */
  else pass(B, C, 2);
  double step[64], tps[64];
  for (int p = 0; p < passes; p++) {
    step[p] = gqa ? pass_gqa(B, C, steps, gqa) : pass(B, C, steps);
    tps[p] = B / step[p];
    printf("pass %d: batch %d, cached %d: step %.3f ms, %.1f tokens/s\n", p + 1, B, C,
           step[p] * 1e3, tps[p]);
  }
  double sm = median(step, passes);
  double lo = tps[0], hi = tps[0];
  for (int p = 1; p < passes; p++) {
    if (tps[p] < lo) lo = tps[p];
    if (tps[p] > hi) hi = tps[p];
  }
  printf("csv,%d,%d,%.4f,%.1f,%.1f,%.1f\n", B, C, sm * 1e3, median(tps, passes), lo, hi);
  return 0;
}
