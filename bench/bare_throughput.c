/* bench/bare_throughput.c — the limit: how many texts per second a bare
 * ONNX Runtime Run loop gets through on this host, with no HTTP, no JSON, no
 * batcher. W threads share one raw OrtSession (1 intra-op thread each, like
 * the server's workers) and run batches of b held-out sentences, tokenised
 * beforehand with anytime's tokenizer and padded to the batch's longest.
 * For each b: `passes` runs of `seconds` each; prints the median texts/s and
 * the range, the process's CPU time (utime + stime, getrusage) per Run and
 * per text (median over passes), and the best batch size. The CPU figures are
 * what bench/serve_compare.sh sets a server's CPU per answer against.
 *
 * usage: bench_bare_throughput MODEL_DIR VARIANT.onnx DATA.csv [workers=2]
 *        [passes=3] [seconds=3] [batches=1,4,8,16,32]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "bench/bare_ort.h"
#include "anytime/tokenizer.h"
#include "bench/held_out.h"
#include "core/internal.h"

static OrtSession *sess;
static OrtMemoryInfo *mi;
static int64_t **g_ids;
static size_t *g_len, g_n;
static int g_batch;
static atomic_int g_stop;
static const char *in_names[2] = {"input_ids", "attention_mask"};
static char *out_name;


typedef struct { long items; int id; } worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  size_t cur = (size_t)w->id * 7919 % g_n;
  int64_t *ids = malloc(sizeof(int64_t) * 512 * (size_t)g_batch);
  int64_t *mask = malloc(sizeof(int64_t) * 512 * (size_t)g_batch);
  while (!atomic_load(&g_stop)) {
    size_t L = 0;
    for (int b = 0; b < g_batch; b++) {
      size_t k = (cur + (size_t)b) % g_n;
      if (g_len[k] > L) L = g_len[k];
    }
    for (int b = 0; b < g_batch; b++) {
      size_t k = (cur + (size_t)b) % g_n;
      for (size_t t = 0; t < L; t++) {
        ids[(size_t)b * L + t] = t < g_len[k] ? g_ids[k][t] : 0;
        mask[(size_t)b * L + t] = t < g_len[k];
      }
    }
    cur = (cur + (size_t)g_batch) % g_n;
    int64_t shape[2] = {g_batch, (int64_t)L};
    OrtValue *in[2] = {0}, *out = NULL;
    CHECK(api->CreateTensorWithDataAsOrtValue(mi, ids, (size_t)g_batch * L * 8, shape, 2,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[0]));
    CHECK(api->CreateTensorWithDataAsOrtValue(mi, mask, (size_t)g_batch * L * 8, shape, 2,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &in[1]));
    const char *on[1] = {out_name};
    CHECK(api->Run(sess, NULL, in_names, (const OrtValue *const *)in, 2, on, 1, &out));
    api->ReleaseValue(in[0]);
    api->ReleaseValue(in[1]);
    api->ReleaseValue(out);
    w->items += g_batch;
  }
  free(ids);
  free(mask);
  return NULL;
}

static double cpu_s(void) { /* this process: user + system seconds */
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL_DIR VARIANT.onnx DATA.csv [workers] [passes] [seconds] [b1,b2,..]\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", argv[1], argv[2]);
  int workers = argc > 4 ? atoi(argv[4]) : 2, passes = argc > 5 ? atoi(argv[5]) : 3;
  double seconds = argc > 6 ? atof(argv[6]) : 3;
  int bs[16] = {1, 4, 8, 16, 32}, nb = 5;
  if (argc > 7) {
    nb = 0;
    for (char *p = argv[7]; p && *p && nb < 16; p = strchr(p, ','), p = p ? p + 1 : NULL) bs[nb++] = atoi(p);
  }
  bench_load_held_out(argv[1], argv[3], &g_ids, &g_len, &g_n);
  sess = bare_ort_session(path, ORT_LOGGING_LEVEL_ERROR);
  CHECK(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi));
  OrtAllocator *alloc;
  CHECK(api->GetAllocatorWithDefaultOptions(&alloc));
  CHECK(api->SessionGetOutputName(sess, 0, alloc, &out_name));
  printf("bare ORT Run loop: %s, %d workers sharing one session, %zu held-out texts\n", path,
         workers, g_n);
  double best = 0, best_cpu = 0;
  int best_b = 0;
  for (int bi = 0; bi < nb; bi++) {
    g_batch = bs[bi];
    double rates[16], cpu_text[16];
    for (int p = 0; p < passes && p < 16; p++) {
      worker_t w[64];
      pthread_t th[64];
      atomic_store(&g_stop, 0);
      uint64_t t0 = at_now_ns();
      double c0 = cpu_s();
      for (int i = 0; i < workers; i++) w[i] = (worker_t){0, i}, pthread_create(&th[i], NULL, worker, &w[i]);
      usleep((useconds_t)(seconds * 1e6));
      atomic_store(&g_stop, 1);
      long items = 0;
      for (int i = 0; i < workers; i++) pthread_join(th[i], NULL), items += w[i].items;
      rates[p] = (double)items / ((double)(at_now_ns() - t0) / 1e9);
      cpu_text[p] = items ? (cpu_s() - c0) * 1e6 / (double)items : 0;
    }
    qsort(rates, (size_t)passes, sizeof(double), cmp_d);
    qsort(cpu_text, (size_t)passes, sizeof(double), cmp_d);
    /* median; an even count of passes: the mean of the middle two */
    double medv = passes % 2 ? rates[passes / 2] : (rates[passes / 2 - 1] + rates[passes / 2]) / 2;
    double medc = passes % 2 ? cpu_text[passes / 2] : (cpu_text[passes / 2 - 1] + cpu_text[passes / 2]) / 2;
    printf("  batch %3d: %8.0f texts/s (range %.0f .. %.0f over %d passes of %.0f s), "
           "CPU %.0f us per text (%.0f .. %.0f), %.0f us per Run\n", g_batch, medv, rates[0],
           rates[passes - 1], passes, seconds, medc, cpu_text[0], cpu_text[passes - 1],
           medc * g_batch);
    if (medv > best) best = medv, best_b = g_batch, best_cpu = medc;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("best: batch %d, %.0f texts/s, CPU %.0f us per text, peak RSS %ld MiB\n", best_b, best,
         best_cpu, ru.ru_maxrss / 1024);
  return 0;
}
