/* tests/fuzz/fuzz_loadgen_http.c — libFuzzer driver for the load
 * generator's HTTP/1.1 response parser (lg_http_parse in
 * src/tools/loadgen_proto.c) and its top-label reader: arbitrary bytes, split
 * at every point the fuzzer picks, must parse, ask for more, or be rejected
 * without reading or writing out of bounds. Seeds: corpus/loadgen_http/. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/loadgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  char body[4096];
  lg_response r;
  for (int eof = 0; eof < 2; eof++) {
    long n = lg_http_parse(copy, size, eof, &r, body, sizeof body);
    if (n > (long)size || (n > 0 && r.body_len > sizeof body)) abort();
    if (n > 0) {
      char label[64];
      (void)lg_top_label(body, r.body_len, label, sizeof label);
    }
  }
  free(copy);
  return 0;
}
