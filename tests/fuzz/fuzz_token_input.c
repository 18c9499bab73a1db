/* tests/fuzz/fuzz_token_input.c — libFuzzer driver for OpenAI's token-array
 * input (tok_input_parse, src/serve/token_input.c) and the error bodies
 * (serve_error_body, src/serve/errors.c).
 *   - the input's bytes, when they parse as JSON, are the "input" member;
 *     the answer is compared with a reference decision written here from
 *     docs/api.md (vocabulary 100, max_inputs 4): not a list, an empty
 *     list, or a list whose first element is neither an integer nor a
 *     non-empty list starting with one: "not token input" (-1); a list of
 *     integers: one input; a list of lists: one input each; more than 4
 *     inputs 413; an element of another type, an empty input, or an id
 *     outside [0, 100): 400; when accepted, every id in order;
 *   - the same bytes as an error message, in each protocol: the body
 *     parses as JSON of the protocol's shape, and a message that is valid
 *     UTF-8 without NUL comes back unchanged.
 * Seeds: tests/fuzz/corpus/token_input/. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/errors.h"
#include "serve/token_input.h"

#define VOCAB 100
#define MAX_INPUTS 4

static int ref_one(json_t *a) { /* 0 if a valid input of ids, else 400 */
  if (!json_is_array(a) || json_array_size(a) == 0) return 400;
  for (size_t k = 0; k < json_array_size(a); k++) {
    json_t *v = json_array_get(a, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= VOCAB)
      return 400;
  }
  return 0;
}

static int ref_decide(json_t *in) {
  if (!json_is_array(in) || json_array_size(in) == 0) return -1;
  json_t *f = json_array_get(in, 0);
  if (json_is_integer(f)) return ref_one(in);
  if (!json_is_array(f) || json_array_size(f) == 0 || !json_is_integer(json_array_get(f, 0)))
    return -1;
  if (json_array_size(in) > MAX_INPUTS) return 413;
  for (size_t i = 0; i < json_array_size(in); i++)
    if (ref_one(json_array_get(in, i))) return 400;
  return 0;
}

static void check_parse(json_t *in) {
  tok_input t;
  char err[256] = "";
  int got = tok_input_parse(in, VOCAB, MAX_INPUTS, &t, err, sizeof err);
  int want = ref_decide(in);
  if (got == 500) return; /* out of memory: not a decision */
  if (got != want) abort();
  if (got > 0 && !err[0]) abort();
  if (got != 0) {
    if (t.ids || t.n) abort();
    return;
  }
  bool one = json_is_integer(json_array_get(in, 0));
  size_t n = one ? 1 : json_array_size(in);
  if (t.n != n) abort();
  const int64_t *id = t.ids;
  for (size_t i = 0; i < n; i++) {
    json_t *a = one ? in : json_array_get(in, i);
    if (t.lens[i] != json_array_size(a)) abort();
    for (size_t k = 0; k < t.lens[i]; k++)
      if (*id++ != json_integer_value(json_array_get(a, k))) abort();
  }
  tok_input_free(&t);
}

static void check_error_body(const char *msg, bool utf8) {
  for (int p = SERVE_PROTO_TEI; p <= SERVE_PROTO_V2; p++) {
    size_t len;
    char *b = serve_error_body((serve_proto)p, 429, NULL, p == SERVE_PROTO_OPENAI ? msg : NULL,
                               msg, &len);
    if (!b) continue; /* out of memory */
    json_t *j = json_loadb(b, len, 0, NULL);
    if (!j || !json_is_object(j)) abort();
    json_t *m = json_object_get(j, "error");
    if (p == SERVE_PROTO_OPENAI) {
      if (!json_is_object(m) || !json_is_string(json_object_get(m, "type")) ||
          !json_is_string(json_object_get(m, "code")) ||
          !json_is_string(json_object_get(m, "param")))
        abort();
      m = json_object_get(m, "message");
    } else if (json_object_size(j) != (p == SERVE_PROTO_TEI ? 2u : 1u)) {
      abort();
    }
    if (!json_is_string(m)) abort();
    if (utf8 && strcmp(json_string_value(m), msg)) abort();
    json_decref(j);
    free(b);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
  if (in) {
    check_parse(in);
    json_decref(in);
  }
  char *msg = malloc(size + 1);
  if (!msg) return 0;
  memcpy(msg, data, size);
  msg[size] = '\0';
  /* jansson as the reference for "valid UTF-8" (a string it accepts) */
  json_t *s = json_stringn(msg, size);
  check_error_body(msg, s != NULL);
  json_decref(s);
  free(msg);
  return 0;
}
