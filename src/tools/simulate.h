/* src/tools/simulate.h — the drivers behind `anytime simulate`: the
 * simulator's parameters built from a serving configuration and the
 * command's options (simulate_params.c), the modes that run the simulator
 * (anytime/sim.h) over client models, loads, policies, replica counts and
 * the mixed population (simulate_modes.c), and the tables and JSON lines
 * they print (simulate_report.c). The simulator itself is the library's
 * (src/plan/sim*.c); what the options and columns mean is in
 * `anytime simulate --help` (src/cli/cmd_simulate.c).
 *
 * The drivers print their tables on stdout and their errors on stderr with
 * the command's prefix ("anytime simulate: ..."): they are the command's
 * body, not a library. Deterministic: the same options print the same
 * numbers on any host.
 *
 * Ownership: the parameters point into arrays the caller owns (the
 * variants, the length-blind copy); the drivers take the parameters by
 * value and own nothing past their return. Thread-safety: no shared or
 * static mutable state; each call uses the calling thread alone. */
#ifndef ANYTIME_TOOLS_SIMULATE_H
#define ANYTIME_TOOLS_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>

#include "anytime/server.h"
#include "anytime/sim.h"
#include "tools/report.h"

#define SIMDRV_MAX_LOADS 32

/* The drivers return the CLI's exit codes (tools/report.h). */

/* The command's options, as its parser leaves them. Numbers that were not
 * given keep the values the command starts from (see at_cli_simulate). */
typedef struct simdrv_options {
  const char *config, *model, *policy; /* NULL: the default */
  double loads[SIMDRV_MAX_LOADS];
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
} simdrv_options;

/* The simulator's parameters for `o` from the serving configuration `cfg`:
 * the planner as `anytime serve` builds it, the chosen model's variants
 * (written to pv, AT_SERVER_MAX_VARIANTS entries, which sp then points
 * to), the options applied over them, and with --length-blind a copy of
 * the variants without their length model (in blind, the same size) that
 * the planner is told instead. Returns 0, or -1 after printing why (no
 * such model, a variant without a service-time table, a bad planner
 * setting or policy). */
int simdrv_params(const simdrv_options *o, const at_server_config *cfg, at_sim_params *sp,
                  at_plan_variant *pv, at_plan_variant *blind);

/* The modes. Each prints its table (or one JSON object per run with
 * o->json) on stdout and returns AT_EXIT_OK, or the exit code after
 * printing a failed run's error. */
/* Every client model x every load, one policy. */
int simdrv_run_list(const simdrv_options *o, at_sim_params sp);
/* --grid: every load of the grid x every client model, adaptive with the
 * oracle and the other policies beside it, then the burst scenario. */
int simdrv_run_grid(const simdrv_options *o, at_sim_params sp);
/* --mixed: the mixed population at each load, a line for the totals and
 * one per group. */
int simdrv_run_mixed(const simdrv_options *o, at_sim_params sp);
/* --cluster: replica counts x open-loop and SDK-retrying clients x loads. */
int simdrv_run_cluster(const simdrv_options *o, at_sim_params sp);

/* ---- the report (simulate_report.c) -------------------------------------- */

/* One run as one JSON line. */
void simdrv_print_json(const at_sim_params *sp, const at_sim_result *r);
/* The plain mode's header and one row (and the burst's second line). */
void simdrv_print_header(void);
void simdrv_print_row(const at_sim_result *r);
/* The load as printed ("-" for the burst scenario, which has none);
 * returns buf. */
const char *simdrv_load_str(const at_sim_result *r, char *buf, size_t cap);

#endif /* ANYTIME_TOOLS_SIMULATE_H */
