/* anytime/rng.h — a small seeded pseudo-random generator (xoshiro256**,
 * state expanded from the seed with splitmix64), shared by the load
 * generator's arrival schedule and the decoder's sampler so that a seed
 * means the same stream everywhere.
 *
 * Thread-safety: an at_rng is plain state; one thread at a time per state.
 */
#ifndef ANYTIME_RNG_H
#define ANYTIME_RNG_H

#include "anytime/api.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct at_rng {
  uint64_t s[4]; /* xoshiro256** state */
} at_rng;

/* Seed from one 64-bit value (splitmix64 expansion; any seed is fine). */
AT_API void at_rng_seed(at_rng *r, uint64_t seed);
/* The next 64 random bits. */
AT_API uint64_t at_rng_next(at_rng *r);
/* Uniform in [0, 1) with 53 bits. */
AT_API double at_rng_uniform(at_rng *r);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_RNG_H */
