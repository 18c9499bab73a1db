/* src/plan/sim.c — `at_sim_run()` (see anytime/sim.h): checks the
 * parameters, finds the frontier and what ρ = 1 means, runs the real
 * planner through the event loop of src/plan/sim_core.c, runs the
 * clairvoyant oracle once per frontier variant, and turns the counts into
 * an at_sim_result (percentiles, variant mix, oscillation).
 *
 * DESIGN
 *   Pure computation: no I/O, no wall clock, no global state; each call
 *   creates its own planner and destroys it before returning, so runs in
 *   different threads do not interact. The planner is driven only through
 *   anytime/plan.h.
 */
#include "anytime/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "plan/sim_internal.h"

static const char *const k_names[AT_SIM_N_CLIENTS] = {"poisson",     "onoff",  "closed", "retry",
                                                      "retry-after", "openai", "burst"};

const char *at_sim_clients_name(at_sim_clients clients) {
  int i = (int)clients;
  return i >= 0 && i < AT_SIM_N_CLIENTS ? k_names[i] : "unknown";
}

at_status at_sim_clients_parse(const char *name, at_sim_clients *out) {
  if (!name || !out) return at_fail(AT_ERR_INVALID_ARG, "client model name or out is NULL");
  for (int i = 0; i < AT_SIM_N_CLIENTS; i++)
    if (strcmp(name, k_names[i]) == 0) {
      *out = (at_sim_clients)i;
      return AT_OK;
    }
  return at_fail(AT_ERR_INVALID_ARG,
                 "unknown client model '%s' (poisson|onoff|closed|retry|retry-after|openai|burst)",
                 name);
}

at_sim_params at_sim_default_params(void) {
  return (at_sim_params){
      .planner = at_planner_default_params(),
      .clients = AT_SIM_POISSON,
      .load = 1.0,
      .duration_s = 10.0,
      .warmup_s = 1.0,
      .seed = 1,
      .think_s = 0.100,
      .rtt_s = 1e-4,
      .parse_s = 3e-5,
      .respond_min_s = 5e-5,
      .respond_max_s = 3e-4,
      .host_noise = true,
      .hold_early_retries = true,
      .speed_max = 2.0,
      .speed_dwell_min_s = 0.5,
      .speed_dwell_max_s = 3.0,
      .noise_sigma = 0.1,
      .stall_prob = 0.002,
      .stall_factor = 10.0,
      .late_prob = 0.0,
      .late_mean_s = 0.008,
      .on_s = 1.0,
      .off_s = 2.0,
      .on_factor = 3.0,
      .off_factor = 0.2,
      .openai_max_retries = 2,
      .burst_clients = 200,
      .burst_s = 2.0,
      .light_clients = 8,
      .light_think_s = 0.020,
      .light_s = 3.0,
      .oracle = true,
      .max_attempts = 200000000ull,
      .replicas = 1,
      .lb_retry = true,
      .lb_hop_s = 1e-4,
  };
}

static bool pos(double x) {
  return x > 0 && isfinite(x);
}
static bool nonneg(double x) {
  return x >= 0 && isfinite(x);
}

static at_status check_params(const at_sim_params *p) {
  if (!p->variants || p->n_variants < 1 || p->n_variants > AT_PLAN_MAX_VARIANTS)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: need 1..%d variants", AT_PLAN_MAX_VARIANTS);
  if ((int)p->clients < 0 || (int)p->clients >= AT_SIM_N_CLIENTS)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: unknown client model %d", (int)p->clients);
  if (p->planner.workers < 1 || p->planner.workers > AT_PLAN_MAX_WORKERS ||
      p->planner.max_batch < 1 || p->planner.max_batch > AT_PLAN_MAX_BATCH)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: planner workers or max_batch out of range");
  if (!pos(p->load) || !pos(p->duration_s) || !nonneg(p->warmup_s) ||
      !(p->warmup_s < p->duration_s))
    return at_fail(AT_ERR_INVALID_ARG,
                   "simulator: need load > 0, duration > 0 and 0 <= warmup < duration");
  if (!nonneg(p->think_s) || !nonneg(p->rtt_s) || !nonneg(p->parse_s) ||
      !nonneg(p->respond_min_s) || !(p->respond_max_s >= p->respond_min_s) ||
      !isfinite(p->respond_max_s) || isnan(p->deadline_s))
    return at_fail(AT_ERR_INVALID_ARG,
                   "simulator: think, rtt, parse and respond times must be finite and >= 0");
  if (p->host_noise &&
      (!(p->speed_max >= 1) || !isfinite(p->speed_max) || !pos(p->speed_dwell_min_s) ||
       !(p->speed_dwell_max_s >= p->speed_dwell_min_s) || !isfinite(p->speed_dwell_max_s) ||
       !nonneg(p->noise_sigma) || p->noise_sigma > 3 || !(p->stall_prob >= 0) ||
       !(p->stall_prob <= 1) || !(p->stall_factor >= 1) || !isfinite(p->stall_factor) ||
       !(p->late_prob >= 0) || !(p->late_prob <= 1) || !nonneg(p->late_mean_s) ||
       p->late_mean_s > 10))
    return at_fail(AT_ERR_INVALID_ARG, "simulator: host noise parameters out of range");
  if (p->clients == AT_SIM_ONOFF && (!pos(p->on_s) || !pos(p->off_s) || !nonneg(p->on_factor) ||
                                     !nonneg(p->off_factor) || !(p->on_factor + p->off_factor > 0)))
    return at_fail(AT_ERR_INVALID_ARG, "simulator: on/off periods and factors out of range");
  if (p->openai_max_retries < 0 || p->openai_max_retries > 100)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: openai_max_retries must be 0..100");
  if (p->clients == AT_SIM_BURST &&
      (p->burst_clients < 0 || p->light_clients < 1 || p->burst_clients > 1000000 ||
       p->light_clients > 1000000 || !nonneg(p->burst_s) || !(p->light_s > 1) ||
       !isfinite(p->light_s) || !nonneg(p->light_think_s)))
    return at_fail(AT_ERR_INVALID_ARG,
                   "simulator: burst needs burst_clients >= 0, light_clients >= 1, light_s > 1");
  if (p->max_attempts < 1) return at_fail(AT_ERR_INVALID_ARG, "simulator: max_attempts < 1");
  if (!(p->high_share >= 0 && p->high_share <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "simulator: high_share must be 0..1");
  if (!(p->retry_now_share >= 0 && p->retry_now_share <= 1))
    return at_fail(AT_ERR_INVALID_ARG, "simulator: retry_now_share must be 0..1");
  if (!(p->long_share >= 0 && p->long_share <= 1) || !nonneg(p->short_tokens) ||
      !nonneg(p->long_tokens) || p->short_tokens > 1e5 || p->long_tokens > 1e5)
    return at_fail(AT_ERR_INVALID_ARG,
                   "simulator: long_share must be 0..1 and token counts 0..100000");
  if (p->n_groups < 0 || p->n_groups > AT_SIM_MAX_GROUPS || (p->n_groups > 0 && !p->groups))
    return at_fail(AT_ERR_INVALID_ARG, "simulator: 0..%d client groups", AT_SIM_MAX_GROUPS);
  if (p->n_groups > 0 && p->replicas != 1)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: client groups need one replica");
  for (int i = 0; i < p->n_groups; i++) {
    const at_sim_group *g = &p->groups[i];
    if (g->kind != AT_SIM_CLOSED && g->kind != AT_SIM_RETRY && g->kind != AT_SIM_RETRY_AFTER &&
        g->kind != AT_SIM_OPENAI)
      return at_fail(AT_ERR_INVALID_ARG,
                     "simulator: group %d: kind must be closed, retry, retry-after or openai", i);
    double think = g->think_s > 0 ? g->think_s : p->think_s;
    if (g->clients < 1 || g->clients > 100000 || g->n_texts > 4096 || !isfinite(think) ||
        isnan(g->deadline_s) || g->priority < -1 || g->priority > 1 ||
        (g->kind == AT_SIM_RETRY && !(think > 0)))
      return at_fail(AT_ERR_INVALID_ARG,
                     "simulator: group %d needs 1..100000 clients, 1..4096 texts, priority "
                     "-1..1 and (retry) a think time > 0",
                     i);
  }
  if (p->replicas < 1 || p->replicas > AT_SIM_MAX_REPLICAS || !nonneg(p->lb_hop_s) ||
      p->replicas * p->planner.workers > 4096)
    return at_fail(AT_ERR_INVALID_ARG,
                   "simulator: replicas must be 1..%d (at most 4096 workers in all) and "
                   "lb_hop_s >= 0", AT_SIM_MAX_REPLICAS);
  return AT_OK;
}

/* The frontier (as the planner computes it) and its order: accuracy
 * highest first, then cost lowest. Returns how many, or 0. */
static int frontier(const at_sim_params *p, int *order) {
  double acc[AT_PLAN_MAX_VARIANTS], cost[AT_PLAN_MAX_VARIANTS];
  bool on[AT_PLAN_MAX_VARIANTS];
  for (size_t i = 0; i < p->n_variants; i++) {
    acc[i] = p->variants[i].accuracy;
    cost[i] = p->variants[i].cost > 0 ? p->variants[i].cost
                                      : at_plan_variant_service_s(&p->variants[i], 1);
  }
  at_plan_frontier(acc, cost, p->n_variants, on);
  int n = 0;
  for (size_t i = 0; i < p->n_variants; i++) {
    if (!on[i]) continue;
    int j = n++;
    while (j > 0 && (acc[order[j - 1]] < acc[i] ||
                     (acc[order[j - 1]] == acc[i] && cost[order[j - 1]] > cost[i]))) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = (int)i;
  }
  return n;
}

int at_sim_mixed_population(double load, double capacity_rps, at_sim_group g[4]) {
  g[0] = (at_sim_group){.name = "polite", .kind = AT_SIM_RETRY_AFTER, .think_s = 0.5};
  g[1] = (at_sim_group){.name = "at-once", .kind = AT_SIM_RETRY, .think_s = 0.5};
  g[2] = (at_sim_group){.name = "greedy", .kind = AT_SIM_RETRY, .think_s = 0.05};
  g[3] = (at_sim_group){
      .name = "long64", .kind = AT_SIM_RETRY_AFTER, .think_s = 1.0, .deadline_s = 10, .n_texts = 64};
  static const double share[4] = {0.30, 0.30, 0.25, 0.15};
  for (int i = 0; i < 4; i++) {
    int texts = g[i].n_texts > 0 ? g[i].n_texts : 1;
    double n = round(share[i] * load * capacity_rps * g[i].think_s / texts);
    g[i].clients = n < 1 ? 1 : n > 100000 ? 100000 : (int)n;
  }
  return 4;
}

at_status at_sim_capacity(const at_sim_params *params, int *top_variant, double *capacity_rps) {
  if (!params || !top_variant || !capacity_rps)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: NULL argument");
  at_status st = check_params(params);
  if (st != AT_OK) return st;
  int order[AT_PLAN_MAX_VARIANTS];
  if (frontier(params, order) < 1)
    return at_fail(AT_ERR_INVALID_ARG, "simulator: no variant is on the frontier (bad tables)");
  double s1 = at_plan_variant_service_s(&params->variants[order[0]], 1);
  if (!pos(s1)) return at_fail(AT_ERR_INVALID_ARG, "simulator: bad service-time table");
  *top_variant = order[0];
  *capacity_rps = (double)params->replicas * params->planner.workers / s1;
  return AT_OK;
}

static double rank(const double *sorted, size_t n, double q) {
  if (n == 0) return NAN;
  size_t k = (size_t)ceil(q * (double)n);
  return sorted[k > 0 ? k - 1 : 0];
}

/* Coefficient of variation of admitted texts per bin, and how often the
 * majority variant changes between bins that admitted something. */
static void oscillation(const sim *s, at_sim_result *r) {
  size_t nv = s->p->n_variants, nb = s->a.n_bins;
  double sum = 0, sq = 0;
  int last = -1;
  r->majority_changes = 0;
  for (size_t b = 0; b < nb; b++) {
    const uint32_t *row = s->a.bins + b * nv;
    double tot = 0;
    int best = -1;
    for (size_t v = 0; v < nv; v++) {
      tot += row[v];
      if (row[v] > 0 && (best < 0 || row[v] > row[best])) best = (int)v;
    }
    sum += tot;
    sq += tot * tot;
    if (best >= 0) {
      if (last >= 0 && best != last) r->majority_changes++;
      last = best;
    }
  }
  double mean = nb ? sum / (double)nb : 0;
  double var = nb ? sq / (double)nb - mean * mean : 0;
  r->admitted_cv = mean > 0 ? sqrt(var > 0 ? var : 0) / mean : NAN;
}

static void fill_result(sim *s, at_sim_result *r) {
  sim_acc *a = &s->a;
  r->measured_s = s->end_t - s->warm_t;
  r->sent = a->sent, r->answered = a->answered, r->refused = a->refused, r->held = a->held;
  r->within = a->within, r->late = a->late, r->failed = a->failed;
  r->refused_deadline = a->by_reason[AT_PLAN_REJECT_DEADLINE];
  r->refused_infeasible = a->by_reason[AT_PLAN_REJECT_INFEASIBLE];
  r->refused_limit = a->by_reason[AT_PLAN_REJECT_LIMIT];
  r->goodput_rps = (double)a->within / r->measured_s;
  r->attainment = a->sent ? (double)a->within / (double)a->sent : NAN;
  qsort(a->lat, a->n_lat, sizeof(double), at_cmp_double);
  r->p50_s = rank(a->lat, a->n_lat, 0.50);
  r->p99_s = rank(a->lat, a->n_lat, 0.99);
  r->max_s = a->n_lat ? a->lat[a->n_lat - 1] : NAN;
  r->accuracy = a->answered ? a->acc_sum / (double)a->answered : NAN;
  for (size_t v = 0; v < s->p->n_variants; v++)
    r->variant_share[v] = a->answered ? (double)a->by_variant[v] / (double)a->answered : 0;
  oscillation(s, r);
  r->overrun_mean_s = a->overrun_n ? a->overrun_sum / (double)a->overrun_n : 0;
  r->overrun_max_s = a->overrun_max;
  bool burst = s->p->clients == AT_SIM_BURST;
  r->light_first_n = a->light_n[0], r->light_after_n = a->light_n[1];
  r->light_first_s = burst && a->light_n[0] ? (double)a->light_ok[0] / (double)a->light_n[0] : NAN;
  r->light_after = burst && a->light_n[1] ? (double)a->light_ok[1] / (double)a->light_n[1] : NAN;
  r->events = s->events;
  r->replicas = s->R;
  r->retried = a->retried;
  r->retried_share = a->sent ? (double)a->retried / (double)a->sent : NAN;
  r->goodput_per_replica_rps = r->goodput_rps / (double)s->R;
  for (int k = 0; k < AT_SIM_N_CLIENTS; k++)
    r->sent_by_kind[k] = a->sent_kind[k], r->within_by_kind[k] = a->within_kind[k];
  for (int i = 0; i < s->ncl; i++) r->clients_by_kind[s->cl[i].kind]++;
  r->early_refused = a->early;
  for (int k = 0; k < 2; k++) r->sent_by_class[k] = a->sent_class[k], r->within_by_class[k] = a->within_class[k];
  r->goodput_tps = (double)a->within_texts / r->measured_s;
  r->n_groups = s->p->n_groups;
  for (int g = 0; g < s->p->n_groups; g++) {
    const at_sim_group *pg = &s->p->groups[g];
    struct at_sim_group_result *o = &r->groups[g];
    double think = pg->think_s > 0 ? pg->think_s : s->p->think_s;
    o->clients = pg->clients;
    o->sent = a->g[g].sent, o->refused = a->g[g].refused, o->within = a->g[g].within;
    o->goodput_tps = (double)a->g[g].texts / r->measured_s;
    o->demand_tps = think > 0 ? pg->clients * (pg->n_texts > 0 ? pg->n_texts : 1) / think : INFINITY;
    o->fair_tps = NAN;
    qsort(a->g[g].lat, a->g[g].n_lat, sizeof(double), at_cmp_double);
    o->p50_s = rank(a->g[g].lat, a->g[g].n_lat, 0.50);
    o->p99_s = rank(a->g[g].lat, a->g[g].n_lat, 0.99);
  }
}

/* Each group's max-min fair share of `cap` texts/s: the per-client
 * demands filled from the smallest up, each at most an equal split of
 * what is left among the clients not yet filled. */
static void fair_shares(const at_sim_params *p, double cap, at_sim_result *r) {
  bool done[AT_SIM_MAX_GROUPS] = {false};
  int left_clients = 0;
  for (int g = 0; g < p->n_groups; g++) left_clients += p->groups[g].clients;
  for (int round = 0; round < p->n_groups; round++) {
    int best = -1;
    for (int g = 0; g < p->n_groups; g++) {
      double per = r->groups[g].demand_tps / p->groups[g].clients;
      if (!done[g] && (best < 0 || per < r->groups[best].demand_tps / p->groups[best].clients))
        best = g;
    }
    double per = r->groups[best].demand_tps / p->groups[best].clients;
    double split = left_clients > 0 ? cap / left_clients : 0;
    double each = per < split ? per : split;
    r->groups[best].fair_tps = each * p->groups[best].clients;
    cap -= r->groups[best].fair_tps;
    left_clients -= p->groups[best].clients;
    done[best] = true;
  }
}

/* One clairvoyant run on variant v: its goodput. */
static at_status oracle_run(const at_sim_params *p, int v, double rate, int n_clients,
                            double *goodput, double *goodput_tps) {
  sim s;
  at_status st = sim_init(&s, p, NULL, v, rate, n_clients);
  if (st == AT_OK) st = sim_loop(&s);
  if (st == AT_OK) *goodput = (double)s.a.within / (s.end_t - s.warm_t);
  if (st == AT_OK) *goodput_tps = (double)s.a.within_texts / (s.end_t - s.warm_t);
  sim_free(&s);
  return st;
}

static at_status planner_run(const at_sim_params *p, double rate, int n_clients, at_sim_result *r) {
  at_planner *pl = NULL;
  at_status st = at_planner_create(
      &p->planner, p->planner_variants ? p->planner_variants : p->variants, p->n_variants, &pl);
  if (st != AT_OK) return st;
  sim s;
  st = sim_init(&s, p, pl, -1, rate, n_clients);
  if (st == AT_OK) st = sim_loop(&s);
  if (st == AT_OK) {
    fill_result(&s, r);
    at_planner_stats_get(pl, sim_ns(s.now), &r->final_stats);
  }
  sim_free(&s);
  at_planner_destroy(pl);
  return st;
}

at_status at_sim_run(const at_sim_params *params, at_sim_result *out) {
  if (!params || !out) return at_fail(AT_ERR_INVALID_ARG, "simulator: NULL argument");
  const at_sim_params *p = params;
  int top = 0, order[AT_PLAN_MAX_VARIANTS];
  double cap = 0;
  at_status st = at_sim_capacity(p, &top, &cap);
  if (st != AT_OK) return st;
  int nf = frontier(p, order);
  at_sim_result *r = calloc(1, sizeof *r);
  if (!r) return at_fail(AT_ERR_NOMEM, "simulator: out of memory");
  r->clients = p->clients;
  r->load = p->load;
  r->capacity_rps = cap;
  r->n_variants = (int)p->n_variants;
  r->top_variant = top;
  bool open = p->clients == AT_SIM_POISSON || p->clients == AT_SIM_ONOFF;
  double rate = open ? p->load * cap : 0;
  int n_clients = 0;
  if (p->clients == AT_SIM_ONOFF)
    r->rate_rps = rate * (p->on_s * p->on_factor + p->off_s * p->off_factor) / (p->on_s + p->off_s);
  else
    r->rate_rps = rate;
  if (p->n_groups > 0) {
    open = false, rate = 0, r->rate_rps = 0;
    for (int g = 0; g < p->n_groups; g++) n_clients += p->groups[g].clients;
  } else if (!open && p->clients != AT_SIM_BURST) {
    double n = round(p->load * cap * p->think_s);
    if (n > 1000000) n = 1000000;
    n_clients = n < 1 ? 1 : (int)n;
  }
  r->n_clients = p->n_groups == 0 && p->clients == AT_SIM_BURST
                     ? p->burst_clients + p->light_clients
                     : n_clients;
  st = planner_run(p, rate, n_clients, r);
  r->oracle_rps = NAN, r->oracle_variant = -1, r->oracle_ratio = NAN, r->oracle_tps = NAN;
  for (int i = 0; st == AT_OK && p->oracle && i < nf; i++) {
    double g = 0, gt = 0;
    st = oracle_run(p, order[i], rate, n_clients, &g, &gt);
    /* with groups the best oracle is the one with most texts answered */
    bool better = p->n_groups > 0 ? gt > r->oracle_tps : g > r->oracle_rps;
    if (st == AT_OK && (r->oracle_variant < 0 || better))
      r->oracle_rps = g, r->oracle_tps = gt, r->oracle_variant = order[i];
  }
  if (st == AT_OK && p->oracle) {
    r->oracle_ratio = r->oracle_rps > 0 ? r->goodput_rps / r->oracle_rps : NAN;
    if (p->n_groups > 0) {
      r->oracle_ratio = r->oracle_tps > 0 ? r->goodput_tps / r->oracle_tps : NAN;
      fair_shares(p, r->oracle_tps, r);
    }
  }
  if (st == AT_OK) *out = *r;
  free(r);
  return st;
}
