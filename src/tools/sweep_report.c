/* src/tools/sweep_report.c — what a sweep's points add up to: the markdown
 * summary (how C and the oracle were found, then per kind of client one
 * table of medians across the repeats with their range, goodput against
 * the oracle and the ceiling, and adaptive's ratios) and the gnuplot
 * figure (goodput with the oracle, attainment, most-accurate share, one row
 * of panels per kind of client), from the points measured or read back by
 * --from-csv. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/profile.h"
#include "tools/sweep_internal.h"

/* Median of the first MAX_POINTS of v[0..n) that are not NaN (NaN if
 * none). Reentrant: the copy it sorts is its own (12.8 KB of stack). */
double sweep_med(const double *v, int n) {
  double t[MAX_POINTS];
  int k = 0;
  for (int i = 0; i < n && k < MAX_POINTS; i++)
    if (!isnan(v[i])) t[k++] = v[i];
  if (k == 0) return NAN;
  return at_profile_median(t, (size_t)k);
}
void sweep_minmax(const double *v, int n, double *lo, double *hi) {
  *lo = *hi = NAN;
  for (int i = 0; i < n; i++) {
    if (isnan(v[i])) continue;
    if (isnan(*lo) || v[i] < *lo) *lo = v[i];
    if (isnan(*hi) || v[i] > *hi) *hi = v[i];
  }
}

/* The figure `f` of every repeat of one point (NaN where it failed). */
static void across(const sweep *sw, int pi, int cm, int k, size_t off, double *v) {
  for (int r = 0; r < sw->repeats; r++) {
    const pt *p = &sw->pts[pi][cm][k][r];
    v[r] = p->ok ? *(const double *)((const char *)p + off) : NAN;
  }
}
#define ACROSS(sw, pi, cm, k, field, v) across(sw, pi, cm, k, offsetof(pt, field), v)

/* The median over the repeats of goodput / the oracle at `off` (oracle or
 * oracle_host), each repeat against its own: the oracle beside a point
 * moves with the host, so a ratio of medians would pair a fast repeat's
 * goodput with a slow one's capacity. NaN where none. */
static double over_oracle(const sweep *sw, int pi, int cm, int k, size_t off) {
  double g[MAX_REP], o[MAX_REP], q[MAX_REP] = {0}; /* = {0}: -O3 cannot see r < repeats fill it */
  ACROSS(sw, pi, cm, k, good, g);
  across(sw, pi, cm, k, off, o);
  for (int r = 0; r < sw->repeats; r++) q[r] = o[r] > 0 ? g[r] / o[r] : NAN;
  return sweep_med(q, sw->repeats);
}

/* Index of policy `name` in this sweep, or -1. */
static int pol_index(const sweep *sw, const char *name) {
  for (int i = 0; i < sw->n_pol; i++)
    if (!strcmp(sweep_policy_names[sw->pol[i]], name)) return i;
  return -1;
}

/* The measured ceiling at a point: the better median goodput of the two
 * single-variant servers, accurate-only (the most accurate variant) and
 * cheap-only (the cheapest frontier variant), each under the same admission
 * rule, with the same clients, at the same load, in the same run. What a
 * fixed choice among the profiled variants gave at that load on this host,
 * the load generator's share of its CPU included; the oracle above assumes
 * capacity measured with a handful of back-to-back clients instead. NaN
 * if neither policy ran. */
static double ceiling(const sweep *sw, int cm, int k) {
  double v[MAX_REP], best = NAN;
  const char *pols[2] = {"accurate-only", "cheap-only"};
  for (int i = 0; i < 2; i++) {
    int pi = pol_index(sw, pols[i]);
    if (pi < 0) continue;
    ACROSS(sw, pi, cm, k, good, v);
    double g = sweep_med(v, sw->repeats);
    if (!isnan(g) && (isnan(best) || g > best)) best = g;
  }
  return best;
}

static void summary_intro(const sweep *sw, FILE *md) {
  const char *cheap = sw->mc->variants[sw->cheap_v].name;
  if (sw->measured)
    fprintf(md,
            "Capacity C = %.0f req/s: what the server answered with the most accurate variant "
            "and every worker busy (no admission control, %d connections back to back; the best "
            "of %d windows of %g s), measured through the server when the sweep started; its "
            "median Run time "
            "meanwhile was s′ = %.3f ms (c/s′ = %.0f req/s; the queueing model's c/s(1) "
            "from the profile: %.0f req/s). ",
            sw->capacity, 2 * sw->cfg.workers, CAP_WINDOWS, CAP_WINDOW_S, sw->s_busy * 1e3,
            sw->cfg.workers / sw->s_busy,
            sweep_s1(&sw->mc->variants[sw->acc_v]) > 0
                ? sw->cfg.workers / sweep_s1(&sw->mc->variants[sw->acc_v])
                : NAN);
  else
    fprintf(md, "Capacity C of the most accurate variant (%s): %.0f req/s. ",
            sw->from_csv                ? "as the rows read recorded it"
            : sw->capacity_from_profile ? "the queueing model's c/s(1) from the profile"
                                        : "given",
            sw->capacity);
  if (sw->cheap_measured) {
    fprintf(md, "The cheapest frontier variant (%s), %s, before each repeat:", cheap,
            sw->cheap_how);
    for (int r = 0; r < sw->repeats; r++) fprintf(md, "%s %.0f", r ? "," : "", sw->cheap_caps[r]);
    fprintf(md,
            " req/s. Oracle = min(offered rate, the cheapest variant's capacity): from "
            "ρ = %g on, that capacity is measured beside each point, on a server with only "
            "that variant kept up through the repeat (one %g s window just before the point "
            "and one just after, their mean), below it the repeat's; the table shows the "
            "oracle's median over the repeats",
            sw->adj_from, ADJ_WINDOW_S);
  } else {
    fprintf(md,
            "The cheapest frontier variant (%s): %.0f req/s, %s. Oracle = min(offered "
            "rate, that capacity%s)",
            cheap, sw->cheap_capacity, sw->cheap_how,
            sw->measured && !sw->from_csv ? ", measured beside each point from ρ = --beside-from on"
                                          : "");
  }
  fprintf(md,
          ": the goodput a planner that knew everything could reach. "
          "Deadline %g ms; planner rate basis %s; %d repeat%s of %g s per point.\n\n",
          sw->deadline, sw->basis, sw->repeats, sw->repeats > 1 ? "s" : "", sw->duration);
  fprintf(md,
          "Policies: adaptive and accurate-only (the planner), none (no admission control: "
          "everything to the most accurate variant), limit (the most accurate variant while "
          "fewer than %d requests are in flight, else 429, like TEI's "
          "max_concurrent_requests), cheap-only (the same planner on a server holding only "
          "the cheapest frontier variant).\n\n"
          "Ceiling = the better median goodput of accurate-only and cheap-only at the same "
          "point: what a fixed choice among the profiled variants answered at that load "
          "on this host, with the load generator taking its share of the same two cores. "
          "The oracle takes the cheapest variant's capacity from %d clients sending back "
          "to back, which costs the load generator little; at thousands of open-loop "
          "requests per second it costs more, and no policy reaches that oracle (see "
          "results/planner_history.md, \"Where adaptive falls short\"). Oracle (host share) scales "
          "that capacity by the CPU the load generator, which runs on the same %d cores, "
          "left to the server: × (%d − its cores during the point) / (%d − its cores "
          "while the capacity was measured), both read from its own getrusage.\n\n",
          sw->inflight_limit, 2 * sw->cfg.workers, sw->ncpu, sw->ncpu, sw->ncpu);
  if (sw->n_probe > 0) {
    double plo, phi;
    sweep_minmax(sw->probes, sw->n_probe, &plo, &phi);
    fprintf(md,
            "Host probe (a fixed piece of arithmetic timed before each point; lower is "
            "faster): %.2f ms %s; median %.2f ms, range %.2f–%.2f ms "
            "over the %d points.\n\n",
            sw->probe0, sw->from_csv ? "before the first point" : "as the sweep started",
            sweep_med(sw->probes, sw->n_probe), plo, phi, sw->n_probe);
  }
}

static void summary_table(const sweep *sw, FILE *md, int cm) {
  if (cm == CM_POISSON)
    fprintf(md,
            "**Open-loop Poisson clients** (offered rate ρ·C, sent on schedule whatever "
            "the server answers):\n\n");
  else
    fprintf(md,
            "**Closed-loop clients that resend a 429 at once** (N = ρ·C·Z clients, "
            "mean think time Z = %g ms, one connection each; goodput counts every attempt "
            "answered within the deadline from its own send; the oracle uses ρ·C):\n\n",
            sw->think_ms);
  fprintf(md,
          "| ρ | policy | goodput (req/s) | oracle (req/s) | goodput / oracle | ceiling "
          "(req/s) | goodput / ceiling | attainment | admitted share | p95 / p99 admitted "
          "(ms) | accuracy | cost vs accurate-only | most-accurate share | oracle, host "
          "share (req/s) | goodput / oracle (host share) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double v[MAX_REP], o[MAX_REP];
  for (int k = 0; k < sw->n_rho; k++)
    for (int pi = 0; pi < sw->n_pol; pi++) {
      double lo, hi, alo, ahi;
      ACROSS(sw, pi, cm, k, good, v);
      double g = sweep_med(v, sw->repeats);
      sweep_minmax(v, sw->repeats, &lo, &hi);
      ACROSS(sw, pi, cm, k, oracle, o);
      double orc = sweep_med(o, sw->repeats);
      double ceil_g = ceiling(sw, cm, k);
      fprintf(md, "| %.2f | %s | %.0f (%.0f–%.0f) | %.0f | %.2f | %.0f | %.2f |", sw->rhos[k],
              sweep_policy_names[sw->pol[pi]], g, lo, hi, orc,
              over_oracle(sw, pi, cm, k, offsetof(pt, oracle)), ceil_g,
              ceil_g > 0 ? g / ceil_g : NAN);
      ACROSS(sw, pi, cm, k, att, v);
      sweep_minmax(v, sw->repeats, &alo, &ahi);
      fprintf(md, " %.3f (%.3f–%.3f) |", sweep_med(v, sw->repeats), alo, ahi);
      ACROSS(sw, pi, cm, k, adm, v);
      fprintf(md, " %.3f |", sweep_med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, p95, v);
      ACROSS(sw, pi, cm, k, p99, o);
      fprintf(md, " %.2f / %.2f |", sweep_med(v, sw->repeats), sweep_med(o, sw->repeats));
      ACROSS(sw, pi, cm, k, accy, v);
      fprintf(md, " %.4f |", sweep_med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, cost_rel, v);
      fprintf(md, " %.2f |", sweep_med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, top, v);
      fprintf(md, " %.3f |", sweep_med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, oracle_host, o);
      fprintf(md, " %.0f | %.2f |\n", sweep_med(o, sw->repeats),
              over_oracle(sw, pi, cm, k, offsetof(pt, oracle_host)));
    }
  fprintf(md, "\n");
}

void sweep_write_summary(const sweep *sw) {
  FILE *md = fopen(sw->out_md, "w");
  if (!md) {
    fprintf(stderr, "sweep: WARNING: cannot write %s\n", sw->out_md);
    return;
  }
  summary_intro(sw, md);
  for (int ci = 0; ci < sw->n_cm; ci++) summary_table(sw, md, sw->cms[ci]);
  int ad = pol_index(sw, "adaptive"), ao = pol_index(sw, "accurate-only");
  double v[MAX_REP];
  for (int ci = 0; ad >= 0 && ao >= 0 && ci < sw->n_cm; ci++)
    for (int k = 0; k < sw->n_rho; k++) {
      ACROSS(sw, ao, sw->cms[ci], k, good, v);
      double g0 = sweep_med(v, sw->repeats);
      ACROSS(sw, ad, sw->cms[ci], k, good, v);
      double g1 = sweep_med(v, sw->repeats);
      double cg = ceiling(sw, sw->cms[ci], k);
      fprintf(md,
              "%s, ρ = %.2f: adaptive/accurate-only goodput = %.2fx; adaptive/oracle = "
              "%.2f; adaptive/oracle (host share) = %.2f; adaptive/ceiling = %.2f\n\n",
              sweep_client_names[sw->cms[ci]], sw->rhos[k], g0 > 0 ? g1 / g0 : INFINITY,
              over_oracle(sw, ad, sw->cms[ci], k, offsetof(pt, oracle)),
              over_oracle(sw, ad, sw->cms[ci], k, offsetof(pt, oracle_host)),
              cg > 0 ? g1 / cg : NAN);
    }
  fclose(md);
}

/* The cheapest variant's capacity as the figures use it: the median of the
 * measurements before each repeat, or the one given. */
static double cheap_cap(const sweep *sw) {
  return sw->cheap_measured ? sweep_med(sw->cheap_caps, sw->repeats) : sw->cheap_capacity;
}

/* The plot's data for one kind of client: ρ, oracle, ceiling, then per policy the
 * goodput (median, min, max), attainment (median, min, max) and the
 * most-accurate share, and last the oracle for the host share (-1: none). */
static int write_dat(const sweep *sw, int cm, const char *path) {
  FILE *dat = fopen(path, "w");
  if (!dat) return -1;
  double v[MAX_REP];
  for (int k = 0; k < sw->n_rho; k++) {
    ACROSS(sw, 0, cm, k, oracle, v);
    double orc = sweep_med(v, sw->repeats);
    double cg = ceiling(sw, cm, k);
    fprintf(dat, "%.2f %.3f %.3f", sw->rhos[k],
            isnan(orc) ? fmin(sw->rhos[k] * sw->capacity, cheap_cap(sw)) : orc,
            isnan(cg) ? -1.0 : cg);
    for (int pi = 0; pi < sw->n_pol; pi++) {
      double lo, hi;
      ACROSS(sw, pi, cm, k, good, v);
      sweep_minmax(v, sw->repeats, &lo, &hi);
      fprintf(dat, " %.3f %.3f %.3f", sweep_med(v, sw->repeats), lo, hi);
      ACROSS(sw, pi, cm, k, att, v);
      sweep_minmax(v, sw->repeats, &lo, &hi);
      fprintf(dat, " %.4f %.4f %.4f", sweep_med(v, sw->repeats), lo, hi);
      ACROSS(sw, pi, cm, k, top, v);
      fprintf(dat, " %.4f", sweep_med(v, sw->repeats));
    }
    ACROSS(sw, 0, cm, k, oracle_host, v);
    double oh = sweep_med(v, sw->repeats);
    fprintf(dat, " %.3f\n", isnan(oh) ? -1.0 : oh);
  }
  return fclose(dat);
}

/* One row of panels (goodput with the oracle, attainment, most-accurate
 * share) per kind of client. */
bool sweep_write_plot(const sweep *sw) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr,
            "sweep: WARNING: gnuplot is not installed: %s NOT written (apt-get install "
            "gnuplot-nox); the CSV and the summary are complete\n",
            sw->plot);
    return false;
  }
  char gp[PATH_MAX], dat[MAX_CM][PATH_MAX];
  snprintf(gp, sizeof gp, "%s/plot.gp", sw->tmpdir);
  FILE *g = fopen(gp, "w");
  if (!g) return false;
  fprintf(g,
          "set terminal pngcairo size 1500,%d font 'sans,10'\nset output '%s'\n"
          "set multiplot layout %d,3 title 'anytime load sweep: %d repeat(s), deadline %g ms, "
          "C = %.0f req/s, cheapest variant %.0f req/s (median, bars = range)'\n"
          "set xlabel 'offered load {/Symbol r} (x C)'\nset key top left\nset grid\n",
          420 * sw->n_cm, sw->plot, sw->n_cm, sw->repeats, sw->deadline, sw->capacity,
          cheap_cap(sw));
  for (int ci = 0; ci < sw->n_cm; ci++) {
    int cm = sw->cms[ci];
    snprintf(dat[ci], sizeof dat[ci], "%s/%s.dat", sw->tmpdir, sweep_client_names[cm]);
    write_dat(sw, cm, dat[ci]);
    fprintf(g,
            "set key top left\nset autoscale y\nset ylabel '%s: goodput (req/s)'\nplot '%s' u 1:2 "
            "w lines lw 2 "
            "dt 2 lc 'black' t 'oracle', '' u 1:($3 > 0 ? $3 : NaN) w lines lw 2 dt 3 "
            "lc 'gray40' t 'ceiling (best single variant, measured)', '' u 1:($%d > 0 ? $%d : "
            "NaN) w lines lw 1 dt 4 lc 'black' t 'oracle, host share'",
            sweep_client_names[cm], dat[ci], 4 + 7 * sw->n_pol, 4 + 7 * sw->n_pol);
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, ", '' u 1:%d:%d:%d w yerrorlines lt %d t '%s'", 4 + 7 * pi, 5 + 7 * pi, 6 + 7 * pi,
              1 + sw->pol[pi], sweep_policy_names[sw->pol[pi]]);
    fprintf(g,
            "\nset key bottom left\nset ylabel 'deadline attainment'\nset yrange [0:1.05]\n"
            "plot ");
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, "%s'%s' u 1:%d:%d:%d w yerrorlines lt %d t '%s'", pi ? ", " : "", dat[ci],
              7 + 7 * pi, 8 + 7 * pi, 9 + 7 * pi, 1 + sw->pol[pi], sweep_policy_names[sw->pol[pi]]);
    fprintf(g, "\nset ylabel 'most-accurate share of answers'\nplot ");
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, "%s'%s' u 1:%d w linespoints lt %d t '%s'", pi ? ", " : "", dat[ci], 10 + 7 * pi,
              1 + sw->pol[pi], sweep_policy_names[sw->pol[pi]]);
    fprintf(g, "\n");
  }
  fprintf(g, "unset multiplot\n");
  fclose(g);
  char cmd[PATH_MAX * 3];
  snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && gnuplot '%s'", sw->plot, gp);
  if (system(cmd) == 0) return true;
  fprintf(stderr, "sweep: WARNING: gnuplot failed; %s not written\n", sw->plot);
  return false;
}
