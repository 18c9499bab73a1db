/* src/cli/cmd_loadgen.c — `anytime loadgen`: a load generator for a
 * TEI-style /predict route, in two modes. Open loop (--rate): Poisson sends
 * scheduled from the seed alone, whatever the server does. Closed loop
 * (--clients): N clients that each send, wait for the answer, think, and
 * come back after a 429 as --retry says (the clients that kept the old
 * planner shut; issue #14), optionally after a burst of retry-at-once
 * clients (--burst-s). Each attempt is scored against the CSV label and
 * the deadline; a summary (text or --json) and optionally a per-attempt CSV
 * come out. This file reads the arguments; the work is in the tools
 * library: loadgen_proto.c (schedule, CSV, HTTP parsing, retry rules,
 * summary), loadgen_run.c (the epoll clients) and loadgen_report.c
 * (choosing the loop, the summary's text and JSON, the CSV). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/loadgen.h"
#include "tools/loadgen_report.h"

static void help(void) {
  printf(
      "usage: anytime loadgen --url URL (--rate R | --rho X --capacity C | --clients N)\n"
      "                       [options]\n\n"
      "Open loop (--rate, or --rho with --capacity): Poisson load against a TEI-style\n"
      "/predict route: request i is sent at its scheduled time (exponential gaps drawn\n"
      "from --seed) whether or not earlier ones were answered.\n"
      "Closed loop (--clients N): N clients, one keep-alive connection each; each\n"
      "sends, waits for the answer, thinks --think-ms (exponential, mean Z; 0 = back\n"
      "to back), and sends its next text; after a 429 it does what --retry says.\n"
      "Body {\"inputs\": TEXT}; 200 answers are scored against the CSV label (top label\n"
      "of [{\"label\",\"score\"},...]), 429 counts as rejected.\n\n"
      "options:\n"
      "  --url URL            http://HOST:PORT/PATH (HOST numeric IPv4 or localhost)\n"
      "  --rate R             requests per second (open loop)\n"
      "  --rho X --capacity C rate = X * C (C in requests per second)\n"
      "  --clients N          closed-loop clients (instead of a rate)\n"
      "  --think-ms Z         closed loop: mean think time between requests (default 0)\n"
      "  --retry MODE         closed loop, on a 429: none (give up; default), now (resend\n"
      "                       at once), after (wait the server's retry-after-ms, else\n"
      "                       Retry-After, else 1 s), backoff (the OpenAI SDK: at most 2\n"
      "                       retries; the server's advice when 0 < it < 60 s, else\n"
      "                       min(0.5 * 2^k, 8) * (1 - 0.25 U) s for retry k = 0, 1)\n"
      "  --burst-s S --burst-clients M\n"
      "                       closed loop: M clients send back to back and resend every\n"
      "                       429 at once for the first S seconds; the N clients run\n"
      "                       from S to --duration (the \"burst, then c = N\" scenario)\n"
      "  --duration S         seconds of sending (default 10; with a burst, the whole run)\n"
      "  --seed N             schedule and text choice (default 1)\n"
      "  --data FILE.csv      label,text rows (default $ANYTIME_DATA_DIR or\n"
      "                       ~/.cache/anytime/data, then pang-lee/test.csv)\n"
      "  --text TEXT          send this one text instead (no label: accuracy n/a)\n"
      "  --deadline-ms D      sent as x-deadline-ms; answers later than D are not goodput\n"
      "  --client-ids P       closed loop: client k sends x-client-id: P-k, so the server\n"
      "                       knows each client (its return slot is kept for it)\n"
      "  --completions N      POST /v1/completions bodies instead: {\"prompt\": --text,\n"
      "                       \"max_tokens\": N, \"temperature\": T} (needs --text)\n"
      "  --temperature T      with --completions (default 0.7)\n"
      "  --ttft-ms A --tpot-ms B\n"
      "                       with --completions: the x-ttft-ms / x-tpot-ms budgets; give\n"
      "                       --deadline-ms A + N x B to score goodput by the same budget\n"
      "  --out FILE.csv       one row per attempt\n"
      "  --json               summary as one JSON object\n"
      "  --connections N      open loop: connection cap (default 512); more than this in\n"
      "                       flight and sends wait: counted as late sends\n"
      "  --late-ms L          a send more than L ms after its time is late (default 1)\n"
      "  --drain-s S          wait this long for answers after the last send (default 10)\n\n"
      "Every attempt is a record. Latency is measured from each attempt's scheduled\n"
      "time (open loop: the schedule; closed loop: when the client's think time or\n"
      "retry delay ended). Goodput = attempts answered within the deadline per second\n"
      "of --duration; attainment = those / sent; admitted share = (sent - 429s) /\n"
      "sent; percentiles are of 200 answers (nearest rank). Logical requests (a first\n"
      "attempt and its retries): how many finally got a 200, and how many within the\n"
      "deadline counted from the first attempt. With a burst, after_burst is the share\n"
      "of 200s among the N clients' attempts from one second after the burst on.\n"
      "answered_rps = answers per second from the first send to the last answer: with\n"
      "more clients (or --connections, --late-ms 1000000 and a rate it cannot meet)\n"
      "than the server has workers, the server's throughput when saturated.\n");
}

/* Everything the command line says. */
typedef struct opts {
  const char *url, *data_path, *text, *out_path, *client_ids;
  double rate, rho, capacity, duration, seed, deadline_ms;
  double conns, late_ms, drain_s;
  double clients, think_ms, burst_s, burst_clients;
  double completions, temperature, ttft_ms, tpot_ms;
  lg_retry retry;
  bool json;
} opts;

static int num_arg(const char *opt, const char *v, double lo, double *out) {
  char *e;
  errno = 0;
  double x = v ? strtod(v, &e) : NAN;
  if (!v || errno || *e || !(x >= lo) || !isfinite(x)) {
    fprintf(stderr, "anytime loadgen: %s needs a number >= %g\n", opt, lo);
    return -1;
  }
  *out = x;
  return 0;
}

/* One option with its value. Returns 0, or -1 (message printed). */
static int parse_one(opts *o, const char *a, const char *v) {
  if (strcmp(a, "--url") == 0) o->url = v;
  else if (strcmp(a, "--data") == 0) o->data_path = v;
  else if (strcmp(a, "--text") == 0) o->text = v;
  else if (strcmp(a, "--out") == 0) o->out_path = v;
  else if (strcmp(a, "--client-ids") == 0) o->client_ids = v;
  else if (strcmp(a, "--rate") == 0) return num_arg(a, v, 1e-9, &o->rate);
  else if (strcmp(a, "--rho") == 0) return num_arg(a, v, 1e-9, &o->rho);
  else if (strcmp(a, "--capacity") == 0) return num_arg(a, v, 1e-9, &o->capacity);
  else if (strcmp(a, "--duration") == 0) return num_arg(a, v, 1e-3, &o->duration);
  else if (strcmp(a, "--seed") == 0) return num_arg(a, v, 0, &o->seed);
  else if (strcmp(a, "--deadline-ms") == 0) return num_arg(a, v, 1e-6, &o->deadline_ms);
  else if (strcmp(a, "--connections") == 0) return num_arg(a, v, 1, &o->conns);
  else if (strcmp(a, "--late-ms") == 0) return num_arg(a, v, 0, &o->late_ms);
  else if (strcmp(a, "--drain-s") == 0) return num_arg(a, v, 0.001, &o->drain_s);
  else if (strcmp(a, "--clients") == 0) return num_arg(a, v, 1, &o->clients);
  else if (strcmp(a, "--think-ms") == 0) return num_arg(a, v, 0, &o->think_ms);
  else if (strcmp(a, "--burst-s") == 0) return num_arg(a, v, 1e-3, &o->burst_s);
  else if (strcmp(a, "--burst-clients") == 0) return num_arg(a, v, 1, &o->burst_clients);
  else if (strcmp(a, "--completions") == 0) return num_arg(a, v, 1, &o->completions);
  else if (strcmp(a, "--temperature") == 0) return num_arg(a, v, 0, &o->temperature);
  else if (strcmp(a, "--ttft-ms") == 0) return num_arg(a, v, 1e-6, &o->ttft_ms);
  else if (strcmp(a, "--tpot-ms") == 0) return num_arg(a, v, 1e-6, &o->tpot_ms);
  else if (strcmp(a, "--retry") == 0) {
    if (!v || lg_retry_parse(v, &o->retry) != 0) {
      fprintf(stderr, "anytime loadgen: --retry must be none, now, after or backoff\n");
      return -1;
    }
  } else {
    fprintf(stderr, "anytime loadgen: unknown option '%s' (see --help)\n", a);
    return -1;
  }
  return 0;
}

/* Parse and check argv. Returns AT_EXIT_OK or AT_EXIT_USAGE. */
static int parse_args(int argc, char **argv, opts *o) {
  *o = (opts){.rate = -1, .rho = -1, .capacity = -1, .duration = 10, .seed = 1,
              .conns = 512, .late_ms = 1, .drain_s = 10, .retry = LG_RETRY_NONE,
              .temperature = -1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      o->json = true;
      continue;
    }
    if (parse_one(o, a, v) != 0) return AT_EXIT_USAGE;
    if (!v) {
      fprintf(stderr, "anytime loadgen: %s needs a value\n", a);
      return AT_EXIT_USAGE;
    }
    i++;
  }
  if (!o->url) {
    fprintf(stderr, "anytime loadgen: --url is required\n");
    return AT_EXIT_USAGE;
  }
  bool closed = o->clients > 0;
  if (closed ? (o->rate > 0 || o->rho > 0)
             : ((o->rate > 0) == (o->rho > 0) || (o->rho > 0) != (o->capacity > 0))) {
    fprintf(stderr, "anytime loadgen: give --rate, or --rho with --capacity, or --clients\n");
    return AT_EXIT_USAGE;
  }
  if (!closed && (o->burst_s > 0 || o->burst_clients > 0 || o->think_ms > 0 ||
                  o->retry != LG_RETRY_NONE)) {
    fprintf(stderr, "anytime loadgen: --think-ms, --retry and --burst-* need --clients\n");
    return AT_EXIT_USAGE;
  }
  if ((o->burst_s > 0) != (o->burst_clients > 0) ||
      (o->burst_s > 0 && !(o->burst_s < o->duration))) {
    fprintf(stderr, "anytime loadgen: --burst-s and --burst-clients go together, and the "
                    "burst must be shorter than --duration\n");
    return AT_EXIT_USAGE;
  }
  if (o->completions > 0 && (!o->text || o->completions > 1e6)) {
    fprintf(stderr, "anytime loadgen: --completions N (1..1000000 tokens) sends one --text as "
                    "the prompt (a completion has no label to score)\n");
    return AT_EXIT_USAGE;
  }
  if (!(o->completions > 0) && (o->temperature >= 0 || o->ttft_ms > 0 || o->tpot_ms > 0)) {
    fprintf(stderr, "anytime loadgen: --temperature, --ttft-ms and --tpot-ms need --completions\n");
    return AT_EXIT_USAGE;
  }
  if (o->rho > 0) o->rate = o->rho * o->capacity;
  if (o->conns > 60000 || o->seed > 1.8e19 || o->clients + o->burst_clients > 60000) {
    fprintf(stderr, "anytime loadgen: --connections, --clients or --seed out of range\n");
    return AT_EXIT_USAGE;
  }
  return AT_EXIT_OK;
}

/* Load --data (or the default held-out split) or wrap --text. */
static int load_data(const opts *o, lg_data *data, lg_item *one) {
  char err[512] = "";
  if (o->text) {
    *one = (lg_item){.text = (char *)o->text, .label = -1};
    *data = (lg_data){.items = one, .n = 1};
    return 0;
  }
  char def[4096];
  const char *path = o->data_path ? o->data_path : lg_default_data_path(def, sizeof def);
  if (lg_data_load(path, data, err, sizeof err) != 0) {
    fprintf(stderr, "anytime loadgen: %s\n", err);
    return -1;
  }
  return 0;
}

int at_cli_loadgen(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help();
    return AT_EXIT_OK;
  }
  opts o;
  int prc = parse_args(argc, argv, &o);
  if (prc != AT_EXIT_OK) return prc;
  lg_config cfg = {.deadline_ms = o.deadline_ms, .max_conns = (size_t)o.conns,
                   .initial_conns = 4, .late_s = o.late_ms / 1000.0, .drain_s = o.drain_s,
                   .seed = (uint64_t)o.seed,
                   .spec = {.max_tokens = (int)o.completions,
                            .temperature = o.temperature >= 0 ? o.temperature : 0.7,
                            .ttft_ms = o.ttft_ms, .tpot_ms = o.tpot_ms,
                            .client_prefix = o.client_ids}};
  if (lg_url_parse(o.url, &cfg.url) != 0) {
    fprintf(stderr, "anytime loadgen: --url must look like http://127.0.0.1:8000/predict\n");
    return AT_EXIT_USAGE;
  }
  lg_data data = {0};
  lg_item one;
  if (load_data(&o, &data, &one) != 0) return AT_EXIT_FAIL;
  lg_report rp = {.url = o.url,
                  .rate = o.rate,
                  .duration_s = o.duration,
                  .seed = cfg.seed,
                  .deadline_ms = o.deadline_ms,
                  .clients = o.clients,
                  .think_ms = o.think_ms,
                  .retry = o.retry,
                  .burst_s = o.burst_s,
                  .burst_clients = o.burst_clients};
  lg_result res;
  char err[512] = "";
  if (lg_run_load(&cfg, &rp, &data, &res, err, sizeof err) != 0) {
    fprintf(stderr, "anytime loadgen: %s\n", err);
    if (!o.text) lg_data_free(&data);
    return AT_EXIT_FAIL;
  }
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, o.duration, o.deadline_ms / 1000.0,
               cfg.late_s, &s);
  int exit_code = AT_EXIT_OK;
  if (o.out_path && lg_write_csv(o.out_path, &res) != 0) {
    fprintf(stderr, "anytime loadgen: cannot write %s: %s\n", o.out_path, strerror(errno));
    exit_code = AT_EXIT_FAIL;
  }
  if (o.json)
    lg_print_json(&rp, &res, &s);
  else
    lg_print_text(&rp, &res, &s);
  lg_result_free(&res);
  if (!o.text) lg_data_free(&data);
  return exit_code;
}
