/* tests/fuzz/fuzz_loadgen_csv.c — libFuzzer driver for the load
 * generator's label,text reader (lg_data_parse, src/cli/loadgen_proto.c),
 * the second CSV reader in the tree: any bytes parse or are rejected with a
 * message, never read past the buffer, and every parsed row has a
 * NUL-terminated text no longer than the input and a label in {-1, 0, 1}.
 * Seeds: tests/fuzz/corpus/loadgen_csv/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/loadgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  lg_data d;
  memset(&d, 0, sizeof d);
  char err[256] = "";
  if (lg_data_parse(copy, size, &d, err, sizeof err) == 0) {
    for (size_t i = 0; i < d.n; i++) {
      if (!d.items[i].text || strlen(d.items[i].text) > size) abort();
      if (d.items[i].label < -1 || d.items[i].label > 1) abort();
    }
    lg_data_free(&d);
  } else if (!err[0]) {
    abort(); /* a refusal always says why */
  }
  free(copy);
  return 0;
}
