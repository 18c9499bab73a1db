/* tests/fuzz/fuzz_server_config.c — libFuzzer driver for the server's YAML
 * configuration reader (src/serve/config.c via at_server_config_parse):
 * any document must load or be rejected with a status, never crash or read
 * out of bounds. Seeds: tests/fuzz/corpus/server_config/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  at_server_config cfg = at_server_config_default();
  at_status s = at_server_config_parse(copy, size, "/nonexistent", &cfg);
  if (s == AT_OK && (cfg.n_models < 0 || cfg.n_models > AT_SERVER_MAX_MODELS)) abort();
  free(copy);
  return 0;
}
