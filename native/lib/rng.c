/*
 * rng.c - xoshiro256** (Blackman & Vigna, 2018) seeded with splitmix64.
 * See rng.h for what it is for.
 */
#include "rng.h"

#include <string.h>

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotate_left(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 never yields four zero words, the one bad xoshiro state. */
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotate_left(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotate_left(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/*
	 * Reject the lowest (2^64 mod n) values so that every residue is
	 * equally likely; at most half the draws are rejected, usually none.
	 */
	uint64_t threshold = -n % n;

	for (;;) {
		uint64_t x = rng_next(r);

		if (x >= threshold)
			return x % n;
	}
}

double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

void rng_fill(struct rng *r, void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len >= 8) {
		uint64_t x = rng_next(r);

		memcpy(p, &x, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t x = rng_next(r);

		memcpy(p, &x, len);
	}
}
