/* src/cli/cmd_eval.c — `anytime eval --model DIR --data FILE.csv`: accuracy
 * of a classifier on a labelled CSV (header label,text), measured through the
 * serving path: tokenizer -> at_engine_submit (worker pool, shared session)
 * -> argmax over the logits. Prints accuracy, count and the confusion matrix
 * (rows: true label, columns: predicted), or one JSON object with --json.
 * This file reads the arguments, the model and the dataset; the run and
 * the report are tools/eval.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/model.h"
#include "cli/cli.h"
#include "tools/dataset.h"
#include "tools/eval.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime eval --model DIR --data FILE.csv [options]\n\n"
          "Runs the classifier in DIR (Hugging Face layout: config.json with id2label,\n"
          "tokenizer.json or vocab.txt, onnx/*.onnx) over every row of FILE.csv (label,text,\n"
          "or any columns under a header naming label and text; labels are ids or id2label\n"
          "names) through the engine, and prints accuracy, count and the confusion matrix.\n\n"
          "options:\n"
          "  --variant V       variant name (fp32, int8, ...) or path in DIR such as\n"
          "                    onnx/model.onnx (default: the most accurate)\n"
          "  --batch N         texts per engine request (default 16)\n"
          "  --workers N       engine worker threads (default 2)\n"
          "  --max-length N    truncate to N tokens (default: the model's token limit)\n"
          "  --json            print one JSON object\n");
}

/* The variant `variant` names (by name or by path in the model directory),
 * else the first; -1 (said on stderr) when there is no such variant. */
static int variant_index(const at_model_desc *d, const char *model, const char *variant) {
  if (!variant) return 0;
  for (size_t k = 0; k < d->n_variants; k++)
    if (!strcmp(d->variants[k].name, variant) || !strcmp(d->variants[k].rel_path, variant))
      return (int)k;
  fprintf(stderr, "anytime eval: %s has no variant '%s'; it has:", model, variant);
  for (size_t k = 0; k < d->n_variants; k++)
    fprintf(stderr, " %s (%s)", d->variants[k].name, d->variants[k].rel_path);
  fprintf(stderr, "\n");
  return -1;
}

int at_cli_eval(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = NULL, *data = NULL, *variant = NULL;
  int bsz = 16, workers = 2, max_len = -1;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--model") && i + 1 < argc) model = argv[++i];
    else if (!strcmp(a, "--data") && i + 1 < argc) data = argv[++i];
    else if (!strcmp(a, "--variant") && i + 1 < argc) variant = argv[++i];
    else if (!strcmp(a, "--batch") && i + 1 < argc) bsz = atoi(argv[++i]);
    else if (!strcmp(a, "--workers") && i + 1 < argc) workers = atoi(argv[++i]);
    else if (!strcmp(a, "--max-length") && i + 1 < argc) max_len = atoi(argv[++i]);
    else if (!strcmp(a, "--json")) json = true;
    else { usage(stderr); return AT_EXIT_USAGE; }
  }
  if (!model || !data || bsz < 1 || bsz > 4096 || workers < 1 || workers > 256) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  int rc = AT_EXIT_FAIL;
  at_model_desc *d = NULL;
  cli_dataset ds = {0};
  eval_outcome res = {0};
  at_model_resolve_params rp = at_model_resolve_default_params();
  at_status st = at_model_resolve(model, &rp, &d);
  if (st != AT_OK) return tools_report("eval", st);
  if (d->n_labels < 2 || !d->task_output) {
    fprintf(stderr, "anytime eval: %s is not a classifier (config.json needs id2label and the "
                    "graph a \"logits\" output)\n", model);
    goto out;
  }
  int vi = variant_index(d, model, variant);
  if (vi < 0) goto out;
  if (!d->tokenizer_path) {
    fprintf(stderr, "anytime eval: %s has no tokenizer.json or vocab.txt\n", model);
    goto out;
  }
  char what[96], err[512];
  snprintf(what, sizeof what, "an id below %zu or a name in id2label", d->n_labels);
  cli_labels rule = {.parse = eval_parse_label, .ctx = d, .what = what};
  if (cli_dataset_load(data, &rule, &ds, err, sizeof err) != 0) {
    fprintf(stderr, "anytime eval: %s\n", err);
    goto out;
  }
  eval_params p = {.variant = vi, .batch = bsz, .workers = workers, .max_length = max_len};
  if ((st = eval_run(d, &p, &ds, &res)) != AT_OK) rc = tools_report("eval", st);
  if (res.failed) {
    fprintf(stderr, "anytime eval: inference failed: %s\n", res.error);
    goto out;
  }
  if (st != AT_OK) goto out; /* a batch was not submitted; the error is printed */
  rc = eval_print(d, &p, data, &ds, &res, json) == AT_OK ? AT_EXIT_OK : AT_EXIT_FAIL;
out:
  eval_outcome_free(&res);
  cli_dataset_free(&ds);
  at_model_desc_free(d);
  return rc;
}
