/* src/tools/simulate_modes.c — the modes of `anytime simulate`
 * (tools/simulate.h), each a loop of simulator runs (at_sim_run) and its
 * table: the plain list (client models x loads, one policy), the grid
 * (loads {0.4,0.8,1,1.3,2,3,5} x every client model with all four
 * policies, then the burst recovery scenario), the mixed population (a
 * line for the totals and one per group, with each group's max-min fair
 * share), and the cluster (N = 1..64 replicas behind a least-connections
 * balancer x open-loop and SDK-retrying clients x a few loads). */
#include <math.h>
#include <stdio.h>

#include "anytime/anytime.h"
#include "anytime/sim.h"
#include "tools/simulate.h"

/* The grid's loads, the cluster's replica counts and loads, and the
 * policies the grid runs side by side (adaptive first: it has the oracle). */
static const double k_grid_loads[] = {0.4, 0.8, 1, 1.3, 2, 3, 5};
static const int k_cluster_sizes[] = {1, 2, 4, 8, 16, 64};
static const double k_cluster_loads[] = {0.8, 1.3, 2, 3};
static const at_plan_policy k_policies[] = {AT_PLAN_ADAPTIVE, AT_PLAN_ACCURATE_ONLY, AT_PLAN_NONE,
                                            AT_PLAN_LIMIT};

static int run_one(const at_sim_params *sp, at_sim_result *r) {
  at_status s = at_sim_run(sp, r);
  if (s != AT_OK) return tools_report("simulate", s);
  return AT_EXIT_OK;
}

/* The plain mode: every client model × every load, one policy. */
int simdrv_run_list(const simdrv_options *o, at_sim_params sp) {
  if (!o->json) {
    printf("policy %s, %zu variants, workers %d, max_batch %d, deadline %.3g ms, %s\n",
           at_plan_policy_name(sp.planner.policy), sp.n_variants, sp.planner.workers,
           sp.planner.max_batch,
           at_plan_cap_deadline(sp.deadline_s, sp.planner.default_deadline_s,
                                sp.planner.max_deadline_s) *
               1e3,
           sp.host_noise ? "host noise on" : "no host noise");
    simdrv_print_header();
  }
  for (int c = 0; c < o->n_clients; c++)
    for (int l = 0; l < o->n_loads; l++) {
      sp.clients = o->clients[c];
      sp.load = o->loads[l];
      at_sim_result r;
      int rc = run_one(&sp, &r);
      if (rc) return rc;
      if (o->json)
        simdrv_print_json(&sp, &r);
      else
        simdrv_print_row(&r);
      fflush(stdout);
      if (sp.clients == AT_SIM_BURST) break; /* no load */
    }
  return AT_EXIT_OK;
}

/* One grid row: adaptive with the oracle, then the other policies. */
static int grid_row(const simdrv_options *o, at_sim_params sp) {
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
    if (o->json) simdrv_print_json(&sp, &r[k]);
  }
  if (o->json) return AT_EXIT_OK;
  const at_sim_result *a = &r[0];
  char lb[32];
  printf(
      "%-11s %5s %5d %8.1f %8.1f %5.3f %6.3f %7.2f %5.3f %6.4f %5.2f %3d | %5.3f %5.3f "
      "%5.3f\n",
      at_sim_clients_name(a->clients), simdrv_load_str(a, lb, sizeof lb), a->n_clients,
      a->goodput_rps, a->oracle_rps, a->oracle_ratio, a->attainment, a->p99_s * 1e3,
      a->variant_share[a->top_variant], a->accuracy, a->admitted_cv, a->majority_changes,
      r[1].oracle_ratio, r[2].oracle_ratio, r[3].oracle_ratio);
  if (a->clients == AT_SIM_BURST)
    for (int k = 0; k < 4; k++)
      printf("%-11s   %-13s light within deadline: first second %.4f, after %.4f\n", "",
             at_plan_policy_name(k_policies[k]), r[k].light_first_s, r[k].light_after);
  fflush(stdout);
  return AT_EXIT_OK;
}

/* The end of a mode's first line: the deadline, the time per point, the
 * seed and whether the host's noise is on. */
static void print_run_line_tail(const at_sim_params *sp) {
  printf("deadline %.3g ms, %g s per point (warm-up %g s), seed %llu, %s\n",
         at_plan_cap_deadline(sp->deadline_s, sp->planner.default_deadline_s,
                              sp->planner.max_deadline_s) *
             1e3,
         sp->duration_s, sp->warmup_s, (unsigned long long)sp->seed,
         sp->host_noise ? "host noise on" : "no host noise");
}

int simdrv_run_grid(const simdrv_options *o, at_sim_params sp) {
  if (!o->json) {
    printf("grid: %zu variants, workers %d, max_batch %d, ", sp.n_variants, sp.planner.workers,
           sp.planner.max_batch);
    print_run_line_tail(&sp);
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
int simdrv_run_mixed(const simdrv_options *o, at_sim_params sp) {
  if (!o->duration_set) sp.duration_s = 5, sp.warmup_s = 2;
  sp.client_slots = true;
  int top;
  double cap;
  at_sim_group g[AT_SIM_MAX_GROUPS];
  if (at_sim_capacity(&sp, &top, &cap) != AT_OK)
    return tools_report("simulate", AT_ERR_INVALID_ARG);
  if (!o->json)
    printf(
        "mixed population, %s, workers %d, max_batch %d, %g s per point (warm-up %g s), seed "
        "%llu, %s\n%-8s %5s %6s %9s %9s %9s %6s %8s %7s\n",
        o->no_fair ? "no fair sharing" : "fair sharing", sp.planner.workers, sp.planner.max_batch,
        sp.duration_s, sp.warmup_s, (unsigned long long)sp.seed,
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
      simdrv_print_json(&sp, &r);
      continue;
    }
    printf("%-8s %5.2g %6d %9.1f %9s %9.1f %6.3f %8.2f %7.4f\n", "all", sp.load, r.n_clients,
           r.goodput_tps, "", r.oracle_tps, r.oracle_ratio, r.p99_s * 1e3,
           r.sent ? (double)r.refused / (double)r.sent : NAN);
    for (int k = 0; k < r.n_groups; k++) {
      const struct at_sim_group_result *q = &r.groups[k];
      printf("%-8s %5.2g %6d %9.1f %9.1f %9.1f %6.3f %8.2f %7.4f\n", g[k].name, sp.load, q->clients,
             q->goodput_tps, q->demand_tps, q->fair_tps, q->goodput_tps / q->fair_tps,
             q->p99_s * 1e3, q->sent ? (double)q->refused / (double)q->sent : NAN);
    }
    fflush(stdout);
  }
  return AT_EXIT_OK;
}

/* The cluster table: how per-replica admission plus one balancer retry
 * scales with the number of replicas (docs/deployment.md). */
int simdrv_run_cluster(const simdrv_options *o, at_sim_params sp) {
  if (!o->duration_set) sp.duration_s = 5;
  if (!o->json) {
    printf(
        "cluster: least-connections balancer, one resend of a 429; each replica %d workers, "
        "max_batch %d; ",
        sp.planner.workers, sp.planner.max_batch);
    print_run_line_tail(&sp);
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
          simdrv_print_json(&sp, &r);
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
