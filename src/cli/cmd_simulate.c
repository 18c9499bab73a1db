/* src/cli/cmd_simulate.c — `anytime simulate`: runs the real planner
 * against simulated clients, workers and host noise (anytime/sim.h) with
 * the variants and planner settings of a serving YAML config, and prints a
 * table (or --json) per client model and load, with the oracle beside it.
 * --grid runs every load of {0.4,0.8,1,1.3,2,3,5} × every client model with
 * all four policies, and the burst recovery scenario. --replicas N puts N
 * servers behind a least-connections balancer that resends a 429 once;
 * --cluster runs N = 1..64 replicas × open-loop and SDK-retrying clients × a
 * few loads and prints goodput per replica and the share resent; --mixed
 * runs the mixed population of clients.
 * Deterministic: the same options print the same numbers on any host.
 *
 * This file is the command: --help, the options and the configuration. The
 * drivers — the simulator's parameters from both, the modes and their
 * tables — are the tools library's (tools/simulate.h,
 * src/tools/simulate_*.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"
#include "anytime/sim.h"
#include "cli/cli.h"
#include "tools/simulate.h"

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
      "                     server.hold_early_retries: false)\n"
      "  --client-slots     the server's slots that belong to clients: a client back\n"
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
static int list_arg(simdrv_options *o, const char *opt, const char *v) {
  char buf[512];
  if (!v || strlen(v) >= sizeof buf) {
    fprintf(stderr, "anytime simulate: %s needs a value\n", opt);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(opt, "--load") == 0) {
      if (o->n_loads >= SIMDRV_MAX_LOADS)
        return fprintf(stderr, "anytime simulate: too many loads\n"), -1;
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

static int parse_args(int argc, char **argv, simdrv_options *o) {
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
        fprintf(stderr,
                "anytime simulate: --lengths needs SHORT,LONG,SHARE (tokens 0..100000, "
                "share 0..1), e.g. 10,110,0.2\n");
        return -1;
      }
    } else {
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

int at_cli_simulate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help();
    return AT_EXIT_OK;
  }
  simdrv_options o = {.duration = 10,
                      .warmup = 1,
                      .seed = 1,
                      .think_ms = -1,
                      .late_ms = -1,
                      .len_share = -1,
                      .len_cost = -1};
  if (parse_args(argc, argv, &o)) return AT_EXIT_USAGE;
  if (o.n_loads == 0) o.loads[o.n_loads++] = 1.0;
  if (o.n_clients == 0) o.clients[o.n_clients++] = AT_SIM_POISSON;
  char def[4096];
  if (!o.config) {
    at_status s = at_server_default_config_path(def, sizeof def);
    if (s != AT_OK) return tools_report("simulate", s);
    o.config = def;
  }
  static at_server_config cfg; /* large: not on the stack */
  cfg = at_server_config_default();
  at_status s = at_server_config_load(o.config, &cfg);
  if (s != AT_OK) return tools_report("simulate", s);
  at_sim_params sp = at_sim_default_params();
  at_plan_variant pv[AT_SERVER_MAX_VARIANTS], blind[AT_SERVER_MAX_VARIANTS];
  if (simdrv_params(&o, &cfg, &sp, pv, blind)) return AT_EXIT_USAGE;
  if (o.cluster) return simdrv_run_cluster(&o, sp);
  if (o.mixed) return simdrv_run_mixed(&o, sp);
  return o.grid ? simdrv_run_grid(&o, sp) : simdrv_run_list(&o, sp);
}
