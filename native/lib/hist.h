/*
 * hist.h - a log-linear histogram of non-negative integers (latencies in ns).
 *
 * For: recording millions of samples in constant memory and time, and
 * reporting percentiles with a bounded relative error, like HdrHistogram or
 * fio. Values below 2 * HIST_SUB_BUCKETS are counted exactly; above, every
 * power of two is split into HIST_SUB_BUCKETS equal buckets, so no bucket is
 * wider than 1/HIST_SUB_BUCKETS of any value in it. Count, min, max, mean
 * and stddev come from exact running sums, not from the buckets.
 * Not for: signed or fractional values, or time series (keep a log for that).
 * Exact sums hold for sum(v^2) < 2^128, e.g. 10^9 samples of up to 10 s.
 */
#ifndef NATIVE_HIST_H
#define NATIVE_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_SUB_BUCKETS (1u << HIST_SUB_BITS)            /* 64 */
#define HIST_LINEAR_LIMIT (2u * HIST_SUB_BUCKETS)         /* 128 */
#define HIST_BUCKETS (HIST_LINEAR_LIMIT + (64 - HIST_SUB_BITS - 1) * HIST_SUB_BUCKETS)

struct hist {
	uint64_t count;
	uint64_t min;                 /* UINT64_MAX while empty; use hist_min() */
	uint64_t max;
	unsigned __int128 sum;
	unsigned __int128 sum_squares;
	uint64_t buckets[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t value);
/* Adds every sample of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/* All of these return 0 for an empty histogram. */
uint64_t hist_min(const struct hist *h);
double hist_mean(const struct hist *h);
/* Sample standard deviation (divides by n - 1, as fio does); 0 if n < 2. */
double hist_stddev(const struct hist *h);
/*
 * The value below which p percent (0 < p <= 100) of the samples fall: the
 * midpoint of the bucket holding the sample of rank ceil(p/100 * n), clamped
 * to [min, max]. Its relative error is below 1 / (2 * HIST_SUB_BUCKETS).
 */
uint64_t hist_percentile(const struct hist *h, double p);

/* Bucket geometry, exposed for tests and for tools that dump buckets. */
unsigned hist_bucket_of(uint64_t value);
uint64_t hist_bucket_low(unsigned bucket);
uint64_t hist_bucket_width(unsigned bucket);

#endif
