/*
 * hist.c - log-linear histogram (see hist.h for what it is for).
 *
 * Bucket layout: buckets 0 .. 127 hold the values 0 .. 127 exactly. After
 * that, the values [2^k, 2^(k+1)) for k = 7 .. 63 take 64 buckets each, of
 * width 2^(k-6).
 */
#include "hist.h"

#include <math.h>
#include <string.h>

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned hist_bucket_of(uint64_t value)
{
	if (value < HIST_LINEAR_LIMIT)
		return (unsigned)value;

	unsigned power = 63 - (unsigned)__builtin_clzll(value);  /* >= 7 */
	unsigned shift = power - HIST_SUB_BITS;
	unsigned sub = (unsigned)(value >> shift) - HIST_SUB_BUCKETS;

	return HIST_LINEAR_LIMIT + (power - HIST_SUB_BITS - 1) * HIST_SUB_BUCKETS + sub;
}

uint64_t hist_bucket_width(unsigned bucket)
{
	if (bucket < HIST_LINEAR_LIMIT)
		return 1;
	return 1ULL << ((bucket - HIST_LINEAR_LIMIT) / HIST_SUB_BUCKETS + 1);
}

uint64_t hist_bucket_low(unsigned bucket)
{
	if (bucket < HIST_LINEAR_LIMIT)
		return bucket;

	unsigned group = (bucket - HIST_LINEAR_LIMIT) / HIST_SUB_BUCKETS;
	unsigned sub = (bucket - HIST_LINEAR_LIMIT) % HIST_SUB_BUCKETS;

	return (uint64_t)(HIST_SUB_BUCKETS + sub) << (group + 1);
}

void hist_record(struct hist *h, uint64_t value)
{
	h->count++;
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
	h->sum += value;
	h->sum_squares += (unsigned __int128)value * value;
	h->buckets[hist_bucket_of(value)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (!src->count)
		return;
	dst->count += src->count;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->sum += src->sum;
	dst->sum_squares += src->sum_squares;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

uint64_t hist_min(const struct hist *h)
{
	return h->count ? h->min : 0;
}

double hist_mean(const struct hist *h)
{
	if (!h->count)
		return 0;
	return (double)((long double)h->sum / h->count);
}

double hist_stddev(const struct hist *h)
{
	if (h->count < 2)
		return 0;
	/*
	 * n * sum(v^2) - sum(v)^2 is computed exactly in integers (it is n^2
	 * times the population variance, so never negative), avoiding the
	 * cancellation that makes the textbook formula unusable in doubles.
	 */
	unsigned __int128 n = h->count;
	unsigned __int128 numerator = n * h->sum_squares - h->sum * h->sum;
	long double variance = (long double)numerator / ((long double)n * (long double)(n - 1));

	return (double)sqrtl(variance);
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min;

	/* The tiny slack keeps 99.9% of 1000 at rank 999 despite rounding. */
	double exact_rank = p * (double)h->count / 100.0;
	uint64_t rank = (uint64_t)ceil(exact_rank * (1 - 1e-12));
	uint64_t seen = 0;

	if (rank < 1)
		rank = 1;
	if (rank >= h->count)
		return h->max;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t mid = hist_bucket_low(i) + hist_bucket_width(i) / 2;

			if (mid < h->min)
				return h->min;
			return mid > h->max ? h->max : mid;
		}
	}
	return h->max;  /* unreachable: the buckets hold count samples */
}
