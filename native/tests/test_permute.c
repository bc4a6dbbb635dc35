/*
 * test_permute.c - the stored-nowhere permutation: a bijection on [0, n) for
 * awkward n, the same order for the same seed, different orders for
 * different seeds, and far from the identity.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "permute.h"

static bool is_bijection(uint64_t n, uint64_t seed)
{
	unsigned char *seen = calloc(n, 1);
	struct permutation p;
	bool ok = seen != NULL;

	permute_init(&p, n, seed);
	for (uint64_t i = 0; i < n && ok; i++) {
		uint64_t x = permute_at(&p, i);

		ok = x < n && !seen[x];
		if (ok)
			seen[x] = 1;
	}
	free(seen);
	return ok;
}

int main(void)
{
	static const uint64_t sizes[] = { 1, 2, 3, 4, 5, 7, 16, 17, 255, 1000, 4097, 65536, 100003 };
	struct permutation a, b;
	uint64_t same = 0, fixed = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CHECK(is_bijection(sizes[i], 42), "bijection on [0, %llu)",
		      (unsigned long long)sizes[i]);
	CHECK(is_bijection(1000, 0), "seed 0 works");

	permute_init(&a, 100000, 7);
	permute_init(&b, 100000, 7);
	for (uint64_t i = 0; i < 100000; i++)
		same += permute_at(&a, i) == permute_at(&b, i);
	CHECK(same == 100000, "the same seed gives the same order");

	permute_init(&b, 100000, 8);
	same = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		same += permute_at(&a, i) == permute_at(&b, i);
		fixed += permute_at(&a, i) == i;
	}
	CHECK(same < 100, "another seed gives another order (%llu positions agree)",
	      (unsigned long long)same);
	CHECK(fixed < 100, "far from the identity (%llu fixed points)", (unsigned long long)fixed);

	/* Huge n: values in range and no repeats among the first positions. */
	uint64_t huge = (1ULL << 40) + 12345, first[1000];
	bool ok = true;

	permute_init(&a, huge, 1);
	for (int i = 0; i < 1000 && ok; i++) {
		first[i] = permute_at(&a, (uint64_t)i);
		ok = first[i] < huge;
		for (int k = 0; k < i && ok; k++)
			ok = first[k] != first[i];
	}
	CHECK(ok, "n = 2^40 + 12345: in range, no repeats in the first 1000");
	return 0;
}
