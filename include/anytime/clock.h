/* anytime/clock.h — the one clock of the anytime API: every timestamp the
 * library takes or accepts (at_timing, at_item_result, the planner's now_ns)
 * is CLOCK_MONOTONIC in nanoseconds, as returned here.
 *
 * Thread-safety: safe from any thread.
 */
#ifndef ANYTIME_CLOCK_H
#define ANYTIME_CLOCK_H

#include "anytime/api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds. */
AT_API uint64_t at_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_CLOCK_H */
