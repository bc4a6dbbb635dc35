/*
 * timing.c - clocks for measuring IO and stamping results (see timing.h).
 */
#include "timing.h"

#include <stdio.h>

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	/* Cannot fail for these clocks with a valid pointer. */
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void format_wallclock(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}
