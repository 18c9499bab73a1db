/* src/serve/v2_req.c — KServe V2 infer body validation (see v2_req.h). The
 * checks and messages are the ones routes_v2.c has always applied, in the
 * same order: first names, types and shapes (no data read), the data only
 * when the route asks, after admission. */
#include "serve/v2_req.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Collect the strings of a (possibly nested) BYTES "data" array. */
static int collect_strings(json_t *d, const char **texts, size_t *lens, size_t *n, size_t cap) {
  if (json_is_string(d)) {
    if (*n >= cap) return -1;
    texts[*n] = json_string_value(d);
    lens[*n] = json_string_length(d);
    (*n)++;
    return 0;
  }
  if (!json_is_array(d)) return -2;
  size_t i;
  json_t *v;
  json_array_foreach(d, i, v) {
    int rc = collect_strings(v, texts, lens, n, cap);
    if (rc) return rc;
  }
  return 0;
}

static int collect_numbers(json_t *d, at_dtype t, void *buf, size_t *n, size_t cap) {
  if (json_is_number(d)) {
    if (*n >= cap) return -1;
    double v = json_number_value(d);
    if (t == AT_DTYPE_FLOAT32) {
      if (!(fabs(v) <= FLT_MAX)) return -4; /* (float)v would be undefined, or infinity */
      ((float *)buf)[*n] = (float)v;
    } else {
      if (!json_is_integer(d)) return -3;
      ((int64_t *)buf)[*n] = json_integer_value(d);
    }
    (*n)++;
    return 0;
  }
  if (!json_is_array(d)) return -2;
  size_t i;
  json_t *v;
  json_array_foreach(d, i, v) {
    int rc = collect_numbers(v, t, buf, n, cap);
    if (rc) return rc;
  }
  return 0;
}

static int text_path(json_t *body, json_t *first, size_t n_inputs, const v2_sig *sig, v2_req *q,
                     char *err, size_t cap) {
  if (n_inputs != 1) {
    snprintf(err, cap, "a BYTES (text) request takes exactly one input");
    return 400;
  }
  static const char *names[3] = {"logits", "probabilities", "embedding"};
  for (size_t k = 0; k < q->n_out_names; k++) {
    int found = -1;
    for (int o = 0; o < 3; o++)
      if (!strcmp(q->out_names[k], names[o])) found = o;
    bool ok = found >= 0 && (sig->embed ? found == 2 : found < 2);
    if (!ok) {
      snprintf(err, cap, "model '%s' has no output '%s' for text input (it has %s)", sig->model,
               q->out_names[k], sig->embed ? "embedding" : "logits, probabilities");
      return 400;
    }
    q->want[found] = true;
  }
  if (!q->n_out_names) q->want[sig->embed ? 2 : 0] = true;
  size_t n = 0;
  q->texts = calloc(sig->max_inputs ? sig->max_inputs : 1, sizeof *q->texts);
  q->lens = calloc(sig->max_inputs ? sig->max_inputs : 1, sizeof *q->lens);
  if (!q->texts || !q->lens) {
    snprintf(err, cap, "out of memory");
    return 500;
  }
  int rc = collect_strings(json_object_get(first, "data"), q->texts, q->lens, &n, sig->max_inputs);
  if (rc == -1) {
    snprintf(err, cap, "more than %zu texts in one request (server.max_inputs)", sig->max_inputs);
    return 413;
  }
  if (rc) {
    snprintf(err, cap, "BYTES input \"data\" must be a (nested) list of strings");
    return 400;
  }
  q->n_texts = n;
  /* "parameters": {"truncate": true} cuts texts over the token limit */
  q->truncate = sig->truncate_dflt;
  json_t *params = json_object_get(body, "parameters");
  json_t *tv = json_is_object(params) ? json_object_get(params, "truncate") : NULL;
  if (tv && !json_is_boolean(tv)) {
    snprintf(err, cap, "\"parameters\".\"truncate\" must be true or false");
    return 400;
  }
  if (tv) q->truncate = json_is_true(tv);
  return 0;
}

static int tensor_path(json_t *inputs, const v2_sig *sig, v2_req *q, char *err, size_t cap) {
  const at_model_info *mi = sig->mi;
  size_t ii;
  json_t *iv;
  json_array_foreach(inputs, ii, iv) {
    if (ii >= AT_MAX_INPUTS) {
      snprintf(err, cap, "too many inputs");
      return 400;
    }
    json_t *nm = json_object_get(iv, "name"), *shp = json_object_get(iv, "shape");
    json_t *dty = json_object_get(iv, "datatype"), *data = json_object_get(iv, "data");
    if (!json_is_string(nm) || !json_is_array(shp) || !json_is_string(dty) || !data) {
      snprintf(err, cap, "inputs[%zu] needs \"name\", \"shape\", \"datatype\" and \"data\"", ii);
      return 400;
    }
    const at_value_info *want = NULL;
    for (size_t k = 0; k < mi->n_inputs; k++)
      if (!strcmp(mi->inputs[k].name, json_string_value(nm))) want = &mi->inputs[k];
    if (!want) {
      snprintf(err, cap, "model '%s' has no input '%s'", sig->model, json_string_value(nm));
      return 400;
    }
    for (size_t k = 0; k < q->n_in; k++)
      if (q->in[k].name == want->name) {
        snprintf(err, cap, "input '%s' is given twice", want->name);
        return 400;
      }
    const char *ds = json_string_value(dty);
    bool is_i64 = !strcmp(ds, "INT64"), is_i32 = !strcmp(ds, "INT32"), is_f32 = !strcmp(ds, "FP32");
    if (!(is_i64 || is_i32 || is_f32)) {
      snprintf(err, cap, "inputs[%zu]: datatype %s is not supported (INT64, INT32, FP32, BYTES)",
               ii, ds);
      return 400;
    }
    bool compatible = (want->dtype == AT_DTYPE_FLOAT32 && is_f32) ||
                      (want->dtype == AT_DTYPE_INT64 && (is_i64 || is_i32));
    if (!compatible) {
      snprintf(err, cap, "input '%s' is %s in the model; %s was given", want->name,
               at_dtype_name(want->dtype), ds);
      return 400;
    }
    at_tensor *t = &q->in[q->n_in];
    t->name = want->name;
    t->dtype = want->dtype;
    t->ndim = json_array_size(shp);
    if (t->ndim > AT_MAX_DIMS) {
      snprintf(err, cap, "input '%s': too many dimensions", want->name);
      return 400;
    }
    size_t numel = 1;
    for (size_t k = 0; k < t->ndim; k++) {
      json_t *dv = json_array_get(shp, k);
      if (!json_is_integer(dv) || json_integer_value(dv) < 0) {
        snprintf(err, cap, "input '%s': shape must be non-negative integers", want->name);
        return 400;
      }
      if (json_integer_value(dv) > V2_MAX_ELEMS) {
        snprintf(err, cap, "input '%s': dimension %zu is %lld, over %u elements", want->name, k,
                 (long long)json_integer_value(dv), V2_MAX_ELEMS);
        return 413;
      }
      t->shape[k] = json_integer_value(dv);
      numel *= (size_t)t->shape[k];
      if (numel > V2_MAX_ELEMS) {
        snprintf(err, cap, "input '%s' has more than %u elements", want->name, V2_MAX_ELEMS);
        return 413;
      }
    }
    if (t->ndim < 1 || t->shape[0] < 1) {
      snprintf(err, cap, "input '%s': the first dimension is the batch and must be at least 1",
               want->name);
      return 400;
    }
    if (q->n_in > 0 && t->shape[0] != q->in[0].shape[0]) {
      snprintf(err, cap, "input '%s' has batch %lld, input '%s' %lld", want->name,
               (long long)t->shape[0], q->in[0].name, (long long)q->in[0].shape[0]);
      return 400;
    }
    q->data[q->n_in] = data;
    q->numel[q->n_in] = numel;
    q->n_in++;
  }
  for (size_t k = 0; k < q->n_out_names; k++) {
    bool found = false;
    for (size_t o = 0; o < mi->n_outputs; o++)
      if (!strcmp(mi->outputs[o].name, q->out_names[k])) {
        q->out_names[k] = mi->outputs[o].name;
        found = true;
      }
    if (!found) {
      snprintf(err, cap, "model '%s' has no output '%s'", sig->model, q->out_names[k]);
      return 400;
    }
  }
  q->rows = (size_t)q->in[0].shape[0];
  if (q->rows > sig->max_inputs) {
    snprintf(err, cap, "batch of %zu rows in one request; the limit is %zu (server.max_inputs)",
             q->rows, sig->max_inputs);
    return 413;
  }
  return 0;
}

int v2_req_parse(json_t *body, const v2_sig *sig, v2_req *q, char *err, size_t cap) {
  memset(q, 0, sizeof *q);
  json_t *id = json_object_get(body, "id");
  if (id && json_is_string(id)) {
    q->id = json_string_value(id);
    q->has_id = true;
  }
  json_t *inputs = json_object_get(body, "inputs");
  if (!json_is_array(inputs) || json_array_size(inputs) == 0) {
    snprintf(err, cap, "\"inputs\" must be a non-empty list of tensors");
    return 400;
  }
  /* "outputs" selection */
  json_t *outs = json_object_get(body, "outputs");
  if (outs && !json_is_array(outs)) {
    snprintf(err, cap, "\"outputs\" must be a list of {\"name\": ...}");
    return 400;
  }
  size_t oi;
  json_t *ov;
  json_array_foreach(outs, oi, ov) {
    json_t *nm = json_object_get(ov, "name");
    if (!json_is_string(nm) || q->n_out_names >= AT_MAX_OUTPUTS) {
      snprintf(err, cap, "\"outputs\"[%zu] needs a string \"name\"", oi);
      return 400;
    }
    snprintf(q->out_name_store[q->n_out_names], sizeof q->out_name_store[0], "%s",
             json_string_value(nm));
    q->out_names[q->n_out_names] = q->out_name_store[q->n_out_names];
    q->n_out_names++;
  }
  json_t *first = json_array_get(inputs, 0);
  json_t *dt = json_object_get(first, "datatype");
  int st;
  if (json_is_string(dt) && !strcmp(json_string_value(dt), "BYTES")) {
    q->text = true;
    st = text_path(body, first, json_array_size(inputs), sig, q, err, cap);
  } else {
    st = tensor_path(inputs, sig, q, err, cap);
  }
  if (st) v2_req_free(q);
  return st;
}

int v2_req_read(const v2_req *q, size_t k, void *buf, char *err, size_t cap) {
  const at_tensor *t = &q->in[k];
  size_t got = 0;
  int rc = collect_numbers(q->data[k], t->dtype, buf, &got, q->numel[k]);
  if (rc == -4) {
    snprintf(err, cap, "input '%s': FP32 data must be in the float range (|x| <= %g)", t->name,
             (double)FLT_MAX);
    return 400;
  }
  if (rc == -3) {
    snprintf(err, cap, "input '%s': %s data must be integers", t->name,
             t->dtype == AT_DTYPE_FLOAT32 ? "FP32" : "INT64");
    return 400;
  }
  if (rc || got != q->numel[k]) {
    snprintf(err, cap, "input '%s': \"data\" has %s%zu numbers, the shape needs %zu", t->name,
             rc == -1 ? "more than " : "", got, q->numel[k]);
    return 400;
  }
  return 0;
}

void v2_req_free(v2_req *q) {
  free(q->texts);
  free(q->lens);
  q->texts = NULL;
  q->lens = NULL;
}
