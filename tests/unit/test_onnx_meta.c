/* tests/unit/test_onnx_meta.c — the ONNX header reader: the real test model
 * parses to the values make_test_models.py wrote; every truncation and a
 * set of corrupted bytes are rejected or parsed without reading out of
 * bounds (the sanitizer build checks the bounds). */
#include "anytime/anytime.h"
#include "testutil.h"

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void test_real_model(void **state) {
  (void)state;
  size_t n;
  uint8_t *b = slurp(test_data("models/tiny_encoder.onnx"), &n);
  at_onnx_meta m;
  assert_int_equal(at_onnx_meta_parse(b, n, &m), AT_OK);
  assert_int_equal(m.ir_version, 8);
  assert_string_equal(m.producer_name, "anytime-testmodels");
  assert_string_equal(m.producer_version, "1");
  assert_int_equal(at_onnx_meta_default_opset(&m), 17);
  assert_true(m.has_graph);
  free(b);
}

static void test_truncations_and_corruptions(void **state) {
  (void)state;
  size_t n;
  uint8_t *b = slurp(test_data("models/tiny_encoder.onnx"), &n);
  at_onnx_meta m;
  int ok = 0;
  for (size_t len = 0; len < n; len++) {
    uint8_t *copy = malloc(len ? len : 1); /* exact size so ASan sees overreads */
    memcpy(copy, b, len);
    if (at_onnx_meta_parse(copy, len, &m) == AT_OK) ok++;
    free(copy);
  }
  /* A prefix parses only if it ends exactly at a field boundary after the
   * graph; in this file the graph is followed by only a few small fields. */
  assert_true(ok < 8);
  for (size_t i = 0; i < n; i += 7) {
    uint8_t *copy = malloc(n);
    memcpy(copy, b, n);
    copy[i] ^= 0xff;
    at_status s = at_onnx_meta_parse(copy, n, &m);
    assert_true(s == AT_OK || s == AT_ERR_PARSE);
    free(copy);
  }
  const uint8_t junk[] = "this is not a protobuf at all";
  assert_int_equal(at_onnx_meta_parse(junk, sizeof junk - 1, &m), AT_ERR_PARSE);
  assert_true(strlen(at_last_error()) > 0);
  assert_int_equal(at_onnx_meta_parse(NULL, 0, &m), AT_ERR_INVALID_ARG);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_model),
      cmocka_unit_test(test_truncations_and_corruptions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
