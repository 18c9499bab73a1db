/* src/tools/sweep_host.c — the sweep's hands on the host: forking
 * `anytime serve` for each policy and capacity measurement and stopping it,
 * the load generator's settings for one server, and the readings the sweep
 * records beside every point — the hypervisor's steal from /proc/stat, this
 * process's CPU time (the load generator runs in-process), and a fixed
 * piece of arithmetic that times the host's own speed. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "anytime/clock.h"
#include "anytime/profile.h"
#include "tools/sweep_internal.h"

pid_t sweep_start_server(const sweep *sw, const char *cfg, const char *policy, int *port) {
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
    const char *rest[] = {sw->self,       "serve",      "--config",      cfg,
                          "--policy",     policy,       "--port",        "0",
                          "--port-file",  sw->portfile, "--deadline-ms", sw->dls,
                          "--rate-basis", sw->basis,    "--no-cache"};
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

int sweep_stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

lg_config sweep_lg_cfg(int port, double deadline_ms, int seed, double drain_s) {
  lg_config c = {.deadline_ms = deadline_ms,
                 .max_conns = 512,
                 .initial_conns = 4,
                 .late_s = 0.001,
                 .drain_s = drain_s,
                 .seed = (uint64_t)seed};
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
int sweep_cpu_ticks(unsigned long long *total, unsigned long long *steal) {
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
double sweep_now_s(void) {
  return (double)at_now_ns() / 1e9;
}

/* CPU seconds this process (the load generator: it runs in-process) has
 * used so far, user + system, all threads. */
double sweep_self_cpu_s(void) {
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
double sweep_host_probe_ms(void) {
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
