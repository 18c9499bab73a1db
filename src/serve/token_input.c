/* src/serve/token_input.c — token-array input (token_input.h). */
#include "serve/token_input.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is `e` a list of token ids (its first element an integer)? */
static bool id_list(json_t *e) {
  return json_is_array(e) && json_array_size(e) > 0 && json_is_integer(json_array_get(e, 0));
}

/* Check one input's ids; 0 or 400 with the message. */
static int check_ids(json_t *a, size_t which, int64_t vocab, size_t *len, char *err, size_t cap) {
  size_t n = json_is_array(a) ? json_array_size(a) : 0;
  if (n == 0) {
    snprintf(err, cap, "\"input\"[%zu] must be a non-empty list of token ids", which);
    return 400;
  }
  for (size_t k = 0; k < n; k++) {
    json_t *v = json_array_get(a, k);
    if (!json_is_integer(v)) {
      snprintf(err, cap, "\"input\"[%zu][%zu] is not an integer: a token-array input holds "
               "only token ids", which, k);
      return 400;
    }
    json_int_t id = json_integer_value(v);
    if (id < 0 || id >= vocab) {
      snprintf(err, cap, "token id %lld in input %zu is outside the model's vocabulary "
               "[0, %lld): token arrays are read as the served model's own token ids",
               (long long)id, which, (long long)vocab);
      return 400;
    }
  }
  *len = n;
  return 0;
}

int tok_input_parse(json_t *in, int64_t vocab, size_t max_inputs, tok_input *out, char *err,
                    size_t cap) {
  memset(out, 0, sizeof *out);
  if (!json_is_array(in) || json_array_size(in) == 0) return -1;
  json_t *first = json_array_get(in, 0);
  bool one = json_is_integer(first); /* [id, ...]: one input */
  if (!one && !id_list(first)) return -1;
  size_t n = one ? 1 : json_array_size(in);
  if (n > max_inputs) {
    snprintf(err, cap, "%zu inputs in one request; the limit is %zu (server.max_inputs)", n,
             max_inputs);
    return 413;
  }
  size_t total = 0, len;
  for (size_t i = 0; i < n; i++) {
    int st = check_ids(one ? in : json_array_get(in, i), i, vocab, &len, err, cap);
    if (st) return st;
    total += len;
  }
  out->ids = malloc(total * sizeof *out->ids + n * sizeof *out->lens);
  if (!out->ids) {
    snprintf(err, cap, "out of memory");
    return 500;
  }
  out->lens = (size_t *)(out->ids + total);
  out->n = n;
  int64_t *at = out->ids;
  for (size_t i = 0; i < n; i++) {
    json_t *a = one ? in : json_array_get(in, i);
    out->lens[i] = json_array_size(a);
    for (size_t k = 0; k < out->lens[i]; k++) *at++ = json_integer_value(json_array_get(a, k));
  }
  return 0;
}

void tok_input_free(tok_input *t) {
  free(t->ids);
  memset(t, 0, sizeof *t);
}
