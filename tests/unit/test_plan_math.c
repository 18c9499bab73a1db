/* tests/unit/test_plan_math.c — the planner's pure mathematics: Erlang B by
 * recursion against the factorial form, Erlang C and M/M/c waits (c = 1 is
 * exactly M/M/1), ρ >= 1, the backlog bound, the Pareto frontier, service
 * interpolation, the deadline cap and Retry-After rounding. */
#include <math.h>

#include "anytime/plan.h"
#include "testutil.h"

/* B(c, a) = (a^c / c!) / Σ_{k=0..c} a^k / k!, in long double, in log space
 * (terms scaled by the largest) so nothing overflows. */
static long double erlang_b_factorial(int c, long double a) {
  long double lmax = -INFINITY;
  for (int k = 0; k <= c; k++) {
    long double l = k * logl(a) - lgammal(k + 1.0L);
    if (l > lmax) lmax = l;
  }
  long double sum = 0;
  for (int k = 0; k <= c; k++) sum += expl(k * logl(a) - lgammal(k + 1.0L) - lmax);
  return expl(c * logl(a) - lgammal(c + 1.0L) - lmax) / sum;
}

static void test_erlang_b_recursion_matches_factorial_form(void **state) {
  (void)state;
  const double loads[] = {0.001, 0.01, 0.1, 0.5, 0.9, 1, 1.5, 2, 3.7, 5, 8, 10,
                          17.3, 25, 40, 63, 99.9, 100, 150, 250, 400};
  int checked = 0;
  for (int c = 1; c <= 300; c += (c < 20 ? 1 : 7)) {
    for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
      double a = loads[i];
      long double ref = erlang_b_factorial(c, a);
      if (ref < 1e-280L) continue; /* below double's normal range */
      double got = at_plan_erlang_b(c, a);
      double rel = (double)fabsl((got - ref) / ref);
      if (rel >= 1e-9) fail_msg("B(%d, %g) = %.17g, factorial form %.17Lg (rel %.3g)", c, a, got,
                                ref, rel);
      checked++;
    }
  }
  assert_true(checked > 500);
  assert_true(at_plan_erlang_b(0, 3.0) == 1.0);
  assert_true(at_plan_erlang_b(5, 0.0) == 0.0);
  assert_true(isnan(at_plan_erlang_b(-1, 1.0)));
  assert_true(isnan(at_plan_erlang_b(2, -1.0)));
  assert_true(isnan(at_plan_erlang_b(2, NAN)));
  assert_true(isnan(at_plan_erlang_b(2, INFINITY)));
}

static void test_erlang_c_known_values(void **state) {
  (void)state;
  /* c = 2, a = 1: B = 0.5 / 2.5 = 0.2; C = 0.2 / (1 - 0.5 · 0.8) = 1/3. */
  assert_true(fabs(at_plan_erlang_b(2, 1.0) - 0.2) < 1e-15);
  assert_true(fabs(at_plan_erlang_c(2, 1.0) - 1.0 / 3.0) < 1e-15);
  /* λ = 1, μ = 1 per worker, c = 2: E[Wq] = (1/3) / (2 - 1). */
  assert_true(fabs(at_plan_mmc_wait_s(2, 1.0, 1.0) - 1.0 / 3.0) < 1e-15);
  assert_true(fabs(at_plan_mmc_sojourn_s(2, 1.0, 1.0) - 4.0 / 3.0) < 1e-15);
  /* c = 1: C = ρ. */
  for (double rho = 0.05; rho < 1; rho += 0.05)
    assert_true(fabs(at_plan_erlang_c(1, rho) - rho) < 1e-15);
  /* C >= B, both in [0, 1]. */
  for (int c = 1; c < 50; c++)
    for (double r = 0.1; r < 1; r += 0.1) {
      double a = r * c, b = at_plan_erlang_b(c, a), cc = at_plan_erlang_c(c, a);
      assert_true(b >= 0 && b <= 1 && cc >= b && cc <= 1);
    }
  assert_true(isnan(at_plan_erlang_c(0, 1.0)));
}

static void test_mm1_exact(void **state) {
  (void)state;
  const double mus[] = {1, 10, 100, 2000, 1e5};
  for (size_t i = 0; i < sizeof mus / sizeof mus[0]; i++)
    for (double r = 0.01; r < 0.999; r += 0.0137) {
      double mu = mus[i], lambda = r * mu;
      double w = at_plan_mmc_sojourn_s(1, lambda, mu), want = 1.0 / (mu - lambda);
      if (fabs(w - want) / want > 1e-12) fail_msg("M/M/1 λ=%g μ=%g: %.17g vs %.17g", lambda, mu, w, want);
      double wq = at_plan_mmc_wait_s(1, lambda, mu), wq_want = r / (mu - lambda);
      assert_true(fabs(wq - wq_want) / wq_want < 1e-12);
    }
}

static void test_per_worker_rate_and_unstable(void **state) {
  (void)state;
  /* 4 workers at 100/s each carry 300/s (ρ = 0.75); one server at 100/s
   * could not: passing the per-worker rate is what makes this finite. */
  double w4 = at_plan_mmc_wait_s(4, 300, 100);
  assert_true(isfinite(w4) && w4 > 0 && w4 < 0.01);
  assert_true(isinf(at_plan_mmc_wait_s(1, 300, 100)));
  /* ρ >= 1 is infinite, exactly at 1 too. */
  assert_true(isinf(at_plan_mmc_wait_s(4, 400, 100)));
  assert_true(isinf(at_plan_mmc_sojourn_s(4, 400, 100)));
  assert_true(isinf(at_plan_mmc_wait_s(4, 1000, 100)));
  assert_true(at_plan_erlang_c(4, 4.0) == 1.0);
  assert_true(at_plan_erlang_c(4, 9.0) == 1.0);
  /* no arrivals: no wait, sojourn = service. */
  assert_true(at_plan_mmc_wait_s(3, 0, 50) == 0.0);
  assert_true(at_plan_mmc_sojourn_s(3, 0, 50) == 1.0 / 50);
  assert_true(isnan(at_plan_mmc_wait_s(0, 1, 1)));
  assert_true(isnan(at_plan_mmc_wait_s(1, 1, 0)));
  assert_true(isnan(at_plan_mmc_wait_s(1, -1, 1)));
  /* wait grows with load */
  double prev = 0;
  for (double l = 10; l < 400; l += 10) {
    double w = at_plan_mmc_wait_s(4, l, 100);
    assert_true(w > prev);
    prev = w;
  }
}

/* The q-quantile of the M/M/c wait: for c = 1 it is the closed form
 * ln(ρ/(1-q)) / (μ - λ) (P(Wq > t) = ρ·e^(-(μ-λ)t)); for any c, putting it
 * back into the tail C·e^(-(cμ-λ)t) gives exactly 1 - q; when fewer than
 * 1 - q of the arrivals wait at all it is 0. */
static void test_wait_quantile(void **state) {
  (void)state;
  /* M/M/1, μ = 100/s, λ = 80/s: ρ = 0.8 */
  double t90 = at_plan_mmc_wait_quantile_s(1, 80, 100, 0.9);
  assert_true(fabs(t90 - log(0.8 / 0.1) / 20.0) < 1e-12);
  /* ρ = 0.05 < 1 - q: the 90th percentile arrival does not wait */
  assert_true(at_plan_mmc_wait_quantile_s(1, 5, 100, 0.9) == 0.0);
  for (int c = 1; c <= 8; c++)
    for (double rho = 0.3; rho < 0.99; rho += 0.07)
      for (double q = 0.5; q < 0.995; q += 0.1) {
        double mu = 250, lambda = rho * c * mu;
        double t = at_plan_mmc_wait_quantile_s(c, lambda, mu, q);
        double pw = at_plan_erlang_c(c, lambda / mu);
        if (pw <= 1 - q) {
          assert_true(t == 0.0);
        } else {
          assert_true(t > 0);
          double tail = pw * exp(-(c * mu - lambda) * t);
          assert_true(fabs(tail - (1 - q)) < 1e-9);
        }
        /* a higher quantile never waits less */
        assert_true(at_plan_mmc_wait_quantile_s(c, lambda, mu, q + 0.004) >= t);
      }
  /* unstable, idle, invalid */
  assert_true(isinf(at_plan_mmc_wait_quantile_s(2, 200, 100, 0.9)));
  assert_true(at_plan_mmc_wait_quantile_s(2, 0, 100, 0.9) == 0.0);
  assert_true(isnan(at_plan_mmc_wait_quantile_s(2, 50, 100, 0)));
  assert_true(isnan(at_plan_mmc_wait_quantile_s(2, 50, 100, 1)));
  assert_true(isnan(at_plan_mmc_wait_quantile_s(0, 50, 100, 0.9)));
  assert_true(isnan(at_plan_mmc_wait_quantile_s(2, 50, -1, 0.9)));
}

static void test_backlog_bound(void **state) {
  (void)state;
  assert_true(at_plan_backlog_s(0, 4, 0.01) == 0.0);
  assert_true(fabs(at_plan_backlog_s(1, 4, 0.01) - 0.01) < 1e-15);
  assert_true(fabs(at_plan_backlog_s(4, 4, 0.01) - 0.01) < 1e-15);
  assert_true(fabs(at_plan_backlog_s(5, 4, 0.01) - 0.02) < 1e-15);
  assert_true(fabs(at_plan_backlog_s(9, 4, 0.01) - 0.03) < 1e-15);
  assert_true(fabs(at_plan_backlog_s(100, 1, 0.005) - 0.5) < 1e-15);
  assert_true(isnan(at_plan_backlog_s(3, 0, 0.01)));
}

static void test_frontier(void **state) {
  (void)state;
  /*                 A     B     C     D     E     F    G */
  double acc[] = {0.90, 0.85, 0.80, 0.85, 0.70, NAN, 0.95};
  double cost[] = {10, 4, 5, 4, 1, 1, 30};
  bool on[7];
  size_t k = at_plan_frontier(acc, cost, 7, on);
  assert_true(on[0]);  /* A: nothing cheaper is as accurate */
  assert_true(on[1]);  /* B */
  assert_false(on[2]); /* C: B is more accurate and cheaper */
  assert_false(on[3]); /* D: duplicate of B, later index */
  assert_true(on[4]);  /* E: cheapest */
  assert_false(on[5]); /* F: NaN */
  assert_true(on[6]);  /* G: most accurate */
  assert_int_equal(k, 4);
  /* equal accuracy, lower cost dominates */
  double a2[] = {0.9, 0.9}, c2[] = {2, 1};
  assert_int_equal(at_plan_frontier(a2, c2, 2, on), 1);
  assert_false(on[0]);
  assert_true(on[1]);
}

static void test_service_interpolation(void **state) {
  (void)state;
  at_plan_variant v = {.name = "v", .n_points = 3, .batch = {1, 4, 16},
                       .service_s = {0.001, 0.002, 0.006}};
  assert_true(at_plan_variant_service_s(&v, 0.5) == 0.001);
  assert_true(at_plan_variant_service_s(&v, 1) == 0.001);
  assert_true(fabs(at_plan_variant_service_s(&v, 2) - (0.001 + 0.001 / 3)) < 1e-15);
  assert_true(fabs(at_plan_variant_service_s(&v, 4) - 0.002) < 1e-15);
  assert_true(fabs(at_plan_variant_service_s(&v, 10) - 0.004) < 1e-15);
  assert_true(fabs(at_plan_variant_service_s(&v, 16) - 0.006) < 1e-15);
  assert_true(fabs(at_plan_variant_service_s(&v, 32) - 0.012) < 1e-15); /* per-request kept */
  at_plan_variant one = {.name = "one", .n_points = 1, .batch = {1}, .service_s = {0.01}};
  assert_true(fabs(at_plan_variant_service_s(&one, 8) - 0.08) < 1e-15);
  assert_true(isnan(at_plan_variant_service_s(NULL, 1)));
}

static void test_deadline_cap_and_header(void **state) {
  (void)state;
  assert_true(at_plan_cap_deadline(0.02, 0.05, 1.0) == 0.02);  /* shorter is allowed */
  assert_true(at_plan_cap_deadline(0, 0.05, 1.0) == 0.05);     /* not given */
  assert_true(at_plan_cap_deadline(-3, 0.05, 1.0) == 0.05);
  assert_true(at_plan_cap_deadline(NAN, 0.05, 1.0) == 0.05);
  assert_true(at_plan_cap_deadline(5, 0.05, 1.0) == 1.0);      /* capped */
  assert_true(at_plan_cap_deadline(INFINITY, 0.05, 1.0) == 1.0);
  assert_true(at_plan_cap_deadline(1.0, 0.05, 1.0) == 1.0);
  double d = -1;
  assert_int_equal(at_plan_parse_deadline_ms("38", 0.05, 1.0, &d), AT_OK);
  assert_true(fabs(d - 0.038) < 1e-15);
  assert_int_equal(at_plan_parse_deadline_ms(" 38.5\t", 0.05, 1.0, &d), AT_OK);
  assert_true(fabs(d - 0.0385) < 1e-15);
  assert_int_equal(at_plan_parse_deadline_ms(".5", 0.05, 1.0, &d), AT_OK);
  assert_true(fabs(d - 0.0005) < 1e-15);
  assert_int_equal(at_plan_parse_deadline_ms(NULL, 0.05, 1.0, &d), AT_OK);
  assert_true(d == 0.05);
  assert_int_equal(at_plan_parse_deadline_ms("  ", 0.05, 1.0, &d), AT_OK);
  assert_true(d == 0.05);
  assert_int_equal(at_plan_parse_deadline_ms("100000", 0.05, 1.0, &d), AT_OK);
  assert_true(d == 1.0);
  const char *bad[] = {"abc", "0", "0.0", "-5", "+5", "1e3", "inf", "nan", "0x10", "5ms",
                       "5 5", ".", "99999999999999999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    d = 7;
    if (at_plan_parse_deadline_ms(bad[i], 0.05, 1.0, &d) != AT_ERR_PARSE)
      fail_msg("'%s' should not parse", bad[i]);
    assert_true(d == 7);
  }
  assert_int_equal(at_plan_parse_deadline_ms("5", 0.05, 1.0, NULL), AT_ERR_INVALID_ARG);
  assert_int_equal(at_plan_retry_after_header(0.2), 1);
  assert_int_equal(at_plan_retry_after_header(1.0), 1);
  assert_int_equal(at_plan_retry_after_header(1.2), 2);
  assert_int_equal(at_plan_retry_after_header(NAN), 1);
  assert_int_equal(at_plan_retry_after_header(INFINITY), 3600);
  assert_int_equal(at_plan_retry_after_header(1e9), 3600);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_erlang_b_recursion_matches_factorial_form),
      cmocka_unit_test(test_erlang_c_known_values),
      cmocka_unit_test(test_mm1_exact),
      cmocka_unit_test(test_per_worker_rate_and_unstable),
      cmocka_unit_test(test_wait_quantile),
      cmocka_unit_test(test_backlog_bound),
      cmocka_unit_test(test_frontier),
      cmocka_unit_test(test_service_interpolation),
      cmocka_unit_test(test_deadline_cap_and_header),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
