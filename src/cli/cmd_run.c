/* src/cli/cmd_run.c — `anytime run MODEL TEXT...`: resolve a model by name
 * (local path, ./models, Hugging Face cache), tokenize the texts, run them
 * through the engine (the same path the server uses, with the compiled-
 * artifact cache) and print the prediction: label and score for classifiers,
 * the embedding's dimension and first values for embedders; --json for a
 * machine-readable answer. Also the probe the cold-start benchmark times.
 * This file reads the arguments and checks the model is one `run` can
 * answer; opening it, the requests and the printing are tools/run.c's. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/run.h"

#define MAX_TEXTS 256
#define MAX_DIRS 16

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime run MODEL TEXT [TEXT...] [options]\n\n"
          "MODEL is a model directory or .onnx file, a name in ./models (or --dir), or a\n"
          "Hugging Face repo id ORG/NAME[@REVISION] in the hub cache (see `anytime ls`).\n"
          "Prints, per text, the label and probability (classifiers) or the embedding's\n"
          "dimension and first values (embedders; pooled over tokens as the export's\n"
          "1_Pooling/config.json says, mean by default, when the model gives per-token\n"
          "states, then L2-normalised). Texts are cut at the model's token limit (the\n"
          "smallest of its position table, max_seq_length and model_max_length).\n\n"
          "options:\n"
          "  --variant NAME     which variant to run (default: the most accurate, e.g. fp32)\n"
          "  --dir DIR          also look up bare names in DIR (repeatable; ./models always)\n"
          "  --cache-dir DIR    compiled-artifact cache root (default: see `anytime cache`)\n"
          "  --no-cache         do not use the compiled-artifact cache\n"
          "  --all-variants     load every variant of the family (as a server would), then\n"
          "                     answer with the chosen one\n"
          "  --json             print one JSON object\n");
}

/* Whether `d` is something `run` can answer with variant index vi; says
 * why not on stderr. */
static bool model_runnable(const at_model_desc *d, int vi, const char *variant) {
  if (vi < 0) {
    fprintf(stderr, "anytime run: %s has no variant '%s'; it has:", d->family, variant);
    for (size_t i = 0; i < d->n_variants; i++) fprintf(stderr, " %s", d->variants[i].name);
    fprintf(stderr, "\n");
    return false;
  }
  if (d->task == AT_TASK_GENERATOR) {
    fprintf(stderr,
            "anytime run: %s is a text-generation model: use `anytime generate --model %s "
            "\"prompt\"` (or serve it: POST /v1/completions)\n",
            d->family, d->spec);
    return false;
  }
  if (d->task == AT_TASK_UNKNOWN) {
    fprintf(stderr,
            "anytime run: cannot tell what %s computes: a classifier needs a \"logits\" output "
            "and id2label in config.json, an embedder a \"last_hidden_state\" or "
            "\"sentence_embedding\" output\n",
            d->family);
    return false;
  }
  if (!d->tokenizer_path) {
    fprintf(stderr, "anytime run: %s has no tokenizer.json or vocab.txt in %s\n", d->family,
            d->dir);
    return false;
  }
  return true;
}

int at_cli_run(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *model = NULL, *variant = NULL, *cache_root = NULL;
  const char *texts[MAX_TEXTS];
  const char *dirs[MAX_DIRS + 1] = {"models"};
  size_t n_texts = 0, n_dirs = 1;
  bool json = false, no_cache = false, all_variants = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--variant") == 0 && i + 1 < argc) variant = argv[++i];
    else if (strcmp(a, "--dir") == 0 && i + 1 < argc && n_dirs <= MAX_DIRS) dirs[n_dirs++] = argv[++i];
    else if (strcmp(a, "--cache-dir") == 0 && i + 1 < argc) cache_root = argv[++i];
    else if (strcmp(a, "--no-cache") == 0) no_cache = true;
    else if (strcmp(a, "--json") == 0) json = true;
    else if (strcmp(a, "--all-variants") == 0) all_variants = true;
    else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "anytime run: unknown option '%s'\n\n", a);
      usage(stderr);
      return AT_EXIT_USAGE;
    } else if (!model) model = a;
    else if (n_texts < MAX_TEXTS) texts[n_texts++] = a;
    else {
      fprintf(stderr, "anytime run: at most %d texts\n", MAX_TEXTS);
      return AT_EXIT_USAGE;
    }
  }
  if (!model || n_texts == 0) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }

  at_model_resolve_params rp = at_model_resolve_default_params();
  rp.model_dirs = dirs;
  rp.n_model_dirs = n_dirs;
  at_model_desc *d = NULL;
  at_status st = at_model_resolve(model, &rp, &d);
  if (st != AT_OK) return tools_report("run", st);
  int rc = AT_EXIT_FAIL;
  run_batch *b = NULL;
  int vi = variant ? at_model_desc_variant_index(d, variant) : 0;
  if (model_runnable(d, vi, variant)) {
    run_params p = {
        .variant = vi, .all_variants = all_variants, .cache = !no_cache, .cache_root = cache_root};
    if ((st = run_open(d, &p, &b)) != AT_OK || (st = run_texts(b, texts, n_texts)) != AT_OK)
      rc = tools_report("run", st);
    else
      rc = run_print(b, json) == 0 ? AT_EXIT_OK : AT_EXIT_FAIL;
  }
  run_close(b);
  at_model_desc_free(d);
  return rc;
}
