/* src/plan/erlang.c — the planner's pure mathematics (see anytime/plan.h):
 * Erlang B by the stable recursion, Erlang C, M/M/c waits with the
 * per-worker rate, the backlog bound, the accuracy/cost Pareto frontier,
 * service-time interpolation, and the deadline and Retry-After helpers.
 * No state, no locks: every function here is safe from any thread. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "anytime/plan.h"
#include "core/internal.h"

double at_plan_erlang_b(int c, double a) {
  if (c < 0 || !(a >= 0) || !isfinite(a)) return NAN;
  /* B(k) = a·B(k-1) / (k + a·B(k-1)): every term stays in [0, 1], so the
   * recursion neither overflows (as a^c/c! does) nor cancels. */
  double b = 1.0;
  for (int k = 1; k <= c; k++) b = a * b / ((double)k + a * b);
  return b;
}

double at_plan_erlang_c(int c, double a) {
  if (c < 1 || !(a >= 0) || !isfinite(a)) return NAN;
  double rho = a / (double)c;
  if (rho >= 1.0) return 1.0;
  double b = at_plan_erlang_b(c, a);
  return b / (1.0 - rho * (1.0 - b));
}

double at_plan_mmc_wait_s(int c, double lambda, double mu) {
  if (c < 1 || !(lambda >= 0) || !(mu > 0) || !isfinite(mu)) return NAN;
  if (isinf(lambda)) return INFINITY;
  if (lambda == 0) return 0.0;
  double cap = (double)c * mu;
  if (lambda >= cap) return INFINITY;
  return at_plan_erlang_c(c, lambda / mu) / (cap - lambda);
}

double at_plan_mmc_wait_quantile_s(int c, double lambda, double mu, double q) {
  if (c < 1 || !(lambda >= 0) || !(mu > 0) || !isfinite(mu) || !(q > 0 && q < 1)) return NAN;
  if (isinf(lambda)) return INFINITY;
  if (lambda == 0) return 0.0;
  double cap = (double)c * mu;
  if (lambda >= cap) return INFINITY;
  double pw = at_plan_erlang_c(c, lambda / mu);
  if (pw <= 1.0 - q) return 0.0;
  return log(pw / (1.0 - q)) / (cap - lambda);
}

double at_plan_mmc_sojourn_s(int c, double lambda, double mu) {
  double wq = at_plan_mmc_wait_s(c, lambda, mu);
  return wq + 1.0 / mu; /* NaN and INFINITY propagate */
}

double at_plan_backlog_s(uint64_t in_flight, int c, double service_s) {
  if (in_flight == 0) return 0.0;
  if (c < 1) return NAN;
  uint64_t rounds = (in_flight + (uint64_t)c - 1) / (uint64_t)c;
  return (double)rounds * service_s;
}

size_t at_plan_frontier(const double *accuracy, const double *cost, size_t n,
                        bool *on_frontier) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    bool ok = !isnan(accuracy[i]) && !isnan(cost[i]);
    for (size_t j = 0; ok && j < n; j++) {
      if (j == i || isnan(accuracy[j]) || isnan(cost[j])) continue;
      bool ge = accuracy[j] >= accuracy[i] && cost[j] <= cost[i];
      bool strict = accuracy[j] > accuracy[i] || cost[j] < cost[i];
      if (ge && (strict || j < i)) ok = false; /* dominated, or a later duplicate */
    }
    on_frontier[i] = ok;
    kept += ok;
  }
  return kept;
}

double at_plan_variant_service_s(const at_plan_variant *v, double b) {
  if (!v || v->n_points == 0 || isnan(b)) return NAN;
  size_t n = v->n_points;
  if (b <= v->batch[0]) return v->service_s[0];
  for (size_t i = 1; i < n; i++) {
    if (b <= v->batch[i]) {
      double x0 = v->batch[i - 1], x1 = v->batch[i];
      double y0 = v->service_s[i - 1], y1 = v->service_s[i];
      return y0 + (y1 - y0) * (b - x0) / (x1 - x0);
    }
  }
  return v->service_s[n - 1] * b / (double)v->batch[n - 1];
}

double at_plan_variant_weight(const at_plan_variant *v, double tokens) {
  if (!v || !(v->len_ref_tokens > 0) || !(v->len_cost_per_token > 0) || !(tokens > 0) ||
      !isfinite(tokens))
    return 1.0;
  double w = 1.0 + v->len_cost_per_token * (tokens - v->len_ref_tokens);
  return w < 1.0 / 16 ? 1.0 / 16 : w > 64 ? 64 : w;
}

double at_plan_cap_deadline(double requested_s, double default_s, double max_s) {
  double d = (requested_s > 0) ? requested_s : default_s; /* NaN fails > 0 */
  return d > max_s ? max_s : d;
}

at_status at_plan_parse_deadline_ms(const char *value, double default_s, double max_s,
                                    double *out_s) {
  if (!out_s) return at_fail(AT_ERR_INVALID_ARG, "out_s is NULL");
  const char *s = value;
  while (s && (*s == ' ' || *s == '\t')) s++;
  if (!s || !*s) {
    *out_s = at_plan_cap_deadline(0, default_s, max_s);
    return AT_OK;
  }
  /* Digits with an optional fraction only: strtod would also take hex,
   * exponents, "inf" and "nan", none of which a deadline header means. */
  const char *p = s;
  size_t digits = 0;
  while (isdigit((unsigned char)*p)) p++, digits++;
  if (*p == '.') {
    p++;
    while (isdigit((unsigned char)*p)) p++, digits++;
  }
  const char *end = p;
  while (*p == ' ' || *p == '\t') p++;
  if (digits == 0 || *p != '\0' || end - s > 32)
    return at_fail(AT_ERR_PARSE, "x-deadline-ms must be a positive number of milliseconds");
  errno = 0;
  double ms = strtod(s, NULL);
  if (errno != 0 || !(ms > 0) || !isfinite(ms))
    return at_fail(AT_ERR_PARSE, "x-deadline-ms must be a positive number of milliseconds");
  *out_s = at_plan_cap_deadline(ms / 1000.0, default_s, max_s);
  return AT_OK;
}

int at_plan_retry_after_header(double retry_after_s) {
  if (!(retry_after_s > 1.0)) return 1; /* also NaN */
  if (retry_after_s >= 3600.0) return 3600;
  return (int)ceil(retry_after_s);
}
