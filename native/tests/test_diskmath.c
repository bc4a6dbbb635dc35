/*
 * test_diskmath.c - the disk formulas: the three-point seek curve hits its
 * datasheet points, the zoned rate and track geometry agree with direct
 * numerical integration, and the expectations match brute-force averages.
 */
#include <math.h>

#include "check.h"
#include "diskmath.h"

#define MS 1e-3

static bool near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

static const struct zoned_disk laptop = {
	.capacity = 120e9, .outer_rate = 50e6, .rho = 0.5, .revolution = 60.0 / 5400,
};

static void test_seek_curve(void)
{
	struct seek_curve c;
	double sum = 0;
	const int n = 1000000;

	CHECK(seek_curve_fit(&c, 1 * MS, 12 * MS, 20 * MS) == 0, "Travelstar 5K320 points fit");
	CHECK(near(c.root, (5 * 11 - 5 * 19 / 3.0) * MS, 1e-12) &&
	      near(c.linear, (8 * 19 / 3.0 - 5 * 11) * MS, 1e-12), "c = 5G - 5F/3, b = 8F/3 - 5G");
	CHECK(seek_time_for_distance(&c, 0) == 0, "no distance, no seek");
	CHECK(near(seek_time_for_distance(&c, 1e-12), 1 * MS, 1e-4), "x -> 0+ gives track-to-track");
	CHECK(near(seek_time_for_distance(&c, 1), 20 * MS, 1e-12), "x = 1 gives full stroke");
	CHECK(seek_time_for_distance(&c, 2) == seek_time_for_distance(&c, 1), "x clamped to 1");
	/* E over |u1 - u2| for uniform u: density 2(1 - x); midpoint rule. */
	for (int i = 0; i < n; i++) {
		double x = (i + 0.5) / n;

		sum += seek_time_for_distance(&c, x) * 2 * (1 - x) / n;
	}
	CHECK(near(sum, 12 * MS, 1e-5), "mean over uniform cylinders is the average seek (%.4f ms)",
	      sum / MS);
	bool increasing = true;

	for (int i = 1; i <= 1000; i++)
		increasing = increasing && seek_time_for_distance(&c, i / 1000.0) >
			     seek_time_for_distance(&c, (i - 1) / 1000.0);
	CHECK(increasing, "the fitted curve increases with distance");
	CHECK(seek_curve_fit(&c, 1 * MS, 3 * MS, 20 * MS) == -1,
	      "an average too close to track-to-track (c < 0) is refused");
	CHECK(seek_curve_fit(&c, 1 * MS, 19 * MS, 20 * MS) == -1,
	      "an average too close to full stroke (curve falls at the end) is refused");
	CHECK(seek_curve_fit(&c, 5 * MS, 4 * MS, 20 * MS) == -1, "average below track-to-track refused");
}

static void test_zones(void)
{
	double tracks = 0;
	const int n = 200000;

	CHECK(near(zoned_rate_at(&laptop, 0), 50e6, 1e-12), "outer rate at f = 0");
	CHECK(near(zoned_rate_at(&laptop, 1), 25e6, 1e-12), "inner rate = rho * outer at f = 1");
	CHECK(near(zoned_rate_at(&laptop, 0.5), 50e6 * sqrt(1 - 0.5 * 0.75), 1e-12),
	      "R(f) = R_out sqrt(1 - f (1 - rho^2))");
	for (int i = 0; i < n; i++) {
		double f = (i + 0.5) / n;

		tracks += laptop.capacity / n / (zoned_rate_at(&laptop, f) * laptop.revolution);
	}
	CHECK(near(zoned_track_count(&laptop), tracks, 1e-6),
	      "track count = integral of dp / (R T) (%.0f tracks)", tracks);
	CHECK(zoned_track_of(&laptop, 0) == 0 &&
	      near(zoned_track_of(&laptop, laptop.capacity), zoned_track_count(&laptop), 1e-12),
	      "tracks run from 0 at LBA 0 to the track count at the end");
	/* Track index is linear in radius: r(f) = sqrt(1 - k f) */
	double r_half = sqrt(1 - 0.5 * 0.75);

	CHECK(near(zoned_track_of(&laptop, 60e9) / zoned_track_count(&laptop), (1 - r_half) / 0.5, 1e-12),
	      "track index is linear in the radius");
	bool inverse = true;

	for (double off = 0; off <= laptop.capacity; off += laptop.capacity / 97)
		inverse = inverse && fabs(zoned_offset_of_track(&laptop, zoned_track_of(&laptop, off)) - off) < 1;
	CHECK(inverse, "offset_of_track inverts track_of to within a byte");
	double mean = 0;

	for (int i = 0; i < n; i++)
		mean += 65536 / zoned_rate_at(&laptop, 0.2 + 0.5 * (i + 0.5) / n) / n;
	CHECK(near(zoned_mean_transfer_time(&laptop, 65536, 0.2, 0.7), mean, 1e-6),
	      "mean transfer time over a range matches direct averaging");
	CHECK(near(zoned_mean_transfer_time(&laptop, 65536, 0.3, 0.3), 65536 / zoned_rate_at(&laptop, 0.3),
		   1e-12), "an empty range gives the rate at that point");
}

static void test_mean_seek(void)
{
	struct seek_curve c;
	struct zoned_disk uniform = laptop;

	seek_curve_fit(&c, 1 * MS, 12 * MS, 20 * MS);
	uniform.rho = 1;   /* no zones: LBA is proportional to cylinder */
	double flat = zoned_mean_seek_time(&c, &uniform, 0, 1, 2048);

	CHECK(near(flat, 12 * MS, 2e-4), "without zones, the mean over random LBAs is t_avg (%.4f ms)",
	      flat / MS);
	double zoned = zoned_mean_seek_time(&c, &laptop, 0, 1, 2048);

	CHECK(zoned < 12 * MS && zoned > 10 * MS,
	      "with zones, random LBAs cluster outside: shorter mean seek (%.4f ms)", zoned / MS);
	double coarse = zoned_mean_seek_time(&c, &laptop, 0, 1, 512);

	CHECK(near(coarse, zoned, 1e-3), "grid 512 and 2048 agree to 0.1 %%");
	double short_stroke = zoned_mean_seek_time(&c, &laptop, 0, 128e6 / 120e9, 1024);

	CHECK(short_stroke > 1 * MS && short_stroke < 2 * MS,
	      "a 128 MB span seeks little farther than track-to-track (%.4f ms)", short_stroke / MS);
}

static void test_needs_seek(void)
{
	CHECK(!needs_seek(10.2, 10.9) && !needs_seek(10.9, 10.2), "a move within a track is no seek");
	CHECK(needs_seek(10.0, 11.0) && needs_seek(11.5, 10.5), "a move of one whole track is a seek");
	CHECK(needs_seek(0, 1e5), "a long move is a seek");
	CHECK(!needs_seek(42.0, 42.0), "no move is no seek");
}

int main(void)
{
	test_seek_curve();
	test_needs_seek();
	test_zones();
	test_mean_seek();
	return 0;
}
