/* bench/bare_ort/bare_ort.c — a bare ONNX Runtime Run loop that shares no code
 * with anytime: the reference every CPU-per-answer comparison in
 * docs/benchmarks.md is set against (bench/run_cost.sh, cpu_breakdown.sh,
 * serve_compare.sh).
 *
 * It includes only ONNX Runtime's C header and libc (tests/integration/
 * layering.sh checks that), opens the library with dlopen, creates a plain
 * environment (logging at WARNING, nothing else) and one session with
 * default options plus the thread settings anytime's workers use (intra-op
 * threads 1, inter-op threads 1, intra-op spinning off, ORT_ENABLE_ALL), and
 * calls Run from T threads sharing that session. Its token ids come from
 * outside (--ids, or --ids-file with one text's ids per line, made by the
 * Hugging Face tokenizers library in bench/bare_ort/ids.js); each Run takes the
 * next B texts of the thread's rotation, padded to the longest (pad id 0,
 * mask 0). Inputs are found by name: `input_ids` gets the ids,
 * `attention_mask` the mask, any other int64 input zeros. Every output is
 * asked for.
 *
 * Per pass of S seconds: Runs per second, texts per second, the median wall
 * time of one Run, the process's CPU time (getrusage) per Run and per text;
 * after P passes the median and range of each. --gap-us and --pollute-kb put
 * a sleep or a cache-evicting write before each Run (not timed), to price
 * what a server's worker pays that a hot loop does not; --no-arena turns
 * ORT's CPU memory arena off, as anytime's workers run, to compare like
 * with like (the reference is the default session, with the arena).
 *
 * Build alone (no CMake, no anytime):
 *   cc -O2 -std=c11 -I ORT_INCLUDE bench/bare_ort/bare_ort.c -o bare_ort -ldl -lpthread
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
#define MAX_LEN 4096
#define MAX_THREADS 64

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

/* Sorts v; returns the median (the mean of the middle two for an even n). */
static double median(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The texts: n_texts id sequences (read-only once the loop starts). */
static int64_t **texts;
static size_t *text_len, n_texts, max_len;

/* Parse "a,b,c" into a new array; returns its length. */
static size_t parse_ids(const char *s, int64_t **out) {
  int64_t *ids = malloc(sizeof(int64_t) * MAX_LEN);
  size_t n = 0;
  if (!ids) die("out of memory", NULL);
  for (const char *p = s; *p && *p != '\n';) {
    char *end;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno || n >= MAX_LEN || (*end && *end != ',' && *end != '\n'))
      die("bad id list (comma-separated integers, at most 4096)", s);
    ids[n++] = x;
    p = *end == ',' ? end + 1 : end;
  }
  if (n == 0) die("empty id list", NULL);
  *out = ids;
  return n;
}

static void add_text(int64_t *ids, size_t n) {
  texts = realloc(texts, sizeof *texts * (n_texts + 1));
  text_len = realloc(text_len, sizeof *text_len * (n_texts + 1));
  if (!texts || !text_len) die("out of memory", NULL);
  texts[n_texts] = ids;
  text_len[n_texts++] = n;
  if (n > max_len) max_len = n;
}

static void read_ids_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) die("cannot open --ids-file", path);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    if (line[0] == '\n' || line[0] == '#') continue;
    int64_t *ids;
    size_t n = parse_ids(line, &ids);
    add_text(ids, n);
  }
  free(line);
  fclose(f);
  if (n_texts == 0) die("no id lines in", path);
}

/* What every thread shares (read-only once the loop starts). */
static OrtSession *sess;
static OrtMemoryInfo *meminfo;
static size_t n_in, n_out;
static char *in_names[MAX_IO], *out_names[MAX_IO];
static int in_kind[MAX_IO]; /* 0 ids, 1 mask, 2 zeros */
static long batch = 1;
static atomic_int stop_flag;
static long gap_us;          /* --gap-us: sleep between Runs (0: back to back) */
static int gap_spin;         /* --gap-spin: spend the gap spinning instead of asleep */
static size_t pollute_bytes; /* --pollute-kb: bytes written between Runs */

typedef struct {
  size_t next;         /* the next text of this thread's rotation */
  int64_t *buf[3];     /* ids, mask, zeros: batch x max_len each */
  unsigned char *junk; /* pollute_bytes, written between Runs */
  long runs;
  double run_cpu; /* thread CPU seconds inside Run (only with a gap or pollution) */
  double *lat;    /* wall seconds per Run, up to MAX_SAMPLES */
  size_t n_lat;
} worker;

/* One Run on the thread's next `batch` texts. */
static double run_once(worker *w) {
  size_t L = 0;
  for (long b = 0; b < batch; b++) {
    size_t k = (w->next + (size_t)b) % n_texts;
    if (text_len[k] > L) L = text_len[k];
  }
  for (long b = 0; b < batch; b++) {
    size_t k = (w->next + (size_t)b) % n_texts;
    for (size_t t = 0; t < L; t++) {
      w->buf[0][(size_t)b * L + t] = t < text_len[k] ? texts[k][t] : 0;
      w->buf[1][(size_t)b * L + t] = t < text_len[k];
    }
  }
  w->next = (w->next + (size_t)batch) % n_texts;
  int64_t shape[2] = {batch, (int64_t)L};
  size_t bytes = (size_t)batch * L * sizeof(int64_t);
  OrtValue *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
  double t0 = now_s();
  for (size_t i = 0; i < n_in; i++)
    check(ort->CreateTensorWithDataAsOrtValue(meminfo, w->buf[in_kind[i]], bytes, shape, 2,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[i]),
          "CreateTensorWithDataAsOrtValue");
  check(ort->Run(sess, NULL, (const char *const *)in_names, (const OrtValue *const *)in, n_in,
                 (const char *const *)out_names, n_out, out),
        "Run");
  for (size_t i = 0; i < n_in; i++) ort->ReleaseValue(in[i]);
  for (size_t i = 0; i < n_out; i++) ort->ReleaseValue(out[i]);
  return now_s() - t0;
}

static void *loop(void *arg) {
  worker *w = arg;
  int split = gap_us > 0 || pollute_bytes;
  while (!atomic_load(&stop_flag)) {
    if (gap_us > 0 && gap_spin) {
      double until = now_s() + (double)gap_us * 1e-6;
      while (now_s() < until) {
      }
    } else if (gap_us > 0) {
      struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
      nanosleep(&gap, NULL);
    }
    if (pollute_bytes) memset(w->junk, (int)(w->runs & 0xff), pollute_bytes);
    double tc0 = split ? thread_cpu_s() : 0;
    double wall = run_once(w);
    if (split) w->run_cpu += thread_cpu_s() - tc0;
    if (w->n_lat < MAX_SAMPLES) w->lat[w->n_lat++] = wall;
    w->runs++;
  }
  return NULL;
}

static void usage(void) {
  fputs(
      "usage: bare_ort --model M.onnx [--lib LIB] [--ids a,b,c | --ids-file F | --len L]\n"
      "                [--batch B] [--threads T] [--seconds S] [--passes P] [--warmup N]\n"
      "                [--gap-us U] [--pollute-kb K] [--no-arena] [--csv]\n"
      "A bare ONNX Runtime Run loop: T threads sharing one session, 1 intra-op thread\n"
      "each, no spinning, ORT_ENABLE_ALL; nothing of anytime's. Prints per-pass and\n"
      "median figures: Runs/s, texts/s, wall time per Run (median of Runs), process\n"
      "CPU per Run and per text.\n"
      "  --ids      one text's token ids\n"
      "  --ids-file one text's ids per line (comma-separated; # lines skipped); each\n"
      "             thread goes round them from its own starting point\n"
      "  --len      without --ids or --ids-file: one text of L ids (101, 2001.., 102;\n"
      "             default 11)\n"
      "  --batch    texts per Run, padded to the longest (default 1)\n"
      "  --threads  threads calling Run (default 1)\n"
      "  --seconds  length of one pass (default 3), --passes passes (default 5)\n"
      "  --warmup   Runs before the first pass, not counted (default 50)\n"
      "  --gap-us   sleep this long before each Run (default 0: back to back), to see\n"
      "             what a Run costs when its thread was asleep, as a server's worker is\n"
      "  --gap-spin spend the gap spinning on the clock instead of asleep (the thread\n"
      "             and its core stay busy: separates the sleep from the time apart)\n"
      "  --pollute-kb  write this many KiB before each Run (default 0), to see what a\n"
      "             Run costs after other work evicted its data from the caches\n"
      "  --no-arena the session without ORT's CPU memory arena (as anytime's workers\n"
      "             run; the reference is the default, with it)\n"
      "  --csv      one machine-readable line at the end:\n"
      "             csv,max_len,threads,batch,runs_per_s,texts_per_s,wall_us,\n"
      "             cpu_us_per_run,cpu_us_per_text,text_lo,text_hi,texts_lo,texts_hi,rss_mib\n",
      stderr);
}

static long arg_long(const char *v, long lo, long hi, const char *name) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s must be an integer in %ld..%ld", name, lo, hi);
    die(msg, v);
  }
  return x;
}

static int no_arena; /* --no-arena: DisableCpuMemArena, as anytime's workers run */

static void open_session(const char *lib, const char *model) {
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
  if (no_arena) check(ort->DisableCpuMemArena(so), "DisableCpuMemArena");
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
    in_kind[i] = !strcmp(in_names[i], "input_ids")        ? 0
                 : !strcmp(in_names[i], "attention_mask") ? 1
                                                          : 2;
  }
  for (size_t i = 0; i < n_out; i++)
    check(ort->SessionGetOutputName(sess, i, alloc, &out_names[i]), "output name");
}

int main(int argc, char **argv) {
  const char *model = NULL, *lib = BARE_DEFAULT_LIB, *ids_arg = NULL, *ids_file = NULL;
  long len = 11, threads = 1, passes = 5, warmup = 50;
  double seconds = 3;
  int csv = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--csv")) {
      csv = 1;
      continue;
    }
    if (!strcmp(a, "--no-arena")) {
      no_arena = 1;
      continue;
    }
    if (!strcmp(a, "--gap-spin")) {
      gap_spin = 1;
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
    else if (!strcmp(a, "--ids-file"))
      ids_file = v;
    else if (!strcmp(a, "--len"))
      len = arg_long(v, 2, MAX_LEN, "--len");
    else if (!strcmp(a, "--batch"))
      batch = arg_long(v, 1, 1024, "--batch");
    else if (!strcmp(a, "--threads"))
      threads = arg_long(v, 1, MAX_THREADS, "--threads");
    else if (!strcmp(a, "--seconds"))
      seconds = strtod(v, NULL);
    else if (!strcmp(a, "--passes"))
      passes = arg_long(v, 1, MAX_PASSES, "--passes");
    else if (!strcmp(a, "--warmup"))
      warmup = arg_long(v, 0, 1000000, "--warmup");
    else if (!strcmp(a, "--gap-us"))
      gap_us = arg_long(v, 0, 10000000, "--gap-us");
    else if (!strcmp(a, "--pollute-kb"))
      pollute_bytes = (size_t)arg_long(v, 0, 1 << 20, "--pollute-kb") * 1024;
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
  if (!(seconds > 0 && seconds < 3600)) die("--seconds must be in (0, 3600)", NULL);
  if (ids_arg && ids_file) die("give --ids or --ids-file, not both", NULL);

  if (ids_file) {
    read_ids_file(ids_file);
  } else if (ids_arg) {
    int64_t *ids;
    size_t n = parse_ids(ids_arg, &ids);
    add_text(ids, n);
  } else {
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)len);
    if (!ids) die("out of memory", NULL);
    ids[0] = 101;
    for (long t = 1; t + 1 < len; t++) ids[t] = 2000 + t;
    ids[len - 1] = 102;
    add_text(ids, (size_t)len);
  }
  open_session(lib, model);

  worker w[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  memset(w, 0, sizeof w);
  for (long i = 0; i < threads; i++) {
    w[i].next = (size_t)i * 7919 % n_texts;
    for (int k = 0; k < 3; k++) {
      w[i].buf[k] = calloc((size_t)batch * max_len, sizeof(int64_t));
      if (!w[i].buf[k]) die("out of memory", NULL);
    }
    w[i].lat = malloc(sizeof(double) * MAX_SAMPLES);
    w[i].junk = pollute_bytes ? malloc(pollute_bytes) : NULL;
    if (!w[i].lat || (pollute_bytes && !w[i].junk)) die("out of memory", NULL);
  }
  /* warm-up: the first Runs plan memory and fill ORT's caches */
  for (long i = 0; i < warmup; i++) run_once(&w[0]);

  printf(
      "bare_ort: %s, %s; %zu text(s), longest %zu ids; batch %ld, %ld thread(s); "
      "%ld passes of %.1f s\n",
      model, lib, n_texts, max_len, batch, threads, passes, seconds);
  double rate[MAX_PASSES], trate[MAX_PASSES], wall[MAX_PASSES], cpu[MAX_PASSES], runcpu[MAX_PASSES];
  int split = gap_us > 0 || pollute_bytes;
  static double all[MAX_SAMPLES];
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
    for (long i = 0; i < threads; i++)
      for (size_t k = 0; k < w[i].n_lat && n_lat < MAX_SAMPLES; k++) all[n_lat++] = w[i].lat[k];
    rate[p] = (double)runs / (t1 - t0);
    trate[p] = rate[p] * (double)batch;
    wall[p] = median(all, n_lat) * 1e6;
    cpu[p] = runs ? (c1 - c0) * 1e6 / (double)runs : 0;
    runcpu[p] = runs ? rc * 1e6 / (double)runs : 0;
    printf(
        "  pass %ld: %ld Runs, %.0f Runs/s, %.0f texts/s, wall %.1f us per Run (median), "
        "CPU %.1f us per Run, %.1f per text",
        p + 1, runs, rate[p], trate[p], wall[p], cpu[p], cpu[p] / (double)batch);
    if (split) printf(" (inside Run, thread clock: %.1f us)", runcpu[p]);
    printf("\n");
  }
  size_t np = (size_t)passes;
  double r = median(rate, np), tr = median(trate, np), wm = median(wall, np), cm = median(cpu, np);
  double B = (double)batch;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  /* median() sorted each array: [0] and [passes-1] are the range */
  printf(
      "median over %ld passes: %.0f Runs/s (%.0f..%.0f), %.0f texts/s (%.0f..%.0f), wall %.1f "
      "us per Run (%.1f..%.1f), CPU %.1f us per Run (%.1f..%.1f), %.1f us per text "
      "(%.1f..%.1f); peak RSS %ld MiB\n",
      passes, r, rate[0], rate[np - 1], tr, trate[0], trate[np - 1], wm, wall[0], wall[np - 1], cm,
      cpu[0], cpu[np - 1], cm / B, cpu[0] / B, cpu[np - 1] / B, ru.ru_maxrss / 1024);
  if (split) {
    double m = median(runcpu, np);
    printf("CPU inside Run (thread clock, the gap and the writes left out): %.1f us (%.1f..%.1f)\n",
           m, runcpu[0], runcpu[np - 1]);
  }
  if (csv)
    printf("csv,%zu,%ld,%ld,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%ld\n", max_len, threads,
           batch, r, tr, wm, cm, cm / B, cpu[0] / B, cpu[np - 1] / B, trate[0], trate[np - 1],
           ru.ru_maxrss / 1024);
  return 0;
}
