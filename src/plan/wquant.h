/* src/plan/wquant.h — a sliding-window quantile of bounded values (internal
 * to src/plan): the planner's overrun allowance, the q-quantile of
 * (answer time − estimate) over the last `window` of observations.
 *
 * Values are counted per time bucket in AT_WQ_BINS bins: bin 0 for values
 * <= 0, the others splitting (0, hi] evenly (larger values count as hi); a
 * running sum of the buckets in the window makes recording O(1) and reading
 * O(AT_WQ_BINS). The quantile is reported as the upper edge of the bin that
 * holds it (0 for bin 0), so it errs high by at most hi/(AT_WQ_BINS - 1). Old buckets
 * leave the window whole, so after a burst of bad answers the allowance
 * falls back within one window once answers are good again — unlike a
 * stochastic tracker, whose downward step at q = 0.999 needs a thousand
 * observations per step.
 *
 * Not thread-safe by itself: the owner (src/plan/planner.c) holds its lock
 * around every call. */
#ifndef ANYTIME_PLAN_WQUANT_H
#define ANYTIME_PLAN_WQUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "anytime/status.h"

#define AT_WQ_BINS 100
#define AT_WQ_BUCKETS 10

typedef struct at_wquant {
  double hi;          /* values are clamped to [0, hi] */
  uint64_t bucket_ns; /* window / AT_WQ_BUCKETS */
  bool started;
  uint64_t head;      /* absolute index of the newest bucket */
  uint32_t counts[AT_WQ_BUCKETS][AT_WQ_BINS];
  uint64_t total[AT_WQ_BINS]; /* sum over the buckets in the window */
  uint64_t n;                 /* sum of total[] */
} at_wquant;

/* Set up a window of `window_ns` (>= AT_WQ_BUCKETS ns) over values in
 * [0, hi] (hi > 0). Returns AT_OK or AT_ERR_INVALID_ARG. */
at_status at_wquant_init(at_wquant *w, uint64_t window_ns, double hi);

/* Record one value at `now_ns` (clamped; NaN is ignored). */
void at_wquant_record(at_wquant *w, double value, uint64_t now_ns);

/* The q-quantile (0 < q < 1) of the values in the window at `now_ns`: the
 * upper edge of the bin holding the ceil(q·n)-th smallest value; 0 when the
 * window is empty. */
double at_wquant_get(at_wquant *w, double q, uint64_t now_ns);

/* Values in the window at `now_ns`. */
uint64_t at_wquant_count(at_wquant *w, uint64_t now_ns);

#endif
