/* src/plan/rate.h — the planner's sliding-window event-rate estimator
 * (internal). Events land in `n` buckets of window/n nanoseconds each, in
 * AT_RATE_CHANNELS independent channels (offered and admitted arrivals,
 * and the planner's offered high and normal priority texts);
 * a running total per channel makes recording and reading O(1), except
 * that an advance after an idle gap clears at most n buckets.
 *
 * Not thread-safe by itself: the owner (src/plan/planner.c) holds its lock
 * around every call. */
#ifndef ANYTIME_PLAN_RATE_H
#define ANYTIME_PLAN_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "anytime/status.h"

#define AT_RATE_CHANNELS 4

typedef struct at_rate_window {
  uint64_t bucket_ns;  /* window / n */
  int n;               /* buckets */
  bool started;        /* head is meaningful */
  uint64_t head;       /* absolute index (now / bucket_ns) of the newest bucket */
  uint32_t *counts;    /* n * AT_RATE_CHANNELS, slot-major */
  uint64_t total[AT_RATE_CHANNELS];
} at_rate_window;

/* Set up a window of `window_ns` split into `n` (>= 2) buckets. Returns
 * AT_OK, AT_ERR_INVALID_ARG (window_ns < n), AT_ERR_NOMEM. */
at_status at_rate_init(at_rate_window *w, uint64_t window_ns, int n);
void at_rate_free(at_rate_window *w);

/* Record one event in `channel` at `now_ns`. Events older than the window
 * are dropped; events older than the newest bucket but inside the window
 * count in their own bucket. */
void at_rate_record(at_rate_window *w, int channel, uint64_t now_ns);
/* The same for `n` events at once (a bucket saturates at UINT32_MAX). */
void at_rate_record_n(at_rate_window *w, int channel, uint64_t now_ns, uint32_t n);

/* Events in `channel` in the buckets that make up the window at `now_ns`
 * (the current bucket and the n-1 before it). */
uint64_t at_rate_count(at_rate_window *w, int channel, uint64_t now_ns);

/* Events per second in `channel` at `now_ns`: (count + extra) / span, where
 * span runs from the start of the oldest bucket in the window to now
 * (between (n-1)/n and 1 window). `extra` counts events not recorded (yet),
 * e.g. the arrival being decided. Before the first event the window is
 * empty, so the estimate starts low rather than high. */
double at_rate_per_s(at_rate_window *w, int channel, uint64_t now_ns, uint64_t extra);

#endif
