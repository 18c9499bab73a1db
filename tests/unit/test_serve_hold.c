/* tests/unit/test_serve_hold.c — the held-refusal rule (serve_hold_decide,
 * src/serve/holdq.c) and its queue: the same request again on a connection
 * before the slot its last 429 gave is held to that slot (at most 1 s);
 * a different request on that connection — a client pool or a proxy
 * sharing it — never is (the first version held any request, and an
 * open-loop pool at ρ = 5 answered in 437 ms at p99); a request on time
 * is not; holds off or a non-deadline refusal never hold, but every
 * refusal is remembered. The queue starts, flushes and stops clean (its
 * resumes are exercised through the real server: serve_admission.sh). */
#include <string.h>

#include "serve/holdq.h"
#include "testutil.h"

#define MS 1000000ull

static void test_same_request_early_is_held(void **state) {
  (void)state;
  conn_state cs = {0};
  const char *a = "{\"inputs\":\"the movie was good\"}", *b = "{\"inputs\":\"the movie was bad\"}";
  uint64_t sa = serve_body_sig(a, strlen(a)), sb = serve_body_sig(b, strlen(b));
  assert_true(sa != 0 && sb != 0 && sa != sb);
  /* a first refusal: answered now, its slot remembered */
  assert_int_equal(serve_hold_decide(&cs, 1000 * MS, 0.040, sa, true), 0);
  assert_int_equal(cs.told_ns, 1040 * MS);
  /* the same body again 1 ms later: held to the slot it was told */
  assert_int_equal(serve_hold_decide(&cs, 1001 * MS, 0.050, sa, true), 1040 * MS);
  assert_int_equal(cs.told_ns, 1051 * MS); /* and told the next one */
  /* another body on the same connection, early: not held */
  assert_int_equal(serve_hold_decide(&cs, 1002 * MS, 0.010, sb, true), 0);
  assert_int_equal(cs.refused_sig, sb);
  /* on time (at or after the slot): not held */
  assert_int_equal(serve_hold_decide(&cs, 1012 * MS, 0.010, sb, true), 0);
  /* holds off, or not a deadline refusal: never held, still remembered */
  assert_int_equal(serve_hold_decide(&cs, 1013 * MS, 0.010, sb, false), 0);
  assert_int_equal(cs.told_ns, 1023 * MS);
  /* a slot further than 1 s away: held 1 s */
  cs.told_ns = 5000 * MS;
  assert_int_equal(serve_hold_decide(&cs, 1014 * MS, 0.010, sb, true),
                   1014 * MS + SERVE_HOLD_MAX_NS);
  /* no usable advice: remembered as "now" */
  serve_hold_decide(&cs, 2000 * MS, -1, sb, true);
  assert_int_equal(cs.told_ns, 2000 * MS);
}

static void test_signature(void **state) {
  (void)state;
  /* long bodies: the ends and the length decide, the middle does not */
  static char x[4096], y[4096];
  memset(x, 'a', sizeof x);
  memcpy(y, x, sizeof y);
  y[2000] = 'b';
  assert_true(serve_body_sig(x, sizeof x) == serve_body_sig(y, sizeof y));
  y[4095] = 'b';
  assert_true(serve_body_sig(x, sizeof x) != serve_body_sig(y, sizeof y));
  assert_true(serve_body_sig(x, 100) != serve_body_sig(x, 101));
  assert_true(serve_body_sig(NULL, 0) != 0);
}

static void test_queue_flush(void **state) {
  (void)state;
  serve_holdq *q = NULL;
  assert_int_equal(serve_holdq_create(&q), AT_OK);
  assert_int_equal(serve_holdq_len(q), 0);
  serve_holdq_flush(q);
  serve_holdq_destroy(q);
  serve_holdq_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_request_early_is_held),
      cmocka_unit_test(test_signature),
      cmocka_unit_test(test_queue_flush),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
