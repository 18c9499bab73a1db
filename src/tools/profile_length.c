/* src/tools/profile_length.c — the length buckets of the profile pipeline
 * (tools/profile_impl.h), with --length-buckets K: s(b) of a variant, alone,
 * over the texts of one length bucket at a time (K quantile buckets of the
 * split's token lengths, at_profile_length_cuts), and the length model
 * fitted to the buckets' s(1) (at_profile_fit_length): len_ref_tokens and
 * len_cost_per_token, which go into the variant's configuration. It also
 * writes the buckets' and the fit's JSON records and the check table printed
 * at the end of the run, which sets the planner's estimate with and without
 * the length model against each bucket's measured s(b). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/anytime.h"
#include "tools/profile_impl.h"

/* --length-buckets: s(b) of variant v, alone, at every batch size, over
 * the texts of one length bucket at a time (at_profile_length_cuts splits
 * the split's token lengths by quantile; at_profile_measure draws each
 * batch from one bucket's texts). */
int prof_measure_length_buckets(prof_state *P, prof_model *M, int v) {
  prof_variant *x = &M->vr[v];
  size_t n = P->ds->n, cuts[PROF_MAX_LENGTH_BUCKETS], *scratch = malloc(n * sizeof *scratch);
  if (!scratch) return prof_report(at_fail(AT_ERR_NOMEM, "out of memory"));
  x->n_lb = at_profile_length_cuts(M->lens, n, P->o->n_lb, scratch, cuts);
  free(scratch);
  double *dl = malloc(n * sizeof *dl);
  if (!dl) return prof_report(at_fail(AT_ERR_NOMEM, "out of memory"));
  for (size_t i = 0; i < n; i++) dl[i] = (double)M->lens[i];
  x->mixed_median = at_profile_median(dl, n);
  free(dl);
  double total = 0;
  for (size_t i = 0; i < n; i++) total += (double)M->lens[i];
  x->mixed_mean = total / (double)n;
  for (int k = 0; k < x->n_lb; k++) {
    x->lb_lo[k] = k ? cuts[k - 1] + 1 : 1;
    x->lb_hi[k] = k < x->n_lb - 1 ? cuts[k] : AT_PROFILE_MAX_SEQ_LEN;
    x->lb_texts[k] = 0;
    double tok = 0;
    for (size_t i = 0; i < n; i++)
      if (M->lens[i] >= x->lb_lo[k] && M->lens[i] <= x->lb_hi[k])
        x->lb_texts[k]++, tok += (double)M->lens[i];
    x->lb_mean[k] = tok / (double)x->lb_texts[k];
    for (int bi = 0; bi < P->o->n_bs; bi++) {
      at_profile_params pp = at_profile_default_params();
      pp.batch_size = P->o->bs[bi];
      pp.iters = P->o->iters < AT_PROFILE_MAX_ITERS ? P->o->iters : AT_PROFILE_MAX_ITERS;
      pp.passes = P->o->repeats;
      pp.busy = false;
      pp.rng = &M->rng;
      pp.min_len = x->lb_lo[k], pp.max_len = x->lb_hi[k];
      at_profile_result r;
      at_status st =
          at_profile_measure(M->eng, v, (const int64_t *const *)M->ids, M->lens, n, &pp, &r);
      if (st != AT_OK) return prof_report(st);
      x->lb_s[k][bi] = r.median_s;
      memcpy(x->lb_pass[k][bi], r.pass_s, (size_t)P->o->repeats * sizeof(double));
    }
    fprintf(stderr,
            "%sprofile: %s/%s texts of %zu..%zu tokens (%zu): s(%d) %.4f ms, s(%d) %.4f ms\n",
            prof_cr(P), M->mc->name, x->name, x->lb_lo[k], x->lb_hi[k], x->lb_texts[k], P->o->bs[0],
            x->lb_s[k][0] * 1e3, P->o->bs[P->o->n_bs - 1], x->lb_s[k][P->o->n_bs - 1] * 1e3);
    P->step++;
  }
  return AT_EXIT_OK;
}

/* The planner's estimate of a batch of bucket k at batch size bs[bi] under
 * v's length model: the mixed table's s(b) times the weight of the
 * bucket's mean length (at_plan_variant_weight, the planner's own). */
static double model_s(const prof_variant *x, int k, int bi) {
  at_plan_variant lm = {.len_ref_tokens = x->len_ref, .len_cost_per_token = x->len_cost};
  return x->service_s[bi] * at_plan_variant_weight(&lm, x->lb_mean[k]);
}

/* x to d significant digits. */
static double round_sig(double x, int d) {
  if (!(x > 0)) return x;
  double p = pow(10, d - 1 - floor(log10(x)));
  return round(x * p) / p;
}

/* v's length model from its buckets' s at the smallest batch size (1),
 * each weighted by its text count (at_profile_fit_length), relative to the
 * length at which the fitted cost a + b·t equals the table's own s(1), so
 * that the planner's price of a t-token text, s(1)·w(t), is the fitted
 * cost itself. Not the split's mean length: the table is the median of
 * Runs over mixed texts, and with a long tail of documents that median is
 * a short text's time — on a split with a quarter documents at BERT-base
 * size s(1) was half the bucket-weighted mean cost, and prices relative to
 * the mean length came out at half the measured times in every bucket.
 * Rounded as it is worth (the reference to 0.01 token, the cost to 6
 * digits, never past cost x ref = 1); the reference is kept in
 * 1..100000. 0, 0 and a line on stderr when it cannot be fitted. */
void prof_fit_length_model(prof_state *P, prof_model *M, int v) {
  prof_variant *x = &M->vr[v];
  double t[PROF_MAX_LENGTH_BUCKETS], s1[PROF_MAX_LENGTH_BUCKETS], w[PROF_MAX_LENGTH_BUCKETS];
  for (int k = 0; k < x->n_lb; k++)
    t[k] = x->lb_mean[k], s1[k] = x->lb_s[k][0], w[k] = (double)x->lb_texts[k];
  double ref = round(x->mixed_mean * 100) / 100;
  x->len_ref = x->len_cost = 0;
  x->fit_why[0] = '\0';
  at_status st = at_profile_fit_length(t, s1, w, (size_t)x->n_lb, ref < 1 ? 1 : ref, &x->fit);
  if (st == AT_OK && x->fit.b_s > 0) { /* again, anchored where the line meets the table */
    double at = (x->service_s[0] - x->fit.a_s) / x->fit.b_s;
    at = round(at * 100) / 100;
    st = at_profile_fit_length(t, s1, w, (size_t)x->n_lb,
                               at < 1     ? 1
                               : at > 1e5 ? 1e5
                                          : at,
                               &x->fit);
  }
  if (st != AT_OK) {
    snprintf(x->fit_why, sizeof x->fit_why, "%s", at_last_error());
  } else if (x->fit.len_cost_per_token <= 0) {
    snprintf(x->fit_why, sizeof x->fit_why,
             "s(%d) does not grow with length over the buckets (slope clamped to 0)", x->batch[0]);
  } else {
    x->len_ref = x->fit.len_ref_tokens;
    x->len_cost = round_sig(x->fit.len_cost_per_token, 6);
    if (x->len_cost * x->len_ref > 1 || x->len_cost > 1) x->len_cost = x->fit.len_cost_per_token;
  }
  if (x->fit_why[0])
    fprintf(stderr,
            "%sprofile: %s/%s: no length model (%s); writing len_ref_tokens 0, "
            "len_cost_per_token 0\n",
            prof_cr(P), M->mc->name, x->name, x->fit_why);
}

/* The JSON record of v's length buckets: [{min_len, max_len, texts,
 * mean_tokens, by_batch: [{batch, service_time_ms, model_ms,
 * pass_medians_ms}]}]; model_ms is the length model's estimate (model_s). */
json_t *prof_length_buckets_json(const prof_variant *x, int repeats) {
  json_t *a = json_array();
  for (int k = 0; k < x->n_lb; k++) {
    json_t *jb = json_array();
    for (int bi = 0; bi < x->n_b; bi++) {
      json_t *passes = json_array();
      for (int p = 0; p < repeats; p++)
        json_array_append_new(passes, json_real(x->lb_pass[k][bi][p] * 1e3));
      json_array_append_new(jb, json_pack("{s:i, s:f, s:f, s:o}", "batch", x->batch[bi],
                                          "service_time_ms", x->lb_s[k][bi] * 1e3, "model_ms",
                                          model_s(x, k, bi) * 1e3, "pass_medians_ms", passes));
    }
    json_array_append_new(
        a, json_pack("{s:I, s:I, s:I, s:f, s:o}", "min_len", (json_int_t)x->lb_lo[k], "max_len",
                     (json_int_t)x->lb_hi[k], "texts", (json_int_t)x->lb_texts[k], "mean_tokens",
                     x->lb_mean[k], "by_batch", jb));
  }
  return a;
}

/* The JSON record of v's length model: the fit and what was written. */
json_t *prof_length_model_json(const prof_variant *x) {
  json_t *o = json_pack("{s:f, s:f, s:i, s:i, s:s, s:f, s:f, s:f, s:f}", "mixed_mean_tokens",
                        x->mixed_mean, "mixed_median_tokens", x->mixed_median, "fit_batch",
                        x->batch[0], "buckets", x->n_lb, "fit",
                        x->fit_why[0]           ? "off"
                        : x->fit.through_origin ? "through_origin"
                                                : "least_squares",
                        "a_ms", x->fit.a_s * 1e3, "b_ms_per_token", x->fit.b_s * 1e3,
                        "len_ref_tokens", x->len_ref, "len_cost_per_token", x->len_cost);
  if (x->fit_why[0]) json_object_set_new(o, "why_off", json_string(x->fit_why));
  return o;
}

/* The check table of v's length model, for the end of the run: per bucket
 * and batch size the measured s(b), the one table's estimate (the mixed
 * s(b)) and the length model's, each estimate also as a ratio to the
 * measurement (> 1: it overprices). */
void prof_length_check(prof_buf *out, const char *model, const prof_variant *x) {
  if (x->fit_why[0])
    prof_buf_printf(out, "profile: length model of %s/%s: off (%s)\n", model, x->name, x->fit_why);
  else
    prof_buf_printf(
        out,
        "profile: length model of %s/%s: s(%d) = %.4g + %.4g x tokens ms over %d buckets%s;"
        " len_ref_tokens %g, len_cost_per_token %g\n",
        model, x->name, x->batch[0], x->fit.a_s * 1e3, x->fit.b_s * 1e3, x->n_lb,
        x->fit.through_origin ? " (through the origin)" : "", x->len_ref, x->len_cost);
  prof_buf_printf(out, "profile:   %-11s %7s %5s %11s %11s %6s %11s %6s\n", "tokens", "mean",
                  "batch", "measured", "one table", "ratio", "by length", "ratio");
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {0, 0};
  for (int k = 0; k < x->n_lb; k++) {
    char range[32];
    if (k == x->n_lb - 1 && x->lb_hi[k] >= AT_PROFILE_MAX_SEQ_LEN)
      snprintf(range, sizeof range, "%zu+", x->lb_lo[k]);
    else
      snprintf(range, sizeof range, "%zu..%zu", x->lb_lo[k], x->lb_hi[k]);
    for (int bi = 0; bi < x->n_b; bi++) {
      double m = x->lb_s[k][bi], r[2] = {x->service_s[bi] / m, model_s(x, k, bi) / m};
      for (int j = 0; j < 2; j++) {
        if (r[j] < lo[j]) lo[j] = r[j];
        if (r[j] > hi[j]) hi[j] = r[j];
      }
      prof_buf_printf(out, "profile:   %-11s %7.1f %5d %8.4f ms %8.4f ms %6.2f %8.4f ms %6.2f\n",
                      bi ? "" : range, x->lb_mean[k], x->batch[bi], m * 1e3, x->service_s[bi] * 1e3,
                      r[0], model_s(x, k, bi) * 1e3, r[1]);
    }
  }
  prof_buf_printf(out,
                  "profile:   estimate / measured: one table %.2f..%.2f, by length %.2f..%.2f\n",
                  lo[0], hi[0], lo[1], hi[1]);
}
