/* src/decode/sampler.c — picking the next token from logits: greedy, or
 * temperature + top-k + top-p (nucleus) sampling from a seeded generator
 * (anytime/rng.h), so a request with a seed is reproducible; the
 * log-probabilities a client may ask for, and OpenAI's repetition penalties.
 *
 * Pure apart from the caller's RNG state; callable from any thread.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/decode.h"

at_sample_params at_sample_default_params(void) {
  return (at_sample_params){.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
}

static int argmax(const float *x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

/* Order idx[0..n) by probability, descending, ties by ascending id, in
 * O(n): a stable least-significant-digit radix sort (four 8-bit passes) of
 * the probabilities' bit patterns. Probabilities here are non-negative
 * floats, whose bit patterns order as their values do, so sorting the
 * complemented patterns ascending, stably from ids 0..n-1, gives exactly
 * the order a comparison sort by (probability descending, id ascending)
 * gives — test_decode_parts holds the two equal. A comparison sort of the
 * whole vocabulary (qsort, 4,096 ids) took about 1 ms per sampled token
 * and was most of the generation lane's CPU under temperature sampling.
 * tmp and key/ktmp are scratch of n each. */
static void order_desc(const float *prob, int n, int *idx, int *tmp, uint32_t *key,
                       uint32_t *ktmp) {
  for (int i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &prob[i], sizeof b);
    key[i] = ~b;
    idx[i] = i;
  }
  for (int shift = 0; shift < 32; shift += 8) {
    size_t count[257] = {0};
    for (int i = 0; i < n; i++) count[(key[i] >> shift & 0xff) + 1]++;
    bool one_bucket = false;
    for (int d = 1; d <= 256 && !one_bucket; d++) one_bucket = count[d] == (size_t)n;
    if (one_bucket) continue; /* every key shares this digit: the pass would copy */
    for (int d = 0; d < 256; d++) count[d + 1] += count[d];
    for (int i = 0; i < n; i++) {
      size_t at = count[key[i] >> shift & 0xff]++;
      tmp[at] = idx[i];
      ktmp[at] = key[i];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
    memcpy(key, ktmp, (size_t)n * sizeof *key);
  }
}

int32_t at_sample(const float *logits, int vocab, const at_sample_params *p, at_rng *rng,
                  float *scratch) {
  if (vocab < 1) return -1;
  if (!p || !(p->temperature > 0) || p->top_k == 1) return argmax(logits, vocab);
  float *prob = scratch;
  int *idx = (int *)(scratch + vocab), *tmp = (int *)(scratch + 2 * (size_t)vocab);
  uint32_t *key = (uint32_t *)(scratch + 3 * (size_t)vocab);
  uint32_t *ktmp = (uint32_t *)(scratch + 4 * (size_t)vocab);
  float mx = logits[argmax(logits, vocab)];
  double sum = 0;
  for (int i = 0; i < vocab; i++) {
    prob[i] = expf((logits[i] - mx) / p->temperature);
    sum += prob[i];
  }
  for (int i = 0; i < vocab; i++) prob[i] = (float)(prob[i] / sum);
  order_desc(prob, vocab, idx, tmp, key, ktmp);
  int keep = vocab;
  if (p->top_k > 0 && p->top_k < keep) keep = p->top_k;
  if (p->top_p > 0 && p->top_p < 1) {
    double acc = 0;
    for (int i = 0; i < keep; i++) {
      acc += prob[idx[i]];
      if (acc >= p->top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double total = 0;
  for (int i = 0; i < keep; i++) total += prob[idx[i]];
  double u = at_rng_uniform(rng) * total, acc = 0;
  for (int i = 0; i < keep; i++) {
    acc += prob[idx[i]];
    if (u < acc) return idx[i];
  }
  return idx[keep - 1];
}

double at_logprobs_top(const float *logits, int vocab, int k, at_token_logprob *out) {
  out->n_top = 0;
  if (vocab < 1) return 0;
  if (k > AT_MAX_TOP_LOGPROBS) k = AT_MAX_TOP_LOGPROBS;
  if (k > vocab) k = vocab;
  if (k < 0) k = 0;
  float mx = logits[argmax(logits, vocab)];
  double sum = 0;
  for (int i = 0; i < vocab; i++) sum += exp((double)logits[i] - mx);
  double lse = mx + log(sum);
  /* insertion into a sorted list of k: descending logit, lower id on ties */
  int n = 0;
  for (int i = 0; i < vocab && k > 0; i++) {
    if (n == k && !(logits[i] > logits[out->top_ids[n - 1]])) continue;
    int j = n < k ? n++ : n - 1;
    while (j > 0 && logits[i] > logits[out->top_ids[j - 1]]) {
      out->top_ids[j] = out->top_ids[j - 1];
      j--;
    }
    out->top_ids[j] = i;
  }
  out->n_top = n;
  for (int j = 0; j < n; j++) out->top_logprobs[j] = (float)(logits[out->top_ids[j]] - lse);
  return lse;
}

void at_apply_penalties(float *logits, int vocab, const int32_t *gen, int n_gen, float presence,
                        float frequency, int *count) {
  if (presence == 0 && frequency == 0) return;
  for (int i = 0; i < n_gen; i++)
    if (gen[i] >= 0 && gen[i] < vocab) count[gen[i]]++;
  for (int i = 0; i < n_gen; i++) {
    int32_t t = gen[i];
    if (t < 0 || t >= vocab || count[t] == 0) continue;
    logits[t] -= frequency * (float)count[t] + presence;
    count[t] = 0; /* applied once per distinct id; leaves count zeroed */
  }
}
