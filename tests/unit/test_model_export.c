/* tests/unit/test_model_export.c — what anytime reads from a model's export
 * files (src/model/export.c): pooling from 1_Pooling (via modules.json or
 * not), token limits from the position table (with the RoBERTa offset),
 * sentence_bert_config.json and tokenizer_config.json (its 1e30 "no limit"),
 * problem_type, a Dense module, label tables, the ids generation reads
 * (bos, eos, add_bos_token); files that are present but
 * wrong fail naming the file. Also the pooling arithmetic (at_pool) on a
 * matrix worked by hand, and the task-head choice. Against the committed
 * stand-ins in tests/data/models/export and files written here. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/model.h"
#include "model/model_internal.h"
#include "testutil.h"

static at_model_desc *describe(const char *standin) {
  const char *p = test_data(standin);
  at_model_desc *d = NULL;
  at_status st = at_model_describe_files(p, &d);
  if (st != AT_OK) fail_msg("%s: %s", p, at_last_error());
  return d;
}

static void test_standins(void **state) {
  (void)state;
  at_model_desc *d = describe("models/export/st-cls/config.json");
  assert_int_equal(d->pooling, AT_POOL_CLS);
  assert_int_equal(d->max_tokens, 8); /* sentence_bert_config.json, not 64 positions */
  assert_non_null(strstr(d->max_tokens_source, "sentence_bert_config.json"));
  assert_non_null(strstr(d->pooling_source, "1_Pooling/config.json"));
  assert_null(d->dense_module);
  assert_int_equal(d->n_variants, 0);
  at_model_desc_free(d);

  d = describe("models/export/st-max/config.json"); /* no modules.json: 1_Pooling */
  assert_int_equal(d->pooling, AT_POOL_MAX);
  assert_int_equal(d->max_tokens, 64);               /* tokenizer_config's 1e30 ignored */
  at_model_desc_free(d);

  d = describe("models/export/st-weighted/config.json");
  assert_int_equal(d->pooling, AT_POOL_WEIGHTED_MEAN);
  at_model_desc_free(d);

  d = describe("models/export/roberta-pos/config.json");
  assert_int_equal(d->position_offset, 2);
  assert_int_equal(d->max_tokens, 10); /* 12 positions less pad_token_id + 1 */
  assert_int_equal(d->type_vocab_size, 1);
  at_model_desc_free(d);

  d = describe("models/export/st-dense/config.json");
  assert_string_equal(d->dense_module, "2_Dense");
  at_model_desc_free(d);

  d = describe("models/export/multilabel/config.json");
  assert_true(d->multi_label);
  assert_int_equal(d->n_labels, 3);
  assert_string_equal(d->labels[2], "insult");
  at_model_desc_free(d);
}

/* Resolution (the path `run`, `eval`, `profile` take) reads the same, and
 * knows from the graph whether it pools. */
static void test_resolve_reads_export(void **state) {
  (void)state;
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve(test_data("models/export/st-dense"), NULL, &d), AT_OK);
  assert_int_equal(d->task, AT_TASK_EMBEDDER);
  assert_string_equal(d->task_output, "sentence_embedding");
  assert_int_equal(d->pooling, AT_POOL_NONE);
  at_model_desc_free(d);
  d = NULL;
  assert_int_equal(at_model_resolve(test_data("models/export/st-dense-missing"), NULL, &d),
                   AT_ERR_UNSUPPORTED);
  assert_null(d);
  assert_non_null(strstr(at_last_error(), "Dense module (2_Dense/)"));
  assert_int_equal(at_model_resolve(test_data("models/export/st-cls"), NULL, &d), AT_OK);
  assert_int_equal(d->pooling, AT_POOL_CLS);
  assert_int_equal(d->max_tokens, 8);
  at_model_desc_free(d);
}

static char g_dir[256];

static void put(const char *rel, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, rel);
  char *slash = strrchr(p, '/');
  *slash = 0;
  mkdir(p, 0755);
  *slash = '/';
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A model directory with one file changed from a plain BERT config; returns
 * the status of describing it. */
static at_status try_files(const char *rel, const char *text) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
  assert_int_equal(system(cmd), 0);
  put("config.json", "{\"model_type\": \"bert\", \"max_position_embeddings\": 512}");
  if (rel) put(rel, text);
  char p[512];
  snprintf(p, sizeof p, "%s/config.json", g_dir);
  at_model_desc *d = NULL;
  at_status st = at_model_describe_files(p, &d);
  if (st == AT_OK) {
    assert_non_null(d);
    at_model_desc_free(d);
  } else {
    assert_null(d);
  }
  return st;
}

/* A directory of the given files (NULL text: left out), described. */
static at_model_desc *describe_dir(const char *config, const char *gen, const char *tokcfg) {
  char cmd[600];
  snprintf(g_dir, sizeof g_dir, "/tmp/anytime-export-gen-%d", (int)getpid());
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
  assert_int_equal(system(cmd), 0);
  put("config.json", config);
  if (gen) put("generation_config.json", gen);
  if (tokcfg) put("tokenizer_config.json", tokcfg);
  char p[512];
  snprintf(p, sizeof p, "%s/config.json", g_dir);
  at_model_desc *d = NULL;
  if (at_model_describe_files(p, &d) != AT_OK) fail_msg("%s: %s", p, at_last_error());
  return d;
}

/* What generation reads (lm.c takes it from here): bos from config.json,
 * eos from generation_config.json before config.json (a number or a list,
 * bad ids skipped), add_bos_token from tokenizer_config.json. */
static void test_generation_fields(void **state) {
  (void)state;
  at_model_desc *d = describe_dir("{\"model_type\": \"gpt2\"}", NULL, NULL);
  assert_int_equal(d->bos_token_id, -1); /* absent is -1, not id 0 */
  assert_int_equal(d->n_eos, 0);
  assert_false(d->add_bos_token);
  at_model_desc_free(d);
  d = describe_dir("{\"bos_token_id\": 1, \"eos_token_id\": 2}", NULL,
                   "{\"add_bos_token\": true, \"model_max_length\": 1e30}");
  assert_int_equal(d->bos_token_id, 1);
  assert_int_equal(d->n_eos, 1);
  assert_int_equal(d->eos_token_ids[0], 2);
  assert_true(d->add_bos_token);
  at_model_desc_free(d);
  d = describe_dir("{\"bos_token_id\": -5, \"eos_token_id\": 2}",
                   "{\"eos_token_id\": [7, -1, \"x\", 9, 4294967296]}", NULL);
  assert_int_equal(d->bos_token_id, -1);
  assert_int_equal(d->n_eos, 2);
  assert_int_equal(d->eos_token_ids[0], 7);
  assert_int_equal(d->eos_token_ids[1], 9);
  at_model_desc_free(d);
  /* a null in generation_config.json leaves config.json's */
  d = describe_dir("{\"eos_token_id\": [3, 4]}", "{\"eos_token_id\": null}", NULL);
  assert_int_equal(d->n_eos, 2);
  assert_int_equal(d->eos_token_ids[1], 4);
  at_model_desc_free(d);
  /* more than AT_MODEL_MAX_EOS: the first ones kept */
  d = describe_dir("{}", "{\"eos_token_id\": [1,2,3,4,5,6,7,8,9,10]}", NULL);
  assert_int_equal(d->n_eos, AT_MODEL_MAX_EOS);
  assert_int_equal(d->eos_token_ids[AT_MODEL_MAX_EOS - 1], AT_MODEL_MAX_EOS);
  at_model_desc_free(d);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  assert_int_equal(system(cmd), 0);
}

static void test_bad_files_named(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/anytime-export-%d", (int)getpid());
  assert_int_equal(try_files(NULL, NULL), AT_OK);
  static const struct {
    const char *file, *text, *expect;
  } bad[] = {
      {"1_Pooling/config.json", "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}",
       "several pooling modes"},
      {"1_Pooling/config.json", "{\"pooling_mode_cls_token\": false}", "names no pooling mode"},
      {"1_Pooling/config.json", "{\"pooling_mode_cls_token\": 1}", "must be true or false"},
      {"1_Pooling/config.json", "{\"pooling_mode\": \"median\"}", "is not supported"},
      {"1_Pooling/config.json", "[1, 2", "1_Pooling/config.json: line"},
      {"modules.json", "{\"a\": 1}", "modules.json is not a JSON list"},
      {"modules.json", "[{\"path\": \"../x\", \"type\": \"sentence_transformers.models.Pooling\"}]",
       "leaves the model directory"},
      {"modules.json", "[{\"path\": 3}]", "needs string"},
      {"sentence_bert_config.json", "not json", "sentence_bert_config.json: line"},
      {"tokenizer_config.json", "[]", "tokenizer_config.json is not a JSON object"},
      {"config.json", "{\"id2label\": {\"x\": \"a\"}}", "id2label entry \"x\""},
      {"config.json", "{\"label2id\": {\"a\": -1}}", "label2id entry \"a\""},
      {"config.json", "{\"a\": 1, \"a\": 2}", "config.json: line"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    at_status st = try_files(bad[i].file, bad[i].text);
    if (st != AT_ERR_MODEL || !strstr(at_last_error(), bad[i].expect))
      fail_msg("%s = %s: status %d, message \"%s\", want \"%s\"", bad[i].file, bad[i].text, st,
               at_last_error(), bad[i].expect);
  }
  /* the newer one-string form, and a model_max_length below the table */
  assert_int_equal(try_files("1_Pooling/config.json", "{\"pooling_mode\": \"lasttoken\"}"), AT_OK);
  assert_int_equal(try_files("tokenizer_config.json", "{\"model_max_length\": 128}"), AT_OK);
  char p[512];
  snprintf(p, sizeof p, "%s/config.json", g_dir);
  at_model_desc *d = NULL;
  assert_int_equal(at_model_describe_files(p, &d), AT_OK);
  assert_int_equal(d->max_tokens, 128);
  at_model_desc_free(d);
  /* a label2id-only config gives its real labels (the server used to say
   * LABEL_n where `run` gave the names) */
  assert_int_equal(try_files("config.json", "{\"label2id\": {\"neg\": 0, \"pos\": 1}}"), AT_OK);
  assert_int_equal(at_model_describe_files(p, &d), AT_OK);
  assert_int_equal(d->n_labels, 2);
  assert_string_equal(d->labels[1], "pos");
  at_model_desc_free(d);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(at_model_describe_files("/nonexistent/config.json", &d), AT_ERR_MODEL);
}

/* RoBERTa-family model types and their offsets, from config text alone. */
static void test_position_offset(void **state) {
  (void)state;
  static const struct {
    const char *json;
    int64_t offset, max_tokens;
  } k[] = {
      {"{\"model_type\": \"xlm-roberta\", \"max_position_embeddings\": 514, \"pad_token_id\": 1}", 2, 512},
      {"{\"model_type\": \"roberta\", \"max_position_embeddings\": 514}", 2, 512},
      {"{\"model_type\": \"mpnet\", \"max_position_embeddings\": 514, \"pad_token_id\": 1}", 2, 512},
      {"{\"model_type\": \"bert\", \"max_position_embeddings\": 512, \"pad_token_id\": 0}", 0, 512},
      {"{\"model_type\": \"gpt2\", \"n_positions\": 1024}", 0, 1024},
      {"{\"model_type\": \"bert\"}", 0, 0},
  };
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    at_desc_impl *d = calloc(1, sizeof *d);
    assert_non_null(d);
    assert_int_equal(at_model_parse_config(d, k[i].json, strlen(k[i].json), "t"), AT_OK);
    assert_int_equal(d->pub.position_offset, k[i].offset);
    assert_int_equal(d->pub.max_tokens, k[i].max_tokens);
    at_model_desc_free(&d->pub);
  }
}

typedef struct pool_case {
  at_pooling mode;
  float want[2];
} pool_case;

/* at_pool_from over the 3 x 2 matrix x, leaving `skip` rows out, against
 * each case's hand-worked answer. */
static void check_pools(const float *x, size_t skip, const pool_case *k, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float out[2];
    at_pool_from(k[i].mode, x, 3, skip, 2, out);
    for (int h = 0; h < 2; h++)
      if (fabsf(out[h] - k[i].want[h]) > 1e-6f)
        fail_msg("%s skip %zu: out[%d] = %g, want %g", at_pooling_name(k[i].mode), skip, h,
                 out[h], k[i].want[h]);
  }
}

/* at_pool on a 3 x 2 matrix, each mode worked by hand. */
static void test_pool_arithmetic(void **state) {
  (void)state;
  const float x[] = {1, -2, 3, 4, -5, 0};
  static const pool_case k[] = {
      {AT_POOL_MEAN, {-1.0f / 3, 2.0f / 3}},
      {AT_POOL_CLS, {1, -2}},
      {AT_POOL_MAX, {3, 4}},
      {AT_POOL_LAST, {-5, 0}},
      {AT_POOL_MEAN_SQRT_LEN, {-1 / 1.7320508f, 2 / 1.7320508f}},
      {AT_POOL_WEIGHTED_MEAN, {(1 * 1 + 2 * 3 + 3 * -5) / 6.0f, (1 * -2 + 2 * 4 + 0) / 6.0f}},
      {AT_POOL_NONE, {1, -2}},
  };
  check_pools(x, 0, k, sizeof k / sizeof *k);
  float whole[2]; /* at_pool is at_pool_from with nothing skipped */
  at_pool(AT_POOL_MEAN, x, 3, 2, whole);
  assert_true(fabsf(whole[0] - k[0].want[0]) < 1e-6f && fabsf(whole[1] - k[0].want[1]) < 1e-6f);
  /* one row: every mode gives the row back, except the sqrt-length one */
  float one[2];
  at_pool(AT_POOL_WEIGHTED_MEAN, x, 1, 2, one);
  assert_true(one[0] == 1 && one[1] == -2);
  assert_string_equal(at_pooling_name((at_pooling)99), "?");
}

/* at_pool_from with the first row left out (a prompt's tokens): the modes
 * over every row read rows 1..2; weighted mean keeps the weights t + 1. */
static void test_pool_from_skips_rows(void **state) {
  (void)state;
  const float x[] = {1, -2, 3, 4, -5, 0};
  static const pool_case k[] = {
      {AT_POOL_MEAN, {-1, 2}},
      {AT_POOL_CLS, {1, -2}},
      {AT_POOL_MAX, {3, 4}},
      {AT_POOL_LAST, {-5, 0}},
      {AT_POOL_MEAN_SQRT_LEN, {-2 / 1.4142136f, 4 / 1.4142136f}},
      {AT_POOL_WEIGHTED_MEAN, {(2 * 3 + 3 * -5) / 5.0f, (2 * 4 + 0) / 5.0f}},
  };
  check_pools(x, 1, k, sizeof k / sizeof *k);
  /* skipping every row keeps the last one */
  float last[2];
  at_pool_from(AT_POOL_MEAN, x, 3, 7, 2, last);
  assert_true(last[0] == -5 && last[1] == 0);
}

/* The other task-head pieces: unit length, and the cosine the profile and
 * the server's one-space check use. */
static void test_normalize_and_cosine(void **state) {
  (void)state;
  float v[] = {3, 4}, z[] = {0, 0}, w[] = {-4, 3};
  at_l2_normalize(v, 2);
  assert_true(fabsf(v[0] - 0.6f) < 1e-7f && fabsf(v[1] - 0.8f) < 1e-7f);
  at_l2_normalize(z, 2); /* a zero vector stays zero */
  assert_true(z[0] == 0 && z[1] == 0);
  assert_true(fabs(at_cosine(v, v, 2) - 1) < 1e-12);
  assert_true(fabs(at_cosine(v, w, 2)) < 1e-7);
  assert_true(at_cosine(v, z, 2) == 0);
}

/* config_sentence_transformers.json: prompts, the default, include_prompt */
static void test_prompts_read(void **state) {
  (void)state;
  at_model_desc *d = NULL;
  assert_int_equal(at_model_describe_files(test_data("models/export/st-prompts/config.json"), &d),
                   AT_OK);
  assert_int_equal(d->n_prompts, 2);
  assert_true(d->default_prompt >= 0);
  assert_string_equal(d->prompt_names[d->default_prompt], "query");
  assert_string_equal(d->prompt_texts[d->default_prompt], "i love the ");
  assert_true(d->pool_excludes_prompt);
  at_model_desc_free(d);
  assert_int_equal(at_model_describe_files(test_data("models/export/st-max/config.json"), &d),
                   AT_OK);
  assert_int_equal(d->n_prompts, 0);
  assert_int_equal(d->default_prompt, -1);
  assert_false(d->pool_excludes_prompt);
  at_model_desc_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_standins),          cmocka_unit_test(test_resolve_reads_export),
      cmocka_unit_test(test_bad_files_named),   cmocka_unit_test(test_position_offset),
      cmocka_unit_test(test_pool_arithmetic),   cmocka_unit_test(test_pool_from_skips_rows),
      cmocka_unit_test(test_prompts_read),       cmocka_unit_test(test_normalize_and_cosine),
      cmocka_unit_test(test_generation_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
