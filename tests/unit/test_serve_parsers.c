/* tests/unit/test_serve_parsers.c — the pure request-body parsers of
 * src/serve (req_parse.c: TEI's bodies, Cohere's /v1/rerank; v2_req.c) and
 * the base64 encoder (b64.c), which
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
      /* Triton's classification extension: refused, not ignored */
      {"{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"a\"]}],"
       "\"outputs\":[{\"name\":\"logits\",\"parameters\":{\"classification\":2}}]}",
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
  json_t *b = body_of("{\"inputs\":[\"a fine film\",\"bad\"],\"normalize\":null}");
  tei_req q;
  char err[256];
  assert_int_equal(tei_req_parse(b, TEI_EMBED, 64, false, 16, &q, err, sizeof err), 0);
  assert_int_equal(q.t.n, 2);
  assert_false(q.t.single);
  assert_string_equal(q.t.texts[1], "bad");
  assert_true(q.normalize && !q.truncate && !q.raw_scores);
  assert_int_equal(q.trunc_dir, AT_TRUNC_AS_TOKENIZER);
  assert_int_equal(q.dims, 0);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"raw_scores\":true}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 64, false, 3, &q, err, sizeof err), 0);
  assert_true(q.raw_scores && q.t.single);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"truncate\":\"yes\"}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 64, false, 3, &q, err, sizeof err), 400);
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

/* TEI's PredictInput (router/src/http/types.rs): a list whose first element
 * is a string is ONE input, [text] or [text, text_pair]; a list of lists is
 * a batch; three strings, or a mix, are refused. The old reading took
 * ["q", "d"] as two texts. */
static void test_tei_predict_pairs(void **state) {
  (void)state;
  char err[512];
  tei_req q;
  json_t *b = body_of("{\"inputs\":[\"query\",\"document\"]}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err), 0);
  assert_true(q.t.single);
  assert_int_equal(q.t.n, 1);
  assert_string_equal(q.t.texts[0], "query");
  assert_non_null(q.t.pairs);
  assert_string_equal(q.t.pairs[0], "document");
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":[\"one\"]}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err), 0);
  assert_true(q.t.single);
  assert_int_equal(q.t.n, 1);
  assert_null(q.t.pairs);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":[[\"a\"],[\"b\",\"c\"],[\"d\"]]}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err), 0);
  assert_false(q.t.single);
  assert_int_equal(q.t.n, 3);
  assert_string_equal(q.t.texts[2], "d");
  assert_null(q.t.pairs[0]);
  assert_string_equal(q.t.pairs[1], "c");
  tei_req_free(&q);
  json_decref(b);
  static const struct {
    const char *body;
    int status;
    const char *says;
  } bad[] = {
      {"{\"inputs\":[\"a\",\"b\",\"c\"]}", 400, "list of 3 strings"},
      {"{\"inputs\":[\"a\",[\"b\"]]}", 400, "is not a string"},
      {"{\"inputs\":[[\"a\"],\"b\"]}", 400, "[text] or [text, text_pair]"},
      {"{\"inputs\":[[\"a\",\"b\",\"c\"]]}", 400, "[text] or [text, text_pair]"},
      {"{\"inputs\":[[]]}", 400, "[text] or [text, text_pair]"},
      {"{\"inputs\":[\"a\",\"\"]}", 400, "text pair is an empty string"},
      {"{\"inputs\":[[\"a\"],[\"b\"],[\"c\"],[\"d\"],[\"e\"],[\"f\"],[\"g\"],[\"h\"],[\"i\"]]}", 413,
       "limit is 8"},
      {"{\"inputs\":[]}", 400, "empty list"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    b = body_of(bad[i].body);
    err[0] = '\0';
    assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err),
                     bad[i].status);
    if (!strstr(err, bad[i].says)) fail_msg("%s: '%s' lacks '%s'", bad[i].body, err, bad[i].says);
    json_decref(b);
  }
}

/* truncation_direction (TEI's aliases: Left/left, Right/right), dimensions
 * (1..out_dim, the limit named), and members TEI's types do not define. */
static void test_tei_fields(void **state) {
  (void)state;
  char err[512];
  tei_req q;
  static const struct {
    const char *dir;
    at_trunc_direction want;
  } dirs[] = {{"\"Left\"", AT_TRUNC_LEFT},
              {"\"left\"", AT_TRUNC_LEFT},
              {"\"Right\"", AT_TRUNC_RIGHT},
              {"\"right\"", AT_TRUNC_RIGHT},
              {"null", AT_TRUNC_AS_TOKENIZER}};
  for (size_t i = 0; i < 5; i++) {
    char body[128];
    snprintf(body, sizeof body, "{\"inputs\":\"x\",\"truncation_direction\":%s}", dirs[i].dir);
    json_t *b = body_of(body);
    assert_int_equal(tei_req_parse(b, TEI_EMBED, 8, true, 16, &q, err, sizeof err), 0);
    assert_int_equal(q.trunc_dir, dirs[i].want);
    assert_true(q.truncate);
    tei_req_free(&q);
    json_decref(b);
  }
  static const char *const refused[] = {
      "{\"inputs\":\"x\",\"truncation_direction\":\"LEFT\"}",
      "{\"inputs\":\"x\",\"truncation_direction\":1}",
      "{\"inputs\":\"x\",\"dimensions\":0}",
      "{\"inputs\":\"x\",\"dimensions\":-3}",
      "{\"inputs\":\"x\",\"dimensions\":17}",
      "{\"inputs\":\"x\",\"dimensions\":4.0}",
      "{\"inputs\":\"x\",\"normalise\":true}",
      "{\"inputs\":\"x\",\"raw_scores\":true}", /* a /predict member */
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    json_t *b = body_of(refused[i]);
    assert_int_equal(tei_req_parse(b, TEI_EMBED, 8, false, 16, &q, err, sizeof err), 400);
    json_decref(b);
  }
  json_t *b = body_of("{\"inputs\":\"x\",\"dimensions\":17}");
  assert_int_equal(tei_req_parse(b, TEI_EMBED, 8, false, 16, &q, err, sizeof err), 400);
  assert_non_null(strstr(err, "1..16"));
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"normalize\":true,\"normalise\":true}");
  assert_int_equal(tei_req_parse(b, TEI_EMBED, 8, false, 16, &q, err, sizeof err), 400);
  assert_non_null(strstr(err, "unknown field \"normalise\""));
  json_decref(b);
  /* every member TEI's EmbedRequest and PredictRequest define, and "model" */
  b = body_of("{\"inputs\":\"x\",\"truncate\":true,\"truncation_direction\":\"Left\","
              "\"prompt_name\":null,\"normalize\":false,\"dimensions\":16,\"model\":\"m\"}");
  assert_int_equal(tei_req_parse(b, TEI_EMBED, 8, false, 16, &q, err, sizeof err), 0);
  assert_int_equal(q.dims, 16);
  assert_false(q.normalize);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"truncate\":null,\"truncation_direction\":\"right\","
              "\"raw_scores\":true,\"model\":\"m\"}");
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err), 0);
  tei_req_free(&q);
  json_decref(b);
  b = body_of("{\"inputs\":\"x\",\"dimensions\":4}"); /* not a /predict member */
  assert_int_equal(tei_req_parse(b, TEI_PREDICT, 8, false, 3, &q, err, sizeof err), 400);
  json_decref(b);
}

static void test_tei_rerank_tokenize(void **state) {
  (void)state;
  char err[512];
  tei_rerank_req rq;
  json_t *b = body_of("{\"query\":\"q\",\"texts\":[\"a\",\"b\"],\"return_text\":true,"
                      "\"truncation_direction\":\"Left\",\"truncate\":true,\"raw_scores\":false,"
                      "\"model\":\"m\"}");
  assert_int_equal(tei_rerank_parse(b, 8, false, &rq, err, sizeof err), 0);
  assert_int_equal(rq.t.n, 2);
  assert_string_equal(rq.query, "q");
  assert_true(rq.return_text && rq.truncate && rq.trunc_dir == AT_TRUNC_LEFT);
  tei_rerank_free(&rq);
  json_decref(b);
  static const char *const rerank_bad[] = {
      "{\"query\":\"q\",\"texts\":\"a\"}", "{\"query\":\"q\",\"texts\":[[\"a\",\"b\"]]}",
      "{\"query\":\"\",\"texts\":[\"a\"]}", "{\"query\":\"q\",\"texts\":[\"a\"],\"top_n\":1}",
      "{\"texts\":[\"a\"]}"};
  for (size_t i = 0; i < 5; i++) {
    b = body_of(rerank_bad[i]);
    assert_int_equal(tei_rerank_parse(b, 8, false, &rq, err, sizeof err), 400);
    json_decref(b);
  }
  tei_tokenize_req tq;
  b = body_of("{\"inputs\":[\"a\",\"b\"],\"add_special_tokens\":false,\"prompt_name\":\"p\"}");
  assert_int_equal(tei_tokenize_parse(b, 8, &tq, err, sizeof err), 0);
  assert_int_equal(tq.t.n, 2);
  assert_false(tq.add_special_tokens);
  assert_string_equal(tq.prompt_name, "p");
  tei_tokenize_free(&tq);
  json_decref(b);
  b = body_of("{\"inputs\":\"a\"}");
  assert_int_equal(tei_tokenize_parse(b, 8, &tq, err, sizeof err), 0);
  assert_true(tq.t.single && tq.add_special_tokens);
  tei_tokenize_free(&tq);
  json_decref(b);
  static const char *const tok_bad[] = {"{\"inputs\":[[\"a\",\"b\"]]}", "{\"inputs\":3}",
                                        "{\"inputs\":\"a\",\"truncate\":true}", "{}",
                                        "{\"inputs\":[]}"};
  for (size_t i = 0; i < 5; i++) {
    b = body_of(tok_bad[i]);
    assert_int_equal(tei_tokenize_parse(b, 8, &tq, err, sizeof err), 400);
    json_decref(b);
  }
}

/* POST /v1/rerank: Cohere's and Jina's request shape. */
static void test_cohere_rerank(void **state) {
  (void)state;
  char err[512];
  cohere_rerank_req q;
  json_t *b = body_of("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"a\",{\"text\":\"b\","
                      "\"title\":\"t\"},\"c\"],\"top_n\":2,\"return_documents\":true}");
  assert_int_equal(cohere_rerank_parse(b, 8, &q, err, sizeof err), 0);
  assert_int_equal(q.t.n, 3);
  assert_string_equal(q.t.texts[1], "b");
  assert_int_equal(q.top_n, 2);
  assert_true(q.return_documents);
  cohere_rerank_free(&q);
  json_decref(b);
  b = body_of("{\"query\":\"q\",\"documents\":[\"a\",\"b\"],\"top_n\":5}");
  assert_int_equal(cohere_rerank_parse(b, 8, &q, err, sizeof err), 0);
  assert_int_equal(q.top_n, 2); /* more than there are: every document */
  assert_false(q.return_documents);
  cohere_rerank_free(&q);
  json_decref(b);
  static const struct {
    const char *body;
    int status;
    const char *says;
  } bad[] = {
      {"{\"query\":\"q\",\"documents\":[\"a\"],\"top_n\":0}", 400, "top_n"},
      {"{\"query\":\"q\",\"documents\":[\"a\"],\"top_n\":-1}", 400, "top_n"},
      {"{\"query\":\"q\",\"documents\":[{\"title\":\"a\"}]}", 400, "documents\"[0]"},
      {"{\"query\":\"q\",\"documents\":[1]}", 400, "documents\"[0]"},
      {"{\"query\":\"q\",\"documents\":[]}", 400, "empty list"},
      {"{\"query\":\"q\",\"documents\":\"a\"}", 400, "must be a list"},
      {"{\"query\":\"q\",\"documents\":[\"a\"],\"rank_fields\":[\"text\"]}", 400, "rank_fields"},
      {"{\"query\":\"q\",\"documents\":[\"a\"],\"texts\":[\"a\"]}", 400, "unknown field \"texts\""},
      {"{\"documents\":[\"a\"]}", 400, "query"},
      {"{\"query\":\"q\",\"documents\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]}", 413,
       "limit is 8"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    b = body_of(bad[i].body);
    err[0] = '\0';
    assert_int_equal(cohere_rerank_parse(b, 8, &q, err, sizeof err), bad[i].status);
    if (!strstr(err, bad[i].says)) fail_msg("%s: '%s' lacks '%s'", bad[i].body, err, bad[i].says);
    json_decref(b);
  }
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
      cmocka_unit_test(test_tei_predict_pairs),
      cmocka_unit_test(test_tei_fields),
      cmocka_unit_test(test_tei_rerank_tokenize),
      cmocka_unit_test(test_cohere_rerank),
      cmocka_unit_test(test_base64_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
