#include <stdarg.h>
#include <stdio.h>
/*
 * report.c - output pieces shared by iobench's commands (see report.h).
 */
#include <time.h>

#include "commands.h"
#include "report.h"
#include "timing.h"

/* The percentiles fio reports by default, with its key spelling. */
static const double percentiles[] = {
	1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99,
};
#define NPERCENTILES (sizeof(percentiles) / sizeof(percentiles[0]))

double report_rate(uint64_t amount, uint64_t ns)
{
	return ns ? (double)amount * 1e9 / (double)ns : 0;
}

void report_json_stamp(struct json *j)
{
	uint64_t now_ns = realtime_ns();
	time_t now = (time_t)(now_ns / NS_PER_SEC);
	char when[64];

	format_wallclock(now, when, sizeof(when));
	json_kv_string(j, "iobench version", IOBENCH_VERSION);
	json_kv_uint(j, "timestamp", (uint64_t)now);
	json_kv_uint(j, "timestamp_ms", now_ns / NS_PER_MS);
	json_kv_string(j, "time", when);
}

void report_json_latency(struct json *j, const char *key, const struct hist *h)
{
	json_kv_object_begin(j, key);
	json_kv_uint(j, "min", hist_min(h));
	json_kv_uint(j, "max", h->max);
	json_kv_double(j, "mean", hist_mean(h));
	json_kv_double(j, "stddev", hist_stddev(h));
	json_kv_uint(j, "N", h->count);
	if (h->count) {
		json_kv_object_begin(j, "percentile");
		for (size_t i = 0; i < NPERCENTILES; i++) {
			char name[16];

			snprintf(name, sizeof(name), "%f", percentiles[i]);
			json_kv_uint(j, name, hist_percentile(h, percentiles[i]));
		}
		json_object_end(j);
	}
	json_object_end(j);
}

