/* src/cli/cmd_sweep.c — `anytime sweep`: the load sweep that shows what the
 * planner buys, and what it costs against a perfect one. For each repeat
 * and each policy (adaptive, accurate-only, none = no admission control,
 * limit = a fixed in-flight limit like TEI's max_concurrent_requests,
 * cheap-only = the planner holding only the cheapest frontier variant) it
 * starts `anytime serve` on the profiled configuration and drives it
 * in-process with the load generator (src/tools/loadgen_*.c, held-out texts)
 * at each load ρ × capacity, with two kinds of clients: open-loop Poisson
 * (sends at their scheduled times whatever the server does) and closed-loop
 * clients that resend a 429 at once (the clients that kept the old planner
 * shut, issue #14): N = ρ·C·Z clients thinking Z = 50 ms on average. One
 * CSV row per (repeat, policy, clients, ρ) records goodput, latency, the
 * variant mix, the median Run time the server reported (x-inference-time),
 * the CPU time the hypervisor gave to other tenants meanwhile (steal), a
 * fixed piece of arithmetic timed just before the point (the host's own
 * speed, which on this VM halves for seconds at a time without any steal
 * showing), and the ORACLE: min(offered rate, the cheapest frontier
 * variant's capacity), what a planner that knew everything could answer
 * within the deadline, beside which each policy's goodput is read, and the
 * CEILING: the better of the two single-variant servers (accurate-only,
 * cheap-only) measured at the same point, which pays for the load
 * generator's CPU as every policy there does.
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
 * from the configuration.
 * Then it writes results/load_sweep.csv, a markdown summary (medians across
 * repeats with their range, one table per kind of client) and
 * docs/img/load_sweep.png with gnuplot (a clear warning if it is absent). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "anytime/clock.h"
#include "anytime/plan.h"
#include "anytime/profile.h"
#include "anytime/server.h"
#include "cli/cli.h"
#include "tools/loadgen.h"

#define MAX_RHO 16
#define MAX_REP 10
#define MAX_POL 5
#define MAX_CM 2
#define MAX_POINTS (MAX_POL * MAX_CM * MAX_RHO * MAX_REP)

enum { CM_POISSON = 0, CM_CLOSED_RETRY = 1 };
static const char *const cm_names[MAX_CM] = {"poisson", "closed-retry"};
static const char *const all_policies[MAX_POL] = {"adaptive", "accurate-only", "none", "limit",
                                                   "cheap-only"};

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

typedef struct sweep {
  /* options */
  const char *cfg_path, *out_csv, *out_md, *plot, *data_path, *basis;
  const char *from_csv; /* --from-csv: summarise an earlier sweep's rows, run nothing */
  const char *server_cpus; /* --server-cpus: start each server under taskset -c LIST */
  double rhos[MAX_RHO], duration, deadline, capacity, cheap_capacity, think_ms;
  double adj_from; /* rho at and above which C_cheap is measured beside each point */
  int n_rho, repeats, seed, capacity_from_profile, inflight_limit;
  int pol[MAX_POL], n_pol, cms[MAX_CM], n_cm;
  bool quick, capacities_only;
  /* the configuration */
  at_server_config cfg;
  at_server_model_config *mc;
  int acc_v, cheap_v;       /* most accurate / cheapest frontier variant */
  double best_acc, acc_cost;
  /* measured */
  double s_busy, cheap_s_busy, probe0;
  double cheap_lg_cores; /* the load generator's cores in C_cheap's best window */
  pid_t cap_pid;         /* a --policy none server holding only the cheapest variant, */
  int cap_port;          /* up through each repeat for the measurements beside a point */
  int ncpu;
  bool measured, cheap_measured;
  char cheap_how[160];
  lg_data data;
  char self[PATH_MAX], tmpdir[64], portfile[PATH_MAX], logf[PATH_MAX], dls[32];
  char cheap_cfg[PATH_MAX]; /* the configuration with only the cheapest frontier variant */
  double probes[MAX_POINTS];
  int n_probe, failures;
  double cheap_caps[MAX_REP]; /* C_cheap measured at the start of each repeat */
  pt pts[MAX_POL][MAX_CM][MAX_RHO][MAX_REP];
} sweep;

/* ---- the server ------------------------------------------------------------------ */

static pid_t start_server(const sweep *sw, const char *cfg, const char *policy, int *port) {
  unlink(sw->portfile);
  char lim[32];
  snprintf(lim, sizeof lim, "%d", sw->inflight_limit);
  bool limit = strcmp(policy, "limit") == 0;
  if (!strcmp(policy, "cheap-only")) { /* the same planner, holding only the cheapest variant */
    cfg = sw->cheap_cfg;
    policy = sw->acc_v == sw->cheap_v ? "accurate-only" : "adaptive";
  }
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(sw->logf, "w", stderr);
    (void)f;
    const char *argv[24];
    int n = 0;
    if (sw->server_cpus) argv[n++] = "taskset", argv[n++] = "-c", argv[n++] = sw->server_cpus;
    const char *rest[] = {sw->self, "serve", "--config", cfg, "--policy", policy, "--port", "0",
                          "--port-file", sw->portfile, "--deadline-ms", sw->dls,
                          "--rate-basis", sw->basis, "--no-cache"};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) argv[n++] = rest[i];
    if (limit) argv[n++] = "--inflight-limit", argv[n++] = lim;
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  for (int i = 0; i < 1200; i++) { /* up to 60 s: start-up may time variants */
    FILE *pf = fopen(sw->portfile, "r");
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

static lg_config lg_cfg(int port, double deadline_ms, int seed, double drain_s) {
  lg_config c = {.deadline_ms = deadline_ms, .max_conns = 512, .initial_conns = 4,
                 .late_s = 0.001, .drain_s = drain_s, .seed = (uint64_t)seed};
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/predict", port);
  lg_url_parse(url, &c.url);
  return c;
}

/* ---- the host ---------------------------------------------------------------------- */

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

/* Seconds on the monotonic clock (the library's at_now_ns). */
static double now_s(void) { return (double)at_now_ns() / 1e9; }

/* CPU seconds this process (the load generator: it runs in-process) has
 * used so far, user + system, all threads. */
static double self_cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
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
  return at_profile_median(t, 5);
}

/* Median of n <= MAX_POINTS values that are not NaN (NaN if none). */
static double med(const double *v, int n) {
  static double t[MAX_POINTS];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(v[i])) t[k++] = v[i];
  if (k == 0) return NAN;
  return at_profile_median(t, (size_t)k);
}
static void minmax(const double *v, int n, double *lo, double *hi) {
  *lo = *hi = NAN;
  for (int i = 0; i < n; i++) {
    if (isnan(v[i])) continue;
    if (isnan(*lo) || v[i] < *lo) *lo = v[i];
    if (isnan(*hi) || v[i] > *hi) *hi = v[i];
  }
}

/* ---- capacity ------------------------------------------------------------------------ */

/* Saturate a server without admission control: 2c closed-loop clients send
 * back to back, so each worker always has a request waiting, in
 * CAP_WINDOWS windows of CAP_WINDOW_S each. The capacity is the best
 * window's answers per second (first send to last answer), with that
 * window's median Run time, s′: this host's speed halves for seconds at a
 * time, and one 2 s window taken while it was slow made C 963 req/s in a
 * sweep whose accurate-only then carried 1,200 — so ρ = 1.3 was no
 * overload. The best window is the host at its speed. 0 on success. */
#define CAP_WINDOWS 3
#define CAP_WINDOW_S 1.5
#define ADJ_WINDOW_S 1.0 /* each of the two windows beside a point */
/* One saturated window of `secs` on `port`: its answers per second, median
 * Run time and the load generator's CPU (cores) meanwhile. 0 on success;
 * -1 when it failed or the server refused anything. */
static int saturated_window(const sweep *sw, int port, double secs, int seed, double *rps,
                            double *run_s, double *lg_cores) {
  lg_config c = lg_cfg(port, 10000, seed, 0.5);
  lg_closed cl = {.clients = (size_t)(2 * sw->cfg.workers), .think_s = 0,
                  .retry = LG_RETRY_NONE, .duration_s = secs};
  lg_result res;
  char err[256];
  double c0 = self_cpu_s(), t0 = now_s();
  if (lg_run_closed(&c, &cl, &sw->data, &res, err, sizeof err) != 0) {
    fprintf(stderr, "sweep: %s\n", err);
    return -1;
  }
  *lg_cores = (self_cpu_s() - c0) / (now_s() - t0);
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

static int measure_saturated(const sweep *sw, int port, double *s_busy, double *served_rps,
                             double *lg_cores) {
  *s_busy = *served_rps = *lg_cores = 0;
  for (int w = 0; w < CAP_WINDOWS; w++) {
    double rps, run_s, cores;
    if (saturated_window(sw, port, CAP_WINDOW_S, sw->seed + 99 + w, &rps, &run_s, &cores) != 0)
      return -1;
    fprintf(stderr, "sweep:   window %d/%d: %.0f req/s, median Run %.4f ms, load generator "
            "%.2f cores\n", w + 1, CAP_WINDOWS, rps, run_s * 1e3, cores);
    if (rps > *served_rps) *served_rps = rps, *s_busy = run_s, *lg_cores = cores;
  }
  return *s_busy > 0 && *served_rps > 0 ? 0 : -1;
}

/* Start a --policy none server on config `path`, saturate it, stop it. */
static int measure_capacity(sweep *sw, const char *path, double *cap, double *s_busy,
                            double *lg_cores) {
  int port;
  pid_t pid = start_server(sw, path, "none", &port);
  if (pid < 0) {
    fprintf(stderr, "anytime sweep: server did not start (log: %s)%s%s%s\n", sw->logf,
            sw->server_cpus ? "; it was started under `taskset -c " : "",
            sw->server_cpus ? sw->server_cpus : "", sw->server_cpus ? "`" : "");
    return -1;
  }
  int rc = measure_saturated(sw, port, s_busy, cap, lg_cores);
  stop_server(pid);
  if (rc != 0)
    fprintf(stderr, "anytime sweep: could not measure capacity through the server (log: %s); "
                    "pass --capacity RPS or --capacity profile\n", sw->logf);
  return rc;
}

/* A variant's profiled batch-1 service time (0 if none). */
static double s1_of(const at_server_variant_config *vc) {
  return vc->n_points > 0 && vc->batch[0] == 1 ? vc->service_s[0] : 0;
}

/* A configuration like the sweep's own with only the classify model and
 * only variant v, paths made absolute: a server on it serves that variant
 * alone, so --policy none saturates it. Written through the configuration's
 * writers (config.c), so every key of the model and of the variant carries
 * over (the length model, bucketing) as the table knows them; it used to
 * be written by hand here, key by key, and dropped any key it did not
 * list. Returns 0 or -1. */
static int write_one_variant_config(const sweep *sw, int v, const char *path) {
  at_server_config *one = malloc(sizeof *one); /* ~400 KB: not on the stack */
  if (!one) return -1;
  *one = sw->cfg;
  one->n_models = 1;
  one->models[0] = *sw->mc;
  one->models[0].n_variants = 1;
  one->models[0].variants[0] = sw->mc->variants[v];
  /* every setting, one writer; paths outside the temporary directory the
   * file is written to are written absolute */
  char *settings = at_server_config_settings_yaml(one, 0);
  char *models = settings ? at_server_config_models_yaml(one, sw->tmpdir, NULL) : NULL;
  free(one);
  FILE *f = models ? fopen(path, "w") : NULL;
  int rc = -1;
  if (f) {
    fprintf(f, "# written by `anytime sweep`: %s with only variant %s\n", sw->cfg_path,
            sw->mc->variants[v].name);
    rc = fputs(settings, f) >= 0 && fputs(models, f) >= 0 ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
  }
  free(settings);
  free(models);
  return rc;
}

/* C (the most accurate variant) and C_cheap (the cheapest frontier
 * variant), measured, given or from the profile. Returns 0 or -1. */
static int find_capacities(sweep *sw) {
  const at_server_variant_config *acc = &sw->mc->variants[sw->acc_v];
  const at_server_variant_config *cheap = &sw->mc->variants[sw->cheap_v];
  bool same = sw->acc_v == sw->cheap_v;
  if (sw->capacity_from_profile) {
    double s1 = s1_of(acc), s1c = s1_of(cheap);
    if (!(s1 > 0) || !(s1c > 0)) {
      fprintf(stderr, "anytime sweep: %s has no batch-1 service time for %s; run `anytime "
                      "profile` or pass --capacity RPS\n", sw->cfg_path, s1 > 0 ? cheap->name : acc->name);
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
    if (measure_capacity(sw, sw->cfg_path, &cap, &sw->s_busy, &cores) != 0) return -1;
    sw->capacity = cap;
    sw->cheap_lg_cores = cores; /* the cheapest's own measurement replaces it, if any */
    sw->measured = true;
    fprintf(stderr, "sweep: capacity %.0f req/s: what the server answered with every worker busy "
            "(measured now); its Run time meanwhile s' = %.4f ms, c/s' = %.0f req/s (profiled "
            "s'(1) %.4f ms, s(1) %.4f ms)\n", sw->capacity, sw->s_busy * 1e3,
            sw->cfg.workers / sw->s_busy,
            (acc->n_busy_points > 0 && acc->busy_batch[0] == 1 ? acc->busy_s[0] : 0) * 1e3,
            s1_of(acc) * 1e3);
  }
  if (same) {
    snprintf(sw->cheap_cfg, sizeof sw->cheap_cfg, "%s", sw->cfg_path);
  } else {
    snprintf(sw->cheap_cfg, sizeof sw->cheap_cfg, "%s/only-%s.yaml", sw->tmpdir, cheap->name);
    if (write_one_variant_config(sw, sw->cheap_v, sw->cheap_cfg) != 0) {
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
    if (measure_capacity(sw, sw->cheap_cfg, &sw->cheap_capacity, &sw->cheap_s_busy,
                         &sw->cheap_lg_cores) != 0)
      return -1;
    sw->cheap_measured = true;
    snprintf(sw->cheap_how, sizeof sw->cheap_how, "measured the same way on a server with only "
             "that variant");
  }
  fprintf(stderr, "sweep: cheapest frontier variant %s: capacity %.0f req/s (%s)\n", cheap->name,
          sw->cheap_capacity, sw->cheap_how);
  return 0;
}

/* ---- one point -------------------------------------------------------------------------- */

/* Drive the server on `port` with clients `cm` at ρ = rho; fill *p. */
static int run_point(sweep *sw, int port, int cm, double rho, int seed, pt *p) {
  double rate = rho * sw->capacity;
  lg_config c = lg_cfg(port, sw->deadline, seed, 5.0);
  lg_result res;
  char err[256];
  int rc;
  p->rate = rate;
  p->n_clients = NAN;
  double c0 = self_cpu_s(), t0 = now_s();
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
    lg_closed cl = {.clients = nc < 1 ? 1 : (size_t)nc, .think_s = sw->think_ms / 1e3,
                    .retry = LG_RETRY_NOW, .duration_s = sw->duration};
    p->n_clients = (double)cl.clients;
    rc = lg_run_closed(&c, &cl, &sw->data, &res, err, sizeof err);
  }
  p->lg_cores = (self_cpu_s() - c0) / (now_s() - t0);
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

/* The oracle of point p (after run_point): min(rate, the cheapest variant's
 * capacity) with the capacity measured beside the point when it was, else
 * the repeat's; and the same with that capacity scaled by the CPU the load
 * generator left to the server, (ncpu - its cores during the point) /
 * (ncpu - its cores while the capacity was measured) — NaN when the
 * capacity was not measured through the server. */
static void set_oracle(const sweep *sw, pt *p) {
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
static bool beside(const sweep *sw, int seed, double *cap, double *cores) {
  double rps, run_s, c;
  if (sw->cap_pid <= 0 || saturated_window(sw, sw->cap_port, ADJ_WINDOW_S, seed, &rps, &run_s, &c))
    return false;
  *cap += rps, *cores += c;
  return true;
}

/* The CSV's columns: the first 31 (all that older sweep files have;
 * --from-csv still reads those), then the oracle beside the point. */
#define CSV_COLS_OLD 31
#define CSV_COLS 36
static void csv_header(FILE *csv, bool old) {
  fprintf(csv, "repeat,policy,rho,rate_rps,sent,answered,rejected,errors,goodput_rps,attainment,"
               "admitted_share,accuracy,p50_ms,p95_ms,p99_ms,cost_rel,variant_mix,run_p50_ms,"
               "capacity_rps,steal_pct,probe_ms,clients,n_clients,think_ms,offered_rps,retries,"
               "logical,logical_ok,cheapest_capacity_rps,oracle_rps,goodput_over_oracle%s\n",
          old ? "" : ",cheapest_capacity_beside_rps,loadgen_cores,loadgen_cores_capacity,"
                     "oracle_host_rps,goodput_over_oracle_host");
}

static void csv_row(FILE *csv, const sweep *sw, int r, const char *pol, int cm, double rho,
                    const pt *p) {
  fprintf(csv, "%d,%s,%.2f,%.1f,%.0f,%.0f,%.0f,%.0f,%.2f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.4f,%s,"
               "%.3f,%.1f,%.2f,%.3f,%s,", r + 1, pol, rho, p->rate, p->sent, p->answered,
          p->rejected, p->errors, p->good, p->att, p->adm, p->accy, p->p50, p->p95, p->p99,
          p->cost_rel, p->mix, p->run_p50, sw->capacity, p->steal, p->probe, cm_names[cm]);
  if (cm == CM_CLOSED_RETRY) fprintf(csv, "%.0f,%g,", p->n_clients, sw->think_ms);
  else fprintf(csv, ",,");
  fprintf(csv, "%.2f,%.0f,%.0f,%.0f,%.1f,%.2f,%.4f,%.1f,%.3f,%.3f,%.2f,%.4f\n", p->offered,
          p->retries, p->logical, p->logical_ok, sw->cheap_capacity, p->oracle,
          p->oracle > 0 ? p->good / p->oracle : NAN, p->cheap_cap, p->lg_cores, p->lg_cores_cap,
          p->oracle_host, p->oracle_host > 0 ? p->good / p->oracle_host : NAN);
  fflush(csv);
}

/* One point with its host readings, logged and written to the CSV. */
static void point(sweep *sw, FILE *csv, int port, int r, int pi, int cm, int k) {
  const char *pol = all_policies[sw->pol[pi]];
  pt *p = &sw->pts[pi][cm][k][r];
  double rho = sw->rhos[k];
  fprintf(stderr, "sweep: repeat %d/%d %-13s %-12s rho %.2f (%.0f req/s) ...", r + 1,
          sw->repeats, pol, cm_names[cm], rho, rho * sw->capacity);
  double probe = host_probe_ms();
  sw->probes[sw->n_probe++] = probe;
  unsigned long long t0 = 0, st0 = 0, t1 = 0, st1 = 0;
  int have_ticks = cpu_ticks(&t0, &st0) == 0;
  /* near and past the edge the oracle is the cheapest variant's capacity:
   * measured just before and just after the point, the mean of the two
   * (the host's speed moves 1.4x between measurements minutes apart) */
  double cap = 0, cores = 0;
  int seed = sw->seed + r * 100 + k + cm * 1000;
  bool adj = rho >= sw->adj_from && beside(sw, seed + 7, &cap, &cores);
  int rc = run_point(sw, port, cm, rho, seed, p);
  adj = adj && rc == 0 && beside(sw, seed + 11, &cap, &cores);
  p->cheap_cap = adj ? cap / 2 : NAN;
  p->lg_cores_cap = adj ? cores / 2 : NAN;
  if (rc == 0) set_oracle(sw, p);
  have_ticks = have_ticks && cpu_ticks(&t1, &st1) == 0 && t1 > t0;
  p->steal = have_ticks ? 100.0 * (double)(st1 - st0) / (double)(t1 - t0) : NAN;
  p->probe = probe;
  if (rc != 0) {
    sw->failures++;
    fprintf(stderr, " failed\n");
    return;
  }
  csv_row(csv, sw, r, pol, cm, rho, p);
  fprintf(stderr, " goodput %.0f/s (oracle %.0f, %.0f for the host share; load generator %.2f "
          "cores), attainment %.3f, p99 %.2f ms, %s, steal %.1f%%, probe %.2f ms\n", p->good,
          p->oracle, p->oracle_host, p->lg_cores, p->att, p->p99, p->mix, p->steal, probe);
  if (p->steal > 2)
    fprintf(stderr, "sweep: WARNING: the hypervisor took %.1f%% of this VM's CPU during that "
            "point: another tenant was busy, and the point measures that as much as anytime\n",
            p->steal);
  if (probe > 1.3 * sw->probe0)
    fprintf(stderr, "sweep: WARNING: the host probe took %.2f ms before that point against "
            "%.2f ms when the sweep started: the host itself was %.1fx slower, with or "
            "without steal\n", probe, sw->probe0, probe / sw->probe0);
  usleep(300000); /* let the server's queue and rate window settle */
}

/* Every repeat, policy, kind of client and load. Returns 0 or -1 (fatal). */
static int run_all(sweep *sw, FILE *csv) {
  for (int r = 0; r < sw->repeats; r++) {
    /* A measured C_cheap is measured again before every repeat, and that
     * repeat's points take their oracle from it: one measurement at the
     * start of a 35-minute sweep can be 1.5x what the host gives later. */
    if (sw->cheap_measured && r > 0 &&
        measure_capacity(sw, sw->cheap_cfg, &sw->cheap_capacity, &sw->cheap_s_busy,
                         &sw->cheap_lg_cores) != 0)
      return -1;
    sw->cheap_caps[r] = sw->cheap_capacity;
    if (sw->cheap_measured)
      fprintf(stderr, "sweep: repeat %d/%d: cheapest variant's capacity %.0f req/s (the oracle's "
              "for this repeat below rho %g)\n", r + 1, sw->repeats, sw->cheap_capacity,
              sw->adj_from);
    /* the capacity server for the windows beside each point from adj_from on:
     * idle while a point runs, as the policy's server is during the windows */
    bool need = false;
    for (int k = 0; k < sw->n_rho; k++) need |= sw->rhos[k] >= sw->adj_from;
    /* measured through a server, not given: its own (cheap_measured) or, with
     * one frontier variant, C's */
    bool through = sw->cheap_measured || (sw->acc_v == sw->cheap_v && sw->measured);
    sw->cap_pid = need && through ? start_server(sw, sw->cheap_cfg, "none", &sw->cap_port) : 0;
    if (sw->cap_pid < 0) {
      fprintf(stderr, "sweep: WARNING: the capacity server did not start (log: %s); the oracle "
              "uses the repeat's capacity\n", sw->logf);
      sw->cap_pid = 0;
    }
    /* The policies take turns going first: repeat r starts with policy r.
     * In a fixed order a drift of the host's speed within a repeat would
     * land on the same policy every time and read as a difference between
     * policies. */
    for (int step = 0; step < sw->n_pol; step++) {
      int pi = (step + r) % sw->n_pol;
      const char *pol = all_policies[sw->pol[pi]];
      int port;
      pid_t pid = start_server(sw, sw->cfg_path, pol, &port);
      if (pid < 0) {
        /* e.g. a build whose serve does not know --policy limit yet: the
         * other policies still run */
        fprintf(stderr, "sweep: WARNING: the server did not start with --policy %s (log: %s); "
                "that policy's points are missing\n", pol, sw->logf);
        sw->failures++;
        continue;
      }
      for (int ci = 0; ci < sw->n_cm; ci++) {
        if (ci > 0) sleep(1); /* the planner's rate window forgets the last load */
        for (int k = 0; k < sw->n_rho; k++) point(sw, csv, port, r, pi, sw->cms[ci], k);
      }
      int rc = stop_server(pid);
      if (rc != 0) fprintf(stderr, "sweep: WARNING: server exited %d after SIGTERM\n", rc), sw->failures++;
    }
    if (sw->cap_pid > 0) stop_server(sw->cap_pid), sw->cap_pid = 0;
  }
  return 0;
}

/* ---- summary and plot -------------------------------------------------------------------- */

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
  double g[MAX_REP], o[MAX_REP], q[MAX_REP];
  ACROSS(sw, pi, cm, k, good, g);
  across(sw, pi, cm, k, off, o);
  for (int r = 0; r < sw->repeats; r++) q[r] = o[r] > 0 ? g[r] / o[r] : NAN;
  return med(q, sw->repeats);
}

/* Index of policy `name` in this sweep, or -1. */
static int pol_index(const sweep *sw, const char *name) {
  for (int i = 0; i < sw->n_pol; i++)
    if (!strcmp(all_policies[sw->pol[i]], name)) return i;
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
    double g = med(v, sw->repeats);
    if (!isnan(g) && (isnan(best) || g > best)) best = g;
  }
  return best;
}

static void summary_intro(const sweep *sw, FILE *md) {
  const char *cheap = sw->mc->variants[sw->cheap_v].name;
  if (sw->measured)
    fprintf(md, "Capacity C = %.0f req/s: what the server answered with the most accurate variant "
                "and every worker busy (no admission control, %d connections back to back; the best "
                "of %d windows of %g s), measured through the server when the sweep started; its "
                "median Run time "
                "meanwhile was s′ = %.3f ms (c/s′ = %.0f req/s; the queueing model's c/s(1) "
                "from the profile: %.0f req/s). ", sw->capacity, 2 * sw->cfg.workers, CAP_WINDOWS,
            CAP_WINDOW_S,
            sw->s_busy * 1e3, sw->cfg.workers / sw->s_busy,
            s1_of(&sw->mc->variants[sw->acc_v]) > 0 ? sw->cfg.workers / s1_of(&sw->mc->variants[sw->acc_v]) : NAN);
  else
    fprintf(md, "Capacity C of the most accurate variant (%s): %.0f req/s. ",
            sw->from_csv               ? "as the rows read recorded it"
            : sw->capacity_from_profile ? "the queueing model's c/s(1) from the profile"
                                        : "given",
            sw->capacity);
  if (sw->cheap_measured) {
    fprintf(md, "The cheapest frontier variant (%s), %s, before each repeat:", cheap,
            sw->cheap_how);
    for (int r = 0; r < sw->repeats; r++)
      fprintf(md, "%s %.0f", r ? "," : "", sw->cheap_caps[r]);
    fprintf(md, " req/s. Oracle = min(offered rate, the cheapest variant's capacity): from "
                "ρ = %g on, that capacity is measured beside each point, on a server with only "
                "that variant kept up through the repeat (one %g s window just before the point "
                "and one just after, their mean), below it the repeat's; the table shows the "
                "oracle's median over the repeats", sw->adj_from, ADJ_WINDOW_S);
  } else {
    fprintf(md, "The cheapest frontier variant (%s): %.0f req/s, %s. Oracle = min(offered "
                "rate, that capacity%s)", cheap, sw->cheap_capacity, sw->cheap_how,
            sw->measured && !sw->from_csv ? ", measured beside each point from ρ = --beside-from on" : "");
  }
  fprintf(md, ": the goodput a planner that knew everything could reach. "
              "Deadline %g ms; planner rate basis %s; %d repeat%s of %g s per point.\n\n",
          sw->deadline, sw->basis, sw->repeats, sw->repeats > 1 ? "s" : "", sw->duration);
  fprintf(md, "Policies: adaptive and accurate-only (the planner), none (no admission control: "
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
    minmax(sw->probes, sw->n_probe, &plo, &phi);
    fprintf(md, "Host probe (a fixed piece of arithmetic timed before each point; lower is "
                "faster): %.2f ms %s; median %.2f ms, range %.2f–%.2f ms "
                "over the %d points.\n\n", sw->probe0,
            sw->from_csv ? "before the first point" : "as the sweep started", med(sw->probes, sw->n_probe), plo, phi,
            sw->n_probe);
  }
}

static void summary_table(const sweep *sw, FILE *md, int cm) {
  if (cm == CM_POISSON)
    fprintf(md, "**Open-loop Poisson clients** (offered rate ρ·C, sent on schedule whatever "
                "the server answers):\n\n");
  else
    fprintf(md, "**Closed-loop clients that resend a 429 at once** (N = ρ·C·Z clients, "
                "mean think time Z = %g ms, one connection each; goodput counts every attempt "
                "answered within the deadline from its own send; the oracle uses ρ·C):\n\n",
            sw->think_ms);
  fprintf(md, "| ρ | policy | goodput (req/s) | oracle (req/s) | goodput / oracle | ceiling "
              "(req/s) | goodput / ceiling | attainment | admitted share | p95 / p99 admitted "
              "(ms) | accuracy | cost vs accurate-only | most-accurate share | oracle, host "
              "share (req/s) | goodput / oracle (host share) |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double v[MAX_REP], o[MAX_REP];
  for (int k = 0; k < sw->n_rho; k++)
    for (int pi = 0; pi < sw->n_pol; pi++) {
      double lo, hi, alo, ahi;
      ACROSS(sw, pi, cm, k, good, v);
      double g = med(v, sw->repeats);
      minmax(v, sw->repeats, &lo, &hi);
      ACROSS(sw, pi, cm, k, oracle, o);
      double orc = med(o, sw->repeats);
      double ceil_g = ceiling(sw, cm, k);
      fprintf(md, "| %.2f | %s | %.0f (%.0f–%.0f) | %.0f | %.2f | %.0f | %.2f |", sw->rhos[k],
              all_policies[sw->pol[pi]], g, lo, hi, orc,
              over_oracle(sw, pi, cm, k, offsetof(pt, oracle)), ceil_g,
              ceil_g > 0 ? g / ceil_g : NAN);
      ACROSS(sw, pi, cm, k, att, v);
      minmax(v, sw->repeats, &alo, &ahi);
      fprintf(md, " %.3f (%.3f–%.3f) |", med(v, sw->repeats), alo, ahi);
      ACROSS(sw, pi, cm, k, adm, v);
      fprintf(md, " %.3f |", med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, p95, v);
      ACROSS(sw, pi, cm, k, p99, o);
      fprintf(md, " %.2f / %.2f |", med(v, sw->repeats), med(o, sw->repeats));
      ACROSS(sw, pi, cm, k, accy, v);
      fprintf(md, " %.4f |", med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, cost_rel, v);
      fprintf(md, " %.2f |", med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, top, v);
      fprintf(md, " %.3f |", med(v, sw->repeats));
      ACROSS(sw, pi, cm, k, oracle_host, o);
      fprintf(md, " %.0f | %.2f |\n", med(o, sw->repeats),
              over_oracle(sw, pi, cm, k, offsetof(pt, oracle_host)));
    }
  fprintf(md, "\n");
}

static void write_summary(const sweep *sw) {
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
      double g0 = med(v, sw->repeats);
      ACROSS(sw, ad, sw->cms[ci], k, good, v);
      double g1 = med(v, sw->repeats);
      double cg = ceiling(sw, sw->cms[ci], k);
      fprintf(md, "%s, ρ = %.2f: adaptive/accurate-only goodput = %.2fx; adaptive/oracle = "
              "%.2f; adaptive/oracle (host share) = %.2f; adaptive/ceiling = %.2f\n\n",
              cm_names[sw->cms[ci]], sw->rhos[k], g0 > 0 ? g1 / g0 : INFINITY,
              over_oracle(sw, ad, sw->cms[ci], k, offsetof(pt, oracle)),
              over_oracle(sw, ad, sw->cms[ci], k, offsetof(pt, oracle_host)),
              cg > 0 ? g1 / cg : NAN);
    }
  fclose(md);
}

/* The cheapest variant's capacity as the figures use it: the median of the
 * measurements before each repeat, or the one given. */
static double cheap_cap(const sweep *sw) {
  return sw->cheap_measured ? med(sw->cheap_caps, sw->repeats) : sw->cheap_capacity;
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
    double orc = med(v, sw->repeats);
    double cg = ceiling(sw, cm, k);
    fprintf(dat, "%.2f %.3f %.3f", sw->rhos[k], isnan(orc) ? fmin(sw->rhos[k] * sw->capacity,
                                                                  cheap_cap(sw)) : orc,
            isnan(cg) ? -1.0 : cg);
    for (int pi = 0; pi < sw->n_pol; pi++) {
      double lo, hi;
      ACROSS(sw, pi, cm, k, good, v);
      minmax(v, sw->repeats, &lo, &hi);
      fprintf(dat, " %.3f %.3f %.3f", med(v, sw->repeats), lo, hi);
      ACROSS(sw, pi, cm, k, att, v);
      minmax(v, sw->repeats, &lo, &hi);
      fprintf(dat, " %.4f %.4f %.4f", med(v, sw->repeats), lo, hi);
      ACROSS(sw, pi, cm, k, top, v);
      fprintf(dat, " %.4f", med(v, sw->repeats));
    }
    ACROSS(sw, 0, cm, k, oracle_host, v);
    double oh = med(v, sw->repeats);
    fprintf(dat, " %.3f\n", isnan(oh) ? -1.0 : oh);
  }
  return fclose(dat);
}

/* One row of panels (goodput with the oracle, attainment, most-accurate
 * share) per kind of client. */
static bool write_plot(const sweep *sw) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "sweep: WARNING: gnuplot is not installed: %s NOT written (apt-get install "
                    "gnuplot-nox); the CSV and the summary are complete\n", sw->plot);
    return false;
  }
  char gp[PATH_MAX], dat[MAX_CM][PATH_MAX];
  snprintf(gp, sizeof gp, "%s/plot.gp", sw->tmpdir);
  FILE *g = fopen(gp, "w");
  if (!g) return false;
  fprintf(g, "set terminal pngcairo size 1500,%d font 'sans,10'\nset output '%s'\n"
             "set multiplot layout %d,3 title 'anytime load sweep: %d repeat(s), deadline %g ms, "
             "C = %.0f req/s, cheapest variant %.0f req/s (median, bars = range)'\n"
             "set xlabel 'offered load {/Symbol r} (x C)'\nset key top left\nset grid\n",
          420 * sw->n_cm, sw->plot, sw->n_cm, sw->repeats, sw->deadline, sw->capacity,
          cheap_cap(sw));
  for (int ci = 0; ci < sw->n_cm; ci++) {
    int cm = sw->cms[ci];
    snprintf(dat[ci], sizeof dat[ci], "%s/%s.dat", sw->tmpdir, cm_names[cm]);
    write_dat(sw, cm, dat[ci]);
    fprintf(g, "set key top left\nset autoscale y\nset ylabel '%s: goodput (req/s)'\nplot '%s' u 1:2 w lines lw 2 "
               "dt 2 lc 'black' t 'oracle', '' u 1:($3 > 0 ? $3 : NaN) w lines lw 2 dt 3 "
               "lc 'gray40' t 'ceiling (best single variant, measured)', '' u 1:($%d > 0 ? $%d : "
               "NaN) w lines lw 1 dt 4 lc 'black' t 'oracle, host share'", cm_names[cm], dat[ci],
            4 + 7 * sw->n_pol, 4 + 7 * sw->n_pol);
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, ", '' u 1:%d:%d:%d w yerrorlines lt %d t '%s'", 4 + 7 * pi, 5 + 7 * pi,
              6 + 7 * pi, 1 + sw->pol[pi], all_policies[sw->pol[pi]]);
    fprintf(g, "\nset key bottom left\nset ylabel 'deadline attainment'\nset yrange [0:1.05]\n"
               "plot ");
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, "%s'%s' u 1:%d:%d:%d w yerrorlines lt %d t '%s'", pi ? ", " : "", dat[ci],
              7 + 7 * pi, 8 + 7 * pi, 9 + 7 * pi, 1 + sw->pol[pi], all_policies[sw->pol[pi]]);
    fprintf(g, "\nset ylabel 'most-accurate share of answers'\nplot ");
    for (int pi = 0; pi < sw->n_pol; pi++)
      fprintf(g, "%s'%s' u 1:%d w linespoints lt %d t '%s'", pi ? ", " : "", dat[ci], 10 + 7 * pi,
              1 + sw->pol[pi], all_policies[sw->pol[pi]]);
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

/* ---- an earlier sweep's rows (--from-csv) -------------------------------------------------- */

/* Index of `name` among `names` (n), or -1. */
static int name_index(const char *name, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

/* The most-accurate share of a recorded variant mix ("name=count;..."):
 * what run_point() computed from the same counts. */
static double mix_top(const sweep *sw, const char *mix, double answered) {
  double top = 0;
  for (const char *p = mix; p && *p;) {
    const char *eq = strchr(p, '='), *end = strchr(p, ';');
    if (!eq || (end && eq > end)) break;
    for (int k = 0; k < sw->mc->n_variants; k++) {
      const char *nm = sw->mc->variants[k].name;
      if (strlen(nm) == (size_t)(eq - p) && !strncmp(nm, p, (size_t)(eq - p)) &&
          sw->mc->variants[k].accuracy >= sw->best_acc)
        top += atof(eq + 1);
    }
    p = end ? end + 1 : NULL;
  }
  return answered > 0 ? top / answered : NAN;
}

/* Read the rows csv_row() wrote back into sw: the policies, kinds of client
 * and loads in the order they first appear, the repeats, each point's
 * figures, C, each repeat's cheapest capacity and the host probes. The
 * duration per point is not a column: it is taken as sent / rate of the
 * open-loop rows (to 0.5 s). Returns 0, or -1 with a message naming the
 * line and the problem. */
static int read_rows(sweep *sw, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return fprintf(stderr, "anytime sweep: cannot read %s: %s\n", path, strerror(errno)), -1;
  char line[2048], want[1024], want_old[1024];
  FILE *h = fmemopen(want, sizeof want, "w"), *ho = fmemopen(want_old, sizeof want_old, "w");
  if (!h || !ho) return h ? fclose(h) : 0, ho ? fclose(ho) : 0, fclose(f), -1;
  csv_header(h, false);
  csv_header(ho, true);
  fclose(h);
  fclose(ho);
  int rc = -1, ln = 1, rows = 0;
  double dur[MAX_POINTS];
  int n_dur = 0;
  if (!fgets(line, sizeof line, f) || (strcmp(line, want) != 0 && strcmp(line, want_old) != 0)) {
    fprintf(stderr, "anytime sweep: %s: line 1 is not the header this sweep writes:\n%s", path, want);
    goto out;
  }
  sw->n_pol = sw->n_cm = sw->n_rho = sw->repeats = sw->n_probe = 0;
  sw->capacity = -1;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t L = strlen(line);
    if (L && line[L - 1] == '\n') line[--L] = '\0';
    if (!L) continue;
    char *fld[CSV_COLS + 1];
    int nf = 0;
    for (char *p = line; nf < CSV_COLS + 1;) {
      fld[nf++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = '\0';
      p = c + 1;
    }
    if (nf != CSV_COLS && nf != CSV_COLS_OLD) {
      fprintf(stderr, "anytime sweep: %s:%d: %d fields, want %d (or %d, before the oracle beside "
              "each point)\n", path, ln, nf, CSV_COLS, CSV_COLS_OLD);
      goto out;
    }
    int r = atoi(fld[0]) - 1, pol = name_index(fld[1], all_policies, MAX_POL);
    int cm = name_index(fld[21], cm_names, MAX_CM);
    double rho = atof(fld[2]);
    if (r < 0 || r >= MAX_REP || pol < 0 || cm < 0 || !(rho > 0)) {
      fprintf(stderr, "anytime sweep: %s:%d: repeat 1..%d, a known policy and kind of client and "
                      "rho > 0 needed\n", path, ln, MAX_REP);
      goto out;
    }
    int pi = -1, ci = -1, k = -1;
    for (int i = 0; i < sw->n_pol; i++) pi = sw->pol[i] == pol ? i : pi;
    for (int i = 0; i < sw->n_cm; i++) ci = sw->cms[i] == cm ? i : ci;
    for (int i = 0; i < sw->n_rho; i++) k = fabs(sw->rhos[i] - rho) < 1e-9 ? i : k;
    if (pi < 0) sw->pol[pi = sw->n_pol++] = pol;
    if (ci < 0) sw->cms[ci = sw->n_cm++] = cm;
    if (k < 0) {
      if (sw->n_rho == MAX_RHO) {
        fprintf(stderr, "anytime sweep: %s:%d: more than %d loads\n", path, ln, MAX_RHO);
        goto out;
      }
      sw->rhos[k = sw->n_rho++] = rho;
    }
    if (r + 1 > sw->repeats) sw->repeats = r + 1;
    pt *q = &sw->pts[pi][cm][k][r];
    *q = (pt){.ok = true, .rate = atof(fld[3]), .sent = atof(fld[4]), .answered = atof(fld[5]),
              .rejected = atof(fld[6]), .errors = atof(fld[7]), .good = atof(fld[8]),
              .att = atof(fld[9]), .adm = atof(fld[10]), .accy = atof(fld[11]),
              .p50 = atof(fld[12]), .p95 = atof(fld[13]), .p99 = atof(fld[14]),
              .cost_rel = atof(fld[15]), .run_p50 = atof(fld[17]), .steal = atof(fld[19]),
              .probe = atof(fld[20]), .n_clients = atof(fld[22]), .offered = atof(fld[24]),
              .retries = atof(fld[25]), .logical = atof(fld[26]), .logical_ok = atof(fld[27]),
              .oracle = atof(fld[29])};
    bool beside_cols = nf == CSV_COLS;
    q->cheap_cap = beside_cols ? atof(fld[31]) : NAN;
    q->lg_cores = beside_cols ? atof(fld[32]) : NAN;
    q->lg_cores_cap = beside_cols ? atof(fld[33]) : NAN;
    q->oracle_host = beside_cols ? atof(fld[34]) : NAN;
    snprintf(q->mix, sizeof q->mix, "%s", fld[16]);
    q->top = mix_top(sw, q->mix, q->answered);
    double cap = atof(fld[18]);
    if (sw->capacity < 0) sw->capacity = cap;
    else if (fabs(cap - sw->capacity) > 0.05 * sw->capacity)
      fprintf(stderr, "anytime sweep: %s:%d: capacity %.1f, not the first row's %.1f (rows of "
                      "two sweeps?)\n", path, ln, cap, sw->capacity);
    sw->cheap_caps[r] = atof(fld[28]);
    if (*fld[23]) sw->think_ms = atof(fld[23]);
    if (sw->n_probe < MAX_POINTS) sw->probes[sw->n_probe++] = q->probe;
    if (cm == CM_POISSON && q->rate > 0 && n_dur < MAX_POINTS) dur[n_dur++] = q->sent / q->rate;
    rows++;
  }
  if (!rows) {
    fprintf(stderr, "anytime sweep: %s has no rows\n", path);
    goto out;
  }
  sw->probe0 = sw->probes[0];
  sw->duration = n_dur ? round(2 * med(dur, n_dur)) / 2 : NAN;
  sw->cheap_measured = true;
  snprintf(sw->cheap_how, sizeof sw->cheap_how, "as %s recorded it", path);
  rc = 0;
  fprintf(stderr, "sweep: read %d rows of %s: %d repeat(s), %d policies, %d kind(s) of client, "
                  "%d loads\n", rows, path, sw->repeats, sw->n_pol, sw->n_cm, sw->n_rho);
out:
  fclose(f);
  return rc;
}

/* ---- arguments ------------------------------------------------------------------------------ */

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
          "                     [--out-md FILE] [--plot FILE.png]\n\n"
          "Starts `anytime serve --config FILE` (default configs/serving.yaml) once per\n"
          "repeat and policy (--policies, default adaptive,accurate-only,none,limit,\n"
          "cheap-only; limit with --inflight-limit, default 512; cheap-only = the planner on\n"
          "a server holding only the cheapest frontier variant) and drives it in-process at each rho x C\n"
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
          "both capacities, print them as one JSON line on stdout, and stop. Writes results/load_sweep.csv (one\n"
          "row per repeat, policy, clients and rho, with the server's median Run time, the\n"
          "share of CPU the hypervisor gave to other tenants meanwhile, steal_pct, above\n"
          "2%% the sweep warns; probe_ms, a fixed piece of arithmetic timed just before\n"
          "the point; the sweep warns when it is 1.3x its value at the start; and the\n"
          "oracle), results/load_sweep.md (medians and ranges; scripts/readme-results.sh\n"
          "copies it into README.md) and docs/img/load_sweep.png (gnuplot).\n\n"
          "--from-csv FILE runs nothing: it reads the rows an earlier sweep wrote and\n"
          "writes the summary and the plot from them again (the configuration still names\n"
          "the variants; the deadline is --deadline-ms or the configuration's, as when\n"
          "the rows were measured; the duration per point is read off the rows).\n");
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

static int parse_args(int argc, char **argv, sweep *sw) {
  static const double def_rhos[] = {0.4, 0.8, 1.0, 1.3, 2, 3, 5}, quick_rhos[] = {0.4, 1.0, 3};
  bool set_rho = false, set_rep = false, set_dur = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick") || !strcmp(a, "--capacities-only")) {
      if (a[2] == 'q') sw->quick = true;
      else sw->capacities_only = true;
      continue;
    }
    if (!v) return fprintf(stderr, "anytime sweep: %s needs a value\n", a), AT_EXIT_USAGE;
    i++;
    if (!strcmp(a, "--config")) sw->cfg_path = v;
    else if (!strcmp(a, "--from-csv")) sw->from_csv = v;
    else if (!strcmp(a, "--out-csv")) sw->out_csv = v;
    else if (!strcmp(a, "--out-md")) sw->out_md = v;
    else if (!strcmp(a, "--plot")) sw->plot = v;
    else if (!strcmp(a, "--data")) sw->data_path = v;
    else if (!strcmp(a, "--rate-basis")) sw->basis = v;
    else if (!strcmp(a, "--repeats")) sw->repeats = atoi(v), set_rep = true;
    else if (!strcmp(a, "--seed")) sw->seed = atoi(v);
    else if (!strcmp(a, "--duration")) sw->duration = atof(v), set_dur = true;
    else if (!strcmp(a, "--deadline-ms")) sw->deadline = atof(v);
    else if (!strcmp(a, "--think-ms")) sw->think_ms = atof(v);
    else if (!strcmp(a, "--inflight-limit")) sw->inflight_limit = atoi(v);
    else if (!strcmp(a, "--server-cpus")) sw->server_cpus = v;
    else if (!strcmp(a, "--beside-from")) sw->adj_from = atof(v);
    else if (!strcmp(a, "--cheapest-capacity")) {
      if (!((sw->cheap_capacity = atof(v)) > 0))
        return fprintf(stderr, "anytime sweep: --cheapest-capacity needs requests per second > 0\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--capacity")) {
      if (!strcmp(v, "profile")) sw->capacity_from_profile = 1;
      else if (!((sw->capacity = atof(v)) > 0))
        return fprintf(stderr, "anytime sweep: --capacity needs requests per second > 0 or 'profile'\n"),
               AT_EXIT_USAGE;
    } else if (!strcmp(a, "--policies")) {
      if (parse_names(v, all_policies, MAX_POL, sw->pol, &sw->n_pol) != 0)
        return fprintf(stderr, "anytime sweep: --policies is a list of adaptive, accurate-only, "
                               "none, limit, cheap-only\n"), AT_EXIT_USAGE;
    } else if (!strcmp(a, "--clients-model")) {
      if (parse_names(v, cm_names, MAX_CM, sw->cms, &sw->n_cm) != 0)
        return fprintf(stderr, "anytime sweep: --clients-model is a list of poisson, "
                               "closed-retry\n"), AT_EXIT_USAGE;
    } else if (!strcmp(a, "--rhos")) {
      sw->n_rho = 0;
      set_rho = true;
      for (const char *p = v; p && *p && sw->n_rho < MAX_RHO; p = strchr(p, ','), p = p ? p + 1 : NULL)
        sw->rhos[sw->n_rho++] = atof(p);
    } else {
      fprintf(stderr, "anytime sweep: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  const double *rh = sw->quick ? quick_rhos : def_rhos;
  int nr = sw->quick ? 3 : 7;
  if (!set_rho) memcpy(sw->rhos, rh, sizeof(double) * (size_t)nr), sw->n_rho = nr;
  if (!set_rep) sw->repeats = sw->quick ? 1 : 3;
  if (!set_dur) sw->duration = sw->quick ? 3 : 8;
  bool bad_rho = false;
  for (int k = 0; k < sw->n_rho; k++) bad_rho |= !(sw->rhos[k] > 0);
  if (sw->server_cpus &&
      (!*sw->server_cpus || strspn(sw->server_cpus, "0123456789,-") != strlen(sw->server_cpus))) {
    fprintf(stderr, "anytime sweep: --server-cpus takes a CPU list as taskset -c does "
                    "(e.g. 0,1 or 2-3), not '%s'\n", sw->server_cpus);
    return AT_EXIT_USAGE;
  }
  if (sw->repeats < 1 || sw->repeats > MAX_REP || !(sw->duration >= 1) || sw->n_rho < 1 ||
      bad_rho || !(sw->think_ms > 0) || sw->inflight_limit < 1) {
    fprintf(stderr, "anytime sweep: need 1 <= --repeats <= %d, --duration >= 1, rhos > 0, "
                    "--think-ms > 0 and --inflight-limit >= 1\n", MAX_REP);
    return AT_EXIT_USAGE;
  }
  return AT_EXIT_OK;
}

/* Load the configuration; find the classify model, its most accurate
 * variant and its cheapest frontier variant (anytime/plan.h's frontier on
 * accuracy and cost, cost = the configured one or s(1), as the server
 * does). Returns AT_EXIT_OK or an exit code. */
static int load_config(sweep *sw) {
  sw->cfg = at_server_config_default();
  at_status st = at_server_config_load(sw->cfg_path, &sw->cfg);
  if (st != AT_OK) return cli_report("sweep", st);
  if (sw->deadline <= 0) sw->deadline = sw->cfg.deadline_ms;
  for (int m = 0; m < sw->cfg.n_models && !sw->mc; m++)
    if (!strcmp(sw->cfg.models[m].task, "classify")) sw->mc = &sw->cfg.models[m];
  if (!sw->mc)
    return fprintf(stderr, "anytime sweep: %s has no classify model\n", sw->cfg_path), AT_EXIT_FAIL;
  int n = sw->mc->n_variants;
  double acc[AT_SERVER_MAX_VARIANTS], cost[AT_SERVER_MAX_VARIANTS];
  bool front[AT_SERVER_MAX_VARIANTS];
  for (int v = 0; v < n; v++) {
    const at_server_variant_config *vc = &sw->mc->variants[v];
    acc[v] = vc->accuracy;
    cost[v] = vc->cost > 0 ? vc->cost : (s1_of(vc) > 0 ? s1_of(vc) : 1);
  }
  at_plan_frontier(acc, cost, (size_t)n, front);
  sw->best_acc = -1;
  sw->acc_v = sw->cheap_v = -1;
  for (int v = 0; v < n; v++) {
    if (!front[v]) continue;
    if (acc[v] > sw->best_acc || (acc[v] == sw->best_acc && cost[v] < cost[sw->acc_v]))
      sw->best_acc = acc[v], sw->acc_v = v;
    if (sw->cheap_v < 0 || cost[v] < cost[sw->cheap_v]) sw->cheap_v = v;
  }
  if (sw->acc_v < 0) return fprintf(stderr, "anytime sweep: no frontier variant\n"), AT_EXIT_FAIL;
  sw->acc_cost = sw->mc->variants[sw->acc_v].cost > 0 ? sw->mc->variants[sw->acc_v].cost : 1;
  return AT_EXIT_OK;
}

int at_cli_sweep(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return usage(stdout), AT_EXIT_OK;
  static sweep sw;
  memset(&sw, 0, sizeof sw);
  sw.cfg_path = "configs/serving.yaml", sw.out_csv = "results/load_sweep.csv";
  sw.out_md = "results/load_sweep.md", sw.plot = "docs/img/load_sweep.png", sw.basis = "offered";
  sw.deadline = -1, sw.capacity = -1, sw.cheap_capacity = -1, sw.seed = 1, sw.think_ms = 50;
  sw.inflight_limit = 512, sw.n_pol = MAX_POL, sw.n_cm = MAX_CM;
  sw.adj_from = 1.0, sw.cheap_lg_cores = NAN;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  sw.ncpu = ncpu > 0 ? (int)ncpu : 1;
  for (int i = 0; i < MAX_POL; i++) sw.pol[i] = i;
  for (int i = 0; i < MAX_CM; i++) sw.cms[i] = i;
  int rc = parse_args(argc, argv, &sw);
  if (rc != AT_EXIT_OK) return rc;
  ssize_t sl = readlink("/proc/self/exe", sw.self, sizeof sw.self - 1);
  if (sl <= 0) return fprintf(stderr, "anytime sweep: cannot find my own executable\n"), AT_EXIT_FAIL;
  sw.self[sl] = '\0';
  if ((rc = load_config(&sw)) != AT_EXIT_OK) return rc;
  if (sw.from_csv) { /* summarise rows already measured: no server, no load */
    snprintf(sw.tmpdir, sizeof sw.tmpdir, "/tmp/anytime-sweep-XXXXXX");
    if (!mkdtemp(sw.tmpdir))
      return fprintf(stderr, "anytime sweep: mkdtemp: %s\n", strerror(errno)), AT_EXIT_FAIL;
    if (read_rows(&sw, sw.from_csv) != 0) return AT_EXIT_FAIL;
    write_summary(&sw);
    bool plotted = write_plot(&sw);
    fprintf(stderr, "sweep: wrote %s%s%s\n", sw.out_md, plotted ? ", " : "",
            plotted ? sw.plot : " (no plot: see above)");
    return plotted ? AT_EXIT_OK : AT_EXIT_FAIL;
  }
  char err[512] = "", def[4096];
  const char *dp = sw.data_path ? sw.data_path : lg_default_data_path(def, sizeof def);
  if (lg_data_load(dp, &sw.data, err, sizeof err) != 0)
    return fprintf(stderr, "anytime sweep: %s\n", err), AT_EXIT_FAIL;
  snprintf(sw.tmpdir, sizeof sw.tmpdir, "/tmp/anytime-sweep-XXXXXX");
  if (!mkdtemp(sw.tmpdir)) return fprintf(stderr, "anytime sweep: mkdtemp: %s\n", strerror(errno)), AT_EXIT_FAIL;
  snprintf(sw.portfile, sizeof sw.portfile, "%s/port", sw.tmpdir);
  snprintf(sw.logf, sizeof sw.logf, "%s/server.log", sw.tmpdir);
  snprintf(sw.dls, sizeof sw.dls, "%g", sw.deadline);
  signal(SIGPIPE, SIG_IGN);
  sw.probe0 = host_probe_ms(); /* the host's speed as the rates are set */
  fprintf(stderr, "sweep: host probe %.2f ms\n", sw.probe0);
  if (find_capacities(&sw) != 0) return lg_data_free(&sw.data), AT_EXIT_FAIL;
  if (sw.capacities_only) { /* for scripts (bench/overload.sh): one JSON line */
    printf("{\"accurate_variant\":\"%s\",\"capacity_rps\":%.1f,\"cheapest_variant\":\"%s\","
           "\"cheapest_capacity_rps\":%.1f,\"workers\":%d,\"deadline_ms\":%g}\n",
           sw.mc->variants[sw.acc_v].name, sw.capacity, sw.mc->variants[sw.cheap_v].name,
           sw.cheap_capacity, sw.cfg.workers, sw.deadline);
    lg_data_free(&sw.data);
    return AT_EXIT_OK;
  }
  mkdir("results", 0755);
  FILE *csv = fopen(sw.out_csv, "w");
  if (!csv) return fprintf(stderr, "anytime sweep: cannot write %s\n", sw.out_csv), AT_EXIT_FAIL;
  csv_header(csv, false);
  run_all(&sw, csv);
  fclose(csv);
  write_summary(&sw);
  bool plotted = write_plot(&sw);
  lg_data_free(&sw.data);
  fprintf(stderr, "sweep: wrote %s, %s%s%s%s\n", sw.out_csv, sw.out_md, plotted ? ", " : "",
          plotted ? sw.plot : " (no plot: see above)", sw.failures ? " (with failures: see above)" : "");
  return sw.failures ? AT_EXIT_FAIL : AT_EXIT_OK;
}
