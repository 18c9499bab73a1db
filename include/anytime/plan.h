/* anytime/plan.h — the admission planner: Erlang B/C queueing estimates, a
 * sliding-window arrival-rate estimate, a backlog bound, a batching-aware
 * sojourn estimate, and the variant selector that admits each request to
 * the most accurate variant that can answer within its deadline, or rejects
 * it at once (the server answers 429 with Retry-After).
 *
 * Pure C, no ONNX Runtime: the planner sees only numbers (service-time
 * tables measured by `anytime profile`, accuracies measured by `anytime
 * eval`) and the events the server reports. docs/planner.md explains the
 * model; the comment above at_planner_decide() states it precisely.
 *
 * Time: every `now_ns` is CLOCK_MONOTONIC in nanoseconds (at_now_ns() in the
 * library, clock_gettime(CLOCK_MONOTONIC) in a program). Durations in the
 * API are seconds as double.
 *
 * Thread-safety: the pure functions (at_plan_*) are safe from any thread.
 * at_planner_decide/admitted/finished/stats may be called from any number of
 * threads at once (one small mutex inside; see src/plan/planner.c).
 * at_planner_create/destroy must not race with any other call on the same
 * planner.
 */
#ifndef ANYTIME_PLAN_H
#define ANYTIME_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_PLAN_MAX_VARIANTS 64  /* variants per planner */
#define AT_PLAN_MAX_POINTS 16    /* points in one service-time table */
#define AT_PLAN_MAX_BATCH 1024   /* largest max_batch accepted */
#define AT_PLAN_MAX_WORKERS 4096 /* largest worker count accepted */

/* ---- queueing mathematics (pure, thread-safe) ---------------------------- */

/* Erlang B blocking probability B(c, a) for c servers and offered load a
 * (erlangs), by the stable recursion B(0,a) = 1,
 * B(k,a) = a·B(k-1,a) / (k + a·B(k-1,a)). Returns NaN for c < 0 or a < 0 or
 * a not finite; B(c, 0) = 0 for c >= 1. */
double at_plan_erlang_b(int c, double a);

/* Erlang C probability that an arrival waits, C(c, a) =
 * B / (1 - ρ(1 - B)) with ρ = a/c. Returns 1 when ρ >= 1 (every arrival
 * waits; the queue is unstable), NaN for invalid arguments (c < 1). */
double at_plan_erlang_c(int c, double a);

/* M/M/c mean wait in queue E[Wq] = C(c, λ/μ) / (cμ - λ) in seconds, for
 * arrival rate `lambda` (1/s), PER-WORKER service rate `mu` (1/s) and `c`
 * workers. Passing the per-worker rate matters: one server of rate μ models
 * c workers as one and understates capacity c-fold. Returns INFINITY when
 * ρ = λ/(cμ) >= 1, 0 when lambda == 0, NaN for invalid arguments. */
double at_plan_mmc_wait_s(int c, double lambda, double mu);

/* The q-quantile of the M/M/c wait in queue: P(Wq > t) = C(c, λ/μ) ·
 * e^(-(cμ - λ)t), so the quantile is 0 when C <= 1 - q (most arrivals do
 * not wait at all) and ln(C / (1 - q)) / (cμ - λ) otherwise. 0 < q < 1.
 * INFINITY when ρ >= 1, NaN for invalid arguments. */
double at_plan_mmc_wait_quantile_s(int c, double lambda, double mu, double q);

/* E[W] = E[Wq] + 1/μ (mean sojourn, wait + service). INFINITY when ρ >= 1.
 * For c = 1 this is exactly 1/(μ - λ). */
double at_plan_mmc_sojourn_s(int c, double lambda, double mu);

/* The backlog bound: `in_flight` requests admitted and not finished, on `c`
 * workers that each take `service_s` per request, need ceil(in_flight/c) ·
 * service_s before a new request can start; a new request's sojourn is at
 * least that plus its own service_s. Returns the backlog term (not
 * including the new request's service). 0 when in_flight == 0. */
double at_plan_backlog_s(uint64_t in_flight, int c, double service_s);

/* Mark which of n (accuracy, cost) pairs lie on the Pareto frontier: a
 * point is dominated when another has accuracy >= and cost <= with at
 * least one strict; of several identical points only the first (lowest
 * index) is kept. on_frontier[i] is set for every i < n. NaN accuracies or
 * costs are never on the frontier. Returns the number on the frontier. */
size_t at_plan_frontier(const double *accuracy, const double *cost, size_t n,
                        bool *on_frontier);

/* The deadline cap. `requested_s` is what the client asked for (e.g. from
 * the x-deadline-ms header); <= 0 or NaN means "not given" and yields
 * `default_s`. A request longer than `max_s` is cut to `max_s` (a client
 * may ask for less time than the server allows, never more). */
double at_plan_cap_deadline(double requested_s, double default_s, double max_s);

/* Parse an x-deadline-ms header value (decimal milliseconds, optional
 * fraction, surrounding blanks allowed; NULL or blank = not given) and cap
 * it as at_plan_cap_deadline() does. Writes seconds to *out_s.
 * Returns AT_OK, AT_ERR_INVALID_ARG (out_s NULL), AT_ERR_PARSE (not a
 * positive finite number; *out_s untouched — the server answers 400). */
at_status at_plan_parse_deadline_ms(const char *value, double default_s, double max_s,
                                    double *out_s);

/* Whole seconds for an HTTP Retry-After header: ceil(retry_after_s),
 * at least 1, at most 3600. */
int at_plan_retry_after_header(double retry_after_s);

/* ---- variants -------------------------------------------------------------- */

/* One variant as the planner sees it. `batch[i]` (strictly ascending, >= 1)
 * and `service_s[i]` (> 0) say that one worker runs a batch of batch[i]
 * requests in service_s[i] seconds (wall time of one Run). Between points
 * the planner interpolates linearly; below the first point it uses the
 * first point's time; above the last it scales the last point's
 * per-request time (no further batching gain assumed). */
typedef struct at_plan_variant {
  const char *name;   /* copied at create; at most 63 bytes */
  double accuracy;    /* higher is better (e.g. held-out accuracy) */
  double cost;        /* compute per request for the frontier; <= 0: s(1) */
  size_t n_points;    /* 1..AT_PLAN_MAX_POINTS */
  int batch[AT_PLAN_MAX_POINTS];
  double service_s[AT_PLAN_MAX_POINTS];
  /* How much slower a Run is while every worker runs one (the profile's
   * service_busy_ms over service_ms at batch 1): where the full-pool
   * correction factor starts and what it ages back to. <= 0: 1. */
  double busy_factor;
} at_plan_variant;

/* s(b): the table's service time for a batch of b (b >= 1, real-valued),
 * interpolated as described above. Pure; NaN if v is NULL or empty. */
double at_plan_variant_service_s(const at_plan_variant *v, double b);

/* ---- the planner ------------------------------------------------------------ */

typedef enum at_plan_policy {
  AT_PLAN_ADAPTIVE = 0,      /* most accurate frontier variant that fits */
  AT_PLAN_ACCURATE_ONLY = 1, /* always the most accurate; same admission rule */
} at_plan_policy;

/* Which arrival rate feeds the Erlang-C term. */
typedef enum at_plan_rate_basis {
  /* Rate of requests admitted (decide said yes, or at_planner_admitted()).
   * Under overload the queue sees only admitted traffic, so the planner
   * settles at the rate the workers can serve instead of rejecting all. */
  AT_PLAN_RATE_ADMITTED = 0,
  /* Rate of every decide() call, admitted or not: the arrival rate of the
   * design the planner follows (the default). More conservative: a variant
   * whose capacity the offered load exceeds is refused outright. */
  AT_PLAN_RATE_OFFERED = 1,
} at_plan_rate_basis;

typedef struct at_planner_params {
  int workers;               /* c: workers sharing the variants; default 2 */
  double default_deadline_s; /* when the request gives none; default 0.050 */
  double max_deadline_s;     /* cap on client deadlines; default 10 */
  at_plan_policy policy;     /* default AT_PLAN_ADAPTIVE */
  at_plan_rate_basis rate_basis; /* default AT_PLAN_RATE_OFFERED */
  double window_s;           /* arrival-rate window, 0.01..60; default 1.0 */
  int window_buckets;        /* resolution of the window, 2..4096; default 50 */
  int max_batch;             /* largest batch the batcher forms; default 1 */
  /* Weight of each observed batch service time in the per-variant
   * correction factor that scales the table (EWMA of observed/table);
   * 0 disables correction. Default 0.05. Each observation counts as 0.5..4
   * times the table (one stalled Run cannot swing the estimate). */
  double service_alpha;
  /* Time constant of that average: an observation arriving dt after the
   * variant's previous one weighs min(service_alpha, 1 - exp(-dt/tau)), so
   * under heavy traffic the factor averages the last ~tau seconds of Runs
   * (hundreds of them) instead of the last ~1/service_alpha, and one burst
   * of slow Runs (a preempted worker, a host stall) moves it little; under
   * light traffic each Run still counts service_alpha. 0 = every
   * observation weighs service_alpha. Default 0.5 s. */
  double service_tau_s;
  /* Evidence ages: without new observations a variant's correction factor
   * decays back toward the profile (1 for the part-pool factor, the
   * variant's busy_factor for the full-pool one) with this half-life, so a
   * variant that stopped getting traffic (everything went elsewhere or was
   * refused) is not judged forever by its last, possibly congested, runs.
   * 0 keeps the factor until the next observation. Default 10 s. */
  double scale_half_life_s;
  /* What the Erlang term compares with the deadline: 0 (default, as the
   * design we build on) the MEAN wait, E[Wq] + s; 0 < q < 1 the q-quantile
   * of the wait, at_plan_mmc_wait_quantile_s() + s — "q of the requests this
   * load would send here meet the deadline", which is what goodput counts.
   * The mean admits up to the load where the average request just makes
   * it, and so half of them may not. The backlog bound is unchanged. */
  double wait_quantile;
} at_planner_params;

/* Why a decision came out as it did. */
typedef enum at_plan_reason {
  AT_PLAN_ADMIT = 0,
  AT_PLAN_REJECT_DEADLINE = 1,   /* every candidate's estimate exceeds the deadline */
  AT_PLAN_REJECT_UNSTABLE = 2,   /* every candidate that could fit has ρ >= 1 */
  AT_PLAN_REJECT_INFEASIBLE = 3, /* the deadline is below every candidate's
                                    batch-1 service time: retrying cannot help */
} at_plan_reason;

typedef struct at_plan_decision {
  bool admit;
  at_plan_reason reason;
  /* Admitted: the chosen variant's index (as given at create). Rejected:
   * the candidate with the smallest estimate (for logs), or -1. */
  int variant;
  double deadline_s;    /* the deadline the decision was made against */
  double est_sojourn_s; /* estimate for `variant`; INFINITY when unstable */
  double erlang_s;      /* its Erlang-C part (wait + own service) */
  double backlog_s;     /* its backlog part (wait before starting) */
  double retry_after_s; /* rejected: seconds until a retry could fit; 0 if
                           admitted or infeasible */
  int batch_assumed;    /* batch size the request is assumed to join */
  double rate_rps;      /* arrival-rate estimate the decision used */
  double rho;           /* utilisation at the rate-side batch size */
} at_plan_decision;

typedef struct at_plan_variant_stats {
  uint64_t admitted;     /* decisions that chose it + at_planner_admitted() */
  uint64_t finished;     /* at_planner_finished() calls */
  uint64_t declined;     /* times it was considered and did not fit */
  uint64_t in_flight;    /* admitted - finished */
  double service_scale;  /* correction factor applied to its table: the
                            larger of the two below */
  double service_scale_full; /* from Runs with the whole worker pool busy */
  double service_scale_part; /* from the other Runs */
  bool on_frontier;      /* false: dominated, never offered */
} at_plan_variant_stats;

typedef struct at_planner_stats {
  double offered_rps;  /* decide() calls per second over the window */
  double admitted_rps; /* admissions per second over the window */
  uint64_t decisions, admitted, rejected;
  uint64_t rejected_deadline, rejected_unstable, rejected_infeasible;
  uint64_t in_flight; /* all variants */
  int n_variants;
  at_plan_variant_stats variants[AT_PLAN_MAX_VARIANTS];
} at_planner_stats;

typedef struct at_planner at_planner;

at_planner_params at_planner_default_params(void);

/* Create a planner over `n` variants (copied; the caller keeps its array).
 * Marks dominated variants (at_plan_frontier on (accuracy, cost)). *out must
 * be freed with at_planner_destroy().
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers, n outside
 * 1..AT_PLAN_MAX_VARIANTS, a parameter out of range, a bad table: empty,
 * unsorted, non-positive or non-finite times, name missing or too long),
 * AT_ERR_NOMEM. */
at_status at_planner_create(const at_planner_params *params, const at_plan_variant *variants,
                            size_t n, at_planner **out);

/* Free the planner. NULL is a no-op. */
void at_planner_destroy(at_planner *p);

/* Decide one request arriving at `now_ns` with deadline `deadline_s`
 * (<= 0: the default; above the cap: the cap; see at_plan_cap_deadline).
 * Records the arrival in the rate window. On admit, the request is counted
 * in flight for the chosen variant at once (so concurrent decisions see
 * it); the caller must later call at_planner_finished() for it exactly once
 * (also when it could not be run). A rejection is an ordinary outcome, not
 * an error: it returns AT_OK with out->admit = false.
 *
 * The estimate for candidate variant v (the model; docs/planner.md,
 * "Batching-aware estimate"):
 *   λ      = arrival-rate estimate (basis per params.rate_basis), including
 *            this arrival; c = params.workers; B = params.max_batch;
 *            s_v(b) = table time × the variant's correction factor.
 *   q_v    = in flight for v; b_join = min(B, q_v + 1): the batch the new
 *            request joins, given what is queued for v ahead of it.
 *   b_need = the smallest b in 1..B with λ·s_v(b)/b < c, the batch size the
 *            batcher must reach to keep up (B if none does).
 *   b_rate = max(b_join, b_need); μ = b_rate / s_v(b_rate) per worker.
 *   Erlang = E[Wq](c, λ, μ) + s_v(b_join)  (INFINITY if λ/(cμ) >= 1).
 *   Backlog: each variant u's q_u in-flight requests form ceil(q_u/B)
 *            batches (full ones of B, the last of q_u mod B) taking
 *            s_u(size) each; with n batches of total time T in flight,
 *            backlog = ceil(n/c) · T/n (for B = 1 and one variant this is
 *            the reference bound ceil(q/c)·s).
 *   est_v  = max(Erlang, backlog + s_v(b_join)).
 * Candidates are the frontier variants by accuracy (highest first; ties:
 * lower cost first); ACCURATE_ONLY considers only the first. The first
 * candidate with est_v <= deadline is chosen (exactly at the deadline
 * admits). Otherwise reject: INFEASIBLE if the deadline is below every
 * candidate's s_v(1); else DEADLINE (or UNSTABLE if no candidate had a
 * finite estimate) with retry_after_s = the smallest over candidates of
 * est_v - deadline (the backlog drains one second per second), where an
 * unstable candidate counts window_s + backlog (the rate estimate must
 * forget the burst first).
 *
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers). */
at_status at_planner_decide(at_planner *p, uint64_t now_ns, double deadline_s,
                            at_plan_decision *out);

/* Count a request admitted to `variant` without at_planner_decide() (e.g.
 * the client pinned a variant): in flight and in the admitted rate. Call
 * at_planner_finished() for it later. Returns AT_OK, AT_ERR_INVALID_ARG. */
at_status at_planner_admitted(at_planner *p, int variant, uint64_t now_ns);

/* A request admitted to `variant` has left (answered, failed or abandoned).
 * If it ran, `batch_size` (>= 1) is the size of the batch it ran in,
 * `observed_service_s` (> 0) that batch's Run time and `peers` the other
 * Runs in progress at some moment during it (at_timing.peers): they update
 * one of the variant's two correction factors — the full-pool one when
 * peers >= workers - 1, else the part-pool one (see params.service_alpha;
 * estimates use the larger). Pass observed_service_s <= 0 when it never ran.
 * Returns AT_OK, AT_ERR_INVALID_ARG (bad variant), AT_ERR_STATE (nothing in
 * flight for that variant: a caller bug; nothing changes). */
at_status at_planner_finished(at_planner *p, int variant, int batch_size,
                              double observed_service_s, int peers);
/* The same with the observation's time given (monotonic ns, the clock
 * passed to at_planner_decide); at_planner_finished() uses now. */
at_status at_planner_finished_at(at_planner *p, int variant, int batch_size,
                                 double observed_service_s, int peers, uint64_t now_ns);

/* Snapshot of counters and rate estimates at `now_ns` (for /metrics).
 * Returns AT_OK, AT_ERR_INVALID_ARG. */
at_status at_planner_stats_get(at_planner *p, uint64_t now_ns, at_planner_stats *out);

/* The planner's copy of its parameters / a variant's name (owned by the
 * planner, valid until destroy) / the deadline the planner would use for a
 * requested one (at_plan_cap_deadline with its default and cap). */
const at_planner_params *at_planner_get_params(const at_planner *p);
const char *at_planner_variant_name(const at_planner *p, int variant);
double at_planner_deadline_s(const at_planner *p, double requested_s);

/* "adaptive" / "accurate-only" and back. Parse returns AT_OK or
 * AT_ERR_INVALID_ARG. */
const char *at_plan_policy_name(at_plan_policy policy);
at_status at_plan_policy_parse(const char *name, at_plan_policy *out);
/* "admit", "deadline", "unstable", "infeasible". Static; never NULL. */
const char *at_plan_reason_name(at_plan_reason reason);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_PLAN_H */
