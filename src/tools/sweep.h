/* src/tools/sweep.h — the load sweep behind `anytime sweep`: what the
 * planner buys, and what it costs against a perfect one. For each repeat
 * and each policy (adaptive, accurate-only, none = no admission control,
 * limit = a fixed in-flight limit like TEI's max_concurrent_requests,
 * cheap-only = the planner holding only the cheapest frontier variant) it
 * starts `anytime serve` on the profiled configuration and drives it
 * in-process with the load generator (tools/loadgen.h, held-out texts) at
 * each load ρ × capacity, with two kinds of clients: open-loop Poisson
 * (sends at their scheduled times whatever the server does) and closed-loop
 * clients that resend a 429 at once (the clients that kept the old planner
 * shut, issue #14): N = ρ·C·Z clients thinking Z = 50 ms on average. One
 * CSV row per (repeat, policy, clients, ρ) records goodput, latency, the
 * variant mix, the median Run time the server reported (x-inference-time),
 * the CPU time the hypervisor gave to other tenants meanwhile (steal), a
 * fixed piece of arithmetic timed just before the point (the host's own
 * speed), and the ORACLE: min(offered rate, the cheapest frontier variant's
 * capacity), what a planner that knew everything could answer within the
 * deadline, beside which each policy's goodput is read, and the CEILING:
 * the better of the two single-variant servers (accurate-only, cheap-only)
 * measured at the same point.
 *
 * Capacity is measured, not derived (sweep_capacity.c says how and why);
 * the run loop is sweep_run.c, the servers and the host probes
 * sweep_host.c, the CSV (written and read back) sweep_csv.c, the markdown
 * summary and the gnuplot figure sweep_report.c, the configuration and its
 * one-variant rewrite sweep_config.c.
 *
 * Ownership: sweep_create() copies the parameters' numbers and the
 * configuration; the strings in sweep_params are borrowed and must outlive
 * the sweep. sweep_destroy() frees what the sweep holds and removes its
 * temporary directory in /tmp, unless the sweep counted failures: then the
 * servers' log in it may be wanted, and it is kept and named on stderr.
 * Thread-safety: a sweep belongs to one thread, and only one sweep runs in
 * a process at a time (the host probe and the medians use static buffers;
 * sweep_prepare() ignores SIGPIPE for the whole process). These functions
 * print their progress, warnings and errors on stderr — they are the
 * messages of `anytime sweep` — and fork and exec `anytime serve`. */
#ifndef ANYTIME_TOOLS_SWEEP_H
#define ANYTIME_TOOLS_SWEEP_H

#include <stdbool.h>

#include "anytime/server.h"

#define SWEEP_MAX_RHO 16
#define SWEEP_MAX_REP 10
#define SWEEP_MAX_POL 5
#define SWEEP_MAX_CM 2

/* The kinds of client, indexes into sweep_client_names. */
enum { SWEEP_CM_POISSON = 0, SWEEP_CM_CLOSED_RETRY = 1 };
/* "poisson", "closed-retry" */
extern const char *const sweep_client_names[SWEEP_MAX_CM];
/* "adaptive", "accurate-only", "none", "limit", "cheap-only" */
extern const char *const sweep_policy_names[SWEEP_MAX_POL];

/* What the sweep is asked to do (the command line's options). */
typedef struct sweep_params {
  const char *cfg_path, *out_csv, *out_md, *plot, *data_path, *basis;
  const char *from_csv;    /* summarise an earlier sweep's rows, run nothing */
  const char *server_cpus; /* start each server under taskset -c LIST (NULL: not) */
  double rhos[SWEEP_MAX_RHO];
  int n_rho;
  double duration;       /* seconds per point */
  double deadline;       /* ms; <= 0: the configuration's */
  double capacity;       /* req/s; <= 0: measured (or from the profile) */
  double cheap_capacity; /* the cheapest frontier variant's; <= 0: measured */
  double think_ms;       /* closed-loop clients' mean think time */
  double adj_from;       /* rho at and above which C_cheap is measured beside each point */
  int repeats, seed, inflight_limit;
  bool capacity_from_profile;    /* C and C_cheap = c/s(1) from the configuration */
  int pol[SWEEP_MAX_POL], n_pol; /* indexes into sweep_policy_names */
  int cms[SWEEP_MAX_CM], n_cm;   /* indexes into sweep_client_names */
} sweep_params;

/* The defaults of `anytime sweep` (configs/serving.yaml, results/load_sweep.*,
 * docs/img/load_sweep.png, every policy and kind of client, seed 1, think
 * time 50 ms, in-flight limit 512, beside from ρ = 1, rate basis offered);
 * rhos, repeats and duration are left 0 for the caller to choose. */
void sweep_default_params(sweep_params *p);

typedef struct sweep sweep;

/* A sweep of `p` on `cfg` (loaded by the caller: at_server_config_load),
 * starting servers with the executable `self_exe` (copied). Finds the
 * classify model, its most accurate and its cheapest frontier variant.
 * Returns 0 with *out set (free with sweep_destroy), or -1 with a message
 * on stderr (no classify model, no frontier variant, out of memory). */
int sweep_create(const sweep_params *p, const char *self_exe, const at_server_config *cfg,
                 sweep **out);
/* Free a sweep; NULL is a no-op. */
void sweep_destroy(sweep *sw);

/* --from-csv: read the rows of p->from_csv back in place of running them.
 * Returns 0, or -1 with a message on stderr naming the line and problem. */
int sweep_read_csv(sweep *sw);

/* Load the texts, make the temporary directory, time the host probe and
 * find both capacities (measured through servers, given, or from the
 * profile). Returns 0, or -1 with a message on stderr. */
int sweep_prepare(sweep *sw);

/* After sweep_prepare(): the capacities it found. Names are borrowed from
 * the sweep. */
typedef struct sweep_capacities {
  const char *accurate_variant, *cheapest_variant;
  double capacity_rps, cheapest_capacity_rps, deadline_ms;
  int workers;
} sweep_capacities;
void sweep_get_capacities(const sweep *sw, sweep_capacities *out);

/* Every repeat, policy, kind of client and load, one CSV row each to
 * p->out_csv (results/ is created). A point that fails is counted
 * (sweep_failures) and the sweep goes on. Returns 0, or -1 when the CSV
 * cannot be written (a message on stderr). */
int sweep_run(sweep *sw);
/* Points and servers that failed so far. */
int sweep_failures(const sweep *sw);

/* The markdown summary (p->out_md): medians across repeats with their
 * range, one table per kind of client. A file that cannot be written is a
 * warning on stderr. */
void sweep_write_summary(const sweep *sw);
/* The figure (p->plot) with gnuplot; false, with a warning on stderr, when
 * gnuplot is missing or fails. */
bool sweep_write_plot(const sweep *sw);

/* Write `out_path`: `cfg` (loaded from `cfg_path`) with its classify model
 * holding only its cheapest frontier variant (the one the sweep's
 * cheap-only policy serves), every other model and the generation lane as
 * they are, through the configuration's writers, model paths absolute
 * (relative where they lie under out_path's directory). The one writer of
 * that configuration, for `anytime sweep --write-cheap-config` (and so for
 * bench/lib.sh). Returns 0, or -1 with a message on stderr. */
int sweep_write_cheap_config(const at_server_config *cfg, const char *cfg_path,
                             const char *out_path);

#endif /* ANYTIME_TOOLS_SWEEP_H */
