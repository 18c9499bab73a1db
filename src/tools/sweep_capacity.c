/* src/tools/sweep_capacity.c — the capacities the sweep's loads and its
 * oracle are read against, and the oracle itself.
 *
 * Capacity is measured, not derived: the requests per second the server
 * answers when saturated. When the sweep starts it starts a server without
 * admission control (--policy none: everything to the most accurate
 * variant) and has 2c closed-loop clients send back to back;
 * capacity C is the answers per second from the first send to the last
 * answer, best of three 1.5 s windows (the host at its speed: one window
 * can catch it at half speed). The cheapest frontier variant's capacity is
 * measured the same way on a server whose configuration (a temporary file)
 * holds only that variant, before each repeat and, from ρ = --beside-from
 * on, in a 1 s window just before and just after each point (that server
 * stays up, idle, through the repeat): the host's speed moved 1.4x between
 * a repeat's measurement and its points. The load generator's own CPU,
 * from getrusage, is recorded for each point and each capacity window; the
 * oracle for the host share scales the capacity by what it left the server
 * ((ncpu − its cores at the point) / (ncpu − its cores then)). The
 * queueing model's own c·μ = c/s(1) overstates capacity on
 * this 2-vCPU host (in one sweep: 1141 req/s from the profile, 973 from the
 * Run times during the measurement, 860 answered): Runs overlap, the HTTP
 * threads and the load generator share the same two cores, and a worker is
 * idle while its answer goes out. The host's speed drifts by 20 % and more
 * within minutes, so capacity is measured once, and every repeat offers
 * the same rates. --capacity RPS fixes it; --capacity profile uses c/s(1)
 * from the configuration. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "tools/sweep_internal.h"

/* One saturated window of `secs` on `port`: its answers per second, median
 * Run time and the load generator's CPU (cores) meanwhile. 0 on success;
 * -1 when it failed or the server refused anything. */
static int saturated_window(const sweep *sw, int port, double secs, int seed, double *rps,
                            double *run_s, double *lg_cores) {
  lg_config c = sweep_lg_cfg(port, 10000, seed, 0.5);
  lg_closed cl = {.clients = (size_t)(2 * sw->cfg.workers),
                  .think_s = 0,
                  .retry = LG_RETRY_NONE,
                  .duration_s = secs};
  lg_result res;
  char err[256];
  double c0 = sweep_self_cpu_s(), t0 = sweep_now_s();
  if (lg_run_closed(&c, &cl, &sw->data, &res, err, sizeof err) != 0) {
    fprintf(stderr, "sweep: %s\n", err);
    return -1;
  }
  *lg_cores = (sweep_self_cpu_s() - c0) / (sweep_now_s() - t0);
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, secs, 0, 1, &s);
  lg_result_free(&res);
  *rps = s.answered_rps, *run_s = s.inference_p50_s;
  if (s.rejected > 0) {
    fprintf(stderr, "sweep: the server refused %zu requests while capacity was measured\n",
            s.rejected);
    return -1;
  }
  return 0;
}

/* Saturate a server without admission control: 2c closed-loop clients send
 * back to back, so each worker always has a request waiting, in
 * CAP_WINDOWS windows of CAP_WINDOW_S each. The capacity is the best
 * window's answers per second (first send to last answer), with that
 * window's median Run time, s′: this host's speed halves for seconds at a
 * time, and one 2 s window taken while it was slow made C 963 req/s in a
 * sweep whose accurate-only then carried 1,200 — so ρ = 1.3 was no
 * overload. The best window is the host at its speed. 0 on success. */
static int measure_saturated(const sweep *sw, int port, double *s_busy, double *served_rps,
                             double *lg_cores) {
  *s_busy = *served_rps = *lg_cores = 0;
  for (int w = 0; w < CAP_WINDOWS; w++) {
    double rps, run_s, cores;
    if (saturated_window(sw, port, CAP_WINDOW_S, sw->seed + 99 + w, &rps, &run_s, &cores) != 0)
      return -1;
    fprintf(stderr,
            "sweep:   window %d/%d: %.0f req/s, median Run %.4f ms, load generator "
            "%.2f cores\n",
            w + 1, CAP_WINDOWS, rps, run_s * 1e3, cores);
    if (rps > *served_rps) *served_rps = rps, *s_busy = run_s, *lg_cores = cores;
  }
  return *s_busy > 0 && *served_rps > 0 ? 0 : -1;
}

/* Start a --policy none server on config `path`, saturate it, stop it. */
int sweep_measure_capacity(sweep *sw, const char *path, double *cap, double *s_busy,
                           double *lg_cores) {
  int port;
  pid_t pid = sweep_start_server(sw, path, "none", &port);
  if (pid < 0) {
    fprintf(stderr, "anytime sweep: server did not start (log: %s)%s%s%s\n", sw->logf,
            sw->server_cpus ? "; it was started under `taskset -c " : "",
            sw->server_cpus ? sw->server_cpus : "", sw->server_cpus ? "`" : "");
    return -1;
  }
  int rc = measure_saturated(sw, port, s_busy, cap, lg_cores);
  sweep_stop_server(pid);
  if (rc != 0)
    fprintf(stderr,
            "anytime sweep: could not measure capacity through the server (log: %s); "
            "pass --capacity RPS or --capacity profile\n",
            sw->logf);
  return rc;
}

/* C (the most accurate variant) and C_cheap (the cheapest frontier
 * variant), measured, given or from the profile. Returns 0 or -1. */
int sweep_find_capacities(sweep *sw) {
  const at_server_variant_config *acc = &sw->mc->variants[sw->acc_v];
  const at_server_variant_config *cheap = &sw->mc->variants[sw->cheap_v];
  bool same = sw->acc_v == sw->cheap_v;
  if (sw->capacity_from_profile) {
    double s1 = sweep_s1(acc), s1c = sweep_s1(cheap);
    if (!(s1 > 0) || !(s1c > 0)) {
      fprintf(stderr,
              "anytime sweep: %s has no batch-1 service time for %s; run `anytime "
              "profile` or pass --capacity RPS\n",
              sw->cfg_path, s1 > 0 ? cheap->name : acc->name);
      return -1;
    }
    sw->capacity = sw->cfg.workers / s1;
    if (!(sw->cheap_capacity > 0)) sw->cheap_capacity = sw->cfg.workers / s1c;
    fprintf(stderr, "sweep: capacity c/s(1) = %d / %.4f ms (profiled) = %.0f req/s\n",
            sw->cfg.workers, s1 * 1e3, sw->capacity);
    snprintf(sw->cheap_how, sizeof sw->cheap_how, "the queueing model's c/s(1) from the profile");
  }
  if (!(sw->capacity > 0)) {
    /* its own server without admission control (--policy none: everything
     * to the most accurate variant), so that saturating it measures what it
     * answers instead of provoking refusals, and leaves no planner state */
    double cap, cores;
    if (sweep_measure_capacity(sw, sw->cfg_path, &cap, &sw->s_busy, &cores) != 0) return -1;
    sw->capacity = cap;
    sw->cheap_lg_cores = cores; /* the cheapest's own measurement replaces it, if any */
    sw->measured = true;
    fprintf(stderr,
            "sweep: capacity %.0f req/s: what the server answered with every worker busy "
            "(measured now); its Run time meanwhile s' = %.4f ms, c/s' = %.0f req/s (profiled "
            "s'(1) %.4f ms, s(1) %.4f ms)\n",
            sw->capacity, sw->s_busy * 1e3, sw->cfg.workers / sw->s_busy,
            (acc->n_busy_points > 0 && acc->busy_batch[0] == 1 ? acc->busy_s[0] : 0) * 1e3,
            sweep_s1(acc) * 1e3);
  }
  if (same) {
    snprintf(sw->cheap_cfg, sizeof sw->cheap_cfg, "%s", sw->cfg_path);
  } else {
    int n = snprintf(sw->cheap_cfg, sizeof sw->cheap_cfg, "%s/only-%s.yaml", sw->tmpdir,
                     cheap->name);
    if (n < 0 || (size_t)n >= sizeof sw->cheap_cfg) {
      fprintf(stderr, "anytime sweep: the path %s/only-%s.yaml is too long\n", sw->tmpdir,
              cheap->name);
      return -1;
    }
    if (sweep_write_variant_config(&sw->cfg, (int)(sw->mc - sw->cfg.models), sw->cheap_v, false,
                                   sw->tmpdir, sw->cfg_path, sw->cheap_cfg) != 0) {
      fprintf(stderr, "anytime sweep: cannot write %s\n", sw->cheap_cfg);
      return -1;
    }
  }
  if (sw->cheap_capacity > 0) {
    if (!sw->cheap_how[0]) snprintf(sw->cheap_how, sizeof sw->cheap_how, "given");
  } else if (same) {
    sw->cheap_capacity = sw->capacity;
    sw->cheap_s_busy = sw->s_busy;
    snprintf(sw->cheap_how, sizeof sw->cheap_how, "the most accurate variant is also the cheapest");
  } else {
    if (sweep_measure_capacity(sw, sw->cheap_cfg, &sw->cheap_capacity, &sw->cheap_s_busy,
                               &sw->cheap_lg_cores) != 0)
      return -1;
    sw->cheap_measured = true;
    snprintf(sw->cheap_how, sizeof sw->cheap_how,
             "measured the same way on a server with only "
             "that variant");
  }
  fprintf(stderr, "sweep: cheapest frontier variant %s: capacity %.0f req/s (%s)\n", cheap->name,
          sw->cheap_capacity, sw->cheap_how);
  return 0;
}

/* The oracle of point p (after run_point): min(rate, the cheapest variant's
 * capacity) with the capacity measured beside the point when it was, else
 * the repeat's; and the same with that capacity scaled by the CPU the load
 * generator left to the server, (ncpu - its cores during the point) /
 * (ncpu - its cores while the capacity was measured) — NaN when the
 * capacity was not measured through the server. */
void sweep_set_oracle(const sweep *sw, pt *p) {
  bool beside = p->cheap_cap > 0;
  double cap = beside ? p->cheap_cap : sw->cheap_capacity;
  double cores = beside ? p->lg_cores_cap : sw->cheap_lg_cores;
  p->oracle = fmin(p->rate, cap);
  double n = sw->ncpu;
  p->oracle_host = cores >= 0 && cores < n && p->lg_cores >= 0 && p->lg_cores < n
                       ? fmin(p->rate, cap * (n - p->lg_cores) / (n - cores))
                       : NAN;
}

/* The cheapest variant's capacity beside a point: one ADJ_WINDOW_S window
 * on the capacity server (sw->cap_port). Adds to *cap and *cores; false
 * when it could not be measured. */
bool sweep_beside(const sweep *sw, int seed, double *cap, double *cores) {
  double rps, run_s, c;
  if (sw->cap_pid <= 0 || saturated_window(sw, sw->cap_port, ADJ_WINDOW_S, seed, &rps, &run_s, &c))
    return false;
  *cap += rps, *cores += c;
  return true;
}
