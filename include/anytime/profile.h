/* anytime/profile.h — measuring a variant's service time through the
 * serving path: the one measuring core behind `anytime profile` and the
 * server's start-up measurement of a variant that has no profile.
 *
 * at_profile_measure() drives a private at_batcher on the caller's started
 * engine exactly as the server drives its own: batches of exactly b token
 * sequences (the batcher's max_batch_size is b and its max_queue_delay_us
 * one second, so a batch closes when its b-th item arrives), each timed by
 * the worker's Run (at_item_result.started_ns..finished_ns). It runs
 * `passes` passes of `iters` such batches, one at a time ("alone"), and
 * reports each pass's median and the median of the pass medians with their
 * spread. With `busy` and more than one worker, each pass also submits
 * 4 x workers batches at once, so every worker runs one side by side, and
 * keeps only the Runs that had every other worker running too
 * (at_item_result.peers == workers - 1), trying up to 20 x iters rounds to
 * collect `iters` of them (a model that runs in microseconds may finish
 * before the next worker wakes). Workers sharing a host's cores, caches and
 * memory bandwidth run slower side by side than alone; the planner starts
 * its full-pool correction factor from that ratio (anytime/plan.h).
 *
 * Two pure helpers serve `anytime profile --length-buckets`: the length
 * buckets' quantile cuts (at_profile_length_cuts) and the fit of the
 * planner's length model to the buckets' s(1) (at_profile_fit_length).
 *
 * The sequences of one batch are drawn from the caller's set by a
 * reproducible generator (at_profile_params.rng): distinct within one
 * submission when the set has enough, with repetition otherwise (one
 * sequence repeated fills any batch).
 *
 * Ownership: the caller owns the sequences and the result; nothing is
 * retained after the call returns, and no output is copied.
 *
 * Thread-safety: the call is synchronous and blocks the calling thread
 * until every item it submitted has completed; it may run while other
 * threads submit to the same engine (through another batcher or directly),
 * but their Runs then count as peers and slow its figures. Several calls
 * may run at once on one engine, with the same caveat. The on_batch hook
 * runs on the calling thread. The engine must stay started and must not be
 * destroyed during the call.
 */
#ifndef ANYTIME_PROFILE_H
#define ANYTIME_PROFILE_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/engine.h"
#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_PROFILE_MAX_BATCH 256 /* items per timed batch */
#define AT_PROFILE_MAX_ITERS 512 /* timed batches per pass */
#define AT_PROFILE_MAX_PASSES 16
#define AT_PROFILE_MAX_SEQ_LEN 8192 /* tokens per sequence */

/* Called on the calling thread just before each timed alone batch is
 * submitted: pass 0..passes-1, iteration 0..iters-1, and the indices (into
 * the caller's sequences) of the n == batch_size sequences it holds, in
 * order. `anytime profile` times the same sentence through a plain session
 * here at batch 1, so load from elsewhere on the host falls on both paths
 * alike. Not called for warm-up or busy-pool batches. */
typedef void (*at_profile_batch_fn)(void *user, int pass, int iter, const size_t *seqs, size_t n);

typedef struct at_profile_params {
  int batch_size; /* b: sequences per timed batch, 1..AT_PROFILE_MAX_BATCH; default 1 */
  int iters;      /* timed batches per pass, 1..AT_PROFILE_MAX_ITERS; default 40 */
  int passes;     /* 1..AT_PROFILE_MAX_PASSES; default 3 */
  int warmup;     /* untimed alone batches before the first pass, 0..AT_PROFILE_MAX_ITERS;
                     default 0 */
  bool busy;      /* also measure with every worker busy (needs >1 worker); default true */
  /* State of the generator that draws the sequences, read and advanced (a
   * caller measuring several batch sizes in a row passes the same one);
   * NULL = a fixed seed of the call's own. Default NULL. */
  uint64_t *rng;
  /* Only sequences of min_len..max_len tokens go into the batches (s(b) of
   * one length bucket); max_len 0 = no upper bound. Default 0, 0: all. */
  size_t min_len, max_len;
  at_profile_batch_fn on_batch; /* optional; default NULL */
  void *user;                   /* passed to on_batch */
} at_profile_params;

/* Service times in seconds; pass arrays in pass order (not sorted). */
typedef struct at_profile_result {
  int batch_size, passes, workers;
  double pass_s[AT_PROFILE_MAX_PASSES]; /* median Run time of each pass's alone batches */
  double median_s;                      /* median of pass_s */
  double spread_pct;                    /* 100 x (max - min) / median of pass_s */
  /* With every worker busy. busy_measured: the busy phase ran (busy asked
   * for and more than one worker). busy_pass_s[p] is 0 for a pass that
   * collected no full-pool Run; busy_median_s is the median of busy_pass_s
   * when every pass collected some, else 0 ("unknown"). */
  bool busy_measured;
  double busy_pass_s[AT_PROFILE_MAX_PASSES];
  double busy_median_s;
  double busy_spread_pct; /* 100 x (max - min) / median of busy_pass_s; 0 if unknown */
  size_t busy_runs;       /* full-pool Runs counted, all passes together */
} at_profile_result;

AT_API at_profile_params at_profile_default_params(void);

/* Measure variant `variant` of the started engine `e` at batch size
 * params->batch_size over the n_seqs sequences ids[i][0..lens[i]) (token
 * ids as the batcher takes them: input_ids, attention mask all ones,
 * token_type_ids zeros). params NULL = the defaults. On AT_OK *out holds
 * the figures; on failure its contents are unspecified and at_last_error()
 * says why.
 * Returns AT_OK; AT_ERR_INVALID_ARG (NULL engine, sequences or out; a
 * variant index out of range; n_seqs 0; an empty or NULL sequence, or one
 * longer than AT_PROFILE_MAX_SEQ_LEN; batch_size, iters, passes or warmup
 * out of their ranges; an empty length range, or one no sequence is in); AT_ERR_STATE (a timed batch ran with other than
 * batch_size items, which the private batcher is built never to do); what
 * at_batcher_create() returns (AT_ERR_UNSUPPORTED
 * for a variant without input_ids/attention_mask, AT_ERR_NOMEM,
 * AT_ERR_THREAD); what at_batcher_submit() returns other than
 * AT_ERR_QUEUE_FULL (AT_ERR_SHUTDOWN); and a Run's failure (AT_ERR_ORT,
 * AT_ERR_SHAPE, ...). */
AT_API at_status at_profile_measure(at_engine *e, int variant, const int64_t *const *ids,
                                    const size_t *lens, size_t n_seqs, const at_profile_params *params,
                                    at_profile_result *out);

/* Length buckets from the data: cuts[0..k-2] receive the boundaries that
 * split lens[0..n) into k groups of about equal count (the j/k quantiles),
 * so bucket 0 is lens <= cuts[0], bucket j is cuts[j-1] < lens <= cuts[j],
 * and the last bucket is lens > cuts[k-2]. `scratch` holds n entries (it
 * is overwritten). Pure; any thread. k in 2..16, n >= 1. Returns the number
 * of distinct buckets (< k when lengths repeat so much that two quantiles
 * coincide; the cuts are then deduplicated and ascending). */
AT_API int at_profile_length_cuts(const size_t *lens, size_t n, int k, size_t *scratch, size_t *cuts);

/* The length model of `anytime profile --length-buckets` (the two numbers
 * of at_plan_variant, anytime/plan.h): the cost of one text of t tokens,
 * fitted as cost(t) = a + b·t by weighted least squares over n points
 * (tokens[i], service_s[i]) — a length bucket's mean token count and its
 * measured s(1) — with weight[i] >= 0 each (its text count). b < 0 is
 * clamped to 0 (a is then the weighted mean); a < 0 refits through the
 * origin (b = Σ w·t·s / Σ w·t², a = 0). Relative to the reference length
 * ref_tokens (`anytime profile` passes the length at which a + b·t equals
 * the service table's s(1), so that the table times the weight is the
 * fitted cost):
 *   len_ref_tokens     = ref_tokens
 *   len_cost_per_token = b / (a + b·ref_tokens)
 * so that 1 + len_cost_per_token·(t − ref_tokens) = cost(t) / cost(ref).
 * len_cost_per_token·len_ref_tokens <= 1 always holds exactly (the
 * weight of an empty text is never negative). With b = 0 the model is off:
 * both written 0. */
typedef struct at_profile_length_fit {
  double a_s;                /* seconds per text at 0 tokens, >= 0 */
  double b_s;                /* seconds per token, >= 0 */
  bool through_origin;       /* the free fit had a < 0: refitted with a = 0 */
  double len_ref_tokens;     /* the configuration's len_ref_tokens (0: off) */
  double len_cost_per_token; /* the configuration's len_cost_per_token (0: off) */
} at_profile_length_fit;

/* Fit the length model (above) to n points. Pure; any thread. On AT_OK
 * *out holds the fit (len_* both 0 when the slope clamped to 0); on
 * failure *out is all zeros (no length model) and at_last_error() says
 * why. Returns AT_OK; AT_ERR_INVALID_ARG: NULL tokens, service_s, weight
 * or out; n < 2 (one bucket cannot give a slope); a point whose tokens or
 * service time is not finite and positive, or whose weight is negative or
 * not finite; total weight 0; fewer than two distinct token counts of
 * positive weight; ref_tokens not in 1..100000. */
AT_API at_status at_profile_fit_length(const double *tokens, const double *service_s, const double *weight,
                                       size_t n, double ref_tokens, at_profile_length_fit *out);

/* The median of v[0..n) (the mean of the middle two when n is even), the
 * statistic every profile figure is; v is sorted in place. n >= 1. Any
 * thread. */
AT_API double at_profile_median(double *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_PROFILE_H */
