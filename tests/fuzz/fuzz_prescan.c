/* tests/fuzz/fuzz_prescan.c — libFuzzer driver for the scan that lets the
 * server decide admission before parsing a body (rj_prescan,
 * src/serve/request_json.c): on any bytes it must not crash or read past
 * the body, and whenever it says it could follow the body and jansson
 * parses the same body as an object, the text count and the "model" member
 * must be what jansson sees (the planner is asked for that many texts; a
 * wrong count would hold or release the wrong amount of work). Seeds:
 * tests/fuzz/corpus/prescan/. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/request_json.h"

static void check(const char *body, size_t len, const char *key) {
  size_t n = 0, mlen = 0;
  const char *model = NULL;
  int rc = rj_prescan(body, len, key, &n, &model, &mlen);
  if (rc != 0) return; /* the server parses first: nothing to hold to */
  if (n < 1) abort();
  if (model && (model < body || model + mlen > body + len)) abort();
  json_error_t jerr;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!j) return; /* malformed: the parse after admission answers 400 */
  if (json_is_object(j)) {
    json_t *v = json_object_get(j, key);
    size_t want = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : 0;
    if (v && want && want != n) abort();
    json_t *m = json_object_get(j, "model");
    if (json_is_string(m)) {
      if (!model || mlen != json_string_length(m) || memcmp(model, json_string_value(m), mlen))
        abort();
    }
  }
  json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly `size` bytes, so ASan sees any read past the body */
  char *body = malloc(size ? size : 1);
  if (!body) return 0;
  memcpy(body, data, size);
  check(body, size, "inputs");
  check(body, size, "input");
  free(body);
  return 0;
}
