/* anytime/decode.h — the decoder lane's building blocks: a fixed arena of
 * KV-cache blocks, block admission, slack-priced eviction, token sampling and
 * a decoder session that runs a Hugging Face "with past" ONNX export over the
 * arena (gather a sequence's blocks into the past tensors, Run, scatter the
 * new tail back).
 *
 * The scheduler that strings these together (continuous batching, chunked
 * prefill) is in anytime/generate.h.
 *
 * Ownership: every create has a matching destroy; arrays passed in are
 * copied unless a comment says otherwise.
 * Thread-safety: none of these objects is internally locked (but for
 * at_kv_prefix_probe, which may be called from any thread). An arena, its
 * sequences and a decoder are used by one thread at a time (the generator's
 * scheduler thread); the pure functions (at_kv_blocks_needed,
 * at_evict_order, at_linfit_*) may be called from any thread.
 */
#ifndef ANYTIME_DECODE_H
#define ANYTIME_DECODE_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/rng.h"
#include "anytime/session.h"
#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ KV arena */

/* Shape of one model's KV cache. One block holds `block_tokens` positions
 * of keys and values for every layer and head:
 * float[layers][2][heads][block_tokens][head_dim]. */
typedef struct at_kv_layout {
  int layers, heads, head_dim, block_tokens;
} at_kv_layout;

typedef struct at_kv_arena at_kv_arena;

/* A sequence's view of the arena: its block table and how many positions
 * are cached. Owned by the caller; blocks are lent by the arena. */
typedef struct at_kv_seq {
  int *blocks;    /* block ids, in position order */
  int n_blocks;   /* blocks held */
  int cap;        /* capacity of `blocks` */
  int len;        /* positions cached (<= n_blocks * block_tokens) */
} at_kv_seq;

/* Blocks a sequence needing `tokens` positions asks for at admission:
 * ceil(tokens * safety / block_tokens), and at least 1 for tokens > 0.
 * safety must be > 0. Returns -1 on invalid arguments. */
AT_API int at_kv_blocks_needed(int64_t tokens, double safety, int block_tokens);

/* An arena of `n_blocks` blocks (all memory allocated here, once).
 * AT_ERR_INVALID_ARG for non-positive sizes, AT_ERR_LIMIT if the arena
 * would exceed 16 GiB, AT_ERR_NOMEM. */
AT_API at_status at_kv_arena_create(const at_kv_layout *layout, int n_blocks, at_kv_arena **out);
AT_API void at_kv_arena_destroy(at_kv_arena *a);
AT_API const at_kv_layout *at_kv_arena_layout(const at_kv_arena *a);
AT_API int at_kv_arena_total_blocks(const at_kv_arena *a);
AT_API int at_kv_arena_free_blocks(const at_kv_arena *a);
/* Bytes of one block. */
AT_API size_t at_kv_block_bytes(const at_kv_layout *l);

/* Give `seq` `n` more blocks, all or nothing: AT_ERR_LIMIT (nothing taken)
 * when fewer than n are free. */
AT_API at_status at_kv_seq_grow(at_kv_arena *a, at_kv_seq *seq, int n);
/* Start `child` (holding no blocks) as a copy of the first `positions`
 * cached positions of `parent` (<= parent->len): the parent's full blocks
 * are shared (reference counted: a block returns to the free list when its
 * last holder releases it), and a partly filled last block is copied into
 * a fresh block of the child's own, so no shared block is ever written
 * again (positions only append). AT_ERR_LIMIT (nothing taken) when that
 * copy finds no free block; AT_ERR_INVALID_ARG for bad arguments. */
AT_API at_status at_kv_seq_fork(at_kv_arena *a, const at_kv_seq *parent, at_kv_seq *child,
                                int positions);
/* Blocks of `seq` shared with another sequence (for tests and stats). */
AT_API int at_kv_seq_shared_blocks(const at_kv_arena *a, const at_kv_seq *seq);
/* Return every block of `seq` to the arena (a shared block when its last
 * holder returns it); len becomes 0. The block table buffer is kept for
 * reuse. */
AT_API void at_kv_seq_release(at_kv_arena *a, at_kv_seq *seq);
/* Free the block table buffer (call after release). */
AT_API void at_kv_seq_free(at_kv_seq *seq);

/* ---- prefix cache: full blocks shared across sequences by their tokens */

/* Turn the prefix cache on or off (off at create). Only while no block is
 * held: AT_ERR_INVALID_ARG otherwise; AT_ERR_NOMEM. While on, a published
 * block that no sequence holds stays cached and counts as free
 * (at_kv_arena_free_blocks): it is handed out, least recently released
 * first, only when the free list is empty. */
AT_API at_status at_kv_arena_set_prefix_cache(at_kv_arena *a, bool on);
/* For a sequence with nothing cached yet (len 0): make its leading blocks
 * the published blocks that hold the same first positions of tok[0..n)
 * (whole blocks only; a hit is checked token by token, never by hash
 * alone). Blocks of its own that they replace go back to the arena; the
 * table grows when it held fewer. Returns the positions now cached
 * (seq->len), 0 when the cache is off or nothing matched. Never fails:
 * on any shortage it attaches less. */
AT_API int at_kv_prefix_attach(at_kv_arena *a, at_kv_seq *seq, const int32_t *tok, int n);
/* Publish the full blocks among seq's first seq->len positions, whose
 * tokens are tok[0..len). Blocks already published, or whose prefix is
 * published in another block, are left as they are. No-op when off. */
AT_API void at_kv_prefix_publish(at_kv_arena *a, const at_kv_seq *seq, const int32_t *tok);
/* The positions of tok[0..n) that at_kv_prefix_attach would find cached
 * now (whole blocks). The one arena call that any thread may make, at any
 * time (it reads the table under the arena's own lock); 0 when off. */
AT_API int at_kv_prefix_probe(at_kv_arena *a, const int32_t *tok, int n);
typedef struct at_kv_prefix_counts {
  uint64_t query_tokens; /* positions offered to at_kv_prefix_attach */
  uint64_t hit_tokens;   /* of which found cached */
  int cached_blocks;     /* published blocks no sequence holds */
  int shared_blocks;     /* blocks held by more than one sequence */
} at_kv_prefix_counts;
AT_API void at_kv_prefix_stats(const at_kv_arena *a, at_kv_prefix_counts *out);

/* Copy positions [0, seq->len) of (layer, kv: 0 keys, 1 values) into
 * dst[heads][P][head_dim] and zero positions [len, P). Requires len <= P. */
AT_API void at_kv_gather(const at_kv_arena *a, const at_kv_seq *seq, int layer, int kv, float *dst,
                         int P);
/* Copy n positions from src[heads][T][head_dim] starting at position `from`
 * into the sequence's positions [seq->len, seq->len + n). The caller grows
 * the sequence first and advances seq->len afterwards (once for all layers).
 * AT_ERR_LIMIT when the blocks held cannot take them. */
AT_API at_status at_kv_scatter(at_kv_arena *a, const at_kv_seq *seq, int layer, int kv,
                               const float *src, int T, int from, int n);

/* ------------------------------------------------------------ eviction */

/* What the eviction policy knows about one running sequence. */
typedef struct at_evict_cand {
  int id;                /* caller's handle, returned in the order */
  double slack_s;        /* deadline - now - expected time to finish if kept */
  double recompute_s;    /* fitted cost of rebuilding its cache after eviction */
  int blocks;            /* blocks it would free */
} at_evict_cand;

typedef enum at_evict_class {
  AT_EVICT_DOOMED = 0,     /* slack < 0: misses its deadline whatever we do */
  AT_EVICT_SURVIVES = 1,   /* slack >= recompute: still on time after recompute */
  AT_EVICT_WITHHELD = 2,   /* evicting it would make it miss: never chosen */
} at_evict_class;

AT_API at_evict_class at_evict_classify(const at_evict_cand *c);

/* Order the candidates for eviction: doomed first (least slack first), then
 * those that survive their own recompute (most surviving slack, slack -
 * recompute, first); withheld candidates are left out. Writes the chosen
 * ids to order[] and returns how many (<= n). Ties keep input order. */
AT_API size_t at_evict_order(const at_evict_cand *c, size_t n, int *order);

/* Pick victims in that order until at least `need_blocks` would be free
 * (counting `free_blocks` already free). Writes victim ids, returns their
 * count, or 0 when even every evictable candidate would not free enough
 * (then nothing should be evicted). */
AT_API size_t at_evict_plan(const at_evict_cand *c, size_t n, int free_blocks, int need_blocks,
                            int *victims);

/* ------------------------------------------------------------ linear fit */

/* Online least squares of y = a + b x (running sums; no storage). */
typedef struct at_linfit {
  double n, sx, sy, sxx, sxy;
} at_linfit;

AT_API void at_linfit_add(at_linfit *f, double x, double y);
/* Intercept and slope; with fewer than two distinct x the slope is y/x
 * through the origin (or 0) and the intercept 0. Returns false when empty. */
AT_API bool at_linfit_get(const at_linfit *f, double *a, double *b);

/* ------------------------------------------------------------ generation policy */

/* The generator's cost model and block forecast (src/decode/gen_policy.c),
 * pure. Seconds to rebuild `tokens` cached positions in chunks of
 * chunk_tokens, each chunk priced by `prefill` (seconds against the chunk's
 * tokens; 1 ms per chunk while it is empty). */
AT_API double at_gen_recompute_s(const at_linfit *prefill, int chunk_tokens, int tokens);
/* Expected seconds for a sequence to finish if it keeps its cache:
 * rebuilding `to_prefill` positions, then `to_decode` tokens at tpot_s. */
AT_API double at_gen_remaining_s(const at_linfit *prefill, int chunk_tokens, int to_prefill,
                                 int to_decode, double tpot_s);
/* Seconds until at least `need` KV blocks are free when `free_now` are and
 * running sequence i frees blocks[i] when it finishes in t_left[i] seconds
 * (soonest first; ties to the lower index): 0 when free_now >= need,
 * INFINITY when all of them together are not enough. blocks[] is scratch:
 * the entries taken are set to -1. */
AT_API double at_gen_blocks_free_in(const double *t_left, int *blocks, int n, int free_now, int need);

/* ------------------------------------------------------------ sampling */

typedef struct at_sample_params {
  float temperature;   /* 0 = greedy (argmax); default 0 */
  int top_k;           /* 0 = off */
  float top_p;         /* 1 = off; in (0, 1] */
  uint64_t seed;       /* RNG seed */
} at_sample_params;

AT_API at_sample_params at_sample_default_params(void);

/* Choose the next token from logits[vocab]. `scratch` needs room for
 * AT_SAMPLE_SCRATCH_PER_VOCAB * vocab floats (its contents are clobbered;
 * unused when greedy). Greedy ties go to the lowest id. Sampling orders
 * the vocabulary by probability (descending, ties by id), cuts it by top_k
 * and top_p, and walks that order with one uniform draw. */
#define AT_SAMPLE_SCRATCH_PER_VOCAB 5
AT_API int32_t at_sample(const float *logits, int vocab, const at_sample_params *p, at_rng *rng,
                         float *scratch);

/* Log-probabilities of a token and its most likely alternatives, from the
 * model's own distribution: log-softmax of the raw logits, before
 * temperature, penalties, top-k and top-p (what the OpenAI API reports). */
#define AT_MAX_TOP_LOGPROBS 20
typedef struct at_token_logprob {
  int32_t token;
  float logprob;
  int n_top;                                 /* 0..AT_MAX_TOP_LOGPROBS */
  int32_t top_ids[AT_MAX_TOP_LOGPROBS];      /* most likely first; ties: lower id first */
  float top_logprobs[AT_MAX_TOP_LOGPROBS];
} at_token_logprob;

/* Fill out->top_* with the k (clamped to 0..AT_MAX_TOP_LOGPROBS and vocab)
 * most likely tokens of logits[vocab] and return the log-sum-exp of the
 * logits (so the log-probability of id t is logits[t] - lse). out->token
 * and out->logprob are left to the caller. Pure. */
AT_API double at_logprobs_top(const float *logits, int vocab, int k, at_token_logprob *out);

/* OpenAI's presence and frequency penalties: logits[t] -= frequency * c(t)
 * + presence * (c(t) > 0), where c(t) counts t among gen[0..n_gen). Ids
 * outside [0, vocab) are ignored. `count` needs vocab ints, all zero on
 * entry, and is left all zero. Pure. */
AT_API void at_apply_penalties(float *logits, int vocab, const int32_t *gen, int n_gen, float presence,
                               float frequency, int *count);

/* ------------------------------------------------------------ decoder */

typedef struct at_decoder at_decoder;

/* What the decoder learned from the graph's signature. */
typedef struct at_decoder_info {
  int layers, heads, head_dim, vocab; /* heads: key/value heads (fewer than the
                                         query heads under grouped-query attention) */
  int max_positions; /* from config.json n_positions, 0 if unknown */
  /* The graph takes position_ids. Without them (older GPT-2 exports) it
   * counts positions from the past's length, so one step may only hold
   * sequences whose past lengths are equal: at_decoder_step refuses others,
   * and the generator groups its decode steps that way. */
  bool position_ids;
} at_decoder_info;

/* Open a decoder over `model_path` (an ONNX export with input_ids,
 * attention_mask, optionally position_ids, and past_key_values.{i}.key/value
 * in; logits and present.{i}.key/value out). A graph in the
 * GroupQueryAttention form (input_ids, int32 seqlens_k and
 * total_sequence_length instead of the mask and positions, as
 * onnxruntime-genai's model builder writes it) runs with one past/present
 * buffer per layer key/value shared in place (decoder.c says how); the
 * same calls serve both. `n_positions` (0 = unknown) bounds positions.
 * AT_ERR_MODEL names what the signature lacks. */
AT_API at_status at_decoder_create(const char *model_path, const at_session_params *sp,
                                   int n_positions, at_decoder **out);
AT_API void at_decoder_destroy(at_decoder *d);
AT_API const at_decoder_info *at_decoder_get_info(const at_decoder *d);

/* One sequence's share of a step: `n_new` tokens at positions
 * [seq->len, seq->len + n_new). `id` names the sequence for the decoder's
 * carried past (below); 0: never carried. Ids must be unique among the
 * sequences alive; a sequence whose cache was rebuilt (preempted and
 * recomputed) must appear in some step other than a continuation first
 * (its recompute's prefill does that). */
typedef struct at_decode_item {
  at_kv_seq *seq;
  const int32_t *tokens;
  int n_new;
  uint64_t id;
} at_decode_item;

/* Run one step over `n` sequences. Every item must have the same n_new
 * (a batched decode step has n_new == 1; a prefill chunk is one item).
 * Gathers each sequence's cache (right-padded to the longest), runs the
 * graph, scatters the new keys and values into the arena (the caller must
 * have grown each sequence to hold seq->len + n_new positions) and advances
 * seq->len. Writes the last position's logits of item i to
 * logits[i * vocab]. AT_ERR_LIMIT when positions would exceed the model's.
 *
 * Carried past: after a decode step (n_new 1, every id nonzero) the decoder
 * keeps the graph's present tensors; a next step over the same ids (in any
 * order), each advanced by exactly that one position, reads them as its
 * past instead of gathering the arena, so a steady batch copies no KV but
 * the new tail it scatters. A step that is not such a continuation and
 * names any carried id drops them. */
AT_API at_status at_decoder_step(at_decoder *d, at_kv_arena *a, at_decode_item *items, int n,
                                 float *logits);
/* Steps that read the carried past, and steps that gathered the arena. */
AT_API void at_decoder_carry_stats(const at_decoder *d, uint64_t *carried, uint64_t *gathered);

/* The reference path (no arena): run `n_new` tokens of one sequence with
 * `past` as the past tensors (NULL for none), returning the last position's
 * logits and the graph's own present tensors, which become the next call's
 * past. *present is allocated here: 2 * layers tensors of
 * [1][heads][past_len + n_new][head_dim], freed with at_decoder_past_free. */
typedef struct at_decoder_past {
  int len;
  float **kv; /* [2 * layers], keys then values per layer */
} at_decoder_past;

AT_API at_status at_decoder_step_reference(at_decoder *d, const at_decoder_past *past,
                                           const int32_t *tokens, int n_new, float *logits,
                                           at_decoder_past *present);
AT_API void at_decoder_past_free(at_decoder_past *p);

/* Score a token window in one run with no past: the summed negative
 * log-likelihood (natural log) of tokens[1..n-1], each given the tokens
 * before it. *n_scored = n - 1. For perplexity. */
AT_API at_status at_decoder_nll(at_decoder *d, const int32_t *tokens, int n, double *nll,
                                int *n_scored);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_DECODE_H */
