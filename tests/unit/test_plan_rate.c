/* tests/unit/test_plan_rate.c — the planner's two window estimators with
 * known event times. The rate window: counts per window, expiry, late
 * events, idle gaps, the rate for a steady stream, channels kept apart,
 * several events at once. The window quantile: against the exact quantile
 * of the same values sorted (to within one bin), clamping, expiry. */
#include <math.h>
#include <stdlib.h>

#include "anytime/rng.h"
#include "plan/rate.h"
#include "plan/wquant.h"
#include "testutil.h"

#define MS 1000000ull

static void test_counts_and_expiry(void **state) {
  (void)state;
  at_rate_window w;
  assert_int_equal(at_rate_init(&w, 1000 * MS, 10), AT_OK); /* 100 ms buckets */
  for (int i = 0; i < 5; i++) at_rate_record(&w, 0, 50 * MS);
  assert_int_equal(at_rate_count(&w, 0, 50 * MS), 5);
  assert_int_equal(at_rate_count(&w, 1, 50 * MS), 0); /* other channel */
  assert_int_equal(at_rate_count(&w, 0, 999 * MS), 5); /* buckets 0..9 */
  at_rate_record(&w, 0, 950 * MS);
  assert_int_equal(at_rate_count(&w, 0, 999 * MS), 6);
  assert_int_equal(at_rate_count(&w, 0, 1000 * MS), 1); /* bucket 0 left */
  assert_int_equal(at_rate_count(&w, 0, 1899 * MS), 1); /* buckets 9..18 */
  assert_int_equal(at_rate_count(&w, 0, 1900 * MS), 0);
  /* a late event inside the window counts in its own bucket... */
  at_rate_record(&w, 0, 1500 * MS);
  assert_int_equal(at_rate_count(&w, 0, 2000 * MS), 1);
  assert_int_equal(at_rate_count(&w, 0, 2499 * MS), 1);
  assert_int_equal(at_rate_count(&w, 0, 2500 * MS), 0);
  /* ...one older than the window is dropped */
  at_rate_record(&w, 0, 100 * MS);
  assert_int_equal(at_rate_count(&w, 0, 2500 * MS), 0);
  /* an idle gap much longer than the window clears everything */
  for (int i = 0; i < 100; i++) at_rate_record(&w, 1, 3000 * MS + (uint64_t)i * MS);
  assert_int_equal(at_rate_count(&w, 1, 3100 * MS), 100);
  assert_int_equal(at_rate_count(&w, 1, 3600000 * MS), 0);
  at_rate_free(&w);
  assert_int_equal(at_rate_init(&w, 5, 10), AT_ERR_INVALID_ARG);
  assert_int_equal(at_rate_init(&w, 1000, 1), AT_ERR_INVALID_ARG);
}

static void test_steady_stream_rate(void **state) {
  (void)state;
  at_rate_window w;
  assert_int_equal(at_rate_init(&w, 1000 * MS, 50), AT_OK);
  assert_true(at_rate_per_s(&w, 0, 0, 0) == 0.0);
  /* 100 events per second for 3 s, read at every event after the first
   * window: within 2% of 100 (bucket granularity is 1/50). */
  uint64_t t = 0;
  for (int i = 0; i < 300; i++) {
    t = 10 * MS * (uint64_t)(i + 1);
    at_rate_record(&w, 0, t);
    if (t > 1100 * MS) {
      double r = at_rate_per_s(&w, 0, t, 0);
      if (fabs(r - 100) > 2.5) fail_msg("rate %.3f at t=%.3f", r, t / 1e9);
    }
  }
  /* `extra` adds uncounted events over the same span */
  double r0 = at_rate_per_s(&w, 0, t, 0), r1 = at_rate_per_s(&w, 0, t, 1);
  assert_true(fabs((r1 - r0) - r0 / (double)at_rate_count(&w, 0, t)) < 1e-9);
  /* a stream of 1000/s, with stop: the rate decays to zero within a window */
  at_rate_window w2;
  assert_int_equal(at_rate_init(&w2, 200 * MS, 20), AT_OK);
  for (uint64_t k = 0; k < 2000; k++) at_rate_record(&w2, 1, k * MS);
  double r = at_rate_per_s(&w2, 1, 1999 * MS, 0);
  assert_true(fabs(r - 1000) < 15);
  assert_true(at_rate_per_s(&w2, 1, 2200 * MS, 0) == 0.0);
  at_rate_free(&w);
  at_rate_free(&w2);
}

static void test_record_n(void **state) {
  (void)state;
  at_rate_window w;
  assert_int_equal(at_rate_init(&w, 1000 * MS, 10), AT_OK);
  at_rate_record_n(&w, 0, 10 * MS, 64);
  at_rate_record_n(&w, 0, 20 * MS, 0); /* nothing */
  assert_int_equal(at_rate_count(&w, 0, 20 * MS), 64);
  assert_int_equal(at_rate_count(&w, 0, 1200 * MS), 0);
  at_rate_free(&w);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Random values in one window: the estimate is the upper edge of the bin
 * holding the exact quantile, so it lies in [exact, exact + bin). */
static void test_wquant_matches_sorted(void **state) {
  (void)state;
  static at_wquant w;
  const double hi = 0.020, bin = hi / (AT_WQ_BINS - 1);
  at_rng r;
  at_rng_seed(&r, 7);
  static double v[5000];
  for (int round = 0; round < 20; round++) {
    assert_int_equal(at_wquant_init(&w, 1000 * MS, hi), AT_OK);
    int n = 1 + (int)(at_rng_next(&r) % 5000);
    for (int i = 0; i < n; i++) {
      v[i] = (at_rng_uniform(&r) * 1.2 - 0.1) * hi; /* some <= 0, some > hi */
      at_wquant_record(&w, v[i], (uint64_t)i * 100000); /* all within 0.5 s */
    }
    assert_int_equal(at_wquant_count(&w, 600 * MS), (uint64_t)n);
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (int k = 0; k < 4; k++) {
      size_t rank = (size_t)ceil(qs[k] * n);
      double exact = v[rank - 1];
      exact = exact < 0 ? 0 : exact > hi ? hi : exact;
      double got = at_wquant_get(&w, qs[k], 600 * MS);
      if (exact <= 0) assert_true(got == 0);
      else assert_true(got >= exact - 1e-15 && got <= exact + bin + 1e-15);
    }
  }
  /* everything leaves a window after its last value */
  assert_true(at_wquant_get(&w, 0.5, 1600 * MS) == 0);
  assert_int_equal(at_wquant_count(&w, 1600 * MS), 0);
  assert_int_equal(at_wquant_init(&w, 5, hi), AT_ERR_INVALID_ARG);
  assert_int_equal(at_wquant_init(&w, 1000 * MS, 0), AT_ERR_INVALID_ARG);
  at_wquant_record(&w, NAN, 0); /* ignored */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts_and_expiry),
      cmocka_unit_test(test_steady_stream_rate),
      cmocka_unit_test(test_record_n),
      cmocka_unit_test(test_wquant_matches_sorted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
