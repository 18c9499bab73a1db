/* tests/fuzz/fuzz_v2_req.c — libFuzzer driver for the KServe V2 infer body
 * (v2_req_parse / v2_req_read, src/serve/v2_req.c), against a BERT-style
 * signature (input_ids, attention_mask, token_type_ids INT64 [-1,-1];
 * outputs logits FP32 [-1,2] and last_hidden_state) as a classifier or an
 * embedder (the first input byte picks), with max_inputs 8. Any JSON object
 * the server can receive is refused with 400/413 and a message, or
 * accepted with:
 *   - text path: exactly one BYTES input, 1..8 strings, exactly the
 *     strings of its (nested) "data" in order, at least one output wanted
 *     and only outputs the task has, "parameters"."truncate" a boolean
 *     or absent (then the server's default);
 *   - tensor path: distinct inputs of the model, dtypes the model's, every
 *     numel the product of its shape and <= V2_MAX_ELEMS, one batch
 *     dimension 1..8 shared by all; reading the data succeeds only when it
 *     holds exactly numel numbers, and then the values are the JSON
 *     numbers in row-major order (an FP32 value the float nearest the
 *     JSON number; a number outside float range is refused, never
 *     converted: that conversion is undefined behaviour);
 *   - output names, when given, are the model's own strings;
 *   - a string "id" is kept whole (it is echoed in the answer).
 * Seeds: tests/fuzz/corpus/v2_req/. */
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/v2_req.h"

static const at_value_info k_inputs[] = {
    {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "token_type_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .dims = {-1, -1}},
    {.name = "scale", .dtype = AT_DTYPE_FLOAT32, .ndim = 1, .dims = {-1}},
};
static const at_value_info k_outputs[] = {
    {.name = "logits", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .dims = {-1, 2}},
    {.name = "last_hidden_state", .dtype = AT_DTYPE_FLOAT32, .ndim = 3, .dims = {-1, -1, 4}},
};
#define MAX_INPUTS 8

/* Flatten a (nested) JSON data member the reference way: numbers in
 * document order; -1 if something else is in it or there are too many. */
static long flatten(json_t *d, json_t **out, size_t *n, size_t cap) {
  if (json_is_number(d)) {
    if (*n >= cap) return -1;
    out[(*n)++] = d;
    return 0;
  }
  if (!json_is_array(d)) return -1;
  for (size_t i = 0; i < json_array_size(d); i++)
    if (flatten(json_array_get(d, i), out, n, cap)) return -1;
  return 0;
}

static size_t count_strings(json_t *d, int *bad) {
  if (json_is_string(d)) return 1;
  if (!json_is_array(d)) {
    *bad = 1;
    return 0;
  }
  size_t n = 0;
  for (size_t i = 0; i < json_array_size(d); i++) n += count_strings(json_array_get(d, i), bad);
  return n;
}

static void check_text(json_t *body, const v2_sig *sig, const v2_req *q) {
  json_t *inputs = json_object_get(body, "inputs");
  if (json_array_size(inputs) != 1) abort();
  json_t *first = json_array_get(inputs, 0);
  if (strcmp(json_string_value(json_object_get(first, "datatype")), "BYTES")) abort();
  int bad = 0;
  size_t n = count_strings(json_object_get(first, "data"), &bad);
  if (bad || n != q->n_texts || n > sig->max_inputs) abort();
  for (size_t i = 0; i < q->n_texts; i++)
    if (!q->texts[i] || strlen(q->texts[i]) > q->lens[i]) abort();
  if (!(q->want[0] || q->want[1] || q->want[2])) abort();
  json_t *params = json_object_get(body, "parameters");
  json_t *tv = json_is_object(params) ? json_object_get(params, "truncate") : NULL;
  if (tv && !json_is_boolean(tv)) abort(); /* must have been refused */
  if (q->truncate != (tv ? json_is_true(tv) : sig->truncate_dflt)) abort();
  if (sig->embed ? (q->want[0] || q->want[1]) : q->want[2]) abort();
}

static void check_tensor(const v2_sig *sig, const v2_req *q) {
  if (q->n_in < 1 || q->n_in > sig->mi->n_inputs) abort();
  if (q->rows < 1 || q->rows > sig->max_inputs) abort();
  for (size_t k = 0; k < q->n_in; k++) {
    const at_tensor *t = &q->in[k];
    const at_value_info *w = NULL;
    for (size_t i = 0; i < sig->mi->n_inputs; i++)
      if (t->name == sig->mi->inputs[i].name) w = &sig->mi->inputs[i];
    if (!w || t->dtype != w->dtype) abort();
    for (size_t j = 0; j < k; j++)
      if (q->in[j].name == t->name) abort();
    if (t->ndim < 1 || t->ndim > AT_MAX_DIMS || (size_t)t->shape[0] != q->rows) abort();
    size_t prod = 1;
    for (size_t d = 0; d < t->ndim; d++) {
      if (t->shape[d] < 0) abort();
      prod *= (size_t)t->shape[d];
    }
    if (prod != q->numel[k] || prod > V2_MAX_ELEMS) abort();
    /* the data: exactly numel numbers of the right kind, or a refusal */
    json_t **ref = malloc((prod + 1) * sizeof *ref);
    void *buf = malloc((prod ? prod : 1) * 8);
    if (!ref || !buf) abort();
    size_t n = 0;
    int fits = flatten(q->data[k], ref, &n, prod) == 0 && n == prod;
    int kind_ok = 1, in_range = 1;
    for (size_t i = 0; i < n && fits; i++) {
      if (t->dtype != AT_DTYPE_FLOAT32 && !json_is_integer(ref[i])) kind_ok = 0;
      if (t->dtype == AT_DTYPE_FLOAT32 && !(fabs(json_number_value(ref[i])) <= FLT_MAX))
        in_range = 0;
    }
    char err[512] = "";
    int st = v2_req_read(q, k, buf, err, sizeof err);
    if (st == 0) {
      if (!fits || !kind_ok || !in_range) abort();
      for (size_t i = 0; i < n; i++) {
        if (t->dtype == AT_DTYPE_FLOAT32) {
          double v = json_number_value(ref[i]);
          float f = ((float *)buf)[i];
          if (!isfinite(f) || fabs((double)f - v) > fabs(v) * 1e-6 + 1e-38) abort();
        } else if (((int64_t *)buf)[i] != json_integer_value(ref[i])) {
          abort();
        }
      }
    } else if (st != 400 || !err[0] || (fits && kind_ok && in_range)) {
      abort();
    }
    free(ref);
    free(buf);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  at_model_info mi = {.n_inputs = 4, .inputs = k_inputs, .n_outputs = 2, .outputs = k_outputs};
  v2_sig sig = {.mi = &mi, .embed = data[0] & 1, .model = "m", .max_inputs = MAX_INPUTS,
                .truncate_dflt = data[0] & 2};
  json_error_t jerr;
  json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, &jerr);
  if (!body) return 0;
  if (!json_is_object(body)) { /* rj_parse refuses these first */
    json_decref(body);
    return 0;
  }
  v2_req q;
  char err[512];
  err[0] = '\0';
  int st = v2_req_parse(body, &sig, &q, err, sizeof err);
  if (st != 0) {
    if ((st != 400 && st != 413) || !err[0]) abort();
  } else {
    if (q.text)
      check_text(body, &sig, &q);
    else
      check_tensor(&sig, &q);
    for (size_t k = 0; k < q.n_out_names; k++) {
      int own = 0;
      for (size_t o = 0; o < mi.n_outputs; o++) own |= q.out_names[k] == mi.outputs[o].name;
      if (!q.text && !own) abort();
    }
    json_t *id = json_object_get(body, "id"); /* echoed whole, or absent */
    if (q.has_id != json_is_string(id) || (q.has_id && strcmp(q.id, json_string_value(id))))
      abort();
  }
  v2_req_free(&q);
  json_decref(body);
  return 0;
}
