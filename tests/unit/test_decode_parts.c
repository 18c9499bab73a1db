/* tests/unit/test_decode_parts.c — the decoder lane's model-free parts:
 * block admission arithmetic, the KV arena (all-or-nothing growth, gather /
 * scatter round trips across block edges), the eviction order at its
 * boundaries, the online linear fit, the sampler, log-probabilities and
 * repetition penalties against a serial double-precision reference, and the decode-step batch
 * choice (every sequence is stepped within a bounded number of steps). */
#include <math.h>
#include <stdlib.h>

#include "anytime/anytime.h"
#include "testutil.h"

static void test_blocks_needed(void **state) {
  (void)state;
  assert_int_equal(at_kv_blocks_needed(0, 1.0, 16), 0);
  assert_int_equal(at_kv_blocks_needed(1, 1.0, 16), 1);
  assert_int_equal(at_kv_blocks_needed(16, 1.0, 16), 1);
  assert_int_equal(at_kv_blocks_needed(17, 1.0, 16), 2);
  assert_int_equal(at_kv_blocks_needed(32, 1.0, 16), 2);
  assert_int_equal(at_kv_blocks_needed(32, 1.25, 16), 3); /* 40 positions */
  assert_int_equal(at_kv_blocks_needed(100, 0.5, 16), 4); /* 50 -> 4 blocks */
  assert_int_equal(at_kv_blocks_needed(1, 0.01, 16), 1);  /* never 0 for t > 0 */
  assert_int_equal(at_kv_blocks_needed(-1, 1.0, 16), -1);
  assert_int_equal(at_kv_blocks_needed(10, 0.0, 16), -1);
  assert_int_equal(at_kv_blocks_needed(10, NAN, 16), -1);
  assert_int_equal(at_kv_blocks_needed(10, 1.0, 0), -1);
  /* against the formula for many (t, block) pairs */
  for (int bt = 1; bt <= 33; bt += 4)
    for (int t = 1; t <= 300; t += 7) {
      int want = (t + bt - 1) / bt;
      assert_int_equal(at_kv_blocks_needed(t, 1.0, bt), want);
    }
}

static void test_arena_grow_release(void **state) {
  (void)state;
  at_kv_layout l = {.layers = 2, .heads = 3, .head_dim = 4, .block_tokens = 5};
  at_kv_arena *a = NULL;
  assert_int_equal(at_kv_arena_create(&l, 10, &a), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 10);
  at_kv_seq s1 = {0}, s2 = {0};
  assert_int_equal(at_kv_seq_grow(a, &s1, 6), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 4);
  /* all or nothing: 5 > 4 free takes nothing */
  assert_int_equal(at_kv_seq_grow(a, &s2, 5), AT_ERR_LIMIT);
  assert_int_equal(s2.n_blocks, 0);
  assert_int_equal(at_kv_arena_free_blocks(a), 4);
  assert_int_equal(at_kv_seq_grow(a, &s2, 4), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 0);
  /* blocks are distinct */
  int seen[10] = {0};
  for (int i = 0; i < s1.n_blocks; i++) seen[s1.blocks[i]]++;
  for (int i = 0; i < s2.n_blocks; i++) seen[s2.blocks[i]]++;
  for (int i = 0; i < 10; i++) assert_int_equal(seen[i], 1);
  at_kv_seq_release(a, &s1);
  assert_int_equal(at_kv_arena_free_blocks(a), 6);
  assert_int_equal(s1.n_blocks, 0);
  at_kv_seq_release(a, &s2);
  assert_int_equal(at_kv_arena_free_blocks(a), 10);
  at_kv_seq_free(&s1);
  at_kv_seq_free(&s2);
  at_kv_arena_destroy(a);
  /* bad layouts */
  at_kv_layout bad = l;
  bad.heads = 0;
  assert_int_equal(at_kv_arena_create(&bad, 4, &a), AT_ERR_INVALID_ARG);
  assert_int_equal(at_kv_arena_create(&l, 0, &a), AT_ERR_INVALID_ARG);
  at_kv_layout huge = {.layers = 64, .heads = 64, .head_dim = 256, .block_tokens = 1024};
  assert_int_equal(at_kv_arena_create(&huge, 1000, &a), AT_ERR_LIMIT);
}

/* Scatter positions in uneven pieces across block edges, gather into a
 * larger padded buffer, and compare with the dense source. */
static void test_gather_scatter(void **state) {
  (void)state;
  at_kv_layout l = {.layers = 2, .heads = 3, .head_dim = 4, .block_tokens = 5};
  int H = 3, D = 4, T = 23, P = 27;
  at_kv_arena *a = NULL;
  assert_int_equal(at_kv_arena_create(&l, 12, &a), AT_OK);
  at_kv_seq other = {0}, s = {0};
  assert_int_equal(at_kv_seq_grow(a, &other, 1), AT_OK); /* so s's blocks are not 0.. */
  assert_int_equal(at_kv_seq_grow(a, &s, at_kv_blocks_needed(T, 1.0, 5)), AT_OK);
  float *src[2][2];
  for (int li = 0; li < 2; li++)
    for (int kv = 0; kv < 2; kv++) {
      src[li][kv] = malloc(sizeof(float) * H * T * D);
      for (int i = 0; i < H * T * D; i++) src[li][kv][i] = (float)(li * 100000 + kv * 10000 + i);
    }
  int pieces[] = {3, 1, 7, 5, 2, 5};
  int from = 0;
  for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
    for (int li = 0; li < 2; li++)
      for (int kv = 0; kv < 2; kv++)
        assert_int_equal(at_kv_scatter(a, &s, li, kv, src[li][kv], T, from, pieces[p]), AT_OK);
    s.len += pieces[p];
    from += pieces[p];
  }
  assert_int_equal(s.len, T);
  /* one more position does not fit the 5 blocks (25 positions) ... */
  assert_int_equal(at_kv_scatter(a, &s, 0, 0, src[0][0], T, 0, 3), AT_ERR_LIMIT);
  float *dst = malloc(sizeof(float) * H * P * D);
  for (int li = 0; li < 2; li++)
    for (int kv = 0; kv < 2; kv++) {
      for (int i = 0; i < H * P * D; i++) dst[i] = -1;
      at_kv_gather(a, &s, li, kv, dst, P);
      for (int h = 0; h < H; h++)
        for (int t = 0; t < P; t++)
          for (int d = 0; d < D; d++) {
            float got = dst[((size_t)h * P + t) * D + d];
            float want = t < T ? src[li][kv][((size_t)h * T + t) * D + d] : 0.0f;
            assert_true(got == want);
          }
    }
  free(dst);
  for (int li = 0; li < 2; li++)
    for (int kv = 0; kv < 2; kv++) free(src[li][kv]);
  at_kv_seq_release(a, &s);
  at_kv_seq_release(a, &other);
  at_kv_seq_free(&s);
  at_kv_seq_free(&other);
  at_kv_arena_destroy(a);
}

static void test_evict_classes(void **state) {
  (void)state;
  at_evict_cand c = {.id = 1, .slack_s = -0.001, .recompute_s = 0.5, .blocks = 1};
  assert_int_equal(at_evict_classify(&c), AT_EVICT_DOOMED);
  c.slack_s = 0.0; /* not doomed: exactly on time */
  c.recompute_s = 0.0;
  assert_int_equal(at_evict_classify(&c), AT_EVICT_SURVIVES);
  c.slack_s = 0.5;
  c.recompute_s = 0.5; /* survives with zero to spare */
  assert_int_equal(at_evict_classify(&c), AT_EVICT_SURVIVES);
  c.recompute_s = 0.5000001;
  assert_int_equal(at_evict_classify(&c), AT_EVICT_WITHHELD);
}

static void test_evict_order(void **state) {
  (void)state;
  at_evict_cand c[] = {
      {.id = 10, .slack_s = 1.0, .recompute_s = 0.2, .blocks = 2},   /* survives, 0.8 left */
      {.id = 11, .slack_s = -0.5, .recompute_s = 0.1, .blocks = 1},  /* doomed */
      {.id = 12, .slack_s = 0.3, .recompute_s = 0.4, .blocks = 5},   /* withheld */
      {.id = 13, .slack_s = 2.0, .recompute_s = 0.1, .blocks = 1},   /* survives, 1.9 left */
      {.id = 14, .slack_s = -2.0, .recompute_s = 9.0, .blocks = 3},  /* doomed, worse */
      {.id = 15, .slack_s = 1.0, .recompute_s = 0.2, .blocks = 2},   /* tie with 10 */
  };
  int order[6];
  size_t n = at_evict_order(c, 6, order);
  assert_int_equal(n, 5);
  int want[] = {14, 11, 13, 10, 15};
  for (size_t i = 0; i < n; i++) assert_int_equal(order[i], want[i]);

  int v[6];
  /* 1 free, need 4: 14 (3 blocks) suffices */
  assert_int_equal(at_evict_plan(c, 6, 1, 4, v), 1);
  assert_int_equal(v[0], 14);
  /* need 6: 14 + 11 + 13 = 5 more */
  assert_int_equal(at_evict_plan(c, 6, 1, 6, v), 3);
  assert_int_equal(v[2], 13);
  /* already enough free: nothing */
  assert_int_equal(at_evict_plan(c, 6, 4, 4, v), 0);
  /* evictable total is 3+1+1+2+2 = 9 (the withheld 5 blocks never count):
   * 1 + 9 = 10 is reachable, 11 is not -> evict nobody */
  assert_int_equal(at_evict_plan(c, 6, 1, 10, v), 5);
  assert_int_equal(at_evict_plan(c, 6, 1, 11, v), 0);
  /* all withheld -> nothing */
  at_evict_cand w[] = {{.id = 1, .slack_s = 0.1, .recompute_s = 0.2, .blocks = 9}};
  assert_int_equal(at_evict_order(w, 1, order), 0);
  assert_int_equal(at_evict_plan(w, 1, 0, 1, v), 0);
}

static void test_linfit(void **state) {
  (void)state;
  at_linfit f = {0};
  double a, b;
  assert_false(at_linfit_get(&f, &a, &b));
  at_linfit_add(&f, 4, 8);
  assert_true(at_linfit_get(&f, &a, &b)); /* one point: through the origin */
  assert_true(fabs(a) < 1e-12 && fabs(b - 2) < 1e-12);
  for (int x = 0; x < 50; x++) at_linfit_add(&f, x, 3.0 + 0.25 * x);
  f = (at_linfit){0};
  for (int x = 0; x < 50; x++) at_linfit_add(&f, x, 3.0 + 0.25 * x);
  assert_true(at_linfit_get(&f, &a, &b));
  assert_true(fabs(a - 3.0) < 1e-9);
  assert_true(fabs(b - 0.25) < 1e-9);
}

static void test_sampler(void **state) {
  (void)state;
  enum { V = 50 };
  float logits[V], scratch[AT_SAMPLE_SCRATCH_PER_VOCAB * V];
  for (int i = 0; i < V; i++) logits[i] = (float)((i * 37) % V) / 10.0f;
  int best = 0;
  for (int i = 1; i < V; i++)
    if (logits[i] > logits[best]) best = i;
  at_rng r;
  at_rng_seed(&r, 1);
  at_sample_params p = at_sample_default_params();
  assert_int_equal(at_sample(logits, V, &p, &r, scratch), best); /* greedy */
  p.temperature = 1.0f;
  p.top_k = 1;
  assert_int_equal(at_sample(logits, V, &p, &r, scratch), best); /* top-1 == greedy */
  /* ties go to the lowest id when greedy */
  float tie[4] = {0, 5, 5, 1};
  p = at_sample_default_params();
  assert_int_equal(at_sample(tie, 4, &p, &r, scratch), 1);
  /* same seed, same sequence; top-k keeps to the k likeliest */
  p.temperature = 0.8f;
  p.top_k = 5;
  at_rng r1, r2;
  at_rng_seed(&r1, 42);
  at_rng_seed(&r2, 42);
  int counts[V] = {0};
  for (int i = 0; i < 2000; i++) {
    int a = at_sample(logits, V, &p, &r1, scratch);
    int b = at_sample(logits, V, &p, &r2, scratch);
    assert_int_equal(a, b);
    counts[a]++;
  }
  int kept = 0;
  for (int i = 0; i < V; i++) kept += counts[i] > 0;
  assert_true(kept <= 5 && kept >= 2);
  /* top-p tiny -> only the top token */
  p.top_k = 0;
  p.top_p = 1e-6f;
  for (int i = 0; i < 100; i++) assert_int_equal(at_sample(logits, V, &p, &r1, scratch), best);
  /* with a dominant logit and a high temperature the others appear */
  p.top_p = 1.0f;
  p.temperature = 50.0f;
  memset(counts, 0, sizeof counts);
  for (int i = 0; i < 2000; i++) counts[at_sample(logits, V, &p, &r1, scratch)]++;
  kept = 0;
  for (int i = 0; i < V; i++) kept += counts[i] > 0;
  assert_true(kept > 40);
  /* uniform stays in [0, 1) */
  for (int i = 0; i < 10000; i++) {
    double u = at_rng_uniform(&r1);
    assert_true(u >= 0 && u < 1);
  }
}

/* The sampling rule written a second way, as the reference the sampler's
 * O(n) order must reproduce exactly (same draws, same tokens, for every
 * seed and setting): a comparison sort of the whole vocabulary (how the
 * sampler itself did it until 2026-12-03), then the cut and the draw on
 * cumulative sums. */
static const float *ref_probs;
static int ref_cmp(const void *a, const void *b) {
  int ia = *(const int *)a, ib = *(const int *)b;
  if (ref_probs[ia] != ref_probs[ib]) return ref_probs[ia] > ref_probs[ib] ? -1 : 1;
  return ia - ib;
}

static int32_t ref_sample(const float *logits, int vocab, const at_sample_params *p, at_rng *rng) {
  int best = 0;
  for (int i = 1; i < vocab; i++)
    if (logits[i] > logits[best]) best = i;
  if (!(p->temperature > 0) || p->top_k == 1) return best;
  float *prob = malloc((size_t)vocab * sizeof *prob);
  int *idx = malloc((size_t)vocab * sizeof *idx);
  double sum = 0;
  for (int i = 0; i < vocab; i++) {
    prob[i] = expf((logits[i] - logits[best]) / p->temperature);
    sum += prob[i];
  }
  for (int i = 0; i < vocab; i++) prob[i] = (float)(prob[i] / sum), idx[i] = i;
  ref_probs = prob;
  qsort(idx, (size_t)vocab, sizeof *idx, ref_cmp);
  /* the cut and the draw on the cumulative sums of that order: the top-p
   * cut ends at the first sum reaching top_p, the draw is the first sum
   * past u (a binary search) */
  double *cum = malloc((size_t)vocab * sizeof *cum);
  double run = 0;
  for (int i = 0; i < vocab; i++) cum[i] = run += prob[idx[i]];
  int keep = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
  if (p->top_p > 0 && p->top_p < 1)
    for (int i = 0; i < keep; i++)
      if (cum[i] >= p->top_p) {
        keep = i + 1;
        break;
      }
  double u = at_rng_uniform(rng) * cum[keep - 1];
  int lo = 0, hi = keep - 1; /* first i in [0, keep) with cum[i] > u, else keep - 1 */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cum[mid] > u) hi = mid;
    else lo = mid + 1;
  }
  int32_t out = idx[lo];
  free(cum);
  free(prob);
  free(idx);
  return out;
}

static void test_sampler_matches_reference(void **state) {
  (void)state;
  enum { V = 4096 };
  float *logits = malloc(V * sizeof *logits);
  float *scratch = malloc((size_t)AT_SAMPLE_SCRATCH_PER_VOCAB * V * sizeof *scratch);
  assert_non_null(logits);
  assert_non_null(scratch);
  at_rng gen;
  at_rng_seed(&gen, 2026);
  const at_sample_params settings[] = {
      {.temperature = 0.7f, .top_k = 0, .top_p = 1.0f},  {.temperature = 1.0f, .top_k = 40, .top_p = 1.0f},
      {.temperature = 0.9f, .top_k = 0, .top_p = 0.9f},  {.temperature = 0.9f, .top_k = 40, .top_p = 0.95f},
      {.temperature = 50.0f, .top_k = 0, .top_p = 1.0f}, {.temperature = 0.05f, .top_k = 0, .top_p = 1.0f},
  };
  int compared = 0;
  for (int trial = 0; trial < 24; trial++) {
    /* logits like a language model's (spread over ~20), with runs of exact
     * ties (the same logit for many ids) and, with a low temperature,
     * probabilities that underflow to 0 — where the order's tie rule shows */
    int n = trial % 3 == 0 ? 37 : V;
    for (int i = 0; i < n; i++) {
      double u = at_rng_uniform(&gen);
      logits[i] = trial % 2 ? (float)(20 * u - 10) : (float)((int)(8 * u)) - 4.0f;
    }
    for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
      at_rng a, b;
      at_rng_seed(&a, (uint64_t)(trial * 31 + (int)k));
      at_rng_seed(&b, (uint64_t)(trial * 31 + (int)k));
      for (int draw = 0; draw < 20; draw++) {
        int32_t want = ref_sample(logits, n, &settings[k], &a);
        int32_t got = at_sample(logits, n, &settings[k], &b, scratch);
        if (want != got)
          print_message("trial %d setting %zu draw %d: %d vs reference %d\n", trial, k, draw, got,
                        want);
        assert_int_equal(got, want);
        compared++;
      }
    }
  }
  assert_int_equal(compared, 24 * 6 * 20);
  free(logits);
  free(scratch);
}

/* Simulate decode steps with the batch choice: every sequence must be
 * stepped within ceil(n / max_batch) steps (round-robin) or n steps
 * (bucketing), whatever the lengths. */
static void simulate(bool bucketing) {
  enum { N = 23 };
  for (int maxb = 1; maxb <= 9; maxb += 2) {
    int len[N], pick[N];
    uint64_t last[N];
    for (int i = 0; i < N; i++) {
      len[i] = (i * 53) % 200; /* scattered lengths */
      last[i] = 0;
    }
    int bound = bucketing ? N : (N + maxb - 1) / maxb;
    for (uint64_t step = 1; step <= 400; step++) {
      int m = at_gen_pick_batch(len, last, N, maxb, bucketing, pick);
      assert_int_equal(m, maxb);
      for (int j = 0; j < m; j++) {
        for (int k = 0; k < j; k++) assert_int_not_equal(pick[j], pick[k]);
        last[pick[j]] = step;
        len[pick[j]]++;
      }
      for (int i = 0; i < N; i++) assert_true(step - last[i] < (uint64_t)bound);
    }
  }
}

static void test_pick_round_robin(void **state) {
  (void)state;
  simulate(false);
  int len[3] = {5, 6, 7}, pick[3];
  uint64_t last[3] = {9, 9, 9};
  assert_int_equal(at_gen_pick_batch(len, last, 3, 8, false, pick), 3);
  assert_int_equal(at_gen_pick_batch(len, last, 0, 8, false, pick), 0);
}

static void test_pick_bucketing(void **state) {
  (void)state;
  simulate(true);
  /* the anchor is the longest-waiting; the rest are closest in length */
  int len[5] = {100, 10, 95, 12, 200}, pick[5];
  uint64_t last[5] = {5, 1, 5, 6, 4};
  assert_int_equal(at_gen_pick_batch(len, last, 5, 2, true, pick), 2);
  assert_int_equal(pick[0], 1);
  assert_int_equal(pick[1], 3);
  assert_int_equal(at_gen_pick_batch(len, last, 5, 2, false, pick), 2);
  assert_int_equal(pick[0], 1);
  assert_int_equal(pick[1], 4);
}

/* Forks share full blocks and copy a partial one; data reads back the same
 * through either sequence, whoever releases first; the free count moves
 * only by blocks no one holds. */
static void gather_eq(at_kv_arena *a, const at_kv_seq *x, const at_kv_seq *y, int upto) {
  enum { H = 2, D = 3, P = 40 };
  float bx[H * P * D], by[H * P * D];
  for (int li = 0; li < 2; li++)
    for (int kv = 0; kv < 2; kv++) {
      at_kv_gather(a, x, li, kv, bx, P);
      at_kv_gather(a, y, li, kv, by, P);
      for (int h = 0; h < H; h++)
        for (int t = 0; t < upto; t++)
          for (int d = 0; d < D; d++)
            assert_true(bx[(h * P + t) * D + d] == by[(h * P + t) * D + d]);
    }
}

/* The generator's cost model and block forecast (gen_policy.c). */
static void test_gen_policy(void **state) {
  (void)state;
  at_linfit f = {0};
  /* empty fit: 1 ms per chunk; 0 tokens cost nothing */
  assert_true(fabs(at_gen_recompute_s(&f, 64, 100) - 2e-3) < 1e-12);
  assert_true(at_gen_recompute_s(&f, 64, 0) == 0);
  /* a chunk of x tokens costs 1 ms + 0.1 ms per token: 150 tokens in chunks
   * of 64 = two full chunks (7.4 ms each) and one of 22 (3.2 ms) */
  at_linfit_add(&f, 10, 2e-3);
  at_linfit_add(&f, 50, 6e-3);
  assert_true(fabs(at_gen_recompute_s(&f, 64, 150) - (2 * 7.4e-3 + 3.2e-3)) < 1e-9);
  /* finishing: rebuild 22 positions, then 10 tokens at 5 ms */
  assert_true(fabs(at_gen_remaining_s(&f, 64, 22, 10, 5e-3) - (3.2e-3 + 50e-3)) < 1e-9);
  assert_true(fabs(at_gen_remaining_s(&f, 64, -3, -1, 5e-3)) < 1e-12);
  /* blocks: 2 free, 9 needed; finishers at 0.3 s (4 blocks), 0.1 s (2),
   * 0.2 s (5): the soonest first, so 2 + 2 + 5 = 9 at 0.2 s */
  double t[3] = {0.3, 0.1, 0.2};
  int b[3] = {4, 2, 5};
  assert_true(at_gen_blocks_free_in(t, b, 3, 2, 9) == 0.2);
  assert_int_equal(b[1], -1);
  assert_int_equal(b[2], -1);
  assert_int_equal(b[0], 4);
  int b2[3] = {4, 2, 5};
  assert_true(at_gen_blocks_free_in(t, b2, 3, 9, 9) == 0); /* already free */
  int b3[3] = {4, 2, 5};
  assert_true(isinf(at_gen_blocks_free_in(t, b3, 3, 2, 14))); /* 13 at most */
  /* ties go to the lower index */
  double tt[2] = {0.5, 0.5};
  int bt[2] = {1, 1};
  assert_true(at_gen_blocks_free_in(tt, bt, 2, 0, 1) == 0.5);
  assert_int_equal(bt[0], -1);
  assert_int_equal(bt[1], 1);
}

static void test_arena_fork(void **state) {
  (void)state;
  at_kv_layout l = {.layers = 2, .heads = 2, .head_dim = 3, .block_tokens = 5};
  enum { T = 12 };
  at_kv_arena *a = NULL;
  assert_int_equal(at_kv_arena_create(&l, 8, &a), AT_OK);
  at_kv_seq parent = {0}, child = {0}, twin = {0}, copy = {0};
  assert_int_equal(at_kv_seq_grow(a, &parent, 3), AT_OK); /* 15 positions */
  float src[2 * T * 3];
  for (int i = 0; i < 2 * T * 3; i++) src[i] = (float)i + 0.5f;
  for (int li = 0; li < 2; li++)
    for (int kv = 0; kv < 2; kv++) assert_int_equal(at_kv_scatter(a, &parent, li, kv, src, T, 0, T), AT_OK);
  parent.len = T;
  assert_int_equal(at_kv_arena_free_blocks(a), 5);
  /* 12 positions: 2 full blocks shared, the third (2 positions) copied */
  assert_int_equal(at_kv_seq_fork(a, &parent, &child, T), AT_OK);
  assert_int_equal(child.len, T);
  assert_int_equal(child.n_blocks, 3);
  assert_int_equal(at_kv_arena_free_blocks(a), 4);
  assert_int_equal(at_kv_seq_shared_blocks(a, &child), 2);
  assert_int_not_equal(child.blocks[2], parent.blocks[2]);
  gather_eq(a, &parent, &child, T);
  /* 10 positions: whole blocks only, nothing copied */
  assert_int_equal(at_kv_seq_fork(a, &parent, &twin, 10), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 4);
  assert_int_equal(twin.n_blocks, 2);
  gather_eq(a, &parent, &twin, 10);
  /* the child writes its own positions after the fork: the parent is untouched */
  float mine[2 * 1 * 3] = {-1, -2, -3, -4, -5, -6};
  assert_int_equal(at_kv_scatter(a, &child, 0, 0, mine, 1, 0, 1), AT_OK);
  float bp[2 * 40 * 3];
  at_kv_gather(a, &parent, 0, 0, bp, 40);
  assert_true(bp[(0 * 40 + T) * 3] == 0.0f); /* beyond the parent's len: zero-filled */
  at_kv_gather(a, &parent, 0, 0, bp, T);
  for (int t = 0; t < T; t++) assert_true(bp[t * 3] == src[t * 3]);
  /* the parent leaves first: only its own third block returns */
  at_kv_seq_release(a, &parent);
  assert_int_equal(at_kv_arena_free_blocks(a), 5);
  assert_int_equal(at_kv_seq_shared_blocks(a, &child), 2); /* child and twin */
  float bc[2 * 40 * 3];
  at_kv_gather(a, &child, 1, 1, bc, T);
  for (int h = 0; h < 2; h++)
    for (int t = 0; t < T; t++) assert_true(bc[(h * T + t) * 3 + 2] == src[(h * T + t) * 3 + 2]);
  at_kv_seq_release(a, &twin);
  assert_int_equal(at_kv_seq_shared_blocks(a, &child), 0);
  assert_int_equal(at_kv_arena_free_blocks(a), 5);
  at_kv_seq_release(a, &child);
  assert_int_equal(at_kv_arena_free_blocks(a), 8);
  /* refusals: a partial copy with no free block takes nothing; bad arguments */
  assert_int_equal(at_kv_seq_grow(a, &parent, 8), AT_OK);
  parent.len = 7;
  assert_int_equal(at_kv_seq_fork(a, &parent, &copy, 7), AT_ERR_LIMIT);
  assert_int_equal(copy.n_blocks, 0);
  assert_int_equal(at_kv_seq_fork(a, &parent, &copy, 8), AT_ERR_INVALID_ARG); /* > len */
  assert_int_equal(at_kv_seq_fork(a, &parent, &copy, 5), AT_OK);              /* whole block */
  assert_int_equal(at_kv_seq_fork(a, &parent, &copy, 5), AT_ERR_INVALID_ARG); /* child holds blocks */
  at_kv_seq_release(a, &copy);
  at_kv_seq_release(a, &parent);
  assert_int_equal(at_kv_arena_free_blocks(a), 8);
  at_kv_seq_free(&parent);
  at_kv_seq_free(&child);
  at_kv_seq_free(&twin);
  at_kv_seq_free(&copy);
  at_kv_arena_destroy(a);
}

/* Prefix cache: published full blocks are found by their tokens only
 * (a different block, or the same block after a different prefix, is a
 * miss), attached ones replace a sequence's own, unheld ones count as free
 * and are handed out (tail of a prefix first) only when the free list is
 * empty, after which they are no longer found. */
static void test_arena_prefix(void **state) {
  (void)state;
  at_kv_layout l = {.layers = 1, .heads = 1, .head_dim = 2, .block_tokens = 4};
  at_kv_arena *a = NULL;
  assert_int_equal(at_kv_arena_create(&l, 6, &a), AT_OK);
  assert_int_equal(at_kv_arena_set_prefix_cache(a, true), AT_OK);
  int32_t tok[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  at_kv_seq s = {0}, t = {0}, u = {0};
  assert_int_equal(at_kv_seq_grow(a, &s, 3), AT_OK);
  float src[12 * 2];
  for (int i = 0; i < 24; i++) src[i] = (float)i;
  assert_int_equal(at_kv_scatter(a, &s, 0, 0, src, 12, 0, 10), AT_OK);
  s.len = 10; /* two full blocks and half of the third */
  at_kv_prefix_publish(a, &s, tok);
  /* t holds fresh blocks; it attaches s's two full blocks in their place */
  assert_int_equal(at_kv_seq_grow(a, &t, 3), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 0);
  assert_int_equal(at_kv_prefix_probe(a, tok, 11), 8);
  assert_int_equal(at_kv_prefix_attach(a, &t, tok, 11), 8);
  assert_int_equal(t.len, 8);
  assert_int_equal(t.blocks[0], s.blocks[0]);
  assert_int_equal(t.blocks[1], s.blocks[1]);
  assert_int_equal(at_kv_arena_free_blocks(a), 2); /* its own two went back */
  assert_int_equal(at_kv_seq_shared_blocks(a, &t), 2);
  /* the same second block after a different first one is not a hit */
  int32_t other[8] = {1, 2, 3, 99, 5, 6, 7, 8};
  assert_int_equal(at_kv_prefix_attach(a, &u, other, 8), 0);
  /* a different second block: only the first is found */
  int32_t half[8] = {1, 2, 3, 4, 5, 6, 7, 99};
  assert_int_equal(at_kv_prefix_attach(a, &u, half, 8), 4);
  assert_int_equal(u.n_blocks, 1);
  at_kv_seq_release(a, &u);
  /* at most n positions are looked at: 7 positions hold one whole block */
  assert_int_equal(at_kv_prefix_attach(a, &u, tok, 7), 4);
  at_kv_seq_release(a, &u);
  at_kv_prefix_counts pc;
  at_kv_prefix_stats(a, &pc);
  assert_int_equal(pc.hit_tokens, 16);
  assert_int_equal(pc.query_tokens, 11 + 8 + 8 + 7);
  assert_int_equal(pc.shared_blocks, 2);
  /* switching while blocks are held is refused */
  assert_int_equal(at_kv_arena_set_prefix_cache(a, false), AT_ERR_INVALID_ARG);
  /* everyone leaves: the two published blocks stay cached, counted free */
  at_kv_seq_release(a, &s);
  at_kv_seq_release(a, &t);
  assert_int_equal(at_kv_arena_free_blocks(a), 6);
  at_kv_prefix_stats(a, &pc);
  assert_int_equal(pc.cached_blocks, 2);
  assert_int_equal(at_kv_prefix_attach(a, &u, tok, 12), 8); /* still there */
  at_kv_seq_release(a, &u);
  /* five blocks from the free list (4) and the cached tail (block 2 of
   * the prefix): its head is still found, its tail no longer */
  assert_int_equal(at_kv_seq_grow(a, &s, 5), AT_OK);
  at_kv_prefix_stats(a, &pc);
  assert_int_equal(pc.cached_blocks, 1);
  assert_int_equal(at_kv_prefix_attach(a, &u, tok, 12), 4);
  assert_int_equal(at_kv_arena_free_blocks(a), 0);
  assert_int_equal(at_kv_seq_grow(a, &t, 1), AT_ERR_LIMIT);
  at_kv_seq_release(a, &u);
  at_kv_seq_release(a, &s);
  assert_int_equal(at_kv_arena_free_blocks(a), 6);
  assert_int_equal(at_kv_prefix_probe(a, tok, 12), 4); /* the head, still cached */
  /* off: the cached blocks are plain free blocks, nothing is found */
  assert_int_equal(at_kv_arena_set_prefix_cache(a, false), AT_OK);
  assert_int_equal(at_kv_arena_free_blocks(a), 6);
  assert_int_equal(at_kv_prefix_probe(a, tok, 12), 0);
  assert_int_equal(at_kv_seq_grow(a, &s, 6), AT_OK);
  at_kv_seq_release(a, &s);
  at_kv_seq_free(&s);
  at_kv_seq_free(&t);
  at_kv_seq_free(&u);
  at_kv_arena_destroy(a);
}

/* at_logprobs_top against a plain reference: log-softmax in double, a full
 * sort by (logit desc, id asc). */
static void test_logprobs_top(void **state) {
  (void)state;
  enum { V = 257 };
  float logits[V];
  at_rng r;
  at_rng_seed(&r, 7);
  for (int i = 0; i < V; i++) logits[i] = (float)(at_rng_uniform(&r) * 20 - 10);
  logits[3] = logits[200] = 11.5f; /* a tie at the top: id 3 first */
  logits[17] = logits[18] = -2.25f;
  double mx = -1e300, sum = 0;
  for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
  for (int i = 0; i < V; i++) sum += exp(logits[i] - mx);
  double lse_ref = mx + log(sum);
  int order[V];
  for (int i = 0; i < V; i++) order[i] = i;
  for (int i = 1; i < V; i++) /* insertion sort, stable: ties keep id order */
    for (int j = i; j > 0 && logits[order[j]] > logits[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int k = 0; k <= AT_MAX_TOP_LOGPROBS + 3; k++) {
    at_token_logprob lp;
    double lse = at_logprobs_top(logits, V, k, &lp);
    assert_true(fabs(lse - lse_ref) < 1e-9);
    int want = k > AT_MAX_TOP_LOGPROBS ? AT_MAX_TOP_LOGPROBS : k;
    assert_int_equal(lp.n_top, want);
    for (int j = 0; j < want; j++) {
      assert_int_equal(lp.top_ids[j], order[j]);
      assert_true(fabs(lp.top_logprobs[j] - (logits[order[j]] - lse_ref)) < 1e-5);
    }
  }
  at_token_logprob lp;
  assert_int_equal(at_logprobs_top(logits, V, 2, &lp) > 0, 1);
  assert_int_equal(lp.top_ids[0], 3);
  assert_int_equal(lp.top_ids[1], 200);
  /* probabilities of the whole vocabulary sum to 1 */
  double total = 0;
  for (int i = 0; i < V; i++) total += exp(logits[i] - lse_ref);
  assert_true(fabs(total - 1) < 1e-9);
  /* a vocabulary smaller than k */
  float two[2] = {0, 0};
  assert_true(fabs(at_logprobs_top(two, 2, 5, &lp) - log(2.0)) < 1e-9);
  assert_int_equal(lp.n_top, 2);
  assert_int_equal(lp.top_ids[0], 0);
}

static void test_penalties(void **state) {
  (void)state;
  float lg[6] = {1, 1, 1, 1, 1, 1};
  int count[6] = {0};
  const int32_t gen[] = {2, 4, 2, 2, -1, 99};
  at_apply_penalties(lg, 6, gen, 6, 0.5f, 0.25f, count);
  const float want[6] = {1, 1, 1 - 0.5f - 0.75f, 1, 1 - 0.5f - 0.25f, 1};
  for (int i = 0; i < 6; i++) {
    assert_true(fabsf(lg[i] - want[i]) < 1e-6f);
    assert_int_equal(count[i], 0); /* left zeroed for the next call */
  }
  at_apply_penalties(lg, 6, gen, 6, 0, 0, count); /* off: nothing changes */
  for (int i = 0; i < 6; i++) assert_true(fabsf(lg[i] - want[i]) < 1e-6f);
  float neg[3] = {0, 0, 0};
  at_apply_penalties(neg, 3, gen, 1, -1.0f, 0, count); /* a negative presence favours id 2 */
  assert_true(neg[2] == 1.0f && neg[0] == 0 && neg[1] == 0);
}

/* The lane's latency forecast, against figures worked by hand from the
 * model in anytime/generate.h, and monotone in the load. */
static void test_forecast(void **state) {
  (void)state;
  at_gen_params p = at_gen_default_params();
  p.chunk_tokens = 64;
  p.max_batch = 4;
  /* the model's step for the load as it is: 3 sequences, 400 positions */
  double now = 0.002 + 1e-6 * 3 * (400.0 / 3 + 1);
  /* one sequence with 100 positions to prefill: 2 chunks of at most 64 */
  at_gen_load l = {.sequences = 3, .decoding = 2, .prefill_tokens = 100, .prefill_chunks = 2,
                   .cached_tokens = 300, .step_fitted = true, .step_a_s = 0.002,
                   .step_b_s = 1e-6, .prefill_a_s = 0.001, .prefill_b_s = 2e-5,
                   .tpot_s = 2 * now};
  at_gen_forecast f = at_gen_forecast_for(&l, &p, 28, 1);
  /* S = 4; 2 chunks ahead and 1 of its own, 128 positions: 3 * 1 ms +
   * 128 * 0.02 ms; a decode step with each chunk, at batch 4 and mean
   * length 107: 2 + 0.001 * 4 * 108 = 2.432 ms, scaled by the measured gap
   * over the model's figure now (2) */
  assert_true(fabs(f.ttft_s - (0.00556 + 3 * 0.002432 * 2)) < 1e-12);
  assert_true(fabs(f.tpot_s - 0.002432 * 2) < 1e-12);
  f = at_gen_forecast_for(&l, &p, 28, 2); /* S = 5: two steps per token */
  double step = 0.002 + 1e-6 * 4 * (456.0 / 5 + 1);
  assert_true(fabs(f.ttft_s - (4 * 0.001 + 2e-5 * 156 + 4 * step * 2)) < 1e-12);
  assert_true(fabs(f.tpot_s - 2 * step * 2) < 1e-12);
  /* a chunk holds one sequence: 100 waiting 11-token prompts are 100
   * chunks, not 1100 / 64 = 18 (the forecast's error before 2026-12-03,
   * which let a burst of short prompts in far past its TTFT budget) */
  at_gen_load burst = {.sequences = 100, .prefill_tokens = 1100, .prefill_chunks = 100,
                       .step_fitted = true, .step_a_s = 0.002, .step_b_s = 1e-6,
                       .prefill_a_s = 0.001, .prefill_b_s = 2e-5};
  f = at_gen_forecast_for(&burst, &p, 11, 1);
  double bstep = 0.002 + 1e-6 * 4 * (1111.0 / 101 + 1);
  assert_true(fabs(f.ttft_s - (101 * 0.001 + 2e-5 * 1111 + 101 * bstep)) < 1e-12);
  /* the calibration is clamped to 1..4: a measured gap below the model's
   * figure (one that lags a lane filling up) never lowers the forecast */
  at_gen_load slow = l;
  slow.tpot_s = 100 * now;
  assert_true(fabs(at_gen_forecast_for(&slow, &p, 28, 1).tpot_s - 0.002432 * 4) < 1e-12);
  slow.tpot_s = 0.01 * now;
  assert_true(fabs(at_gen_forecast_for(&slow, &p, 28, 1).tpot_s - 0.002432) < 1e-12);
  /* no sequence decoding: the measured gap is stale and not used; what
   * is ahead still decodes once prefilled, a step with each chunk */
  slow.decoding = 0;
  slow.tpot_s = 100 * now;
  f = at_gen_forecast_for(&slow, &p, 28, 1);
  assert_true(fabs(f.tpot_s - 0.002432) < 1e-12);
  assert_true(fabs(f.ttft_s - (0.00556 + 3 * 0.002432)) < 1e-12);
  /* an idle lane without a step fit: its prefill, then the measured gap */
  at_gen_load idle = {.prefill_a_s = 0.001, .prefill_b_s = 2e-5, .tpot_s = 0.01};
  f = at_gen_forecast_for(&idle, &p, 28, 1);
  assert_true(fabs(f.ttft_s - (0.001 + 2e-5 * 28)) < 1e-12);
  assert_true(fabs(f.tpot_s - 0.01) < 1e-12);
  /* without calibration, more of any kind of load never forecasts less */
  l.tpot_s = 0;
  at_gen_forecast prev = at_gen_forecast_for(&l, &p, 28, 1);
  for (int k = 1; k <= 50; k++) {
    at_gen_load m = l;
    m.sequences += k;
    m.prefill_tokens += 37 * k;
    m.cached_tokens += 90 * k;
    m.decoding += k / 2;
    at_gen_forecast g = at_gen_forecast_for(&m, &p, 28, 1);
    assert_true(g.ttft_s >= prev.ttft_s && g.tpot_s >= prev.tpot_s);
    prev = g;
  }
  /* nonsense in, zeros out */
  f = at_gen_forecast_for(&l, &p, 0, 1);
  assert_true(f.ttft_s == 0 && f.tpot_s == 0);
  f = at_gen_forecast_for(NULL, &p, 5, 1);
  assert_true(f.ttft_s == 0 && f.tpot_s == 0);
}

/* Two lanes for the variant-choice tests: chunk 64, batch 4, admit_fill 1;
 * idle[0] (fp32) with 2x idle[1]'s (int8) fitted costs. */
static void two_lanes(at_gen_params p[2], at_gen_load idle[2]) {
  for (int i = 0; i < 2; i++) {
    p[i] = at_gen_default_params();
    p[i].chunk_tokens = 64, p[i].max_batch = 4, p[i].admit_fill = 1;
  }
  idle[0] = (at_gen_load){.step_fitted = true, .step_a_s = 0.004, .step_b_s = 2e-6,
                          .prefill_a_s = 0.002, .prefill_b_s = 4e-5};
  idle[1] = (at_gen_load){.step_fitted = true, .step_a_s = 0.002, .step_b_s = 1e-6,
                          .prefill_a_s = 0.001, .prefill_b_s = 2e-5};
}

/* The variant choice over lanes driven by one thread (at_gen_choose_lane):
 * the most accurate lane whose forecast meets both budgets; a lane's
 * forecast carries one turn of each busy neighbour per turn of its own,
 * and its calibration is against that joint round; -1 when none fits, with
 * every lane's forecast filled in. */
/* The idle forecast: the lane's costs with nothing in it — one sequence of
 * 28 tokens is one chunk and a step at batch 1, length 28, unscaled; a
 * step not fitted yet counts 0 (the measured gap is the load's). */
static void test_idle_forecast(void **state) {
  (void)state;
  at_gen_params p = at_gen_default_params();
  p.chunk_tokens = 64;
  p.max_batch = 4;
  at_gen_load l = {.sequences = 30, .decoding = 28, .prefill_tokens = 900, .prefill_chunks = 20,
                   .cached_tokens = 3000, .step_fitted = true, .step_a_s = 0.002,
                   .step_b_s = 1e-6, .prefill_a_s = 0.001, .prefill_b_s = 2e-5,
                   .tpot_s = 0.05, .tpot_budget_s = 0.01};
  at_gen_forecast f = at_gen_idle_forecast(&l, &p, 28, 1);
  double step = 0.002 + 1e-6 * 1 * (28 + 1);
  assert_true(fabs(f.ttft_s - (0.001 + 2e-5 * 28)) < 1e-12);
  assert_true(fabs(f.tpot_s - step) < 1e-12);
  at_gen_forecast loaded = at_gen_forecast_for(&l, &p, 28, 1);
  assert_true(loaded.ttft_s > f.ttft_s && loaded.tpot_s > f.tpot_s);
  l.step_fitted = false;
  f = at_gen_idle_forecast(&l, &p, 28, 1);
  assert_true(f.tpot_s == 0);
}

static void test_choose_lane(void **state) {
  (void)state;
  at_gen_params p[2];
  at_gen_load idle[2]; /* lane 0 (fp32): 2x lane 1's (int8) costs */
  two_lanes(p, idle);
  at_gen_load idle0 = idle[0], idle1 = idle[1];
  assert_true(at_gen_turn_s(&idle0, &p[0]) == 0); /* idle: no turns to wait for */
  at_gen_load L[2] = {idle0, idle1};
  at_gen_forecast f[2];
  /* both idle: each forecast is the lane's own; the first fits */
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.2, NULL, f), 0);
  at_gen_forecast own0 = at_gen_forecast_for(&L[0], &p[0], 20, 1);
  assert_true(f[0].ttft_s == own0.ttft_s && f[0].tpot_s == own0.tpot_s);
  /* lane 0 busy: 40 sequences decoding, 4000 positions, nothing to prefill,
   * its measured gap as the model says (scale 1) */
  L[0].sequences = L[0].decoding = 40;
  L[0].cached_tokens = 4000;
  double step0 = 0.004 + 2e-6 * 4 * (4000.0 / 40 + 1);
  assert_true(fabs(at_gen_turn_s(&L[0], &p[0]) - (0.004 + 2e-6 * 4 * (4000.0 / 40 + 1))) < 1e-12);
  L[0].tpot_s = 10 * step0;
  /* a newcomer on lane 0: 41 sequences, 11 steps per token */
  double step0n = 0.004 + 2e-6 * 4 * ((4000.0 + 20) / 41 + 1);
  double want0 = 11 * step0n;
  /* on idle lane 1: its own step, plus lane 0's turn for each of its own */
  double step1 = 0.002 + 1e-6 * 1 * (20.0 + 1);
  double want1 = step1 + step0;
  double ttft1 = (0.001 + 2e-5 * 20) + step0;
  int pick = at_gen_choose_lane(L, p, 2, 20, 1, 2.0, (want0 + want1) / 2, NULL, f);
  assert_true(fabs(f[0].tpot_s - want0) < 1e-12);
  assert_true(fabs(f[1].tpot_s - want1) < 1e-12);
  assert_true(fabs(f[1].ttft_s - ttft1) < 1e-12);
  assert_true(want1 < want0);
  assert_int_equal(pick, 1);
  /* a budget both meet: the more accurate; one neither meets: -1 */
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, want0 * 1.01, NULL, f), 0);
  /* with admit_fill 0.8 lane 0 needs its forecast within 80 % of the budget */
  p[0].admit_fill = p[1].admit_fill = 0.8;
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, want0 * 1.01, NULL, f), 1);
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, want0 * 1.26, NULL, f), 0);
  p[0].admit_fill = p[1].admit_fill = 1;
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, want1 * 0.99, NULL, f), -1);
  assert_true(f[1].tpot_s > 0);
  /* lane 0's sequences were promised 50 ms per token: a newcomer that fits
   * idle lane 1 by itself is still refused when lane 1's turns (its
   * prefill chunk, then its step) would push them past that */
  double turn1n = (0.001 + 2e-5 * 20) + (0.002 + 1e-6 * 1 * (20 + 1));
  double held0 = 10 * step0, held0n = 10 * (step0 + turn1n);
  assert_true(held0 < 0.05 && held0n > 0.05 && want1 < 0.05 && want0 > 0.05);
  L[0].tpot_budget_s = 0.05;
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.05, NULL, f), -1);
  assert_true(fabs(f[1].tpot_s - held0n) < 1e-12); /* the refusal shows why */
  /* the held promise counts even when the newcomer's own budget is loose:
   * the same two lanes in the other order, the idle one first, refuses the
   * idle one (its turns would break the busy lane's 50 ms) and takes the
   * busy one (its own 11 steps fit 200 ms) */
  at_gen_load swapped[2] = {L[1], L[0]};
  at_gen_params swapped_p[2] = {p[1], p[0]};
  assert_int_equal(at_gen_choose_lane(swapped, swapped_p, 2, 20, 1, 2.0, 0.2, NULL, f), 1);
  L[0].tpot_budget_s = 0.1; /* a looser promise: lane 1 qualifies */
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.05, NULL, f), 1);
  assert_true(fabs(f[1].tpot_s - want1) < 1e-12);
  L[0].tpot_budget_s = 0; /* none: the configured tpot_slo_s (0.2) */
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.05, NULL, f), 1);
  /* lane 1 decoding too (one sequence, 30 cached, no measured gap yet): each
   * lane's forecast carries the other's turn, and lane 0's calibration
   * compares its measured gap with its steps plus lane 1's turns */
  L[1].sequences = L[1].decoding = 1;
  L[1].cached_tokens = 30;
  double turn1 = 0.002 + 1e-6 * 1 * (30 + 1);
  assert_true(fabs(at_gen_turn_s(&L[1], &p[1]) - turn1) < 1e-12);
  at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.2, NULL, f);
  double step1n = 0.002 + 1e-6 * 2 * (50.0 / 2 + 1);
  assert_true(fabs(f[1].tpot_s - (step1n + step0)) < 1e-12);
  assert_true(fabs(f[1].ttft_s - ((0.001 + 2e-5 * 20) + (step1n + step0))) < 1e-12);
  /* lane 0's measured gap (taken while lane 1 was idle) is below the joint
   * model's figure: the model is the floor (calibration clamped to 1..4) */
  assert_true((10 * step0) / (10 * (step0 + turn1)) < 1);
  assert_true(fabs(f[0].tpot_s - 11 * (step0n + turn1)) < 1e-12);
  /* lane 1's measured gap twice the joint model's: its forecast doubles */
  L[1].tpot_s = 2 * (turn1 + step0);
  at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 0.2, NULL, f);
  assert_true(fabs(f[1].tpot_s - 2 * (step1n + step0)) < 1e-12);
  /* one lane: exactly the lane's forecast */
  assert_int_equal(at_gen_choose_lane(L, p, 1, 20, 1, 2.0, want0 * 1.01, NULL, f), 0);
  assert_true(f[0].tpot_s == at_gen_forecast_for(&L[0], &p[0], 20, 1).tpot_s);
  assert_int_equal(at_gen_choose_lane(NULL, p, 1, 20, 1, 2.0, 1, NULL, f), -1);
}

/* The smallest TPOT budget above lo (to 1e-4 relative) at which lane 0
 * of L is chosen, by a scan upwards (the whole-load check counts whole
 * steps, so the budgets that fit need not be one interval), at most hi. */
static double switch_budget(const at_gen_load *L, const at_gen_params *p, double lo, double hi) {
  assert_int_not_equal(at_gen_choose_lane(L, p, 2, 20, 1, 100.0, lo, NULL, NULL), 0);
  for (double b = lo; b <= hi; b *= 1.0001)
    if (at_gen_choose_lane(L, p, 2, 20, 1, 100.0, b, NULL, NULL) == 0) return b;
  fail_msg("lane 0 never chosen up to %g", hi);
  return hi;
}

/* The whole load decides the order (at_gen_choose_lane): the most
 * accurate lane that could carry everything held on every lane plus the
 * newcomer alone (the carrier) takes it, else the less accurate lanes after
 * it; the lanes before it take nothing and drain. When none could
 * (overload), only the lane that would carry it in the least time per
 * token. */
static void test_choose_lane_whole_load(void **state) {
  (void)state;
  at_gen_params p[2];
  at_gen_load idle[2];
  two_lanes(p, idle);
  at_gen_load c0 = idle[0], c1 = idle[1];
  /* 20 sequences decoding on each lane, 100 positions each, no measured
   * gap (calibration 1) */
  at_gen_load L[2] = {c0, c1};
  for (int i = 0; i < 2; i++) L[i].sequences = L[i].decoding = 20, L[i].cached_tokens = 2000;
  at_gen_load on0 = c0, on1 = c1; /* everything on one lane */
  on0.sequences = on0.decoding = on1.sequences = on1.decoding = 40;
  on0.cached_tokens = on1.cached_tokens = 4000;
  double whole0 = at_gen_forecast_for(&on0, &p[0], 20, 1).tpot_s;
  double whole1 = at_gen_forecast_for(&on1, &p[1], 20, 1).tpot_s;
  at_gen_forecast f[2];
  at_gen_choose_lane(L, p, 2, 20, 1, 2.0, 1.0, NULL, f);
  double now0 = f[0].tpot_s, now1 = f[1].tpot_s;
  assert_true(now0 < whole0 && whole1 < whole0 && now1 < whole0);
  /* a budget lane 0 meets now but not with the whole load, lane 1 meets
   * both: lane 1, where first fit took lane 0 and kept it full */
  double b = fmax(fmax(now0, now1), whole1) * 1.001;
  assert_true(b < whole0);
  assert_int_equal(at_gen_choose_lane(L, p, 2, 20, 1, 2.0, b, NULL, f), 1);
  assert_true(f[0].tpot_s <= b);
  /* lane 0 is the carrier from the budget its whole-load forecast fits,
   * and admit_fill moves that budget up by 1 / fill */
  double sw = switch_budget(L, p, b, 10.0);
  assert_true(sw >= whole0 && sw < whole0 * 1.0002);
  p[0].admit_fill = p[1].admit_fill = 0.8;
  double sw8 = switch_budget(L, p, b, 10.0);
  assert_true(fabs(sw8 * 0.8 - sw) < 2e-4 * sw);
  p[0].admit_fill = p[1].admit_fill = 1;
  /* overload: lane 0 holds one sequence and measures 4x the model's gap
   * (the host is slow: the whole load is priced at 4x on either lane),
   * lane 1 holds 36. Neither could carry the whole load; both can take
   * the newcomer now: lane 1 (cheaper per token) */
  at_gen_load O[2] = {c0, c1};
  O[0].sequences = O[0].decoding = 1, O[0].cached_tokens = 100;
  O[1].sequences = O[1].decoding = 36, O[1].cached_tokens = 3600;
  double turn1 = at_gen_turn_s(&O[1], &p[1]);
  O[0].tpot_s = 4 * (at_gen_turn_s(&O[0], &p[0]) + turn1);
  at_gen_load w1 = c1;
  w1.sequences = w1.decoding = 37, w1.cached_tokens = 3700;
  double ow1 = 4 * at_gen_forecast_for(&w1, &p[1], 20, 1).tpot_s;
  at_gen_choose_lane(O, p, 2, 20, 1, 2.0, 1.0, NULL, f);
  double ob = fmax(f[0].tpot_s, f[1].tpot_s) * 1.001;
  assert_true(ob < ow1);
  assert_int_equal(at_gen_choose_lane(O, p, 2, 20, 1, 2.0, ob, NULL, f), 1);
  /* the same lanes in the other order: still the cheaper one */
  at_gen_load Os[2] = {O[1], O[0]};
  at_gen_params ps[2] = {p[1], p[0]};
  assert_int_equal(at_gen_choose_lane(Os, ps, 2, 20, 1, 2.0, ob, NULL, f), 0);
  /* overload, and only the dearer lane can take it now: refused, so the
   * cheap lane's turns are not shared with new dear work */
  double od = (f[0].tpot_s + f[1].tpot_s) / 2; /* between lane 1's (Os[0]) and lane 0's now */
  at_gen_choose_lane(O, p, 2, 20, 1, 2.0, 1.0, NULL, f);
  assert_true(f[0].tpot_s < od && f[1].tpot_s > od);
  assert_int_equal(at_gen_choose_lane(O, p, 2, 20, 1, 2.0, od, NULL, f), -1);
  /* the demand (offered requests/s, 32 tokens each): two idle lanes, and
   * at 40 requests/s lane 0 would hold 40 * 32 * 0.05 = 64 sequences at a
   * 50 ms budget, 16 steps of ~4.3 ms: over it; lane 1, 16 steps of
   * ~2.1 ms: within. Without the rate, or at 10/s, lane 0 */
  at_gen_load I[2] = {c0, c1};
  at_gen_demand dm = {.offered_per_s = 40, .out_tokens = 32, .refused_per_s = 1};
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, NULL, f), 0);
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), 1);
  assert_int_equal(dm.carrier, 1); /* written back */
  /* the rate counts only once something was refused or the load is off
   * lane 0: on lane 0 with nothing refused (a closed loop whose rate
   * follows the answers), lane 0 */
  dm.refused_per_s = 0, dm.carrier = 0;
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), 0);
  assert_int_equal(dm.carrier, 0);
  dm.carrier = 1; /* already off lane 0: the way back is judged by the rate */
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), 1);
  dm.offered_per_s = 10; /* ... and taken when lane 0 could carry it */
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), 0);
  assert_int_equal(dm.carrier, 0);
  dm.refused_per_s = 1;
  /* past both (200/s: 320 sequences): overload, only the cheaper */
  dm.offered_per_s = 200;
  assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), 1);
  assert_int_equal(dm.carrier, -1);
  /* the switch is where lane 0's forecast of lambda * 32 * b sequences
   * (36 positions each: the prompt, 20, and half the answer, 16) reaches b */
  for (double lam = 5; lam <= 60; lam += 0.5) {
    dm.offered_per_s = lam;
    at_gen_load h = c0;
    h.sequences = h.decoding = (int)ceil(lam * 32 * 0.05);
    h.cached_tokens = (long long)ceil(h.decoding * 36.0);
    bool fits0 = at_gen_forecast_for(&h, &p[0], 20, 1).tpot_s <= 0.05;
    assert_int_equal(at_gen_choose_lane(I, p, 2, 20, 1, 2.0, 0.05, &dm, f), fits0 ? 0 : 1);
  }
  /* one lane: the whole load is its own, first fit as before */
  assert_int_equal(at_gen_choose_lane(O, p, 1, 20, 1, 2.0, ob, NULL, f), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks_needed),   cmocka_unit_test(test_arena_grow_release),
      cmocka_unit_test(test_gather_scatter),  cmocka_unit_test(test_evict_classes),
      cmocka_unit_test(test_evict_order),     cmocka_unit_test(test_linfit),
      cmocka_unit_test(test_sampler),         cmocka_unit_test(test_sampler_matches_reference),         cmocka_unit_test(test_pick_round_robin),
      cmocka_unit_test(test_pick_bucketing),  cmocka_unit_test(test_logprobs_top),
      cmocka_unit_test(test_penalties),       cmocka_unit_test(test_forecast),
      cmocka_unit_test(test_arena_fork),      cmocka_unit_test(test_gen_policy),
      cmocka_unit_test(test_arena_prefix),
      cmocka_unit_test(test_choose_lane),     cmocka_unit_test(test_choose_lane_whole_load),
      cmocka_unit_test(test_idle_forecast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
