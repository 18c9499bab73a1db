/* src/cli/cmd_simulate.c — `anytime simulate`: runs the real planner
 * against simulated clients, workers and host noise (anytime/sim.h) with
 * the variants and planner settings of a serving YAML config, and prints a
 * table (or --json) per client model and load, with the oracle beside it.
 * --grid runs every load of {0.4,0.8,1,1.3,2,3,5} × every client model with
 * all four policies, and the burst recovery scenario. --replicas N puts N
 * servers behind a least-connections balancer that resends a 429 once;
 * --cluster runs N = 1..64 replicas × open-loop and SDK-retrying clients × a
 * few loads and prints goodput per replica and the share resent.
 * Deterministic: the same options print the same numbers on any host. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"
#include "anytime/sim.h"
#include "cli/cli.h"

#define MAX_LOADS 32
static const double k_grid_loads[] = {0.4, 0.8, 1, 1.3, 2, 3, 5};
static const int k_cluster_sizes[] = {1, 2, 4, 8, 16, 64};
static const double k_cluster_loads[] = {0.8, 1.3, 2, 3};
static const at_plan_policy k_policies[] = {AT_PLAN_ADAPTIVE, AT_PLAN_ACCURATE_ONLY, AT_PLAN_NONE,
                                            AT_PLAN_LIMIT};

static void help(void) {
  printf(
      "usage: anytime simulate [options]\n\n"
      "Drives the REAL admission planner (the code `anytime serve` runs) with a simulated\n"
      "clock: c workers sharing one FIFO of admitted texts, Run times from the config's\n"
      "service-time tables x a host speed factor (log-uniform in [1,2], redrawn every\n"
      "0.5-3 s) x per-Run lognormal noise (sigma 0.1) x rare 10x stalls (p 0.002), a\n"
      "0.05-0.3 ms answer overhead, 0.1 ms network round trip. Same options => same\n"
      "output, on any host. docs/simulator.md describes the model.\n\n"
      "options:\n"
      "  --config FILE      serving YAML (default: configs/serving.yaml); variants and\n"
      "                     planner settings come from it\n"
      "  --model NAME       which model's variants (default: the first)\n"
      "  --policy P         adaptive|accurate-only|none|limit (default: the config's)\n"
      "  --inflight-limit N policy limit: texts in flight at most (default: config, 512)\n"
      "  --clients M[,M..]  poisson|onoff|closed|retry|retry-after|openai|burst\n"
      "                     (default poisson; repeatable)\n"
      "  --load RHO[,RHO..] load relative to the most accurate variant's capacity\n"
      "                     c/s_acc(1) at host speed 1 (default 1; repeatable)\n"
      "  --duration S       simulated seconds of sending (default 10)\n"
      "  --warmup S         figures count attempts sent after S (default 1)\n"
      "  --seed N           (default 1)\n"
      "  --deadline-ms D    every request's deadline (default: planner.deadline_ms)\n"
      "  --think-ms Z       closed-loop mean think time (default 100)\n"
      "  --workers N        override engine.workers;  --max-batch B  batching.max_batch_size\n"
      "  --retry-after-header  retry-after/openai clients wait the whole seconds of the\n"
      "                     Retry-After header, not the decision's exact retry_after_s\n"
      "  --no-hold          answer every refusal at once (the server's\n"
      "                     server.hold_early_retries: false)\n"      "  --client-slots     the server's slots that belong to clients: a client back\n"
      "                     before its return slot is refused before the planner (the\n"
      "                     server does this for clients it can identify)\n"
      "  --retry-now-share F  with --clients retry-after: this share of the clients\n"
      "                     resend at once instead (a mixed population; the JSON gives\n"
      "                     per-client goodput of each kind)\n"
      "  --late-prob P      a late host: with probability P an answer is written an\n"
      "                     exponential --late-ms (mean, default 8) after its Run, idle\n"
      "                     or queued alike, as when the load generator holds a core\n"
      "                     (default 0)\n"
      "  --lengths S,L,P    texts of two lengths: L tokens with probability P, else S; a\n"
      "                     Run takes its table time x w(longest text), w the variant's\n"
      "                     length model (the config's, or --len-cost); the planner is\n"
      "                     told each text's length (default: no lengths)\n"
      "  --len-cost K       give every variant the length model w(t) = 1 + K(t - mean),\n"
      "                     mean the mix's mean length (the table is the mix's average)\n"
      "  --length-blind     the planner is told no length model (the Runs still follow\n"
      "                     it): what pricing by length buys\n"
      "  --no-noise         speed 1, no Run noise, no stalls, no late host\n"
      "  --no-oracle        skip the oracle runs\n"
      "  --grid             loads {0.4,0.8,1,1.3,2,3,5} x every client model, policy\n"
      "                     adaptive with the oracle, and accurate-only/none/limit beside\n"
      "                     it; then the burst scenario for each policy\n"
      "  --replicas N       N servers (each with the config's workers and its own\n"
      "                     planner and host speed) behind a least-connections balancer\n"
      "                     that resends a 429 once to another replica (nginx's\n"
      "                     proxy_next_upstream http_429, tries 2); load and capacity\n"
      "                     are the cluster's, the oracle pools all workers\n"
      "  --no-lb-retry      the balancer passes every 429 to the client\n"
      "  --cluster          N in {1,2,4,8,16,64} x poisson and openai clients x loads\n"
      "                     {0.8,1.3,2,3} (per replica), adaptive: goodput per replica,\n"
      "                     the oracle's, attainment, the share of attempts the balancer\n"
      "                     resent, and the share refused in the end (default 5 s runs)\n"
      "  --mixed            the mixed population at each --load (polite Retry-After\n"
      "                     clients, clients resending at once, greedy clients at ten\n"
      "                     times the rate, 64-text clients with 10 s deadlines; all\n"
      "                     identified, client slots on): per group its clients, texts\n"
      "                     answered within the deadline per second, its max-min fair\n"
      "                     share of the oracle's and p99 (docs/planner.md, \"Fair sharing\n"
      "                     between clients\"; default 5 s runs, 2 s warm-up)\n"
      "  --no-fair          no fair sharing and no queue horizon (planner.fair_fill 1,\n"
      "                     queue_horizon_ms = max_deadline_ms): the rule before them\n"
      "  --json             one JSON object per run, one per line\n\n"
      "columns (over attempts sent in [warmup, duration)):\n"
      "  clients load   client model and rho; N = closed-loop clients (rho*capacity*Z)\n"
      "  sent 200 429   attempts (every resend counts), answered, refused\n"
      "  goodput        answers within the deadline per second\n"
      "  oracle         the best goodput the variants could give: each frontier variant\n"
      "                 alone against a clairvoyant server that knows every true Run\n"
      "                 time and admits a request exactly when it would be answered\n"
      "                 within its deadline (FIFO, batch 1, same clients and seed);\n"
      "                 the maximum over the variants\n"
      "  g/o            goodput / oracle\n"
      "  attain         answers within the deadline / sent attempts\n"
      "  p50 p99        latency of the 200s in ms (client side: send to answer)\n"
      "  top            share of the 200s answered by the most accurate variant\n"
      "  acc            mean accuracy of the variants that answered the 200s\n"
      "  cv             coefficient of variation of admitted texts per 100 ms bin\n"
      "  sw             times the majority variant changed between 100 ms bins\n"
      "  ovr            the planner's overrun allowance, max over 100 ms samples (ms)\n"
      "  first after    burst: share of the light clients' requests answered within\n"
      "                 the deadline in the first second after the burst, and after it\n");
}

typedef struct opts {
  const char *config, *model, *policy;
  double loads[MAX_LOADS];
  int n_loads;
  at_sim_clients clients[AT_SIM_N_CLIENTS];
  int n_clients;
  double duration, warmup, seed, deadline_ms, think_ms, workers, max_batch, limit, replicas;
  double late_prob, late_ms;
  double len_short, len_long, len_share, len_cost; /* --lengths, --len-cost (-1: not set) */
  bool no_noise, length_blind, no_oracle, grid, json, ra_header, no_hold, cluster, no_lb_retry;
  bool client_slots, mixed, no_fair;
  double retry_now_share;
  bool duration_set;
} opts;

static int num(const char *opt, const char *v, double lo, double hi, double *out) {
  char *e;
  errno = 0;
  double x = v ? strtod(v, &e) : NAN;
  if (!v || errno || *e || !(x >= lo && x <= hi)) {
    fprintf(stderr, "anytime simulate: %s needs a number in [%g, %g]\n", opt, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

/* "a,b,c" into the loads or the client models. */
static int list_arg(opts *o, const char *opt, const char *v) {
  char buf[512];
  if (!v || strlen(v) >= sizeof buf) {
    fprintf(stderr, "anytime simulate: %s needs a value\n", opt);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(opt, "--load") == 0) {
      if (o->n_loads >= MAX_LOADS) return fprintf(stderr, "anytime simulate: too many loads\n"), -1;
      if (num(opt, t, 1e-6, 1000, &o->loads[o->n_loads])) return -1;
      o->n_loads++;
    } else {
      at_sim_clients c;
      if (at_sim_clients_parse(t, &c) != AT_OK) {
        fprintf(stderr, "anytime simulate: %s\n", at_last_error());
        return -1;
      }
      if (o->n_clients >= AT_SIM_N_CLIENTS)
        return fprintf(stderr, "anytime simulate: too many client models\n"), -1;
      o->clients[o->n_clients++] = c;
    }
  }
  return 0;
}

static int parse_args(int argc, char **argv, opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool *flag = !strcmp(a, "--no-noise")             ? &o->no_noise
                 : !strcmp(a, "--no-oracle")          ? &o->no_oracle
                 : !strcmp(a, "--grid")               ? &o->grid
                 : !strcmp(a, "--json")               ? &o->json
                 : !strcmp(a, "--retry-after-header") ? &o->ra_header
                 : !strcmp(a, "--no-hold")            ? &o->no_hold
                 : !strcmp(a, "--client-slots")       ? &o->client_slots
                 : !strcmp(a, "--cluster")            ? &o->cluster
                 : !strcmp(a, "--no-lb-retry")        ? &o->no_lb_retry
                 : !strcmp(a, "--length-blind")       ? &o->length_blind
                 : !strcmp(a, "--mixed")              ? &o->mixed
                 : !strcmp(a, "--no-fair")            ? &o->no_fair
                                                      : NULL;
    if (flag) {
      *flag = true;
      continue;
    }
    int rc = 0;
    if (!v) {
      fprintf(stderr, "anytime simulate: unknown option or missing value: '%s' (see --help)\n", a);
      return -1;
    }
    if (!strcmp(a, "--config"))
      o->config = v;
    else if (!strcmp(a, "--model"))
      o->model = v;
    else if (!strcmp(a, "--policy"))
      o->policy = v;
    else if (!strcmp(a, "--load") || !strcmp(a, "--clients"))
      rc = list_arg(o, a, v);
    else if (!strcmp(a, "--duration"))
      rc = num(a, v, 0.01, 1e6, &o->duration), o->duration_set = true;
    else if (!strcmp(a, "--replicas"))
      rc = num(a, v, 1, AT_SIM_MAX_REPLICAS, &o->replicas);
    else if (!strcmp(a, "--retry-now-share"))
      rc = num(a, v, 0, 1, &o->retry_now_share);
    else if (!strcmp(a, "--warmup"))
      rc = num(a, v, 0, 1e6, &o->warmup);
    else if (!strcmp(a, "--seed"))
      rc = num(a, v, 0, 1.8e19, &o->seed);
    else if (!strcmp(a, "--deadline-ms"))
      rc = num(a, v, 1e-3, 3.6e6, &o->deadline_ms);
    else if (!strcmp(a, "--think-ms"))
      rc = num(a, v, 0, 3.6e6, &o->think_ms);
    else if (!strcmp(a, "--workers"))
      rc = num(a, v, 1, AT_PLAN_MAX_WORKERS, &o->workers);
    else if (!strcmp(a, "--max-batch"))
      rc = num(a, v, 1, AT_PLAN_MAX_BATCH, &o->max_batch);
    else if (!strcmp(a, "--inflight-limit"))
      rc = num(a, v, 1, 1e6, &o->limit);
    else if (!strcmp(a, "--late-prob"))
      rc = num(a, v, 0, 1, &o->late_prob);
    else if (!strcmp(a, "--late-ms"))
      rc = num(a, v, 0, 1e4, &o->late_ms);
    else if (!strcmp(a, "--len-cost"))
      rc = num(a, v, 0, 1, &o->len_cost);
    else if (!strcmp(a, "--lengths")) {
      char *e1, *e2, *e3;
      o->len_short = strtod(v, &e1);
      o->len_long = *e1 == ',' ? strtod(e1 + 1, &e2) : (e2 = e1, NAN);
      o->len_share = *e2 == ',' ? strtod(e2 + 1, &e3) : (e3 = e2, NAN);
      if (*e3 || !(o->len_short >= 0 && o->len_short <= 1e5) ||
          !(o->len_long >= 0 && o->len_long <= 1e5) || !(o->len_share >= 0 && o->len_share <= 1)) {
        fprintf(stderr, "anytime simulate: --lengths needs SHORT,LONG,SHARE (tokens 0..100000, "
                        "share 0..1), e.g. 10,110,0.2\n");
        return -1;
      }
    }
    else {
      fprintf(stderr, "anytime simulate: unknown option '%s' (see --help)\n", a);
      return -1;
    }
    if (rc) return -1;
    i++;
  }
  if (!(o->warmup < o->duration)) {
    fprintf(stderr, "anytime simulate: --warmup must be below --duration\n");
    return -1;
  }
  return 0;
}

/* The planner as `anytime serve` builds it from the config (see
 * src/serve/models.c), and the model's variants. */
static int from_config(const opts *o, const at_server_config *cfg, at_sim_params *sp,
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
static void apply_lengths(const opts *o, at_sim_params *sp, at_plan_variant *pv,
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

static void apply_opts(const opts *o, at_sim_params *sp) {
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

static json_t *jnum(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static void print_json(const at_sim_params *sp, const at_sim_result *r) {
  json_t *mix = json_object();
  for (size_t v = 0; v < sp->n_variants; v++)
    json_object_set_new(mix, sp->variants[v].name, json_real(r->variant_share[v]));
  json_t *o = json_pack(
      "{s:s, s:s, s:f, s:f, s:i, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o,"
      " s:o, s:o, s:o, s:o, s:o, s:i, s:f, s:f}",
      "clients", at_sim_clients_name(r->clients), "policy", at_plan_policy_name(sp->planner.policy),
      "load", r->clients == AT_SIM_BURST ? 0.0 : r->load, "capacity_rps", r->capacity_rps,
      "n_clients", r->n_clients, "rate_rps", r->rate_rps, "sent", (json_int_t)r->sent, "answered",
      (json_int_t)r->answered, "refused", (json_int_t)r->refused, "within", (json_int_t)r->within,
      "late", (json_int_t)r->late, "failed", (json_int_t)r->failed, "goodput_rps",
      jnum(r->goodput_rps), "attainment", jnum(r->attainment), "p50_ms", jnum(r->p50_s * 1e3),
      "p99_ms", jnum(r->p99_s * 1e3), "accuracy", jnum(r->accuracy), "oracle_rps",
      jnum(r->oracle_rps), "goodput_over_oracle", jnum(r->oracle_ratio), "oracle_variant",
      r->oracle_variant >= 0 ? json_string(sp->variants[r->oracle_variant].name) : json_null(),
      "admitted_cv", jnum(r->admitted_cv), "variant_mix", mix, "majority_changes",
      r->majority_changes, "overrun_mean_ms", r->overrun_mean_s * 1e3, "overrun_max_ms",
      r->overrun_max_s * 1e3);
  if (r->clients == AT_SIM_BURST) {
    json_object_set_new(o, "light_first_s", jnum(r->light_first_s));
    json_object_set_new(o, "light_after", jnum(r->light_after));
  }
  json_object_set_new(o, "held", json_integer((json_int_t)r->held));
  if (sp->retry_now_share > 0) { /* per client of each kind, within the deadline */
    json_t *k = json_object();
    static const at_sim_clients kinds[] = {AT_SIM_RETRY, AT_SIM_RETRY_AFTER};
    for (int i = 0; i < 2; i++) {
      int n = r->clients_by_kind[kinds[i]];
      json_object_set_new(k, at_sim_clients_name(kinds[i]),
                          json_pack("{s:i, s:o}", "clients", n, "goodput_per_client_rps",
                                    jnum(n ? (double)r->within_by_kind[kinds[i]] / n /
                                                 r->measured_s
                                           : NAN)));
    }
    json_object_set_new(o, "by_kind", k);
  }
  json_object_set_new(o, "early_refused", json_integer((json_int_t)r->early_refused));
  if (r->n_groups > 0) {
    json_object_set_new(o, "goodput_tps", jnum(r->goodput_tps));
    json_object_set_new(o, "oracle_tps", jnum(r->oracle_tps));
    json_t *gs = json_array();
    for (int k = 0; k < r->n_groups; k++) {
      const struct at_sim_group_result *q = &r->groups[k];
      json_t *g = json_object();
      json_object_set_new(g, "name", json_string(sp->groups[k].name ? sp->groups[k].name : ""));
      json_object_set_new(g, "clients", json_integer(q->clients));
      json_object_set_new(g, "sent", json_integer((json_int_t)q->sent));
      json_object_set_new(g, "refused", json_integer((json_int_t)q->refused));
      json_object_set_new(g, "within", json_integer((json_int_t)q->within));
      json_object_set_new(g, "goodput_tps", jnum(q->goodput_tps));
      json_object_set_new(g, "demand_tps", jnum(q->demand_tps));
      json_object_set_new(g, "fair_tps", jnum(q->fair_tps));
      json_object_set_new(g, "p99_s", jnum(q->p99_s));
      json_array_append_new(gs, g);
    }
    json_object_set_new(o, "groups", gs);
  }
  if (r->replicas > 1) {
    json_object_set_new(o, "replicas", json_integer(r->replicas));
    json_object_set_new(o, "retried", json_integer((json_int_t)r->retried));
    json_object_set_new(o, "goodput_per_replica_rps", jnum(r->goodput_per_replica_rps));
  }
  json_object_set_new(
      o, "refused_by_reason",
      json_pack("{s:I, s:I, s:I}", "deadline", (json_int_t)r->refused_deadline, "infeasible",
                (json_int_t)r->refused_infeasible, "limit", (json_int_t)r->refused_limit));
  char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
  if (s) printf("%s\n", s);
  free(s);
  json_decref(o);
}

static void print_header(void) {
  printf("%-11s %5s %5s %8s %7s %7s %8s %8s %5s %6s %7s %7s %5s %6s %5s %3s %6s\n", "clients",
         "load", "N", "sent", "200", "429", "goodput", "oracle", "g/o", "attain", "p50ms", "p99ms",
         "top", "acc", "cv", "sw", "ovr");
}

/* The load as printed: the burst scenario has none. */
static const char *load_str(const at_sim_result *r, char *buf, size_t cap) {
  if (r->clients == AT_SIM_BURST)
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "%.2g", r->load);
  return buf;
}

static void print_row(const at_sim_result *r) {
  char lb[32];
  printf(
      "%-11s %5s %5d %8llu %7llu %7llu %8.1f %8.1f %5.3f %6.3f %7.2f %7.2f %5.3f %6.4f "
      "%5.2f %3d %6.2f\n",
      at_sim_clients_name(r->clients), load_str(r, lb, sizeof lb), r->n_clients,
      (unsigned long long)r->sent, (unsigned long long)r->answered, (unsigned long long)r->refused,
      r->goodput_rps, r->oracle_rps, r->oracle_ratio, r->attainment, r->p50_s * 1e3, r->p99_s * 1e3,
      r->variant_share[r->top_variant], r->accuracy, r->admitted_cv, r->majority_changes,
      r->overrun_max_s * 1e3);
  if (r->clients == AT_SIM_BURST)
    printf(
        "%-11s light clients within deadline: first second after the burst %.4f (n=%llu), "
        "after %.4f (n=%llu)\n",
        "", r->light_first_s, (unsigned long long)r->light_first_n, r->light_after,
        (unsigned long long)r->light_after_n);
}

static int run_one(const at_sim_params *sp, at_sim_result *r) {
  at_status s = at_sim_run(sp, r);
  if (s != AT_OK) return cli_report("simulate", s);
  return AT_EXIT_OK;
}

/* The plain mode: every client model × every load, one policy. */
static int run_list(const opts *o, at_sim_params sp) {
  if (!o->json) {
    printf("policy %s, %zu variants, workers %d, max_batch %d, deadline %.3g ms, %s\n",
           at_plan_policy_name(sp.planner.policy), sp.n_variants, sp.planner.workers,
           sp.planner.max_batch,
           at_plan_cap_deadline(sp.deadline_s, sp.planner.default_deadline_s,
                                sp.planner.max_deadline_s) *
               1e3,
           sp.host_noise ? "host noise on" : "no host noise");
    print_header();
  }
  for (int c = 0; c < o->n_clients; c++)
    for (int l = 0; l < o->n_loads; l++) {
      sp.clients = o->clients[c];
      sp.load = o->loads[l];
      at_sim_result r;
      int rc = run_one(&sp, &r);
      if (rc) return rc;
      if (o->json)
        print_json(&sp, &r);
      else
        print_row(&r);
      fflush(stdout);
      if (sp.clients == AT_SIM_BURST) break; /* no load */
    }
  return AT_EXIT_OK;
}

/* One grid row: adaptive with the oracle, then the other policies. */
static int grid_row(const opts *o, at_sim_params sp) {
  at_sim_result r[4];
  for (int k = 0; k < 4; k++) {
    sp.planner.policy = k_policies[k];
    sp.oracle = k == 0 && !o->no_oracle;
    int rc = run_one(&sp, &r[k]);
    if (rc) return rc;
    if (k > 0) {
      r[k].oracle_rps = r[0].oracle_rps;
      r[k].oracle_variant = r[0].oracle_variant;
      r[k].oracle_ratio = r[0].oracle_rps > 0 ? r[k].goodput_rps / r[0].oracle_rps : NAN;
    }
    if (o->json) print_json(&sp, &r[k]);
  }
  if (o->json) return AT_EXIT_OK;
  const at_sim_result *a = &r[0];
  char lb[32];
  printf(
      "%-11s %5s %5d %8.1f %8.1f %5.3f %6.3f %7.2f %5.3f %6.4f %5.2f %3d | %5.3f %5.3f "
      "%5.3f\n",
      at_sim_clients_name(a->clients), load_str(a, lb, sizeof lb), a->n_clients, a->goodput_rps,
      a->oracle_rps, a->oracle_ratio, a->attainment, a->p99_s * 1e3,
      a->variant_share[a->top_variant], a->accuracy, a->admitted_cv, a->majority_changes,
      r[1].oracle_ratio, r[2].oracle_ratio, r[3].oracle_ratio);
  if (a->clients == AT_SIM_BURST)
    for (int k = 0; k < 4; k++)
      printf("%-11s   %-13s light within deadline: first second %.4f, after %.4f\n", "",
             at_plan_policy_name(k_policies[k]), r[k].light_first_s, r[k].light_after);
  fflush(stdout);
  return AT_EXIT_OK;
}

static int run_grid(const opts *o, at_sim_params sp) {
  if (!o->json) {
    printf(
        "grid: %zu variants, workers %d, max_batch %d, deadline %.3g ms, %g s per point "
        "(warm-up %g s), seed %llu, %s\n",
        sp.n_variants, sp.planner.workers, sp.planner.max_batch,
        at_plan_cap_deadline(sp.deadline_s, sp.planner.default_deadline_s,
                             sp.planner.max_deadline_s) *
            1e3,
        sp.duration_s, sp.warmup_s, (unsigned long long)sp.seed,
        sp.host_noise ? "host noise on" : "no host noise");
    printf("%-11s %5s %5s %8s %8s %5s %6s %7s %5s %6s %5s %3s | %-17s\n", "", "", "", "adaptive",
           "", "", "", "", "", "", "", "", "goodput/oracle");
    printf("%-11s %5s %5s %8s %8s %5s %6s %7s %5s %6s %5s %3s | %5s %5s %5s\n", "clients", "load",
           "N", "goodput", "oracle", "g/o", "attain", "p99ms", "top", "acc", "cv", "sw", "acc-o",
           "none", "limit");
  }
  for (int c = 0; c < AT_SIM_N_CLIENTS - 1; c++)
    for (size_t l = 0; l < sizeof k_grid_loads / sizeof *k_grid_loads; l++) {
      sp.clients = (at_sim_clients)c;
      sp.load = k_grid_loads[l];
      int rc = grid_row(o, sp);
      if (rc) return rc;
    }
  sp.clients = AT_SIM_BURST;
  return grid_row(o, sp);
}

/* The mixed population at each load: one line for the totals, one per
 * group. */
static int run_mixed(const opts *o, at_sim_params sp) {
  if (!o->duration_set) sp.duration_s = 5, sp.warmup_s = 2;
  sp.client_slots = true;
  int top;
  double cap;
  at_sim_group g[AT_SIM_MAX_GROUPS];
  if (at_sim_capacity(&sp, &top, &cap) != AT_OK) return cli_report("simulate", AT_ERR_INVALID_ARG);
  if (!o->json)
    printf("mixed population, %s, workers %d, max_batch %d, %g s per point (warm-up %g s), seed "
           "%llu, %s\n%-8s %5s %6s %9s %9s %9s %6s %8s %7s\n",
           o->no_fair ? "no fair sharing" : "fair sharing", sp.planner.workers,
           sp.planner.max_batch, sp.duration_s, sp.warmup_s, (unsigned long long)sp.seed,
           sp.host_noise ? "host noise on" : "no host noise", "group", "load", "N", "texts/s",
           "demand", "fair", "g/fair", "p99ms", "refused");
  for (int l = 0; l < o->n_loads; l++) {
    sp.load = o->loads[l];
    sp.n_groups = at_sim_mixed_population(sp.load, cap, g);
    sp.groups = g;
    at_sim_result r;
    int rc = run_one(&sp, &r);
    if (rc) return rc;
    if (o->json) {
      print_json(&sp, &r);
      continue;
    }
    printf("%-8s %5.2g %6d %9.1f %9s %9.1f %6.3f %8.2f %7.4f\n", "all", sp.load, r.n_clients,
           r.goodput_tps, "", r.oracle_tps, r.oracle_ratio, r.p99_s * 1e3,
           r.sent ? (double)r.refused / (double)r.sent : NAN);
    for (int k = 0; k < r.n_groups; k++) {
      const struct at_sim_group_result *q = &r.groups[k];
      printf("%-8s %5.2g %6d %9.1f %9.1f %9.1f %6.3f %8.2f %7.4f\n", g[k].name, sp.load,
             q->clients, q->goodput_tps, q->demand_tps, q->fair_tps, q->goodput_tps / q->fair_tps,
             q->p99_s * 1e3, q->sent ? (double)q->refused / (double)q->sent : NAN);
    }
    fflush(stdout);
  }
  return AT_EXIT_OK;
}

/* The cluster table: how per-replica admission plus one balancer retry
 * scales with the number of replicas (docs/deployment.md). */
static int run_cluster(const opts *o, at_sim_params sp) {
  if (!o->duration_set) sp.duration_s = 5;
  if (!o->json) {
    printf("cluster: least-connections balancer, one resend of a 429; each replica %d workers, "
           "max_batch %d, deadline %.3g ms; %g s per point (warm-up %g s), seed %llu, %s\n",
           sp.planner.workers, sp.planner.max_batch,
           at_plan_cap_deadline(sp.deadline_s, sp.planner.default_deadline_s,
                                sp.planner.max_deadline_s) * 1e3,
           sp.duration_s, sp.warmup_s, (unsigned long long)sp.seed,
           sp.host_noise ? "host noise on" : "no host noise");
    printf("%-8s %4s %5s %10s %10s %5s %6s %7s %8s %8s\n", "clients", "N", "load", "good/rep",
           "oracle/rep", "g/o", "attain", "p99ms", "resent", "refused");
  }
  /* open loop, and clients with the OpenAI SDK's retries (the common real
   * retrying client); a storm that resends every 429 at once grows past
   * any attempt budget here at 16 replicas and more */
  static const at_sim_clients kinds[] = {AT_SIM_POISSON, AT_SIM_OPENAI};
  for (size_t c = 0; c < 2; c++)
    for (size_t n = 0; n < sizeof k_cluster_sizes / sizeof *k_cluster_sizes; n++)
      for (size_t l = 0; l < sizeof k_cluster_loads / sizeof *k_cluster_loads; l++) {
        sp.clients = kinds[c];
        sp.replicas = k_cluster_sizes[n];
        sp.load = k_cluster_loads[l];
        at_sim_result r;
        int rc = run_one(&sp, &r);
        if (rc) return rc;
        if (o->json) {
          print_json(&sp, &r);
          continue;
        }
        printf("%-8s %4d %5.2g %10.1f %10.1f %5.3f %6.3f %7.2f %8.4f %8.4f\n",
               at_sim_clients_name(r.clients), r.replicas, r.load, r.goodput_per_replica_rps,
               r.oracle_rps / r.replicas, r.oracle_ratio, r.attainment, r.p99_s * 1e3,
               r.retried_share, r.sent ? (double)r.refused / (double)r.sent : NAN);
        fflush(stdout);
      }
  return AT_EXIT_OK;
}

int at_cli_simulate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help();
    return AT_EXIT_OK;
  }
  opts o = {.duration = 10, .warmup = 1, .seed = 1, .think_ms = -1, .late_ms = -1,
            .len_share = -1, .len_cost = -1};
  if (parse_args(argc, argv, &o)) return AT_EXIT_USAGE;
  if (o.n_loads == 0) o.loads[o.n_loads++] = 1.0;
  if (o.n_clients == 0) o.clients[o.n_clients++] = AT_SIM_POISSON;
  char def[4096];
  if (!o.config) {
    at_status s = at_server_default_config_path(def, sizeof def);
    if (s != AT_OK) return cli_report("simulate", s);
    o.config = def;
  }
  static at_server_config cfg; /* large: not on the stack */
  cfg = at_server_config_default();
  at_status s = at_server_config_load(o.config, &cfg);
  if (s != AT_OK) return cli_report("simulate", s);
  at_sim_params sp = at_sim_default_params();
  at_plan_variant pv[AT_SERVER_MAX_VARIANTS], blind[AT_SERVER_MAX_VARIANTS];
  if (from_config(&o, &cfg, &sp, pv)) return AT_EXIT_USAGE;
  apply_opts(&o, &sp);
  apply_lengths(&o, &sp, pv, blind);
  if (o.cluster) return run_cluster(&o, sp);
  if (o.mixed) return run_mixed(&o, sp);
  return o.grid ? run_grid(&o, sp) : run_list(&o, sp);
}
