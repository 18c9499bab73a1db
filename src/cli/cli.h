/* src/cli/cli.h — what the `anytime` subcommands share: the dispatcher's
 * table entry type, a stderr log sink, and small argument helpers. One file
 * per subcommand implements one at_cli_<name>() entry point. */
#ifndef ANYTIME_CLI_H
#define ANYTIME_CLI_H

#include <stdbool.h>

#include "anytime/anytime.h"
#include "anytime/server.h"
#include "tools/report.h" /* the exit codes and tools_report() */

/* Install a sink that writes "anytime: level: [component] message" to
 * stderr, honouring ANYTIME_LOG_LEVEL (debug|info|warn|error; default warn). */
void cli_install_log_sink(void);

/* True if argv contains -h or --help. */
bool cli_wants_help(int argc, char **argv);

/* A one-model server configuration (cfg->models[0]) from a model argument
 * resolved as `anytime run` resolves it (a directory, a name in ./models, a
 * hub repo id): its tokenizer, config.json and either one variant (`variant`,
 * else the most accurate) or, with all_variants, every ONNX graph of the
 * export. A text-generation model fills cfg->generator instead. Returns
 * at_model_resolve()'s statuses, AT_ERR_NOT_FOUND (no such variant, no
 * tokenizer), AT_ERR_UNSUPPORTED (a task anytime does not serve),
 * AT_ERR_LIMIT (more variants than a family holds). */
at_status cli_config_from_model(const char *spec, const char *variant, bool all_variants,
                                at_server_config *cfg);

/* The malloc this executable runs on: "mimalloc X.Y.Z" or "glibc malloc"
 * (src/cli/allocator.c). A static string; not thread-safe on its first call. */
const char *cli_allocator(void);

/* The --help lines for the environment of that malloc (MIMALLOC_* or
 * GLIBC_TUNABLES). A static string. */
const char *cli_allocator_env_help(void);

/* With glibc's malloc: fix its mmap and trim thresholds (unless
 * GLIBC_TUNABLES names a malloc setting). Call before any thread starts. */
void cli_tune_malloc(void);

int at_cli_version(int argc, char **argv);
int at_cli_info(int argc, char **argv);
int at_cli_ls(int argc, char **argv);
int at_cli_run(int argc, char **argv);
int at_cli_cache(int argc, char **argv);
int at_cli_loadgen(int argc, char **argv);
int at_cli_tokenize(int argc, char **argv);
int at_cli_eval(int argc, char **argv);
int at_cli_serve(int argc, char **argv);
int at_cli_profile(int argc, char **argv);
int at_cli_sweep(int argc, char **argv);
int at_cli_generate(int argc, char **argv);
int at_cli_perplexity(int argc, char **argv);
int at_cli_simulate(int argc, char **argv);

#endif /* ANYTIME_CLI_H */
