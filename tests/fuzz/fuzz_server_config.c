/* tests/fuzz/fuzz_server_config.c — libFuzzer driver for the server's
 * configuration readers (src/serve/config.c): the input as a YAML document
 * (at_server_config_parse) and, up to its first newline, as one command-line
 * setting (at_server_config_set, `serve --set`). Either loads or is refused
 * with a status, never crashes or reads out of bounds; what loads passes
 * at_server_config_check (the range check the server starts with), and a
 * refused setting leaves the configuration as it was. Seeds:
 * tests/fuzz/corpus/server_config/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  copy[size] = '\0';
  at_server_config *cfg = malloc(sizeof *cfg), *before = malloc(sizeof *before);
  if (!cfg || !before) abort();
  *cfg = at_server_config_default();
  at_status s = at_server_config_parse(copy, size, "/nonexistent", cfg);
  if (s == AT_OK && (cfg->n_models < 0 || cfg->n_models > AT_SERVER_MAX_MODELS)) abort();
  if (s == AT_OK && at_server_config_check(cfg) != AT_OK) abort();
  char *nl = strchr(copy, '\n');
  if (nl) *nl = '\0';
  *cfg = at_server_config_default();
  memcpy(before, cfg, sizeof *cfg);
  s = at_server_config_set(cfg, copy);
  if (s == AT_OK && at_server_config_check(cfg) != AT_OK) abort();
  if (s != AT_OK && memcmp(cfg, before, sizeof *cfg) != 0) abort();
  free(before);
  free(cfg);
  free(copy);
  return 0;
}
