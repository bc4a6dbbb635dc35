/*
 * test_hist.c - the latency histogram: exact moments, bucket geometry,
 * percentiles within bucket resolution, merging.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hist.h"
#include "rng.h"

static bool close_to(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The exact percentile the histogram approximates: the sample of rank ceil(p n). */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);

	return sorted[(rank ? rank : 1) - 1];
}

static struct hist *new_hist(void)
{
	struct hist *h = malloc(sizeof(*h));

	if (!h) {
		perror("malloc");
		exit(1);
	}
	hist_init(h);
	return h;
}

static void test_empty(void)
{
	struct hist *h = new_hist();

	CHECK(h->count == 0 && hist_min(h) == 0 && h->max == 0, "empty: count, min, max are 0");
	CHECK(hist_mean(h) == 0 && hist_stddev(h) == 0, "empty: mean and stddev are 0");
	CHECK(hist_percentile(h, 50) == 0, "empty: percentile is 0");
	hist_record(h, 42);
	CHECK(hist_stddev(h) == 0 && hist_percentile(h, 99.99) == 42 && hist_percentile(h, 1) == 42,
	      "one sample: stddev 0, every percentile is the sample");
	free(h);
}

static void test_exact_moments(void)
{
	struct hist *h = new_hist();
	static const uint64_t textbook[] = { 2, 4, 4, 4, 5, 5, 7, 9 };

	for (size_t i = 0; i < 8; i++)
		hist_record(h, textbook[i]);
	CHECK(h->count == 8 && hist_min(h) == 2 && h->max == 9, "{2,4,4,4,5,5,7,9}: count 8, min 2, max 9");
	CHECK(hist_mean(h) == 5.0, "{2,4,4,4,5,5,7,9}: mean is exactly 5");
	CHECK(close_to(hist_stddev(h), sqrt(32.0 / 7.0), 1e-15),
	      "{2,4,4,4,5,5,7,9}: sample stddev is sqrt(32/7) (got %.17g)", hist_stddev(h));

	hist_init(h);
	for (uint64_t v = 1; v <= 1000; v++)
		hist_record(h, v);
	CHECK(hist_mean(h) == 500.5, "1..1000: mean 500.5");
	CHECK(close_to(hist_stddev(h), sqrt(1000.0 * 1001.0 / 12.0), 1e-15),
	      "1..1000: stddev sqrt(n(n+1)/12) = %.6f", hist_stddev(h));

	/* Large values with a tiny spread: naive double sums would lose it. */
	hist_init(h);
	for (uint64_t v = 0; v < 3; v++)
		hist_record(h, 4000000000000000000ULL + v);
	CHECK(h->sum == (unsigned __int128)12000000000000000003ULL, "4e18+{0,1,2}: exact sum");
	CHECK(hist_stddev(h) == 1.0, "4e18+{0,1,2}: stddev exactly 1 (got %.17g)", hist_stddev(h));
	free(h);
}

static void test_bucket_geometry(void)
{
	bool ok = true;
	uint64_t bad = 0;

	CHECK(hist_bucket_of(UINT64_MAX) == HIST_BUCKETS - 1, "UINT64_MAX lands in the last bucket");
	for (uint64_t v = 0; v < 2000000 && ok; v++) {
		unsigned b = hist_bucket_of(v);
		uint64_t low = hist_bucket_low(b), width = hist_bucket_width(b);

		ok = low <= v && v - low < width && (width == 1 || width * HIST_SUB_BUCKETS <= v);
		bad = v;
	}
	CHECK(ok, "0..2e6: each value is inside its bucket, and bucket width <= value/64 (v=%llu)",
	      (unsigned long long)bad);
	for (unsigned shift = 7; shift < 64 && ok; shift++) {
		uint64_t edge = 1ULL << shift;

		ok = hist_bucket_of(edge) == hist_bucket_of(edge - 1) + 1 &&
		     hist_bucket_low(hist_bucket_of(edge)) == edge;
		bad = edge;
	}
	CHECK(ok, "every power of two starts a new bucket (at %llu)", (unsigned long long)bad);
	for (unsigned b = 1; b < HIST_BUCKETS && ok; b++) {
		ok = hist_bucket_low(b) == hist_bucket_low(b - 1) + hist_bucket_width(b - 1);
		bad = b;
	}
	CHECK(ok, "buckets tile the range without gaps (bucket %llu)", (unsigned long long)bad);
}

static void test_percentiles(void)
{
	static const double ps[] = { 1, 5, 10, 50, 90, 99, 99.5, 99.9, 99.99, 100 };
	enum { N = 200000 };
	uint64_t *values = malloc(N * sizeof(*values));
	struct hist *h = new_hist();
	struct rng rng;

	if (!values)
		exit(1);
	for (uint64_t v = 1; v <= 1000; v++)
		hist_record(h, v);
	CHECK(close_to((double)hist_percentile(h, 50), 500, 1.0 / 128),
	      "1..1000: p50 within 1/128 of 500 (got %llu)",
	      (unsigned long long)hist_percentile(h, 50));
	CHECK(hist_percentile(h, 100) == 1000 && hist_percentile(h, 1) == 10,
	      "1..1000: p100 = max, p1 = 10 (values < 128 are exact)");
	CHECK(close_to((double)hist_percentile(h, 99.9), 999, 1.0 / 128),
	      "1..1000: p99.9 within 1/128 of 999 (got %llu)",
	      (unsigned long long)hist_percentile(h, 99.9));

	/* Log-uniform latencies from 1 us to 100 ms against exact order statistics. */
	hist_init(h);
	rng_seed(&rng, 7);
	for (size_t i = 0; i < N; i++) {
		values[i] = (uint64_t)(1000.0 * pow(1e5, rng_unit(&rng)));
		hist_record(h, values[i]);
	}
	qsort(values, N, sizeof(*values), compare_u64);
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t want = exact_percentile(values, N, ps[i]);
		uint64_t got = hist_percentile(h, ps[i]);

		CHECK(close_to((double)got, (double)want, 1.0 / (2 * HIST_SUB_BUCKETS)),
		      "log-uniform: p%g = %llu, exact %llu, within 1/128", ps[i],
		      (unsigned long long)got, (unsigned long long)want);
	}
	uint64_t previous = 0;
	bool monotone = true;

	for (double p = 0.5; p <= 100; p += 0.5) {
		monotone = monotone && hist_percentile(h, p) >= previous;
		previous = hist_percentile(h, p);
	}
	CHECK(monotone, "percentiles never decrease with p");
	free(values);
	free(h);
}

static void test_merge(void)
{
	struct hist *whole = new_hist(), *a = new_hist(), *b = new_hist();
	struct rng rng;

	rng_seed(&rng, 11);
	for (int i = 0; i < 50000; i++) {
		uint64_t v = rng_below(&rng, 10000000);

		hist_record(whole, v);
		hist_record(i % 3 ? a : b, v);
	}
	hist_merge(a, b);
	CHECK(a->count == whole->count && hist_min(a) == hist_min(whole) && a->max == whole->max,
	      "merge: count, min, max as if recorded together");
	CHECK(a->sum == whole->sum && a->sum_squares == whole->sum_squares &&
	      hist_stddev(a) == hist_stddev(whole), "merge: exact sums and stddev");
	CHECK(memcmp(a->buckets, whole->buckets, sizeof(a->buckets)) == 0, "merge: buckets");
	hist_init(b);
	hist_merge(a, b);
	CHECK(a->count == whole->count && hist_min(a) == hist_min(whole), "merging an empty histogram changes nothing");
	free(whole);
	free(a);
	free(b);
}

int main(void)
{
	test_empty();
	test_exact_moments();
	test_bucket_geometry();
	test_percentiles();
	test_merge();
	return 0;
}
