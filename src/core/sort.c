/* src/core/sort.c — the one qsort comparator for doubles the library's
 * medians, quantiles and fair level share (core/internal.h). */
#include "core/internal.h"

int at_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
