/* src/tools/sweep_run.c — the sweep's run loop: getting ready (the texts,
 * the temporary directory, the host's speed, both capacities), then for
 * every repeat, policy (taking turns going first), kind of client and load
 * one point — the load generator driven in-process against that policy's
 * server, the host readings and the oracle beside it — logged to stderr
 * and written to the CSV as it is measured. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/sweep_internal.h"

/* Drive the server on `port` with clients `cm` at ρ = rho; fill *p. */
static int run_point(sweep *sw, int port, int cm, double rho, int seed, pt *p) {
  double rate = rho * sw->capacity;
  lg_config c = sweep_lg_cfg(port, sw->deadline, seed, 5.0);
  lg_result res;
  char err[256];
  int rc;
  p->rate = rate;
  p->n_clients = NAN;
  double c0 = sweep_self_cpu_s(), t0 = sweep_now_s();
  if (cm == CM_POISSON) {
    double *sched = NULL;
    size_t n = 0;
    if (lg_schedule(c.seed, rate, sw->duration, 50u * 1000 * 1000, &sched, &n) != 0) return -1;
    rc = lg_run(&c, sched, n, sw->duration, &sw->data, &res, err, sizeof err);
    free(sched);
  } else {
    /* N = ρ·C·Z clients thinking Z on average offer ρ·C requests per
     * second while answers are instant; each resends a 429 at once */
    double nc = round(rate * sw->think_ms / 1e3);
    lg_closed cl = {.clients = nc < 1 ? 1 : (size_t)nc,
                    .think_s = sw->think_ms / 1e3,
                    .retry = LG_RETRY_NOW,
                    .duration_s = sw->duration};
    p->n_clients = (double)cl.clients;
    rc = lg_run_closed(&c, &cl, &sw->data, &res, err, sizeof err);
  }
  p->lg_cores = (sweep_self_cpu_s() - c0) / (sweep_now_s() - t0);
  if (rc != 0) {
    fprintf(stderr, "sweep: %s\n", err);
    return -1;
  }
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, sw->duration, sw->deadline / 1e3, c.late_s, &s);
  double cost = 0, top = 0;
  p->mix[0] = '\0';
  for (int v = 0; v < res.n_variants; v++) {
    double n = (double)s.variant_count[v], cv = 1;
    for (int k = 0; k < sw->mc->n_variants; k++)
      if (!strcmp(sw->mc->variants[k].name, res.variants[v])) {
        cv = sw->mc->variants[k].cost > 0 ? sw->mc->variants[k].cost : 1;
        if (sw->mc->variants[k].accuracy >= sw->best_acc) top += n;
      }
    cost += n * cv;
    size_t o = strlen(p->mix);
    snprintf(p->mix + o, sizeof p->mix - o, "%s%s=%.0f", o ? ";" : "", res.variants[v], n);
  }
  lg_result_free(&res);
  double ans = (double)s.answered;
  p->sent = (double)s.sent, p->answered = ans, p->rejected = (double)s.rejected;
  p->errors = (double)s.errors, p->good = s.goodput_rps, p->att = s.attainment;
  p->adm = s.admitted_share, p->accy = s.accuracy, p->p50 = s.p50_s * 1e3;
  p->p95 = s.p95_s * 1e3, p->p99 = s.p99_s * 1e3;
  p->cost_rel = ans > 0 ? cost / (ans * sw->acc_cost) : NAN;
  p->top = ans > 0 ? top / ans : NAN;
  p->run_p50 = s.inference_p50_s * 1e3, p->offered = s.offered_rps;
  p->retries = (double)s.retries, p->logical = (double)s.logical;
  p->logical_ok = (double)s.logical_ok;
  p->ok = true;
  return 0;
}

/* One point with its host readings, logged and written to the CSV. */
static void point(sweep *sw, FILE *csv, int port, int r, int pi, int cm, int k) {
  const char *pol = sweep_policy_names[sw->pol[pi]];
  pt *p = &sw->pts[pi][cm][k][r];
  double rho = sw->rhos[k];
  fprintf(stderr, "sweep: repeat %d/%d %-13s %-12s rho %.2f (%.0f req/s) ...", r + 1, sw->repeats,
          pol, sweep_client_names[cm], rho, rho * sw->capacity);
  double probe = sweep_host_probe_ms();
  sw->probes[sw->n_probe++] = probe;
  unsigned long long t0 = 0, st0 = 0, t1 = 0, st1 = 0;
  int have_ticks = sweep_cpu_ticks(&t0, &st0) == 0;
  /* near and past the edge the oracle is the cheapest variant's capacity:
   * measured just before and just after the point, the mean of the two
   * (the host's speed moves 1.4x between measurements minutes apart) */
  double cap = 0, cores = 0;
  int seed = sw->seed + r * 100 + k + cm * 1000;
  bool adj = rho >= sw->adj_from && sweep_beside(sw, seed + 7, &cap, &cores);
  int rc = run_point(sw, port, cm, rho, seed, p);
  adj = adj && rc == 0 && sweep_beside(sw, seed + 11, &cap, &cores);
  p->cheap_cap = adj ? cap / 2 : NAN;
  p->lg_cores_cap = adj ? cores / 2 : NAN;
  if (rc == 0) sweep_set_oracle(sw, p);
  have_ticks = have_ticks && sweep_cpu_ticks(&t1, &st1) == 0 && t1 > t0;
  p->steal = have_ticks ? 100.0 * (double)(st1 - st0) / (double)(t1 - t0) : NAN;
  p->probe = probe;
  if (rc != 0) {
    sw->failures++;
    fprintf(stderr, " failed\n");
    return;
  }
  sweep_csv_row(csv, sw, r, pol, cm, rho, p);
  fprintf(stderr,
          " goodput %.0f/s (oracle %.0f, %.0f for the host share; load generator %.2f "
          "cores), attainment %.3f, p99 %.2f ms, %s, steal %.1f%%, probe %.2f ms\n",
          p->good, p->oracle, p->oracle_host, p->lg_cores, p->att, p->p99, p->mix, p->steal, probe);
  if (p->steal > 2)
    fprintf(stderr,
            "sweep: WARNING: the hypervisor took %.1f%% of this VM's CPU during that "
            "point: another tenant was busy, and the point measures that as much as anytime\n",
            p->steal);
  if (probe > 1.3 * sw->probe0)
    fprintf(stderr,
            "sweep: WARNING: the host probe took %.2f ms before that point against "
            "%.2f ms when the sweep started: the host itself was %.1fx slower, with or "
            "without steal\n",
            probe, sw->probe0, probe / sw->probe0);
  usleep(300000); /* let the server's queue and rate window settle */
}

/* Every repeat, policy, kind of client and load. Returns 0 or -1 (fatal). */
static int run_all(sweep *sw, FILE *csv) {
  for (int r = 0; r < sw->repeats; r++) {
    /* A measured C_cheap is measured again before every repeat, and that
     * repeat's points take their oracle from it: one measurement at the
     * start of a 35-minute sweep can be 1.5x what the host gives later. */
    if (sw->cheap_measured && r > 0 &&
        sweep_measure_capacity(sw, sw->cheap_cfg, &sw->cheap_capacity, &sw->cheap_s_busy,
                               &sw->cheap_lg_cores) != 0)
      return -1;
    sw->cheap_caps[r] = sw->cheap_capacity;
    if (sw->cheap_measured)
      fprintf(stderr,
              "sweep: repeat %d/%d: cheapest variant's capacity %.0f req/s (the oracle's "
              "for this repeat below rho %g)\n",
              r + 1, sw->repeats, sw->cheap_capacity, sw->adj_from);
    /* the capacity server for the windows beside each point from adj_from on:
     * idle while a point runs, as the policy's server is during the windows */
    bool need = false;
    for (int k = 0; k < sw->n_rho; k++) need |= sw->rhos[k] >= sw->adj_from;
    /* measured through a server, not given: its own (cheap_measured) or, with
     * one frontier variant, C's */
    bool through = sw->cheap_measured || (sw->acc_v == sw->cheap_v && sw->measured);
    sw->cap_pid =
        need && through ? sweep_start_server(sw, sw->cheap_cfg, "none", &sw->cap_port) : 0;
    if (sw->cap_pid < 0) {
      fprintf(stderr,
              "sweep: WARNING: the capacity server did not start (log: %s); the oracle "
              "uses the repeat's capacity\n",
              sw->logf);
      sw->cap_pid = 0;
    }
    /* The policies take turns going first: repeat r starts with policy r.
     * In a fixed order a drift of the host's speed within a repeat would
     * land on the same policy every time and read as a difference between
     * policies. */
    for (int step = 0; step < sw->n_pol; step++) {
      int pi = (step + r) % sw->n_pol;
      const char *pol = sweep_policy_names[sw->pol[pi]];
      int port;
      pid_t pid = sweep_start_server(sw, sw->cfg_path, pol, &port);
      if (pid < 0) {
        /* e.g. a build whose serve does not know --policy limit yet: the
         * other policies still run */
        fprintf(stderr,
                "sweep: WARNING: the server did not start with --policy %s (log: %s); "
                "that policy's points are missing\n",
                pol, sw->logf);
        sw->failures++;
        continue;
      }
      for (int ci = 0; ci < sw->n_cm; ci++) {
        if (ci > 0) sleep(1); /* the planner's rate window forgets the last load */
        for (int k = 0; k < sw->n_rho; k++) point(sw, csv, port, r, pi, sw->cms[ci], k);
      }
      int rc = sweep_stop_server(pid);
      if (rc != 0)
        fprintf(stderr, "sweep: WARNING: server exited %d after SIGTERM\n", rc), sw->failures++;
    }
    if (sw->cap_pid > 0) sweep_stop_server(sw->cap_pid), sw->cap_pid = 0;
  }
  return 0;
}

int sweep_prepare(sweep *sw) {
  char err[512] = "", def[4096];
  const char *dp = sw->data_path ? sw->data_path : lg_default_data_path(def, sizeof def);
  if (lg_data_load(dp, &sw->data, err, sizeof err) != 0)
    return fprintf(stderr, "anytime sweep: %s\n", err), -1;
  sw->have_data = true;
  if (sweep_make_tmpdir(sw) != 0)
    return fprintf(stderr, "anytime sweep: mkdtemp: %s\n", strerror(errno)), -1;
  snprintf(sw->portfile, sizeof sw->portfile, "%s/port", sw->tmpdir);
  snprintf(sw->logf, sizeof sw->logf, "%s/server.log", sw->tmpdir);
  snprintf(sw->dls, sizeof sw->dls, "%g", sw->deadline);
  signal(SIGPIPE, SIG_IGN);
  sw->probe0 = sweep_host_probe_ms(); /* the host's speed as the rates are set */
  fprintf(stderr, "sweep: host probe %.2f ms\n", sw->probe0);
  return sweep_find_capacities(sw);
}

int sweep_run(sweep *sw) {
  mkdir("results", 0755);
  FILE *csv = fopen(sw->out_csv, "w");
  if (!csv) return fprintf(stderr, "anytime sweep: cannot write %s\n", sw->out_csv), -1;
  sweep_csv_header(csv, false);
  if (run_all(sw, csv) != 0) { /* a capacity that cannot be measured again ends it early */
    fprintf(stderr, "sweep: stopped early: the cheapest variant's capacity could not be "
                    "measured again (see above); the rows so far are written\n");
    sw->failures++; /* the command exits non-zero, as for any other failure */
  }
  fclose(csv);
  return 0;
}
