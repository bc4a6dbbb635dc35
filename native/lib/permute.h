/*
 * permute.h - a seeded random permutation of [0, n) that is never stored.
 *
 * For: visiting every block of a large region exactly once in a random order
 * (a shuffled pass) with O(1) memory: permute_at(p, i) is the i-th element of
 * the permutation. It is a 4-round Feistel network on the smallest even
 * number of bits that covers n, keyed from rng.h, with cycle walking to stay
 * below n (fewer than 4 steps on average). The same seed and n give the same
 * order on every machine.
 * Not for: cryptography, or statistically perfect shuffles (a Feistel network
 * reaches only a subset of all n! orders, plenty for IO workloads).
 */
#ifndef NATIVE_PERMUTE_H
#define NATIVE_PERMUTE_H

#include <stdint.h>

#define PERMUTE_ROUNDS 4

struct permutation {
	uint64_t n;
	unsigned half_bits;                /* each Feistel half has this many bits */
	uint64_t keys[PERMUTE_ROUNDS];
};

/* n may be anything up to 2^62; n == 0 gives an empty permutation. */
void permute_init(struct permutation *p, uint64_t n, uint64_t seed);

/* The element at position i (i < n); a bijection on [0, n). */
uint64_t permute_at(const struct permutation *p, uint64_t i);

#endif
