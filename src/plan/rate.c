/* src/plan/rate.c — the sliding-window event-rate estimator (see rate.h).
 *
 * DESIGN
 *   The ring holds buckets head-n+1 .. head (absolute indices now/bucket_ns);
 *   slot = index mod n. Moving head forward clears the slots it passes over
 *   and subtracts them from the running totals, so total[ch] is always the
 *   sum of the ring's counts. No lock here: the planner's lock covers it. */
#include <stdlib.h>

#include "core/internal.h"
#include "plan/ring.h"
#include "plan/rate.h"

at_status at_rate_init(at_rate_window *w, uint64_t window_ns, int n) {
  if (!w || n < 2 || window_ns < (uint64_t)n)
    return at_fail(AT_ERR_INVALID_ARG, "rate window: need n >= 2 and window >= n ns");
  *w = (at_rate_window){.bucket_ns = window_ns / (uint64_t)n, .n = n};
  w->counts = calloc((size_t)n * AT_RATE_CHANNELS, sizeof *w->counts);
  if (!w->counts) return at_fail(AT_ERR_NOMEM, "rate window: %d buckets", n);
  return AT_OK;
}

void at_rate_free(at_rate_window *w) {
  if (!w) return;
  free(w->counts);
  w->counts = NULL;
}

static void advance(at_rate_window *w, uint64_t now_ns) {
  uint64_t from = w->head;
  uint64_t gap = plan_ring_step(&w->started, &w->head, now_ns / w->bucket_ns, (uint64_t)w->n);
  for (uint64_t k = 1; k <= gap; k++) {
    uint32_t *slot = w->counts + ((from + k) % (uint64_t)w->n) * AT_RATE_CHANNELS;
    for (int ch = 0; ch < AT_RATE_CHANNELS; ch++) {
      w->total[ch] -= slot[ch];
      slot[ch] = 0;
    }
  }
}

void at_rate_record(at_rate_window *w, int channel, uint64_t now_ns) {
  at_rate_record_n(w, channel, now_ns, 1);
}

void at_rate_record_n(at_rate_window *w, int channel, uint64_t now_ns, uint32_t n) {
  if (channel < 0 || channel >= AT_RATE_CHANNELS || n == 0) return;
  advance(w, now_ns);
  uint64_t idx = now_ns / w->bucket_ns;
  if (idx + (uint64_t)w->n <= w->head) return; /* older than the window */
  uint32_t *slot = w->counts + (idx % (uint64_t)w->n) * AT_RATE_CHANNELS;
  if (n > UINT32_MAX - slot[channel]) n = UINT32_MAX - slot[channel]; /* saturate */
  slot[channel] += n;
  w->total[channel] += n;
}

uint64_t at_rate_count(at_rate_window *w, int channel, uint64_t now_ns) {
  if (channel < 0 || channel >= AT_RATE_CHANNELS) return 0;
  advance(w, now_ns);
  return w->total[channel];
}

double at_rate_per_s(at_rate_window *w, int channel, uint64_t now_ns, uint64_t extra) {
  uint64_t count = at_rate_count(w, channel, now_ns) + extra;
  if (count == 0) return 0.0;
  /* The oldest bucket in the window starts at (head - n + 1) * bucket_ns.
   * If now lies before head's bucket (a late reader), use head's start. */
  uint64_t head_start = w->head * w->bucket_ns;
  uint64_t into = now_ns > head_start ? now_ns - head_start : 0;
  double span_ns = (double)(w->n - 1) * (double)w->bucket_ns + (double)into;
  return (double)count * 1e9 / span_ns;
}
