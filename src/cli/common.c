/* src/cli/common.c — helpers every subcommand uses: the stderr log sink,
 * uniform error reporting, and a server configuration from a resolved model
 * (`serve --model`, `profile --model`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/model.h"
#include "anytime/server.h"
#include "cli/cli.h"

static void stderr_sink(void *user, at_log_level level, const char *component,
                        const char *message) {
  (void)user;
  fprintf(stderr, "anytime: %s: [%s] %s\n", at_log_level_name(level), component, message);
}

void cli_install_log_sink(void) {
  at_log_level lvl = AT_LOG_WARN;
  const char *e = getenv("ANYTIME_LOG_LEVEL");
  if (e) {
    if (strcmp(e, "debug") == 0) lvl = AT_LOG_DEBUG;
    else if (strcmp(e, "info") == 0) lvl = AT_LOG_INFO;
    else if (strcmp(e, "warn") == 0) lvl = AT_LOG_WARN;
    else if (strcmp(e, "error") == 0) lvl = AT_LOG_ERROR;
  }
  at_log_set_sink(stderr_sink, NULL, lvl);
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
  return false;
}

at_status cli_config_from_model(const char *spec, const char *variant, bool all_variants,
                                at_server_config *cfg) {
  at_model_resolve_params rp = at_model_resolve_default_params();
  const char *dirs[] = {"models"};
  rp.model_dirs = dirs;
  rp.n_model_dirs = 1;
  at_model_desc *d = NULL;
  at_status st = at_model_resolve(spec, &rp, &d);
  if (st != AT_OK) return st;
  int vi = variant ? at_model_desc_variant_index(d, variant) : 0;
  if (vi < 0) {
    at_model_desc_free(d);
    return at_fail(AT_ERR_NOT_FOUND, "model '%s' has no variant '%s'", spec, variant);
  }
  if (d->task == AT_TASK_GENERATOR) {
    /* a text-generation model: serve it on the generation lane alone */
    at_server_generator_config *g = &cfg->generator;
    const char *base = strrchr(d->family, '/');
    snprintf(g->name, sizeof g->name, "%s", base ? base + 1 : d->family);
    snprintf(g->model, sizeof g->model, "%s", spec);
    snprintf(g->model_raw, sizeof g->model_raw, "%s", spec);
    snprintf(g->variant, sizeof g->variant, "%s", d->variants[vi].name);
    g->enabled = true;
    cfg->n_models = 0;
    at_model_desc_free(d);
    return AT_OK;
  }
  if (d->task != AT_TASK_CLASSIFIER && d->task != AT_TASK_EMBEDDER) {
    at_model_desc_free(d);
    return at_fail(AT_ERR_UNSUPPORTED,
                   "model '%s' is neither a classifier, an embedder nor a causal LM", spec);
  }
  if (!d->tokenizer_path) {
    at_model_desc_free(d);
    return at_fail(AT_ERR_NOT_FOUND, "model '%s' has no tokenizer.json or vocab.txt", spec);
  }
  at_server_model_config *m = &cfg->models[0];
  memset(m, 0, sizeof *m);
  const char *base = strrchr(d->family, '/');
  snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : d->family);
  snprintf(m->task, sizeof m->task, "%s", d->task == AT_TASK_CLASSIFIER ? "classify" : "embed");
  snprintf(m->tokenizer, sizeof m->tokenizer, "%s", d->tokenizer_path);
  if (d->config_path) snprintf(m->config_json, sizeof m->config_json, "%s", d->config_path);
  if (all_variants && d->n_variants > AT_SERVER_MAX_VARIANTS) {
    at_model_desc_free(d);
    return at_fail(AT_ERR_LIMIT, "model '%s' has %zu variants; a family holds at most %d", spec,
                   d->n_variants, AT_SERVER_MAX_VARIANTS);
  }
  /* one variant (the one asked for, else the most accurate), or all of them
   * (the variants of one export share its tokenizer and vector space) */
  m->n_variants = all_variants ? (int)d->n_variants : 1;
  for (int k = 0; k < m->n_variants; k++) {
    const at_model_variant *v = &d->variants[all_variants ? k : vi];
    snprintf(m->variants[k].name, sizeof m->variants[k].name, "%s", v->name);
    snprintf(m->variants[k].path, sizeof m->variants[k].path, "%s", v->path);
  }
  cfg->n_models = 1;
  at_model_desc_free(d);
  return AT_OK;
}
