/* tests/unit/test_decode_model.c — the generation lane on the committed
 * default decoder (models/decoder, fp32):
 *   - token identity: greedy tokens from the generator (KV arena, chunked
 *     prefill, continuous batching with right-padded pasts) equal those of
 *     the reference path that feeds the graph's own present tensors back,
 *     for many prompts and lengths submitted at once;
 *   - the same with an arena so small that sequences are preempted and
 *     recompute their cache (and the preemptions really happened);
 *   - sampling with a seed is reproducible across batch compositions;
 *   - the perplexity scorer agrees with step-by-step reference logits;
 *   - submit refuses what can never fit, up front;
 *   - a fresh lane's published load prices real steps;
 *   - two lanes (fp32, int8) taking turns on shared cores each give their
 *     own variant's reference tokens.
 * The model directory can be overridden with ANYTIME_DECODER_MODEL. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "anytime/anytime.h"
#include "testutil.h"

static const char *k_texts[] = {
    "the film is a masterpiece of quiet observation , and the performances are superb .",
    "i wanted to like this movie , but the script is a mess and the jokes fall flat .",
    "a",
    "what happens when a director with nothing to say has two hours to say it ?",
    "the best thing about the movie is its soundtrack , which is to say not much .",
    "as the credits rolled i realised i had been smiling for ninety minutes .",
    "plot : a young lawyer moves to new york and discovers that her firm is hiding a secret . "
    "the premise is familiar , the execution less so , and the supporting cast keeps things "
    "moving even when the story stalls in the second act .",
    "it 's not a bad film .",
};
#define N_TEXTS (sizeof k_texts / sizeof k_texts[0])

static const char *model_dir(void) {
  static char buf[4096];
  const char *e = getenv("ANYTIME_DECODER_MODEL");
  if (e && *e) return e;
  const char *src = getenv("ANYTIME_SOURCE_DIR");
  if (!src) fail_msg("ANYTIME_SOURCE_DIR is not set (run the tests through ctest)");
  snprintf(buf, sizeof buf, "%s/models/decoder", src);
  return buf;
}

typedef struct prompt {
  int32_t *ids;
  int n;
} prompt;

/* Prompts of many lengths: each text, and prefixes of the long one. With
 * `shared`, also the long text followed by each text (a shared "system
 * prompt" of 40-odd tokens). */
static int make_prompts_opt(at_lm *lm, prompt *out, int cap, bool shared) {
  at_tok_workspace *ws = NULL;
  assert_int_equal(at_tok_workspace_create(&ws), AT_OK);
  int n = 0;
  for (size_t i = 0; i < N_TEXTS && n < cap; i++) {
    assert_int_equal(at_lm_encode(lm, ws, k_texts[i], strlen(k_texts[i]), &out[n].ids, &out[n].n),
                     AT_OK);
    n++;
  }
  int cuts[] = {2, 5, 16, 17, 33};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0] && n < cap; c++) {
    const prompt *lp = &out[6];
    int k = cuts[c] < lp->n ? cuts[c] : lp->n;
    out[n].ids = malloc((size_t)k * sizeof(int32_t));
    memcpy(out[n].ids, lp->ids, (size_t)k * sizeof(int32_t));
    out[n].n = k;
    n++;
  }
  for (size_t i = 0; shared && i < N_TEXTS && n < cap; i++) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s %s", k_texts[6], k_texts[i]);
    assert_int_equal(at_lm_encode(lm, ws, buf, strlen(buf), &out[n].ids, &out[n].n), AT_OK);
    n++;
  }
  at_tok_workspace_destroy(ws);
  return n;
}

static int make_prompts(at_lm *lm, prompt *out, int cap) { return make_prompts_opt(lm, out, cap, false); }

static int reference_greedy(at_decoder *d, const prompt *p, int max_tokens, int32_t eos,
                            int32_t *out) {
  const at_decoder_info *in = at_decoder_get_info(d);
  float *logits = malloc((size_t)in->vocab * sizeof(float));
  at_decoder_past past = {0}, present = {0};
  assert_int_equal(at_decoder_step_reference(d, NULL, p->ids, p->n, logits, &past), AT_OK);
  int n = 0;
  at_sample_params sp = at_sample_default_params();
  while (n < max_tokens) {
    int32_t t = at_sample(logits, in->vocab, &sp, NULL, NULL);
    if (t == eos) break;
    out[n++] = t;
    if (n == max_tokens) break;
    assert_int_equal(at_decoder_step_reference(d, &past, &t, 1, logits, &present), AT_OK);
    at_decoder_past_free(&past);
    past = present;
    present = (at_decoder_past){0};
  }
  at_decoder_past_free(&past);
  free(logits);
  return n;
}

typedef struct got {
  int32_t tok[256];
  int n;
  at_gen_finish finish;
  int preemptions;
  uint64_t admitted_ns;
  bool done;
} got;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_remaining;

static void on_done(void *user, const at_gen_result *r) {
  got *g = user;
  memcpy(g->tok, r->tokens, (size_t)r->n_generated * sizeof(int32_t));
  g->n = r->n_generated;
  g->finish = r->finish;
  g->preemptions = r->preemptions;
  g->admitted_ns = r->admitted_ns;
  pthread_mutex_lock(&g_lock);
  g->done = true;
  g_remaining--;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_lock);
}

static void wait_all(void) {
  pthread_mutex_lock(&g_lock);
  while (g_remaining > 0) pthread_cond_wait(&g_cv, &g_lock);
  pthread_mutex_unlock(&g_lock);
}

/* A lane over variant `variant` of the default decoder; *lm is its model
 * (close it after the lane). */
static at_generator *open_lane(const char *variant, const at_gen_params *gp, at_lm **lm) {
  *lm = NULL;
  assert_int_equal(at_lm_open(model_dir(), variant, NULL, NULL, lm), AT_OK);
  at_generator *g = NULL;
  assert_int_equal(at_gen_create(at_lm_take_decoder(*lm), gp, &g), AT_OK);
  return g;
}

/* Generate every prompt through a generator with `gp` and compare with the
 * reference; *out (optional) gets the lane's final stats. Returns the
 * generator's preemption count. */
static uint64_t identity_run_opt(const at_gen_params *gp, int max_tokens, bool shared,
                                 at_gen_stats *out) {
  at_lm *lm = NULL;
  assert_int_equal(at_lm_open(model_dir(), "fp32", NULL, NULL, &lm), AT_OK);
  prompt p[32];
  int np = make_prompts_opt(lm, p, 32, shared);
  int32_t (*want)[256] = calloc((size_t)np, sizeof *want);
  int *n_want = calloc((size_t)np, sizeof *n_want);
  for (int i = 0; i < np; i++) n_want[i] = reference_greedy(lm->dec, &p[i], max_tokens, lm->eos_id, want[i]);

  at_generator *g = NULL;
  assert_int_equal(at_gen_create(at_lm_take_decoder(lm), gp, &g), AT_OK);
  got *res = calloc((size_t)np, sizeof *res);
  g_remaining = np;
  for (int i = 0; i < np; i++) {
    at_gen_request r = {.prompt = p[i].ids,
                        .n_prompt = p[i].n,
                        .max_tokens = max_tokens,
                        .sample = at_sample_default_params(),
                        .eos_id = lm->eos_id,
                        .on_done = on_done,
                        .user = &res[i]};
    assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
  }
  wait_all();
  at_gen_stats st;
  for (int tries = 0; tries < 1000; tries++) { /* stats are published after the callbacks */
    at_gen_stats_get(g, &st);
    if (st.finished == (uint64_t)np && st.free_blocks == st.total_blocks) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  int mismatches = 0;
  for (int i = 0; i < np; i++) {
    assert_true(res[i].done);
    if (res[i].n != n_want[i] || memcmp(res[i].tok, want[i], (size_t)n_want[i] * 4) != 0) {
      int k = 0;
      while (k < res[i].n && k < n_want[i] && res[i].tok[k] == want[i][k]) k++;
      print_message("prompt %d (%d tokens): arena path differs from reference at token %d "
                    "(%d vs %d generated)\n", i, p[i].n, k, res[i].n, n_want[i]);
      mismatches++;
    }
  }
  assert_int_equal(mismatches, 0);
  assert_int_equal(st.finished, (uint64_t)np);
  assert_int_equal(st.free_blocks, st.total_blocks); /* every block came back */
  if (out) *out = st;
  at_gen_destroy(g);
  for (int i = 0; i < np; i++) free(p[i].ids);
  free(want);
  free(n_want);
  free(res);
  at_lm_close(lm);
  return st.preemptions;
}

static uint64_t identity_run(const at_gen_params *gp, int max_tokens) {
  return identity_run_opt(gp, max_tokens, false, NULL);
}

static void test_identity_batched(void **state) {
  (void)state;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  gp.chunk_tokens = 16;
  gp.block_tokens = 16;
  at_gen_stats st;
  uint64_t pre = identity_run_opt(&gp, 40, false, &st);
  assert_int_equal(pre, 0);
  /* steady batches read the last step's presents; the rest gathered */
  print_message("decode steps: %llu carried, %llu gathered\n",
                (unsigned long long)st.kv_carried_steps, (unsigned long long)st.kv_gathered_steps);
  assert_true(st.kv_carried_steps > 0);
  assert_true(st.kv_gathered_steps > 0);
  /* other block and chunk widths, bucketing on */
  gp.block_tokens = 7;
  gp.chunk_tokens = 5;
  gp.max_batch = 3;
  gp.bucketing = true;
  identity_run(&gp, 24);
}

static void test_identity_preempted(void **state) {
  (void)state;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  gp.chunk_tokens = 8;
  gp.block_tokens = 8;
  gp.n_blocks = 12;       /* room for about two sequences at a time */
  gp.preempt_always = true; /* evict for every head that does not fit, whatever the timing */
  uint64_t pre = identity_run(&gp, 32);
  print_message("preemptions: %llu\n", (unsigned long long)pre);
  assert_true(pre > 0);
}

/* Prefix cache: prompts that share a 40-odd-token head attach its cached
 * blocks instead of prefilling them, and every token still equals the
 * reference's; off, nothing is looked up. Then an arena so small that
 * cached blocks are handed out again and sequences are preempted. */
static void test_identity_prefix_cache(void **state) {
  (void)state;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  gp.chunk_tokens = 16;
  gp.block_tokens = 8;
  at_gen_stats st;
  identity_run_opt(&gp, 24, true, &st);
  print_message("prefix cache: %llu of %llu prompt positions hit, %d cached blocks\n",
                (unsigned long long)st.prefix_hit_tokens,
                (unsigned long long)st.prefix_query_tokens, st.cached_blocks);
  assert_true(st.prefix_hit_tokens >= 8 * 40); /* >= 5 blocks for each of >= 8 prompts */
  assert_true(st.cached_blocks > 0);
  gp.prefix_cache = false;
  identity_run_opt(&gp, 24, true, &st);
  assert_int_equal(st.prefix_query_tokens, 0);
  assert_int_equal(st.cached_blocks, 0);
  gp.prefix_cache = true;
  gp.n_blocks = 16; /* the longest prompt and its 24 tokens need 15 */
  gp.preempt_always = true;
  uint64_t pre = identity_run_opt(&gp, 24, true, &st);
  print_message("small arena: %llu preemptions, %llu positions hit\n", (unsigned long long)pre,
                (unsigned long long)st.prefix_hit_tokens);
  assert_true(pre > 0);
  assert_true(st.prefix_hit_tokens > 0);
}

/* Sampled tokens with a seed do not depend on what else runs. */
static void test_seeded_sampling(void **state) {
  (void)state;
  at_lm *lm = NULL;
  assert_int_equal(at_lm_open(model_dir(), "fp32", NULL, NULL, &lm), AT_OK);
  prompt p[32];
  int np = make_prompts(lm, p, 32);
  at_generator *g = NULL;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 4;
  assert_int_equal(at_gen_create(at_lm_take_decoder(lm), &gp, &g), AT_OK);
  got alone, crowd[32];
  memset(&alone, 0, sizeof alone);
  memset(crowd, 0, sizeof crowd);
  at_gen_request r = {.prompt = p[0].ids,
                      .n_prompt = p[0].n,
                      .max_tokens = 24,
                      .sample = {.temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .seed = 7},
                      .eos_id = -1,
                      .on_done = on_done,
                      .user = &alone};
  g_remaining = 1;
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
  wait_all();
  g_remaining = np;
  for (int i = 0; i < np; i++) {
    at_gen_request q = r;
    q.prompt = p[i].ids;
    q.n_prompt = p[i].n;
    q.sample.seed = i == 0 ? 7 : 100 + (uint64_t)i;
    q.user = &crowd[i];
    assert_int_equal(at_gen_submit(g, &q, NULL), AT_OK);
  }
  wait_all();
  assert_int_equal(alone.n, 24);
  assert_int_equal(crowd[0].n, 24);
  assert_memory_equal(alone.tok, crowd[0].tok, 24 * sizeof(int32_t));
  at_gen_destroy(g);
  for (int i = 0; i < np; i++) free(p[i].ids);
  at_lm_close(lm);
}

static void test_nll_matches_steps(void **state) {
  (void)state;
  at_lm *lm = NULL;
  assert_int_equal(at_lm_open(model_dir(), "fp32", NULL, NULL, &lm), AT_OK);
  prompt p[32];
  int np = make_prompts(lm, p, 32);
  const prompt *lp = &p[6];
  double nll = 0;
  int scored = 0;
  assert_int_equal(at_decoder_nll(lm->dec, lp->ids, lp->n, &nll, &scored), AT_OK);
  assert_int_equal(scored, lp->n - 1);
  int V = at_decoder_get_info(lm->dec)->vocab;
  float *logits = malloc((size_t)V * sizeof(float));
  at_decoder_past past = {0}, present = {0};
  double sum = 0;
  for (int i = 0; i + 1 < lp->n; i++) {
    assert_int_equal(at_decoder_step_reference(lm->dec, i ? &past : NULL, &lp->ids[i], 1, logits,
                                               &present),
                     AT_OK);
    at_decoder_past_free(&past);
    past = present;
    present = (at_decoder_past){0};
    double mx = logits[0], z = 0;
    for (int v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    for (int v = 0; v < V; v++) z += exp(logits[v] - mx);
    sum += log(z) + mx - logits[lp->ids[i + 1]];
  }
  at_decoder_past_free(&past);
  print_message("nll one run %.6f, step by step %.6f over %d tokens\n", nll, sum, scored);
  assert_true(fabs(nll - sum) < 1e-3 * scored);
  assert_true(isfinite(nll) && nll > 0);
  free(logits);
  for (int i = 0; i < np; i++) free(p[i].ids);
  at_lm_close(lm);
}

static void test_refusals(void **state) {
  (void)state;
  at_lm *lm = NULL;
  assert_int_equal(at_lm_open(model_dir(), "int8", NULL, NULL, &lm), AT_OK);
  int maxp = lm->n_positions;
  assert_true(maxp > 0);
  at_generator *g = NULL;
  at_gen_params gp = at_gen_default_params();
  gp.n_blocks = 4;
  gp.block_tokens = 16;
  assert_int_equal(at_gen_create(at_lm_take_decoder(lm), &gp, &g), AT_OK);
  int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  got x;
  at_gen_request r = {.prompt = ids, .n_prompt = 8, .max_tokens = maxp, .eos_id = -1,
                      .sample = at_sample_default_params(), .on_done = on_done, .user = &x};
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_ERR_LIMIT); /* beyond positions */
  r.max_tokens = 100; /* 107 positions: 7 blocks > 4 in the arena */
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_ERR_LIMIT);
  r.max_tokens = 0;
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_ERR_INVALID_ARG);
  r.max_tokens = 4;
  ids[3] = 1 << 20;
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_ERR_INVALID_ARG); /* not in vocab */
  ids[3] = 4;
  r.sample.top_p = 0;
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_ERR_INVALID_ARG);
  r.sample.top_p = 1;
  memset(&x, 0, sizeof x);
  g_remaining = 1;
  assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK); /* int8 generates */
  wait_all();
  assert_int_equal(x.n, 4);
  assert_int_equal(x.finish, AT_GEN_LENGTH);
  at_gen_destroy(g);
  at_lm_close(lm);
  /* wrong variant names the ones there are */
  assert_int_equal(at_lm_open(model_dir(), "fp64", NULL, NULL, &lm), AT_ERR_NOT_FOUND);
  assert_non_null(strstr(at_last_error(), "int8"));
}

/* at_gen_stop from on_token (as a stream's reader does from another
 * thread): the request ends as "stop", within a step of being asked, and
 * is not counted as cancelled; a cancel after a stop wins (the client
 * left); a stop of a finished or unknown id is ignored. */
typedef struct stopper {
  at_generator *g;
  uint64_t id;
  int at;          /* ask at this token */
  bool then_cancel;
  got out;
} stopper;

static bool stop_on_token(void *user, int32_t tok, int n) {
  (void)tok;
  stopper *s = user;
  if (n == s->at) {
    at_gen_stop(s->g, s->id);
    if (s->then_cancel) at_gen_cancel(s->g, s->id);
  }
  return false;
}

static void stop_on_done(void *user, const at_gen_result *r) {
  stopper *s = user;
  on_done(&s->out, r);
}

static void test_stop_from_outside(void **state) {
  (void)state;
  at_lm *lm;
  at_gen_params gp = at_gen_default_params();
  at_generator *g = open_lane("int8", &gp, &lm);
  int32_t ids[4] = {1, 2, 3, 4};
  for (int k = 0; k < 2; k++) {
    stopper s = {.g = g, .at = 3, .then_cancel = k == 1};
    at_gen_stats before, after;
    at_gen_stats_get(g, &before);
    at_gen_request r = {.prompt = ids, .n_prompt = 4, .max_tokens = 100, .eos_id = -1,
                        .sample = at_sample_default_params(), .on_token = stop_on_token,
                        .on_done = stop_on_done, .user = &s};
    g_remaining = 1;
    /* the id is written before the scheduler can take the request: submit
     * holds the lane's lock until it returns, and on_token runs later */
    assert_int_equal(at_gen_submit(g, &r, &s.id), AT_OK);
    wait_all();
    for (int tries = 0; tries < 1000; tries++) {
      at_gen_stats_get(g, &after);
      if (after.finished == before.finished + 1) break;
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
    assert_true(s.out.done);
    assert_int_equal(s.out.finish, k == 0 ? AT_GEN_STOP : AT_GEN_CANCELLED);
    assert_true(s.out.n >= 3 && s.out.n <= 5); /* the next turn takes it */
    assert_int_equal(after.cancelled, before.cancelled + (k == 1));
  }
  at_gen_stop(g, 999999); /* unknown: ignored */
  at_gen_destroy(g);
  at_lm_close(lm);
}

/* A lane just created publishes the load its calibration measured: a
 * forecast made before its first request prices real steps, not zero (a
 * zero forecast admits everything). */
static void test_fresh_lane_forecasts(void **state) {
  (void)state;
  at_lm *lm;
  at_gen_params gp = at_gen_default_params();
  at_generator *g = open_lane("int8", &gp, &lm);
  at_gen_load l;
  at_gen_load_get(g, &l);
  assert_true(l.step_fitted);
  assert_true(l.tpot_s > 0);
  assert_true(l.prefill_a_s + l.prefill_b_s * gp.chunk_tokens > 0);
  at_gen_forecast f = at_gen_forecast_for(&l, &gp, 20, 1);
  assert_true(f.ttft_s > 0 && f.tpot_s > 0);
  at_gen_destroy(g);
  at_lm_close(lm);
}

/* Two lanes (fp32 and int8) taking turns on the same cores through one
 * at_gen_turns, all prompts submitted to both at once: each lane's greedy
 * tokens equal its own variant's reference (the serial path), and both
 * lanes ran. */
static void test_lanes_take_turns(void **state) {
  (void)state;
  static const char *const variants[2] = {"fp32", "int8"};
  enum { MAXT = 24 };
  at_gen_turns *turns = NULL;
  assert_int_equal(at_gen_turns_create(&turns), AT_OK);
  at_lm *lm[2] = {NULL, NULL};
  at_generator *g[2] = {NULL, NULL};
  prompt p[32];
  int np = 0;
  int32_t (*want)[2][256] = calloc(32, sizeof *want);
  int (*n_want)[2] = calloc(32, sizeof *n_want);
  for (int v = 0; v < 2; v++) {
    assert_int_equal(at_lm_open(model_dir(), variants[v], NULL, NULL, &lm[v]), AT_OK);
    if (v == 0) np = make_prompts(lm[0], p, 32);
    for (int i = 0; i < np; i++)
      n_want[i][v] = reference_greedy(lm[v]->dec, &p[i], MAXT, lm[v]->eos_id, want[i][v]);
    at_gen_params gp = at_gen_default_params();
    /* int8 quantises activations per tensor (the whole batch, the whole
     * chunk), so only one sequence per step and a whole prompt per chunk
     * give the reference's numbers; fp32 batches and chunks exactly */
    gp.max_batch = v == 0 ? 4 : 1;
    gp.chunk_tokens = v == 0 ? 16 : 256;
    gp.turns = turns;
    assert_int_equal(at_gen_create(at_lm_take_decoder(lm[v]), &gp, &g[v]), AT_OK);
  }
  got *res = calloc((size_t)np * 2, sizeof *res);
  g_remaining = np * 2;
  for (int i = 0; i < np; i++)
    for (int v = 0; v < 2; v++) {
      at_gen_request r = {.prompt = p[i].ids, .n_prompt = p[i].n, .max_tokens = MAXT,
                          .sample = at_sample_default_params(), .eos_id = lm[v]->eos_id,
                          .on_done = on_done, .user = &res[2 * i + v]};
      assert_int_equal(at_gen_submit(g[v], &r, NULL), AT_OK);
    }
  wait_all();
  int mismatches = 0, differ = 0;
  for (int i = 0; i < np; i++)
    for (int v = 0; v < 2; v++) {
      const got *o = &res[2 * i + v];
      assert_true(o->done);
      if (o->n != n_want[i][v] || memcmp(o->tok, want[i][v], (size_t)o->n * 4) != 0) {
        print_message("prompt %d, %s lane: differs from its reference\n", i, variants[v]);
        mismatches++;
      }
      if (v == 1) differ += o->n != res[2 * i].n || memcmp(o->tok, res[2 * i].tok, (size_t)o->n * 4);
    }
  assert_int_equal(mismatches, 0);
  print_message("%d of %d prompts: fp32 and int8 greedy tokens differ\n", differ, np);
  for (int v = 0; v < 2; v++) {
    at_gen_stats st;
    at_gen_stats_get(g[v], &st);
    assert_true(st.decode_steps > 0);
    at_gen_destroy(g[v]);
    at_lm_close(lm[v]);
  }
  at_gen_turns_destroy(turns);
  for (int i = 0; i < np; i++) free(p[i].ids);
  free(want);
  free(n_want);
  free(res);
}

/* The published load never loses a request between its submit and its
 * end: polled without pause while bursts are submitted, sequences (with
 * what waits to be taken) is at least submitted - finished, read around it.
 * Before 2026-12-03 the scheduler took the incoming list at the start of a
 * turn and published only at its end, so for a whole turn a forecast saw a
 * lane without them. */
typedef struct poller {
  at_generator *g;
  atomic_bool stop;
  long polls, lost;
} poller;

static void *poll_load(void *arg) {
  poller *p = arg;
  while (!atomic_load(&p->stop)) {
    at_gen_stats a, b;
    at_gen_load l;
    at_gen_stats_get(p->g, &a);
    at_gen_load_get(p->g, &l);
    at_gen_stats_get(p->g, &b);
    p->polls++;
    if ((long long)l.sequences < (long long)a.submitted - (long long)b.finished) p->lost++;
  }
  return NULL;
}

static void test_load_keeps_taken(void **state) {
  (void)state;
  at_lm *lm;
  at_gen_params gp = at_gen_default_params();
  gp.chunk_tokens = 8; /* many prefill turns */
  at_generator *g = open_lane("int8", &gp, &lm);
  poller p = {.g = g};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, poll_load, &p), 0);
  int32_t ids[40];
  for (int i = 0; i < 40; i++) ids[i] = 10 + i;
  enum { BURSTS = 12, PER = 8 };
  static got res[BURSTS * PER];
  for (int b = 0; b < BURSTS; b++) {
    g_remaining = PER;
    for (int k = 0; k < PER; k++) {
      at_gen_request r = {.prompt = ids, .n_prompt = 40, .max_tokens = 4, .eos_id = -1,
                          .sample = at_sample_default_params(), .on_done = on_done,
                          .user = &res[b * PER + k]};
      assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
    }
    wait_all();
  }
  atomic_store(&p.stop, true);
  pthread_join(th, NULL);
  print_message("%ld polls, %ld saw fewer sequences than submitted - finished\n", p.polls, p.lost);
  assert_true(p.polls > 100);
  assert_int_equal(p.lost, 0);
  at_gen_destroy(g);
  at_lm_close(lm);
}

/* Priority classes in the lane (issue 41): one sequence runs at a time;
 * six normal requests, then two high and two low, submitted together.
 * The high ones are admitted ahead of every normal one still waiting, the
 * low ones after all the normal ones. And the load a newcomer of each
 * class sees leaves out the waiting sequences of lower classes. */
static void test_priority_order(void **state) {
  (void)state;
  at_lm *lm;
  at_gen_params gp = at_gen_default_params();
  gp.max_batch = 1;
  at_generator *g = open_lane("int8", &gp, &lm);
  int32_t ids[12];
  for (int i = 0; i < 12; i++) ids[i] = 10 + i;
  static got res[10];
  memset(res, 0, sizeof res);
  static const int prio[10] = {0, 0, 0, 0, 0, 0, 1, 1, -1, -1};
  g_remaining = 10;
  for (int k = 0; k < 10; k++) {
    at_gen_request r = {.prompt = ids, .n_prompt = 12, .max_tokens = 8, .eos_id = -1,
                        .sample = at_sample_default_params(), .priority = prio[k],
                        .on_done = on_done, .user = &res[k]};
    assert_int_equal(at_gen_submit(g, &r, NULL), AT_OK);
    if (k == 7) { /* 8 in, 2 high among them: what each class would wait behind */
      at_gen_load l;
      at_gen_load_get(g, &l);
      at_gen_load hi = at_gen_load_for_class(&l, 1), lo = at_gen_load_for_class(&l, -1);
      assert_true(hi.sequences <= l.sequences && lo.sequences == l.sequences);
      assert_int_equal(l.waiting_by_class[0], 0);
      assert_true(l.waiting_by_class[2] <= 2);
      assert_int_equal(hi.sequences, l.sequences - l.waiting_by_class[1]);
      assert_true(hi.prefill_chunks == l.prefill_chunks - l.waiting_chunks_by_class[1]);
    }
  }
  wait_all();
  uint64_t first_high = res[6].admitted_ns < res[7].admitted_ns ? res[6].admitted_ns : res[7].admitted_ns;
  uint64_t last_high = res[6].admitted_ns > res[7].admitted_ns ? res[6].admitted_ns : res[7].admitted_ns;
  int normal_before = 0;
  uint64_t last_normal = 0;
  for (int k = 0; k < 6; k++) {
    assert_int_equal(res[k].finish, AT_GEN_LENGTH);
    if (res[k].admitted_ns < first_high) normal_before++;
    if (res[k].admitted_ns > last_normal) last_normal = res[k].admitted_ns;
  }
  print_message("normal admitted before the first high: %d of 6\n", normal_before);
  assert_true(normal_before <= 2);   /* those the lane took before the high ones came */
  assert_true(last_high < last_normal);
  for (int k = 8; k < 10; k++) assert_true(res[k].admitted_ns > last_normal);
  at_gen_destroy(g);
  at_lm_close(lm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_batched), cmocka_unit_test(test_identity_preempted),
      cmocka_unit_test(test_identity_prefix_cache),
      cmocka_unit_test(test_seeded_sampling),  cmocka_unit_test(test_nll_matches_steps),
      cmocka_unit_test(test_refusals),         cmocka_unit_test(test_stop_from_outside),
      cmocka_unit_test(test_fresh_lane_forecasts), cmocka_unit_test(test_lanes_take_turns),
      cmocka_unit_test(test_load_keeps_taken), cmocka_unit_test(test_priority_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
