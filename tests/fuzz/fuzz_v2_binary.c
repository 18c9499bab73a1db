/* tests/fuzz/fuzz_v2_binary.c — libFuzzer driver for the KServe V2 binary
 * tensor data extension (src/serve/v2_req.c: v2_bin_split,
 * v2_req_parse_bin, v2_req_read on binary data), against the signature
 * fuzz_v2_req.c uses (input_ids, attention_mask, token_type_ids INT64,
 * scale FP32; max_inputs 8). Input: byte 0 picks classifier/embedder and
 * whether the request has the header at all; bytes 1..2 (little-endian)
 * are the Inference-Header-Content-Length value; the rest is the body. The
 * contract checked:
 *   - v2_bin_split accepts exactly 1..body length and splits there;
 *   - a refusal is 400/413 with a message; an accepted request whose JSON
 *     header names binary_data_size has the header, and the binary inputs'
 *     sizes add up to the bytes after it exactly, each input's bytes lie
 *     inside them, in input order without overlap, and equal numel x its
 *     datatype's size; no input has both "data" and binary data;
 *   - reading binary data succeeds unless an FP32 value is not finite, and
 *     gives the little-endian values (INT32 widened with its sign);
 *   - binary texts lie inside the binary bytes and are valid UTF-8 by
 *     jansson's judgement (it must accept them as a JSON string).
 * Seeds: tests/fuzz/corpus/v2_binary/. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
};

static int64_t rd(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  if (n == 4) return (int32_t)(uint32_t)v;
  return (int64_t)v;
}

/* jansson's UTF-8 judgement on a text: as a JSON string it must load. */
static int utf8_by_jansson(const char *s, size_t n) {
  json_t *str = json_stringn(s, n);
  int ok = str != NULL;
  json_decref(str);
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  at_model_info mi = {.n_inputs = 4, .inputs = k_inputs, .n_outputs = 1, .outputs = k_outputs};
  v2_sig sig = {.mi = &mi, .embed = data[0] & 1, .model = "m", .max_inputs = 8};
  bool has_header = !(data[0] & 2);
  const unsigned char *body = data + 3;
  size_t len = size - 3;
  char value[16];
  snprintf(value, sizeof value, "%u", (unsigned)(data[1] | data[2] << 8));
  size_t jlen = 0;
  char err[512] = "";
  int st = v2_bin_split(has_header ? value : NULL, len, &jlen, err, sizeof err);
  unsigned hv = (unsigned)(data[1] | data[2] << 8);
  if (!has_header) {
    if (st || jlen != len) abort();
  } else if (hv >= 1 && hv <= len) {
    if (st || jlen != hv) abort();
  } else {
    if (st != 400 || !err[0]) abort();
    return 0;
  }
  json_error_t jerr;
  json_t *j = json_loadb((const char *)body, jlen, JSON_REJECT_DUPLICATES, &jerr);
  if (!j) return 0;
  if (!json_is_object(j)) {
    json_decref(j);
    return 0;
  }
  const unsigned char *bin = has_header ? body + jlen : NULL;
  size_t bin_len = len - jlen;
  v2_req q;
  err[0] = '\0';
  st = v2_req_parse_bin(j, bin, bin_len, &sig, &q, err, sizeof err);
  if (st) {
    if ((st != 400 && st != 413) || !err[0]) abort();
    v2_req_free(&q);
    json_decref(j);
    return 0;
  }
  json_t *inputs = json_object_get(j, "inputs");
  size_t used = 0;
  if (q.text) {
    json_t *p = json_object_get(json_array_get(inputs, 0), "parameters");
    json_t *bs = json_is_object(p) ? json_object_get(p, "binary_data_size") : NULL;
    if (bs) {
      if (!bin) abort();
      used = (size_t)json_integer_value(bs);
      if (json_object_get(json_array_get(inputs, 0), "data")) abort();
      for (size_t i = 0; i < q.n_texts; i++) {
        const unsigned char *t = (const unsigned char *)q.texts[i];
        if (t < bin || t + q.lens[i] > bin + bin_len) abort();
        if (!utf8_by_jansson(q.texts[i], q.lens[i])) abort();
      }
    }
  } else {
    const unsigned char *next = bin;
    for (size_t k = 0; k < q.n_in; k++) {
      if (!q.raw[k]) {
        if (!q.data[k]) abort();
        continue;
      }
      if (q.data[k] || !bin) abort();
      size_t esz = at_dtype_size(q.wire[k]);
      if (q.raw[k] < next || q.raw[k] + q.raw_len[k] > bin + bin_len) abort();
      if (q.raw_len[k] != q.numel[k] * esz) abort();
      next = q.raw[k] + q.raw_len[k];
      used += q.raw_len[k];
      void *buf = malloc((q.numel[k] ? q.numel[k] : 1) * 8);
      if (!buf) abort();
      char e2[512] = "";
      int rs = v2_req_read(&q, k, buf, e2, sizeof e2);
      bool nonfinite = false;
      for (size_t i = 0; i < q.numel[k]; i++) {
        if (q.wire[k] == AT_DTYPE_FLOAT32) {
          uint32_t bits = (uint32_t)rd(q.raw[k] + 4 * i, 4);
          float f;
          memcpy(&f, &bits, 4);
          if (!isfinite(f)) {
            if (rs != 400 || !e2[0]) abort();
            nonfinite = true;
            break;
          }
          if (rs == 0 && memcmp(&((float *)buf)[i], &f, 4)) abort();
        } else if (rs != 0 || ((int64_t *)buf)[i] != rd(q.raw[k] + esz * i, esz)) {
          abort();
        }
      }
      if (rs != 0 && !nonfinite) abort();
      free(buf);
    }
  }
  if (bin && used != bin_len) abort(); /* every byte after the header taken */
  v2_req_free(&q);
  json_decref(j);
  return 0;
}
