/* tests/fuzz/fuzz_graph_io.c — libFuzzer driver for the graph-output reader
 * (at_graph_output_names_buf, src/model/graph_io.c), which runs on every
 * model a user points anytime at. On any bytes it must return -1 or a count
 * in 0..max, with every name it wrote NUL-terminated inside its slot; and,
 * since it walks the ModelProto with the same walker as the header reader
 * (core/pb.h), a buffer it accepts must be accepted by at_onnx_meta_parse
 * too, unless an opset_import entry (which only the header reader opens) is
 * malformed. Seeds: tests/fuzz/corpus/graph_io/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/onnx_meta.h"
#include "model/model_internal.h"

enum { MAX = 4 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *copy = malloc(size ? size : 1); /* exact-size heap copy for ASan */
  if (!copy) return 0;
  memcpy(copy, data, size);
  char names[MAX][AT_GRAPH_NAME_MAX];
  memset(names, 0x5a, sizeof names);
  int n = at_graph_output_names_buf(copy, size, names, MAX);
  if (n < -1 || n > MAX) abort();
  for (int i = 0; i < n; i++)
    if (!memchr(names[i], '\0', AT_GRAPH_NAME_MAX)) abort();
  if (n >= 0) {
    at_onnx_meta m;
    if (at_onnx_meta_parse(copy, size, &m) != AT_OK && !strstr(at_last_error(), "opset_import"))
      abort();
  }
  free(copy);
  return 0;
}
