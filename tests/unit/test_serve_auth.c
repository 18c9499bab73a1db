/* tests/unit/test_serve_auth.c — API keys (src/serve/auth.c): which keys
 * are accepted, the key file's format, and the Bearer check: the right key
 * passes in any of the forms clients send; a prefix, an extension, another
 * scheme, a missing header or another key does not. (Constant time is by
 * construction, every digest compared with no early exit; timing is not
 * asserted here: this host is too noisy for it.) */
#include "serve/auth.h"
#include "testutil.h"

static void test_keys_and_check(void **state) {
  (void)state;
  serve_auth a = {0};
  assert_true(serve_auth_check(&a, NULL)); /* no keys: open */
  assert_true(serve_auth_check(&a, "Bearer anything"));
  assert_int_equal(serve_auth_add(&a, "k3y-0123456789", 14), AT_OK);
  assert_int_equal(serve_auth_add(&a, "second-key-abc", 14), AT_OK);
  static const struct {
    const char *header;
    bool pass;
  } k[] = {
      {"Bearer k3y-0123456789", true},   {"bearer k3y-0123456789", true},
      {"BEARER   k3y-0123456789", true}, {"Bearer k3y-0123456789 ", true},
      {"Bearer second-key-abc", true},   {NULL, false},
      {"", false},                       {"Bearer ", false},
      {"Bearer k3y-012345678", false},   {"Bearer k3y-01234567890", false},
      {"Basic k3y-0123456789", false},   {"k3y-0123456789", false},
      {"Bearerk3y-0123456789", false},   {"Bearer K3Y-0123456789", false},
      {"Bearer k3y-0123456789\tx", false},
  };
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    if (serve_auth_check(&a, k[i].header) != k[i].pass)
      fail_msg("\"%s\": %s, want %s", k[i].header ? k[i].header : "(none)",
               k[i].pass ? "refused" : "passed", k[i].pass ? "pass" : "refusal");
}

static void test_key_rules(void **state) {
  (void)state;
  serve_auth a = {0};
  assert_int_equal(serve_auth_add(&a, "short", 5), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "8 to 512"));
  assert_int_equal(serve_auth_add(&a, "has a space", 11), AT_ERR_INVALID_ARG);
  assert_null(strstr(at_last_error(), "has a space")); /* never the key itself */
  assert_int_equal(serve_auth_add(&a, "tab\there!!", 10), AT_ERR_INVALID_ARG);
  assert_int_equal(a.n, 0);
  for (int i = 0; i < AUTH_MAX_KEYS; i++) {
    char key[32];
    snprintf(key, sizeof key, "key-number-%03d", i);
    assert_int_equal(serve_auth_add(&a, key, strlen(key)), AT_OK);
  }
  assert_int_equal(serve_auth_add(&a, "one-too-many", 12), AT_ERR_LIMIT);
  assert_true(serve_auth_check(&a, "Bearer key-number-063"));
}

static void test_key_file(void **state) {
  (void)state;
  serve_auth a = {0};
  const char *text = "# keys for the staging cluster\n\n  alpha-key-1234  \r\nbeta-key-5678\n# end";
  assert_int_equal(serve_auth_add_text(&a, text, strlen(text), "keys.txt"), AT_OK);
  assert_int_equal(a.n, 2);
  assert_true(serve_auth_check(&a, "Bearer alpha-key-1234"));
  assert_true(serve_auth_check(&a, "Bearer beta-key-5678"));
  assert_false(serve_auth_check(&a, "Bearer # keys for the staging cluster"));
  serve_auth b = {0};
  const char *bad = "good-key-123456\nbad\n";
  assert_int_equal(serve_auth_add_text(&b, bad, strlen(bad), "keys.txt"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "keys.txt line 2"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys_and_check),
                                     cmocka_unit_test(test_key_rules),
                                     cmocka_unit_test(test_key_file)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
