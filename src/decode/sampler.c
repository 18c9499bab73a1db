/* src/decode/sampler.c — picking the next token from logits: greedy, or
 * temperature + top-k + top-p (nucleus) sampling from a seeded generator
 * (anytime/rng.h), so a request with a seed is reproducible; the
 * log-probabilities a client may ask for, and OpenAI's repetition penalties.
 *
 * Pure apart from the caller's RNG state; callable from any thread.
 */
#include <math.h>
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

/* qsort has no context argument in C11; a thread-local pointer to the
 * probabilities keeps this re-entrant across threads. Descending by
 * probability, ascending id on ties. */
static _Thread_local const float *tl_probs;
static int cmp_desc(const void *a, const void *b) {
  int ia = *(const int *)a, ib = *(const int *)b;
  if (tl_probs[ia] != tl_probs[ib]) return tl_probs[ia] > tl_probs[ib] ? -1 : 1;
  return ia - ib;
}

int32_t at_sample(const float *logits, int vocab, const at_sample_params *p, at_rng *rng,
                  float *scratch) {
  if (vocab < 1) return -1;
  if (!p || !(p->temperature > 0) || p->top_k == 1) return argmax(logits, vocab);
  float *prob = scratch;
  int *idx = (int *)(scratch + vocab);
  float mx = logits[argmax(logits, vocab)];
  double sum = 0;
  for (int i = 0; i < vocab; i++) {
    prob[i] = expf((logits[i] - mx) / p->temperature);
    sum += prob[i];
  }
  for (int i = 0; i < vocab; i++) {
    prob[i] = (float)(prob[i] / sum);
    idx[i] = i;
  }
  tl_probs = prob;
  qsort(idx, (size_t)vocab, sizeof *idx, cmp_desc);
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
