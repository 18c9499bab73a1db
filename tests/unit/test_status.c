/* tests/unit/test_status.c — the status table: every code has a distinct
 * name and a description, unknown values are handled, and the per-thread
 * error detail is per thread. */
#include <pthread.h>

#include "anytime/anytime.h"
#include "core/internal.h"
#include "testutil.h"

static void test_names_unique_and_described(void **state) {
  (void)state;
  int codes[] = {
#define X(name, value, desc) value,
      AT_STATUS_TABLE(X)
#undef X
  };
  size_t n = sizeof codes / sizeof codes[0];
  assert_true(n >= 17);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(codes[i], (int)i); /* append-only, dense */
    const char *nm = at_status_name((at_status)codes[i]);
    assert_non_null(strstr(nm, "AT_"));
    assert_true(strlen(at_strerror((at_status)codes[i])) > 3);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(nm, at_status_name((at_status)codes[j]));
  }
  assert_string_equal(at_status_name(AT_OK), "AT_OK");
  assert_string_equal(at_status_name((at_status)9999), "AT_UNKNOWN_STATUS");
  assert_string_equal(at_strerror((at_status)9999), "unknown status");
}

static void *other_thread(void *arg) {
  (void)arg;
  at_fail(AT_ERR_PARSE, "from the other thread");
  return NULL;
}

static void test_last_error_is_per_thread(void **state) {
  (void)state;
  assert_int_equal(at_fail(AT_ERR_SHAPE, "input %s bad", "x"), AT_ERR_SHAPE);
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  assert_string_equal(at_last_error(), "input x bad");
  at_clear_error();
  assert_string_equal(at_last_error(), "");
}

static int g_lines;
static void counting_sink(void *u, at_log_level l, const char *c, const char *m) {
  (void)u;
  (void)c;
  assert_true(l >= AT_LOG_WARN);
  assert_string_equal(m, "hello 42");
  g_lines++;
}

static void test_log_sink_and_level(void **state) {
  (void)state;
  at_log_set_sink(counting_sink, NULL, AT_LOG_WARN);
  at_log(AT_LOG_INFO, "t", "dropped %d", 1);
  at_log(AT_LOG_WARN, "t", "hello %d", 42);
  at_log_set_sink(NULL, NULL, AT_LOG_DEBUG);
  at_log(AT_LOG_ERROR, "t", "hello %d", 42);
  assert_int_equal(g_lines, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_unique_and_described),
      cmocka_unit_test(test_last_error_is_per_thread),
      cmocka_unit_test(test_log_sink_and_level),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
