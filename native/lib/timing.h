/*
 * timing.h - clocks for measuring IO and stamping results.
 *
 * For: nanosecond monotonic time (intervals, latencies) and wall-clock
 * stamps for reports. Not for: sleeping, timers or rate limiting; those
 * belong to the tool that needs them.
 */
#ifndef NATIVE_TIMING_H
#define NATIVE_TIMING_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NS_PER_US 1000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_SEC 1000000000ULL

/* CLOCK_MONOTONIC in ns: only differences are meaningful. */
uint64_t monotonic_ns(void);

/* CLOCK_REALTIME in ns since the Unix epoch. */
uint64_t realtime_ns(void);

/* Formats t like ctime(3) without the newline ("Sat Nov 21 15:10:34 2026"). */
void format_wallclock(time_t t, char *buf, size_t len);

#endif
