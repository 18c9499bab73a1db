/* tests/unit/test_text_csv.c — the RFC 4180 reader behind `anytime eval`:
 * quoting, doubled quotes, embedded newlines and commas, CRLF, BOM, empty
 * fields, and the errors (unterminated quote, text after a closing quote). */
#include "anytime/csv.h"
#include "testutil.h"

static at_csv *parse(const char *s) {
  at_csv *c = NULL;
  at_status st = at_csv_parse(s, strlen(s), &c);
  if (st != AT_OK) fail_msg("parse: %s", at_last_error());
  return c;
}

static void test_quoting(void **state) {
  (void)state;
  at_csv *c = parse("\xef\xbb\xbflabel,text\r\n1,\"a, \"\"b\"\"\nc\"\n0,plain\n,\n");
  assert_int_equal(at_csv_rows(c), 4);
  assert_int_equal(at_csv_column(c, "label"), 0);
  assert_int_equal(at_csv_column(c, "text"), 1);
  assert_int_equal(at_csv_column(c, "nope"), -1);
  assert_string_equal(at_csv_field(c, 1, 1, NULL), "a, \"b\"\nc");
  assert_string_equal(at_csv_field(c, 2, 1, NULL), "plain");
  assert_int_equal(at_csv_cols(c, 3), 2);
  assert_string_equal(at_csv_field(c, 3, 0, NULL), "");
  assert_null(at_csv_field(c, 9, 0, NULL));
  assert_null(at_csv_field(c, 1, 5, NULL));
  at_csv_destroy(c);
  c = parse("a,b");
  assert_int_equal(at_csv_rows(c), 1);
  assert_string_equal(at_csv_field(c, 0, 1, NULL), "b");
  at_csv_destroy(c);
  c = parse("a,\"\"\n\"x\"\"\",y\"z\n");
  assert_string_equal(at_csv_field(c, 0, 1, NULL), "");
  assert_string_equal(at_csv_field(c, 1, 0, NULL), "x\"");
  assert_string_equal(at_csv_field(c, 1, 1, NULL), "y\"z");
  at_csv_destroy(c);
  c = parse("");
  assert_int_equal(at_csv_rows(c), 0);
  at_csv_destroy(c);
  at_csv_destroy(NULL);
}

static void test_errors(void **state) {
  (void)state;
  at_csv *c = NULL;
  assert_int_equal(at_csv_parse("a\n\"open", 7, &c), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "line 2"));
  assert_int_equal(at_csv_parse("\"a\"b,c", 6, &c), AT_ERR_PARSE);
  assert_null(c);
  assert_int_equal(at_csv_load("/nonexistent.csv", &c), AT_ERR_NOT_FOUND);
  assert_int_equal(at_csv_parse(NULL, 0, &c), AT_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_quoting), cmocka_unit_test(test_errors)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
