/* src/cli/cmd_profile.c — `anytime profile`: measure every variant of a model
 * family through the serving path and write the planner's inputs
 * (configs/serving.yaml and results/variant_profiles.json).
 *
 * This file is the command: its options and --help, the family (a family
 * file, or one export with --model) and the held-out split it profiles on.
 * The pipeline itself — the accuracy pass, the service times alone and with
 * the whole pool busy, the plain-session cross-check, the length buckets and
 * length model, the frontier and the atomic writing — is the tools library's
 * (tools/profile_run.h, src/tools/profile_*.c); the --help text below says
 * what it measures. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/anytime.h"
#include "anytime/server.h"
#include "cli/cli.h"
#include "tools/dataset.h"
#include "tools/profile_run.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime profile [--family FILE | --model MODEL] [--data FILE.csv] [--repeats N]\n"
          "                       [--iters N] [--batch-sizes 1,2,4,8,16] [--length-buckets K]\n"
          "                       [--agreement-tolerance X] [--deadline-ms MS]\n"
          "                       [--out-config FILE] [--out-json FILE]\n\n"
          "Measures every variant of every model in the family (default\n"
          "configs/family.yaml) through the serving path (engine + batcher + tokenizer)\n"
          "on the held-out split (default $ANYTIME_DATA_DIR/pang-lee/test.csv):\n"
          "accuracy, service time per batch size (median of --repeats passes, default 3,\n"
          "each the median of --iters batches, default 40) alone and with every\n"
          "worker running a batch at once (service_busy_ms), cross-checked against a\n"
          "separate plain session (service times within --agreement-tolerance, default\n"
          "0.15, and identical predictions). On any disagreement it aborts before\n"
          "writing. Writes configs/serving.yaml and results/variant_profiles.json\n"
          "(variants off the accuracy/cost Pareto frontier are recorded as dominated and\n"
          "left out of the planner's configuration).\n\n"
          "--length-buckets K (2..8; default off) also times s(b), alone, over texts of\n"
          "one length bucket at a time: K buckets of about equal count from the split's\n"
          "token lengths (short / medium / long for K = 3), written to the JSON as each\n"
          "variant's by_length (with each bucket's mean tokens). From the buckets' s(1)\n"
          "it fits the cost of a text as a + b x tokens (least squares, weighted by\n"
          "texts) and writes each variant's length model into the configuration:\n"
          "len_ref_tokens (the split's mean tokens, what the tables were timed on) and\n"
          "len_cost_per_token = b / (a + b x len_ref_tokens); the planner prices a text of\n"
          "t tokens at 1 + len_cost_per_token x (t - len_ref_tokens) times the table. It\n"
          "prints how that and the one table price each bucket (model_ms in the JSON).\n"
          "With one distinct bucket or no fit it writes 0 and 0 (off) and says why.\n\n"
          "--model MODEL profiles one export instead of a family file: a directory, a\n"
          "name in ./models or a hub repo id ORG/NAME[@REV] (as `anytime run` takes),\n"
          "whose ONNX graphs (model.onnx, model_quantized.onnx, model_O4.onnx, ...)\n"
          "become the variants of one family; --data must then be labelled text of its\n"
          "task (label,text; classifiers: labels by id or config.json name; embedders:\n"
          "5-nearest-neighbour label agreement). Server settings are the defaults.\n");
}

static int parse_args(int argc, char **argv, prof_options *P, char *data, size_t data_cap) {
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return fprintf(stderr, "anytime profile: %s needs a value\n", a), AT_EXIT_USAGE;
    if (!strcmp(a, "--family"))
      P->family = v;
    else if (!strcmp(a, "--model"))
      P->model = v;
    else if (!strcmp(a, "--data"))
      snprintf(data, data_cap, "%s", v);
    else if (!strcmp(a, "--out-config"))
      P->out_cfg = v;
    else if (!strcmp(a, "--out-json"))
      P->out_json = v;
    else if (!strcmp(a, "--repeats"))
      P->repeats = atoi(v);
    else if (!strcmp(a, "--iters"))
      P->iters = atoi(v);
    else if (!strcmp(a, "--length-buckets"))
      P->n_lb = atoi(v);
    else if (!strcmp(a, "--agreement-tolerance"))
      P->tol = atof(v);
    else if (!strcmp(a, "--deadline-ms"))
      P->deadline_ms = atof(v);
    else if (!strcmp(a, "--batch-sizes")) {
      P->n_bs = 0;
      for (const char *q = v; *q && P->n_bs < PROF_MAX_BATCH_SIZES;) {
        P->bs[P->n_bs++] = atoi(q);
        q = strchr(q, ',');
        if (!q) break;
        q++;
      }
    } else {
      fprintf(stderr, "anytime profile: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  if (P->repeats < 1 || P->repeats > 16 || P->iters < 3 || !(P->tol > 0) || P->n_bs < 1 ||
      P->bs[0] != 1) {
    fprintf(stderr,
            "anytime profile: need 1 <= --repeats <= 16, --iters >= 3, --agreement-tolerance "
            "> 0, and batch sizes starting at 1\n");
    return AT_EXIT_USAGE;
  }
  if (P->n_lb && (P->n_lb < 2 || P->n_lb > PROF_MAX_LENGTH_BUCKETS))
    return fprintf(stderr, "anytime profile: --length-buckets is 2..%d\n", PROF_MAX_LENGTH_BUCKETS),
           AT_EXIT_USAGE;
  for (int k = 1; k < P->n_bs; k++)
    if (P->bs[k] <= P->bs[k - 1] || P->bs[k] > 256)
      return fprintf(stderr, "anytime profile: batch sizes must ascend, at most 256\n"),
             AT_EXIT_USAGE;
  return AT_EXIT_OK;
}

int at_cli_profile(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return usage(stdout), AT_EXIT_OK;
  char data[PATH_MAX];
  cli_default_test_csv(data, sizeof data);
  prof_options o = {.family = "configs/family.yaml",
                    .out_cfg = "configs/serving.yaml",
                    .out_json = "results/variant_profiles.json",
                    .data = data,
                    .repeats = 3,
                    .iters = 40,
                    .bs = {1, 2, 4, 8, 16},
                    .n_bs = 5,
                    .tol = 0.15,
                    .deadline_ms = -1,
                    .argc = argc,
                    .argv = argv};
  int rc = parse_args(argc, argv, &o, data, sizeof data);
  if (rc != AT_EXIT_OK) return rc;
  static at_server_config cfg; /* large (paths): not on the stack */
  cfg = at_server_config_default();
  at_status st = o.model ? cli_config_from_model(o.model, NULL, true, &cfg)
                         : at_server_config_load(o.family, &cfg);
  if (st != AT_OK) return tools_report("profile", st);
  if (o.model && cfg.n_models == 0)
    return fprintf(stderr,
                   "anytime profile: %s is a text-generation model; profile measures "
                   "classifiers and embedders\n",
                   o.model),
           AT_EXIT_USAGE;
  if (o.model) o.family = o.model; /* for messages; written paths are relative to the output */
  cli_dataset ds;
  char err[512];
  if (cli_dataset_load(data, &cli_labels_int, &ds, err, sizeof err) != 0)
    return fprintf(stderr, "anytime profile: %s\n", err), AT_EXIT_FAIL;
  fprintf(stderr, "profile: %s, %zu held-out texts from %s, %d repeats x %d batches\n", o.family,
          ds.n, data, o.repeats, o.iters);
  rc = prof_run(&o, &cfg, &ds);
  cli_dataset_free(&ds);
  return rc;
}
