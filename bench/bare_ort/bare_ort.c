/* bench/bare_ort/bare_ort.c — a bare ONNX Runtime Run loop that shares no code
 * with anytime: the reference every CPU-per-answer comparison in
 * docs/benchmarks.md is set against.
 *
 * It includes only ONNX Runtime's C header and libc, opens the library with
 * dlopen, creates a plain environment (logging at WARNING, nothing else) and
 * one session with default options plus the thread settings anytime's workers
 * use (intra-op threads 1, inter-op threads 1, intra-op spinning off,
 * ORT_ENABLE_ALL), and calls Run on a batch-1 input of L token ids from T
 * threads sharing that session. Inputs are found by name: `input_ids` gets
 * the ids, `attention_mask` ones, `token_type_ids` zeros; every other int64
 * input gets zeros. Every output is asked for, as a server answering with the
 * graph's outputs would.
 *
 * Per pass of S seconds it reports Runs per second, the median wall time of
 * one Run, and the process's CPU time (getrusage) per Run; after P passes the
 * median and range of each. Nothing else runs in the process. --gap-us and
 * --pollute-kb put a sleep or a cache-evicting write before each Run (not
 * timed), to price what a server's worker pays that a hot loop does not.
 *
 *   bare_ort --model M.onnx [--lib libonnxruntime.so.1] [--ids 101,2023,...
 *            | --len L] [--threads T] [--seconds S] [--passes P]
 *            [--warmup N] [--gap-us U] [--pollute-kb K] [--csv]
 *
 * Build alone (no CMake, no anytime):
 *   cc -O2 -std=c11 -I ORT_INCLUDE bench/bare_ort/bare_ort.c -o bare_ort -ldl -lpthread
 * The CMake build makes build/bench/bare_ort with the same line's flags.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <onnxruntime_c_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef BARE_DEFAULT_LIB
#define BARE_DEFAULT_LIB "libonnxruntime.so.1"
#endif
#define MAX_IO 16
#define MAX_PASSES 64
#define MAX_SAMPLES 200000

static const OrtApi *ort;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "bare_ort: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
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

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What every thread shares (read-only once the loop starts). */
static OrtSession *sess;
static OrtMemoryInfo *meminfo;
static size_t n_in, n_out;
static char *in_names[MAX_IO], *out_names[MAX_IO];
static int64_t *in_data[MAX_IO];
static int64_t seq_len;
static atomic_int stop_flag;
static long gap_us;          /* --gap-us: sleep between Runs (0: back to back) */
static size_t pollute_bytes; /* --pollute-kb: bytes written between Runs */

typedef struct {
  unsigned char *junk; /* pollute_bytes, written between Runs */
  long runs;
  double run_cpu; /* thread CPU seconds inside Run (only with a gap or pollution) */
  double *lat;    /* wall seconds per Run, up to MAX_SAMPLES */
  size_t n_lat;
} worker;

static void *loop(void *arg) {
  worker *w = arg;
  int64_t shape[2] = {1, seq_len};
  while (!atomic_load(&stop_flag)) {
    OrtValue *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    if (gap_us > 0) {
      struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
      nanosleep(&gap, NULL);
    }
    if (pollute_bytes) memset(w->junk, (int)(w->runs & 0xff), pollute_bytes);
    int split = gap_us > 0 || pollute_bytes;
    double tc0 = split ? thread_cpu_s() : 0;
    double t0 = now_s();
    for (size_t i = 0; i < n_in; i++)
      check(ort->CreateTensorWithDataAsOrtValue(meminfo, in_data[i], (size_t)seq_len * 8, shape, 2,
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[i]),
            "CreateTensorWithDataAsOrtValue");
    check(ort->Run(sess, NULL, (const char *const *)in_names, (const OrtValue *const *)in, n_in,
                   (const char *const *)out_names, n_out, out),
          "Run");
    for (size_t i = 0; i < n_in; i++) ort->ReleaseValue(in[i]);
    for (size_t i = 0; i < n_out; i++) ort->ReleaseValue(out[i]);
    double t1 = now_s();
    if (split) w->run_cpu += thread_cpu_s() - tc0;
    if (w->n_lat < MAX_SAMPLES) w->lat[w->n_lat++] = t1 - t0;
    w->runs++;
  }
  return NULL;
}

static void usage(void) {
  fputs(
      "usage: bare_ort --model M.onnx [--lib LIB] [--ids a,b,c | --len L] [--threads T]\n"
      "                [--seconds S] [--passes P] [--warmup N] [--gap-us U]\n"
      "                [--pollute-kb K] [--csv]\n"
      "A bare ONNX Runtime Run loop (batch 1, T threads sharing one session, 1 intra-op\n"
      "thread each, no spinning, ORT_ENABLE_ALL). Prints per-pass and median figures:\n"
      "Runs/s, wall time per Run (median of Runs), process CPU per Run.\n"
      "  --ids     token ids to feed (default: 101, then L-2 ids 2000.., then 102)\n"
      "  --len     sequence length when --ids is not given (default 11)\n"
      "  --threads threads calling Run (default 1)\n"
      "  --seconds length of one pass (default 3), --passes passes (default 5)\n"
      "  --warmup  Runs before the first pass, not counted (default 50)\n"
      "  --gap-us  sleep this long before each Run (default 0: back to back), to see\n"
      "            what a Run costs when its thread was asleep, as a server's worker is\n"
      "  --pollute-kb  write this many KiB before each Run (default 0), to see what a\n"
      "            Run costs after other work evicted its data from the caches\n"
      "  --csv     one machine-readable line at the end:\n"
      "            csv,L,threads,runs_per_s,wall_us,cpu_us_per_run,cpu_lo,cpu_hi,wall_lo,wall_hi\n",
      stderr);
}

int main(int argc, char **argv) {
  const char *model = NULL, *lib = BARE_DEFAULT_LIB, *ids_arg = NULL;
  long len = 11, threads = 1, passes = 5, warmup = 50;
  double seconds = 3;
  int csv = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--csv")) {
      csv = 1;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    }
    if (!v) {
      usage();
      die("missing value after", a);
    }
    if (!strcmp(a, "--model"))
      model = v;
    else if (!strcmp(a, "--lib"))
      lib = v;
    else if (!strcmp(a, "--ids"))
      ids_arg = v;
    else if (!strcmp(a, "--len"))
      len = strtol(v, NULL, 10);
    else if (!strcmp(a, "--threads"))
      threads = strtol(v, NULL, 10);
    else if (!strcmp(a, "--seconds"))
      seconds = strtod(v, NULL);
    else if (!strcmp(a, "--passes"))
      passes = strtol(v, NULL, 10);
    else if (!strcmp(a, "--warmup"))
      warmup = strtol(v, NULL, 10);
    else if (!strcmp(a, "--gap-us"))
      gap_us = strtol(v, NULL, 10);
    else if (!strcmp(a, "--pollute-kb"))
      pollute_bytes = (size_t)strtol(v, NULL, 10) * 1024;
    else {
      usage();
      die("unknown argument", a);
    }
    i++;
  }
  if (!model) {
    usage();
    die("--model is required", NULL);
  }
  if (threads < 1 || threads > 64) die("--threads must be 1..64", NULL);
  if (passes < 1 || passes > MAX_PASSES) die("--passes must be 1..64", NULL);
  if (!(seconds > 0)) die("--seconds must be > 0", NULL);

  /* the token ids */
  int64_t ids[4096];
  if (ids_arg) {
    len = 0;
    for (const char *p = ids_arg; *p;) {
      char *end;
      errno = 0;
      long long x = strtoll(p, &end, 10);
      if (end == p || errno || len >= 4096) die("bad --ids list", ids_arg);
      ids[len++] = x;
      p = *end == ',' ? end + 1 : end;
      if (*end && *end != ',') die("bad --ids list", ids_arg);
    }
  } else {
    if (len < 2 || len > 4096) die("--len must be 2..4096", NULL);
    ids[0] = 101;
    for (long t = 1; t + 1 < len; t++) ids[t] = 2000 + t;
    ids[len - 1] = 102;
  }
  seq_len = len;

  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) die("dlopen", dlerror());
  const OrtApiBase *(*get_base)(void);
  *(void **)&get_base = dlsym(h, "OrtGetApiBase");
  if (!get_base) die("no OrtGetApiBase in", lib);
  ort = get_base()->GetApi(ORT_API_VERSION);
  if (!ort) die("the library does not offer this header's API version", lib);

  OrtEnv *env;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "bare_ort", &env), "CreateEnv");
  OrtSessionOptions *so;
  check(ort->CreateSessionOptions(&so), "CreateSessionOptions");
  check(ort->SetIntraOpNumThreads(so, 1), "SetIntraOpNumThreads");
  check(ort->SetInterOpNumThreads(so, 1), "SetInterOpNumThreads");
  check(ort->AddSessionConfigEntry(so, "session.intra_op.allow_spinning", "0"), "config");
  check(ort->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL), "optimization level");
  check(ort->CreateSession(env, model, so, &sess), "CreateSession");
  ort->ReleaseSessionOptions(so);
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &meminfo), "meminfo");

  OrtAllocator *alloc;
  check(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  check(ort->SessionGetInputCount(sess, &n_in), "input count");
  check(ort->SessionGetOutputCount(sess, &n_out), "output count");
  if (n_in > MAX_IO || n_out > MAX_IO) die("too many inputs or outputs", NULL);
  for (size_t i = 0; i < n_in; i++) {
    check(ort->SessionGetInputName(sess, i, alloc, &in_names[i]), "input name");
    in_data[i] = calloc((size_t)len, sizeof(int64_t));
    if (!in_data[i]) die("out of memory", NULL);
    if (!strcmp(in_names[i], "input_ids"))
      memcpy(in_data[i], ids, (size_t)len * 8);
    else if (!strcmp(in_names[i], "attention_mask"))
      for (long t = 0; t < len; t++) in_data[i][t] = 1;
  }
  for (size_t i = 0; i < n_out; i++)
    check(ort->SessionGetOutputName(sess, i, alloc, &out_names[i]), "output name");

  worker w[64];
  pthread_t th[64];
  for (long i = 0; i < threads; i++) {
    w[i].lat = malloc(sizeof(double) * MAX_SAMPLES);
    w[i].junk = pollute_bytes ? malloc(pollute_bytes) : NULL;
    if (!w[i].lat || (pollute_bytes && !w[i].junk)) die("out of memory", NULL);
  }
  /* warm-up: the first Runs allocate ORT's arena and plan memory */
  for (long i = 0; i < warmup; i++) {
    OrtValue *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    int64_t shape[2] = {1, seq_len};
    for (size_t k = 0; k < n_in; k++)
      check(ort->CreateTensorWithDataAsOrtValue(meminfo, in_data[k], (size_t)seq_len * 8, shape, 2,
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[k]),
            "input");
    check(ort->Run(sess, NULL, (const char *const *)in_names, (const OrtValue *const *)in, n_in,
                   (const char *const *)out_names, n_out, out),
          "Run");
    for (size_t k = 0; k < n_in; k++) ort->ReleaseValue(in[k]);
    for (size_t k = 0; k < n_out; k++) ort->ReleaseValue(out[k]);
  }

  printf("bare_ort: %s, %s, L=%ld, %ld thread(s), %ld passes of %.1f s\n", model, lib, len, threads,
         passes, seconds);
  double rate[MAX_PASSES], wall[MAX_PASSES], cpu[MAX_PASSES], runcpu[MAX_PASSES];
  int split = gap_us > 0 || pollute_bytes;
  for (long p = 0; p < passes; p++) {
    atomic_store(&stop_flag, 0);
    for (long i = 0; i < threads; i++) w[i].runs = 0, w[i].n_lat = 0, w[i].run_cpu = 0;
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < threads; i++)
      if (pthread_create(&th[i], NULL, loop, &w[i])) die("pthread_create failed", NULL);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&stop_flag, 1);
    long runs = 0;
    size_t n_lat = 0;
    double rc = 0;
    for (long i = 0; i < threads; i++)
      pthread_join(th[i], NULL), runs += w[i].runs, rc += w[i].run_cpu;
    double t1 = now_s(), c1 = cpu_s();
    static double all[MAX_SAMPLES];
    for (long i = 0; i < threads; i++)
      for (size_t k = 0; k < w[i].n_lat && n_lat < MAX_SAMPLES; k++) all[n_lat++] = w[i].lat[k];
    rate[p] = (double)runs / (t1 - t0);
    wall[p] = median(all, n_lat) * 1e6;
    cpu[p] = runs ? (c1 - c0) * 1e6 / (double)runs : 0;
    runcpu[p] = runs ? rc * 1e6 / (double)runs : 0;
    printf("  pass %ld: %ld Runs, %.0f Runs/s, wall %.1f us per Run (median), CPU %.1f us per Run",
           p + 1, runs, rate[p], wall[p], cpu[p]);
    if (split) printf(" (inside Run, thread clock: %.1f us)", runcpu[p]);
    printf("\n");
  }
  double r = median(rate, (size_t)passes), wm = median(wall, (size_t)passes),
         cm = median(cpu, (size_t)passes);
  /* median() sorted each array: [0] and [passes-1] are the range */
  printf(
      "median over %ld passes: %.0f Runs/s (%.0f..%.0f), wall %.1f us per Run (%.1f..%.1f), "
      "CPU %.1f us per Run (%.1f..%.1f)\n",
      passes, r, rate[0], rate[passes - 1], wm, wall[0], wall[passes - 1], cm, cpu[0],
      cpu[passes - 1]);
  if (split) {
    double m = median(runcpu, (size_t)passes);
    printf("CPU inside Run (thread clock, the gap and the writes left out): %.1f us (%.1f..%.1f)\n",
           m, runcpu[0], runcpu[passes - 1]);
  }
  if (csv)
    printf("csv,%ld,%ld,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", len, threads, r, wm, cm, cpu[0],
           cpu[passes - 1], wall[0], wall[passes - 1]);
  return 0;
}
