/* src/plan/planner.c — the admission planner (see anytime/plan.h for the
 * contract and the rule, docs/planner.md for the reasoning): per-request
 * decisions from the texts in flight per variant (whether to admit), the
 * demand-rate window (which variant), each variant's service-time table with
 * its correction factors, and the overrun the model has been seen to miss.
 *
 * DESIGN
 *   Threads: decide/admitted/finished/stats are called by many HTTP threads
 *     at once; create/destroy by one thread with no other call in progress.
 *   Lock: one mutex `lock` guards the rate window, every per-variant counter
 *     and correction factor, and the global counters. A decision reads the
 *     in-flight counts and, on admit, increments one of them under the same
 *     hold, so two concurrent decisions cannot both take the last slack. The
 *     critical section is arithmetic only (O(variants · (workers + log B)),
 *     no allocation, no callbacks, no logging). Lock order: this is the only
 *     lock in src/plan/, and no other lock is taken while it is held.
 *   Immutable after create (read without the lock): params, names, tables,
 *     the precomputed per-batch-size service times, the frontier and the
 *     candidate order.
 *   Clients (fair_fill, see must_yield): an open-addressed table of CLIENTS entries, probed
 *     CLIENT_PROBE deep, never emptied (a stale entry is reused for a new
 *     key), so a key is found before the first empty slot of its run. A
 *     client that cannot get an entry (every one in its run active in the
 *     window) is decided as unidentified. Guarded by lock.
 *   Invariant: in_flight_total == Σ variant.in_flight == texts admitted −
 *     texts finished. No refusal changes any state a later decision's
 *     admit/refuse answer depends on (only the demand rate, which chooses a
 *     variant): the property that keeps retries from holding the server shut.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/plan.h"
#include "core/internal.h"
#include "plan/rate.h"
#include "plan/wquant.h"

enum { CH_OFFERED = 0, CH_ADMITTED = 1, CH_HIGH = 2, CH_NORMAL = 3 };
#define SCALE_MIN 0.25
#define SCALE_MAX 8.0
/* One observation moves the factor as if it were at most OBS_MAX (at least
 * OBS_MIN) times the table: a single Run stalled by the host (page fault,
 * a descheduled vCPU) cannot swing the estimate; a sustained slowdown moves
 * it up to OBS_MAX. */
#define OBS_MIN 0.5
#define OBS_MAX 4.0


typedef struct pvariant {
  char name[64];
  at_plan_variant table; /* table.name points at name */
  double cost;
  bool on_frontier;
  double *s_at;   /* [0..B]: table s(b) for integer b (index 0 unused) */
  double *pr_min; /* [0..B]: min over b' <= b of s(b')/b' (prefix minimum) */
  /* guarded by lock: */
  uint64_t in_flight, admitted, finished, declined;
  /* the in-flight texts' prices summed (each w(t) of the length model, 1
   * without one): the queue side prices v's work at the table times
   * w_in_flight / in_flight; 0 whenever in_flight is 0 */
  double w_in_flight;
  /* correction factors on the table, from Runs that had the whole worker
   * pool busy (POOL_FULL) and from the others (POOL_PART); estimates use
   * the larger (see scale_at) */
  double scale[2];
  uint64_t last_obs_ns[2]; /* when each last took an observation (0: never) */
  double base[2]; /* what each factor starts at and ages back to: 1, busy_factor */
} pvariant;

enum { POOL_PART = 0, POOL_FULL = 1 };

/* One identified client: when it last offered work, the texts it
 * offered with an exponential memory of the window (as of off_ns), and its
 * credit in texts (as of credit_ns), earned at the fair level and spent on
 * admission; below 0 it is in debt. */
typedef struct pclient {
  uint64_t key, last_ns, off_ns, credit_ns;
  double off, credit;
} pclient;
#define CLIENTS 4096 /* a power of two */
#define CLIENT_PROBE 16
enum { OV_IDLE = 0, OV_ALL = 1 };

struct at_planner {
  at_planner_params p;
  int n;
  pvariant *v;
  int n_cand;
  int cand[AT_PLAN_MAX_VARIANTS]; /* frontier variants, most accurate first */

  pthread_mutex_t lock;
  at_rate_window rate;      /* guarded by lock */
  uint64_t decisions;       /* guarded by lock */
  uint64_t admitted;        /* guarded by lock */
  uint64_t rejected[5];     /* guarded by lock: by at_plan_reason */
  uint64_t in_flight_total; /* guarded by lock: texts */
  /* guarded by lock: actual − estimate over the window and its stochastic
   * quantile estimate, for the answers admitted with a free worker for
   * each batch (OV_IDLE) and for every answer (OV_ALL) */
  at_wquant overrun[2];
  double overrun_track[2];
  uint64_t next_slot_ns;    /* guarded by lock: the next free return slot */
  /* guarded by lock: fair sharing (see pclient) */
  pclient *clients;         /* [CLIENTS] */
  uint32_t n_active;        /* clients that offered work in the window */
  uint64_t recount_ns;      /* when n_active was last counted exactly */
  double adm_total;         /* identified clients' admitted texts with an exponential
                               memory of the window, as of adm_total_ns */
  uint64_t adm_total_ns;
  uint64_t last_refused_ns[3]; /* the last DEADLINE refusal of a client not in debt, by
                                  priority class + 1 (low, normal, high) */
  double level;             /* the max-min fair level, texts/s per client (see fair_level) */
  double *scratch;          /* [CLIENTS]: the active clients' offered rates, for fair_level */
  uint64_t over_share, horizon_capped;
  uint64_t last_short_ns;   /* guarded by lock: the last request whose deadline was within
                               the queue horizon (0: none yet) */
};

at_planner_params at_planner_default_params(void) {
  return (at_planner_params){
      .workers = 2,
      .default_deadline_s = 0.050,
      .max_deadline_s = 10.0,
      .policy = AT_PLAN_ADAPTIVE,
      .rate_basis = AT_PLAN_RATE_OFFERED,
      .window_s = 0.3,
      .window_buckets = 50,
      .max_batch = 1,
      .service_alpha = 0.05,
      .service_tau_s = 0.5,
      .scale_half_life_s = 10.0,
      .inflight_limit = 512,
      .overrun_quantile = 0.9995,
      .overrun_window_s = 2.0,
      .adaptive_fill = 0.9,
      .retry_horizon_s = 0.25,
      .priority_fill = 0.5,
      .fair_fill = 0.5,
      .queue_horizon_s = 0,
  };
}

const char *at_plan_policy_name(at_plan_policy policy) {
  switch (policy) {
    case AT_PLAN_ADAPTIVE: return "adaptive";
    case AT_PLAN_ACCURATE_ONLY: return "accurate-only";
    case AT_PLAN_NONE: return "none";
    case AT_PLAN_LIMIT: return "limit";
  }
  return "unknown";
}

at_status at_plan_policy_parse(const char *name, at_plan_policy *out) {
  if (!name || !out) return at_fail(AT_ERR_INVALID_ARG, "policy name or out is NULL");
  if (strcmp(name, "adaptive") == 0) *out = AT_PLAN_ADAPTIVE;
  else if (strcmp(name, "accurate-only") == 0) *out = AT_PLAN_ACCURATE_ONLY;
  else if (strcmp(name, "none") == 0) *out = AT_PLAN_NONE;
  else if (strcmp(name, "limit") == 0) *out = AT_PLAN_LIMIT;
  else return at_fail(AT_ERR_INVALID_ARG,
                      "unknown policy '%s' (adaptive|accurate-only|none|limit)", name);
  return AT_OK;
}

const char *at_plan_reason_name(at_plan_reason reason) {
  switch (reason) {
    case AT_PLAN_ADMIT: return "admit";
    case AT_PLAN_REJECT_DEADLINE: return "deadline";
    case AT_PLAN_REJECT_UNSTABLE: return "unstable";
    case AT_PLAN_REJECT_INFEASIBLE: return "infeasible";
    case AT_PLAN_REJECT_LIMIT: return "limit";
  }
  return "unknown";
}

static at_status check_params(const at_planner_params *p) {
  if (p->workers < 1 || p->workers > AT_PLAN_MAX_WORKERS)
    return at_fail(AT_ERR_INVALID_ARG, "planner: workers must be 1..%d", AT_PLAN_MAX_WORKERS);
  if (!(p->default_deadline_s > 0) || !isfinite(p->default_deadline_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: default deadline must be > 0");
  if (!(p->max_deadline_s >= p->default_deadline_s) || !isfinite(p->max_deadline_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: max deadline must be >= the default");
  if (p->policy < AT_PLAN_ADAPTIVE || p->policy > AT_PLAN_LIMIT)
    return at_fail(AT_ERR_INVALID_ARG, "planner: unknown policy %d", (int)p->policy);
  if (p->policy == AT_PLAN_LIMIT && (p->inflight_limit < 1 || p->inflight_limit > 1000000))
    return at_fail(AT_ERR_INVALID_ARG, "planner: in-flight limit must be 1..1000000");
  if (!(p->overrun_quantile >= 0 && p->overrun_quantile < 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: overrun quantile must be 0 (off) or in (0, 1)");
  if (!(p->adaptive_fill >= 0.1 && p->adaptive_fill <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: adaptive fill must be 0.1..1");
  if (!(p->priority_fill > 0 && p->priority_fill <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: priority_fill must be in (0, 1], got %g",
                   p->priority_fill);
  if (!(p->fair_fill >= 0 && p->fair_fill <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: fair_fill must be in [0, 1], got %g",
                   p->fair_fill);
  if (!(p->queue_horizon_s <= 3600) || isnan(p->queue_horizon_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: queue horizon must be at most 3600 s, got %g",
                   p->queue_horizon_s);
  if (!(p->retry_horizon_s >= 0 && p->retry_horizon_s <= 60))
    return at_fail(AT_ERR_INVALID_ARG, "planner: retry horizon must be 0 (off)..60 s");
  if (!(p->overrun_window_s >= 0.01 && p->overrun_window_s <= 60))
    return at_fail(AT_ERR_INVALID_ARG, "planner: overrun window must be 0.01..60 s");
  if (p->rate_basis != AT_PLAN_RATE_ADMITTED && p->rate_basis != AT_PLAN_RATE_OFFERED)
    return at_fail(AT_ERR_INVALID_ARG, "planner: unknown rate basis %d", (int)p->rate_basis);
  if (!(p->window_s >= 0.01 && p->window_s <= 60))
    return at_fail(AT_ERR_INVALID_ARG, "planner: window must be 0.01..60 s");
  if (p->window_buckets < 2 || p->window_buckets > 4096)
    return at_fail(AT_ERR_INVALID_ARG, "planner: window buckets must be 2..4096");
  if (p->max_batch < 1 || p->max_batch > AT_PLAN_MAX_BATCH)
    return at_fail(AT_ERR_INVALID_ARG, "planner: max batch must be 1..%d", AT_PLAN_MAX_BATCH);
  if (!(p->service_alpha >= 0 && p->service_alpha <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: service alpha must be 0..1");
  if (!(p->service_tau_s >= 0) || !isfinite(p->service_tau_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: service tau must be >= 0 seconds");
  if (!(p->wait_quantile >= 0 && p->wait_quantile < 1))
    return at_fail(AT_ERR_INVALID_ARG, "planner: wait quantile must be 0 (the mean) or in (0, 1)");
  if (!(p->scale_half_life_s >= 0) || !isfinite(p->scale_half_life_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: scale half-life must be >= 0 seconds");
  return AT_OK;
}

static at_status check_variant(const at_plan_variant *v, size_t i) {
  if (!v->name || !v->name[0] || strlen(v->name) > 63)
    return at_fail(AT_ERR_INVALID_ARG, "planner: variant %zu needs a name of 1..63 bytes", i);
  if (!isfinite(v->accuracy))
    return at_fail(AT_ERR_INVALID_ARG, "planner: variant %s: accuracy not finite", v->name);
  if (isinf(v->cost))
    return at_fail(AT_ERR_INVALID_ARG, "planner: variant %s: cost not finite", v->name);
  if (v->n_points < 1 || v->n_points > AT_PLAN_MAX_POINTS)
    return at_fail(AT_ERR_INVALID_ARG, "planner: variant %s: 1..%d table points", v->name,
                   AT_PLAN_MAX_POINTS);
  for (size_t k = 0; k < v->n_points; k++) {
    if (v->batch[k] < 1 || (k > 0 && v->batch[k] <= v->batch[k - 1]))
      return at_fail(AT_ERR_INVALID_ARG,
                     "planner: variant %s: batch sizes must be >= 1 and ascending", v->name);
    if (!(v->service_s[k] > 0) || !isfinite(v->service_s[k]))
      return at_fail(AT_ERR_INVALID_ARG,
                     "planner: variant %s: service times must be positive and finite", v->name);
  }
  if (isnan(v->busy_factor) || v->busy_factor > 8)
    return at_fail(AT_ERR_INVALID_ARG, "planner: variant %s: busy factor must be at most 8",
                   v->name);
  if (!(v->len_ref_tokens >= 0 && v->len_ref_tokens <= 1e5) ||
      !(v->len_cost_per_token >= 0 && v->len_cost_per_token <= 1))
    return at_fail(AT_ERR_INVALID_ARG,
                   "planner: variant %s: length model needs 0 <= len_ref_tokens <= 100000 and "
                   "0 <= len_cost_per_token <= 1",
                   v->name);
  return AT_OK;
}

void at_planner_destroy(at_planner *p) {
  if (!p) return;
  for (int i = 0; p->v && i < p->n; i++) {
    free(p->v[i].s_at);
    free(p->v[i].pr_min);
  }
  free(p->v);
  free(p->clients);
  free(p->scratch);
  at_rate_free(&p->rate);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

at_status at_planner_create(const at_planner_params *params, const at_plan_variant *variants,
                            size_t n, at_planner **out) {
  if (!params || !variants || !out)
    return at_fail(AT_ERR_INVALID_ARG, "planner: NULL params, variants or out");
  *out = NULL;
  if (n < 1 || n > AT_PLAN_MAX_VARIANTS)
    return at_fail(AT_ERR_INVALID_ARG, "planner: 1..%d variants, got %zu", AT_PLAN_MAX_VARIANTS,
                   n);
  at_status s = check_params(params);
  if (s != AT_OK) return s;
  for (size_t i = 0; i < n; i++)
    if ((s = check_variant(&variants[i], i)) != AT_OK) return s;

  at_planner *p = calloc(1, sizeof *p);
  if (!p) return at_fail(AT_ERR_NOMEM, "planner");
  pthread_mutex_init(&p->lock, NULL);
  p->p = *params;
  p->n = (int)n;
  p->v = calloc(n, sizeof *p->v);
  p->clients = calloc(CLIENTS, sizeof *p->clients);
  p->scratch = calloc(CLIENTS, sizeof *p->scratch);
  p->level = INFINITY;
  uint64_t window_ns = (uint64_t)llround(params->window_s * 1e9);
  if (!p->v || !p->clients || !p->scratch) {
    at_planner_destroy(p);
    return at_fail(AT_ERR_NOMEM, "planner: %zu variants", n);
  }
  s = at_rate_init(&p->rate, window_ns, params->window_buckets);
  for (int cls = OV_IDLE; cls <= OV_ALL && s == AT_OK; cls++)
    s = at_wquant_init(&p->overrun[cls], (uint64_t)llround(params->overrun_window_s * 1e9),
                       params->default_deadline_s);
  if (s != AT_OK) {
    at_planner_destroy(p);
    return s;
  }
  int B = params->max_batch;
  double acc[AT_PLAN_MAX_VARIANTS], cost[AT_PLAN_MAX_VARIANTS];
  bool front[AT_PLAN_MAX_VARIANTS];
  for (size_t i = 0; i < n; i++) {
    pvariant *v = &p->v[i];
    memcpy(v->name, variants[i].name, strlen(variants[i].name) + 1);
    v->table = variants[i];
    v->table.name = v->name;
    v->cost = variants[i].cost > 0 ? variants[i].cost : at_plan_variant_service_s(&v->table, 1);
    v->base[POOL_PART] = 1.0;
    v->base[POOL_FULL] = variants[i].busy_factor > 0 ? variants[i].busy_factor : 1.0;
    v->scale[POOL_PART] = v->base[POOL_PART];
    v->scale[POOL_FULL] = v->base[POOL_FULL];
    v->s_at = calloc((size_t)B + 1, sizeof *v->s_at);
    v->pr_min = calloc((size_t)B + 1, sizeof *v->pr_min);
    if (!v->s_at || !v->pr_min) {
      at_planner_destroy(p);
      return at_fail(AT_ERR_NOMEM, "planner: tables");
    }
    for (int b = 1; b <= B; b++) {
      v->s_at[b] = at_plan_variant_service_s(&v->table, b);
      double per = v->s_at[b] / b;
      v->pr_min[b] = (b == 1 || per < v->pr_min[b - 1]) ? per : v->pr_min[b - 1];
    }
    acc[i] = variants[i].accuracy;
    cost[i] = v->cost;
  }
  at_plan_frontier(acc, cost, n, front);
  for (size_t i = 0; i < n; i++) {
    p->v[i].on_frontier = front[i];
    if (!front[i]) {
      at_log(AT_LOG_INFO, "plan", "variant %s is dominated (accuracy %.4f, cost %.6g): not offered",
             p->v[i].name, acc[i], cost[i]);
      continue;
    }
    /* insertion by accuracy desc, then cost asc, then index asc */
    int k = p->n_cand++;
    while (k > 0) {
      const pvariant *o = &p->v[p->cand[k - 1]];
      bool after = o->table.accuracy > acc[i] ||
                   (o->table.accuracy == acc[i] && o->cost <= cost[i]);
      if (after) break;
      p->cand[k] = p->cand[k - 1];
      k--;
    }
    p->cand[k] = (int)i;
  }
  *out = p;
  return AT_OK;
}

const at_planner_params *at_planner_get_params(const at_planner *p) {
  return p ? &p->p : NULL;
}

const char *at_planner_variant_name(const at_planner *p, int variant) {
  if (!p || variant < 0 || variant >= p->n) return NULL;
  return p->v[variant].name;
}

double at_planner_deadline_s(const at_planner *p, double requested_s) {
  return at_plan_cap_deadline(requested_s, p->p.default_deadline_s, p->p.max_deadline_s);
}

/* One of a variant's correction factors as of `now`: its last value,
 * decayed toward its base (1, or the profiled busy factor) by the time
 * since its last observation. Caller holds p->lock. */
static double factor_at(const at_planner *p, const pvariant *v, int pool, uint64_t now) {
  double h = p->p.scale_half_life_s;
  uint64_t last = v->last_obs_ns[pool];
  if (h <= 0 || last == 0 || now <= last) return v->scale[pool];
  double f = exp2(-(double)(now - last) / 1e9 / h);
  return v->base[pool] + (v->scale[pool] - v->base[pool]) * f;
}

/* The factor estimates use: the larger of the two. The queueing terms
 * describe a busy pool, and Runs with the whole pool busy are slower than
 * the profile's one-at-a-time Runs (on this 2-vCPU host by about a fifth
 * even without HTTP). Averaging all Runs together would let the factor
 * fall whenever admissions thin out and Runs stop overlapping, which is
 * exactly when the baseline policy is deciding whether to admit again:
 * it would settle into admitting a fraction of an overload instead of
 * refusing it. Caller holds p->lock. */
static double scale_at(const at_planner *p, const pvariant *v, uint64_t now) {
  double full = factor_at(p, v, POOL_FULL, now), part = factor_at(p, v, POOL_PART, now);
  return full > part ? full : part;
}

/* The quantile each class is tracked at: the configured one for all
 * answers; for the idle answers the quantile forty times further from 1
 * (0.98 at the default 0.9995), so that only lateness that idle answers
 * see at least about once in 50 — the host's, which refusing cannot
 * prevent — comes off the allowance, not a rare stalled Run or a change of
 * host speed, which queued answers wait behind (simulator: 0.995 let the
 * on/off clients' p99 pass the deadline). */
static double class_quantile(const at_planner *p, int cls) {
  double q = p->p.overrun_quantile, qi = 1 - 40 * (1 - q);
  return cls == OV_ALL ? q : qi > 0.5 ? qi : 0.5;
}

/* One class's estimate of its quantile of (answer time −
 * estimate): the smaller of two.
 *   - The stochastic tracker: steady, settles at the quantile over
 *     thousands of answers, but it comes down q/(1 − q) times slower than it
 *     goes up (about 2000x at the default 0.9995); at_planner_observe()
 *     caps it at twice the window's quantile so a burst of late answers
 *     does not keep admission tight for tens of seconds.
 *   - The window's quantile: follows a change within one window, but over a
 *     few hundred answers that high a quantile is the maximum, so at light
 *     load one stalled Run would make it refuse for a whole window.
 * The smaller is right in both cases: steady traffic with rare stalls gets
 * the tracker; after a burst the window brings it down at once; with no
 * answers in the window it is 0. Caller holds p->lock. */
static double class_overrun(at_planner *p, int cls, uint64_t now) {
  double w = at_wquant_get(&p->overrun[cls], class_quantile(p, cls), now);
  return w < p->overrun_track[cls] ? w : p->overrun_track[cls];
}

/* The overrun allowance at `now` (0 when off): the quantile of every
 * answer's error, less what of the idle answers' (at their quantile,
 * above) lies over a tenth of the default deadline, within [0, half the
 * default deadline]. Lateness that lands on an answer whatever the queue
 * (the host writing it late while the load generator holds a core) shows
 * in both and comes off: refusing queued work cannot prevent it, and
 * counting it made the allowance climb to the whole deadline, so that only
 * requests finding an idle worker were admitted (results/planner_history.md, "The
 * overrun allowance pinned at its cap"). The floor keeps a routine Run's
 * noise and hand-off in the allowance; the cap says that past half the
 * deadline the lateness is the host's. With no idle answers in the window
 * the idle part is its tracker alone. Caller holds p->lock. */
static double overrun_at(at_planner *p, uint64_t now) {
  if (p->p.overrun_quantile <= 0) return 0.0;
  double all = class_overrun(p, OV_ALL, now);
  double idle = at_wquant_count(&p->overrun[OV_IDLE], now) > 0 ? class_overrun(p, OV_IDLE, now)
                                                                 : p->overrun_track[OV_IDLE];
  double D = p->p.default_deadline_s, host = idle - D / 10;
  double a = all - (host > 0 ? host : 0.0);
  return a < 0 ? 0.0 : a > D / 2 ? D / 2 : a;
}

/* Batches and their total (corrected) time for q texts of variant v whose
 * prices sum to w (w = q when every text costs the table). */
static void batches_of(const at_planner *p, const pvariant *v, uint64_t q, double w,
                       double scale, double *batches, double *total) {
  uint64_t B = (uint64_t)p->p.max_batch, full = q / B, rem = q % B;
  if (q == 0) return;
  *batches += (double)full + (rem ? 1.0 : 0.0);
  *total += scale * (w / (double)q) * ((double)full * v->s_at[B] + (rem ? v->s_at[rem] : 0.0));
}

/* The work in flight on the shared pool: every variant's texts as
 * ceil(q/B) batches, their number and total (corrected) time. Caller holds
 * p->lock. */
static void work_locked(const at_planner *p, uint64_t now, double *batches, double *total) {
  *batches = 0, *total = 0;
  for (int u = 0; u < p->n; u++) {
    const pvariant *v = &p->v[u];
    if (v->in_flight)
      batches_of(p, v, v->in_flight, v->w_in_flight, scale_at(p, v, now), batches, total);
  }
}

/* FIFO on c workers: the last of N batches of total time T finishes after
 * ceil(N/c) rounds of the mean batch time (ceil(q/c)·s for one variant). */
static double drain_s(double batches, double total, int c) {
  return batches > 0 ? ceil(batches / c) * total / batches : 0.0;
}

typedef struct estimate {
  double est;     /* queue: when the request's last batch finishes */
  double backlog; /* queue: wait before its first batch can start */
  double erlang;  /* rate: Erlang wait at the demand rate + own service */
  double rho;
  bool idle;      /* a free worker for every batch: no overrun added */
  int b_join;
} estimate;

/* The Erlang part for `n` texts of price `w` each on variant `vi` at demand
 * rate `lambda` (see plan.h, "Rate test"; the rate side prices the demand
 * at the table, the texts of the profile's mix). Caller holds p->lock. */
static void erlang_locked(const at_planner *p, int vi, int n, double w, double lambda,
                          double scale, estimate *e) {
  const pvariant *v = &p->v[vi];
  int B = p->p.max_batch, c = p->p.workers;
  uint64_t q = v->in_flight + (uint64_t)n;
  e->b_join = q < (uint64_t)B ? (int)q : B;
  int b_need = 1;
  if (lambda > 0) {
    /* smallest b with λ·scale·s(b)/b < c, i.e. pr_min[b] < c/(λ·scale);
     * pr_min is non-increasing, so bisect. */
    double thr = (double)c / (lambda * scale);
    if (!(v->pr_min[B] < thr)) {
      b_need = B;
    } else {
      int lo = 1, hi = B;
      while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->pr_min[mid] < thr) hi = mid;
        else lo = mid + 1;
      }
      b_need = lo;
    }
  }
  int b_rate = e->b_join > b_need ? e->b_join : b_need;
  double mu = (double)b_rate / (scale * v->s_at[b_rate]);
  e->rho = lambda / ((double)c * mu);
  double wq = p->p.wait_quantile > 0 ? at_plan_mmc_wait_quantile_s(c, lambda, mu, p->p.wait_quantile)
                                      : at_plan_mmc_wait_s(c, lambda, mu);
  e->erlang = wq + scale * w * v->s_at[e->b_join];
}

/* Both tests' inputs for `n` texts of price `w` each on variant `vi`, given
 * the work in flight (nb0 batches of total time t0). Caller holds p->lock. */
static estimate estimate_locked(const at_planner *p, int vi, int n, double w, double lambda,
                                double nb0, double t0, uint64_t now) {
  estimate e = {0};
  int c = p->p.workers;
  double scale = scale_at(p, &p->v[vi], now);
  /* the new texts as batches of their own behind the work in flight (the
   * batcher may fold them into a forming batch: this errs long by at most
   * one batch) */
  double nb1 = 0, t1 = 0;
  batches_of(p, &p->v[vi], (uint64_t)n, (double)n * w, scale, &nb1, &t1);
  nb1 += nb0, t1 += t0;
  e.est = drain_s(nb1, t1, c);
  e.backlog = nb0 >= c ? floor(nb0 / c) * t0 / nb0 : 0.0;
  e.idle = nb1 <= c;
  erlang_locked(p, vi, n, w, lambda, scale, &e);
  return e;
}

/* Count `n` texts of price `w` each admitted to variant `vi`. Caller holds
 * p->lock. */
static void admit_locked(at_planner *p, int vi, int n, double w, uint64_t now) {
  pvariant *v = &p->v[vi];
  v->in_flight += (uint64_t)n;
  v->w_in_flight += (double)n * w;
  v->admitted += (uint64_t)n;
  p->in_flight_total += (uint64_t)n;
  p->admitted++;
  at_rate_record_n(&p->rate, CH_ADMITTED, now, (uint32_t)n);
}

/* Which candidate (index into p->cand) the policy admits to, or -1, given
 * each candidate's estimate; sets *why for a refusal. Caller holds lock. */
static int choose(const at_planner *p, const estimate *e, int n_cand, int n, double budget,
                  double overrun, double fill, at_plan_reason *why) {
  /* need[k]: the queue estimate plus the allowance (none when idle) */
  double need[AT_PLAN_MAX_VARIANTS];
  int last_fit = -1;
  *why = AT_PLAN_REJECT_DEADLINE;
  if (n_cand < 1) return -1;
  for (int k = 0; k < n_cand; k++) {
    need[k] = e[k].est + (e[k].idle ? 0.0 : overrun);
    if (need[k] <= budget) last_fit = k;
  }
  switch (p->p.policy) {
    case AT_PLAN_NONE: return 0;
    case AT_PLAN_LIMIT:
      if ((double)(p->in_flight_total + (uint64_t)n) <= fill * p->p.inflight_limit) return 0;
      *why = AT_PLAN_REJECT_LIMIT;
      return -1;
    case AT_PLAN_ACCURATE_ONLY: return need[0] <= budget ? 0 : -1;
    case AT_PLAN_ADAPTIVE:
      for (int k = 0; k < n_cand; k++)
        if (need[k] <= budget && e[k].erlang <= budget &&
            (k == n_cand - 1 || need[k] <= p->p.adaptive_fill * budget))
          return k;
      return last_fit; /* past every variant's capacity: the most answers per second */
  }
  return -1;
}

/* The share of its budget a request of class `prio` may fill: one factor
 * priority_fill for each higher class with offered work in the window.
 * Caller holds p->lock. */
static double class_fill(at_planner *p, int prio, uint64_t now) {
  double f = 1;
  if (prio < 1 && at_rate_count(&p->rate, CH_HIGH, now) > 0) f *= p->p.priority_fill;
  if (prio < 0 && at_rate_count(&p->rate, CH_NORMAL, now) > 0) f *= p->p.priority_fill;
  return f;
}

/* x as of `now`, counted with an exponential memory of the window from
 * its value at `since`. */
static double decayed(const at_planner *p, double x, uint64_t since, uint64_t now) {
  if (x <= 0 || now <= since) return x;
  return x * exp(-(double)(now - since) / 1e9 / p->p.window_s);
}

static bool client_active(const at_planner *p, const pclient *c, uint64_t now) {
  return c->key && c->last_ns + (uint64_t)(p->p.window_s * 1e9) >= now;
}

/* The texts per second the pool carries on the cheapest candidate at its
 * best batch, corrected. Caller holds p->lock. */
static double capacity_tps(const at_planner *p, uint64_t now) {
  if (p->n_cand < 1) return 0;
  const pvariant *cheap = &p->v[p->cand[p->n_cand - 1]];
  return p->p.workers / (cheap->pr_min[p->p.max_batch] * scale_at(p, cheap, now));
}

/* Count the active clients and find the max-min fair level L: with C what
 * the pool carries (capacity_tps, or the identified clients' admitted
 * texts per second if more) less what unidentified requests were
 * admitted, and r_i each active client's offered texts per second, the L
 * at which sum(min(r_i, L)) = C (INFINITY when C covers every r_i). A
 * client offering at most L is never in debt; one offering more earns L.
 * C is the capacity, not what was admitted: clients that yield admit less,
 * and a level from the admitted rate would fall with it until everyone
 * yielded. Sorting is O(n log n) in the active clients, done every quarter
 * window. Caller holds p->lock. */
static void fair_level(at_planner *p, uint64_t now) {
  size_t n = 0;
  double W = p->p.window_s;
  for (size_t i = 0; i < CLIENTS; i++) {
    const pclient *c = &p->clients[i];
    if (client_active(p, c, now)) p->scratch[n++] = decayed(p, c->off, c->off_ns, now) / W;
  }
  p->n_active = (uint32_t)n;
  qsort(p->scratch, n, sizeof *p->scratch, at_cmp_double);
  double adm = decayed(p, p->adm_total, p->adm_total_ns, now) / W;
  double anon = at_rate_per_s(&p->rate, CH_ADMITTED, now, 0) - adm;
  double left = fmax(capacity_tps(p, now), adm) - (anon > 0 ? anon : 0);
  p->level = INFINITY;
  for (size_t i = 0; i < n; i++) {
    double k = (double)(n - i);
    if (p->scratch[i] * k > left) {
      p->level = left / k;
      break;
    }
    left -= p->scratch[i];
  }
}

/* The entry of client `key`, marked as offering work now (found, or made
 * from an empty or stale entry); NULL for key 0 or when every entry of its
 * run is active. Keeps n_active and the fair level: exact every quarter
 * window, n_active counted up as clients start offering between. Caller
 * holds p->lock. */
static pclient *client_touch(at_planner *p, uint64_t key, uint64_t now) {
  if (now >= p->recount_ns + (uint64_t)(p->p.window_s * 1e9 / 4)) {
    fair_level(p, now);
    p->recount_ns = now;
  }
  if (!key) return NULL;
  size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 52); /* 12 bits: CLIENTS */
  pclient *stale = NULL;
  for (size_t i = 0; i < CLIENT_PROBE; i++) {
    pclient *c = &p->clients[(h + i) & (CLIENTS - 1)];
    if (c->key == key) {
      if (!client_active(p, c, now)) p->n_active++;
      c->last_ns = now;
      return c;
    }
    if (!c->key) { /* the end of the run: not in the table */
      stale = c;
      break;
    }
    if (!client_active(p, c, now) && (!stale || c->last_ns < stale->last_ns)) stale = c;
  }
  if (!stale) return NULL;
  *stale = (pclient){.key = key, .last_ns = now, .off_ns = now, .credit_ns = now};
  p->n_active++;
  return stale;
}

/* Bring c's credit to now: earned at the fair level, at most a window of
 * it (and at least one text), so a quiet client banks no burst; and count
 * the n texts it offers now. With no level (everyone's offer covered) the
 * credit is full. */
static void client_earn(at_planner *p, pclient *c, int n, uint64_t now) {
  double r = p->level;
  if (!isfinite(r)) {
    c->credit = fmax(1.0, (double)n);
  } else {
    if (now > c->credit_ns) c->credit += r * (double)(now - c->credit_ns) / 1e9;
    double most = fmax(1.0, r * p->p.window_s);
    if (c->credit > most) c->credit = most;
  }
  c->credit_ns = now;
  c->off = decayed(p, c->off, c->off_ns, now) + n;
  c->off_ns = now;
}

/* Whether the pool is short of capacity for class `prio`: the offered
 * texts per second at least what the cheapest candidate carries at its
 * best batch, and a client not in debt of this class or a higher one
 * refused in the window. Either alone is not enough: a refusal under
 * light load comes from a moment's queue (a request of many texts just
 * admitted), and a high offered rate may be answered in full. A class
 * never yields to a lower one: that is the priority rule's to decide.
 * Caller holds p->lock. */
static bool contended(at_planner *p, int prio, uint64_t now) {
  if (p->n_cand < 1) return false;
  bool refused = false;
  for (int k = prio + 1; k < 3 && !refused; k++)
    refused = p->last_refused_ns[k] &&
              now - p->last_refused_ns[k] <= (uint64_t)(p->p.window_s * 1e9);
  return refused && at_rate_per_s(&p->rate, CH_OFFERED, now, 0) >= capacity_tps(p, now);
}

/* Whether c must yield: in debt (admitted more than the fair level gave
 * it) while the pool is contended for its class. Caller holds p->lock. */
static bool must_yield(at_planner *p, pclient *c, int n, int prio, uint64_t now) {
  if (!c) return false;
  client_earn(p, c, n, now);
  if (p->p.fair_fill >= 1) return false;
  return c->credit < 0 && p->n_active >= 2 && contended(p, prio, now);
}

static void client_admitted(at_planner *p, pclient *c, int n, uint64_t now) {
  if (!c) return;
  c->credit -= n;
  p->adm_total = decayed(p, p->adm_total, p->adm_total_ns, now) + n;
  p->adm_total_ns = now;
}

at_status at_planner_decide(at_planner *p, uint64_t now_ns, double deadline_s,
                            at_plan_decision *out) {
  at_plan_request rq = {.deadline_s = deadline_s, .age_s = 0, .n_texts = 1};
  return at_planner_decide_req(p, now_ns, &rq, out);
}

/* How long `n` texts of price `w` each take on variant `v` with nothing
 * else in flight: their batches spread over the pool. Caller holds lock. */
static double idle_s(const at_planner *p, const pvariant *v, int n, double w, double scale) {
  double nb = 0, t = 0;
  batches_of(p, v, (uint64_t)n, (double)n * w, scale, &nb, &t);
  return drain_s(nb, t, p->p.workers);
}

/* Fill a refusal: the reason and when a retry could fit. Infeasible is
 * judged on the deadline itself, not on what the request's age left of it
 * (a request that waited too long before the decision can be retried), and
 * on all of the request's texts: a request that could not finish in time
 * even on an idle pool, or that holds more texts than the in-flight limit,
 * can never be admitted, so it is told so (422) rather than invited to
 * retry. Caller holds lock. */
static void refuse_locked(at_planner *p, const estimate *e, const double *w, int n_cand, int n,
                          double budget, double overrun, at_plan_reason why, uint64_t now,
                          at_plan_decision *out) {
  int best = -1, feasible = 0;
  double retry = INFINITY, fastest = INFINITY;
  for (int k = 0; k < n_cand; k++) {
    pvariant *v = &p->v[p->cand[k]];
    v->declined++;
    if (best < 0 || e[k].est < e[best].est) best = k;
    double alone = idle_s(p, v, n, w[k], scale_at(p, v, now));
    if (alone < fastest) fastest = alone;
    if (alone > out->deadline_s) continue; /* never fits */
    feasible++;
    double wait = e[k].est + overrun - budget;
    if (wait < retry) retry = wait;
  }
  out->idle_s = fastest;
  if (why == AT_PLAN_REJECT_LIMIT && (uint64_t)n > (uint64_t)p->p.inflight_limit) {
    why = AT_PLAN_REJECT_INFEASIBLE; /* more texts than the limit: never admitted */
  } else if (why == AT_PLAN_REJECT_LIMIT) {
    /* the texts over the limit leave at the pool's rate */
    double nb, t;
    work_locked(p, now, &nb, &t);
    double excess = (double)(p->in_flight_total + (uint64_t)n) - p->p.inflight_limit;
    retry = nb > 0 ? ceil(excess / p->p.workers) * t / nb : 0.001;
  } else if (feasible == 0) {
    why = AT_PLAN_REJECT_INFEASIBLE;
  } else if (p->p.retry_horizon_s > 0 && isfinite(retry)) {
    /* The return slot: after the drain, and after the refused texts that
     * were given earlier slots; spaced by what the pool needs for these
     * texts on the cheapest candidate; slots stack up to the horizon (a
     * drain longer than it is still the drain). */
    pvariant *cheap = &p->v[p->cand[n_cand - 1]];
    double step = (double)n * w[n_cand - 1] * scale_at(p, cheap, now) * cheap->s_at[1] /
                  p->p.workers;
    double ahead = p->next_slot_ns > now ? (double)(p->next_slot_ns - now) / 1e9 : 0;
    double h = p->p.retry_horizon_s;
    retry = fmax(retry, fmin(ahead, h)); /* the slot, from now: never before the drain */
    double next = retry + step > h ? fmax(h, retry) : retry + step;
    p->next_slot_ns = now + (uint64_t)(next * 1e9);
  }
  p->rejected[why]++;
  out->admit = false;
  out->reason = why;
  if (best >= 0) {
    const estimate *b = &e[best];
    out->variant = p->cand[best];
    out->est_sojourn_s = b->est, out->erlang_s = b->erlang, out->backlog_s = b->backlog;
    out->batch_assumed = b->b_join, out->rho = b->rho;
    out->weight = w[best];
  }
  out->overrun_s = overrun;
  out->retry_after_s = why == AT_PLAN_REJECT_INFEASIBLE ? 0.0 : retry;
}

at_status at_planner_decide_req(at_planner *p, uint64_t now_ns, const at_plan_request *rq,
                                at_plan_decision *out) {
  if (!p || !rq || !out)
    return at_fail(AT_ERR_INVALID_ARG, "planner: NULL planner, request or decision");
  if (rq->n_texts < 1 || rq->n_texts > 1 << 20)
    return at_fail(AT_ERR_INVALID_ARG, "planner: a request has 1..%d texts, got %d", 1 << 20,
                   rq->n_texts);
  int n = rq->n_texts;
  double deadline = at_planner_deadline_s(p, rq->deadline_s);
  double age = rq->age_s > 0 && isfinite(rq->age_s) ? rq->age_s : 0.0;
  *out = (at_plan_decision){.variant = -1, .deadline_s = deadline, .budget_s = deadline - age,
                            .n_texts = n};
  double budget = out->budget_s;

  pthread_mutex_lock(&p->lock);
  p->decisions++;
  at_rate_record_n(&p->rate, CH_OFFERED, now_ns, (uint32_t)n);
  if (rq->priority > 0) at_rate_record_n(&p->rate, CH_HIGH, now_ns, (uint32_t)n);
  if (rq->priority == 0) at_rate_record_n(&p->rate, CH_NORMAL, now_ns, (uint32_t)n);
  double fill = class_fill(p, rq->priority, now_ns);
  pclient *who = client_touch(p, rq->client, now_ns);
  int prio = rq->priority > 0 ? 1 : rq->priority < 0 ? -1 : 0;
  bool yield = must_yield(p, who, n, prio, now_ns);
  if (yield) {
    fill *= p->p.fair_fill;
    p->over_share++;
  }
  double lambda = p->p.rate_basis == AT_PLAN_RATE_OFFERED
                      ? at_rate_per_s(&p->rate, CH_OFFERED, now_ns, 0)
                      : at_rate_per_s(&p->rate, CH_ADMITTED, now_ns, (uint64_t)n);
  int n_cand = p->p.policy == AT_PLAN_ADAPTIVE ? p->n_cand : (p->n_cand > 0 ? 1 : 0);
  double overrun = overrun_at(p, now_ns);
  out->rate_rps = lambda;
  estimate e[AT_PLAN_MAX_VARIANTS];
  double w[AT_PLAN_MAX_VARIANTS]; /* each candidate's price per text */
  double nb0, t0;
  work_locked(p, now_ns, &nb0, &t0);
  for (int k = 0; k < n_cand; k++) {
    w[k] = at_plan_variant_weight(&p->v[p->cand[k]].table, rq->tokens);
    e[k] = estimate_locked(p, p->cand[k], n, w[k], lambda, nb0, t0, now_ns);
  }
  /* the queue horizon: a longer deadline queues behind no more than it
   * (plus the request's own time on an idle pool, fastest candidate) */
  double horizon = p->p.queue_horizon_s > 0 ? p->p.queue_horizon_s : p->p.default_deadline_s;
  if (deadline <= horizon) {
    p->last_short_ns = now_ns;
  } else if (p->last_short_ns &&
             (double)(now_ns - p->last_short_ns) / 1e9 <= p->p.max_deadline_s) {
    double alone = INFINITY;
    for (int k = 0; k < n_cand; k++) {
      pvariant *v = &p->v[p->cand[k]];
      alone = fmin(alone, idle_s(p, v, n, w[k], scale_at(p, v, now_ns)));
    }
    if (deadline > horizon + alone) {
      budget = horizon + alone - age;
      p->horizon_capped++;
    }
  }
  at_plan_reason why;
  int k = choose(p, e, n_cand, n, fill * budget, overrun, fill, &why);
  if (k < 0) {
    if (!yield && why == AT_PLAN_REJECT_DEADLINE) p->last_refused_ns[prio + 1] = now_ns;
    refuse_locked(p, e, w, n_cand, n, fill * budget, overrun, why, now_ns, out);
    pthread_mutex_unlock(&p->lock);
    return AT_OK;
  }
  int vi = p->cand[k];
  admit_locked(p, vi, n, w[k], now_ns);
  client_admitted(p, who, n, now_ns);
  pthread_mutex_unlock(&p->lock);
  out->admit = true;
  out->weight = w[k];
  out->reason = AT_PLAN_ADMIT;
  out->variant = vi;
  out->est_sojourn_s = e[k].est;
  out->overrun_s = e[k].idle ? 0.0 : overrun;
  out->queued = !e[k].idle;
  out->erlang_s = e[k].erlang;
  out->backlog_s = e[k].backlog;
  out->batch_assumed = e[k].b_join;
  out->rho = e[k].rho;
  return AT_OK;
}

at_status at_planner_admitted(at_planner *p, int variant, uint64_t now_ns) {
  if (!p || variant < 0 || variant >= p->n)
    return at_fail(AT_ERR_INVALID_ARG, "planner: no variant %d", variant);
  pthread_mutex_lock(&p->lock);
  admit_locked(p, variant, 1, 1.0, now_ns);
  pthread_mutex_unlock(&p->lock);
  return AT_OK;
}

at_status at_planner_finished(at_planner *p, int variant, int batch_size,
                              double observed_service_s, int peers) {
  return at_planner_finished_at(p, variant, batch_size, observed_service_s, peers, at_now_ns());
}

at_status at_planner_finished_at(at_planner *p, int variant, int batch_size,
                                 double observed_service_s, int peers, uint64_t now_ns) {
  return at_planner_finished_n(p, variant, 1, batch_size, observed_service_s, peers, now_ns);
}

at_status at_planner_finished_n(at_planner *p, int variant, int n_texts, int batch_size,
                                double observed_service_s, int peers, uint64_t now_ns) {
  return at_planner_finished_w(p, variant, n_texts, 0.0, batch_size, observed_service_s, peers,
                               now_ns);
}

at_status at_planner_finished_w(at_planner *p, int variant, int n_texts, double weight,
                                int batch_size, double observed_service_s, int peers,
                                uint64_t now_ns) {
  if (!p || variant < 0 || variant >= p->n || n_texts < 1)
    return at_fail(AT_ERR_INVALID_ARG, "planner: no variant %d or %d texts", variant, n_texts);
  pvariant *v = &p->v[variant];
  /* The table's prediction needs no lock: the table is immutable. */
  double predicted = batch_size >= 1 ? at_plan_variant_service_s(&v->table, batch_size) : NAN;
  pthread_mutex_lock(&p->lock);
  if (v->in_flight < (uint64_t)n_texts) {
    pthread_mutex_unlock(&p->lock);
    return at_fail(AT_ERR_STATE, "planner: finished() for %d texts of %s with %llu in flight",
                   n_texts, v->name, (unsigned long long)v->in_flight);
  }
  if (!(weight > 0) || !isfinite(weight)) weight = v->w_in_flight / (double)v->in_flight;
  predicted *= weight;
  v->w_in_flight -= (double)n_texts * weight;
  if (v->in_flight == (uint64_t)n_texts || v->w_in_flight < 0) v->w_in_flight = 0;
  v->in_flight -= (uint64_t)n_texts;
  v->finished += (uint64_t)n_texts;
  p->in_flight_total -= (uint64_t)n_texts;
  double a = p->p.service_alpha;
  if (a > 0 && observed_service_s > 0 && isfinite(observed_service_s) && predicted > 0) {
    double r = observed_service_s / predicted;
    r = r < OBS_MIN ? OBS_MIN : r > OBS_MAX ? OBS_MAX : r;
    int pool = peers >= p->p.workers - 1 ? POOL_FULL : POOL_PART;
    uint64_t last = v->last_obs_ns[pool];
    if (p->p.service_tau_s > 0 && last != 0) {
      /* time-weighted: dt after the previous observation weighs 1 - e^(-dt/tau) */
      uint64_t dt = now_ns > last ? now_ns - last : 0;
      double w = -expm1(-(double)dt / 1e9 / p->p.service_tau_s);
      if (w < a) a = w;
    }
    double s = (1 - a) * factor_at(p, v, pool, now_ns) + a * r;
    v->scale[pool] = s < SCALE_MIN ? SCALE_MIN : s > SCALE_MAX ? SCALE_MAX : s;
    v->last_obs_ns[pool] = now_ns;
  }
  pthread_mutex_unlock(&p->lock);
  return AT_OK;
}

/* Record one answer's error in class `cls`. Caller holds p->lock. */
static void track_locked(at_planner *p, int cls, double err, uint64_t now_ns) {
  double q = class_quantile(p, cls);
  /* Stochastic quantile steps of a hundredth of the default deadline: up
   * by step·q when the answer overran the tracked value, down by
   * step·(1 − q) otherwise, so a fraction 1 − q lie above it. */
  double step = p->p.default_deadline_s / 100;
  at_wquant *w = &p->overrun[cls];
  at_wquant_record(w, err, now_ns);
  double o = p->overrun_track[cls] + (err > p->overrun_track[cls] ? step * q : -step * (1 - q));
  /* Never above twice the window's quantile once the window holds enough
   * answers for that quantile to mean something (1/(1 − q) of them; fewer,
   * and it is only their maximum): after a burst of late answers has left
   * the window, the tracker restarts near what the window now says instead
   * of stepping down a thousand times slower than it rose. Twice, not
   * once: within a factor of two the tracker's longer memory is worth
   * more (answers behind a rare stall; simulator, on/off clients). */
  if ((double)at_wquant_count(w, now_ns) * (1 - q) >= 1) {
    double w2 = 2 * at_wquant_get(w, q, now_ns);
    if (o > w2) o = w2;
  }
  p->overrun_track[cls] = o < 0 ? 0 : o > p->p.default_deadline_s ? p->p.default_deadline_s : o;
}

at_status at_planner_observe(at_planner *p, double est_s, double actual_s, bool queued,
                             uint64_t now_ns) {
  if (!p || !isfinite(est_s) || !isfinite(actual_s))
    return at_fail(AT_ERR_INVALID_ARG, "planner: NULL planner or a non-finite observation");
  if (p->p.overrun_quantile <= 0) return AT_OK;
  double err = actual_s - est_s;
  pthread_mutex_lock(&p->lock);
  track_locked(p, OV_ALL, err, now_ns);
  if (!queued) track_locked(p, OV_IDLE, err, now_ns);
  pthread_mutex_unlock(&p->lock);
  return AT_OK;
}

at_status at_planner_stats_get(at_planner *p, uint64_t now_ns, at_planner_stats *out) {
  if (!p || !out) return at_fail(AT_ERR_INVALID_ARG, "planner: NULL planner or stats");
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&p->lock);
  out->offered_rps = at_rate_per_s(&p->rate, CH_OFFERED, now_ns, 0);
  out->admitted_rps = at_rate_per_s(&p->rate, CH_ADMITTED, now_ns, 0);
  out->decisions = p->decisions;
  out->admitted = p->admitted;
  out->rejected_deadline = p->rejected[AT_PLAN_REJECT_DEADLINE];
  out->rejected_unstable = p->rejected[AT_PLAN_REJECT_UNSTABLE];
  out->rejected_infeasible = p->rejected[AT_PLAN_REJECT_INFEASIBLE];
  out->rejected_limit = p->rejected[AT_PLAN_REJECT_LIMIT];
  out->rejected = out->rejected_deadline + out->rejected_unstable + out->rejected_infeasible +
                  out->rejected_limit;
  out->in_flight = p->in_flight_total;
  out->overrun_s = overrun_at(p, now_ns);
  client_touch(p, 0, now_ns); /* recounts n_active and the level when due */
  out->clients_active = p->n_active;
  out->over_share = p->over_share;
  out->horizon_capped = p->horizon_capped;
  double nb, t;
  work_locked(p, now_ns, &nb, &t);
  out->queue_fill = t / p->p.workers / p->p.default_deadline_s;
  out->utilisation = p->n > 0 ? out->offered_rps * p->v[0].s_at[1] * scale_at(p, &p->v[0], now_ns) /
                                    p->p.workers
                              : 0;
  out->n_variants = p->n;
  for (int i = 0; i < p->n; i++) {
    const pvariant *v = &p->v[i];
    out->variants[i] = (at_plan_variant_stats){
        .admitted = v->admitted,
        .finished = v->finished,
        .declined = v->declined,
        .in_flight = v->in_flight,
        .service_scale = scale_at(p, v, now_ns),
        .service_scale_full = factor_at(p, v, POOL_FULL, now_ns),
        .service_scale_part = factor_at(p, v, POOL_PART, now_ns),
        .on_frontier = v->on_frontier,
    };
  }
  pthread_mutex_unlock(&p->lock);
  return AT_OK;
}
