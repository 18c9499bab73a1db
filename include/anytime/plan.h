/* anytime/plan.h — the admission planner: Erlang B/C queueing estimates, a
 * sliding-window demand-rate estimate, the backlog of work actually in
 * flight, and the rule that admits each request to the most accurate
 * variant that can answer within its deadline, or refuses it at once (the
 * server answers 429 with Retry-After) when the queue present cannot.
 *
 * The rule in one paragraph (the precise form is above
 * at_planner_decide_req()): whether a request is admitted depends only on
 * the work admitted and not yet finished — a refusal adds nothing to it, so
 * refusals and retries can never hold the server shut; which variant it
 * gets depends on the demand rate: the most accurate variant whose queueing
 * estimate at that rate fits the deadline, else the cheapest that fits the
 * queue present (the most answers per second). Admission therefore fills
 * up to what the chosen variant can carry within the deadline and refuses
 * only the excess.
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

#include "anytime/api.h"

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
AT_API double at_plan_erlang_b(int c, double a);

/* Erlang C probability that an arrival waits, C(c, a) =
 * B / (1 - ρ(1 - B)) with ρ = a/c. Returns 1 when ρ >= 1 (every arrival
 * waits; the queue is unstable), NaN for invalid arguments (c < 1). */
AT_API double at_plan_erlang_c(int c, double a);

/* M/M/c mean wait in queue E[Wq] = C(c, λ/μ) / (cμ - λ) in seconds, for
 * arrival rate `lambda` (1/s), PER-WORKER service rate `mu` (1/s) and `c`
 * workers. Passing the per-worker rate matters: one server of rate μ models
 * c workers as one and understates capacity c-fold. Returns INFINITY when
 * ρ = λ/(cμ) >= 1, 0 when lambda == 0, NaN for invalid arguments. */
AT_API double at_plan_mmc_wait_s(int c, double lambda, double mu);

/* The q-quantile of the M/M/c wait in queue: P(Wq > t) = C(c, λ/μ) ·
 * e^(-(cμ - λ)t), so the quantile is 0 when C <= 1 - q (most arrivals do
 * not wait at all) and ln(C / (1 - q)) / (cμ - λ) otherwise. 0 < q < 1.
 * INFINITY when ρ >= 1, NaN for invalid arguments. */
AT_API double at_plan_mmc_wait_quantile_s(int c, double lambda, double mu, double q);

/* E[W] = E[Wq] + 1/μ (mean sojourn, wait + service). INFINITY when ρ >= 1.
 * For c = 1 this is exactly 1/(μ - λ). */
AT_API double at_plan_mmc_sojourn_s(int c, double lambda, double mu);

/* The backlog bound: `in_flight` requests admitted and not finished, on `c`
 * workers that each take `service_s` per request, need ceil(in_flight/c) ·
 * service_s before a new request can start; a new request's sojourn is at
 * least that plus its own service_s. Returns the backlog term (not
 * including the new request's service). 0 when in_flight == 0. */
AT_API double at_plan_backlog_s(uint64_t in_flight, int c, double service_s);

/* Mark which of n (accuracy, cost) pairs lie on the Pareto frontier: a
 * point is dominated when another has accuracy >= and cost <= with at
 * least one strict; of several identical points only the first (lowest
 * index) is kept. on_frontier[i] is set for every i < n. NaN accuracies or
 * costs are never on the frontier. Returns the number on the frontier. */
AT_API size_t at_plan_frontier(const double *accuracy, const double *cost, size_t n,
                               bool *on_frontier);

/* The deadline cap. `requested_s` is what the client asked for (e.g. from
 * the x-deadline-ms header); <= 0 or NaN means "not given" and yields
 * `default_s`. A request longer than `max_s` is cut to `max_s` (a client
 * may ask for less time than the server allows, never more). */
AT_API double at_plan_cap_deadline(double requested_s, double default_s, double max_s);

/* Parse an x-deadline-ms header value (decimal milliseconds, optional
 * fraction, surrounding blanks allowed; NULL or blank = not given) and cap
 * it as at_plan_cap_deadline() does. Writes seconds to *out_s.
 * Returns AT_OK, AT_ERR_INVALID_ARG (out_s NULL), AT_ERR_PARSE (not a
 * positive finite number; *out_s untouched — the server answers 400). */
AT_API at_status at_plan_parse_deadline_ms(const char *value, double default_s, double max_s,
                                           double *out_s);

/* Whole seconds for an HTTP Retry-After header: ceil(retry_after_s),
 * at least 1, at most 3600. */
AT_API int at_plan_retry_after_header(double retry_after_s);

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
  /* Length model. The table is timed on texts of mixed length whose mean
   * is len_ref_tokens; a text of t tokens is priced at w(t) times it,
   *   w(t) = clamp(1 + len_cost_per_token·(t − len_ref_tokens), 1/16, 64)
   * (cost linear in length, fitted by `anytime profile --length-buckets`
   * from s(1) per length bucket). len_ref_tokens <= 0 or
   * len_cost_per_token <= 0: no length model, w = 1 for every text. */
  double len_ref_tokens;
  double len_cost_per_token;
} at_plan_variant;

/* s(b): the table's service time for a batch of b (b >= 1, real-valued),
 * interpolated as described above. Pure; NaN if v is NULL or empty. */
AT_API double at_plan_variant_service_s(const at_plan_variant *v, double b);

/* w(t): what one text of `tokens` tokens costs on v relative to its table
 * (the length model above). 1 when v has no length model or tokens <= 0 or
 * is not finite (unknown length). Pure; 1 for a NULL v. */
AT_API double at_plan_variant_weight(const at_plan_variant *v, double tokens);

/* ---- the planner ------------------------------------------------------------ */

typedef enum at_plan_policy {
  AT_PLAN_ADAPTIVE = 0,      /* most accurate frontier variant that fits */
  AT_PLAN_ACCURATE_ONLY = 1, /* always the most accurate; same admission rule */
  AT_PLAN_NONE = 2,          /* no admission control: everything to the most
                                accurate variant (what Triton, TEI or a Node
                                wrapper do by default); never refuses */
  AT_PLAN_LIMIT = 3,         /* the most accurate variant while fewer than
                                params.inflight_limit texts are in flight,
                                else refuse (TEI's max_concurrent_requests) */
} at_plan_policy;

/* Which arrival rate feeds the Erlang-C term. The term only CHOOSES the
 * variant (is the demand more than this variant can carry?); it never
 * refuses a request, so neither basis can lock the server shut. */
typedef enum at_plan_rate_basis {
  /* Texts admitted per second (decide said yes, or at_planner_admitted()).
   * Under overload this is what the chosen variant carries, so it says
   * "saturated" rather than how far past saturation the demand is. */
  AT_PLAN_RATE_ADMITTED = 0,
  /* Texts offered per second, admitted or not (the default): the demand.
   * Clients that retry a 429 at once inflate it, which can only move
   * traffic to a cheaper variant — never refuse it. */
  AT_PLAN_RATE_OFFERED = 1,
} at_plan_rate_basis;

typedef struct at_planner_params {
  int workers;               /* c: workers sharing the variants; default 2 */
  double default_deadline_s; /* when the request gives none; default 0.050 */
  double max_deadline_s;     /* cap on client deadlines; default 10 */
  at_plan_policy policy;     /* default AT_PLAN_ADAPTIVE */
  at_plan_rate_basis rate_basis; /* default AT_PLAN_RATE_OFFERED */
  double window_s;           /* demand-rate window, 0.01..60; default 0.3 (it
                                only chooses: short, so a burst moves traffic
                                to a cheaper variant within a few hundred ms) */
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
  /* AT_PLAN_LIMIT only: texts in flight at most; 1..1e6; default 512
   * (TEI's max_concurrent_requests default). */
  int inflight_limit;
  /* The overrun feedback (see at_planner_observe): the quantile of
   * (observed time − the model's estimate) that the planner adds to every
   * estimate made with work queued. 0 disables it; default 0.9995
   * (0.99 let 1-6 % of answers overrun after rare stalled Runs in the
   * simulator; 0.999 held but left no margin once the tracker is capped at
   * twice the window's quantile: docs/planner.md). */
  double overrun_quantile;
  /* The window of its fast estimate, 0.01..60 s; default 2 s: after a
   * burst of late answers the allowance falls back within one window once
   * answers are on time again, and it is 0 after a window without any. */
  double overrun_window_s;
  /* ADAPTIVE: every candidate but the cheapest may fill the queue only up
   * to this share of the budget; the rest is kept for the cheapest, so the
   * start of a burst (before the demand rate has caught up) overflows to it
   * instead of filling the queue with expensive work. 0.1..1; default 0.9
   * (simulator: on/off bursts 0.96 -> 0.98 of the oracle, and ρ = 0.4 still
   * all most-accurate, which 0.75 was not). */
  double adaptive_fill;
  /* Return slots for refused requests (DEADLINE refusals only): each
   * refusal's retry_after_s is the next free slot, not just the time until
   * the work in flight has drained; slots are spaced by the time the pool
   * needs for the refused texts on the cheapest candidate, and lie at most
   * this far ahead (0 = no slots: retry_after_s is the drain time alone).
   * So refused clients that honour the advice come back spread at about
   * the rate the server can answer, not all at the one instant the queue
   * next has room; and the server can hold the refusal of a client that
   * came back before its slot (server.hold_early_retries) until that slot,
   * so a client that retries a 429 at once costs about one refusal per
   * slot instead of as many as the cores can turn round. Default 0.25 s. */
  double retry_horizon_s;
  /* Priority classes (at_plan_request.priority: 1 high, 0 normal, -1 low):
   * while a higher class has offered work in the demand window, a request
   * may fill only this share of its budget for each such class (normal
   * beside high: priority_fill; low beside both: priority_fill^2). So lower
   * classes are refused first and leave room in the queue for the higher
   * ones, which arrive to a queue short enough for their deadline. With one
   * class only nothing changes. (0, 1]; default 0.5. */
  double priority_fill;
  /* Fair sharing between clients (at_plan_request.client; 0 takes no
   * part). Each identified client has a credit in texts: it earns the
   * max-min fair level (the pool's capacity shared over the clients that
   * offered work in the window, none given more than it offered), banks
   * at most a window of it (at least one text), and spends each admitted
   * text. A client in debt (credit < 0) while the pool is short (offered
   * at least the capacity, and a client not in debt refused in the
   * window) may fill only this share of its budget; 0 refuses it. So
   * under overload a client sending ten times its share, or 64 texts at a
   * time, is refused first while the others are answered; where there is
   * room it takes what is free. With one active client nothing changes.
   * [0, 1]; 1 switches it off; default 0.5 (0 gave the real server 10 %
   * less goodput: the room a yielding client left often went unused). */
  double fair_fill;
  /* The queue horizon: while a request with a deadline within the horizon
   * has been offered in the last max_deadline_s, a request whose deadline
   * is longer is admitted only if the work in flight ahead of it is
   * within the horizon (the queue test with the deadline capped at
   * horizon + its own texts' time on an idle pool); once admitted it has
   * its whole deadline. So a long deadline buys no deeper place in the
   * FIFO that short-deadline work queues in: one client's 10 s requests
   * cannot fill the queue ahead of everyone's 20 ms ones.
   * Where every request asks a long deadline nothing changes. <= 0: the
   * default deadline (the default); at most 3600 s. Set it to
   * max_deadline_s to let long deadlines queue as deep as they ask. */
  double queue_horizon_s;
} at_planner_params;

/* The longest a server holds a refusal to its return slot (the server's
 * server.hold_early_retries and the simulator's model of it share it). */
#define AT_PLAN_HOLD_MAX_S 1.0

/* Why a decision came out as it did. */
typedef enum at_plan_reason {
  AT_PLAN_ADMIT = 0,
  AT_PLAN_REJECT_DEADLINE = 1,   /* the work in flight leaves no candidate
                                    time to answer within the deadline */
  AT_PLAN_REJECT_UNSTABLE = 2,   /* no longer produced (the rate never
                                    refuses); kept so values stay stable */
  AT_PLAN_REJECT_INFEASIBLE = 3, /* the request can never be admitted: the
                                    deadline is below every candidate's time
                                    for all its texts on an idle pool, or
                                    (AT_PLAN_LIMIT) it holds more texts than
                                    the limit; retrying cannot help */
  AT_PLAN_REJECT_LIMIT = 4,      /* AT_PLAN_LIMIT: the in-flight limit is reached */
} at_plan_reason;

/* One request as the planner sees it. */
typedef struct at_plan_request {
  double deadline_s; /* as asked (x-deadline-ms); <= 0: the default; capped */
  double age_s;      /* already spent since the request arrived (reading
                        the body, parsing): the budget is deadline - age */
  int n_texts;       /* texts (batch rows) in the request, >= 1: each is
                        one item of work, all on the chosen variant */
  double tokens;     /* estimated tokens per text (the server guesses it
                        from the bytes before tokenising); <= 0: unknown.
                        With a variant's length model each text is priced
                        at w(tokens) times the table (at_plan_variant) */
  int priority;      /* 1 high, 0 normal (the default), -1 low; see
                        at_planner_params.priority_fill */
  uint64_t client;   /* who sent it (any stable non-zero key: the server
                        hashes the API key, x-client-id, or the peer
                        address); 0: unidentified, outside fair sharing.
                        See at_planner_params.fair_fill */
} at_plan_request;

typedef struct at_plan_decision {
  bool admit;
  at_plan_reason reason;
  /* Admitted: the chosen variant's index (as given at create). Rejected:
   * the candidate with the smallest estimate (for logs), or -1. */
  int variant;
  double deadline_s;    /* the deadline the decision was made against */
  double budget_s;      /* deadline_s - the request's age */
  int n_texts;          /* texts decided (the request's n_texts) */
  double est_sojourn_s; /* the model's estimate for `variant`: the time until
                           the request's last text finishes, with the work
                           in flight ahead of it (no overrun added) */
  double overrun_s;     /* the overrun allowance added to it (0 when the
                           pool had an idle worker for it) */
  bool queued;          /* admitted with work queued ahead of it (no free
                           worker for each of its batches): pass it to
                           at_planner_observe() with the answer */
  double erlang_s;      /* the Erlang-C estimate at the demand rate (wait at
                           the configured quantile + own service); INFINITY
                           when the demand exceeds the variant's capacity */
  double backlog_s;     /* the work in flight ahead of it, in seconds of
                           the pool (0 when a worker is free) */
  double retry_after_s; /* rejected: seconds until its return slot (the
                           work in flight has drained enough for it to fit,
                           and the refused texts before it have had their
                           turn; see retry_horizon_s); 0 if admitted or
                           infeasible */
  int batch_assumed;    /* batch size the request is assumed to join */
  double weight;        /* the per-text price w(tokens) on `variant` (1
                           without a length model). Admitted: what was
                           charged; pass it to at_planner_finished_w() for
                           each text */
  double rate_rps;      /* arrival-rate estimate the decision used */
  double rho;           /* utilisation at the rate-side batch size */
  double idle_s;        /* rejected: the fastest candidate's time for all the
                           request's texts on an idle pool (what a 422 is
                           judged on); 0 if admitted */
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
  double offered_rps;  /* texts offered per second over the window */
  double admitted_rps; /* texts admitted per second over the window */
  uint64_t decisions, admitted, rejected; /* requests */
  uint64_t rejected_deadline, rejected_unstable, rejected_infeasible, rejected_limit;
  uint64_t in_flight; /* texts, all variants */
  double overrun_s;   /* the overrun allowance now (see at_planner_observe) */
  /* Fair sharing: identified clients that offered work in the last
   * window; decisions made for a client in debt that had to yield (fair_fill
   * applied); decisions whose deadline the queue horizon shortened. */
  uint32_t clients_active;
  uint64_t over_share, horizon_capped;
  /* the share of the pool the work in flight occupies: busy worker-seconds
   * of the queued batches over c workers, in units of the deadline
   * (0 idle, 1 = the queue holds a whole default deadline of work) */
  double queue_fill;
  /* demand over what the pool carries with the most accurate variant: the
   * offered texts per second x its batch-1 service time (corrected) over c
   * workers. 1 = the pool would be fully busy serving everything with it;
   * above 1 the planner is answering with cheaper variants or refusing.
   * What an autoscaler should hold below 1 (the sweep's rho). */
  double utilisation;
  int n_variants;
  at_plan_variant_stats variants[AT_PLAN_MAX_VARIANTS];
} at_planner_stats;

typedef struct at_planner at_planner;

AT_API at_planner_params at_planner_default_params(void);

/* Create a planner over `n` variants (copied; the caller keeps its array).
 * Marks dominated variants (at_plan_frontier on (accuracy, cost)). *out must
 * be freed with at_planner_destroy().
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers, n outside
 * 1..AT_PLAN_MAX_VARIANTS, a parameter out of range, a bad table: empty,
 * unsorted, non-positive or non-finite times, name missing or too long),
 * AT_ERR_NOMEM. */
AT_API at_status at_planner_create(const at_planner_params *params, const at_plan_variant *variants,
                                   size_t n, at_planner **out);

/* Free the planner. NULL is a no-op. */
AT_API void at_planner_destroy(at_planner *p);

/* Decide one request at `now_ns` (see at_plan_request). Records its texts
 * in the rate window. On admit, its n_texts are counted in flight for the
 * chosen variant at once (so concurrent decisions see them); the caller
 * must later call at_planner_finished_n() for them exactly once (also when
 * they could not be run). A refusal is an ordinary outcome, not an error:
 * it returns AT_OK with out->admit = false, and it changes nothing the next
 * decision depends on except the demand rate, which only chooses variants.
 *
 * The rule (docs/planner.md, "Admission"):
 *   budget = capped deadline - age; c = params.workers; B = params.max_batch;
 *   s_v(b) = table time × the variant's correction factor; n = n_texts.
 *   Prices: with a length model every text is priced w_v(tokens) (see
 *     at_plan_variant); a batch of v's texts in flight takes s_v(size)
 *     times the mean price of v's texts in flight, the new request's
 *     batches s_v(size)·w_v(rq->tokens). Without one every price is 1.
 *   Queue test (the only reason to refuse). The work in flight — every
 *     variant u's q_u texts as ceil(q_u/B) batches of s_u(size) each — plus
 *     the new request's n texts on v makes N batches of total time T; with
 *     FIFO on c workers the last of them finishes after
 *       est_v = ceil(N/c) · T/N        (for B = 1 and one variant:
 *                                        ceil((q+n)/c) · s).
 *     backlog_v = est_v minus the new request's own batches' share.
 *     v fits when est_v + overrun <= budget; when N <= c (a worker is free
 *     for every batch) the overrun is not added: a request is never
 *     refused while an idle worker could answer it in time.
 *   Rate test (chooses, never refuses). λ = the demand rate in texts/s
 *     (params.rate_basis), including this request; b_join = min(B, q_v+1);
 *     b_need = the smallest b with λ·s_v(b)/b < c (B if none);
 *     b_rate = max(b_join, b_need); μ = b_rate/s_v(b_rate) per worker;
 *     erlang_v = Wq(c, λ, μ) + s_v(b_join), Wq the mean or the
 *     params.wait_quantile quantile (INFINITY when λ/(cμ) >= 1).
 *     v carries the demand when erlang_v <= budget.
 *   Choice. Candidates are the frontier variants by accuracy (highest
 *     first; ties: lower cost first); ACCURATE_ONLY, NONE and LIMIT use
 *     only the first. ADAPTIVE takes the first candidate that fits,
 *     carries the demand and — unless it is the last (cheapest) candidate —
 *     fits within params.adaptive_fill of the budget; if none does (the
 *     demand is past every variant's capacity) the LAST candidate that fits
 *     — the cheapest, the most answers per second. ACCURATE_ONLY admits its one candidate when
 *     it fits. NONE admits always. LIMIT admits while the texts in flight
 *     plus n stay <= params.inflight_limit (reason LIMIT otherwise).
 *   Refusal: INFEASIBLE when the budget is below every candidate's
 *     s_v(1); else DEADLINE with retry_after_s = the smallest over
 *     candidates of est_v + overrun - budget (the work in flight drains one
 *     second per second) — or, with params.retry_horizon_s > 0, the
 *     request's return slot: with H = retry_horizon_s and D that drain
 *     time, T = now + max(D, min(next_slot - now, H)), then next_slot =
 *     T + n * s_cheap(1) / c (s_cheap: the cheapest candidate's corrected
 *     batch-1 time), but at most now + max(H, D); retry_after_s = T - now.
 *   Sharing (only the budget changes; the tests above are the same):
 *     the queue horizon caps the deadline the queue test uses at
 *     params.queue_horizon_s + the request's fastest idle time while
 *     a request within the horizon was offered in the last
 *     params.max_deadline_s; the
 *     budget is then multiplied by priority_fill per higher class with
 *     offered work in the window, and by fair_fill when rq->client is in
 *     debt while a client not in debt was refused in the window.
 *
 * at_planner_decide() is this with {deadline_s, age 0, 1 text}.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL pointers, n_texts < 1). */
AT_API at_status at_planner_decide_req(at_planner *p, uint64_t now_ns, const at_plan_request *rq,
                                       at_plan_decision *out);
AT_API at_status at_planner_decide(at_planner *p, uint64_t now_ns, double deadline_s,
                                   at_plan_decision *out);

/* Count a request admitted to `variant` without at_planner_decide() (e.g.
 * the client pinned a variant): in flight and in the admitted rate. Call
 * at_planner_finished() for it later. Returns AT_OK, AT_ERR_INVALID_ARG. */
AT_API at_status at_planner_admitted(at_planner *p, int variant, uint64_t now_ns);

/* A request admitted to `variant` has left (answered, failed or abandoned).
 * If it ran, `batch_size` (>= 1) is the size of the batch it ran in,
 * `observed_service_s` (> 0) that batch's Run time and `peers` the other
 * Runs in progress at some moment during it (at_timing.peers): they update
 * one of the variant's two correction factors — the full-pool one when
 * peers >= workers - 1, else the part-pool one (see params.service_alpha;
 * estimates use the larger). Pass observed_service_s <= 0 when it never ran.
 * Returns AT_OK, AT_ERR_INVALID_ARG (bad variant), AT_ERR_STATE (nothing in
 * flight for that variant: a caller bug; nothing changes). */
AT_API at_status at_planner_finished(at_planner *p, int variant, int batch_size,
                                     double observed_service_s, int peers);
/* The same with the observation's time given (monotonic ns, the clock
 * passed to at_planner_decide); at_planner_finished() uses now. */
AT_API at_status at_planner_finished_at(at_planner *p, int variant, int batch_size,
                                        double observed_service_s, int peers, uint64_t now_ns);
/* The same for `n_texts` (>= 1) texts of one admitted request leaving
 * together (at_planner_finished_at is n_texts = 1). AT_ERR_STATE when fewer
 * than n_texts are in flight for the variant (nothing changes). */
AT_API at_status at_planner_finished_n(at_planner *p, int variant, int n_texts, int batch_size,
                                       double observed_service_s, int peers, uint64_t now_ns);
/* The same with the per-text weight the texts were admitted at
 * (decision.weight): it leaves the variant's priced work in flight, and the
 * observed Run is compared with the table's time times that weight.
 * at_planner_finished_n() passes the mean weight in flight for the variant
 * (exact when every text is priced 1, i.e. without length models). A weight
 * <= 0 or not finite means the same. */
AT_API at_status at_planner_finished_w(at_planner *p, int variant, int n_texts, double weight,
                                       int batch_size, double observed_service_s, int peers,
                                       uint64_t now_ns);

/* The overrun feedback. After an admitted request is answered, report the
 * model's estimate for it (decision.est_sojourn_s), the time it really
 * took from the decision to its answer being ready (`actual_s`) and
 * whether it was admitted with work queued (decision.queued). The planner
 * estimates the params.overrun_quantile quantile of actual − estimate
 * (what the model does not see: hand-offs between threads, writing the
 * answer, a slower host) over every answer, twice — a stochastic quantile
 * tracker (steps of a hundredth of the default deadline) and the quantile
 * over the last params.overrun_window_s — and takes the smaller. It does
 * the same for the answers admitted to an idle worker alone, at the
 * quantile 1 − 40·(1 − q); what of that lies above a tenth of the default
 * deadline is lateness the host adds whatever the queue, which refusing
 * cannot prevent, and comes off. The rest, within [0, half the default
 * deadline], is the allowance added to later estimates made with work
 * queued (docs/planner.md, "The overrun feedback"). Thread-safe.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL, or a non-finite value). */
AT_API at_status at_planner_observe(at_planner *p, double est_s, double actual_s, bool queued,
                                    uint64_t now_ns);

/* Snapshot of counters and rate estimates at `now_ns` (for /metrics).
 * Returns AT_OK, AT_ERR_INVALID_ARG. */
AT_API at_status at_planner_stats_get(at_planner *p, uint64_t now_ns, at_planner_stats *out);

/* The planner's copy of its parameters / a variant's name (owned by the
 * planner, valid until destroy) / the deadline the planner would use for a
 * requested one (at_plan_cap_deadline with its default and cap). */
AT_API const at_planner_params *at_planner_get_params(const at_planner *p);
AT_API const char *at_planner_variant_name(const at_planner *p, int variant);
AT_API double at_planner_deadline_s(const at_planner *p, double requested_s);

/* "adaptive" / "accurate-only" / "none" / "limit" and back. Parse returns
 * AT_OK or AT_ERR_INVALID_ARG. */
AT_API const char *at_plan_policy_name(at_plan_policy policy);
AT_API at_status at_plan_policy_parse(const char *name, at_plan_policy *out);
/* "admit", "deadline", "unstable", "infeasible", "limit". Static; never
 * NULL. */
AT_API const char *at_plan_reason_name(at_plan_reason reason);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_PLAN_H */
