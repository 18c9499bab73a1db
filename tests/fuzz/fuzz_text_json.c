/* tests/fuzz/fuzz_text_json.c — libFuzzer driver for tokenizer.json loading:
 * any byte string must load or be rejected with a status (never crash, leak
 * or read out of bounds); a tokenizer that loads must then encode and decode
 * a few fixed texts. Seeds: tests/fuzz/corpus/text_json/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  at_tokenizer *t = NULL;
  if (at_tokenizer_from_json(copy, size, &t) == AT_OK) {
    static const char *texts[] = {"Hello, world! 123", "", " caf\xc3\xa9  \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 ",
                                  "[CLS] a b ab <s>"};
    at_tok_workspace *ws = NULL;
    if (at_tok_workspace_create(&ws) == AT_OK) {
      for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        at_encoding e;
        if (at_tokenizer_encode(t, ws, texts[i], strlen(texts[i]), NULL, 0, NULL, &e) == AT_OK) {
          int32_t *ids = malloc((e.n ? e.n : 1) * sizeof *ids);
          if (ids) {
            memcpy(ids, e.ids, e.n * sizeof *ids);
            const char *out;
            (void)at_tokenizer_decode(t, ws, ids, e.n, false, &out, NULL);
            free(ids);
          }
        }
      }
      at_tok_workspace_destroy(ws);
    }
    at_tokenizer_destroy(t);
  }
  free(copy);
  return 0;
}
