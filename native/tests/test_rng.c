/*
 * test_rng.c - the PRNG: reference vectors, determinism, unbiased bounded
 * draws that stay in range and are roughly uniform.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rng.h"

static void test_reference_vectors(void)
{
	/* From the reference xoshiro256starstar.c and splitmix64.c (Vigna). */
	static const uint64_t from_1234[] = { 11520, 0, 1509978240, 1215971899390074240ULL };
	struct rng r = { .s = { 1, 2, 3, 4 } };
	bool same = true;

	for (int i = 0; i < 4; i++)
		same = same && rng_next(&r) == from_1234[i];
	CHECK(same, "xoshiro256** from state {1,2,3,4} matches the reference outputs");
	rng_seed(&r, 0);
	CHECK(r.s[0] == 0xe220a8397b1dcdafULL, "seed 0: first splitmix64 word is the reference value");
}

static void test_determinism(void)
{
	struct rng a, b, c;
	bool same = true, differs = false;

	rng_seed(&a, 42);
	rng_seed(&b, 42);
	rng_seed(&c, 43);
	for (int i = 0; i < 10000; i++) {
		uint64_t x = rng_next(&a);

		same = same && x == rng_next(&b);
		differs = differs || x != rng_next(&c);
	}
	CHECK(same, "same seed, same 10000 values");
	CHECK(differs, "seeds 42 and 43 give different streams");

	unsigned char fill_a[13], fill_b[13], zero[13] = { 0 };

	rng_seed(&a, 5);
	rng_seed(&b, 5);
	rng_fill(&a, fill_a, sizeof(fill_a));
	rng_fill(&b, fill_b, sizeof(fill_b));
	CHECK(memcmp(fill_a, fill_b, 13) == 0 && memcmp(fill_a, zero, 13) != 0,
	      "rng_fill: deterministic, odd length, not all zero");
}

static void test_bounded(void)
{
	static const uint64_t bounds[] = { 1, 2, 3, 7, 1000, (1ULL << 63) + 1, UINT64_MAX };
	struct rng r;

	rng_seed(&r, 1);
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		bool in_range = true;

		for (int k = 0; k < 100000; k++)
			in_range = in_range && rng_below(&r, bounds[i]) < bounds[i];
		CHECK(in_range, "rng_below(%llu): 100000 draws in range", (unsigned long long)bounds[i]);
	}

	bool unit_ok = true;

	for (int k = 0; k < 100000; k++) {
		double u = rng_unit(&r);

		unit_ok = unit_ok && u >= 0 && u < 1;
	}
	CHECK(unit_ok, "rng_unit: 100000 draws in [0, 1)");
}

static void test_uniformity(void)
{
	enum { BINS = 10, DRAWS = 1000000 };
	uint64_t counts[BINS] = { 0 };
	struct rng r;
	double chi2 = 0;

	rng_seed(&r, 2024);
	for (int i = 0; i < DRAWS; i++)
		counts[rng_below(&r, BINS)]++;
	for (int b = 0; b < BINS; b++) {
		double d = (double)counts[b] - DRAWS / BINS;

		chi2 += d * d / (DRAWS / BINS);
	}
	/* 27.88 is the 0.999 quantile of chi-square with 9 degrees of freedom. */
	CHECK(chi2 < 27.88, "rng_below(10): chi-square %.2f < 27.88 over 1e6 draws", chi2);

	/* For n = 2^63 + 1 a plain x % n would put 3/4 of the draws in the lower half. */
	uint64_t n = (1ULL << 63) + 1, low = 0;

	for (int i = 0; i < 100000; i++)
		low += rng_below(&r, n) < n / 2;
	CHECK(low > 49000 && low < 51000, "rng_below(2^63+1): %llu of 100000 in the lower half",
	      (unsigned long long)low);
}

int main(void)
{
	test_reference_vectors();
	test_determinism();
	test_bounded();
	test_uniformity();
	return 0;
}
