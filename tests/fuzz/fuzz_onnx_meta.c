/* tests/fuzz/fuzz_onnx_meta.c — libFuzzer driver for the ONNX header reader
 * (src/core/onnx_meta.c): any byte string must parse or be rejected without
 * reading out of bounds. Seed corpus: tests/fuzz/corpus/onnx_meta/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/onnx_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *copy = malloc(size ? size : 1); /* exact-size heap copy for ASan */
  if (!copy) return 0;
  memcpy(copy, data, size);
  at_onnx_meta m;
  if (at_onnx_meta_parse(copy, size, &m) == AT_OK) {
    (void)at_onnx_meta_default_opset(&m);
    if (m.n_opsets > AT_ONNX_MAX_OPSETS) abort();
  }
  free(copy);
  return 0;
}
