/* src/plan/wquant.c — the sliding-window quantile (see wquant.h).
 *
 * DESIGN
 *   Like rate.c: the ring holds buckets head-B+1 .. head (absolute indices
 *   now/bucket_ns), slot = index mod B. Moving head forward subtracts the
 *   slots it passes over from the running totals and clears them, so
 *   total[] is always the sum of the ring. No lock here: the planner's lock
 *   covers it. */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "plan/ring.h"
#include "plan/wquant.h"

at_status at_wquant_init(at_wquant *w, uint64_t window_ns, double hi) {
  if (!w || window_ns < AT_WQ_BUCKETS || !(hi > 0) || !isfinite(hi))
    return at_fail(AT_ERR_INVALID_ARG, "window quantile: need a window >= %d ns and hi > 0",
                   AT_WQ_BUCKETS);
  memset(w, 0, sizeof *w);
  w->hi = hi;
  w->bucket_ns = window_ns / AT_WQ_BUCKETS;
  return AT_OK;
}

static void advance(at_wquant *w, uint64_t now_ns) {
  uint64_t from = w->head;
  uint64_t gap = plan_ring_step(&w->started, &w->head, now_ns / w->bucket_ns, AT_WQ_BUCKETS);
  for (uint64_t k = 1; k <= gap; k++) {
    uint32_t *slot = w->counts[(from + k) % AT_WQ_BUCKETS];
    for (int b = 0; b < AT_WQ_BINS; b++) {
      w->total[b] -= slot[b];
      w->n -= slot[b];
      slot[b] = 0;
    }
  }
}

void at_wquant_record(at_wquant *w, double value, uint64_t now_ns) {
  if (isnan(value)) return;
  advance(w, now_ns);
  uint64_t idx = now_ns / w->bucket_ns;
  if (idx + AT_WQ_BUCKETS <= w->head) return; /* older than the window */
  /* bin 0: <= 0 (the estimate was not short); bins 1..BINS-1 split (0, hi] */
  double x = value >= w->hi ? w->hi : value;
  int b = x <= 0 ? 0 : 1 + (int)(x / w->hi * (AT_WQ_BINS - 1));
  if (b >= AT_WQ_BINS) b = AT_WQ_BINS - 1;
  uint32_t *slot = w->counts[idx % AT_WQ_BUCKETS];
  if (slot[b] == UINT32_MAX) return;
  slot[b]++;
  w->total[b]++;
  w->n++;
}

uint64_t at_wquant_count(at_wquant *w, uint64_t now_ns) {
  advance(w, now_ns);
  return w->n;
}

double at_wquant_get(at_wquant *w, double q, uint64_t now_ns) {
  advance(w, now_ns);
  if (w->n == 0) return 0.0;
  /* rank of the quantile, 1-based: the ceil(q·n)-th smallest */
  uint64_t rank = (uint64_t)ceil(q * (double)w->n);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < AT_WQ_BINS; b++) {
    seen += w->total[b];
    if (seen >= rank) return b * w->hi / (AT_WQ_BINS - 1); /* the bin's upper edge */
  }
  return w->hi;
}
