/* src/cli/cmd_serve.c — `anytime serve`: load a configuration (the built-in
 * default family when none is given), start the server, and run until
 * SIGINT/SIGTERM, then stop accepting, answer everything admitted and exit 0.
 * Signals are blocked before any thread starts and taken with sigwait() on
 * the main thread, so no handler runs inside library code. This file reads
 * the arguments and builds the configuration; the signal loop and the
 * start-up announcement are tools/serve_loop.c's. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/model.h"
#include "anytime/server.h"
#include "cli/cli.h"
#include "tools/serve_loop.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime serve [--config FILE | --model MODEL [--variant NAME] [--name NAME]]\n"
          "                     [--host ADDR] [--port N] [--workers N]\n"
          "                     [--policy adaptive|accurate-only|none|limit] [--inflight-limit N]\n"
          "                     [--deadline-ms MS]\n"
          "                     [--rate-basis offered|admitted] [--max-batch N] [--max-delay-us US] [--port-file PATH]\n"
          "                     [--cache-dir DIR | --no-cache]\n"
          "                     [--api-key KEY]... [--api-key-file FILE] [--tls-cert PEM --tls-key PEM]\n"
          "                     [--access-log FILE] [--grpc-port PORT] [--set SECTION.KEY=VALUE]...\n\n"
          "Serves text models over HTTP: KServe V2 (/v2/...), OpenAI-compatible\n"
          "/v1/embeddings and /v1/models, TEI-style /embed /predict /tokenize /info\n"
          "/health, and Prometheus /metrics. See docs/api.md.\n"
          "A `generator:` section in the config (the default one has it), or --model\n"
          "with a causal language model, adds the generation lane: POST /v1/completions\n"
          "(OpenAI-compatible, `stream: true` for server-sent events) on its own thread.\n\n"
          "With no --config it serves the default model family from\n"
          "configs/serving.yaml (in the current directory, else anytime's source tree).\n"
          "--model serves one model by name without a config file: a local directory or\n"
          "a Hugging Face repo id (org/name[@revision]) from the HF cache (see `anytime\n"
          "ls`); its default variant (or --variant) is timed at start-up for the planner.\n"
          "--name sets the name clients use for it (default: the directory's name; KServe\n"
          "passes the InferenceService's, see deploy/kserve/).\n"
          "Optimised graphs are kept in the compiled-artifact cache (--cache-dir, else\n"
          "$ANYTIME_CACHE_DIR, $XDG_CACHE_HOME/anytime, ~/.cache/anytime); --no-cache\n"
          "turns it off.\n"
          "Flags override the file, in the order given. --set SECTION.KEY=VALUE sets any\n"
          "key of docs/configuration.md's server, engine, batching, planner and\n"
          "generator sections (e.g. --set planner.wait_quantile=0.9); these flags are\n"
          "the same settings by other names, with the same ranges and messages:\n"
          "  --host server.host, --port server.port, --grpc-port server.grpc_port,\n"
          "  --workers engine.workers, --max-batch batching.max_batch_size,\n"
          "  --max-delay-us batching.max_queue_delay_us, --policy planner.policy,\n"
          "  --rate-basis planner.rate_basis, --inflight-limit planner.inflight_limit,\n"
          "  --deadline-ms planner.deadline_ms (also raising planner.max_deadline_ms\n"
          "  to it), --api-key-file server.api_key_file, --tls-cert server.tls_cert,\n"
          "  --tls-key server.tls_key, --access-log server.access_log.\n"
          "--port 0 picks a free port; --port-file writes the bound port to PATH once\n"
          "the server is ready (for scripts).\n"
          "Access: with an API key (--api-key, repeatable; $ANYTIME_API_KEY; or\n"
          "--api-key-file / server.api_key_file, one key per line) every route but\n"
          "/health, /v2/health/live and /v2/health/ready needs \"Authorization: Bearer\n"
          "KEY\" (else 401). Keys are 8-512 printable characters. --tls-cert/--tls-key\n"
          "(server.tls_cert/tls_key) serve HTTPS. Binding a non-loopback --host without\n"
          "a key logs a loud warning. See docs/deployment.md.\n"
          "--access-log FILE (server.access_log) appends one JSON line per answered\n"
          "request; SIGHUP reopens it (for logrotate). Every answer carries\n"
          "x-request-id: the request's own, else one made here.\n"
          "Admission policies (--policy, or planner.policy in the config):\n"
          "  adaptive       (default) admit while the work already queued can finish\n"
          "                 within the request's deadline; choose the most accurate\n"
          "                 variant that carries the demand, else the cheapest that fits;\n"
          "                 refuse the excess at once with 429 + Retry-After.\n"
          "  accurate-only  the same admission rule on the most accurate variant only.\n"
          "  none           no admission control: everything to the most accurate\n"
          "                 variant, never refused (what most servers do by default).\n"
          "  limit          the most accurate variant while the texts in flight, this\n"
          "                 request's included, stay within --inflight-limit (default\n"
          "                 512, planner.inflight_limit), else 429 (like TEI's\n"
          "                 max_concurrent_requests).\n"
          "A request of N texts counts as N; a refusal adds nothing to the load.\n"
          "SIGINT/SIGTERM: stop accepting, finish every admitted request, exit 0.\n");
}

/* Flags that are a setting of docs/configuration.md by another name: they
 * go through at_server_config_set like --set, so each has the table's
 * type, range and message, and the file's value stands unless the flag is
 * given. */
static const struct {
  const char *flag, *key;
} aliases[] = {
    {"--host", "server.host"},
    {"--port", "server.port"},
    {"--grpc-port", "server.grpc_port"},
    {"--workers", "engine.workers"},
    {"--max-batch", "batching.max_batch_size"},
    {"--max-delay-us", "batching.max_queue_delay_us"},
    {"--policy", "planner.policy"},
    {"--rate-basis", "planner.rate_basis"},
    {"--inflight-limit", "planner.inflight_limit"},
    {"--deadline-ms", "planner.deadline_ms"},
    {"--api-key-file", "server.api_key_file"},
    {"--tls-cert", "server.tls_cert"},
    {"--tls-key", "server.tls_key"},
    {"--access-log", "server.access_log"},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])
#define MAX_SETS 128

/* The command line, as given (NULL: not given). */
typedef struct serve_opts {
  const char *config, *port_file, *model, *variant, *cache_dir;
  const char *keys[AT_SERVER_MAX_API_KEYS];
  const char *served_name;
  int n_keys;
  bool no_cache;
  /* settings in command-line order: set_key[i] is an alias's key with
   * set_val[i] its value, or NULL with set_val[i] a --set KEY=VALUE */
  const char *set_key[MAX_SETS], *set_val[MAX_SETS];
  int n_sets;
} serve_opts;

/* Returns -1 when the arguments are fine, else the exit code. */
static int parse_args(int argc, char **argv, serve_opts *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t al = 0;
    while (al < N_ALIASES && strcmp(a, aliases[al].flag)) al++;
    if (!strcmp(a, "--no-cache")) {
      o->no_cache = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "anytime serve: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
    i++;
    if (al < N_ALIASES || !strcmp(a, "--set")) {
      if (o->n_sets == MAX_SETS) {
        fprintf(stderr, "anytime serve: at most %d settings on the command line\n", MAX_SETS);
        return AT_EXIT_USAGE;
      }
      o->set_key[o->n_sets] = al < N_ALIASES ? aliases[al].key : NULL;
      o->set_val[o->n_sets++] = v;
    } else if (!strcmp(a, "--config")) o->config = v;
    else if (!strcmp(a, "--port-file")) o->port_file = v;
    else if (!strcmp(a, "--model")) o->model = v;
    else if (!strcmp(a, "--variant")) o->variant = v;
    else if (!strcmp(a, "--cache-dir")) o->cache_dir = v;
    else if (!strcmp(a, "--name")) o->served_name = v;
    else if (!strcmp(a, "--api-key")) {
      if (o->n_keys == AT_SERVER_MAX_API_KEYS) {
        fprintf(stderr, "anytime serve: at most %d --api-key (use --api-key-file for more)\n",
                AT_SERVER_MAX_API_KEYS);
        return AT_EXIT_USAGE;
      }
      o->keys[o->n_keys++] = v;
    } else {
      fprintf(stderr, "anytime serve: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  if (o->config && o->model) {
    fprintf(stderr, "anytime serve: give --config or --model, not both\n");
    return AT_EXIT_USAGE;
  }
  if (o->served_name && (!o->model || !at_server_name_valid(o->served_name))) {
    fprintf(stderr, "anytime serve: --name goes with --model and needs 1..63 of [A-Za-z0-9._:-], "
                    "not starting with '.' or '-'\n");
    return AT_EXIT_USAGE;
  }
  return -1;
}

/* The command line's settings over cfg, in order. --deadline-ms also
 * raises planner.max_deadline_ms to its value when that is below it. */
static int apply_settings(const serve_opts *o, at_server_config *cfg) {
  for (int i = 0; i < o->n_sets; i++) {
    const char *k = o->set_key[i], *v = o->set_val[i];
    size_t cap = (k ? strlen(k) : 0) + strlen(v) + 2;
    char *a = malloc(cap);
    if (!a) return tools_report("serve", AT_ERR_NOMEM);
    if (k) snprintf(a, cap, "%s=%s", k, v);
    else snprintf(a, cap, "%s", v);
    at_status st = AT_OK;
    char *end = NULL;
    double d = k && !strcmp(k, "planner.deadline_ms") ? strtod(v, &end) : 0;
    if (d > cfg->max_deadline_ms && end && !*end) {
      char m[96];
      snprintf(m, sizeof m, "planner.max_deadline_ms=%s", v);
      st = at_server_config_set(cfg, m);
    }
    if (st == AT_OK) st = at_server_config_set(cfg, a);
    free(a);
    if (st != AT_OK) {
      fprintf(stderr, "anytime serve: %s\n", at_last_error());
      return AT_EXIT_USAGE;
    }
  }
  return -1;
}

/* The configuration: a --model's, the --config file's or the default file,
 * then the flags over it. *label names where it came from. Returns -1 or
 * the exit code. */
static int build_config(const serve_opts *o, at_server_config *cfg, char *path, size_t cap,
                        const char **label) {
  at_status st;
  *cfg = at_server_config_default();
  if (o->model) {
    if ((st = cli_config_from_model(o->model, o->variant, false, cfg)) != AT_OK)
      return tools_report("serve", st);
    if (o->served_name && cfg->n_models == 1)
      snprintf(cfg->models[0].name, sizeof cfg->models[0].name, "%s", o->served_name);
    else if (o->served_name)
      snprintf(cfg->generator.name, sizeof cfg->generator.name, "%s", o->served_name);
    *label = o->model;
  } else {
    *label = o->config;
    if (!*label) {
      if (at_server_default_config_path(path, cap) != AT_OK)
        return tools_report("serve", AT_ERR_NOT_FOUND);
      *label = path;
    }
    if ((st = at_server_config_load(*label, cfg)) != AT_OK) return tools_report("serve", st);
  }
  if (!o->no_cache && at_artifact_cache_dir(o->cache_dir, cfg->artifact_cache_dir,
                                            sizeof cfg->artifact_cache_dir) != AT_OK)
    cfg->artifact_cache_dir[0] = '\0';
  int rc = apply_settings(o, cfg);
  if (rc >= 0) return rc;
  /* keys: the flags, else $ANYTIME_API_KEY, plus the config's file */
  const char *env_key = getenv("ANYTIME_API_KEY");
  const char *const *keys = o->keys;
  int n_keys = o->n_keys;
  if (n_keys == 0 && env_key && *env_key) keys = &env_key, n_keys = 1;
  for (int k = 0; k < n_keys; k++) {
    if (strlen(keys[k]) >= sizeof cfg->api_keys[0]) {
      fprintf(stderr, "anytime serve: an API key is longer than 512 characters\n");
      return AT_EXIT_USAGE;
    }
    snprintf(cfg->api_keys[cfg->n_api_keys++], sizeof cfg->api_keys[0], "%s", keys[k]);
  }
  return -1;
}

/* Start, announce, wait for a signal (SIGHUP reopens the access log),
 * drain, stop. */
static int run_server(const at_server_config *cfg, const char *label, const char *port_file) {
  sigset_t set;
  serve_loop_block_signals(&set);
  at_server *srv = NULL;
  at_status st = at_server_start(cfg, &srv);
  if (st != AT_OK) return tools_report("serve", st);
  serve_loop_announce(cfg, label, srv, port_file);
  serve_loop_wait(srv, &set);
  return AT_EXIT_OK;
}

int at_cli_serve(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  serve_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0) return rc;
  static at_server_config cfg; /* large: off the stack */
  char path[4096];
  const char *label = NULL;
  if ((rc = build_config(&o, &cfg, path, sizeof path, &label)) >= 0) return rc;
  return run_server(&cfg, label, o.port_file);
}
