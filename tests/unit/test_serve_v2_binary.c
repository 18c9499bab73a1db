/* tests/unit/test_serve_v2_binary.c — the KServe V2 binary tensor data
 * extension's parsing (src/serve/v2_req.c: v2_bin_split, v2_req_parse_bin,
 * v2_req_read on binary data, v2_req_out_binary): known answers for the
 * wire format in Triton's and KServe's documents, and each refusal with the
 * message a client sees. tests/fuzz/fuzz_v2_binary.c holds the same
 * functions to their contract on arbitrary input. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "serve/v2_req.h"
#include "testutil.h"

static const at_value_info k_inputs[] = {
    {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "scale", .dtype = AT_DTYPE_FLOAT32, .ndim = 1, .dims = {-1}},
};
static const at_value_info k_outputs[] = {
    {.name = "logits", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .dims = {-1, 2}},
    {.name = "hidden", .dtype = AT_DTYPE_FLOAT32, .ndim = 3, .dims = {-1, -1, 4}},
};
static const at_model_info k_mi = {
    .n_inputs = 3, .inputs = k_inputs, .n_outputs = 2, .outputs = k_outputs};
static const v2_sig k_sig = {.mi = &k_mi, .embed = false, .model = "m", .max_inputs = 4};

static json_t *body_of(const char *s) {
  json_error_t e;
  json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &e);
  if (!j) fail_msg("bad test JSON: %s", e.text);
  return j;
}

static size_t put64(unsigned char *p, int64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)v >> (8 * i));
  return 8;
}
static size_t put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
  return 4;
}

/* Parse `json` with `bin` and expect `status`; with a non-zero status the
 * message must contain `msg`. */
static void expect(const char *json, const unsigned char *bin, size_t n, int status,
                   const char *msg) {
  json_t *b = body_of(json);
  v2_req q;
  char err[512] = "";
  int st = v2_req_parse_bin(b, bin, n, &k_sig, &q, err, sizeof err);
  if (st != status) fail_msg("%s: status %d (%s), want %d", json, st, err, status);
  if (status && !strstr(err, msg)) fail_msg("%s: message '%s' lacks '%s'", json, err, msg);
  v2_req_free(&q);
  json_decref(b);
}

static void test_split(void **state) {
  (void)state;
  size_t n;
  char err[256];
  assert_int_equal(v2_bin_split(NULL, 40, &n, err, sizeof err), 0);
  assert_int_equal(n, 40);
  assert_int_equal(v2_bin_split("12", 40, &n, err, sizeof err), 0);
  assert_int_equal(n, 12);
  assert_int_equal(v2_bin_split("40", 40, &n, err, sizeof err), 0); /* no binary data */
  assert_int_equal(v2_bin_split("41", 40, &n, err, sizeof err), 400);
  assert_non_null(strstr(err, "is 41 but the body has only 40 bytes"));
  static const char *const bad[] = {
      "", "0", "-3", "+3", " 3", "3 ", "0x10", "1e3", "9999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (v2_bin_split(bad[i], 1u << 30, &n, err, sizeof err) != 400)
      fail_msg("header value '%s' was accepted", bad[i]);
}

static void test_int64_and_int32(void **state) {
  (void)state;
  unsigned char bin[64];
  size_t o = 0;
  const int64_t ids[4] = {2, 11, -1, 3000000000LL};
  for (int i = 0; i < 4; i++) o += put64(bin + o, ids[i]);
  const int32_t mask[4] = {1, 1, 0, -7};
  for (int i = 0; i < 4; i++) o += put32(bin + o, (uint32_t)mask[i]);
  json_t *b = body_of(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[2,2],"
      "\"parameters\":{\"binary_data_size\":32}},{\"name\":\"attention_mask\",\"datatype\":"
      "\"INT32\",\"shape\":[2,2],\"parameters\":{\"binary_data_size\":16}}]}");
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse_bin(b, bin, o, &k_sig, &q, err, sizeof err), 0);
  assert_int_equal(q.n_in, 2);
  assert_ptr_equal(q.raw[0], bin);
  assert_ptr_equal(q.raw[1], bin + 32);
  assert_int_equal(q.wire[1], AT_DTYPE_INT32);
  int64_t got[4];
  assert_int_equal(v2_req_read(&q, 0, got, err, sizeof err), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(got[i], ids[i]);
  assert_int_equal(v2_req_read(&q, 1, got, err, sizeof err), 0); /* widened, sign kept */
  for (int i = 0; i < 4; i++) assert_int_equal(got[i], mask[i]);
  assert_false(v2_req_out_binary(&q, "logits"));
  v2_req_free(&q);
  json_decref(b);
}

static void test_fp32_and_mixed(void **state) {
  (void)state;
  unsigned char bin[8];
  float f[2] = {1.5f, -0.25f};
  uint32_t u;
  memcpy(&u, &f[0], 4);
  put32(bin, u);
  memcpy(&u, &f[1], 4);
  put32(bin + 4, u);
  /* input_ids in JSON, scale in binary: the binary bytes are scale's alone */
  json_t *b = body_of(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[2,1],\"data\":[5,6]},"
      "{\"name\":\"scale\",\"datatype\":\"FP32\",\"shape\":[2],\"parameters\":"
      "{\"binary_data_size\":8}}]}");
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse_bin(b, bin, 8, &k_sig, &q, err, sizeof err), 0);
  assert_null(q.raw[0]);
  float got[2];
  assert_int_equal(v2_req_read(&q, 1, got, err, sizeof err), 0);
  assert_true(got[0] == 1.5f && got[1] == -0.25f);
  int64_t ids[2];
  assert_int_equal(v2_req_read(&q, 0, ids, err, sizeof err), 0);
  assert_int_equal(ids[1], 6);
  v2_req_free(&q);
  /* a NaN is refused on reading, as JSON cannot carry one */
  put32(bin + 4, 0x7fc00000u);
  assert_int_equal(v2_req_parse_bin(b, bin, 8, &k_sig, &q, err, sizeof err), 0);
  assert_int_equal(v2_req_read(&q, 1, got, err, sizeof err), 400);
  assert_non_null(strstr(err, "element 1 is not a finite number"));
  v2_req_free(&q);
  json_decref(b);
}

static void test_bytes(void **state) {
  (void)state;
  unsigned char bin[64];
  size_t o = 0;
  o += put32(bin + o, 5);
  memcpy(bin + o, "hello", 5), o += 5;
  o += put32(bin + o, 0); /* an empty text is a text (the job refuses it later) */
  o += put32(bin + o, 3);
  memcpy(bin + o, "\xc3\xa9t", 3), o += 3;
  char json[256];
  snprintf(json, sizeof json,
           "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[3],"
           "\"parameters\":{\"binary_data_size\":%zu}}],\"outputs\":[{\"name\":\"logits\","
           "\"parameters\":{\"binary_data\":true}},{\"name\":\"probabilities\"}],"
           "\"parameters\":{\"binary_data_output\":false}}",
           o);
  json_t *b = body_of(json);
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse_bin(b, bin, o, &k_sig, &q, err, sizeof err), 0);
  assert_true(q.text);
  assert_int_equal(q.n_texts, 3);
  assert_int_equal(q.lens[0], 5);
  assert_memory_equal(q.texts[0], "hello", 5);
  assert_int_equal(q.lens[1], 0);
  assert_int_equal(q.lens[2], 3);
  assert_ptr_equal(q.texts[2], (const char *)bin + 13 + 4);
  assert_true(v2_req_out_binary(&q, "logits"));
  assert_false(v2_req_out_binary(&q, "probabilities"));
  v2_req_free(&q);
  json_decref(b);
}

static void test_binary_out_default(void **state) {
  (void)state;
  json_t *b = body_of(
      "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":\"input_ids\","
      "\"datatype\":\"INT64\",\"shape\":[1,1],\"data\":[3]}],\"outputs\":[{\"name\":\"logits\","
      "\"parameters\":{\"binary_data\":false}}]}");
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), 0);
  assert_false(v2_req_out_binary(&q, "logits")); /* the output's own word wins */
  assert_true(v2_req_out_binary(&q, "hidden"));  /* not listed: the request's default */
  v2_req_free(&q);
  json_decref(b);
}

static void test_refusals(void **state) {
  (void)state;
  unsigned char z[64] = {0};
  const char *ids24 =
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,3],"
      "\"parameters\":{\"binary_data_size\":24}}]}";
  expect(ids24, z, 24, 0, NULL);
  expect(ids24, z, 25, 400, "add up to 24 bytes, but 25 follow");
  expect(ids24, z, 16, 400, "runs past the binary data");
  expect(ids24, NULL, 0, 400, "no Inference-Header-Content-Length header");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,3],"
      "\"parameters\":{\"binary_data_size\":12}}]}",
      z, 12, 400, "binary_data_size is 12 bytes; its shape of 3 INT64 elements needs 24");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT32\",\"shape\":[1,3],"
      "\"parameters\":{\"binary_data_size\":24}}]}",
      z, 24, 400, "needs 12");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,3],"
      "\"data\":[1,2,3],\"parameters\":{\"binary_data_size\":24}}]}",
      z, 24, 400, "both \"data\" and \"binary_data_size\"");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,3],"
      "\"parameters\":{\"binary_data_size\":-8}}]}",
      z, 0, 400, "non-negative integer");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,3],"
      "\"parameters\":{\"binary_data_size\":\"24\"}}]}",
      z, 24, 400, "non-negative integer");
  /* bytes after the header with no input taking them */
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,1],"
      "\"data\":[1]}]}",
      z, 3, 400, "add up to 0 bytes, but 3 follow");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,1],"
      "\"data\":[1]}],\"parameters\":{\"binary_data_output\":1}}",
      z, 0, 400, "\"binary_data_output\" must be true or false");
  expect(
      "{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,1],"
      "\"data\":[1]}],\"outputs\":[{\"name\":\"logits\",\"parameters\":{\"binary_data\":"
      "\"yes\"}}]}",
      z, 0, 400, "\"binary_data\" must be true or false");
  /* BYTES: an element past its size, stray bytes, bad UTF-8, shape vs count */
  unsigned char t[16] = {0};
  put32(t, 9);
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":8}}]}",
      t, 8, 400, "element 0 says 9 bytes, only 4 remain");
  put32(t, 1);
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":7}}]}",
      t, 7, 400, "2 stray bytes");
  t[4] = 0xff;
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":5}}]}",
      t, 5, 400, "not valid UTF-8");
  t[4] = 'a';
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"shape\":[2],"
      "\"parameters\":{\"binary_data_size\":5}}]}",
      t, 5, 400, "its shape holds 2 elements, its binary data 1");
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"data\":[\"a\"],\"parameters\":{\"binary_data_size\":5}}]}",
      t, 5, 400, "both \"data\"");
  /* more texts than max_inputs (4) */
  unsigned char many[40];
  for (int i = 0; i < 5; i++) put32(many + 5 * i, 1), many[5 * i + 4] = 'x';
  expect(
      "{\"inputs\":[{\"name\":\"t\",\"datatype\":\"BYTES\",\"parameters\":"
      "{\"binary_data_size\":25}}]}",
      many, 25, 413, "more than 4 texts");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_int64_and_int32),
      cmocka_unit_test(test_fp32_and_mixed),
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_binary_out_default),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
