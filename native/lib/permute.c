/*
 * permute.c - Feistel-network permutation with cycle walking (see permute.h).
 */
#include "permute.h"

#include "rng.h"

void permute_init(struct permutation *p, uint64_t n, uint64_t seed)
{
	struct rng rng;
	unsigned bits = 2;

	while (bits < 64 && (1ULL << bits) < n)
		bits += 2;
	p->n = n;
	p->half_bits = bits / 2;
	rng_seed(&rng, seed);
	for (int r = 0; r < PERMUTE_ROUNDS; r++)
		p->keys[r] = rng_next(&rng);
}

/* A well-mixed function of one half and the round key (splitmix64's finaliser). */
static uint64_t round_function(uint64_t half, uint64_t key)
{
	uint64_t z = half ^ key;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* One pass of the network: a bijection on [0, 2^(2*half_bits)). */
static uint64_t encrypt(const struct permutation *p, uint64_t x)
{
	uint64_t mask = (1ULL << p->half_bits) - 1;
	uint64_t left = x >> p->half_bits, right = x & mask;

	for (int r = 0; r < PERMUTE_ROUNDS; r++) {
		uint64_t next = left ^ (round_function(right, p->keys[r]) & mask);

		left = right;
		right = next;
	}
	return (left << p->half_bits) | right;
}

uint64_t permute_at(const struct permutation *p, uint64_t i)
{
	uint64_t x = i;

	/* Walk the cycle of i until it lands inside [0, n) again: still a bijection. */
	do
		x = encrypt(p, x);
	while (x >= p->n);
	return x;
}
