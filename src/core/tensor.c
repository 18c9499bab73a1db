/* src/core/tensor.c — small helpers over the plain tensor descriptors of
 * anytime/tensor.h: dtype names and sizes, element counts. */
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

void at_mean_pool(const float *x, size_t n_rows, size_t dim, float *out) {
  for (size_t h = 0; h < dim; h++) out[h] = 0;
  for (size_t t = 0; t < n_rows; t++)
    for (size_t h = 0; h < dim; h++) out[h] += x[t * dim + h];
  for (size_t h = 0; h < dim; h++) out[h] /= (float)n_rows;
}

int at_model_info_head_output(const at_model_info *mi, const char *name, size_t rank) {
  for (size_t k = 0; k < mi->n_outputs; k++)
    if (strcmp(mi->outputs[k].name, name) == 0) return (int)k;
  for (size_t k = 0; k < mi->n_outputs; k++)
    if (mi->outputs[k].ndim == rank && mi->outputs[k].dtype == AT_DTYPE_FLOAT32) return (int)k;
  return -1;
}
