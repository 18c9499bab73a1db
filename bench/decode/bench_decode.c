/* bench/decode/bench_decode.c — the generation lane's benchmarks, all
 * through the code that serves traffic (decoder session over the KV arena,
 * and the generator's scheduler):
 *
 *   step      decode step cost vs cached tokens at batch 1, with a fitted
 *             linear model (fixed part + per-cached-token part);
 *   batch     batched decode throughput (tokens/s) at short and long cached
 *             lengths;
 *   latency   TTFT and TPOT of one request alone and of 8 at once, reported
 *             separately;
 *   arrivals  an open-loop Poisson arrival sweep with held-out review
 *             prompts through the generator, TTFT and TPOT attainment with
 *             and without preemption, on an arena that holds only a few
 *             sequences (so memory admission and eviction matter);
 *   steady    one (batch, cached) point of the decode step alone
 *             (at_decoder_step with the carried past + at_sample);
 *   generator the same point through the whole generator (scheduler
 *             thread, prefix cache, callbacks), bench/decode_compare.sh.
 *
 * Every figure is the median of --passes passes with the range across
 * passes. Usage:
 *   bench_decode MODEL_DIR [--variant fp32|int8] [--passes N] [--threads N]
 *                [--only step|batch|latency|arrivals|steady|generator]
 *                [--batch B --cached C --steps N] [--data heldout.csv]
 *                [--duration S] [--json OUT.json]
 */
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anytime/anytime.h"
#include "tools/dataset.h"
#include "core/internal.h"

/* Medians are the library's (at_profile_median: sorts v in place). */
static double median(double *v, int n) { return at_profile_median(v, (size_t)n); }
static void mmm(double *v, int n, double *med, double *lo, double *hi) {
  *med = at_profile_median(v, (size_t)n);
  *lo = v[0];
  *hi = v[n - 1];
}

typedef struct ctx {
  const char *model, *variant, *data;
  int passes, threads;
  double duration; /* seconds of arrivals per pass */
  at_lm *lm;
  FILE *json;
  int json_items;
} ctx;

static void jsonf(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jsonf(ctx *c, const char *fmt, ...) {
  if (!c->json) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(c->json, "%s", c->json_items++ ? ",\n  " : "  ");
  vfprintf(c->json, fmt, ap);
  va_end(ap);
}

static at_decoder *open_decoder(ctx *c) {
  at_session_params sp = at_session_default_params();
  sp.intra_op_threads = c->threads;
  at_decoder *d = NULL;
  if (at_decoder_create(c->lm->model_path, &sp, c->lm->n_positions, &d) != AT_OK) {
    fprintf(stderr, "bench_decode: %s\n", at_last_error());
    exit(1);
  }
  return d;
}

/* Fill a sequence with `len` cached positions by prefilling tokens. */
static void prefill_to(at_decoder *d, at_kv_arena *a, at_kv_seq *s, const int32_t *tok, int len,
                       float *logits) {
  s->len = 0;
  for (int off = 0; off < len; off += 64) {
    int n = len - off < 64 ? len - off : 64;
    at_decode_item it = {.seq = s, .tokens = tok + off, .n_new = n};
    if (at_decoder_step(d, a, &it, 1, logits) != AT_OK) {
      fprintf(stderr, "bench_decode: prefill: %s\n", at_last_error());
      exit(1);
    }
  }
}

/* ------------------------------------------------------------ step / batch */

static void bench_steps(ctx *c, bool batch_mode) {
  at_decoder *d = open_decoder(c);
  const at_decoder_info *in = at_decoder_get_info(d);
  int maxp = in->max_positions > 0 ? in->max_positions : 256;
  at_kv_layout l = {in->layers, in->heads, in->head_dim, 16};
  int maxb = 16;
  at_kv_arena *a = NULL;
  at_kv_arena_create(&l, maxb * (maxp / 16 + 1), &a);
  at_kv_seq seqs[16];
  memset(seqs, 0, sizeof seqs);
  for (int i = 0; i < maxb; i++) at_kv_seq_grow(a, &seqs[i], maxp / 16 + 1);
  int32_t *tok = malloc((size_t)maxp * sizeof *tok);
  for (int i = 0; i < maxp; i++) tok[i] = 1 + (i * 7919) % (in->vocab - 1);
  float *logits = malloc((size_t)maxb * in->vocab * sizeof *logits);
  int iters = 40;
  if (!batch_mode) {
    int lens[] = {1, 16, 32, 64, 96, 128, 160, 192, 224, maxp - 2};
    int nl = (int)(sizeof lens / sizeof lens[0]);
    at_linfit fit = {0};
    printf("\n== decode step cost vs cached tokens (batch 1, %s, %d thread(s)) ==\n", c->variant,
           c->threads);
    printf("%8s %14s %22s\n", "cached", "step ms", "range over passes");
    for (int li = 0; li < nl; li++) {
      int L = lens[li];
      prefill_to(d, a, &seqs[0], tok, L, logits);
      double pm[64];
      for (int p = 0; p < c->passes; p++) {
        double t[64];
        for (int k = 0; k < iters; k++) {
          seqs[0].len = L;
          at_decode_item it = {.seq = &seqs[0], .tokens = &tok[L], .n_new = 1};
          uint64_t t0 = at_now_ns();
          at_decoder_step(d, a, &it, 1, logits);
          t[k] = (double)(at_now_ns() - t0) / 1e6;
        }
        pm[p] = median(t, iters);
      }
      double med, lo, hi;
      mmm(pm, c->passes, &med, &lo, &hi);
      at_linfit_add(&fit, L, med);
      printf("%8d %14.4f %10.4f – %.4f\n", L, med, lo, hi);
      jsonf(c, "{\"bench\":\"step\",\"variant\":\"%s\",\"cached\":%d,\"ms\":%.5f,\"lo\":%.5f,\"hi\":%.5f}",
            c->variant, L, med, lo, hi);
    }
    double fa, fb;
    at_linfit_get(&fit, &fa, &fb);
    printf("fit: step ≈ %.4f ms + %.3f µs × cached tokens\n", fa, fb * 1e3);
    jsonf(c, "{\"bench\":\"step_fit\",\"variant\":\"%s\",\"fixed_ms\":%.5f,\"per_token_us\":%.5f}",
          c->variant, fa, fb * 1e3);
  } else {
    int Ls[2] = {16, maxp * 3 / 4};
    int bs[] = {1, 2, 4, 8, 16};
    printf("\n== batched decode throughput (%s, %d thread(s)) ==\n", c->variant, c->threads);
    printf("(each pass: %d consecutive steps from the cached length; gathered: the past copied\n"
           " from the arena every step; carried: the last step's presents read as the past)\n",
           iters / 2);
    printf("%8s %6s %16s %16s %16s %22s\n", "cached", "batch", "gathered ms", "carried ms",
           "tokens/s", "range (tokens/s)");
    for (int li = 0; li < 2; li++) {
      int L = Ls[li];
      for (int i = 0; i < maxb; i++) prefill_to(d, a, &seqs[i], tok, L, logits);
      for (size_t bi = 0; bi < sizeof bs / sizeof bs[0]; bi++) {
        int B = bs[bi];
        double pm[64], ps[2][64];
        for (int mode = 0; mode < 2; mode++) /* 0 gathered (no ids), 1 carried */
          for (int p = 0; p < c->passes; p++) {
            double t[64];
            for (int i = 0; i < B; i++) seqs[i].len = L;
            for (int k = 0; k < iters / 2; k++) {
              at_decode_item it[16];
              for (int i = 0; i < B; i++)
                it[i] = (at_decode_item){.seq = &seqs[i], .tokens = &tok[L + k], .n_new = 1,
                                         .id = mode ? (uint64_t)(1000 * (p + 1) + i + 1) : 0};
              uint64_t t0 = at_now_ns();
              at_decoder_step(d, a, it, B, logits);
              t[k] = (double)(at_now_ns() - t0) / 1e6;
            }
            ps[mode][p] = median(t, iters / 2);
            if (mode) pm[p] = B / ps[mode][p] * 1e3;
          }
        double med, lo, hi, gm, gl, gh, sm, sl, sh;
        mmm(pm, c->passes, &med, &lo, &hi);
        mmm(ps[0], c->passes, &gm, &gl, &gh);
        mmm(ps[1], c->passes, &sm, &sl, &sh);
        printf("%8d %6d %16.4f %16.4f %16.0f %12.0f – %.0f\n", L, B, gm, sm, med, lo, hi);
        jsonf(c,
              "{\"bench\":\"batch\",\"variant\":\"%s\",\"cached\":%d,\"batch\":%d,"
              "\"gathered_step_ms\":%.5f,\"step_ms\":%.5f,\"tokens_per_s\":%.1f,\"lo\":%.1f,"
              "\"hi\":%.1f}",
              c->variant, L, B, gm, sm, med, lo, hi);
      }
    }
  }
  for (int i = 0; i < maxb; i++) {
    at_kv_seq_release(a, &seqs[i]);
    at_kv_seq_free(&seqs[i]);
  }
  free(tok);
  free(logits);
  at_kv_arena_destroy(a);
  at_decoder_destroy(d);
}

/* ------------------------------------------------------------ steady batch */

/* The lane's decode path at one (batch, cached) point, for the comparison
 * with bench/bare_ort/bare_decode (bench/decode_compare.sh): B sequences
 * whose C cached positions are filled with small values straight into the
 * arena (a prefill of a realistic model at C = 1,024 would take minutes and
 * the values do not change the time), then `steps` consecutive decode steps
 * through at_decoder_step (the carried past after the first) with a greedy
 * pick of each row's next token. Per pass the median step; the last line:
 *   csv,B,C,step_ms_median,tokens_per_s_median,lo,hi */
static void bench_steady(ctx *c, int B, int C, int steps) {
  at_decoder *d = open_decoder(c);
  const at_decoder_info *in = at_decoder_get_info(d);
  int bt = 16, blocks = (C + steps + 2 + bt - 1) / bt;
  at_kv_layout l = {in->layers, in->heads, in->head_dim, bt};
  at_kv_arena *a = NULL;
  if (at_kv_arena_create(&l, B * blocks, &a) != AT_OK) {
    fprintf(stderr, "bench_decode: %s\n", at_last_error());
    exit(1);
  }
  at_kv_seq *seqs = calloc((size_t)B, sizeof *seqs);
  size_t per = (size_t)in->heads * (C > 0 ? C : 1) * in->head_dim;
  float *fill = malloc(per * sizeof *fill);
  float *logits = malloc((size_t)B * in->vocab * sizeof *logits);
  int32_t *tok = malloc((size_t)B * sizeof *tok);
  at_decode_item *it = malloc((size_t)B * sizeof *it);
  for (size_t k = 0; k < per; k++) fill[k] = (float)((k * 2654435761u) % 2001) / 1000.0f - 1.0f;
  at_sample_params sp = at_sample_default_params(); /* greedy */
  double tps[64], stepm[64];
  for (int p = 0; p < c->passes + 1; p++) { /* the first pass warms up */
    for (int i = 0; i < B; i++) {
      at_kv_seq_release(a, &seqs[i]);
      at_kv_seq_grow(a, &seqs[i], blocks);
      for (int li = 0; li < in->layers; li++)
        for (int kv = 0; kv < 2; kv++) at_kv_scatter(a, &seqs[i], li, kv, fill, C, 0, C);
      seqs[i].len = C;
      tok[i] = 100 + i;
    }
    double t[1024];
    for (int k = 0; k < steps; k++) {
      for (int i = 0; i < B; i++)
        it[i] = (at_decode_item){.seq = &seqs[i], .tokens = &tok[i], .n_new = 1,
                                 .id = (uint64_t)(p * 1000 + i + 1)};
      uint64_t t0 = at_now_ns();
      if (at_decoder_step(d, a, it, B, logits) != AT_OK) {
        fprintf(stderr, "bench_decode: step: %s\n", at_last_error());
        exit(1);
      }
      for (int i = 0; i < B; i++)
        tok[i] = at_sample(logits + (size_t)i * in->vocab, in->vocab, &sp, NULL, NULL);
      t[k] = (double)(at_now_ns() - t0) / 1e9;
    }
    if (p == 0) continue;
    stepm[p - 1] = median(t, steps);
    tps[p - 1] = B / stepm[p - 1];
    printf("pass %d: batch %d, cached %d: step %.3f ms, %.1f tokens/s\n", p, B, C,
           stepm[p - 1] * 1e3, tps[p - 1]);
  }
  double med, lo, hi;
  double sm = median(stepm, c->passes);
  mmm(tps, c->passes, &med, &lo, &hi);
  printf("csv,%d,%d,%.4f,%.1f,%.1f,%.1f\n", B, C, sm * 1e3, med, lo, hi);
  for (int i = 0; i < B; i++) {
    at_kv_seq_release(a, &seqs[i]);
    at_kv_seq_free(&seqs[i]);
  }
  free(seqs);
  free(fill);
  free(logits);
  free(tok);
  free(it);
  at_kv_arena_destroy(a);
  at_decoder_destroy(d);
}

/* ------------------------------------------------------------ generator runs */

typedef struct rec {
  uint64_t submit, first, done;
  int n;
  int preempted;
  bool finished;
} rec;

typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int remaining;
} waiter;

static waiter g_w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void on_done(void *user, const at_gen_result *r) {
  rec *x = user;
  x->submit = r->submitted_ns;
  x->first = r->first_token_ns;
  x->done = r->finished_ns;
  x->n = r->n_generated;
  x->preempted = r->preemptions;
  pthread_mutex_lock(&g_w.lock);
  x->finished = true;
  g_w.remaining--;
  pthread_cond_signal(&g_w.cv);
  pthread_mutex_unlock(&g_w.lock);
}

static void wait_all(void) {
  pthread_mutex_lock(&g_w.lock);
  while (g_w.remaining > 0) pthread_cond_wait(&g_w.cv, &g_w.lock);
  pthread_mutex_unlock(&g_w.lock);
}

static at_generator *open_gen(ctx *c, const at_gen_params *gp) {
  at_generator *g = NULL;
  if (at_gen_create(open_decoder(c), gp, &g) != AT_OK) {
    fprintf(stderr, "bench_decode: %s\n", at_last_error());
    exit(1);
  }
  return g;
}

/* Queue r, counted in g_w (its on_done must be on_done). */
static void submit_req(at_generator *g, const at_gen_request *r) {
  pthread_mutex_lock(&g_w.lock);
  g_w.remaining++;
  pthread_mutex_unlock(&g_w.lock);
  if (at_gen_submit(g, r, NULL) != AT_OK) {
    fprintf(stderr, "bench_decode: submit: %s\n", at_last_error());
    exit(1);
  }
}

static void submit(at_generator *g, const int32_t *p, int n, int max_tokens, rec *x) {
  at_gen_request r = {.prompt = p,
                      .n_prompt = n,
                      .max_tokens = max_tokens,
                      .sample = at_sample_default_params(),
                      .eos_id = -1,
                      .on_done = on_done,
                      .user = x};
  submit_req(g, &r);
}

/* The whole generator at one steady point: B requests whose prompts share C
 * tokens, so one warm-up prefill puts the prompt in the prefix cache and
 * every pass starts B sequences on it at once (a prefill of C positions per
 * sequence at a realistic size would take minutes). Each then generates
 * steps + 1 tokens greedily through the scheduler thread, the decoder's
 * carried past, sampling and the callbacks. Step time = the median gap
 * between a sequence's consecutive tokens while all B are decoding;
 * tokens/s = B / step. Same csv line as --only steady. */
typedef struct grec {
  rec r; /* first: on_done takes the user pointer as a rec */
  uint64_t t[1026];
} grec;

static bool on_gen_token(void *user, int32_t token, int n) {
  (void)token;
  grec *x = user;
  if (n >= 1 && n <= 1026) x->t[n - 1] = at_now_ns();
  return false;
}

static void bench_gen_steady(ctx *c, int B, int C, int steps) {
  int bt = 16, n = C > 0 ? C : 1;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = B;
  gp.block_tokens = bt;
  gp.n_blocks = B * ((n + steps + 2) / bt + 2) + n / bt + 8;
  gp.prefix_cache = true;
  gp.ttft_slo_s = 3600.0; /* nothing here is late: the point is the steps */
  gp.tpot_slo_s = 60.0;
  at_generator *g = open_gen(c, &gp);
  int32_t *prompt = malloc((size_t)n * sizeof *prompt);
  for (int i = 0; i < n; i++) prompt[i] = 1 + (int32_t)((i * 131) % 3000);
  grec *x = calloc((size_t)B, sizeof *x);
  double tps[64], stepm[64];
  for (int p = 0; p < c->passes + 1; p++) { /* pass 0: the prompt into the cache, warm-up */
    memset(x, 0, (size_t)B * sizeof *x);
    for (int i = 0; i < B; i++) {
      at_gen_request r = {.prompt = prompt, .n_prompt = n, .max_tokens = steps + 1,
                          .sample = at_sample_default_params(), .eos_id = -1,
                          .on_token = on_gen_token, .on_done = on_done, .user = &x[i]};
      submit_req(g, &r);
      if (p == 0) wait_all(); /* one at a time: the first fills the cache */
    }
    wait_all();
    if (p == 0) continue;
    uint64_t from = 0, to = UINT64_MAX;
    for (int i = 0; i < B; i++) {
      if (x[i].r.n != steps + 1) {
        fprintf(stderr, "bench_decode: a sequence ended after %d of %d tokens\n", x[i].r.n,
                steps + 1);
        exit(1);
      }
      if (x[i].t[0] > from) from = x[i].t[0];
      if (x[i].t[steps] < to) to = x[i].t[steps];
    }
    double *gap = malloc((size_t)B * (size_t)steps * sizeof *gap);
    int m = 0;
    for (int i = 0; i < B; i++)
      for (int k = 1; k <= steps; k++)
        if (x[i].t[k - 1] >= from && x[i].t[k] <= to)
          gap[m++] = (double)(x[i].t[k] - x[i].t[k - 1]) / 1e9;
    if (m == 0) {
      fprintf(stderr, "bench_decode: the %d sequences never decoded together\n", B);
      exit(1);
    }
    stepm[p - 1] = median(gap, m);
    free(gap);
    tps[p - 1] = B / stepm[p - 1];
    printf("pass %d: generator, batch %d, cached %d: step %.3f ms, %.1f tokens/s (%d gaps)\n",
           p, B, C, stepm[p - 1] * 1e3, tps[p - 1], m);
  }
  at_gen_stats st;
  at_gen_stats_get(g, &st);
  printf("generator: %llu steps with the past carried, %llu gathered\n",
         (unsigned long long)st.kv_carried_steps, (unsigned long long)st.kv_gathered_steps);
  double med, lo, hi, sm = median(stepm, c->passes);
  mmm(tps, c->passes, &med, &lo, &hi);
  printf("csv,%d,%d,%.4f,%.1f,%.1f,%.1f\n", B, C, sm * 1e3, med, lo, hi);
  free(x);
  free(prompt);
  at_gen_destroy(g);
}

static void bench_latency(ctx *c) {
  at_gen_params gp = at_gen_default_params();
  at_generator *g = open_gen(c, &gp);
  int32_t prompt[32];
  for (int i = 0; i < 32; i++) prompt[i] = 1 + (i * 131) % 3000;
  int conc[2] = {1, 8};
  printf("\n== TTFT and TPOT through the generator (%s; 32-token prompt, 64 new tokens) ==\n",
         c->variant);
  printf("%12s %22s %22s\n", "concurrent", "TTFT ms (range)", "TPOT ms (range)");
  for (int ci = 0; ci < 2; ci++) {
    int n = conc[ci];
    double ttft[64], tpot[64];
    for (int p = 0; p < c->passes; p++) {
      rec x[8];
      memset(x, 0, sizeof x);
      for (int i = 0; i < n; i++) submit(g, prompt, 32, 64, &x[i]);
      wait_all();
      double a[8], b[8];
      for (int i = 0; i < n; i++) {
        a[i] = (double)(x[i].first - x[i].submit) / 1e6;
        b[i] = (double)(x[i].done - x[i].first) / 1e6 / (x[i].n - 1);
      }
      ttft[p] = median(a, n);
      tpot[p] = median(b, n);
    }
    double tm, tl, th, pm, pl, ph;
    mmm(ttft, c->passes, &tm, &tl, &th);
    mmm(tpot, c->passes, &pm, &pl, &ph);
    printf("%12d %8.2f (%.2f–%.2f) %8.3f (%.3f–%.3f)\n", n, tm, tl, th, pm, pl, ph);
    jsonf(c,
          "{\"bench\":\"latency\",\"variant\":\"%s\",\"concurrent\":%d,\"ttft_ms\":%.4f,"
          "\"ttft_lo\":%.4f,\"ttft_hi\":%.4f,\"tpot_ms\":%.4f,\"tpot_lo\":%.4f,\"tpot_hi\":%.4f}",
          c->variant, n, tm, tl, th, pm, pl, ph);
  }
  at_gen_destroy(g);
}

/* Open-loop Poisson arrivals of held-out review prompts. */
static void bench_arrivals(ctx *c) {
  cli_dataset ds;
  char err[512];
  if (cli_dataset_load(c->data, &cli_labels_int, &ds, err, sizeof err) != 0) {
    fprintf(stderr, "bench_decode: %s\n", err);
    exit(1);
  }
  at_tok_workspace *ws = NULL;
  at_tok_workspace_create(&ws);
  int np = (int)ds.n;
  int32_t **prompts = calloc((size_t)np, sizeof *prompts);
  int *plen = calloc((size_t)np, sizeof *plen);
  for (int i = 0; i < np; i++) {
    int32_t *ids;
    int k;
    at_lm_encode(c->lm, ws, ds.texts[i], ds.lens[i], &ids, &k);
    /* prompts of 16..96 tokens: the review's opening */
    int want = 16 + (int)((i * 37) % 81);
    plen[i] = k < want ? k : want;
    prompts[i] = ids;
  }
  const int max_new = 48;
  const double ttft_slo = 0.2, tpot_slo = 0.010;
  /* capacity: sequences completed per second with everything submitted at
   * once on a roomy arena */
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 8;
  at_generator *g = open_gen(c, &gp);
  int ncap = 24;
  rec *xc = calloc((size_t)ncap, sizeof *xc);
  uint64_t t0 = at_now_ns();
  for (int i = 0; i < ncap; i++) submit(g, prompts[i % np], plen[i % np], max_new, &xc[i]);
  wait_all();
  double cap = ncap / ((double)(at_now_ns() - t0) / 1e9);
  at_gen_destroy(g);
  free(xc);
  printf("\n== open-loop arrivals (%s, %.0f s per pass): review openings of 16..96 tokens, %d new tokens;"
         "\n   capacity %.1f sequences/s; SLOs TTFT %.0f ms, TPOT %.0f ms; arena 40 blocks x 16 ==\n",
         c->variant, c->duration, max_new, cap, ttft_slo * 1e3, tpot_slo * 1e3);
  printf("%6s %9s %8s %22s %22s %12s %12s %14s\n", "load", "preempt", "reqs", "TTFT attain (range)",
         "TPOT attain (range)", "TTFT p50 ms", "TPOT p50 ms", "evictions");
  double loads[3] = {0.8, 1.0, 1.2};
  for (int li = 0; li < 3; li++)
    for (int pre = 1; pre >= 0; pre--) {
      double at1[64], at2[64], p50a[64], p50b[64], ev[64];
      int nreq = 0;
      for (int p = 0; p < c->passes; p++) {
        at_gen_params q = at_gen_default_params();
        q.max_batch = 8;
        q.n_blocks = 40;
        q.block_tokens = 16;
        q.preempt = pre;
        q.ttft_slo_s = ttft_slo;
        q.tpot_slo_s = tpot_slo;
        at_generator *gg = open_gen(c, &q);
        double rate = loads[li] * cap, dur = c->duration;
        int n = (int)(rate * dur);
        if (n < 8) n = 8;
        rec *x = calloc((size_t)n, sizeof *x);
        unsigned seed = 1000u + (unsigned)p;
        uint64_t start = at_now_ns();
        double t = 0;
        for (int i = 0; i < n; i++) {
          double u = (rand_r(&seed) + 1.0) / ((double)RAND_MAX + 2.0);
          t += -log(u) / rate;
          uint64_t due = start + (uint64_t)(t * 1e9), now = at_now_ns();
          if (due > now) {
            struct timespec ts = {(time_t)((due - now) / 1000000000ull),
                                  (long)((due - now) % 1000000000ull)};
            nanosleep(&ts, NULL);
          }
          int k = (i * 7 + p) % np;
          submit(gg, prompts[k], plen[k], max_new, &x[i]);
        }
        wait_all();
        int ok1 = 0, ok2 = 0;
        double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
        for (int i = 0; i < n; i++) {
          a[i] = (double)(x[i].first - x[i].submit) / 1e9;
          b[i] = (double)(x[i].done - x[i].first) / 1e9 / (x[i].n > 1 ? x[i].n - 1 : 1);
          ok1 += a[i] <= ttft_slo;
          ok2 += b[i] <= tpot_slo;
        }
        at_gen_stats st;
        at_gen_stats_get(gg, &st);
        at1[p] = (double)ok1 / n;
        at2[p] = (double)ok2 / n;
        p50a[p] = median(a, n) * 1e3;
        p50b[p] = median(b, n) * 1e3;
        ev[p] = (double)st.preemptions;
        nreq = n;
        free(a);
        free(b);
        free(x);
        at_gen_destroy(gg);
      }
      double m1, l1, h1, m2, l2, h2, ma, la, ha, mb, lb, hb, me, le, he;
      mmm(at1, c->passes, &m1, &l1, &h1);
      mmm(at2, c->passes, &m2, &l2, &h2);
      mmm(p50a, c->passes, &ma, &la, &ha);
      mmm(p50b, c->passes, &mb, &lb, &hb);
      mmm(ev, c->passes, &me, &le, &he);
      printf("%6.2f %9s %8d %6.3f (%.3f–%.3f) %6.3f (%.3f–%.3f) %12.1f %12.2f %5.0f (%.0f–%.0f)\n",
             loads[li], pre ? "on" : "off", nreq, m1, l1, h1, m2, l2, h2, ma, mb, me, le, he);
      jsonf(c,
            "{\"bench\":\"arrivals\",\"variant\":\"%s\",\"load\":%.2f,\"capacity_seq_s\":%.3f,"
            "\"preempt\":%s,\"requests\":%d,\"ttft_attain\":%.4f,\"ttft_attain_lo\":%.4f,"
            "\"ttft_attain_hi\":%.4f,\"tpot_attain\":%.4f,\"tpot_attain_lo\":%.4f,"
            "\"tpot_attain_hi\":%.4f,\"ttft_p50_ms\":%.3f,\"tpot_p50_ms\":%.3f,\"evictions\":%.0f}",
            c->variant, loads[li], cap, pre ? "true" : "false", nreq, m1, l1, h1, m2, l2, h2, ma,
            mb, me);
    }
  for (int i = 0; i < np; i++) free(prompts[i]);
  free(prompts);
  free(plen);
  at_tok_workspace_destroy(ws);
  cli_dataset_free(&ds);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help")) {
    fprintf(stderr,
            "usage: bench_decode MODEL_DIR [--variant fp32|int8] [--passes N] [--threads N]\n"
            "                    [--only step|batch|latency|arrivals|steady|generator]\n"
            "                    [--data heldout.csv]\n"
            "                    [--batch B --cached C --steps N (steady, generator: one point)]\n"
            "                    [--duration S (arrivals, default 6)] [--json OUT.json]\n");
    return 2;
  }
  static char data[4096];
  cli_default_reviews_csv(data, sizeof data);
  ctx c = {.model = argv[1], .variant = "fp32", .data = data, .passes = 5, .threads = 1,
           .duration = 6.0};
  const char *only = NULL, *json = NULL;
  int sb = 1, sc = 256, ss = 16;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--variant")) c.variant = argv[i + 1];
    else if (!strcmp(argv[i], "--passes")) c.passes = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) c.threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--data")) c.data = argv[i + 1];
    else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
    else if (!strcmp(argv[i], "--duration")) c.duration = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) sb = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cached")) sc = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) ss = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "bench_decode: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (c.passes < 1 || c.passes > 64) c.passes = 5;
  if (sb < 1 || sb > 256 || sc < 0 || sc > (1 << 20) || ss < 1 || ss > 1024) {
    fprintf(stderr, "bench_decode: --batch 1..256, --cached >= 0, --steps 1..1024\n");
    return 2;
  }
  if (at_lm_open(c.model, c.variant, NULL, NULL, &c.lm) != AT_OK) {
    fprintf(stderr, "bench_decode: %s\n", at_last_error());
    return 1;
  }
  if (json) {
    c.json = fopen(json, "w");
    if (!c.json) {
      perror(json);
      return 1;
    }
    fprintf(c.json, "[\n");
  }
  printf("bench_decode: %s (%s), %d passes, %d ORT thread(s)\n", c.model, c.variant, c.passes,
         c.threads);
  if (!only || !strcmp(only, "step")) bench_steps(&c, false);
  if (!only || !strcmp(only, "batch")) bench_steps(&c, true);
  if (!only || !strcmp(only, "latency")) bench_latency(&c);
  if (!only || !strcmp(only, "arrivals")) bench_arrivals(&c);
  if (only && !strcmp(only, "steady")) bench_steady(&c, sb, sc, ss);
  if (only && !strcmp(only, "generator")) bench_gen_steady(&c, sb, sc, ss);
  if (c.json) {
    fprintf(c.json, "\n]\n");
    fclose(c.json);
  }
  at_lm_close(c.lm);
  return 0;
}
