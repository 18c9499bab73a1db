/* anytime/generate.h — the generation lane: continuous batching over a
 * decoder and its KV block arena.
 *
 * One scheduler thread owns the decoder, the arena and every running
 * sequence (the lane's own, or one shared with other lanes: at_gen_turns). Each turn of its loop it
 *   1. admits waiting sequences in arrival order while the arena has the
 *      blocks each needs (block admission, decided up front); when the head
 *      cannot get its blocks and would miss its first-token deadline by
 *      waiting, it may preempt running sequences chosen by slack
 *      (anytime/decode.h at_evict_plan) — a preempted sequence loses its
 *      cache, goes back to the queue and later recomputes it;
 *   2. runs one prefill chunk (at most chunk_tokens positions) of the
 *      oldest sequence still prefilling;
 *   3. runs one batched decode step over up to max_batch decoding sequences:
 *      round-robin, or with bucketing the sequence that has waited longest
 *      plus those whose cached length is closest to it (so every sequence is
 *      stepped within a bounded number of steps either way).
 *
 * Ownership: at_gen_submit() copies the prompt. Callbacks run on the
 * scheduler thread and must not block; the token array passed to on_done is
 * valid only during the call.
 * Thread-safety: submit, cancel, stop and stats may be called from any thread;
 * create/destroy from one thread. destroy finishes every admitted request
 * (on_done with finish "cancelled") before returning.
 */
#ifndef ANYTIME_GENERATE_H
#define ANYTIME_GENERATE_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "anytime/decode.h"
#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct at_generator at_generator;

/* One scheduler thread shared by several lanes (one lane per decoder
 * variant, e.g. fp32 and int8 of the same model): lanes created with
 * params.turns have no thread of their own; this one gives each a turn per
 * round (admission, a prefill chunk, a decode step), so busy lanes
 * alternate steps and together use the CPU one lane would. Callbacks of
 * every such lane run on this thread. Thread-safety: create and destroy
 * from one thread; destroy only after every lane using it is destroyed. */
typedef struct at_gen_turns at_gen_turns;
AT_API at_status at_gen_turns_create(at_gen_turns **out);
AT_API void at_gen_turns_destroy(at_gen_turns *t);

typedef struct at_gen_params {
  int block_tokens;        /* positions per KV block; default 16 */
  int n_blocks;            /* arena size in blocks; default 512 */
  double safety;           /* admission asks for ceil(t*safety/block_tokens); default 1.0 */
  int chunk_tokens;        /* prefill chunk width; default 64 */
  int max_batch;           /* sequences per decode step; default 8 */
  bool bucketing;          /* length bucketing anchored on the longest-waiting; default false */
  bool preempt;            /* allow slack-priced preemption; default true */
  /* Testing and diagnostics: preempt on behalf of every waiting head that
   * does not fit (never for one that was itself preempted), ignoring slack,
   * oldest runners first. Makes the evict-and-recompute path run
   * deterministically, whatever the timing. Default false. */
  bool preempt_always;
  int max_waiting;         /* waiting queue bound (429 beyond); default 256 */
  double ttft_slo_s;       /* first-token deadline after arrival; default 2.0 */
  double tpot_slo_s;       /* per-output-token budget after the first; default 0.2 */
  /* Forecast admission (at_gen_choose_lane) admits a newcomer whose
   * forecast is within this share of its budgets, leaving the rest as
   * margin for what the forecast cannot see coming (the sequences admitted
   * after it, the forecast's own error); 0.05..1, default 0.8. */
  double admit_fill;
  /* Share full KV blocks across requests by their token prefix (a system
   * prompt, a chat's earlier turns): a prefill starts after the longest
   * cached prefix; cached blocks no one holds give way before any
   * preemption (anytime/decode.h, at_kv_prefix_*). Default true. */
  bool prefix_cache;
  /* The scheduler thread shared with other lanes (not owned); NULL: the
   * lane runs a scheduler thread of its own. Default NULL. */
  at_gen_turns *turns;
} at_gen_params;

AT_API at_gen_params at_gen_default_params(void);

typedef enum at_gen_finish {
  AT_GEN_LENGTH = 0,   /* max_tokens reached */
  AT_GEN_STOP = 1,     /* end-of-text token or the caller's stop check */
  AT_GEN_CANCELLED = 2,
  AT_GEN_ERROR = 3,
} at_gen_finish;

AT_API const char *at_gen_finish_name(at_gen_finish f); /* "length", "stop", ... */

typedef struct at_gen_result {
  at_gen_finish finish;
  at_status status;        /* AT_OK unless finish == AT_GEN_ERROR */
  const char *error;       /* detail when status != AT_OK */
  int n_prompt, n_generated;
  const int32_t *tokens;   /* the generated tokens (n_generated) */
  int preemptions;         /* times this sequence was evicted and recomputed */
  uint64_t submitted_ns, admitted_ns, first_token_ns, finished_ns;
} at_gen_result;

#define AT_GEN_MAX_EOS 8

typedef struct at_gen_request {
  const int32_t *prompt;   /* copied at submit */
  int n_prompt;            /* >= 1 */
  int max_tokens;          /* >= 1 */
  at_sample_params sample;
  int32_t eos_id;          /* stop at this token (not emitted); -1 for none */
  int n_eos;               /* and at any of these (copied with the request) */
  int32_t eos_ids[AT_GEN_MAX_EOS];
  double deadline_s;       /* 0 = ttft_slo + max_tokens * tpot_slo */
  /* The per-token budget admission promised this request (0: none). The
   * lane publishes the smallest among those it holds (at_gen_load), so
   * that a newcomer on another lane sharing the thread is refused when its
   * turns would push this one past it (at_gen_choose_lane). */
  double tpot_budget_s;
  /* The priority class (x-priority): 1 high, 0 normal, -1 low (others are
   * clamped). Waiting sequences are admitted highest class first (arrival
   * order within a class); a running sequence is never preempted for a
   * waiting one of a lower class; the load a lane publishes counts its
   * waiting sequences by class, so that at_gen_load_for_class() can leave
   * out the ones a newcomer will be admitted ahead of. */
  int priority;
  /* OpenAI's repetition penalties over the tokens generated so far
   * (at_apply_penalties), applied before sampling; 0 = off. */
  float presence_penalty, frequency_penalty;
  /* When true, on_logprobs is called for each generated token, just before
   * on_token, with its log-probability and top_logprobs alternatives
   * (0..AT_MAX_TOP_LOGPROBS; see at_token_logprob in anytime/decode.h). */
  bool logprobs;
  int top_logprobs;
  void (*on_logprobs)(void *user, const at_token_logprob *lp);
  /* Another choice of the same prompt: the id of an earlier request with
   * identical prompt tokens (0 = none). While that request is running with
   * its prompt cached, this one is admitted on a fork of its cache
   * (at_kv_seq_fork: full blocks shared, no recompute but the last prompt
   * token); otherwise it prefills on its own. */
  uint64_t fork_of;
  /* Called for each generated token (n = tokens so far). Return true to stop
   * here (finish AT_GEN_STOP), e.g. when a stop sequence appeared. May be
   * NULL. */
  bool (*on_token)(void *user, int32_t token, int n);
  /* Called exactly once for every admitted request. Required. */
  void (*on_done)(void *user, const at_gen_result *r);
  void *user;
} at_gen_request;

/* Start the lane over an opened decoder (ownership of `dec` passes to the
 * generator, also on failure). */
AT_API at_status at_gen_create(at_decoder *dec, const at_gen_params *params, at_generator **out);
AT_API void at_gen_destroy(at_generator *g);

/* Queue a request. On AT_OK *id (may be NULL) names it for at_gen_cancel and
 * on_done will be called exactly once. Refusals call nothing:
 * AT_ERR_INVALID_ARG (bad fields), AT_ERR_LIMIT (prompt + max_tokens beyond
 * the model's positions, or more blocks than the whole arena),
 * AT_ERR_QUEUE_FULL (max_waiting reached), AT_ERR_SHUTDOWN. */
AT_API at_status at_gen_submit(at_generator *g, const at_gen_request *r, uint64_t *id);

/* Ask the lane to stop request `id` soon (on_done reports AT_GEN_CANCELLED
 * unless it had already finished). Unknown ids are ignored. */
AT_API void at_gen_cancel(at_generator *g, uint64_t id);

/* Ask the lane to end request `id` soon as if its on_token had returned
 * true: on_done reports AT_GEN_STOP (not counted as cancelled), unless it
 * had already finished or is cancelled (a cancel, before or after, wins).
 * For a caller that checks stop conditions off the scheduler thread; the
 * lane may generate a few more tokens before it takes the stop. Unknown ids
 * are ignored. Any thread. */
AT_API void at_gen_stop(at_generator *g, uint64_t id);

typedef struct at_gen_stats {
  uint64_t submitted, finished, rejected, preemptions, steps, prefill_chunks, decode_steps;
  uint64_t tokens_generated;
  uint64_t shared_tokens;  /* prompt positions taken from a fork instead of prefilled */
  uint64_t cancelled;      /* sequences ended by at_gen_cancel (a client that left) */
  uint64_t prefix_query_tokens; /* prompt positions looked up in the prefix cache */
  uint64_t prefix_hit_tokens;   /* of which found there (not prefilled) */
  uint64_t kv_carried_steps;    /* steps whose past was the last step's present (no gather) */
  uint64_t kv_gathered_steps;   /* steps that gathered their past from the arena */
  int waiting, running, free_blocks, total_blocks;
  int cached_blocks;       /* prefix-cache blocks no sequence holds (counted in free_blocks) */
  int shared_blocks;       /* blocks held by more than one sequence */
  double step_a_s, step_b_s;       /* decode step ≈ a + b * cached tokens in the batch */
  double prefill_a_s, prefill_b_s; /* prefill chunk ≈ a + b * tokens (recompute price) */
} at_gen_stats;

AT_API void at_gen_stats_get(at_generator *g, at_gen_stats *out);

/* Prompt positions of tok[0..n) the lane's prefix cache holds now (whole
 * KV blocks), which a request with this prompt would not prefill; 0 with
 * the cache off. Any thread. For forecasts: a hint, not a reservation (the
 * blocks may be handed out before the request runs). */
AT_API int at_gen_prefix_probe(at_generator *g, const int32_t *tok, int n);

/* What the lane has in hand, published by the scheduler each turn (plus
 * what was submitted since), for forecasting a newcomer's latency. */
typedef struct at_gen_load {
  int sequences;              /* running + waiting + submitted not yet taken */
  int decoding;               /* running sequences past their prefill */
  long long prefill_tokens;   /* positions still to prefill among all of them */
  long long prefill_chunks;   /* the prefill chunks that takes: a turn runs one
                                 chunk of one sequence, so sum(ceil(left / W)) */
  long long cached_tokens;    /* positions in the arena */
  bool step_fitted;           /* the decode-step fit has data */
  double step_a_s, step_b_s;  /* decode step ≈ a + b * batch * (longest cached + 1) */
  double prefill_a_s, prefill_b_s; /* prefill chunk ≈ a + b * tokens (seeded at create) */
  double tpot_s;              /* measured gap between one sequence's tokens (EWMA) */
  double tpot_budget_s;       /* the smallest tpot_budget_s it holds (0: none) */
  /* The waiting (and submitted, not yet taken) sequences by priority class
   * + 1 (low, normal, high): how many, their prompt positions still to
   * prefill and the chunks that takes; included in the totals above. */
  int waiting_by_class[3];
  long long waiting_tokens_by_class[3], waiting_chunks_by_class[3];
} at_gen_load;

/* The load as a newcomer of class `priority` (1, 0, -1) sees it: without
 * the waiting sequences of lower classes, which it is admitted ahead of.
 * Pure. */
AT_API at_gen_load at_gen_load_for_class(const at_gen_load *l, int priority);

AT_API void at_gen_load_get(at_generator *g, at_gen_load *out);

/* Forecast for n_seqs new sequences of n_prompt prompt tokens joining load
 * `l` on a lane with params `p`. Pure. The model (docs/generation.md,
 * "Generation admission"):
 * every turn runs one prefill chunk of the oldest prefilling sequence and
 * one decode step of up to max_batch decoding ones, so
 *   ttft = the prefill chunks of everything ahead and its own (a chunk
 *          holds one sequence: prefill_chunks, not prefill_tokens / W)
 *          + one decode step per chunk while the lane holds any sequence
 *          (what is ahead decodes once prefilled);
 *   tpot = ceil(sequences / max_batch) decode steps, each priced by the
 *          step fit at the batch and mean length the lane will hold
 *          (the measured gap only until the fit has data);
 * both decode terms scaled, while sequences decode, by the measured gap
 * over the model's figure for the current load (clamped to 1..4): what
 * the fit misses (prefill chunks between steps) is in the measured gap.
 * Blocks are not modelled: a newcomer that must wait for KV blocks waits
 * longer than forecast (block admission still holds it). */
typedef struct at_gen_forecast {
  double ttft_s, tpot_s;
} at_gen_forecast;

AT_API at_gen_forecast at_gen_forecast_for(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                           int n_seqs);
/* The same forecast on the lane emptied: what n_seqs sequences of n_prompt
 * tokens take with nothing else in it, from the fitted costs alone (a
 * decode step not fitted yet counts 0, so the answer errs short). A
 * request whose budgets this misses on every lane can never be admitted.
 * Pure. */
AT_API at_gen_forecast at_gen_idle_forecast(const at_gen_load *l, const at_gen_params *p, int n_prompt,
                                            int n_seqs);
AT_API const at_decoder_info *at_gen_decoder_info(const at_generator *g);

/* Seconds one turn of a lane with load `l` takes right now: a prefill chunk
 * while anything prefills, plus a decode step while anything decodes (the
 * fitted costs; 0 for an idle lane). What a lane sharing the cores through
 * at_gen_turns waits per turn of its own. Pure. */
AT_API double at_gen_turn_s(const at_gen_load *l, const at_gen_params *p);

/* The variant choice of generation admission over n_lanes lanes of one
 * model, ordered most accurate first, driven by one scheduler thread
 * (at_gen_turns): forecast n_seqs sequences of n_prompt tokens on each lane
 * and return the lane that takes them, or -1 (refuse). A lane can take
 * them now when its forecast is within admit_fill of both budgets and the
 * turns it would add (the newcomer's prefill, a larger step) keep every
 * other lane's held sequences within their smallest tpot_budget_s (else
 * the configured tpot_slo_s), or no slower than they are. A lane's
 * forecast is at_gen_forecast_for's with every turn of its own (each
 * prefill chunk to the first token, each decode step per token) followed
 * by one turn of every other lane at that lane's current fitted cost
 * (at_gen_turn_s), and its calibration compares the measured gap with that
 * joint round.
 * Which lanes may take them is decided by the whole load: the carrier is
 * the most accurate lane whose forecast, were it holding every lane's
 * sequences and the newcomers alone, and with a `demand` (may be NULL) at
 * least what its offered rate would keep decoding there by Little's law
 * (out_tokens tokens each at admit_fill * tpot_budget_s), is within
 * admit_fill of both budgets, priced with the largest calibration among
 * the lanes. The rate is what tells a lane that is full and refusing from
 * one that just fits; it only chooses, admission is still by the lanes'
 * holdings. It counts only once something was refused in its window or
 * the previous carrier was not the first lane: on the first lane with
 * nothing refused, the lanes carry what comes (a closed loop's rate
 * follows its answers, and by Little's law at the budget's stay it looks
 * like more than the lane holds). The carrier, else the less accurate
 * lanes after it, in order,
 * take the newcomers if they can now; the lanes before it take nothing
 * and drain.
 * With no carrier (overload) only the lane whose whole-load forecast per
 * token is smallest may. With one lane this is at_gen_forecast_for and
 * first fit. f[] (n_lanes, may be NULL) receives every lane's forecast now,
 * for a refusal's message and Retry-After. Pure. */
typedef struct at_gen_demand {
  double offered_per_s; /* requests per second reaching the choice, refused or not
                           (the server's: over the last second) */
  int out_tokens;       /* tokens each is expected to generate (its max_tokens) */
  double refused_per_s; /* of those, refused */
  int carrier;          /* in: the previous choice's carrier (0: the first lane;
                           -1: none, overload); out: this choice's */
} at_gen_demand;

AT_API int at_gen_choose_lane(const at_gen_load *loads, const at_gen_params *params, int n_lanes,
                              int n_prompt, int n_seqs, double ttft_budget_s, double tpot_budget_s,
                              at_gen_demand *demand, at_gen_forecast *f);

/* The batch choice of one decode step, exposed for tests. Given n decoding
 * sequences with cached lengths len[] and the step at which each was last
 * stepped (last[]; smaller = waited longer), choose up to max_batch indices
 * into pick[] and return how many. Round-robin (bucketing false) takes the
 * max_batch longest-waiting; bucketing anchors on the longest-waiting and
 * fills with the closest cached lengths. Ties go to the lower index. */
AT_API int at_gen_pick_batch(const int *len, const uint64_t *last, int n, int max_batch, bool bucketing,
                             int *pick);

/* The same for a graph without position_ids (at_decoder_info): the
 * longest-waiting sequence, then up to max_batch - 1 more of the same cached
 * length, longest-waiting first. Every sequence still gets its turn: the
 * anchor is always the one that waited longest. */
AT_API int at_gen_pick_same_length(const int *len, const uint64_t *last, int n, int max_batch,
                                   int *pick);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_GENERATE_H */
