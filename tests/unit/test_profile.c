/* tests/unit/test_profile.c — at_profile_measure() (anytime/profile.h), the
 * service-time measurement `anytime profile` and the server's start-up
 * both use.
 *
 * Checked: bad arguments are refused with AT_ERR_INVALID_ARG and a detail
 * that names the problem (batch size 0 or past AT_PROFILE_MAX_BATCH, no
 * sequences, an empty or over-long sequence, a variant the engine lacks,
 * iters/passes/warmup out of range); a good call returns positive pass
 * medians and their median, runs batches of exactly the batch size (the
 * hook sees passes x iters batches of b distinct sequences, none for the
 * warm-ups, and the call fails if a batch ran otherwise); one sequence
 * repeated fills a batch (the server's start-up shape); the busy-pool
 * figures exist only with more than one worker and `busy`, and with two
 * workers on the real small int8 model (~0.2 ms a Run, so two Runs overlap)
 * every pass collects full-pool Runs. A length range (min_len..max_len)
 * draws every batch from the sequences in it; at_profile_length_cuts()
 * splits lengths into equal-count buckets, and at_profile_fit_length()
 * fits the length model to the buckets' s(1). */
#include <math.h>
#include <stdbool.h>

#include "anytime/anytime.h"
#include "anytime/profile.h"
#include "testutil.h"

#define NSEQ 8

static int64_t g_ids[NSEQ][40];
static size_t g_lens[NSEQ];
static const int64_t *g_ptrs[NSEQ];

static void make_seqs(int64_t lo, int64_t span) {
  uint64_t x = 99;
  for (int i = 0; i < NSEQ; i++) {
    g_lens[i] = 5 + (size_t)i * 4;
    for (size_t k = 0; k < g_lens[i]; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      g_ids[i][k] = lo + (int64_t)((x >> 33) % (uint64_t)span);
    }
    g_ptrs[i] = g_ids[i];
  }
}

static at_engine *start_engine(const char *model, int workers) {
  at_engine_params ep = at_engine_default_params();
  ep.n_workers = workers;
  at_engine *e = NULL;
  assert_int_equal(at_engine_create(&ep, &e), AT_OK);
  assert_int_equal(at_engine_add_variant(e, "v", model, NULL, NULL), AT_OK);
  assert_int_equal(at_engine_start(e), AT_OK);
  return e;
}

typedef struct hook_log {
  int calls, bad_n, repeats, out_of_range, last_pass, last_iter;
  size_t want_n, n_seqs;
} hook_log;

static void on_batch(void *user, int pass, int iter, const size_t *seqs, size_t n) {
  hook_log *h = user;
  h->calls++;
  if (n != h->want_n) h->bad_n++;
  for (size_t q = 0; q < n; q++) {
    if (seqs[q] >= h->n_seqs) h->out_of_range++;
    for (size_t r = 0; r < q; r++)
      if (seqs[r] == seqs[q]) h->repeats++;
  }
  h->last_pass = pass, h->last_iter = iter;
}

static void expect_invalid(at_engine *e, int variant, const int64_t *const *ids, const size_t *lens,
                           size_t n, const at_profile_params *p, const char *detail) {
  at_profile_result r;
  assert_int_equal(at_profile_measure(e, variant, ids, lens, n, p, &r), AT_ERR_INVALID_ARG);
  if (!strstr(at_last_error(), detail))
    fail_msg("detail '%s' does not say '%s'", at_last_error(), detail);
}

static void test_bad_arguments(void **state) {
  (void)state;
  make_seqs(1, 99);
  at_engine *e = start_engine(test_data("models/tiny_encoder.onnx"), 1);
  at_profile_params p = at_profile_default_params();
  p.iters = 3, p.passes = 1;
  at_profile_result r;
  assert_int_equal(at_profile_measure(NULL, 0, g_ptrs, g_lens, NSEQ, &p, &r), AT_ERR_INVALID_ARG);
  assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, NSEQ, &p, NULL), AT_ERR_INVALID_ARG);
  expect_invalid(e, 1, g_ptrs, g_lens, NSEQ, &p, "no variant 1");
  expect_invalid(e, -1, g_ptrs, g_lens, NSEQ, &p, "no variant -1");
  expect_invalid(e, 0, g_ptrs, g_lens, 0, &p, "no sequences");
  p.batch_size = 0;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "batch size 0");
  p.batch_size = AT_PROFILE_MAX_BATCH + 1;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "batch size 257");
  p.batch_size = 2, p.iters = 0;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "iters");
  p.iters = 3, p.passes = AT_PROFILE_MAX_PASSES + 1;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "passes");
  p.passes = 1, p.warmup = -1;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "warmup");
  p.warmup = 0;
  size_t lens[NSEQ];
  memcpy(lens, g_lens, sizeof lens);
  lens[3] = 0;
  expect_invalid(e, 0, g_ptrs, lens, NSEQ, &p, "sequence 3 is empty");
  lens[3] = AT_PROFILE_MAX_SEQ_LEN + 1;
  expect_invalid(e, 0, g_ptrs, lens, NSEQ, &p, "sequence 3 is too long");
  at_engine_destroy(e);
}

/* One worker: alone figures only, batches of exactly b distinct sequences. */
static void test_alone_batches(void **state) {
  (void)state;
  make_seqs(1, 99);
  at_engine *e = start_engine(test_data("models/tiny_encoder.onnx"), 1);
  hook_log h = {.want_n = 4, .n_seqs = NSEQ};
  uint64_t rng = 7;
  at_profile_params p = at_profile_default_params();
  p.batch_size = 4, p.iters = 5, p.passes = 3, p.warmup = 2, p.rng = &rng;
  p.on_batch = on_batch, p.user = &h;
  at_profile_result r;
  assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, NSEQ, &p, &r), AT_OK);
  assert_int_equal(h.calls, 15); /* passes x iters; the warm-ups are not shown */
  assert_int_equal(h.bad_n, 0);
  assert_int_equal(h.repeats, 0);
  assert_int_equal(h.out_of_range, 0);
  assert_int_equal(h.last_pass, 2);
  assert_int_equal(h.last_iter, 4);
  assert_true(rng != 7); /* the caller's generator advanced */
  assert_int_equal(r.batch_size, 4);
  assert_int_equal(r.passes, 3);
  assert_int_equal(r.workers, 1);
  for (int k = 0; k < 3; k++) assert_true(r.pass_s[k] > 0 && r.pass_s[k] < 1);
  assert_true(r.median_s > 0);
  assert_true(r.spread_pct >= 0);
  assert_false(r.busy_measured); /* one worker: nothing can be busy beside it */
  assert_true(r.busy_median_s == 0 && r.busy_runs == 0);
  at_engine_destroy(e);
}

/* A length range: every batch is drawn from the sequences in it only
 * (lengths 5, 9, ..., 33: 13..21 holds 13, 17, 21), distinct while they
 * suffice; a range no sequence is in, or an inverted one, is refused. */
typedef struct range_log {
  int calls, outside;
  size_t lo, hi;
} range_log;

static void on_range(void *user, int pass, int iter, const size_t *seqs, size_t n) {
  (void)pass, (void)iter;
  range_log *h = user;
  h->calls++;
  for (size_t q = 0; q < n; q++) h->outside += g_lens[seqs[q]] < h->lo || g_lens[seqs[q]] > h->hi;
}

static void test_length_range(void **state) {
  (void)state;
  make_seqs(1, 99);
  at_engine *e = start_engine(test_data("models/tiny_encoder.onnx"), 1);
  range_log h = {.lo = 13, .hi = 21};
  at_profile_params p = at_profile_default_params();
  p.batch_size = 3, p.iters = 6, p.passes = 2, p.min_len = 13, p.max_len = 21;
  p.on_batch = on_range, p.user = &h;
  at_profile_result r;
  assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, NSEQ, &p, &r), AT_OK);
  assert_int_equal(h.calls, 12);
  assert_int_equal(h.outside, 0);
  p.batch_size = 8; /* more than the range holds: with repetition, still inside */
  h = (range_log){.lo = 13, .hi = 21};
  assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, NSEQ, &p, &r), AT_OK);
  assert_int_equal(h.outside, 0);
  p.min_len = 34, p.max_len = 0;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "no sequence of 34");
  p.min_len = 20, p.max_len = 10;
  expect_invalid(e, 0, g_ptrs, g_lens, NSEQ, &p, "is empty");
  at_engine_destroy(e);
}

/* Length buckets from quantiles: equal-count groups, repeats merged. */
static void test_length_cuts(void **state) {
  (void)state;
  size_t lens[12] = {9, 3, 12, 7, 1, 5, 11, 2, 8, 4, 10, 6}, scratch[12], cuts[8];
  assert_int_equal(at_profile_length_cuts(lens, 12, 3, scratch, cuts), 3);
  assert_int_equal(cuts[0], 4), assert_int_equal(cuts[1], 8); /* 1-4 | 5-8 | 9-12 */
  assert_int_equal(at_profile_length_cuts(lens, 12, 4, scratch, cuts), 4);
  assert_int_equal(cuts[0], 3), assert_int_equal(cuts[1], 6), assert_int_equal(cuts[2], 9);
  size_t same[6] = {5, 5, 5, 5, 5, 9};
  assert_int_equal(at_profile_length_cuts(same, 6, 3, scratch, cuts), 2); /* 5 | 9 */
  assert_int_equal(cuts[0], 5);
  size_t one[4] = {7, 7, 7, 7};
  assert_int_equal(at_profile_length_cuts(one, 4, 3, scratch, cuts), 1);
}

/* The length model's fit: points on a line give back its a and b exactly
 * (weights do not matter then) and the relative slope b / (a + b·ref);
 * a line through negative a refits through the origin; a falling line is
 * no model (0, 0); one bucket, one distinct length, or a bad point is
 * refused and leaves 0, 0; cost x ref never exceeds 1. */
static void test_length_fit(void **state) {
  (void)state;
  at_profile_length_fit f;
  /* s = 2 ms + 0.1 ms/token */
  double t[4] = {10, 20, 30, 45}, s[4], w[4] = {100, 80, 120, 3};
  for (int i = 0; i < 4; i++) s[i] = 2e-3 + 1e-4 * t[i];
  assert_int_equal(at_profile_fit_length(t, s, w, 4, 25, &f), AT_OK);
  assert_false(f.through_origin);
  assert_true(fabs(f.a_s - 2e-3) < 1e-12);
  assert_true(fabs(f.b_s - 1e-4) < 1e-13);
  assert_true(f.len_ref_tokens == 25);
  assert_true(fabs(f.len_cost_per_token - 1e-4 / (2e-3 + 1e-4 * 25)) < 1e-12);
  /* the weight it gives reproduces the line relative to cost(ref) */
  for (int i = 0; i < 4; i++) {
    double wt = 1 + f.len_cost_per_token * (t[i] - 25);
    assert_true(fabs(wt * (2e-3 + 1e-4 * 25) - s[i]) < 1e-12);
  }
  /* two points are enough */
  assert_int_equal(at_profile_fit_length(t, s, w, 2, 15, &f), AT_OK);
  assert_true(fabs(f.b_s - 1e-4) < 1e-13);
  /* weights decide off the line: (10, 1), (20, 3), (30, 3); the first
   * bucket weighted 0 leaves the flat pair, weighted up it pulls b up */
  double t3[3] = {10, 20, 30}, s3[3] = {1, 3, 3}, w0[3] = {0, 1, 1}, w9[3] = {9, 1, 1};
  assert_int_equal(at_profile_fit_length(t3, s3, w0, 3, 20, &f), AT_OK);
  assert_true(f.b_s == 0 && f.len_cost_per_token == 0 && f.len_ref_tokens == 0);
  assert_int_equal(at_profile_fit_length(t3, s3, w9, 3, 20, &f), AT_OK);
  assert_true(f.b_s > 0.09 && f.b_s < 0.2);
  /* a < 0: s = 0.2·t − 1 at t = 10, 20 (1, 3) refits through the origin:
   * b = Σts / Σt² = (10 + 60) / (100 + 400) = 0.14, a = 0, cost = 1/ref */
  double t2[2] = {10, 20}, s2[2] = {1, 3}, w2[2] = {1, 1};
  assert_int_equal(at_profile_fit_length(t2, s2, w2, 2, 15, &f), AT_OK);
  assert_true(f.through_origin);
  assert_true(f.a_s == 0);
  assert_true(fabs(f.b_s - 0.14) < 1e-12);
  assert_true(f.len_cost_per_token * f.len_ref_tokens <= 1);
  assert_true(fabs(f.len_cost_per_token - 1.0 / 15) < 1e-12);
  /* cost x ref <= 1 exactly, whatever ref, on the through-origin fit */
  for (double ref = 1; ref < 500; ref += 0.37) {
    assert_int_equal(at_profile_fit_length(t2, s2, w2, 2, ref, &f), AT_OK);
    assert_true(f.len_cost_per_token * f.len_ref_tokens <= 1);
    assert_true(f.len_cost_per_token <= 1);
  }
  /* a falling line: cost does not grow with length, no model */
  double sf[2] = {3, 1};
  assert_int_equal(at_profile_fit_length(t2, sf, w2, 2, 15, &f), AT_OK);
  assert_true(f.b_s == 0 && f.a_s == 2);
  assert_true(f.len_ref_tokens == 0 && f.len_cost_per_token == 0);
  /* refused, leaving no model */
  f.len_ref_tokens = f.len_cost_per_token = 7;
  assert_int_equal(at_profile_fit_length(t, s, w, 1, 25, &f), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "1 length bucket, a slope needs 2"));
  assert_true(f.len_ref_tokens == 0 && f.len_cost_per_token == 0);
  double same[2] = {12, 12};
  assert_int_equal(at_profile_fit_length(same, s2, w2, 2, 12, &f), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "same mean length"));
  double zero[2] = {0, 0};
  assert_int_equal(at_profile_fit_length(t2, s2, zero, 2, 15, &f), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "every weight is 0"));
  double neg[2] = {1, -1};
  assert_int_equal(at_profile_fit_length(t2, s2, neg, 2, 15, &f), AT_ERR_INVALID_ARG);
  double snan[2] = {1, NAN};
  assert_int_equal(at_profile_fit_length(t2, snan, w2, 2, 15, &f), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "is not positive"));
  assert_int_equal(at_profile_fit_length(t2, s2, w2, 2, 0.5, &f), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "reference length"));
  assert_int_equal(at_profile_fit_length(NULL, s2, w2, 2, 15, &f), AT_ERR_INVALID_ARG);
}

/* The server's start-up shape: one sequence repeated to fill a batch of 8. */
static void test_one_sequence_fills_a_batch(void **state) {
  (void)state;
  make_seqs(1, 99);
  at_engine *e = start_engine(test_data("models/tiny_encoder.onnx"), 2);
  hook_log h = {.want_n = 8, .n_seqs = 1};
  at_profile_params p = at_profile_default_params();
  p.batch_size = 8, p.iters = 15, p.passes = 1, p.warmup = 3, p.busy = false;
  p.on_batch = on_batch, p.user = &h;
  at_profile_result r;
  assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, 1, &p, &r), AT_OK);
  assert_int_equal(h.calls, 15);
  assert_int_equal(h.bad_n, 0);
  assert_int_equal(h.repeats, 15 * 28); /* 8 of one sequence: 28 equal pairs a batch */
  assert_true(r.median_s > 0 && r.median_s == r.pass_s[0]);
  assert_int_equal(r.spread_pct, 0);
  assert_false(r.busy_measured); /* not asked for, though there are two workers */
  at_engine_destroy(e);
}

/* Two workers on a model slow enough for Runs to overlap: busy figures. */
static void test_busy_pool(void **state) {
  (void)state;
  make_seqs(1000, 5000); /* inside the models' vocabulary */
  /* The large model's Runs (about 1 ms) overlap more surely than the small
   * one's: on a host whose cores are taken by other work, one worker could
   * run a whole round of short Runs before the other woke, and a pass then
   * had no full-pool Run at all (seen: 5 of 20 runs beside two busy loops).
   * That is the host, not the profile, so the measurement is repeated, up to
   * three times, until every pass has one. */
  at_engine *e = start_engine(test_source("models/sentiment-large/onnx/model_quantized.onnx"), 2);
  at_profile_params p = at_profile_default_params();
  p.batch_size = 2, p.iters = 5, p.passes = 2;
  at_profile_result r;
  for (int attempt = 0; attempt < 3; attempt++) {
    assert_int_equal(at_profile_measure(e, 0, g_ptrs, g_lens, NSEQ, &p, &r), AT_OK);
    if (r.busy_pass_s[0] > 0 && r.busy_pass_s[1] > 0) break;
    print_message("busy pool: a pass without a full-pool Run (host busy); measuring again\n");
  }
  assert_int_equal(r.workers, 2);
  assert_true(r.median_s > 0);
  assert_true(r.busy_measured);
  assert_true(r.busy_runs >= 2); /* at least one in each pass */
  for (int k = 0; k < 2; k++) assert_true(r.busy_pass_s[k] > 0);
  assert_true(r.busy_median_s > 0);
  assert_true(r.busy_spread_pct >= 0);
  at_engine_destroy(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_alone_batches),
      cmocka_unit_test(test_one_sequence_fills_a_batch),
      cmocka_unit_test(test_busy_pool),
      cmocka_unit_test(test_length_range),
      cmocka_unit_test(test_length_cuts),
      cmocka_unit_test(test_length_fit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
