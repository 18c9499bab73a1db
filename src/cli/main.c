/* src/cli/main.c — the `anytime` command: dispatches to one subcommand per
 * file in src/cli/ and prints the overall help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} command;

static const command k_commands[] = {
    {"version", at_cli_version, "print anytime's and ONNX Runtime's versions"},
    {"info", at_cli_info, "show an ONNX model's inputs, outputs, opset and producer"},
    {"ls", at_cli_ls, "list models in ./models and the Hugging Face cache, with variants"},
    {"run", at_cli_run, "run a model on texts and print the prediction or embedding"},
    {"cache", at_cli_cache, "show, list or clear the compiled-artifact cache"},
    {"loadgen", at_cli_loadgen, "open-loop Poisson load against /predict, scored summary"},
    {"tokenize", at_cli_tokenize,
     "tokenize texts with a tokenizer.json or vocab.txt: ids, tokens, offsets"},
    {"eval", at_cli_eval,
     "accuracy and confusion matrix of a classifier on a labelled CSV (engine path)"},
    {"serve", at_cli_serve, "serve models over HTTP (V2, OpenAI, TEI routes, /metrics)"},
    {"profile", at_cli_profile,
     "measure a model family through the serving path; write configs/serving.yaml"},
    {"sweep", at_cli_sweep, "load sweep of both planner policies; CSV, summary and plot"},
    {"generate", at_cli_generate,
     "generate text from prompts with a decoder (KV arena, continuous batching)"},
    {"perplexity", at_cli_perplexity,
     "held-out per-token perplexity of a decoder, measured from C"},
    {"simulate", at_cli_simulate,
     "the real planner against simulated clients and host noise; vs an oracle"},
};

static void usage(FILE *f) {
  fprintf(f,
          "anytime %s — inference server on ONNX Runtime that keeps latency bounded\n\n"
          "usage: anytime <command> [options]\n\ncommands:\n",
          AT_VERSION_STRING);
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
    fprintf(f, "  %-10s %s\n", k_commands[i].name, k_commands[i].summary);
  fprintf(f,
          "\n`anytime <command> --help` explains each command.\n\n"
          "environment:\n"
          "  ANYTIME_ORT_LIB             ONNX Runtime library to load (default: the SDK\n"
          "                              the build was configured with)\n"
          "  ANYTIME_ALLOW_ORT_MISMATCH  =1 runs with a library of another release (loud)\n"
          "  ANYTIME_LOG_LEVEL           debug|info|warn|error (default warn)\n"
          "  ORT_DISABLE_TELEMETRY       ONNX Runtime's usage telemetry; anytime sets\n"
          "                              it to 1 unless it is already set\n");
  fputs(cli_allocator_env_help(), f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return AT_EXIT_USAGE;
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return AT_EXIT_OK;
  }
  /* ONNX Runtime's Linux build starts a usage-telemetry system when its
   * environment is created: an empty /tmp/mat-debug-PID.log per process, a
   * SQLite store under ~/.cache/Microsoft/DeveloperTools with fsyncs, and
   * HTTPS uploads where a CA bundle is found. Only this variable, read
   * before the library loads, stops it (the library's own
   * DisableTelemetryEvents call comes too late for the files). Set here,
   * single-threaded, before any command starts; an explicit value wins. */
  setenv("ORT_DISABLE_TELEMETRY", "1", 0);
  cli_tune_malloc();
  if (strcmp(argv[1], "--version") == 0) return at_cli_version(1, argv);
  cli_install_log_sink();
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
    if (strcmp(argv[1], k_commands[i].name) == 0) return k_commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "anytime: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return AT_EXIT_USAGE;
}
