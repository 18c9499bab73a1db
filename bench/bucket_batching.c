/* bench/bucket_batching.c — does length-bucketed batching pay? The serving
 * path (engine + batcher, 1 intra-op thread per worker) runs the held-out
 * sentences, tokenised with the model's tokenizer, under three batchers on
 * one engine:
 *   b1      max_batch_size 1 (no batching: the baseline),
 *   fifo    max_batch_size B, arrival order (today's default),
 *   bucket  max_batch_size B, at_bucketing.max_pad_factor F.
 * Each run submits `texts` sentences at once (a backlog, the load at which
 * batches form) and waits for every answer. The main figure is the
 * process's CPU time per text (utime + stime, getrusage), which the host's
 * other load moves much less than wall time; wall time per text, padded
 * tokens per real token and the mean batch size are printed beside it. The
 * three modes alternate within each pass, their order rotating per pass;
 * the summary is the median of the passes and their range.
 *
 * usage: bench_bucket_batching MODEL_DIR VARIANT.onnx DATA.csv [workers=2]
 *        [passes=3] [texts=400] [B=8] [F=1.25] [W=100000 (max_wait_us)]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "anytime/anytime.h"
#include "anytime/batcher.h"
#include "anytime/tokenizer.h"
#include "bench/held_out.h"
#include "core/internal.h"

#define MAXP 16

static int64_t **g_ids;
static size_t *g_len, g_n;

typedef struct run_state {
  pthread_mutex_t m;
  pthread_cond_t c;
  size_t left, padded, batches_x_items; /* batches_x_items: sum of batch sizes */
  int failed;
} run_state;

static void on_done(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)err;
  run_state *s = user;
  pthread_mutex_lock(&s->m);
  if (st != AT_OK) s->failed++;
  else s->padded += r->padded_len, s->batches_x_items += (size_t)r->batch_size;
  if (--s->left == 0) pthread_cond_signal(&s->c);
  pthread_mutex_unlock(&s->m);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

typedef struct figures {
  double cpu_ms, wall_ms, pad_ratio, mean_batch; /* per text; padded/real; items' batch */
} figures;

/* One run: `texts` sentences starting at `first`, all submitted at once. */
static int g_wait_us = 100000;

static figures run_mode(at_engine *e, int B, double F, size_t first, size_t texts) {
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = B;
  bp.max_seq_len = 512;
  bp.bucketing.max_pad_factor = F;
  bp.bucketing.max_wait_us = g_wait_us;
  at_batcher *b;
  if (at_batcher_create(e, &bp, &b) != AT_OK) {
    fprintf(stderr, "batcher: %s\n", at_last_error());
    exit(1);
  }
  run_state s = {.left = texts};
  pthread_mutex_init(&s.m, NULL);
  pthread_cond_init(&s.c, NULL);
  at_batch_item *items = calloc(texts, sizeof *items);
  size_t real = 0;
  for (size_t i = 0; i < texts; i++) {
    size_t k = (first + i) % g_n;
    items[i] = (at_batch_item){.input_ids = g_ids[k], .len = g_len[k], .done = on_done, .user = &s};
    real += g_len[k];
  }
  double c0 = cpu_s();
  uint64_t t0 = at_now_ns();
  if (at_batcher_submit_n(b, 0, items, texts) != AT_OK) {
    fprintf(stderr, "submit: %s\n", at_last_error());
    exit(1);
  }
  pthread_mutex_lock(&s.m);
  while (s.left) pthread_cond_wait(&s.c, &s.m);
  pthread_mutex_unlock(&s.m);
  figures f = {.cpu_ms = (cpu_s() - c0) * 1e3 / (double)texts,
               .wall_ms = (double)(at_now_ns() - t0) / 1e6 / (double)texts,
               .pad_ratio = (double)s.padded / (double)real,
               .mean_batch = (double)s.batches_x_items / (double)texts};
  at_batcher_destroy(b);
  if (s.failed) fprintf(stderr, "%d items failed\n", s.failed), exit(1);
  free(items);
  return f;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "median [min, max]" of v[0..n) into out. */
static void summary(const double *v, int n, char *out, size_t cap) {
  double t[MAXP];
  memcpy(t, v, (size_t)n * sizeof *t);
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  snprintf(out, cap, "%.2f [%.2f, %.2f]", med, t[0], t[n - 1]);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL_DIR VARIANT.onnx DATA.csv [workers] [passes] [texts] [B] [F] [W]\n",
            argv[0]);
    return 2;
  }
  int workers = argc > 4 ? atoi(argv[4]) : 2, passes = argc > 5 ? atoi(argv[5]) : 3;
  size_t texts = argc > 6 ? (size_t)atol(argv[6]) : 400;
  int B = argc > 7 ? atoi(argv[7]) : 8;
  double F = argc > 8 ? atof(argv[8]) : 1.25;
  if (argc > 9) g_wait_us = atoi(argv[9]);
  if (passes < 1 || passes > MAXP) return fprintf(stderr, "passes 1..%d\n", MAXP), 2;
  bench_load_held_out(argv[1], argv[3], &g_ids, &g_len, &g_n);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", argv[1], argv[2]);
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = workers;
  ep.queue_capacity = 4096;
  at_engine *e;
  if (at_engine_create(&ep, &e) || at_engine_add_variant(e, "v", path, NULL, NULL) ||
      at_engine_start(e))
    return fprintf(stderr, "engine: %s\n", at_last_error()), 1;
  printf("%s: %d workers, %zu of %zu held-out texts per run, B = %d, F = %.2f, max_wait_us %d, "
         "%d passes\n",
         path, workers, texts, g_n, B, F, g_wait_us, passes);
  run_mode(e, B, F, 0, texts < 16 ? texts : 16); /* warm-up */
  const char *name[3] = {"b1", "fifo", "bucket"};
  double cpu[3][MAXP], wall[3][MAXP], pad[3][MAXP], mb[3][MAXP];
  for (int p = 0; p < passes; p++)
    for (int j = 0; j < 3; j++) {
      int m = (j + p) % 3;
      figures f = run_mode(e, m == 0 ? 1 : B, m == 2 ? F : 0, (size_t)p * 97, texts);
      cpu[m][p] = f.cpu_ms, wall[m][p] = f.wall_ms, pad[m][p] = f.pad_ratio, mb[m][p] = f.mean_batch;
      printf("pass %d %-6s cpu %.2f ms/text  wall %.2f ms/text  padded/real %.3f  mean batch %.2f\n",
             p, name[m], f.cpu_ms, f.wall_ms, f.pad_ratio, f.mean_batch);
      fflush(stdout);
    }
  printf("mode    cpu ms/text          wall ms/text         padded/real          mean batch\n");
  for (int m = 0; m < 3; m++) {
    char a[64], b[64], c[64], d[64];
    summary(cpu[m], passes, a, sizeof a), summary(wall[m], passes, b, sizeof b);
    summary(pad[m], passes, c, sizeof c), summary(mb[m], passes, d, sizeof d);
    printf("%-7s %-20s %-20s %-20s %s\n", name[m], a, b, c, d);
  }
  at_engine_destroy(e);
  return 0;
}
