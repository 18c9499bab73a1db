/* src/tools/simulate_params.c — the simulator's parameters for `anytime
 * simulate` (tools/simulate.h): the planner as `anytime serve` builds it
 * from the serving configuration, the chosen model's variants and their
 * service-time tables, then the command's options over them (workers,
 * batch size, deadlines, host noise, clients, replicas, fair sharing), and
 * the texts' lengths with the variants' length model (--lengths,
 * --len-cost, --length-blind). */
#include <stdio.h>
#include <string.h>

#include "anytime/anytime.h"
#include "anytime/server.h"
#include "anytime/sim.h"
#include "tools/simulate.h"

/* The planner as `anytime serve` builds it from the config (see
 * src/serve/models.c), and the model's variants. */
static int from_config(const simdrv_options *o, const at_server_config *cfg, at_sim_params *sp,
                       at_plan_variant *pv) {
  const at_server_model_config *m = NULL;
  for (int i = 0; i < cfg->n_models && !m; i++)
    if (!o->model || !strcmp(cfg->models[i].name, o->model)) m = &cfg->models[i];
  if (!m) {
    fprintf(stderr, "anytime simulate: %s\n",
            o->model ? "no model of that name in the config" : "the config has no models");
    return -1;
  }
  for (int v = 0; v < m->n_variants; v++) {
    if (!at_server_variant_plan(&m->variants[v], &pv[v])) {
      fprintf(stderr,
              "anytime simulate: variant '%s' has no service-time table "
              "(run `anytime profile`)\n",
              m->variants[v].name);
      return -1;
    }
  }
  sp->variants = pv;
  sp->n_variants = (size_t)m->n_variants;
  if (at_server_config_planner_params(cfg, &sp->planner) != AT_OK) {
    fprintf(stderr, "anytime simulate: %s\n", at_last_error());
    return -1;
  }
  at_planner_params *pp = &sp->planner;
  const char *pol = o->policy ? o->policy : cfg->policy;
  if (at_plan_policy_parse(pol, &pp->policy) != AT_OK) {
    fprintf(stderr, "anytime simulate: %s\n", at_last_error());
    return -1;
  }
  return 0;
}

/* --lengths, --len-cost and --length-blind: the texts' lengths, the true
 * length model of every variant (its reference the mix's mean length), and
 * a planner told none (`blind`, n_variants entries). */
static void apply_lengths(const simdrv_options *o, at_sim_params *sp, at_plan_variant *pv,
                          at_plan_variant *blind) {
  if (o->len_share >= 0) {
    sp->short_tokens = o->len_short;
    sp->long_tokens = o->len_long;
    sp->long_share = o->len_share;
  }
  double mean = sp->long_share * sp->long_tokens + (1 - sp->long_share) * sp->short_tokens;
  for (size_t v = 0; o->len_cost >= 0 && v < sp->n_variants; v++)
    pv[v].len_cost_per_token = o->len_cost, pv[v].len_ref_tokens = mean;
  if (!o->length_blind) return;
  for (size_t v = 0; v < sp->n_variants; v++) {
    blind[v] = pv[v];
    blind[v].len_cost_per_token = 0;
  }
  sp->planner_variants = blind;
}

static void apply_opts(const simdrv_options *o, at_sim_params *sp) {
  at_planner_params *pp = &sp->planner;
  if (o->workers > 0) pp->workers = (int)o->workers;
  if (o->max_batch > 0) pp->max_batch = (int)o->max_batch;
  if (o->limit > 0) pp->inflight_limit = (int)o->limit;
  if (o->deadline_ms > 0) sp->deadline_s = o->deadline_ms / 1000.0;
  if (o->think_ms >= 0) sp->think_s = o->think_ms / 1000.0;
  sp->late_prob = o->late_prob;
  if (o->late_ms >= 0) sp->late_mean_s = o->late_ms / 1000.0;
  sp->duration_s = o->duration;
  sp->warmup_s = o->warmup;
  sp->seed = (uint64_t)o->seed;
  sp->host_noise = !o->no_noise;
  sp->oracle = !o->no_oracle;
  sp->retry_after_header = o->ra_header;
  sp->hold_early_retries = !o->no_hold;
  sp->client_slots = o->client_slots;
  sp->retry_now_share = o->retry_now_share;
  if (o->replicas >= 1) sp->replicas = (int)o->replicas;
  sp->lb_retry = !o->no_lb_retry;
  if (o->no_fair) pp->fair_fill = 1, pp->queue_horizon_s = pp->max_deadline_s;
}

int simdrv_params(const simdrv_options *o, const at_server_config *cfg, at_sim_params *sp,
                  at_plan_variant *pv, at_plan_variant *blind) {
  if (from_config(o, cfg, sp, pv)) return -1;
  apply_opts(o, sp);
  apply_lengths(o, sp, pv, blind);
  return 0;
}
