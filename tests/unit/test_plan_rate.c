/* tests/unit/test_plan_rate.c — the sliding-window rate estimator with known
 * event times: counts per window, expiry, late events, idle gaps, the rate
 * for a steady stream, and channels kept apart. */
#include <math.h>

#include "plan/rate.h"
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts_and_expiry),
      cmocka_unit_test(test_steady_stream_rate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
