/* tests/unit/test_decoder_standins.c — decoders in the layouts of users'
 * exports (tests/data/models/decoders/, tools/testmodels/
 * make_decoder_standins.py) against the numpy reference recorded beside
 * each (reference.json: the whole sequence recomputed at every step, no
 * cache):
 *   - gpt2-nopos: GPT-2 without a position_ids input (the graph counts
 *     positions from the past's length);
 *   - qwen2-gqa: rotary positions, grouped-query attention (4 query heads
 *     on 2 key/value heads), head_dim 8 while hidden / heads = 4, two EOS
 *     ids in generation_config.json;
 *   - llama-mqa: the same blocks without q/k/v biases, one key/value head
 *     for 4 query heads, head_dim = hidden / heads.
 * For each: what the decoder reads from the signature; every logit of each
 * prompt's last position within 1e-4, from one Run and from a prefill of
 * half the prompt then one token per Run with the present fed back; and the
 * 12-token greedy continuation identical, through the generator with every
 * prompt at once (different lengths, chunked prefill) — for the graph
 * without position_ids that needs decode steps grouped by past length
 * (at_gen_pick_same_length), else the step is refused. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>

#include "anytime/anytime.h"
#include "testutil.h"

#define LOGIT_TOL 1e-4

static json_t *load_ref(const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/reference.json", dir);
  json_error_t err;
  json_t *r = json_load_file(p, 0, &err);
  if (!r) fail_msg("%s: %s", p, err.text);
  return r;
}

static int32_t *ids_of(json_t *arr, int *n) {
  *n = (int)json_array_size(arr);
  int32_t *ids = malloc((size_t)*n * sizeof *ids);
  assert_non_null(ids);
  for (int k = 0; k < *n; k++) ids[k] = (int32_t)json_integer_value(json_array_get(arr, (size_t)k));
  return ids;
}

static double worst_diff(const float *got, json_t *want, int V) {
  assert_int_equal((int)json_array_size(want), V);
  double w = 0;
  for (int v = 0; v < V; v++) {
    double d = fabs(got[v] - json_number_value(json_array_get(want, (size_t)v)));
    if (d > w) w = d;
  }
  return w;
}

typedef struct got {
  int32_t tok[64];
  int n, finish;
} got;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_left;

static void on_done(void *user, const at_gen_result *r) {
  got *g = user;
  g->n = r->n_generated < 64 ? r->n_generated : 64;
  g->finish = (int)r->finish;
  memcpy(g->tok, r->tokens, (size_t)g->n * sizeof(int32_t));
  pthread_mutex_lock(&g_lock);
  g_left--;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_lock);
}

static void check_standin(const char *name) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", test_data("models/decoders"));
  size_t used = strlen(dir);
  snprintf(dir + used, sizeof dir - used, "/%s", name);
  json_t *ref = load_ref(dir);
  at_lm *lm = NULL;
  if (at_lm_open(dir, NULL, NULL, NULL, &lm) != AT_OK) fail_msg("%s: %s", name, at_last_error());
  const at_decoder_info *in = at_decoder_get_info(lm->dec);
  /* what the signature says */
  assert_int_equal(in->layers, (int)json_integer_value(json_object_get(ref, "layers")));
  assert_int_equal(in->heads, (int)json_integer_value(json_object_get(ref, "kv_heads")));
  assert_int_equal(in->head_dim, (int)json_integer_value(json_object_get(ref, "head_dim")));
  assert_int_equal(in->position_ids, json_is_true(json_object_get(ref, "position_ids")));
  json_t *eos = json_object_get(ref, "eos_ids");
  assert_int_equal(lm->n_eos, (int)json_array_size(eos));
  for (int i = 0; i < lm->n_eos; i++)
    assert_int_equal(lm->eos_ids[i], (int32_t)json_integer_value(json_array_get(eos, (size_t)i)));
  int V = in->vocab;
  float *logits = malloc((size_t)V * sizeof *logits);
  json_t *prompts = json_object_get(ref, "prompts");
  size_t np = json_array_size(prompts);
  assert_true(np >= 3);
  double worst_one = 0, worst_fed = 0;
  for (size_t i = 0; i < np; i++) {
    json_t *pr = json_array_get(prompts, i);
    int n;
    int32_t *ids = ids_of(json_object_get(pr, "input_ids"), &n);
    json_t *want = json_object_get(pr, "last_logits");
    /* one Run over the whole prompt */
    at_decoder_past past = {0};
    assert_int_equal(at_decoder_step_reference(lm->dec, NULL, ids, n, logits, &past), AT_OK);
    at_decoder_past_free(&past);
    double d = worst_diff(logits, want, V);
    if (d > worst_one) worst_one = d;
    /* half, then one token per Run with the present fed back as the past */
    int h = n / 2;
    assert_int_equal(at_decoder_step_reference(lm->dec, NULL, ids, h, logits, &past), AT_OK);
    for (int k = h; k < n; k++) {
      at_decoder_past next = {0};
      assert_int_equal(at_decoder_step_reference(lm->dec, &past, ids + k, 1, logits, &next), AT_OK);
      at_decoder_past_free(&past);
      past = next;
    }
    at_decoder_past_free(&past);
    d = worst_diff(logits, want, V);
    if (d > worst_fed) worst_fed = d;
    free(ids);
  }
  print_message("%s: max |logit - numpy| %.3g in one Run, %.3g token by token (tolerance %g)\n",
                name, worst_one, worst_fed, LOGIT_TOL);
  assert_true(worst_one <= LOGIT_TOL);
  assert_true(worst_fed <= LOGIT_TOL);

  /* greedy through the generator, every prompt at once */
  at_generator *g = NULL;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  gp.chunk_tokens = 4; /* the longer prompts are prefilled in pieces */
  assert_int_equal(at_gen_create(at_lm_take_decoder(lm), &gp, &g), AT_OK);
  got *res = calloc(np, sizeof *res);
  int32_t **ids = calloc(np, sizeof *ids);
  g_left = (int)np;
  for (size_t i = 0; i < np; i++) {
    json_t *pr = json_array_get(prompts, i);
    int n;
    ids[i] = ids_of(json_object_get(pr, "input_ids"), &n);
    at_gen_request r = {.prompt = ids[i], .n_prompt = n,
                        .max_tokens = (int)json_array_size(json_object_get(pr, "continuation_ids")),
                        .sample = at_sample_default_params(), .eos_id = -1,
                        .on_done = on_done, .user = &res[i]};
    assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
  }
  pthread_mutex_lock(&g_lock);
  while (g_left > 0) pthread_cond_wait(&g_cv, &g_lock);
  pthread_mutex_unlock(&g_lock);
  for (size_t i = 0; i < np; i++) {
    json_t *cont = json_object_get(json_array_get(prompts, i), "continuation_ids");
    int n = (int)json_array_size(cont), same = 0;
    while (same < n && same < res[i].n &&
           res[i].tok[same] == (int32_t)json_integer_value(json_array_get(cont, (size_t)same)))
      same++;
    if (res[i].finish == AT_GEN_ERROR) fail_msg("%s prompt %zu: the generator failed", name, i);
    if (same != n || res[i].n != n)
      fail_msg("%s prompt %zu: greedy continuation differs from numpy's at token %d of %d", name, i,
               same, n);
  }
  print_message("%s: %zu greedy continuations identical to numpy's\n", name, np);
  at_gen_destroy(g);
  for (size_t i = 0; i < np; i++) free(ids[i]);
  free(ids);
  free(res);
  free(logits);
  at_lm_close(lm);
  json_decref(ref);
}

static void test_gpt2_without_position_ids(void **state) {
  (void)state;
  check_standin("gpt2-nopos");
}

static void test_qwen2_grouped_query(void **state) {
  (void)state;
  check_standin("qwen2-gqa");
}

static void test_llama_multi_query(void **state) {
  (void)state;
  check_standin("llama-mqa");
}

/* The same-length pick: the longest-waiting first, then only its length. */
static void test_pick_same_length(void **state) {
  (void)state;
  int len[] = {5, 7, 5, 9, 5, 7};
  uint64_t last[] = {4, 1, 3, 0, 2, 5};
  int pick[6];
  /* longest-waiting is index 3 (len 9): alone */
  assert_int_equal(at_gen_pick_same_length(len, last, 6, 4, pick), 1);
  assert_int_equal(pick[0], 3);
  last[3] = 9; /* now index 1 (len 7, last 1), then 5 */
  assert_int_equal(at_gen_pick_same_length(len, last, 6, 4, pick), 2);
  assert_int_equal(pick[0], 1);
  assert_int_equal(pick[1], 5);
  last[1] = last[5] = 10; /* len 5: 4 (2), 2 (3), 0 (4), capped at 2 */
  assert_int_equal(at_gen_pick_same_length(len, last, 6, 2, pick), 2);
  assert_int_equal(pick[0], 4);
  assert_int_equal(pick[1], 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick_same_length),
      cmocka_unit_test(test_gpt2_without_position_ids),
      cmocka_unit_test(test_qwen2_grouped_query),
      cmocka_unit_test(test_llama_multi_query),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
