/*
 * diskmath.c - seek curve, zoned rate and track geometry (see diskmath.h).
 */
#include "diskmath.h"

#include <math.h>
#include <stdlib.h>

static double clamp01(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

int seek_curve_fit(struct seek_curve *curve, double t_tt, double t_avg, double t_full)
{
	double f = t_full - t_tt, g = t_avg - t_tt;

	if (!(t_tt >= 0 && g >= 0 && t_full >= t_avg))
		return -1;
	curve->track_to_track = t_tt;
	curve->root = 5 * g - 5 * f / 3;
	curve->linear = 8 * f / 3 - 5 * g;
	/* d/dx = b + c / (2 sqrt x) is smallest at x = 1 when c >= 0. */
	if (curve->root < 0 || curve->linear + curve->root / 2 < 0)
		return -1;
	return 0;
}

bool needs_seek(double from, double to)
{
	return fabs(to - from) >= 1;
}

double seek_time_for_distance(const struct seek_curve *curve, double x)
{
	x = clamp01(x);
	if (x == 0)
		return 0;
	return curve->track_to_track + curve->linear * x + curve->root * sqrt(x);
}

/* 1 - rho^2: the share of the rate lost from the outer to the inner edge, squared. */
static double zone_shrink(const struct zoned_disk *disk)
{
	return 1 - disk->rho * disk->rho;
}

double zoned_rate_at(const struct zoned_disk *disk, double f)
{
	return disk->outer_rate * sqrt(1 - clamp01(f) * zone_shrink(disk));
}

/* Revolutions to read the LBA range [0, f*C]: C/(R_out T) * int_0^f df'/sqrt(1 - k f'). */
static double tracks_to_fraction(const struct zoned_disk *disk, double f)
{
	double k = zone_shrink(disk), per_outer_track = disk->outer_rate * disk->revolution;
	double integral = k < 1e-12 ? f : 2 * (1 - sqrt(1 - k * f)) / k;

	return disk->capacity / per_outer_track * integral;
}

double zoned_track_of(const struct zoned_disk *disk, double offset)
{
	return tracks_to_fraction(disk, clamp01(offset / disk->capacity));
}

double zoned_offset_of_track(const struct zoned_disk *disk, double track)
{
	double k = zone_shrink(disk), per_outer_track = disk->outer_rate * disk->revolution;
	double integral = track * per_outer_track / disk->capacity;
	double f = k < 1e-12 ? integral : (1 - pow(1 - integral * k / 2, 2)) / k;

	return clamp01(f) * disk->capacity;
}

double zoned_track_count(const struct zoned_disk *disk)
{
	return tracks_to_fraction(disk, 1);
}

double zoned_mean_transfer_time(const struct zoned_disk *disk, double bytes, double f0, double f1)
{
	double k = zone_shrink(disk);

	f0 = clamp01(f0);
	f1 = clamp01(f1);
	if (f1 - f0 < 1e-12 || k < 1e-12)
		return bytes / zoned_rate_at(disk, (f0 + f1) / 2);
	/* int df / sqrt(1 - k f) = -2 sqrt(1 - k f) / k */
	double integral = 2 * (sqrt(1 - k * f0) - sqrt(1 - k * f1)) / k;

	return bytes / disk->outer_rate * integral / (f1 - f0);
}

double zoned_mean_seek_time(const struct seek_curve *curve, const struct zoned_disk *disk,
			    double f0, double f1, unsigned grid)
{
	double total = zoned_track_count(disk), sum = 0;
	double *track = malloc(grid * sizeof(*track));

	if (!track || grid < 2) {
		free(track);
		return NAN;
	}
	f0 = clamp01(f0);
	f1 = clamp01(f1);
	for (unsigned i = 0; i < grid; i++)
		track[i] = tracks_to_fraction(disk, f0 + (f1 - f0) * (i + 0.5) / grid);
	for (unsigned i = 0; i < grid; i++) {
		for (unsigned j = i + 1; j < grid; j++) {
			double d = fabs(track[j] - track[i]);

			if (d >= 1)
				sum += 2 * seek_time_for_distance(curve, d / total);
		}
	}
	free(track);
	return sum / ((double)grid * grid);
}
