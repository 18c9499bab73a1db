/* tests/unit/test_model_resolve.c — model resolution against a real hub
 * cache layout (built by tests/data/hf/make_hub.sh in a temporary directory:
 * content-addressed blobs, snapshot symlinks, refs): repo ids, revisions
 * (refs, full hashes, unique and ambiguous prefixes), local directories and
 * files, bare names in model directories, variants and config.json fields,
 * the task guess, missing models listing every place searched, names that
 * try to escape the cache, and the listing used by `anytime ls`. */
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/model.h"
#include "model/model_internal.h"
#include "testutil.h"

static char g_tmp[256], g_hub[300];

static int setup(void **state) {
  (void)state;
  snprintf(g_tmp, sizeof g_tmp, "/tmp/anytime-resolve-XXXXXX");
  if (!mkdtemp(g_tmp)) return -1;
  snprintf(g_hub, sizeof g_hub, "%s/hub", g_tmp);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "bash '%s' '%s'", test_data("hf/make_hub.sh"), g_hub);
  return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

static at_model_resolve_params hub_params(void) {
  at_model_resolve_params p = at_model_resolve_default_params();
  p.hub_cache = g_hub;
  return p;
}

static void test_repo_id_main(void **state) {
  (void)state;
  at_model_resolve_params p = hub_params();
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment", &p, &d), AT_OK);
  assert_int_equal(d->source, AT_MODEL_HUB);
  assert_string_equal(d->family, "anytime-test/tiny-sentiment");
  assert_string_equal(d->revision, "main");
  assert_string_equal(d->commit, "abcdef123456aaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  assert_int_equal(d->n_variants, 2);
  assert_string_equal(d->variants[0].name, "fp32");
  assert_string_equal(d->variants[0].rel_path, "onnx/model.onnx");
  assert_false(d->variants[0].is_quantized);
  assert_string_equal(d->variants[1].name, "int8");
  assert_string_equal(d->variants[1].rel_path, "onnx/model_quantized.onnx");
  assert_true(d->variants[1].is_quantized);
  assert_true(d->variants[0].size_bytes > 1000);
  assert_int_equal(at_model_desc_variant_index(d, "quantized"), 1);
  assert_int_equal(at_model_desc_variant_index(d, "model"), 0);
  assert_int_equal(at_model_desc_variant_index(d, "fp16"), -1);
  assert_int_equal(d->n_labels, 3);
  assert_string_equal(d->labels[2], "positive");
  assert_int_equal(d->hidden_size, 16);
  assert_int_equal(d->max_position_embeddings, 64);
  assert_string_equal(d->architecture, "BertForSequenceClassification");
  assert_int_equal(d->task, AT_TASK_CLASSIFIER);
  assert_string_equal(d->task_output, "logits");
  assert_int_equal(d->tokenizer_kind, AT_TOKENIZER_VOCAB_TXT);
  assert_non_null(strstr(d->tokenizer_path, "/vocab.txt"));
  /* the variant really is a loadable model through its symlink */
  at_session *s = NULL;
  assert_int_equal(at_session_create(d->variants[1].path, NULL, &s), AT_OK);
  at_session_destroy(s);
  at_model_desc_free(d);
  at_model_desc_free(NULL);
}

static void test_revisions(void **state) {
  (void)state;
  at_model_resolve_params p = hub_params();
  at_model_desc *d = NULL;
  /* a named ref */
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment@v1", &p, &d), AT_OK);
  assert_string_equal(d->commit, "0123456789abcdef0123456789abcdef01234567");
  assert_int_equal(d->n_variants, 1);
  assert_string_equal(d->variants[0].rel_path, "model.onnx");
  assert_int_equal(d->n_labels, 3); /* ids 0 and 2 given; 1 filled in */
  assert_string_equal(d->labels[0], "neg");
  assert_string_equal(d->labels[1], "LABEL_1");
  assert_string_equal(d->labels[2], "pos");
  at_model_desc_free(d);
  /* a full hash and a unique prefix */
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment@0123456789abcdef0123456789abcdef01234567", &p, &d), AT_OK);
  assert_string_equal(d->commit, "0123456789abcdef0123456789abcdef01234567");
  at_model_desc_free(d);
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment@0123456", &p, &d), AT_OK);
  assert_string_equal(d->commit, "0123456789abcdef0123456789abcdef01234567");
  at_model_desc_free(d);
  /* an ambiguous prefix names both candidates */
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment@abcdef123456", &p, &d), AT_ERR_MODEL);
  assert_null(d);
  assert_non_null(strstr(at_last_error(), "abcdef123456aaaa"));
  assert_non_null(strstr(at_last_error(), "abcdef123456bbbb"));
  /* an unknown revision lists the ref it tried */
  assert_int_equal(at_model_resolve("anytime-test/tiny-sentiment@nope", &p, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "refs/nope"));
}

static void test_embedder_and_no_onnx(void **state) {
  (void)state;
  at_model_resolve_params p = hub_params();
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve("anytime-test/tiny-embedder", &p, &d), AT_OK);
  assert_int_equal(d->task, AT_TASK_EMBEDDER);
  assert_string_equal(d->task_output, "sentence_embedding");
  assert_int_equal(d->hidden_size, 16);  /* from "dim" */
  assert_int_equal(d->max_position_embeddings, 64);  /* from "n_positions" */
  assert_string_equal(at_model_task_name(d->task), "embedder");
  at_model_desc_free(d);
  assert_int_equal(at_model_resolve("anytime-test/no-onnx", &p, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "without an ONNX graph"));
}

static void test_missing_lists_every_place(void **state) {
  (void)state;
  const char *dirs[] = {"/nonexistent-models-a", "/nonexistent-models-b"};
  at_model_resolve_params p = hub_params();
  p.model_dirs = dirs;
  p.n_model_dirs = 2;
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve("nosuch-model", &p, &d), AT_ERR_NOT_FOUND);
  const char *e = at_last_error();
  assert_non_null(strstr(e, "nosuch-model (no such local path)"));
  assert_non_null(strstr(e, "/nonexistent-models-a/nosuch-model"));
  assert_non_null(strstr(e, "/nonexistent-models-b/nosuch-model"));
  assert_non_null(strstr(e, "models--nosuch-model"));
  assert_int_equal(at_model_resolve("org/nosuch", &p, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "models--org--nosuch"));
  assert_non_null(strstr(at_last_error(), "org/nosuch (no such local path)"));
  /* the environment chain: HF_HUB_CACHE, then HF_HOME/hub */
  setenv("HF_HUB_CACHE", "/env-hub-cache", 1);
  assert_int_equal(at_model_resolve("org/nosuch", NULL, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "/env-hub-cache/models--org--nosuch"));
  unsetenv("HF_HUB_CACHE");
  setenv("HF_HOME", "/env-hf-home", 1);
  assert_int_equal(at_model_resolve("org/nosuch", NULL, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "/env-hf-home/hub/models--org--nosuch"));
  unsetenv("HF_HOME");
  char buf[512];
  assert_int_equal(at_model_hub_cache_dir(NULL, buf, sizeof buf), AT_OK);
  assert_non_null(strstr(buf, "/.cache/huggingface/hub"));
}

static void test_escapes_refused(void **state) {
  (void)state;
  at_model_resolve_params p = hub_params();
  at_model_desc *d = NULL;
  static const char *const bad[] = {
      "org/../name", "../org/name@x" /* pathlike: not found */, "org/name/extra", "org//name",
      "/org",  /* pathlike */ "org\\name", "org/na me", "org/.hidden", "org/na--me",
      "org/name@../../x", "org/name@/abs", "org/name@a//b", "org/name@", "", "-org/name",
      "org/name@a\\b", "org/name@main/../x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    at_status rc = at_model_resolve(bad[i], &p, &d);
    if (rc == AT_OK) fail_msg("'%s' resolved", bad[i]);
    assert_true(rc == AT_ERR_INVALID_ARG || rc == AT_ERR_NOT_FOUND);
    assert_null(d);
  }
  assert_int_equal(at_model_resolve("org/../name", &p, &d), AT_ERR_INVALID_ARG);
  assert_int_equal(at_model_resolve("org/name@../../x", &p, &d), AT_ERR_INVALID_ARG);
  /* a ref that is not a hash, a snapshot or a file that leads out of the repo */
  assert_int_equal(at_model_resolve("anytime-test/evil", &p, &d), AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), "does not hold a commit hash"));
  assert_int_equal(at_model_resolve("anytime-test/evil@outside", &p, &d), AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), "outside"));
  assert_int_equal(at_model_resolve("anytime-test/evil@leaky", &p, &d), AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), "outside its repository"));
  assert_int_equal(at_model_resolve(NULL, &p, &d), AT_ERR_INVALID_ARG);
}

static void test_local_paths(void **state) {
  (void)state;
  at_model_desc *d = NULL;
  char dir[512], path[600], cmd[20000], tiny[4096], cfg[4096];
  snprintf(dir, sizeof dir, "%s/models/my-model", g_tmp);
  snprintf(tiny, sizeof tiny, "%s", test_data("models/tiny_encoder.onnx"));
  snprintf(cfg, sizeof cfg, "%s", test_data("hf/config_classifier.json"));
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s/onnx' && cp '%s' '%s/model.onnx' && cp '%s' '%s/onnx/model_int8.onnx' "
           "&& cp '%s' '%s/onnx/model_fp16.onnx' && cp '%s' '%s/config.json'",
           dir, tiny, dir, tiny, dir, tiny, dir, cfg, dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(at_model_resolve(dir, NULL, &d), AT_OK);
  assert_int_equal(d->source, AT_MODEL_LOCAL);
  assert_string_equal(d->family, "my-model");
  assert_null(d->repo_id);
  assert_int_equal(d->n_variants, 3);
  assert_string_equal(d->variants[0].name, "fp32");
  assert_string_equal(d->variants[1].name, "fp16");
  assert_string_equal(d->variants[2].name, "int8");
  assert_int_equal(d->task, AT_TASK_CLASSIFIER);
  assert_int_equal(d->tokenizer_kind, AT_TOKENIZER_NONE);
  at_model_desc_free(d);
  /* by bare name through a model directory */
  char models[512];
  snprintf(models, sizeof models, "%s/models", g_tmp);
  const char *dirs[] = {models};
  at_model_resolve_params p = hub_params();
  p.model_dirs = dirs;
  p.n_model_dirs = 1;
  assert_int_equal(at_model_resolve("my-model", &p, &d), AT_OK);
  assert_string_equal(d->family, "my-model");
  at_model_desc_free(d);
  /* one file inside onnx/: config from the directory above */
  snprintf(path, sizeof path, "%s/onnx/model_int8.onnx", dir);
  assert_int_equal(at_model_resolve(path, NULL, &d), AT_OK);
  assert_string_equal(d->family, "my-model");
  assert_int_equal(d->n_variants, 1);
  assert_string_equal(d->variants[0].name, "int8");
  assert_int_equal(d->n_labels, 3);
  at_model_desc_free(d);
  /* one file on its own: family is the stem */
  assert_int_equal(at_model_resolve(test_data("models/tiny_encoder.onnx"), NULL, &d), AT_OK);
  assert_string_equal(d->family, "tiny_encoder");
  assert_string_equal(d->variants[0].name, "tiny_encoder");
  at_model_desc_free(d);
  /* a directory without graphs */
  snprintf(path, sizeof path, "%s/empty", g_tmp);
  mkdir(path, 0755);
  assert_int_equal(at_model_resolve(path, NULL, &d), AT_ERR_NOT_FOUND);
  assert_int_equal(at_model_resolve("/no/such/dir", NULL, &d), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "/no/such/dir"));
}

static void test_listing(void **state) {
  (void)state;
  char models[512];
  snprintf(models, sizeof models, "%s/models", g_tmp);
  const char *dirs[] = {models};
  at_model_resolve_params p = hub_params();
  p.model_dirs = dirs;
  p.n_model_dirs = 1;
  at_model_entry *v = NULL;
  size_t n = 0;
  assert_int_equal(at_model_list(&p, &v, &n), AT_OK);
  int saw_local = 0, saw_tiny = 0, saw_emb = 0, saw_bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].desc && strcmp(v[i].desc->family, "my-model") == 0) saw_local = 1;
    if (v[i].desc && strcmp(v[i].spec, "anytime-test/tiny-sentiment") == 0) saw_tiny = 1;
    if (v[i].desc && strcmp(v[i].spec, "anytime-test/tiny-embedder") == 0) saw_emb = 1;
    if (!v[i].desc && strcmp(v[i].spec, "anytime-test/no-onnx") == 0 && v[i].error) saw_bad = 1;
  }
  assert_true(saw_local && saw_tiny && saw_emb && saw_bad);
  assert_int_equal(v[0].source, AT_MODEL_LOCAL);
  at_model_list_free(v, n);
}

static void test_graph_outputs(void **state) {
  (void)state;
  char names[4][AT_GRAPH_NAME_MAX];
  assert_int_equal(at_graph_output_names(test_data("models/tiny_encoder.onnx"), names, 4), 2);
  assert_string_equal(names[0], "logits");
  assert_string_equal(names[1], "pooled");
  assert_int_equal(at_graph_output_names("/nonexistent", names, 4), -1);
  static const unsigned char junk[] = {0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2};
  assert_int_equal(at_graph_output_names_buf(junk, sizeof junk, names, 4), -1);
  assert_int_equal(at_graph_output_names_buf(junk, 0, names, 4), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repo_id_main),      cmocka_unit_test(test_revisions),
      cmocka_unit_test(test_embedder_and_no_onnx), cmocka_unit_test(test_missing_lists_every_place),
      cmocka_unit_test(test_escapes_refused),   cmocka_unit_test(test_local_paths),
      cmocka_unit_test(test_listing),           cmocka_unit_test(test_graph_outputs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
