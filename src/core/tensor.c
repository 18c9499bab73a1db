/* src/core/tensor.c — small helpers over the plain tensor descriptors of
 * anytime/tensor.h: dtype names and sizes, element counts, and the pooling
 * an embedder's per-token output goes through. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "anytime/tensor.h"

const char *at_dtype_name(at_dtype t) {
  switch (t) {
    case AT_DTYPE_FLOAT32: return "FP32";
    case AT_DTYPE_INT64: return "INT64";
    case AT_DTYPE_INT32: return "INT32";
    case AT_DTYPE_UINT8: return "UINT8";
    case AT_DTYPE_INT8: return "INT8";
    case AT_DTYPE_BOOL: return "BOOL";
    case AT_DTYPE_FLOAT16: return "FP16";
    case AT_DTYPE_FLOAT64: return "FP64";
    case AT_DTYPE_STRING: return "BYTES";
    case AT_DTYPE_UNKNOWN: break;
  }
  return "UNKNOWN";
}

size_t at_dtype_size(at_dtype t) {
  switch (t) {
    case AT_DTYPE_FLOAT32: return 4;
    case AT_DTYPE_INT64: return 8;
    case AT_DTYPE_INT32: return 4;
    case AT_DTYPE_UINT8: return 1;
    case AT_DTYPE_INT8: return 1;
    case AT_DTYPE_BOOL: return 1;
    case AT_DTYPE_FLOAT16: return 2;
    case AT_DTYPE_FLOAT64: return 8;
    case AT_DTYPE_STRING:
    case AT_DTYPE_UNKNOWN: break;
  }
  return 0;
}

size_t at_tensor_numel(const at_tensor *t, int *overflow) {
  if (overflow) *overflow = 0;
  size_t n = 1;
  for (size_t i = 0; i < t->ndim && i < AT_MAX_DIMS; i++) {
    int64_t d = t->shape[i];
    if (d < 0 || (d > 0 && n > SIZE_MAX / (size_t)d)) {
      if (overflow) *overflow = 1;
      return 0;
    }
    n *= (size_t)d;
  }
  return n;
}

size_t at_text_inputs(const at_model_info *mi, int64_t batch, int64_t seq, int64_t *ids,
                      int64_t *mask, int64_t *other, at_tensor out[3]) {
  size_t n = 0;
  for (size_t k = 0; k < mi->n_inputs && n < 3; k++) {
    const char *name = mi->inputs[k].name;
    out[n++] = (at_tensor){.name = name, .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {batch, seq},
                           .data = !strcmp(name, "input_ids")        ? ids
                                   : !strcmp(name, "attention_mask") ? mask
                                                                     : other};
  }
  return n;
}

void at_mean_pool(const float *x, size_t n_rows, size_t dim, float *out) {
  for (size_t h = 0; h < dim; h++) out[h] = 0;
  for (size_t t = 0; t < n_rows; t++)
    for (size_t h = 0; h < dim; h++) out[h] += x[t * dim + h];
  for (size_t h = 0; h < dim; h++) out[h] /= (float)n_rows;
}

void at_pool(at_pooling mode, const float *x, size_t n_rows, size_t dim, float *out) {
  at_pool_from(mode, x, n_rows, 0, dim, out);
}

void at_pool_from(at_pooling mode, const float *x, size_t n_rows, size_t skip, size_t dim,
                  float *out) {
  if (n_rows && skip >= n_rows) skip = n_rows - 1;
  switch (mode) {
    case AT_POOL_CLS:
    case AT_POOL_NONE: memcpy(out, x, dim * sizeof *out); return;
    case AT_POOL_LAST: memcpy(out, x + (n_rows - 1) * dim, dim * sizeof *out); return;
    case AT_POOL_MAX:
      memcpy(out, x + skip * dim, dim * sizeof *out);
      for (size_t t = skip + 1; t < n_rows; t++)
        for (size_t h = 0; h < dim; h++)
          if (x[t * dim + h] > out[h]) out[h] = x[t * dim + h];
      return;
    case AT_POOL_MEAN_SQRT_LEN:
    case AT_POOL_WEIGHTED_MEAN: {
      /* sums in double: a long text's weights reach n(n+1)/2 */
      int weighted = mode == AT_POOL_WEIGHTED_MEAN;
      double n = (double)n_rows, k = (double)skip;
      double wsum = weighted ? (n * (n + 1) - k * (k + 1)) / 2 : sqrt(n - k);
      for (size_t h = 0; h < dim; h++) {
        double acc = 0;
        for (size_t t = skip; t < n_rows; t++)
          acc += (weighted ? (double)(t + 1) : 1.0) * (double)x[t * dim + h];
        out[h] = (float)(acc / wsum);
      }
      return;
    }
    case AT_POOL_MEAN:
    default: at_mean_pool(x + skip * dim, n_rows - skip, dim, out); return;
  }
}

void at_l2_normalize(float *v, size_t n) {
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)v[i] * v[i];
  if (ss > 0) {
    float inv = (float)(1.0 / sqrt(ss));
    for (size_t i = 0; i < n; i++) v[i] *= inv;
  }
}

double at_cosine(const float *a, const float *b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

void at_class_scores(const float *logits, size_t n, bool multi_label, float *out) {
  if (multi_label) {
    for (size_t i = 0; i < n; i++) out[i] = (float)(1.0 / (1.0 + exp(-(double)logits[i])));
    return;
  }
  float mx = logits[0];
  for (size_t i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += exp((double)(logits[i] - mx));
  for (size_t i = 0; i < n; i++) out[i] = (float)(exp((double)(logits[i] - mx)) / sum);
}

const char *at_pooling_name(at_pooling p) {
  static const char *const names[] = {"mean", "cls", "max", "mean_sqrt_len",
                                      "weighted_mean", "last", "none"};
  return (unsigned)p < sizeof names / sizeof *names ? names[p] : "?";
}

int at_model_info_head_output(const at_model_info *mi, const char *name, size_t rank) {
  for (size_t k = 0; k < mi->n_outputs; k++)
    if (strcmp(mi->outputs[k].name, name) == 0) return (int)k;
  for (size_t k = 0; k < mi->n_outputs; k++)
    if (mi->outputs[k].ndim == rank && mi->outputs[k].dtype == AT_DTYPE_FLOAT32) return (int)k;
  return -1;
}

int at_model_info_task_head(const at_model_info *mi, bool embed, at_pooling *pool, size_t *dim) {
  size_t rank = embed ? 3 : 2;
  const char *want = embed ? "last_hidden_state" : "logits";
  if (embed)
    for (size_t k = 0; k < mi->n_outputs; k++)
      if (!strcmp(mi->outputs[k].name, "sentence_embedding") && mi->outputs[k].ndim == 2)
        want = "sentence_embedding", rank = 2;
  int idx = at_model_info_head_output(mi, want, rank);
  if (idx < 0 || mi->outputs[idx].ndim != rank || mi->outputs[idx].dtype != AT_DTYPE_FLOAT32 ||
      mi->outputs[idx].dims[rank - 1] < 1)
    return -1;
  if (embed && rank == 2) *pool = AT_POOL_NONE;
  *dim = (size_t)mi->outputs[idx].dims[rank - 1];
  return idx;
}
