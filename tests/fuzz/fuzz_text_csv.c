/* tests/fuzz/fuzz_text_csv.c — libFuzzer driver for the CSV reader
 * (src/core/csv.c): any byte string parses or is rejected; every field of a
 * parsed document must be readable within its stated length.
 * Seeds: tests/fuzz/corpus/text_csv/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  at_csv *c = NULL;
  if (at_csv_parse(copy, size, &c) == AT_OK) {
    size_t total = 0;
    for (size_t r = 0; r < at_csv_rows(c); r++)
      for (size_t k = 0; k < at_csv_cols(c, r); k++) {
        size_t len;
        const char *f = at_csv_field(c, r, k, &len);
        if (!f || f[len] != '\0') abort();
        total += len;
      }
    if (total > size) abort();
    (void)at_csv_column(c, "text");
    at_csv_destroy(c);
  }
  free(copy);
  return 0;
}
