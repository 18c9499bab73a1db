/* src/plan/ring.h — the step of the planner's bucket rings (the rate
 * window, rate.h, and the window quantile, wquant.h): buckets of a fixed
 * width over absolute indices (now / bucket_ns), slot = index mod n.
 * Internal to src/plan; pure, the caller's lock covers its ring. */
#ifndef ANYTIME_PLAN_RING_H
#define ANYTIME_PLAN_RING_H

#include <stdbool.h>
#include <stdint.h>

/* The ring's newest bucket becomes `idx` (an absolute index, now /
 * bucket_ns); returns how many buckets after the old head (at most n) the
 * caller must clear: slots (old head + k) mod n for k = 1 .. that many. A
 * ring's first step only sets its head. */
static inline uint64_t plan_ring_step(bool *started, uint64_t *head, uint64_t idx, uint64_t n) {
  if (!*started) {
    *started = true;
    *head = idx;
    return 0;
  }
  if (idx <= *head) return 0;
  uint64_t gap = idx - *head;
  *head = idx;
  return gap < n ? gap : n;
}

#endif
