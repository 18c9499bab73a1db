/* src/engine/profile.c — a variant's service time measured through the
 * serving path (contract in anytime/profile.h): the one measuring core that
 * `anytime profile` (src/tools/profile_*.c) and the server's start-up
 * measurement (src/serve/models.c) both call. Beside it, the pure helpers
 * of `anytime profile --length-buckets`: the quantile cuts of the length
 * buckets and the least-squares fit of the length model to their s(1).
 *
 * DESIGN
 *   Threads: the calling thread draws the sequences, submits them to a
 *     private at_batcher and waits; engine workers run the batches and call
 *     on_item(), which records the item's Run time, batch size and peers in
 *     the item's slot and counts the item down in the submission's
 *     wait_group. The caller reads the slots only after the count reached
 *     zero, so the slots need no lock of their own.
 *   Sequences: a batch draws from the pool of the caller's sequences whose
 *     length is in [min_len, max_len] (every one by default), so a caller
 *     can time s(b) per length bucket with the same code.
 *   Ownership: the caller's sequences are read in place (the batcher copies
 *     them into its batch buffers); slots, index, pool and time arrays belong to
 *     one call and are freed before it returns, after the batcher has been
 *     destroyed (drained), so no callback can touch them afterwards.
 *   Batches: the batcher's max_batch_size is b and its delay one second, so
 *     with one submitting thread a batch closes exactly at every b-th item,
 *     in submission order: slot w*b is the first item of batch w.
 *   Lock: wait_group.m guards its `left`, `st` and `err`; a callback does
 *     not touch the group after unlocking it (the waiter may then free it).
 */
#include "anytime/profile.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anytime/batcher.h"
#include "core/internal.h"

typedef struct wait_group {
  pthread_mutex_t m;
  pthread_cond_t c;
  size_t left;   /* items submitted and not yet completed */
  at_status st;  /* the first failure among them */
  char err[512]; /* its detail */
} wait_group;

typedef struct slot {
  wait_group *g;
  double service_s; /* the Run of the item's batch */
  int batch;        /* items in that batch */
  int peers;        /* other Runs during it (at_item_result.peers) */
} slot;

/* One call's state: the batcher, the sequences, the scratch arrays. */
typedef struct prun {
  at_batcher *b;
  int variant, bsz, workers;
  const int64_t *const *ids;
  const size_t *lens;
  size_t n_seqs;
  uint64_t *rng;
  size_t *pool;        /* the sequences a batch may hold (those in the length range) */
  size_t n_pool;
  slot *slots;         /* one per item of the largest submission */
  size_t *idx;         /* the same size: the drawn sequence indices */
  unsigned char *used; /* n_pool marks for drawing without repetition */
  double *t;           /* iters alone Run times */
  double *tb;          /* busy Run times: iters + one round's batches */
  size_t n_busy_batches;
} prun;

at_profile_params at_profile_default_params(void) {
  return (at_profile_params){.batch_size = 1, .iters = 40, .passes = 3, .warmup = 0, .busy = true};
}

static void on_item(void *user, at_status st, const at_item_result *r, const char *err) {
  slot *s = user;
  wait_group *g = s->g;
  if (st == AT_OK) {
    s->service_s = (double)(r->finished_ns - r->started_ns) / 1e9;
    s->batch = r->batch_size;
    s->peers = r->peers;
  }
  pthread_mutex_lock(&g->m);
  if (st != AT_OK && g->st == AT_OK) {
    g->st = st;
    snprintf(g->err, sizeof g->err, "%s", err ? err : "");
  }
  if (--g->left == 0) pthread_cond_signal(&g->c);
  pthread_mutex_unlock(&g->m);
}

/* The next of the reproducible choices: an index below n. */
static size_t pick(uint64_t *rng, size_t n) {
  *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
  return (size_t)((*rng >> 33) % n);
}

/* R->idx[0..k): k sequence indices from the pool, distinct when it holds
 * at least k (a repeat moves on to the next free one), else drawn with
 * repetition. Without a length range the pool is every sequence in order,
 * so the draws are those of the versions before the range existed. */
static void draw(prun *R, size_t k) {
  size_t n = R->n_pool, at[AT_PROFILE_MAX_BATCH * 16];
  bool mark = k <= n && k <= sizeof at / sizeof at[0];
  for (size_t q = 0; q < k; q++) {
    size_t i = pick(R->rng, n);
    if (mark) {
      while (R->used[i]) i = (i + 1) % n;
      R->used[i] = 1;
      at[q] = i;
    }
    R->idx[q] = R->pool[i];
  }
  if (mark)
    for (size_t q = 0; q < k; q++) R->used[at[q]] = 0;
}

/* Submit the sequences R->idx[0..n) in order (slot q for the q-th) and
 * wait for all of them. Returns AT_OK or the first failure. */
static at_status run_set(prun *R, size_t n) {
  wait_group g = {.left = n, .st = AT_OK};
  pthread_mutex_init(&g.m, NULL);
  pthread_cond_init(&g.c, NULL);
  size_t sent = 0;
  at_status st = AT_OK;
  for (; sent < n; sent++) {
    slot *s = &R->slots[sent];
    *s = (slot){.g = &g};
    at_batch_item bi = {.input_ids = R->ids[R->idx[sent]],
                        .len = R->lens[R->idx[sent]],
                        .done = on_item,
                        .user = s};
    while ((st = at_batcher_submit(R->b, R->variant, &bi)) == AT_ERR_QUEUE_FULL) usleep(100);
    if (st != AT_OK) break;
  }
  pthread_mutex_lock(&g.m);
  g.left -= n - sent; /* never submitted: no callback will count them */
  while (g.left > 0) pthread_cond_wait(&g.c, &g.m);
  pthread_mutex_unlock(&g.m);
  pthread_mutex_destroy(&g.m);
  pthread_cond_destroy(&g.c);
  if (st != AT_OK) return st; /* at_batcher_submit() set the detail */
  if (g.st != AT_OK) return at_fail(g.st, "a profiling Run failed: %s", g.err);
  return AT_OK;
}

double at_profile_median(double *v, size_t n) {
  qsort(v, n, sizeof *v, at_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

int at_profile_length_cuts(const size_t *lens, size_t n, int k, size_t *scratch, size_t *cuts) {
  memcpy(scratch, lens, n * sizeof *scratch);
  qsort(scratch, n, sizeof *scratch, cmp_size);
  int nc = 0;
  for (int j = 1; j < k; j++) {
    size_t at = ((size_t)j * n + (size_t)k - 1) / (size_t)k; /* ceil(j n / k) */
    size_t c = scratch[at ? at - 1 : 0];
    if (c >= scratch[n - 1] || (nc && c <= cuts[nc - 1])) continue; /* empty above, or a repeat */
    cuts[nc++] = c;
  }
  return nc + 1;
}

at_status at_profile_fit_length(const double *tokens, const double *service_s, const double *weight,
                                size_t n, double ref_tokens, at_profile_length_fit *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!tokens || !service_s || !weight || !out)
    return at_fail(AT_ERR_INVALID_ARG, "length fit: NULL argument");
  if (n < 2)
    return at_fail(AT_ERR_INVALID_ARG, "length fit: %zu length bucket%s, a slope needs 2", n,
                   n == 1 ? "" : "s");
  if (!(ref_tokens >= 1 && ref_tokens <= 100000))
    return at_fail(AT_ERR_INVALID_ARG, "length fit: reference length %g is not in 1..100000",
                   ref_tokens);
  double sw = 0, swt = 0, sws = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(isfinite(tokens[i]) && tokens[i] > 0 && isfinite(service_s[i]) && service_s[i] > 0))
      return at_fail(AT_ERR_INVALID_ARG, "length fit: point %zu (%g tokens, %g s) is not positive",
                     i, tokens[i], service_s[i]);
    if (!(isfinite(weight[i]) && weight[i] >= 0))
      return at_fail(AT_ERR_INVALID_ARG, "length fit: point %zu has weight %g", i, weight[i]);
    sw += weight[i], swt += weight[i] * tokens[i], sws += weight[i] * service_s[i];
  }
  if (!(sw > 0)) return at_fail(AT_ERR_INVALID_ARG, "length fit: every weight is 0");
  double tbar = swt / sw, sbar = sws / sw, stt = 0, sts = 0;
  for (size_t i = 0; i < n; i++) {
    double dt = tokens[i] - tbar;
    stt += weight[i] * dt * dt;
    sts += weight[i] * dt * (service_s[i] - sbar);
  }
  if (!(stt > 1e-12 * tbar * tbar * sw))
    return at_fail(AT_ERR_INVALID_ARG,
                   "length fit: every bucket has the same mean length (%g tokens): no slope", tbar);
  double b = sts / stt, a = sbar - b * tbar;
  if (b <= 0) { /* cost does not grow with length: the best constant, no model */
    out->a_s = sbar;
    return AT_OK;
  }
  if (a < 0) { /* through the origin */
    double swts = 0, swtt = 0;
    for (size_t i = 0; i < n; i++)
      swts += weight[i] * tokens[i] * service_s[i], swtt += weight[i] * tokens[i] * tokens[i];
    b = swts / swtt, a = 0;
    out->through_origin = true;
  }
  out->a_s = a, out->b_s = b;
  double c = b / (a + b * ref_tokens); /* <= 1 / ref_tokens <= 1, up to rounding */
  if (c * ref_tokens > 1) { /* rounding: the largest c with c x ref <= 1 exactly, a few steps */
    c = 1 / ref_tokens;
    while (c * ref_tokens > 1) c = nextafter(c, 0);
  }
  out->len_ref_tokens = ref_tokens;
  out->len_cost_per_token = c;
  return AT_OK;
}

/* One alone batch: draw, tell the hook (timed ones only), run; the Run
 * time into *t. */
static at_status alone_batch(prun *R, const at_profile_params *p, int pass, int iter, double *t) {
  draw(R, (size_t)R->bsz);
  if (t && p->on_batch) p->on_batch(p->user, pass, iter, R->idx, (size_t)R->bsz);
  at_status st = run_set(R, (size_t)R->bsz);
  if (st != AT_OK) return st;
  if (R->slots[0].batch != R->bsz)
    return at_fail(AT_ERR_STATE, "a batch of %d ran as %d", R->bsz, R->slots[0].batch);
  if (t) *t = R->slots[0].service_s;
  return AT_OK;
}

/* One pass's busy phase: rounds of n_busy_batches batches submitted at
 * once until `iters` full-pool Runs are collected (or 20 x iters rounds);
 * their median into *med (0 if none), their count added to *runs. */
static at_status busy_pass(prun *R, int iters, double *med, size_t *runs) {
  size_t nb = 0, nbat = R->n_busy_batches, bsz = (size_t)R->bsz;
  for (int k = 0; nb < (size_t)iters && k < 20 * iters; k++) {
    draw(R, nbat * bsz);
    at_status st = run_set(R, nbat * bsz);
    if (st != AT_OK) return st;
    for (size_t w = 0; w < nbat; w++) {
      const slot *first = &R->slots[w * bsz];
      if (first->peers >= R->workers - 1 && first->batch == R->bsz) R->tb[nb++] = first->service_s;
    }
  }
  *med = nb ? at_profile_median(R->tb, nb) : 0;
  *runs += nb;
  return AT_OK;
}

/* Every pass, then the medians and spreads into *out. */
static at_status measure_passes(prun *R, const at_profile_params *p, at_profile_result *out) {
  at_status st = AT_OK;
  for (int k = 0; st == AT_OK && k < p->warmup; k++) st = alone_batch(R, p, -1, k, NULL);
  for (int pass = 0; st == AT_OK && pass < p->passes; pass++) {
    for (int k = 0; st == AT_OK && k < p->iters; k++) st = alone_batch(R, p, pass, k, &R->t[k]);
    if (st != AT_OK) break;
    out->pass_s[pass] = at_profile_median(R->t, (size_t)p->iters);
    if (out->busy_measured) st = busy_pass(R, p->iters, &out->busy_pass_s[pass], &out->busy_runs);
  }
  if (st != AT_OK) return st;
  size_t np = (size_t)p->passes;
  double pm[AT_PROFILE_MAX_PASSES];
  memcpy(pm, out->pass_s, np * sizeof *pm);
  out->median_s = at_profile_median(pm, np);
  out->spread_pct = out->median_s > 0 ? 100.0 * (pm[np - 1] - pm[0]) / out->median_s : 0;
  if (out->busy_measured) {
    memcpy(pm, out->busy_pass_s, np * sizeof *pm);
    double bmed = at_profile_median(pm, np);
    out->busy_median_s = pm[0] > 0 ? bmed : 0; /* a pass without full-pool Runs: unknown */
    out->busy_spread_pct = out->busy_median_s > 0 ? 100.0 * (pm[np - 1] - pm[0]) / bmed : 0;
  }
  return AT_OK;
}

static at_status check_args(at_engine *e, int variant, const int64_t *const *ids,
                            const size_t *lens, size_t n_seqs, const at_profile_params *p,
                            const at_profile_result *out, size_t *max_len) {
  if (!e || !ids || !lens || !out) return at_fail(AT_ERR_INVALID_ARG, "profile: NULL argument");
  if (variant < 0 || variant >= at_engine_variant_count(e))
    return at_fail(AT_ERR_INVALID_ARG, "profile: no variant %d (the engine has %d)", variant,
                   at_engine_variant_count(e));
  if (n_seqs == 0) return at_fail(AT_ERR_INVALID_ARG, "profile: no sequences to time");
  if (p->batch_size < 1 || p->batch_size > AT_PROFILE_MAX_BATCH)
    return at_fail(AT_ERR_INVALID_ARG, "profile: batch size %d is not in 1..%d", p->batch_size,
                   AT_PROFILE_MAX_BATCH);
  if (p->max_len && p->max_len < p->min_len)
    return at_fail(AT_ERR_INVALID_ARG, "profile: length range %zu..%zu is empty", p->min_len,
                   p->max_len);
  if (p->iters < 1 || p->iters > AT_PROFILE_MAX_ITERS || p->passes < 1 ||
      p->passes > AT_PROFILE_MAX_PASSES || p->warmup < 0 || p->warmup > AT_PROFILE_MAX_ITERS)
    return at_fail(AT_ERR_INVALID_ARG,
                   "profile: need 1 <= iters <= %d, 1 <= passes <= %d, 0 <= warmup <= %d (got "
                   "%d, %d, %d)",
                   AT_PROFILE_MAX_ITERS, AT_PROFILE_MAX_PASSES, AT_PROFILE_MAX_ITERS, p->iters,
                   p->passes, p->warmup);
  *max_len = 0;
  for (size_t i = 0; i < n_seqs; i++) {
    if (!ids[i] || lens[i] == 0 || lens[i] > AT_PROFILE_MAX_SEQ_LEN)
      return at_fail(AT_ERR_INVALID_ARG, "profile: sequence %zu is %s (1..%d tokens)", i,
                     !ids[i]   ? "NULL"
                     : lens[i] ? "too long"
                               : "empty",
                     AT_PROFILE_MAX_SEQ_LEN);
    if (lens[i] > *max_len) *max_len = lens[i];
  }
  return AT_OK;
}

at_status at_profile_measure(at_engine *e, int variant, const int64_t *const *ids,
                             const size_t *lens, size_t n_seqs, const at_profile_params *params,
                             at_profile_result *out) {
  at_profile_params p = params ? *params : at_profile_default_params();
  size_t max_len = 0;
  at_status st = check_args(e, variant, ids, lens, n_seqs, &p, out, &max_len);
  if (st != AT_OK) return st;
  uint64_t own_rng = 0x5EED0001u;
  prun R = {.variant = variant,
            .bsz = p.batch_size,
            .workers = at_engine_worker_count(e),
            .ids = ids,
            .lens = lens,
            .n_seqs = n_seqs,
            .rng = p.rng ? p.rng : &own_rng};
  R.pool = calloc(n_seqs, sizeof *R.pool);
  if (!R.pool) return at_fail(AT_ERR_NOMEM, "out of memory");
  max_len = 0;
  for (size_t i = 0; i < n_seqs; i++)
    if (lens[i] >= p.min_len && (!p.max_len || lens[i] <= p.max_len)) {
      R.pool[R.n_pool++] = i;
      if (lens[i] > max_len) max_len = lens[i];
    }
  if (!R.n_pool) {
    free(R.pool);
    return at_fail(AT_ERR_INVALID_ARG, "profile: no sequence of %zu..%zu tokens", p.min_len,
                   p.max_len);
  }
  n_seqs = R.n_pool; /* what a batch may draw from */
  memset(out, 0, sizeof *out);
  out->batch_size = p.batch_size, out->passes = p.passes, out->workers = R.workers;
  out->busy_measured = p.busy && R.workers > 1;
  /* the busy rounds: 4 batches per worker, fewer (down to one per worker)
   * while that needs more sequences than there are, and at most 4096 items */
  size_t nbat = 4 * (size_t)R.workers, bsz = (size_t)p.batch_size;
  while (nbat > (size_t)R.workers && (nbat * bsz > n_seqs || nbat * bsz > 4096)) nbat--;
  R.n_busy_batches = out->busy_measured ? nbat : 0;
  size_t n_slots = out->busy_measured && nbat * bsz > bsz ? nbat * bsz : bsz;
  R.slots = calloc(n_slots, sizeof *R.slots);
  R.idx = calloc(n_slots, sizeof *R.idx);
  R.used = calloc(n_seqs, 1);
  R.t = calloc((size_t)p.iters, sizeof *R.t);
  R.tb = calloc((size_t)p.iters + nbat, sizeof *R.tb);
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = p.batch_size;
  bp.max_queue_delay_us = 1000000; /* close only when exactly b are there */
  bp.max_seq_len = max_len;
  if (!R.slots || !R.idx || !R.used || !R.t || !R.tb)
    st = at_fail(AT_ERR_NOMEM, "out of memory");
  else
    st = at_batcher_create(e, &bp, &R.b);
  if (st == AT_OK) st = measure_passes(&R, &p, out);
  at_batcher_destroy(R.b); /* drains: no callback runs after this */
  free(R.slots), free(R.idx), free(R.used), free(R.t), free(R.tb), free(R.pool);
  return st;
}
