/* src/cli/cmd_sweep.c — `anytime sweep`: the load sweep that shows what the
 * planner buys. For each repeat and each policy (accurate-only, adaptive) it
 * starts `anytime serve` on the profiled configuration, drives it with
 * `anytime loadgen` (open-loop Poisson, held-out texts) at each load
 * ρ × capacity, and records one CSV row per (repeat, policy, ρ) — with the
 * median Run time the server reported (x-inference-time), which shows how
 * fast the host was during that point, the CPU time the hypervisor gave
 * to other tenants meanwhile (steal), and a fixed piece of arithmetic timed
 * just before the point (the host's own speed, which on this VM halves for
 * seconds at a time without any steal showing).
 * Capacity is measured, not derived: the requests per second the server
 * answers with its most accurate variant when saturated. By default the
 * sweep measures it when it starts, on a server without admission control
 * (--policy none): 2c connections send back to back for 2 s, so a request
 * is always waiting for each worker, and capacity is the answers per second
 * from the first send to the last answer. The queueing model's own c·μ =
 * c/s(1) overstates it on this 2-vCPU host (in one sweep: 1141 req/s from
 * the profile, 973 from the Run times during the measurement, 860
 * answered): Runs overlap, the HTTP threads and the load generator share the
 * same two cores, and a worker is idle while its answer goes out; with
 * c/s(1) as the yardstick, "ρ = 0.8" was already the real knee. The median Run time meanwhile (s′)
 * and c/s′ are printed beside it. The host's speed drifts by 20 % and more
 * within minutes, so capacity is measured once, and every repeat offers the
 * same rates. --capacity RPS fixes it; --capacity profile uses c/s(1) from
 * the configuration.
 * Then it writes results/load_sweep.csv, a markdown summary (medians across
 * repeats with their range) and docs/img/load_sweep.png with gnuplot. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "anytime/server.h"
#include "cli/cli.h"

#define MAX_RHO 16
#define MAX_REP 10

static char g_self[PATH_MAX];
static const char *g_basis = "offered";

static pid_t start_server(const char *cfg, const char *policy, const char *portfile,
                          const char *log, const char *deadline, int *port) {
  unlink(portfile);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    execl(g_self, g_self, "serve", "--config", cfg, "--policy", policy, "--port", "0",
          "--port-file", portfile, "--deadline-ms", deadline, "--rate-basis", g_basis, "--no-cache",
          (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1200; i++) { /* up to 60 s: start-up may time variants */
    FILE *pf = fopen(portfile, "r");
    if (pf) {
      int ok = fscanf(pf, "%d", port) == 1;
      fclose(pf);
      if (ok && *port > 0) return pid;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return -1;
    usleep(50000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static int stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Run loadgen and parse its JSON summary; `drain_s` is how long it waits
 * for answers (and, with a connection cap, keeps sending late) after the
 * schedule ends. */
static json_t *loadgen(int port, double rate, double duration, double deadline_ms, int seed,
                       double drain_s, const char *data, const char *extra) {
  char cmd[PATH_MAX * 2 + 768];
  snprintf(cmd, sizeof cmd,
           "'%s' loadgen --url http://127.0.0.1:%d/predict --rate %.3f --duration %.3f "
           "--deadline-ms %.3f --seed %d --drain-s %g --json%s%s%s %s",
           g_self, port, rate, duration, deadline_ms, seed, drain_s, data ? " --data '" : "",
           data ? data : "", data ? "'" : "", extra ? extra : "");
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = '\0';
  int rc = pclose(p);
  if (rc != 0) {
    fprintf(stderr, "sweep: loadgen failed (%d): %s\n", rc, buf);
    return NULL;
  }
  return json_loads(buf, 0, NULL);
}

/* The host's CPU time so far (all of /proc/stat's "cpu" line) and the part
 * of it the hypervisor gave to someone else (steal), in clock ticks. A VM's
 * steal time is the one reading inside the guest of how much a noisy
 * neighbour took; the sweep records it per point. Returns -1 if unreadable. */
static int cpu_ticks(unsigned long long *total, unsigned long long *steal) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[10] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 8) return -1;
  *total = 0;
  for (int i = 0; i < 8; i++) *total += v[i]; /* guest time is already in user */
  *steal = v[7];
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A fixed piece of arithmetic timed on this machine: how fast the host is
 * right now, independently of anytime. 96x96 float matrix products (36 KB
 * per matrix, in cache), as dense arithmetic as a Run's, repeated for about
 * 10 ms, the median of 5 timings. A neighbour on the same physical core
 * (a sibling hyperthread) slows this without any steal time showing in
 * /proc/stat; the sweep records it beside every point so that drift in the
 * host's speed is visible in the CSV. Milliseconds; lower is faster. */
enum { PROBE_N = 96, PROBE_REPS = 64 };
static double host_probe_ms(void) {
  static float a[PROBE_N * PROBE_N], b[PROBE_N * PROBE_N], c[PROBE_N * PROBE_N];
  for (int i = 0; i < PROBE_N * PROBE_N; i++)
    a[i] = (float)(i % 7) * 0.25f, b[i] = (float)(i % 5) * 0.5f;
  double t[5];
  volatile float sink = 0;
  for (int k = 0; k < 5; k++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < PROBE_REPS; r++) {
      for (int i = 0; i < PROBE_N; i++)
        for (int j = 0; j < PROBE_N; j++) {
          float acc = 0;
          for (int l = 0; l < PROBE_N; l++) acc += a[i * PROBE_N + l] * b[l * PROBE_N + j];
          c[i * PROBE_N + j] = acc;
        }
      sink += c[r];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t[k] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  }
  (void)sink;
  qsort(t, 5, sizeof *t, cmp_d);
  return t[2];
}

static double num(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Median of n values (n <= 2 * MAX_RHO * MAX_REP: per-point figures
 * across repeats, or the host probe across every point). */
static double med(const double *v, int n) {
  double t[2 * MAX_RHO * MAX_REP];
  memcpy(t, v, sizeof(double) * (size_t)n);
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
static void minmax(const double *v, int n, double *lo, double *hi) {
  *lo = *hi = v[0];
  for (int i = 1; i < n; i++) *lo = v[i] < *lo ? v[i] : *lo, *hi = v[i] > *hi ? v[i] : *hi;
}

/* Saturate a server without admission control: 2c connections send back
 * to back (no lateness limit), so each worker always has a request waiting.
 * Returns the answers per second (first send to last answer) and the
 * median Run time meanwhile, s′. 0 on success. */
static int measure_saturated(int port, int workers, int seed, const char *data, double *s_busy,
                            double *served_rps) {
  char extra[96];
  snprintf(extra, sizeof extra, "--connections %d --late-ms 1000000", 2 * workers);
  json_t *j = loadgen(port, 20000.0, 2.0, 10000, seed, 0.5, data, extra);
  if (!j) return -1;
  *s_busy = num(j, "inference_p50_ms") / 1e3;
  *served_rps = num(j, "answered_rps");
  double rejected = num(j, "rejected");
  json_decref(j);
  if (rejected > 0) {
    fprintf(stderr, "sweep: the server refused %.0f requests while capacity was measured\n",
            rejected);
    return -1;
  }
  return *s_busy > 0 && *served_rps > 0 ? 0 : -1;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime sweep [--config FILE] [--rhos 0.4,0.6,0.8,0.95,1.3] [--repeats N]\n"
          "                     [--duration S] [--deadline-ms MS] [--capacity RPS|profile]\n"
          "                     [--data FILE.csv] [--out-csv FILE] [--out-md FILE]\n"
          "                     [--plot FILE.png] [--seed N] [--rate-basis admitted|offered]\n\n"
          "Starts `anytime serve --config FILE` (default configs/serving.yaml) once per\n"
          "repeat and policy (accurate-only, adaptive) and drives it with open-loop Poisson\n"
          "load (`anytime loadgen`, held-out texts) at each rho x capacity for --duration\n"
          "seconds (default 8). Capacity is measured when the sweep starts: the\n"
          "requests per second a server without admission control (--policy none, the\n"
          "most accurate variant) answers while 2 x workers connections send back to\n"
          "back for 2 s. Measured once: this host's speed drifts by 20%% and more within\n"
          "minutes, and every repeat then offers the same rates. --capacity RPS fixes it;\n"
          "--capacity profile uses the queueing model's c/s(1) from the configuration\n"
          "(workers over the most accurate variant's profiled batch-1 service time),\n"
          "which this host does not reach: Runs overlap and share the cores with HTTP.\n\n"
          "--repeats (default 3) repeats the whole sweep. Writes results/load_sweep.csv\n"
          "(one row per repeat, policy and rho, with the server's median Run time and\n"
          "the share of CPU the hypervisor gave to other tenants meanwhile, steal_pct;\n"
          "above 2%% the sweep warns; and probe_ms, a fixed piece of arithmetic timed\n"
          "just before the point, which shows the host's own speed: a neighbour on the\n"
          "same physical core slows it without any steal; the sweep warns when it is\n"
          "1.3x its value at the start), results/load_sweep.md\n"
          "(medians and ranges) and docs/img/load_sweep.png (gnuplot).\n");
}

int at_cli_sweep(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return usage(stdout), AT_EXIT_OK;
  const char *cfg_path = "configs/serving.yaml", *out_csv = "results/load_sweep.csv";
  const char *out_md = "results/load_sweep.md", *plot = "docs/img/load_sweep.png", *data = NULL;
  double rhos[MAX_RHO] = {0.4, 0.6, 0.8, 0.95, 1.3}, duration = 8, deadline = -1, capacity = -1;
  int n_rho = 5, repeats = 3, seed = 1, capacity_from_profile = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return fprintf(stderr, "anytime sweep: %s needs a value\n", a), AT_EXIT_USAGE;
    if (!strcmp(a, "--config")) cfg_path = v;
    else if (!strcmp(a, "--out-csv")) out_csv = v;
    else if (!strcmp(a, "--out-md")) out_md = v;
    else if (!strcmp(a, "--plot")) plot = v;
    else if (!strcmp(a, "--data")) data = v;
    else if (!strcmp(a, "--rate-basis")) g_basis = v;
    else if (!strcmp(a, "--repeats")) repeats = atoi(v);
    else if (!strcmp(a, "--seed")) seed = atoi(v);
    else if (!strcmp(a, "--duration")) duration = atof(v);
    else if (!strcmp(a, "--deadline-ms")) deadline = atof(v);
    else if (!strcmp(a, "--capacity")) {
      if (!strcmp(v, "profile")) capacity_from_profile = 1;
      else if (!((capacity = atof(v)) > 0))
        return fprintf(stderr, "anytime sweep: --capacity needs requests per second > 0 or 'profile'\n"),
               AT_EXIT_USAGE;
    }
    else if (!strcmp(a, "--rhos")) {
      n_rho = 0;
      for (const char *p = v; p && *p && n_rho < MAX_RHO; p = strchr(p, ','), p = p ? p + 1 : NULL)
        rhos[n_rho++] = atof(p);
    } else {
      fprintf(stderr, "anytime sweep: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
    i++;
  }
  if (repeats < 1 || repeats > MAX_REP || !(duration >= 1) || n_rho < 1) {
    fprintf(stderr, "anytime sweep: need 1 <= --repeats <= %d, --duration >= 1 and at least one rho\n", MAX_REP);
    return AT_EXIT_USAGE;
  }
  ssize_t sl = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (sl <= 0) return fprintf(stderr, "anytime sweep: cannot find my own executable\n"), AT_EXIT_FAIL;
  g_self[sl] = '\0';
  at_server_config cfg = at_server_config_default();
  at_status st = at_server_config_load(cfg_path, &cfg);
  if (st != AT_OK) return cli_report("sweep", st);
  if (deadline <= 0) deadline = cfg.deadline_ms;
  int mi = -1;
  for (int m = 0; m < cfg.n_models && mi < 0; m++)
    if (!strcmp(cfg.models[m].task, "classify")) mi = m;
  if (mi < 0) return fprintf(stderr, "anytime sweep: %s has no classify model\n", cfg_path), AT_EXIT_FAIL;
  at_server_model_config *mc = &cfg.models[mi];
  double acc_cost = 0, best = -1;
  for (int v = 0; v < mc->n_variants; v++)
    if (mc->variants[v].accuracy > best) best = mc->variants[v].accuracy, acc_cost = mc->variants[v].cost > 0 ? mc->variants[v].cost : 1;
  char tmpdir[] = "/tmp/anytime-sweep-XXXXXX";
  if (!mkdtemp(tmpdir)) return fprintf(stderr, "anytime sweep: mkdtemp: %s\n", strerror(errno)), AT_EXIT_FAIL;
  char portfile[PATH_MAX], logf[PATH_MAX], dls[32];
  snprintf(portfile, sizeof portfile, "%s/port", tmpdir);
  snprintf(logf, sizeof logf, "%s/server.log", tmpdir);
  snprintf(dls, sizeof dls, "%g", deadline);
  signal(SIGPIPE, SIG_IGN);

  /* The queueing model's c·μ (REFERENCE.md): c workers at the most accurate
   * variant's profiled batch-1 rate; and its profiled Run time with the pool
   * busy, printed beside the measurement. */
  double s1_profile = 0, s1_busy_profile = 0;
  for (int v = 0; v < mc->n_variants; v++)
    if (mc->variants[v].accuracy >= best) {
      const at_server_variant_config *vc = &mc->variants[v];
      if (vc->n_points > 0 && vc->batch[0] == 1) s1_profile = vc->service_s[0];
      if (vc->n_busy_points > 0 && vc->busy_batch[0] == 1) s1_busy_profile = vc->busy_s[0];
    }
  if (capacity_from_profile) {
    if (!(s1_profile > 0))
      return fprintf(stderr, "anytime sweep: %s has no batch-1 service time for the most accurate "
                             "variant; run `anytime profile` or pass --capacity RPS\n", cfg_path), AT_EXIT_FAIL;
    capacity = cfg.workers / s1_profile;
    fprintf(stderr, "sweep: capacity c/s(1) = %d / %.4f ms (profiled) = %.0f req/s\n", cfg.workers,
            s1_profile * 1e3, capacity);
  }
  int measure_capacity = capacity <= 0;
  double s_busy = NAN, served_rps = NAN;
  double probe0 = host_probe_ms(); /* the host's speed as the rates are set */
  fprintf(stderr, "sweep: host probe %.2f ms\n", probe0);
  if (measure_capacity) {
    /* its own server without admission control (--policy none: everything
     * to the most accurate variant), so that saturating it measures what it
     * answers instead of provoking refusals, and leaves no planner state
     * behind */
    int port;
    pid_t pid = start_server(cfg_path, "none", portfile, logf, dls, &port);
    if (pid < 0) return fprintf(stderr, "anytime sweep: server did not start (log: %s)\n", logf), AT_EXIT_FAIL;
    int rc = measure_saturated(port, cfg.workers, seed + 99, data, &s_busy, &served_rps);
    stop_server(pid);
    if (rc != 0)
      return fprintf(stderr, "anytime sweep: could not measure capacity through the server "
                             "(log: %s); pass --capacity RPS or --capacity profile\n", logf),
             AT_EXIT_FAIL;
    capacity = served_rps;
    fprintf(stderr, "sweep: capacity %.0f req/s: what the server answered with every worker busy "
            "(measured now); its Run time meanwhile s' = %.4f ms, c/s' = %.0f req/s (profiled "
            "s'(1) %.4f ms, s(1) %.4f ms)\n", capacity, s_busy * 1e3, cfg.workers / s_busy,
            s1_busy_profile * 1e3, s1_profile * 1e3);
  }
  mkdir("results", 0755);
  FILE *csv = fopen(out_csv, "w");
  if (!csv) return fprintf(stderr, "anytime sweep: cannot write %s\n", out_csv), AT_EXIT_FAIL;
  fprintf(csv, "repeat,policy,rho,rate_rps,sent,answered,rejected,errors,goodput_rps,attainment,"
               "admitted_share,accuracy,p50_ms,p95_ms,p99_ms,cost_rel,variant_mix,run_p50_ms,capacity_rps,"
               "steal_pct,probe_ms\n");
  static const char *policies[2] = {"accurate-only", "adaptive"};
  double good[2][MAX_RHO][MAX_REP], att[2][MAX_RHO][MAX_REP], p95[2][MAX_RHO][MAX_REP];
  double accy[2][MAX_RHO][MAX_REP], costr[2][MAX_RHO][MAX_REP], topshare[2][MAX_RHO][MAX_REP];
  int failures = 0, n_probe = 0;
  static double probes[2 * MAX_RHO * MAX_REP];
  for (int r = 0; r < repeats; r++)
    for (int pi = 0; pi < 2; pi++) {
      int port;
      pid_t pid = start_server(cfg_path, policies[pi], portfile, logf, dls, &port);
      if (pid < 0) return fprintf(stderr, "anytime sweep: server did not start (log: %s)\n", logf), AT_EXIT_FAIL;
      for (int k = 0; k < n_rho; k++) {
        double rate = rhos[k] * capacity;
        fprintf(stderr, "sweep: repeat %d/%d %-13s rho %.2f (%.0f req/s) ...", r + 1, repeats,
                policies[pi], rhos[k], rate);
        double probe = host_probe_ms();
        probes[n_probe++] = probe;
        unsigned long long t0 = 0, st0 = 0, t1 = 0, st1 = 0;
        int have_ticks = cpu_ticks(&t0, &st0) == 0;
        json_t *j = loadgen(port, rate, duration, deadline, seed + r * 100 + k, 5.0, data, NULL);
        have_ticks = have_ticks && cpu_ticks(&t1, &st1) == 0 && t1 > t0;
        double steal_pct = have_ticks ? 100.0 * (double)(st1 - st0) / (double)(t1 - t0) : NAN;
        if (!j) {
          failures++;
          fprintf(stderr, " failed\n");
          continue;
        }
        json_t *lat = json_object_get(j, "latency_s"), *mix = json_object_get(j, "variants");
        double answered = num(j, "answered");
        double cost = 0, top = 0;
        char mixs[512] = "";
        const char *vn;
        json_t *vc;
        json_object_foreach(mix, vn, vc) {
          double n = json_number_value(vc), c = 1;
          for (int v = 0; v < mc->n_variants; v++)
            if (!strcmp(mc->variants[v].name, vn)) {
              c = mc->variants[v].cost > 0 ? mc->variants[v].cost : 1;
              if (mc->variants[v].accuracy >= best) top += n;
            }
          cost += n * c;
          size_t o = strlen(mixs);
          snprintf(mixs + o, sizeof mixs - o, "%s%s=%.0f", o ? ";" : "", vn, n);
        }
        double cost_rel = answered > 0 ? cost / (answered * acc_cost) : NAN;
        good[pi][k][r] = num(j, "goodput_rps");
        att[pi][k][r] = num(j, "attainment");
        p95[pi][k][r] = num(lat, "p95") * 1e3;
        accy[pi][k][r] = num(j, "accuracy");
        costr[pi][k][r] = cost_rel;
        topshare[pi][k][r] = answered > 0 ? top / answered : NAN;
        fprintf(csv, "%d,%s,%.2f,%.1f,%.0f,%.0f,%.0f,%.0f,%.2f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.4f,%s,%.3f,%.1f,%.2f,%.3f\n",
                r + 1, policies[pi], rhos[k], rate, num(j, "sent"), answered, num(j, "rejected"),
                num(j, "errors"), good[pi][k][r], att[pi][k][r], num(j, "admitted_share"),
                accy[pi][k][r], num(lat, "p50") * 1e3, p95[pi][k][r], num(lat, "p99") * 1e3,
                cost_rel, mixs, num(j, "inference_p50_ms"), capacity, steal_pct, probe);
        fflush(csv);
        fprintf(stderr, " goodput %.0f/s, attainment %.3f, p95 %.2f ms, %s, steal %.1f%%, probe %.2f ms\n",
                good[pi][k][r], att[pi][k][r], p95[pi][k][r], mixs, steal_pct, probe);
        if (steal_pct > 2)
          fprintf(stderr, "sweep: WARNING: the hypervisor took %.1f%% of this VM's CPU during that "
                  "point: another tenant was busy, and the point measures that as much as anytime\n",
                  steal_pct);
        if (probe > 1.3 * probe0)
          fprintf(stderr, "sweep: WARNING: the host probe took %.2f ms before that point against "
                  "%.2f ms when the sweep started: the host itself was %.1fx slower, with or "
                  "without steal\n", probe, probe0, probe / probe0);
        json_decref(j);
      }
      int rc = stop_server(pid);
      if (rc != 0) fprintf(stderr, "sweep: WARNING: server exited %d after SIGTERM\n", rc), failures++;
    }
  fclose(csv);

  /* Summary: medians across repeats with ranges. */
  FILE *md = fopen(out_md, "w");
  FILE *dat = NULL;
  char datf[PATH_MAX];
  snprintf(datf, sizeof datf, "%s/summary.dat", tmpdir);
  dat = fopen(datf, "w");
  if (md) {
    if (measure_capacity)
      fprintf(md, "Capacity %.0f req/s: what the server answered with the most accurate variant and "
                  "every worker busy (no admission control, %d connections back to back), measured "
                  "through the server when the sweep started; its median Run time meanwhile was "
                  "s′ = %.3f ms (c/s′ = %.0f req/s; the queueing model's c/s(1) from the profile: "
                  "%.0f req/s). Deadline %g ms; planner rate basis %s; %d repeats of %g s per "
                  "point.\n\n", capacity, 2 * cfg.workers, s_busy * 1e3, cfg.workers / s_busy,
              s1_profile > 0 ? cfg.workers / s1_profile : NAN, deadline, g_basis, repeats, duration);
    else
      fprintf(md, "Capacity of the most accurate variant (%s): %.0f req/s; deadline %g ms; "
                  "planner rate basis %s; %d repeats of %g s per point.\n\n",
              capacity_from_profile ? "the queueing model's c/s(1) from the profile" : "given",
              capacity, deadline, g_basis, repeats, duration);
    if (n_probe > 0) {
      double plo, phi;
      minmax(probes, n_probe, &plo, &phi);
      fprintf(md, "Host probe (a fixed piece of arithmetic timed before each point; lower is "
                  "faster): %.2f ms as the sweep started; median %.2f ms, range %.2f–%.2f ms "
                  "over the %d points.\n\n",
              probe0, med(probes, n_probe), plo, phi, n_probe);
    }
    fprintf(md, "| ρ | policy | goodput (req/s) | attainment | p95 admitted (ms) | accuracy | "
                "cost vs accurate-only | most-accurate share |\n|---|---|---|---|---|---|---|---|\n");
  }
  for (int k = 0; k < n_rho; k++) {
    if (dat) fprintf(dat, "%.2f", rhos[k]);
    for (int pi = 0; pi < 2; pi++) {
      double lo, hi, alo, ahi;
      minmax(good[pi][k], repeats, &lo, &hi);
      minmax(att[pi][k], repeats, &alo, &ahi);
      double g = med(good[pi][k], repeats), a = med(att[pi][k], repeats);
      double ts = med(topshare[pi][k], repeats);
      if (md)
        fprintf(md, "| %.2f | %s | %.0f (%.0f–%.0f) | %.3f (%.3f–%.3f) | %.2f | %.4f | %.2f | %.3f |\n",
                rhos[k], policies[pi], g, lo, hi, a, alo, ahi, med(p95[pi][k], repeats),
                med(accy[pi][k], repeats), med(costr[pi][k], repeats), ts);
      if (dat) fprintf(dat, " %.3f %.3f %.3f %.4f %.4f %.4f %.4f", g, lo, hi, a, alo, ahi, ts);
    }
    if (dat) fprintf(dat, "\n");
  }
  if (md) {
    fprintf(md, "\n");
    for (int k = 0; k < n_rho; k++) {
      double g0 = med(good[0][k], repeats), g1 = med(good[1][k], repeats);
      fprintf(md, "ρ = %.2f: adaptive/accurate-only goodput = %.2fx\n\n", rhos[k], g0 > 0 ? g1 / g0 : INFINITY);
    }
    fclose(md);
  }
  if (dat) fclose(dat);
  /* Plot with gnuplot: goodput, attainment, most-accurate share vs rho. */
  char gp[PATH_MAX];
  snprintf(gp, sizeof gp, "%s/plot.gp", tmpdir);
  FILE *g = fopen(gp, "w");
  if (g) {
    fprintf(g,
            "set terminal pngcairo size 1500,450 font 'sans,10'\nset output '%s'\n"
            "set multiplot layout 1,3 title 'anytime load sweep: %d repeats, deadline %g ms, "
            "capacity %.0f req/s (median, bars = range)'\nset xlabel 'offered load {/Symbol r}'\n"
            "set key top left\nset grid\n"
            "set ylabel 'goodput (answers within deadline / s)'\n"
            "plot '%s' u 1:2:3:4 w yerrorlines t 'accurate-only', '' u 1:9:10:11 w yerrorlines t 'adaptive'\n"
            "set ylabel 'deadline attainment'\nset yrange [0:1.05]\n"
            "plot '%s' u 1:5:6:7 w yerrorlines t 'accurate-only', '' u 1:12:13:14 w yerrorlines t 'adaptive'\n"
            "set ylabel 'share answered by the most accurate variant'\n"
            "plot '%s' u 1:8 w linespoints t 'accurate-only', '' u 1:15 w linespoints t 'adaptive'\n"
            "unset multiplot\n",
            plot, repeats, deadline, capacity, datf, datf, datf);
    fclose(g);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && gnuplot '%s'", plot, gp);
    if (system(cmd) != 0) fprintf(stderr, "sweep: gnuplot failed; %s not written (apt-get install gnuplot-nox)\n", plot);
  }
  fprintf(stderr, "sweep: wrote %s, %s, %s%s\n", out_csv, out_md, plot,
          failures ? " (with failures: see above)" : "");
  return failures ? AT_EXIT_FAIL : AT_EXIT_OK;
}
