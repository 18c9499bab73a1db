/* tests/unit/test_decoder_reference.c — the committed default decoder
 * (models/decoder) against what the training pipeline recorded in
 * reference_outputs.json with an independent implementation (torch for
 * fp32, the pipeline's ONNX evaluator for int8):
 *   - fp32: the first 8 logits of each prompt's last position within 1e-3,
 *     and the 32-token greedy continuation identical, computed here from C
 *     through the generator (KV arena, continuous batching, every prompt at
 *     once) — torch recomputed the whole sequence at every step, no cache;
 *   - int8: logits within 1e-3 (measured 2026-12-02: 1.72e-5 over the 6
 *     prompts; the bound was 0.25 before anyone measured) and a continuation
 *     that agrees on its first 4 tokens. Why not the whole continuation: the
 *     int8 graph quantises activations dynamically, per tensor, so a
 *     value's rounding depends on the rest of its tensor — the other
 *     sequences of a decode batch, and one new token with a KV cache
 *     against the whole sequence recomputed as the recording did. Measured:
 *     155 of the 192 recorded greedy tokens agree as prefixes (fp32: 192).
 * The model card (README.md) must state the sha256 of each ONNX file, and
 * the recorded sha256 must match the files.
 * ANYTIME_DECODER_MODEL points the test at another model directory with a
 * reference_outputs.json of the same shape: ctest test_chat_reference runs
 * it on models/chat (rendered ChatML prompts, tools/train/chat_check.py),
 * whose file widens the int8 logit tolerance ("logit_tolerance", with the
 * measured reason next to it). */
#include <jansson.h>
#include <math.h>
#include <pthread.h>

#include "anytime/anytime.h"
#include "model/sha256.h"
#include "testutil.h"

/* int8 on a CPU without an int8 dot product (check_variant): the logit
 * tolerance, and the leading greedy tokens that must match (measured: one
 * prompt of models/decoder's six agrees on 3) */
#define INT8_SATURATING_TOL 1.5
#define INT8_SATURATING_AGREE 2

static char g_dir[4096];

static const char *dir(void) {
  const char *e = getenv("ANYTIME_DECODER_MODEL");
  if (e && *e) return e;
  const char *src = getenv("ANYTIME_SOURCE_DIR");
  if (!src) fail_msg("ANYTIME_SOURCE_DIR is not set (run the tests through ctest)");
  snprintf(g_dir, sizeof g_dir, "%s/models/decoder", src);
  return g_dir;
}

static json_t *load_ref(void) {
  char p[4200];
  snprintf(p, sizeof p, "%s/reference_outputs.json", dir());
  json_error_t err;
  json_t *r = json_load_file(p, 0, &err);
  if (!r) fail_msg("%s: %s", p, err.text);
  return r;
}

typedef struct got {
  int32_t tok[64];
  int n;
} got;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_left;

static void on_done(void *user, const at_gen_result *r) {
  got *g = user;
  g->n = r->n_generated < 64 ? r->n_generated : 64;
  memcpy(g->tok, r->tokens, (size_t)g->n * sizeof(int32_t));
  pthread_mutex_lock(&g_lock);
  g_left--;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_lock);
}

static void check_variant(const char *variant, const char *key, double tol, bool exact) {
  json_t *ref = load_ref();
  json_t *prompts = json_object_get(ref, "prompts");
  /* a model's reference file may widen the logit tolerance of a variant
   * ("logit_tolerance": {"int8": x}) and say why; models/decoder's does not */
  json_t *own_tol = json_object_get(json_object_get(ref, "logit_tolerance"), variant);
  if (json_is_number(own_tol)) tol = json_number_value(own_tol);
  /* int8 recorded with exact integer sums, run on a CPU whose int8 kernel
   * saturates (host_int8_exact, docs/quantization.md): measured up to 0.692
   * (models/decoder) and 0.211 (models/chat) on an AVX2-only AMD EPYC,
   * 2026-12-06 */
  int min_agree = 4; /* leading greedy tokens that must match (not exact) */
  if (!exact && !host_int8_exact()) {
    tol = INT8_SATURATING_TOL;
    min_agree = INT8_SATURATING_AGREE;
    print_message("%s: this CPU's int8 kernel saturates: tolerance %g, %d leading tokens\n",
                  variant, tol, min_agree);
  }
  size_t np = json_array_size(prompts);
  assert_true(np >= 3);
  at_lm *lm = NULL;
  assert_int_equal(at_lm_open(dir(), variant, NULL, NULL, &lm), AT_OK);
  int V = at_decoder_get_info(lm->dec)->vocab;
  float *logits = malloc((size_t)V * sizeof(float));
  int32_t **ids = calloc(np, sizeof *ids);
  int *nids = calloc(np, sizeof *nids);
  double worst = 0;
  for (size_t i = 0; i < np; i++) {
    json_t *pr = json_array_get(prompts, i);
    json_t *in = json_object_get(pr, "input_ids");
    nids[i] = (int)json_array_size(in);
    ids[i] = malloc((size_t)nids[i] * sizeof(int32_t));
    for (int k = 0; k < nids[i]; k++) ids[i][k] = (int32_t)json_integer_value(json_array_get(in, (size_t)k));
    at_decoder_past past = {0};
    assert_int_equal(at_decoder_step_reference(lm->dec, NULL, ids[i], nids[i], logits, &past), AT_OK);
    at_decoder_past_free(&past);
    json_t *l8 = json_object_get(json_object_get(pr, key), "last_logits_first8");
    assert_int_equal(json_array_size(l8), 8);
    for (size_t k = 0; k < 8; k++) {
      double d = fabs(logits[k] - json_real_value(json_array_get(l8, k)));
      if (d > worst) worst = d;
    }
  }
  print_message("%s: max |logit - recorded| over %zu prompts: %.3g (tolerance %g)\n", variant, np,
                worst, tol);
  assert_true(worst <= tol);
  /* greedy continuations through the generator, all prompts at once */
  at_generator *g = NULL;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  gp.chunk_tokens = 16;
  assert_int_equal(at_gen_create(at_lm_take_decoder(lm), &gp, &g), AT_OK);
  got *res = calloc(np, sizeof *res);
  g_left = (int)np;
  for (size_t i = 0; i < np; i++) {
    json_t *cont = json_object_get(json_object_get(json_array_get(prompts, i), key), "continuation_ids");
    at_gen_request r = {.prompt = ids[i], .n_prompt = nids[i],
                        .max_tokens = (int)json_array_size(cont),
                        .sample = at_sample_default_params(), .eos_id = -1, /* as recorded */
                        .on_done = on_done, .user = &res[i]};
    assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
  }
  pthread_mutex_lock(&g_lock);
  while (g_left > 0) pthread_cond_wait(&g_cv, &g_lock);
  pthread_mutex_unlock(&g_lock);
  int agree_total = 0, total = 0;
  for (size_t i = 0; i < np; i++) {
    json_t *cont = json_object_get(json_object_get(json_array_get(prompts, i), key), "continuation_ids");
    int n = (int)json_array_size(cont), same = 0;
    while (same < n && same < res[i].n &&
           res[i].tok[same] == (int32_t)json_integer_value(json_array_get(cont, (size_t)same)))
      same++;
    agree_total += same;
    total += n;
    if (exact && same != n)
      fail_msg("%s prompt %zu: continuation differs from the recorded one at token %d", variant, i,
               same);
    if (!exact && same < min_agree)
      fail_msg("%s prompt %zu: continuation differs from the recorded one at token %d", variant, i,
               same);
  }
  print_message("%s: %d of %d recorded greedy tokens reproduced (prefix agreement)\n", variant,
                agree_total, total);
  at_gen_destroy(g);
  for (size_t i = 0; i < np; i++) free(ids[i]);
  free(ids);
  free(nids);
  free(res);
  free(logits);
  at_lm_close(lm);
  json_decref(ref);
}

static void test_fp32(void **state) {
  (void)state;
  check_variant("fp32", "fp32", 1e-3, true);
}

static void test_int8(void **state) {
  (void)state;
  check_variant("int8", "int8", 1e-3, false);
}

static void test_card_hashes(void **state) {
  (void)state;
  /* resolution recognises a causal LM */
  at_model_desc *d = NULL;
  assert_int_equal(at_model_resolve(dir(), NULL, &d), AT_OK);
  assert_int_equal(d->task, AT_TASK_GENERATOR);
  assert_string_equal(at_model_task_name(d->task), "generator");
  assert_int_equal(d->n_variants, 2);
  at_model_desc_free(d);
  char p[4200];
  snprintf(p, sizeof p, "%s/README.md", dir());
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  static char card[1 << 20];
  size_t n = fread(card, 1, sizeof card - 1, f);
  card[n] = '\0';
  fclose(f);
  const char *files[] = {"onnx/model.onnx", "onnx/model_quantized.onnx"};
  for (int i = 0; i < 2; i++) {
    snprintf(p, sizeof p, "%s/%s", dir(), files[i]);
    uint8_t dig[32];
    char hex[65];
    assert_int_equal(at_sha256_file(p, dig, NULL), AT_OK);
    at_sha256_hex(dig, hex);
    if (!strstr(card, hex)) fail_msg("the model card does not state the sha256 of %s (%s)", files[i], hex);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp32),
      cmocka_unit_test(test_int8),
      cmocka_unit_test(test_card_hashes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
