/* src/cli/cmd_serve.c — `anytime serve`: load a configuration (the built-in
 * default family when none is given), start the server, and run until
 * SIGINT/SIGTERM, then stop accepting, answer everything admitted and exit 0.
 * Signals are blocked before any thread starts and taken with sigwait() on
 * the main thread, so no handler runs inside library code. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime serve [--config FILE] [--host ADDR] [--port N] [--workers N]\n"
          "                     [--policy adaptive|accurate-only] [--deadline-ms MS]\n"
          "                     [--max-batch N] [--max-delay-us US] [--port-file PATH]\n\n"
          "Serves text models over HTTP: KServe V2 (/v2/...), OpenAI-compatible\n"
          "/v1/embeddings and /v1/models, TEI-style /embed /predict /tokenize /info\n"
          "/health, and Prometheus /metrics. See docs/api.md.\n\n"
          "With no --config it serves the default model family from\n"
          "configs/serving.yaml (in the current directory, else anytime's source tree).\n"
          "Flags override the file. --port 0 picks a free port; --port-file writes the\n"
          "bound port to PATH once the server is ready (for scripts).\n"
          "SIGINT/SIGTERM: stop accepting, finish every admitted request, exit 0.\n");
}

static int num_arg(const char *flag, const char *v, long lo, long hi, long *out) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "anytime serve: %s needs an integer in %ld..%ld\n", flag, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

int at_cli_serve(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *config = NULL, *host = NULL, *policy = NULL, *port_file = NULL;
  long port = -1, workers = -1, max_batch = -1, max_delay = -1;
  double deadline = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (!strcmp(a, "--config") && v) config = v, i++;
    else if (!strcmp(a, "--host") && v) host = v, i++;
    else if (!strcmp(a, "--policy") && v) policy = v, i++;
    else if (!strcmp(a, "--port-file") && v) port_file = v, i++;
    else if (!strcmp(a, "--port")) rc = num_arg(a, v, 0, 65535, &port), i++;
    else if (!strcmp(a, "--workers")) rc = num_arg(a, v, 1, 1024, &workers), i++;
    else if (!strcmp(a, "--max-batch")) rc = num_arg(a, v, 1, 1024, &max_batch), i++;
    else if (!strcmp(a, "--max-delay-us")) rc = num_arg(a, v, 0, 10000000, &max_delay), i++;
    else if (!strcmp(a, "--deadline-ms") && v) {
      char *end;
      deadline = strtod(v, &end);
      if (*end || !(deadline > 0)) rc = -1, fprintf(stderr, "anytime serve: --deadline-ms needs a positive number\n");
      i++;
    } else {
      fprintf(stderr, "anytime serve: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
    if (rc) return AT_EXIT_USAGE;
  }
  at_server_config cfg = at_server_config_default();
  char path[4096];
  if (!config) {
    if (at_server_default_config_path(path, sizeof path) != AT_OK) return cli_report("serve", AT_ERR_NOT_FOUND);
    config = path;
  }
  at_status st = at_server_config_load(config, &cfg);
  if (st != AT_OK) return cli_report("serve", st);
  if (host) snprintf(cfg.host, sizeof cfg.host, "%s", host);
  if (port >= 0) cfg.port = (int)port;
  if (workers > 0) cfg.workers = (int)workers;
  if (max_batch > 0) cfg.max_batch_size = (int)max_batch;
  if (max_delay >= 0) cfg.max_queue_delay_us = (int)max_delay;
  if (deadline > 0) {
    cfg.deadline_ms = deadline;
    if (cfg.max_deadline_ms < deadline) cfg.max_deadline_ms = deadline;
  }
  if (policy) {
    if (strcmp(policy, "adaptive") && strcmp(policy, "accurate-only")) {
      fprintf(stderr, "anytime serve: --policy must be adaptive or accurate-only\n");
      return AT_EXIT_USAGE;
    }
    snprintf(cfg.policy, sizeof cfg.policy, "%s", policy);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  at_server *srv = NULL;
  st = at_server_start(&cfg, &srv);
  if (st != AT_OK) return cli_report("serve", st);
  fprintf(stderr, "anytime: serving %d model(s) from %s on http://%s:%d (policy %s, %d workers)\n",
          cfg.n_models, config, cfg.host, at_server_port(srv), cfg.policy, cfg.workers);
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (f) {
      fprintf(f, "%d\n", at_server_port(srv));
      fclose(f);
    }
  }
  int sig = 0;
  sigwait(&set, &sig);
  fprintf(stderr, "anytime: %s received: finishing admitted requests\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM");
  at_server_stop(srv);
  fprintf(stderr, "anytime: stopped\n");
  return AT_EXIT_OK;
}
