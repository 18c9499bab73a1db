/* src/tools/sweep_internal.h — what the sweep's files (sweep_*.c) share and
 * `anytime sweep` does not see: the state of one sweep (its options, the
 * configuration, what it measured and every point's figures) and the
 * functions one file of the sweep calls in another. The public side is
 * tools/sweep.h.
 *
 * Ownership: a sweep owns everything in it (the configuration copy, the
 * texts, the capacity server it may have running); sweep_destroy() frees
 * it. Thread-safety: as tools/sweep.h — one thread, one sweep at a time. */
#ifndef ANYTIME_TOOLS_SWEEP_INTERNAL_H
#define ANYTIME_TOOLS_SWEEP_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "anytime/server.h"
#include "tools/loadgen.h"
#include "tools/sweep.h"

#define MAX_RHO SWEEP_MAX_RHO
#define MAX_REP SWEEP_MAX_REP
#define MAX_POL SWEEP_MAX_POL
#define MAX_CM SWEEP_MAX_CM
#define MAX_POINTS (MAX_POL * MAX_CM * MAX_RHO * MAX_REP)
#define CM_POISSON SWEEP_CM_POISSON
#define CM_CLOSED_RETRY SWEEP_CM_CLOSED_RETRY

/* Capacity: the best of CAP_WINDOWS saturated windows of CAP_WINDOW_S;
 * beside a point, one ADJ_WINDOW_S window before and one after. */
#define CAP_WINDOWS 3
#define CAP_WINDOW_S 1.5
#define ADJ_WINDOW_S 1.0

/* One point's figures (a CSV row). */
typedef struct pt {
  bool ok;
  double rate, sent, answered, rejected, errors, good, att, adm, accy, p50, p95, p99;
  double cost_rel, top, run_p50, steal, probe, offered, retries, logical, logical_ok;
  double oracle, n_clients;
  /* the oracle beside the point: the cheapest variant's capacity measured
   * just before and just after it (or the repeat's), the load generator's
   * CPU (cores) during the point and during that capacity measurement, and
   * the oracle with the capacity scaled to the CPU the load generator left */
  double cheap_cap, lg_cores, lg_cores_cap, oracle_host;
  char mix[256];
} pt;

struct sweep {
  /* options (sweep_params) */
  const char *cfg_path, *out_csv, *out_md, *plot, *data_path, *basis;
  const char *from_csv;    /* --from-csv: summarise an earlier sweep's rows, run nothing */
  const char *server_cpus; /* --server-cpus: start each server under taskset -c LIST */
  double rhos[MAX_RHO], duration, deadline, capacity, cheap_capacity, think_ms;
  double adj_from; /* rho at and above which C_cheap is measured beside each point */
  int n_rho, repeats, seed, capacity_from_profile, inflight_limit;
  int pol[MAX_POL], n_pol, cms[MAX_CM], n_cm;
  /* the configuration */
  at_server_config cfg;
  at_server_model_config *mc; /* the classify model, in cfg */
  int acc_v, cheap_v;         /* most accurate / cheapest frontier variant */
  double best_acc, acc_cost;
  /* measured */
  double s_busy, cheap_s_busy, probe0;
  double cheap_lg_cores; /* the load generator's cores in C_cheap's best window */
  pid_t cap_pid;         /* a --policy none server holding only the cheapest variant, */
  int cap_port;          /* up through each repeat for the measurements beside a point */
  int ncpu;
  bool measured, cheap_measured, have_data;
  char cheap_how[160];
  lg_data data;
  char self[PATH_MAX], tmpdir[1024], portfile[PATH_MAX], logf[PATH_MAX], dls[32];
  char cheap_cfg[PATH_MAX]; /* the configuration with only the cheapest frontier variant */
  double probes[MAX_POINTS];
  int n_probe, failures;
  double cheap_caps[MAX_REP]; /* C_cheap measured at the start of each repeat */
  pt pts[MAX_POL][MAX_CM][MAX_RHO][MAX_REP];
};

/* ---- sweep_host.c: the servers and the host ---- */

/* Fork `anytime serve` on config `cfg` with `policy` (cheap-only: the
 * planner on sw->cheap_cfg) and wait up to 60 s for its port. Returns its
 * pid with *port set, or -1 (it exited, or never wrote its port). */
pid_t sweep_start_server(const sweep *sw, const char *cfg, const char *policy, int *port);
/* SIGTERM a server and wait: its exit status (128 if it did not exit). */
int sweep_stop_server(pid_t pid);
/* The load generator's configuration for the server on `port`. */
lg_config sweep_lg_cfg(int port, double deadline_ms, int seed, double drain_s);
/* /proc/stat's total and steal ticks; -1 if unreadable. */
int sweep_cpu_ticks(unsigned long long *total, unsigned long long *steal);
/* Seconds on the monotonic clock. */
double sweep_now_s(void);
/* CPU seconds this process has used, user + system, all threads. */
double sweep_self_cpu_s(void);
/* A fixed piece of arithmetic timed on this host, ms (lower is faster). */
double sweep_host_probe_ms(void);

/* ---- sweep_config.c ---- */

/* A variant's profiled batch-1 service time (0 if none). */
double sweep_s1(const at_server_variant_config *vc);
/* `cfg` with model `m` holding only its variant `v`, written to `path`
 * through the configuration's writers; with `others`, every other model and
 * the generation lane too, else model m alone. Paths under `rel_dir` are
 * written relative to it, others absolute. Returns 0 or -1. */
int sweep_write_variant_config(const at_server_config *cfg, int m, int v, bool others,
                               const char *rel_dir, const char *cfg_path, const char *path);
/* Make the sweep's temporary directory, $TMPDIR/anytime-sweep-XXXXXX (/tmp
 * without TMPDIR), into sw->tmpdir; sweep_destroy() removes it. Returns 0,
 * or -1 with errno set and sw->tmpdir empty. */
int sweep_make_tmpdir(sweep *sw);

/* ---- sweep_capacity.c ---- */

/* Start a --policy none server on config `path`, saturate it, stop it. */
int sweep_measure_capacity(sweep *sw, const char *path, double *cap, double *s_busy,
                           double *lg_cores);
/* C and C_cheap, measured, given or from the profile; writes sw->cheap_cfg. */
int sweep_find_capacities(sweep *sw);
/* The oracle of point p after it ran. */
void sweep_set_oracle(const sweep *sw, pt *p);
/* One window on the capacity server beside a point; adds to *cap, *cores. */
bool sweep_beside(const sweep *sw, int seed, double *cap, double *cores);

/* ---- sweep_csv.c ---- */

/* The CSV header (old: the 31 columns of sweeps before the oracle beside). */
void sweep_csv_header(FILE *csv, bool old);
/* One point's row. */
void sweep_csv_row(FILE *csv, const sweep *sw, int r, const char *pol, int cm, double rho,
                   const pt *p);

/* ---- sweep_report.c ---- */

/* Median of the values of v[0..n) that are not NaN, the first MAX_POINTS of
 * them (NaN if none). Reentrant. */
double sweep_med(const double *v, int n);
/* Least and greatest of the values that are not NaN (NaN if none). */
void sweep_minmax(const double *v, int n, double *lo, double *hi);

#endif /* ANYTIME_TOOLS_SWEEP_INTERNAL_H */
