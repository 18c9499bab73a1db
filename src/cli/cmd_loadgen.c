/* src/cli/cmd_loadgen.c — `anytime loadgen`: an open-loop Poisson load
 * generator for a TEI-style /predict route. Sends are scheduled from the
 * seed alone, whatever the server does; each answer is scored against the
 * CSV label and the deadline; a summary (text or --json) and optionally a
 * per-request CSV come out. The pieces live in loadgen_proto.c (schedule,
 * CSV, HTTP parsing, summary) and loadgen_run.c (the epoll client). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/loadgen.h"

static void help(void) {
  printf(
      "usage: anytime loadgen --url URL (--rate R | --rho X --capacity C) [options]\n\n"
      "Open-loop Poisson load against a TEI-style /predict route: request i is sent at\n"
      "its scheduled time (exponential gaps drawn from --seed) whether or not earlier\n"
      "ones were answered. Body {\"inputs\": TEXT}; 200 answers are scored against the\n"
      "CSV label (top label of [{\"label\",\"score\"},...]), 429 counts as rejected.\n\n"
      "options:\n"
      "  --url URL            http://HOST:PORT/PATH (HOST numeric IPv4 or localhost)\n"
      "  --rate R             requests per second\n"
      "  --rho X --capacity C rate = X * C (C in requests per second)\n"
      "  --duration S         seconds of sending (default 10)\n"
      "  --seed N             schedule and text choice (default 1)\n"
      "  --data FILE.csv      label,text rows (default $ANYTIME_DATA_DIR or\n"
      "                       ~/.cache/anytime/data, then pang-lee/test.csv)\n"
      "  --text TEXT          send this one text instead (no label: accuracy n/a)\n"
      "  --deadline-ms D      sent as x-deadline-ms; answers later than D are not goodput\n"
      "  --out FILE.csv       one row per request\n"
      "  --json               summary as one JSON object\n"
      "  --connections N      connection cap (default 512); more than this in flight\n"
      "                       and sends wait: counted as late sends\n"
      "  --late-ms L          a send more than L ms after its time is late (default 1)\n"
      "  --drain-s S          wait this long for answers after the last send (default 10)\n\n"
      "Latency is measured from each request's scheduled time. Goodput = answers within\n"
      "the deadline per second of --duration; attainment = those / sent; admitted share\n"
      "= (sent - 429s) / sent; percentiles are of 200 answers (nearest rank).\n"
      "answered_rps = answers per second from the first send to the last answer: with\n"
      "--connections above the server's workers, --late-ms 1000000 and a rate it\n"
      "cannot meet, the server's throughput when saturated.\n");
}

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

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static const char *status_text(int s) {
  switch (s) {
    case LG_ERR_CONNECT: return "connect";
    case LG_ERR_IO: return "io";
    case LG_ERR_PARSE: return "parse";
    case LG_ERR_TIMEOUT: return "timeout";
    case LG_ERR_UNSENT: return "unsent";
  }
  return "";
}

static int write_csv(const char *path, const lg_result *res) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "scheduled_s,sent_s,status,latency_s,variant,correct,retry_after_s,item,inference_s\n");
  for (size_t i = 0; i < res->n; i++) {
    const lg_record *x = &res->records[i];
    fprintf(f, "%.6f,%.6f,", x->scheduled_s, x->sent_s);
    if (x->status >= 100) fprintf(f, "%d,", x->status);
    else fprintf(f, "%s,", status_text(x->status));
    if (x->latency_s >= 0) fprintf(f, "%.6f,", x->latency_s);
    else fputc(',', f);
    if (x->variant >= 0) {
      fputc('"', f);
      for (const char *p = res->variants[x->variant]; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
      }
      fputc('"', f);
    }
    fputc(',', f);
    if (x->correct >= 0) fprintf(f, "%d", x->correct);
    fputc(',', f);
    if (x->retry_after_s >= 0) fprintf(f, "%g", x->retry_after_s);
    fprintf(f, ",%d,", x->item);
    if (x->inference_s >= 0) fprintf(f, "%.6f", x->inference_s);
    fputc('\n', f);
  }
  return fclose(f) == 0 ? 0 : -1;
}

int at_cli_loadgen(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help();
    return AT_EXIT_OK;
  }
  const char *url = NULL, *data_path = NULL, *text = NULL, *out_path = NULL;
  double rate = -1, rho = -1, capacity = -1, duration = 10, seed = 1, deadline_ms = 0;
  double conns = 512, late_ms = 1, drain_s = 10;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (strcmp(a, "--json") == 0) {
      json = true;
      continue;
    }
    if (strcmp(a, "--url") == 0) url = v;
    else if (strcmp(a, "--data") == 0) data_path = v;
    else if (strcmp(a, "--text") == 0) text = v;
    else if (strcmp(a, "--out") == 0) out_path = v;
    else if (strcmp(a, "--rate") == 0) rc = num_arg(a, v, 1e-9, &rate);
    else if (strcmp(a, "--rho") == 0) rc = num_arg(a, v, 1e-9, &rho);
    else if (strcmp(a, "--capacity") == 0) rc = num_arg(a, v, 1e-9, &capacity);
    else if (strcmp(a, "--duration") == 0) rc = num_arg(a, v, 1e-3, &duration);
    else if (strcmp(a, "--seed") == 0) rc = num_arg(a, v, 0, &seed);
    else if (strcmp(a, "--deadline-ms") == 0) rc = num_arg(a, v, 1e-6, &deadline_ms);
    else if (strcmp(a, "--connections") == 0) rc = num_arg(a, v, 1, &conns);
    else if (strcmp(a, "--late-ms") == 0) rc = num_arg(a, v, 0, &late_ms);
    else if (strcmp(a, "--drain-s") == 0) rc = num_arg(a, v, 0.001, &drain_s);
    else {
      fprintf(stderr, "anytime loadgen: unknown option '%s' (see --help)\n", a);
      return AT_EXIT_USAGE;
    }
    if (rc) return AT_EXIT_USAGE;
    if (!v) {
      fprintf(stderr, "anytime loadgen: %s needs a value\n", a);
      return AT_EXIT_USAGE;
    }
    i++;
  }
  if (!url) {
    fprintf(stderr, "anytime loadgen: --url is required\n");
    return AT_EXIT_USAGE;
  }
  if ((rate > 0) == (rho > 0) || (rho > 0) != (capacity > 0)) {
    fprintf(stderr, "anytime loadgen: give --rate, or --rho with --capacity\n");
    return AT_EXIT_USAGE;
  }
  if (rho > 0) rate = rho * capacity;
  if (conns > 60000 || seed > 1.8e19) {
    fprintf(stderr, "anytime loadgen: --connections or --seed out of range\n");
    return AT_EXIT_USAGE;
  }
  lg_config cfg = {.deadline_ms = deadline_ms, .max_conns = (size_t)conns,
                   .initial_conns = 4, .late_s = late_ms / 1000.0, .drain_s = drain_s,
                   .seed = (uint64_t)seed};
  if (lg_url_parse(url, &cfg.url) != 0) {
    fprintf(stderr, "anytime loadgen: --url must look like http://127.0.0.1:8000/predict\n");
    return AT_EXIT_USAGE;
  }

  lg_data data = {0};
  char err[512] = "";
  lg_item one;
  if (text) {
    one = (lg_item){.text = (char *)text, .label = -1};
    data = (lg_data){.items = &one, .n = 1};
  } else {
    char def[4096];
    if (!data_path) {
      const char *dir = getenv("ANYTIME_DATA_DIR"), *home = getenv("HOME");
      if (dir) snprintf(def, sizeof def, "%s/pang-lee/test.csv", dir);
      else snprintf(def, sizeof def, "%s/.cache/anytime/data/pang-lee/test.csv",
                    home ? home : ".");
      data_path = def;
    }
    if (lg_data_load(data_path, &data, err, sizeof err) != 0) {
      fprintf(stderr, "anytime loadgen: %s\n", err);
      return AT_EXIT_FAIL;
    }
  }

  double *sched = NULL;
  size_t n = 0;
  if (lg_schedule(cfg.seed, rate, duration, 50u * 1000 * 1000, &sched, &n) != 0) {
    fprintf(stderr, "anytime loadgen: schedule too large (rate x duration)\n");
    if (!text) lg_data_free(&data);
    return AT_EXIT_FAIL;
  }
  lg_result res;
  int rc = lg_run(&cfg, sched, n, duration, &data, &res, err, sizeof err);
  free(sched);
  if (rc != 0) {
    fprintf(stderr, "anytime loadgen: %s\n", err);
    if (!text) lg_data_free(&data);
    return AT_EXIT_FAIL;
  }
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, duration, deadline_ms / 1000.0, cfg.late_s,
               &s);
  int exit_code = AT_EXIT_OK;
  if (out_path && write_csv(out_path, &res) != 0) {
    fprintf(stderr, "anytime loadgen: cannot write %s: %s\n", out_path, strerror(errno));
    exit_code = AT_EXIT_FAIL;
  }
  if (json) {
    json_t *o = json_object(), *lat = json_object(), *mix = json_object();
    json_object_set_new(o, "url", json_string(url));
    json_object_set_new(o, "rate_rps", json_real(rate));
    json_object_set_new(o, "duration_s", json_real(duration));
    json_object_set_new(o, "seed", json_integer((json_int_t)cfg.seed));
    json_object_set_new(o, "deadline_ms", deadline_ms > 0 ? json_real(deadline_ms) : json_null());
    json_object_set_new(o, "scheduled", json_integer((json_int_t)s.scheduled));
    json_object_set_new(o, "sent", json_integer((json_int_t)s.sent));
    json_object_set_new(o, "answered", json_integer((json_int_t)s.answered));
    json_object_set_new(o, "rejected", json_integer((json_int_t)s.rejected));
    json_object_set_new(o, "errors", json_integer((json_int_t)s.errors));
    json_object_set_new(o, "late_sends", json_integer((json_int_t)s.late_sends));
    json_object_set_new(o, "within_deadline", json_integer((json_int_t)s.within_deadline));
    json_object_set_new(o, "offered_rps", jnum(s.offered_rps));
    json_object_set_new(o, "goodput_rps", jnum(s.goodput_rps));
    json_object_set_new(o, "attainment", jnum(s.attainment));
    json_object_set_new(o, "admitted_share", jnum(s.admitted_share));
    json_object_set_new(o, "accuracy", jnum(s.accuracy));
    json_object_set_new(lat, "p50", jnum(s.p50_s));
    json_object_set_new(lat, "p95", jnum(s.p95_s));
    json_object_set_new(lat, "p99", jnum(s.p99_s));
    json_object_set_new(o, "latency_s", lat);
    json_object_set_new(o, "inference_p50_ms", jnum(s.inference_p50_s * 1e3));
    json_object_set_new(o, "answered_rps", jnum(s.answered_rps));
    for (int v = 0; v < res.n_variants; v++)
      json_object_set_new(mix, res.variants[v], json_integer((json_int_t)s.variant_count[v]));
    json_object_set_new(o, "variants", mix);
    json_object_set_new(o, "connections_opened", json_integer((json_int_t)res.conns_opened));
    json_object_set_new(o, "peak_connections", json_integer((json_int_t)res.peak_conns));
    char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (txt) printf("%s\n", txt);
    free(txt);
    json_decref(o);
  } else {
    printf("url %s  rate %.2f/s  duration %.2f s  seed %llu\n", url, rate, duration,
           (unsigned long long)cfg.seed);
    if (deadline_ms > 0) printf("deadline %.3f ms\n", deadline_ms);
    else printf("deadline none (every answer counts as in time)\n");
    printf("sent %zu of %zu  answered %zu  rejected (429) %zu  errors %zu  late sends %zu\n",
           s.sent, s.scheduled, s.answered, s.rejected, s.errors, s.late_sends);
    printf("goodput %.2f/s  attainment %.4f  admitted share %.4f  accuracy %.4f\n",
           s.goodput_rps, s.attainment, s.admitted_share, s.accuracy);
    printf("latency of answers: p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", s.p50_s * 1e3,
           s.p95_s * 1e3, s.p99_s * 1e3);
    printf("server Run time (x-inference-time), median: %.3f ms\n", s.inference_p50_s * 1e3);
    printf("answers per second, first send to last answer: %.2f\n", s.answered_rps);
    printf("variants:");
    for (int v = 0; v < res.n_variants; v++)
      printf(" %s=%zu", res.variants[v], s.variant_count[v]);
    printf("\nconnections opened %zu, peak %zu\n", res.conns_opened, res.peak_conns);
  }
  lg_result_free(&res);
  if (!text) lg_data_free(&data);
  return exit_code;
}
