/*
 * rng.h - a small, seeded, reproducible pseudo-random number generator.
 *
 * For: workload generation (offsets, fill data) where the same seed must give
 * the same sequence on every machine and build: xoshiro256** seeded through
 * splitmix64, both fully specified here, so results never depend on libc.
 * Not for: anything security-related, and not thread-safe (one per thread).
 */
#ifndef NATIVE_RNG_H
#define NATIVE_RNG_H

#include <stddef.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Any seed, including 0, gives a valid, distinct stream. */
void rng_seed(struct rng *r, uint64_t seed);

/* Next 64 uniformly distributed bits. */
uint64_t rng_next(struct rng *r);

/* Uniform integer in [0, n), without modulo bias; n must be > 0. */
uint64_t rng_below(struct rng *r, uint64_t n);

/* Uniform double in [0, 1) with 53 random bits. */
double rng_unit(struct rng *r);

/* Fills len bytes with random data. */
void rng_fill(struct rng *r, void *buf, size_t len);

#endif
