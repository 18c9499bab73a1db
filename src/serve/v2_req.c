/* src/serve/v2_req.c — KServe V2 infer body validation (see v2_req.h). The
 * checks and messages are the ones routes_v2.c has always applied, in the
 * same order: first names, types and shapes (no data read), the data only
 * when the route asks, after admission. The binary data extension adds a
 * walk over the bytes after the JSON header: each input with a
 * "binary_data_size" takes the next that many bytes (checked against its
 * shape before admission; decoded, like JSON data, after it). */
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

/* The binary walk: bin[0..len) still to hand out from `off`. */
typedef struct bin_cursor {
  const unsigned char *p;
  size_t len, off;
} bin_cursor;

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) {
  return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF),
 * as jansson demands of JSON strings: a binary text must meet the same bar. */
static bool utf8_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t k;
    unsigned min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0)
      k = 1, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0)
      k = 2, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0)
      k = 3, min = 0x10000, c &= 0x07;
    else
      return false;
    if (n - i <= k) return false;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return false;
      c = c << 6 | (s[i + j] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    i += k + 1;
  }
  return true;
}

/* inputs[ii]'s "parameters"."binary_data_size": 1 with *size set, 0 when
 * not given, -1 (message in err) when it is not a non-negative integer or
 * the request has no binary section (bc NULL) to take it from. */
static int bin_size_of(json_t *in, size_t ii, const bin_cursor *bc, size_t *size, char *err,
                       size_t cap) {
  json_t *params = json_object_get(in, "parameters");
  json_t *bs = json_is_object(params) ? json_object_get(params, "binary_data_size") : NULL;
  if (!bs) return 0;
  if (!json_is_integer(bs) || json_integer_value(bs) < 0) {
    snprintf(err, cap, "inputs[%zu]: \"binary_data_size\" must be a non-negative integer", ii);
    return -1;
  }
  if (!bc) {
    snprintf(err, cap,
             "inputs[%zu] has \"binary_data_size\" but the request has no "
             "%s header saying where its binary data starts",
             ii, V2_BIN_HEADER);
    return -1;
  }
  if (json_object_get(in, "data")) {
    snprintf(err, cap, "inputs[%zu] has both \"data\" and \"binary_data_size\": give one", ii);
    return -1;
  }
  json_int_t v = json_integer_value(bs);
  if ((uint64_t)v > bc->len - bc->off) {
    snprintf(err, cap,
             "inputs[%zu]: \"binary_data_size\" %lld runs past the binary data "
             "(%zu bytes after the JSON header, %zu of them left for it)",
             ii, (long long)v, bc->len, bc->len - bc->off);
    return -1;
  }
  *size = (size_t)v;
  return 1;
}

/* A binary BYTES input: elements of 4-byte length + bytes filling raw[n]
 * exactly; each is a text. 0, or the status with the message. */
int v2_bytes_split(const unsigned char *raw, size_t n, size_t max, const char **texts, size_t *lens,
                   size_t *count, char *err, size_t cap) {
  size_t off = 0, k = 0;
  *count = 0;
  while (off < n) {
    if (n - off < 4) {
      snprintf(err, cap,
               "BYTES input: %zu stray bytes at the end of its binary data (each "
               "element is a 4-byte length and its bytes)",
               n - off);
      return 400;
    }
    uint32_t len = le32(raw + off);
    off += 4;
    if (len > n - off) {
      snprintf(err, cap, "BYTES input: element %zu says %u bytes, only %zu remain in its data", k,
               len, n - off);
      return 400;
    }
    if (k >= max) {
      snprintf(err, cap, "more than %zu texts in one request (server.max_inputs)", max);
      return 413;
    }
    if (!utf8_ok(raw + off, len)) {
      snprintf(err, cap, "BYTES input: element %zu is not valid UTF-8", k);
      return 400;
    }
    texts[k] = (const char *)raw + off;
    lens[k] = len;
    k++;
    off += len;
  }
  *count = k;
  return 0;
}

static int bin_texts(const unsigned char *raw, size_t n, json_t *shape, const v2_sig *sig,
                     v2_req *q, char *err, size_t cap) {
  size_t k;
  int st = v2_bytes_split(raw, n, sig->max_inputs, q->texts, q->lens, &k, err, cap);
  if (st) return st;
  q->n_texts = k;
  /* the shape, when it is one, must count the elements sent */
  if (json_is_array(shape)) {
    size_t numel = 1;
    for (size_t d = 0; d < json_array_size(shape); d++) {
      json_t *dv = json_array_get(shape, d);
      if (!json_is_integer(dv) || json_integer_value(dv) < 0 ||
          json_integer_value(dv) > V2_MAX_ELEMS) {
        snprintf(err, cap, "BYTES input: shape must be non-negative integers");
        return 400;
      }
      numel *= (size_t)json_integer_value(dv);
      if (numel > V2_MAX_ELEMS) numel = V2_MAX_ELEMS + 1;
    }
    if (numel != k) {
      snprintf(err, cap, "BYTES input: its shape holds %zu elements, its binary data %zu", numel,
               k);
      return 400;
    }
  }
  return 0;
}

static int text_path(json_t *body, json_t *first, size_t n_inputs, const v2_sig *sig, v2_req *q,
                     bin_cursor *bc, char *err, size_t cap) {
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
  size_t bsize = 0;
  int bk = bin_size_of(first, 0, bc, &bsize, err, cap);
  if (bk < 0) return 400;
  if (bk > 0) {
    int st = bin_texts(bc->p + bc->off, bsize, json_object_get(first, "shape"), sig, q, err, cap);
    if (st) return st;
    bc->off += bsize;
    n = q->n_texts;
  }
  int rc = bk > 0 ? 0
                  : collect_strings(json_object_get(first, "data"), q->texts, q->lens, &n,
                                    sig->max_inputs);
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

static int tensor_path(json_t *inputs, const v2_sig *sig, v2_req *q, bin_cursor *bc, char *err,
                       size_t cap) {
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
    size_t bsize = 0;
    int bk = bin_size_of(iv, ii, bc, &bsize, err, cap);
    if (bk < 0) return 400;
    if (!json_is_string(nm) || !json_is_array(shp) || !json_is_string(dty) || (!data && !bk)) {
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
    q->wire[q->n_in] = is_i64 ? AT_DTYPE_INT64 : is_i32 ? AT_DTYPE_INT32 : AT_DTYPE_FLOAT32;
    if (bk) {
      size_t want_bytes = numel * at_dtype_size(q->wire[q->n_in]);
      if (bsize != want_bytes) {
        snprintf(err, cap,
                 "input '%s': binary_data_size is %zu bytes; its shape of %zu %s "
                 "elements needs %zu",
                 want->name, bsize, numel, ds, want_bytes);
        return 400;
      }
      q->raw[q->n_in] = bc->p + bc->off;
      q->raw_len[q->n_in] = bsize;
      bc->off += bsize;
    }
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

int v2_bin_split(const char *value, size_t body_len, size_t *json_len, char *err, size_t cap) {
  *json_len = body_len;
  if (!value) return 0;
  size_t v = 0, i = 0;
  for (; value[i]; i++) {
    if (value[i] < '0' || value[i] > '9' || i >= 18) {
      snprintf(err, cap, "%s must be a decimal number of bytes (at most 18 digits)", V2_BIN_HEADER);
      return 400;
    }
    v = v * 10 + (size_t)(value[i] - '0');
  }
  if (i == 0 || v == 0) {
    snprintf(err, cap, "%s must be the JSON header's length in bytes, at least 1", V2_BIN_HEADER);
    return 400;
  }
  if (v > body_len) {
    snprintf(err, cap, "%s is %zu but the body has only %zu bytes", V2_BIN_HEADER, v, body_len);
    return 400;
  }
  *json_len = v;
  return 0;
}

bool v2_req_out_binary(const v2_req *q, const char *name) {
  for (size_t k = 0; k < q->n_out_names; k++)
    if (!strcmp(q->out_names[k], name) && q->out_bin[k] >= 0) return q->out_bin[k] == 1;
  return q->bin_out_default;
}

int v2_req_parse(json_t *body, const v2_sig *sig, v2_req *q, char *err, size_t cap) {
  return v2_req_parse_bin(body, NULL, 0, sig, q, err, cap);
}

int v2_req_parse_bin(json_t *body, const unsigned char *bin, size_t bin_len, const v2_sig *sig,
                     v2_req *q, char *err, size_t cap) {
  memset(q, 0, sizeof *q);
  bin_cursor cur = {.p = bin, .len = bin_len}, *bc = bin ? &cur : NULL;
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
    json_t *op = json_object_get(ov, "parameters");
    json_t *bd = json_is_object(op) ? json_object_get(op, "binary_data") : NULL;
    if (bd && !json_is_boolean(bd)) {
      snprintf(err, cap,
               "\"outputs\"[%zu]: \"parameters\".\"binary_data\" must be true or "
               "false",
               oi);
      return 400;
    }
    if (json_is_object(op) && json_object_get(op, "classification")) {
      /* Triton's classification extension would change what the output
       * holds: refused, not ignored */
      snprintf(err, cap,
               "\"outputs\"[%zu]: the classification extension is not supported: ask for "
               "\"probabilities\" and rank them",
               oi);
      return 400;
    }
    q->out_bin[q->n_out_names] = bd ? (signed char)json_is_true(bd) : -1;
    snprintf(q->out_name_store[q->n_out_names], sizeof q->out_name_store[0], "%s",
             json_string_value(nm));
    q->out_names[q->n_out_names] = q->out_name_store[q->n_out_names];
    q->n_out_names++;
  }
  json_t *rp = json_object_get(body, "parameters");
  json_t *bo = json_is_object(rp) ? json_object_get(rp, "binary_data_output") : NULL;
  if (bo && !json_is_boolean(bo)) {
    snprintf(err, cap, "\"parameters\".\"binary_data_output\" must be true or false");
    return 400;
  }
  q->bin_out_default = bo && json_is_true(bo);
  json_t *first = json_array_get(inputs, 0);
  json_t *dt = json_object_get(first, "datatype");
  int st;
  if (json_is_string(dt) && !strcmp(json_string_value(dt), "BYTES")) {
    q->text = true;
    st = text_path(body, first, json_array_size(inputs), sig, q, bc, err, cap);
  } else {
    st = tensor_path(inputs, sig, q, bc, err, cap);
  }
  if (!st && bc && cur.off != cur.len) {
    snprintf(err, cap,
             "the inputs' binary_data_size add up to %zu bytes, but %zu follow the "
             "JSON header (%s)",
             cur.off, cur.len, V2_BIN_HEADER);
    st = 400;
  }
  if (st) v2_req_free(q);
  return st;
}

/* Binary data of input k into buf, widened as v2_req_read() says. */
static int read_raw(const v2_req *q, size_t k, void *buf, char *err, size_t cap) {
  const at_tensor *t = &q->in[k];
  const unsigned char *p = q->raw[k];
  size_t n = q->numel[k];
  for (size_t i = 0; i < n; i++) {
    switch (q->wire[k]) {
      case AT_DTYPE_INT64: ((int64_t *)buf)[i] = (int64_t)le64(p + 8 * i); break;
      case AT_DTYPE_INT32: ((int64_t *)buf)[i] = (int32_t)le32(p + 4 * i); break;
      default: {
        uint32_t bits = le32(p + 4 * i);
        float f;
        memcpy(&f, &bits, sizeof f);
        if (!isfinite(f)) {
          snprintf(err, cap, "input '%s': FP32 element %zu is not a finite number", t->name, i);
          return 400;
        }
        ((float *)buf)[i] = f;
      }
    }
  }
  return 0;
}

int v2_req_read(const v2_req *q, size_t k, void *buf, char *err, size_t cap) {
  const at_tensor *t = &q->in[k];
  if (q->raw[k] || !q->data[k]) return read_raw(q, k, buf, err, cap);
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

size_t v2_mask_len(const int64_t *mask, size_t S) {
  size_t len = 0;
  while (len < S && mask[len] == 1) len++;
  for (size_t k = len; k < S; k++)
    if (mask[k] != 0) return 0;
  return len;
}
