/* tests/unit/test_model_parsers.c — what model resolution and the artifact
 * cache read besides graphs, from buffers (src/model/resolve.c,
 * artifact_cache.c; fuzzed by tests/fuzz/fuzz_model_config.c and
 * fuzz_artifact_sidecar.c): config.json fields and labels, hub refs files,
 * sidecars. Known answers, and one regression test per bug the fuzz
 * drivers found (each names its driver). */
#include <jansson.h>

#include "anytime/anytime.h"
#include "model/model_internal.h"
#include "testutil.h"

/* at_model_parse_config() (export.c) into a descriptor of our own. */
static at_status parse_config(const char *c, at_model_desc **out) {
  at_desc_impl *d = calloc(1, sizeof *d);
  assert_non_null(d);
  d->pub.variants = d->vars;
  at_status rc = at_model_parse_config(d, c, strlen(c), "config.json");
  *out = &d->pub;
  return rc;
}

static void test_config_fields(void **state) {
  (void)state;
  const char *c = "{\"architectures\":[\"BertForSequenceClassification\"],\"model_type\":\"bert\","
                  "\"dim\":64,\"hidden_size\":\"x\",\"n_positions\":128,"
                  "\"id2label\":{\"0\":\"NEG\",\"2\":\"POS\"}}";
  at_model_desc *d;
  assert_int_equal(parse_config(c, &d), AT_OK);
  assert_int_equal(d->n_labels, 3);
  assert_string_equal(d->labels[0], "NEG");
  assert_string_equal(d->labels[1], "LABEL_1");
  assert_string_equal(d->labels[2], "POS");
  assert_int_equal(d->hidden_size, 64);
  assert_int_equal(d->max_position_embeddings, 128);
  assert_string_equal(d->model_type, "bert");
  assert_string_equal(d->architecture, "BertForSequenceClassification");
  at_model_desc_free(d);
  const char *bad[] = {"[]", "{\"a\":1,\"a\":2}", "{\"id2label\":{\"4096\":\"x\"}}",
                       "{\"label2id\":{\"x\":-1}}"};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(parse_config(bad[i], &d), AT_ERR_MODEL);
    at_model_desc_free(d);
  }
}

/* fuzz_model_config (on a hand-made input after the merge of main's
 * export.c; its 150 s run did not reach it): a RoBERTa-family config with
 * max_position_embeddings -2^63 made the limit's subtraction of the
 * position offset overflow (undefined behaviour; UBSan aborts). Such a
 * table gives no limit. */
static void test_config_position_table_no_overflow(void **state) {
  (void)state;
  at_model_desc *d;
  assert_int_equal(parse_config("{\"model_type\":\"roberta\","
                                "\"max_position_embeddings\":-9223372036854775808}",
                                &d),
                   AT_OK);
  assert_int_equal(d->position_offset, 2);
  assert_int_equal(d->max_tokens, 0);
  at_model_desc_free(d);
  assert_int_equal(parse_config("{\"model_type\":\"roberta\",\"max_position_embeddings\":514}", &d),
                   AT_OK);
  assert_int_equal(d->max_tokens, 512);
  at_model_desc_free(d);
}

static void test_ref_hashes(void **state) {
  (void)state;
  char h[65];
  const char *full = "0123456789abcdef0123456789abcdef01234567";
  assert_int_equal(at_model_parse_ref(full, 40, h, sizeof h), 1);
  assert_string_equal(h, full);
  assert_int_equal(at_model_parse_ref("abc1234\n", 8, h, sizeof h), 1);
  assert_string_equal(h, "abc1234");
  assert_int_equal(at_model_parse_ref("ABC1234", 7, h, sizeof h), -1);
  assert_int_equal(at_model_parse_ref("abc123", 6, h, sizeof h), -1);
  assert_int_equal(at_model_parse_ref("", 0, h, sizeof h), -1);
}

/* fuzz_model_config: a refs file with a NUL byte after a hash-like prefix
 * ("abc1234\0junk") was taken as that prefix; anything after the hash but
 * white space makes it malformed. */
static void test_ref_with_nul_refused(void **state) {
  (void)state;
  char h[65];
  static const char t[] = "0123456789abcdef01234567\0\0\0(01234567";
  assert_int_equal(at_model_parse_ref(t, sizeof t - 1, h, sizeof h), -1);
  assert_int_equal(at_model_parse_ref("abc1234\0", 8, h, sizeof h), -1);
}

/* Found reading read_ref() while writing fuzz_model_config (the driver
 * sees buffers, not files): only the first 159 bytes of a refs file were
 * read, so a hash, 200 spaces and junk named that hash. The whole file must
 * be a hash and white space. */
static void test_ref_file_with_junk_after_padding(void **state) {
  (void)state;
  char root[] = "/tmp/anytime-refs-XXXXXX", p[512], cmd[600];
  assert_non_null(mkdtemp(root));
  snprintf(p, sizeof p, "%s/models--org--m/refs", root);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s/models--org--m/snapshots/abc1234'", p, root);
  assert_int_equal(system(cmd), 0);
  snprintf(p, sizeof p, "%s/models--org--m/refs/main", root);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fprintf(f, "abc1234%200sjunk", "");
  fclose(f);
  at_model_resolve_params rp = at_model_resolve_default_params();
  rp.hub_cache = root;
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve("org/m", &rp, &d), AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), "does not hold a commit hash"));
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

static void test_sidecar(void **state) {
  (void)state;
  json_t *m = json_loads(
      "{\"format\":1,\"key\":\"k\",\"artifact_size\":10,"
      "\"artifact_sha256\":\"ab\",\"model\":\"embedding\",\"provider\":7}",
      0, NULL);
  int64_t size;
  const char *sha;
  assert_int_equal(at_artifact_sidecar_check(m, "k", &size, &sha), 0);
  assert_int_equal(size, 10);
  assert_string_equal(sha, "ab");
  assert_int_equal(at_artifact_sidecar_check(m, "other", &size, &sha), -1);
  at_artifact_entry e;
  assert_true(at_artifact_sidecar_entry(m, &e));
  assert_string_equal(e.model, "embedding");
  assert_string_equal(e.provider, "");
  assert_int_equal(e.size_bytes, 10);
  json_decref(m);
}

/* fuzz_artifact_sidecar (on a hand-made input; the 139 s run did not
 * reach it): a negative artifact_size became a size of 2^64 - n bytes in
 * `anytime cache ls`. No file has a negative size: the listing shows 0 and
 * no usable size (so the entry is not valid). */
static void test_sidecar_negative_size(void **state) {
  (void)state;
  json_t *m = json_loads("{\"artifact_size\":-5,\"created_unix\":7}", 0, NULL);
  at_artifact_entry e;
  assert_false(at_artifact_sidecar_entry(m, &e));
  assert_int_equal(e.size_bytes, 0);
  assert_int_equal(e.created_unix, 7);
  json_decref(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_fields),
      cmocka_unit_test(test_config_position_table_no_overflow),
      cmocka_unit_test(test_ref_hashes),
      cmocka_unit_test(test_ref_with_nul_refused),
      cmocka_unit_test(test_ref_file_with_junk_after_padding),
      cmocka_unit_test(test_sidecar),
      cmocka_unit_test(test_sidecar_negative_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
