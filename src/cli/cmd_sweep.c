/* src/cli/cmd_sweep.c — `anytime sweep`: the load sweep that shows what the
 * planner buys, and what it costs against a perfect one. This file reads
 * the command line and reports; the sweep itself — starting `anytime
 * serve` for each repeat and policy, measuring the capacities and the
 * oracle, driving each load with the in-process load generator, and
 * writing results/load_sweep.csv, the markdown summary and
 * docs/img/load_sweep.png — is the tools library's (tools/sweep.h, whose
 * opening comment tells the method). --write-cheap-config writes the
 * configuration the sweep's cheap-only policy serves, for the bench
 * scripts (bench/lib.sh). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anytime/server.h"
#include "cli/cli.h"
#include "tools/sweep.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime sweep [--config FILE] [--rhos 0.4,0.8,1,1.3,2,3,5] [--repeats N]\n"
          "                     [--duration S] [--deadline-ms MS] [--capacity RPS|profile]\n"
          "                     [--cheapest-capacity RPS] [--policies LIST]\n"
          "                     [--inflight-limit N] [--clients-model LIST] [--think-ms Z]\n"
          "                     [--beside-from RHO]\n"
          "                     [--data FILE.csv] [--out-csv FILE] [--out-md FILE]\n"
          "                     [--plot FILE.png] [--seed N] [--rate-basis admitted|offered]\n"
          "                     [--quick] [--capacities-only] [--server-cpus LIST]\n"
          "       anytime sweep --from-csv FILE [--config FILE] [--deadline-ms MS]\n"
          "                     [--out-md FILE] [--plot FILE.png]\n"
          "       anytime sweep --write-cheap-config OUT.yaml [--config FILE]\n\n"
          "Starts `anytime serve --config FILE` (default configs/serving.yaml) once per\n"
          "repeat and policy (--policies, default adaptive,accurate-only,none,limit,\n"
          "cheap-only; limit with --inflight-limit, default 512; cheap-only = the planner on\n"
          "a server holding only the cheapest frontier variant) and drives it in-process at each "
          "rho x C\n"
          "for --duration seconds (default 8) with each kind of client in\n"
          "--clients-model (default poisson,closed-retry): poisson = open-loop Poisson\n"
          "arrivals; closed-retry = N = rho x C x Z closed-loop clients thinking Z\n"
          "(--think-ms, default 50) on average and resending every 429 at once.\n"
          "Repeat r starts with the r-th policy (they take turns going first), so a drift\n"
          "of the host's speed within a repeat does not always land on the same policy.\n"
          "C is measured when the sweep starts: the requests per second a server\n"
          "without admission control (--policy none, the most accurate variant) answers\n"
          "while 2 x workers clients send back to back: the best of three 1.5 s windows\n"
          "(the host at its speed; it halves for seconds at a time). The cheapest frontier\n"
          "variant's capacity is measured the same way on a server with only that\n"
          "variant (a temporary configuration); the ORACLE at a point is\n"
          "min(rho x C, that capacity); the CEILING is the better goodput of accurate-only\n"
          "and cheap-only at the same point (what a fixed variant gave under the same\n"
          "load, load generator included). C is measured once, so every repeat offers\n"
          "the same rates; the cheapest variant's capacity is measured again before each\n"
          "repeat (this host's speed drifts by 20%% and more within minutes), and from\n"
          "rho = --beside-from (default 1) on also beside every point: a server with only\n"
          "that variant stays up through the repeat, and one 1 s window just before and\n"
          "one just after the point give the oracle's capacity there (their mean). The\n"
          "summary also reads goodput against the oracle scaled to the CPU the load\n"
          "generator (in this process, on the same cores) left to the server during the\n"
          "point, against what it left while the capacity was measured.\n"
          "--server-cpus LIST starts every server under `taskset -c LIST` (e.g. 0,1):\n"
          "run the sweep itself under taskset on other CPUs to keep the load generator\n"
          "off the server's cores, on a machine that has more than two.\n"
          "--capacity RPS fixes C (--cheapest-capacity RPS the other); --capacity\n"
          "profile uses the queueing model's c/s(1) from the configuration for both.\n\n"
          "--repeats (default 3) repeats the whole sweep. --quick: 1 repeat, 3 s per point,\n"
          "rho 0.4,1,3 (explicit options still win). --capacities-only: measure (or take)\n"
          "both capacities, print them as one JSON line on stdout, and stop. Writes "
          "results/load_sweep.csv (one\n"
          "row per repeat, policy, clients and rho, with the server's median Run time, the\n"
          "share of CPU the hypervisor gave to other tenants meanwhile, steal_pct, above\n"
          "2%% the sweep warns; probe_ms, a fixed piece of arithmetic timed just before\n"
          "the point; the sweep warns when it is 1.3x its value at the start; and the\n"
          "oracle), results/load_sweep.md (medians and ranges; scripts/readme-results.sh\n"
          "copies it into README.md) and docs/img/load_sweep.png (gnuplot).\n\n"
          "--from-csv FILE runs nothing: it reads the rows an earlier sweep wrote and\n"
          "writes the summary and the plot from them again (the configuration still names\n"
          "the variants; the deadline is --deadline-ms or the configuration's, as when\n"
          "the rows were measured; the duration per point is read off the rows).\n\n"
          "--write-cheap-config OUT.yaml runs nothing: it writes OUT.yaml, the\n"
          "configuration with its classify model holding only its cheapest frontier\n"
          "variant (what cheap-only serves; the other models and the generation lane as\n"
          "they are, model paths absolute), and stops. bench/lib.sh's bench_cheap_config\n"
          "uses it.\n");
}

/* A comma-separated list of names from `names` (n of them) into idx. */
static int parse_names(const char *v, const char *const *names, int n, int *idx, int *count) {
  *count = 0;
  for (const char *p = v; p && *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    int found = -1;
    for (int i = 0; i < n; i++)
      if (strlen(names[i]) == l && !strncmp(p, names[i], l)) found = i;
    if (found < 0 || *count == n) return -1;
    for (int i = 0; i < *count; i++)
      if (idx[i] == found) return -1;
    idx[(*count)++] = found;
    p = e ? e + 1 : NULL;
  }
  return *count > 0 ? 0 : -1;
}

/* What the command line asks besides the sweep's parameters. */
typedef struct cli_sweep_opts {
  bool quick, capacities_only;
  const char *cheap_out; /* --write-cheap-config */
} cli_sweep_opts;

static int parse_args(int argc, char **argv, sweep_params *prm, cli_sweep_opts *o) {
  static const double def_rhos[] = {0.4, 0.8, 1.0, 1.3, 2, 3, 5}, quick_rhos[] = {0.4, 1.0, 3};
  bool set_rho = false, set_rep = false, set_dur = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick") || !strcmp(a, "--capacities-only")) {
      if (a[2] == 'q')
        o->quick = true;
      else
        o->capacities_only = true;
      continue;
    }
    if (!v) return fprintf(stderr, "anytime sweep: %s needs a value\n", a), AT_EXIT_USAGE;
    i++;
    if (!strcmp(a, "--config"))
      prm->cfg_path = v;
    else if (!strcmp(a, "--from-csv"))
      prm->from_csv = v;
    else if (!strcmp(a, "--write-cheap-config"))
      o->cheap_out = v;
    else if (!strcmp(a, "--out-csv"))
      prm->out_csv = v;
    else if (!strcmp(a, "--out-md"))
      prm->out_md = v;
    else if (!strcmp(a, "--plot"))
      prm->plot = v;
    else if (!strcmp(a, "--data"))
      prm->data_path = v;
    else if (!strcmp(a, "--rate-basis"))
      prm->basis = v;
    else if (!strcmp(a, "--repeats"))
      prm->repeats = atoi(v), set_rep = true;
    else if (!strcmp(a, "--seed"))
      prm->seed = atoi(v);
    else if (!strcmp(a, "--duration"))
      prm->duration = atof(v), set_dur = true;
    else if (!strcmp(a, "--deadline-ms"))
      prm->deadline = atof(v);
    else if (!strcmp(a, "--think-ms"))
      prm->think_ms = atof(v);
    else if (!strcmp(a, "--inflight-limit"))
      prm->inflight_limit = atoi(v);
    else if (!strcmp(a, "--server-cpus"))
      prm->server_cpus = v;
    else if (!strcmp(a, "--beside-from"))
      prm->adj_from = atof(v);
    else if (!strcmp(a, "--cheapest-capacity")) {
      if (!((prm->cheap_capacity = atof(v)) > 0))
        return fprintf(stderr,
                       "anytime sweep: --cheapest-capacity needs requests per second > 0\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--capacity")) {
      if (!strcmp(v, "profile"))
        prm->capacity_from_profile = 1;
      else if (!((prm->capacity = atof(v)) > 0))
        return fprintf(stderr,
                       "anytime sweep: --capacity needs requests per second > 0 or 'profile'\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--policies")) {
      if (parse_names(v, sweep_policy_names, SWEEP_MAX_POL, prm->pol, &prm->n_pol) != 0)
        return fprintf(stderr,
                       "anytime sweep: --policies is a list of adaptive, accurate-only, "
                       "none, limit, cheap-only\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--clients-model")) {
      if (parse_names(v, sweep_client_names, SWEEP_MAX_CM, prm->cms, &prm->n_cm) != 0)
        return fprintf(stderr,
                       "anytime sweep: --clients-model is a list of poisson, "
                       "closed-retry\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--rhos")) {
      prm->n_rho = 0;
      set_rho = true;
      for (const char *p = v; p && *p && prm->n_rho < SWEEP_MAX_RHO;
           p = strchr(p, ','), p = p ? p + 1 : NULL)
        prm->rhos[prm->n_rho++] = atof(p);
    } else {
      fprintf(stderr, "anytime sweep: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  const double *rh = o->quick ? quick_rhos : def_rhos;
  int nr = o->quick ? 3 : 7;
  if (!set_rho) memcpy(prm->rhos, rh, sizeof(double) * (size_t)nr), prm->n_rho = nr;
  if (!set_rep) prm->repeats = o->quick ? 1 : 3;
  if (!set_dur) prm->duration = o->quick ? 3 : 8;
  bool bad_rho = false;
  for (int k = 0; k < prm->n_rho; k++) bad_rho |= !(prm->rhos[k] > 0);
  if (prm->server_cpus && (!*prm->server_cpus ||
                           strspn(prm->server_cpus, "0123456789,-") != strlen(prm->server_cpus))) {
    fprintf(stderr,
            "anytime sweep: --server-cpus takes a CPU list as taskset -c does "
            "(e.g. 0,1 or 2-3), not '%s'\n",
            prm->server_cpus);
    return AT_EXIT_USAGE;
  }
  if (prm->repeats < 1 || prm->repeats > SWEEP_MAX_REP || !(prm->duration >= 1) || prm->n_rho < 1 ||
      bad_rho || !(prm->think_ms > 0) || prm->inflight_limit < 1) {
    fprintf(stderr,
            "anytime sweep: need 1 <= --repeats <= %d, --duration >= 1, rhos > 0, "
            "--think-ms > 0 and --inflight-limit >= 1\n",
            SWEEP_MAX_REP);
    return AT_EXIT_USAGE;
  }
  return AT_EXIT_OK;
}

/* --from-csv: the summary and the plot again from an earlier sweep's rows. */
static int summarise(sweep *sw, const sweep_params *p) {
  if (sweep_read_csv(sw) != 0) return AT_EXIT_FAIL;
  sweep_write_summary(sw);
  bool plotted = sweep_write_plot(sw);
  fprintf(stderr, "sweep: wrote %s%s%s\n", p->out_md, plotted ? ", " : "",
          plotted ? p->plot : " (no plot: see above)");
  return plotted ? AT_EXIT_OK : AT_EXIT_FAIL;
}

/* The sweep itself (or, with --capacities-only, its capacities). */
static int run(sweep *sw, const sweep_params *p, bool capacities_only) {
  if (sweep_prepare(sw) != 0) return AT_EXIT_FAIL;
  if (capacities_only) { /* for scripts (bench/overload.sh): one JSON line */
    sweep_capacities c;
    sweep_get_capacities(sw, &c);
    printf(
        "{\"accurate_variant\":\"%s\",\"capacity_rps\":%.1f,\"cheapest_variant\":\"%s\","
        "\"cheapest_capacity_rps\":%.1f,\"workers\":%d,\"deadline_ms\":%g}\n",
        c.accurate_variant, c.capacity_rps, c.cheapest_variant, c.cheapest_capacity_rps, c.workers,
        c.deadline_ms);
    return AT_EXIT_OK;
  }
  if (sweep_run(sw) != 0) return AT_EXIT_FAIL;
  sweep_write_summary(sw);
  bool plotted = sweep_write_plot(sw);
  int failures = sweep_failures(sw);
  fprintf(stderr, "sweep: wrote %s, %s%s%s%s\n", p->out_csv, p->out_md, plotted ? ", " : "",
          plotted ? p->plot : " (no plot: see above)",
          failures ? " (with failures: see above)" : "");
  return failures ? AT_EXIT_FAIL : AT_EXIT_OK;
}

int at_cli_sweep(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return usage(stdout), AT_EXIT_OK;
  sweep_params p;
  sweep_default_params(&p);
  cli_sweep_opts o = {0};
  int rc = parse_args(argc, argv, &p, &o);
  if (rc != AT_EXIT_OK) return rc;
  char self[PATH_MAX];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0)
    return fprintf(stderr, "anytime sweep: cannot find my own executable\n"), AT_EXIT_FAIL;
  self[sl] = '\0';
  at_server_config *cfg = malloc(sizeof *cfg); /* ~400 KB: not on the stack */
  if (!cfg) return fprintf(stderr, "anytime sweep: out of memory\n"), AT_EXIT_FAIL;
  *cfg = at_server_config_default();
  at_status st = at_server_config_load(p.cfg_path, cfg);
  if (st != AT_OK) return free(cfg), tools_report("sweep", st);
  sweep *sw = NULL;
  if (o.cheap_out)
    rc = sweep_write_cheap_config(cfg, p.cfg_path, o.cheap_out) == 0 ? AT_EXIT_OK : AT_EXIT_FAIL;
  else if (sweep_create(&p, self, cfg, &sw) != 0)
    rc = AT_EXIT_FAIL;
  free(cfg);
  if (!sw) return rc;
  rc = p.from_csv ? summarise(sw, &p) : run(sw, &p, o.capacities_only);
  sweep_destroy(sw);
  return rc;
}
