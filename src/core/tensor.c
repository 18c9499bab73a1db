/* src/core/tensor.c — small helpers over the plain tensor descriptors of
 * anytime/tensor.h: dtype names and sizes, element counts. */
#include <stdint.h>

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
