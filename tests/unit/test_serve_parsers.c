/* tests/unit/test_serve_parsers.c — the pure request-body parsers of
 * src/serve (req_parse.c, v2_req.c) and the base64 encoder (b64.c), which
 * the routes call and tests/fuzz/ fuzzes: known answers for the bodies in
 * docs/api.md, and one regression test per bug the fuzz drivers found
 * (each names its driver). */
#include <float.h>
#include <jansson.h>
#include <math.h>

#include "serve/b64.h"
#include "serve/req_parse.h"
#include "serve/v2_req.h"
#include "testutil.h"

static const at_value_info k_inputs[] = {
    {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "scale", .dtype = AT_DTYPE_FLOAT32, .ndim = 1, .dims = {-1}},
};
static const at_value_info k_outputs[] = {
    {.name = "logits", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .dims = {-1, 2}},
};
static const at_model_info k_mi = {
    .n_inputs = 3, .inputs = k_inputs, .n_outputs = 1, .outputs = k_outputs};
static const v2_sig k_sig = {.mi = &k_mi, .embed = false, .model = "m", .max_inputs = 4};

static json_t *body_of(const char *s) {
  json_error_t e;
  json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &e);
  if (!j) fail_msg("bad test JSON: %s", e.text);
  return j;
}

static void test_v2_tensor_accepted(void **state) {
  (void)state;
  json_t *b = body_of(
      "{\"id\":\"r1\",\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\","
      "\"shape\":[2,3],\"data\":[[2,10,3],[2,11,3]]},{\"name\":\"attention_mask\","
      "\"datatype\":\"INT32\",\"shape\":[2,3],\"data\":[1,1,1,1,1,0]}],"
      "\"outputs\":[{\"name\":\"logits\"}]}");
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), 0);
  assert_false(q.text);
  assert_string_equal(q.id, "r1");
  assert_int_equal(q.n_in, 2);
  assert_int_equal(q.rows, 2);
  assert_int_equal(q.numel[0], 6);
  assert_ptr_equal(q.out_names[0], k_outputs[0].name);
  int64_t buf[6];
  assert_int_equal(v2_req_read(&q, 1, buf, err, sizeof err), 0);
  assert_int_equal(buf[5], 0);
  assert_int_equal(v2_req_read(&q, 0, buf, err, sizeof err), 0);
  assert_int_equal(buf[4], 11);
  v2_req_free(&q);
  json_decref(b);
}

static void test_v2_limits(void **state) {
  (void)state;
  static const struct {
    const char *body;
    int status;
  } cases[] = {
      {"{\"inputs\":[]}", 400},
      {"{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[5,1],\"data\":[1,2,"
       "3,4,5]}]}",
       413},
      {"{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1,4194304,2],"
       "\"data\":[]}]}",
       413},
      {"{\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}",
       400},
      {"{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[5],\"data\":[\"a\",\"b\","
       "\"c\",\"d\",\"e\"]}]}",
       413},
      {"{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"a\"]}],"
       "\"outputs\":[{\"name\":\"embedding\"}]}",
       400},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *b = body_of(cases[i].body);
    v2_req q;
    char err[512] = "";
    assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), cases[i].status);
    assert_true(err[0] != '\0');
    v2_req_free(&q);
    json_decref(b);
  }
}

/* fuzz_v2_req: an FP32 value outside float range was converted to
 * infinity (undefined behaviour in C) and run; it must be refused. */
static void test_v2_fp32_out_of_range_refused(void **state) {
  (void)state;
  const char *bodies[] = {
      "{\"inputs\":[{\"name\":\"scale\",\"datatype\":\"FP32\",\"shape\":[2],\"data\":[1,1e300]}]}",
      "{\"inputs\":[{\"name\":\"scale\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[-3.5e38]}]}",
  };
  for (size_t i = 0; i < 2; i++) {
    json_t *b = body_of(bodies[i]);
    v2_req q;
    char err[512] = "";
    assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), 0);
    float buf[2];
    assert_int_equal(v2_req_read(&q, 0, buf, err, sizeof err), 400);
    assert_non_null(strstr(err, "range"));
    v2_req_free(&q);
    json_decref(b);
  }
  /* the largest float itself is fine */
  json_t *b = body_of(
      "{\"inputs\":[{\"name\":\"scale\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":[3.4028234663852886e38]}]}");
  v2_req q;
  char err[512];
  float f;
  assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), 0);
  assert_int_equal(v2_req_read(&q, 0, &f, err, sizeof err), 0);
  assert_true(f == FLT_MAX);
  v2_req_free(&q);
  json_decref(b);
}

/* fuzz_v2_req (its "id" check, added after reading the parse): an "id"
 * of 128 bytes or more came back cut to 127 in the answer, so a client
 * matching answers by id could not. The id is the client's, whole. */
static void test_v2_long_id_kept_whole(void **state) {
  (void)state;
  char id[301], body[600];
  memset(id, 'x', 300);
  id[300] = '\0';
  snprintf(body, sizeof body,
           "{\"id\":\"%s\",\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\","
           "\"shape\":[1],\"data\":[\"a\"]}]}",
           id);
  json_t *b = body_of(body);
  v2_req q;
  char err[512];
  assert_int_equal(v2_req_parse(b, &k_sig, &q, err, sizeof err), 0);
  assert_true(q.has_id);
  assert_string_equal(q.id, id);
  v2_req_free(&q);
  json_decref(b);
}

static void test_tei_and_openai(void **state) {
  (void)state;
  json_t *b =
      body_of("{\"inputs\":[\"a fine film\",\"bad\"],\"raw_scores\":true,\"normalize\":null}");
  tei_req q;
  char err[256];
  assert_int_equal(tei_req_parse(b, 64, false, &q, err, sizeof err), 0);
  assert_int_equal(q.t.n, 2);
  assert_false(q.t.single);
  assert_string_equal(q.t.texts[1], "bad");
  assert_true(q.raw_scores && q.normalize && !q.truncate);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"truncate\":\"yes\"}");
  assert_int_equal(tei_req_parse(b, 64, false, &q, err, sizeof err), 400);
  assert_string_equal(err, "\"truncate\" must be true or false");
  json_decref(b);
  b = body_of("{\"input\":\"good\",\"encoding_format\":\"base64\",\"dimensions\":4}");
  oai_opts o;
  assert_int_equal(oai_opts_parse(b, 16, &o, err, sizeof err), 0);
  assert_true(o.base64);
  assert_int_equal(o.dims, 4);
  assert_int_equal(oai_opts_parse(b, 3, &o, err, sizeof err), 400);
  json_decref(b);
}

/* RFC 4648 section 10 test vectors. */
static void test_base64_vectors(void **state) {
  (void)state;
  static const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  static const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (size_t i = 0; i < 7; i++) {
    char *s = serve_b64_encode((const unsigned char *)in[i], strlen(in[i]));
    assert_non_null(s);
    assert_string_equal(s, out[i]);
    free(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v2_tensor_accepted),
      cmocka_unit_test(test_v2_limits),
      cmocka_unit_test(test_v2_fp32_out_of_range_refused),
      cmocka_unit_test(test_v2_long_id_kept_whole),
      cmocka_unit_test(test_tei_and_openai),
      cmocka_unit_test(test_base64_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
