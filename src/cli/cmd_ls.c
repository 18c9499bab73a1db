/* src/cli/cmd_ls.c — `anytime ls`: the models anytime can find by name, in
 * the model directories (./models and --dir) and in the Hugging Face hub
 * cache, each with its variants, task and tokenizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: anytime ls [--dir DIR]...\n\n"
          "Lists the models in ./models (and each --dir DIR) and in the Hugging Face hub\n"
          "cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), with\n"
          "their variants (one per ONNX file), task and tokenizer. Any MODEL shown can be\n"
          "passed to `anytime run` and `anytime serve --model`. Hub repos without an ONNX\n"
          "graph are listed at the end with the reason.\n");
}

static void print_desc(const at_model_entry *e) {
  const at_model_desc *d = e->desc;
  if (d->source == AT_MODEL_HUB)
    printf("hub    %s  (revision %s, commit %.12s)\n", e->spec, d->revision, d->commit);
  else
    printf("local  %s  (%s)\n", d->family, e->spec);
  printf("       task: %s", at_model_task_name(d->task));
  if (d->task == AT_TASK_CLASSIFIER) {
    printf(" [");
    for (size_t i = 0; i < d->n_labels && i < 8; i++) printf("%s%s", i ? ", " : "", d->labels[i]);
    printf("%s]", d->n_labels > 8 ? ", ..." : "");
  }
  if (d->hidden_size) printf("  hidden %lld", (long long)d->hidden_size);
  if (d->multi_label) printf(" multi-label");
  if (d->max_tokens) printf("  max tokens %lld", (long long)d->max_tokens);
  if (d->task == AT_TASK_EMBEDDER) printf("  pooling %s", at_pooling_name(d->pooling));
  printf("  tokenizer: %s\n", d->tokenizer_kind == AT_TOKENIZER_JSON        ? "tokenizer.json"
                              : d->tokenizer_kind == AT_TOKENIZER_VOCAB_TXT ? "vocab.txt"
                                                                            : "none");
  for (size_t i = 0; i < d->n_variants; i++) {
    const at_model_variant *v = &d->variants[i];
    printf("       %-10s %-32s %8.1f MB%s%s\n", v->name, v->rel_path,
           (double)v->size_bytes / (1 << 20), v->is_quantized ? "  quantized" : "",
           i == 0 ? "  (default)" : "");
  }
}

int at_cli_ls(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  const char *dirs[17] = {"models"};
  size_t nd = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc && nd < 17) {
      dirs[nd++] = argv[++i];
    } else {
      fprintf(stderr, "anytime ls: unexpected argument '%s'\n\n", argv[i]);
      usage(stderr);
      return AT_EXIT_USAGE;
    }
  }
  at_model_resolve_params p = at_model_resolve_default_params();
  p.model_dirs = dirs;
  p.n_model_dirs = nd;
  at_model_entry *v = NULL;
  size_t n = 0;
  at_status st = at_model_list(&p, &v, &n);
  if (st != AT_OK) return tools_report("ls", st);
  size_t shown = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].desc) {
      print_desc(&v[i]);
      shown++;
    }
  for (size_t i = 0; i < n; i++)
    if (!v[i].desc && v[i].source == AT_MODEL_HUB) {
      /* first line of the reason only */
      const char *nl = strchr(v[i].error, '\n');
      printf("hub    %s  (not servable: %.*s)\n", v[i].spec,
             (int)(nl ? (size_t)(nl - v[i].error) : strlen(v[i].error)), v[i].error);
    }
  char hub[4096];
  if (at_model_hub_cache_dir(&p, hub, sizeof hub) != AT_OK) snprintf(hub, sizeof hub, "(none)");
  printf("%zu model%s (searched:", shown, shown == 1 ? "" : "s");
  for (size_t i = 0; i < nd; i++) printf(" %s", dirs[i]);
  printf(" %s)\n", hub);
  at_model_list_free(v, n);
  return AT_EXIT_OK;
}
