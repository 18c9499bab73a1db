/* tests/fuzz/fuzz_loadgen_csv.c — libFuzzer driver for the labelled
 * dataset reader (src/tools/dataset.c) that every command reads label,text
 * files with, through the load generator's entry (lg_data_parse, the
 * sentiment rule) and directly with the integer rule: any bytes parse or
 * are rejected with a message, never read past the buffer, and every parsed
 * row has a NUL-terminated text no longer than the input and a label the
 * rule allows ({0, 1}; >= 0). Seeds: tests/fuzz/corpus/loadgen_csv/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/dataset.h"
#include "tools/loadgen.h"

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
      if (d.items[i].label < 0 || d.items[i].label > 1) abort();
    }
    lg_data_free(&d);
  } else if (!err[0]) {
    abort(); /* a refusal always says why */
  }
  cli_dataset ds;
  err[0] = '\0';
  if (cli_dataset_parse(copy, size, &cli_labels_int, &ds, err, sizeof err) == 0) {
    for (size_t i = 0; i < ds.n; i++)
      if (!ds.texts[i] || ds.lens[i] > size || strlen(ds.texts[i]) > ds.lens[i] ||
          ds.labels[i] < 0)
        abort();
    cli_dataset_free(&ds);
  } else if (!err[0]) {
    abort();
  }
  free(copy);
  return 0;
}
