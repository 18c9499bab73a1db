/* src/decode/sampler.c — picking the next token from logits: greedy, or
 * temperature + top-k + top-p (nucleus) sampling from a seeded generator
 * (anytime/rng.h), so a request with a seed is reproducible.
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
