/*
 * diskmath.h - the arithmetic of a zoned, rotating disk: seek curve, media
 * rate by position, track geometry, and their expectations.
 *
 * For: device models and analytic predictions that must agree (simdisk's hdd
 * model and `simdisk model`), and unit tests of the formulas on their own.
 * Units are SI: seconds, bytes, bytes per second. Positions are byte offsets
 * or LBA fractions f in [0, 1] counted from the outer edge.
 * Not for: state (head position, buffers, clocks): that belongs to the model.
 *
 * Seek: a square-root term for short seeks and a linear one for long seeks,
 * as Ruemmler & Wilkes describe and DiskSim models them (Ruemmler & Wilkes
 * 1994, Bucy et al. 2008; refs.bib: ruemmler94, disksim), here in one curve
 * through a datasheet's three points: seek(x) = t_tt + b*x + c*sqrt(x) for a
 * distance x > 0 given as a fraction of the full stroke, seek(0) = 0. With
 * F = t_full - t_tt and G = t_avg - t_tt, c = 5G - 5F/3 and b = 8F/3 - 5G put
 * the curve through t_tt (x -> 0), t_full (x = 1) and t_avg as the mean over
 * uniformly random cylinders (E[x] = 1/3, E[sqrt x] = 8/15).
 *
 * Zones: constant linear density, so the media rate is proportional to the
 * radius: R(f) = R_out * sqrt(1 - f*(1 - rho^2)), rho = inner/outer radius.
 * Sectors are laid out continuously (no skew, no spare tracks): the track of
 * a byte is the number of revolutions needed to read up to it from LBA 0,
 * which is linear in the radius, so track distance is cylinder distance.
 */
#ifndef NATIVE_DISKMATH_H
#define NATIVE_DISKMATH_H

#include <stdbool.h>

struct seek_curve {
	double track_to_track;  /* s, the limit as x -> 0+ */
	double linear;          /* s per full stroke: b */
	double root;            /* s: c */
};

struct zoned_disk {
	double capacity;        /* bytes */
	double outer_rate;      /* bytes/s at f = 0 */
	double rho;             /* inner/outer radius, 0 < rho <= 1 */
	double revolution;      /* s per revolution */
};

/*
 * Fits the three-point curve. Returns 0, or -1 if the times are not
 * 0 <= t_tt <= t_avg <= t_full or the fitted curve would not increase with
 * distance over (0, 1] (c < 0 or b + c/2 < 0).
 */
int seek_curve_fit(struct seek_curve *curve, double t_tt, double t_avg, double t_full);

/*
 * Whether moving the head from track `from` to track `to` (continuous track indices) is a
 * seek: a move of at least one whole track. Within a track the head only waits for the
 * platter; the stats count a request as needing a seek when its model charged seek time.
 */
bool needs_seek(double from, double to);

/* Seek time for distance x (fraction of full stroke, clamped to [0, 1]). */
double seek_time_for_distance(const struct seek_curve *curve, double x);

/* Media rate at LBA fraction f (clamped to [0, 1]). */
double zoned_rate_at(const struct zoned_disk *disk, double f);

/* Continuous track index of a byte offset: revolutions from LBA 0 to it. */
double zoned_track_of(const struct zoned_disk *disk, double offset);

/* Inverse of zoned_track_of: the byte offset where track (continuous) starts. */
double zoned_offset_of_track(const struct zoned_disk *disk, double track);

/* Number of tracks (cylinders of one surface) on the whole disk. */
double zoned_track_count(const struct zoned_disk *disk);

/* Mean of bytes / R(f) over f uniform in [f0, f1]. */
double zoned_mean_transfer_time(const struct zoned_disk *disk, double bytes,
				double f0, double f1);

/*
 * Mean seek time between two positions drawn independently and uniformly
 * from the LBA range [f0, f1], with track distance as cylinder distance and
 * seeks within one track free. Midpoint rule on a grid x grid lattice
 * (grid >= 2; 2048 gives better than 1e-4 relative accuracy).
 */
double zoned_mean_seek_time(const struct seek_curve *curve, const struct zoned_disk *disk,
			    double f0, double f1, unsigned grid);

#endif
