/*
 * report.h - output pieces shared by iobench's commands.
 *
 * For: what every report carries (version and time stamps) and latency
 * summaries in fio's clat_ns shape, so job and crystalmark reports read
 * alike. Not for: a command's own layout; that stays with the command.
 */
#ifndef IOBENCH_REPORT_H
#define IOBENCH_REPORT_H

#include <stdint.h>

#include "hist.h"
#include "json.h"
#include "fail.h"

/* Per second of ns: amount * 1e9 / ns, or 0 when ns is 0. */
double report_rate(uint64_t amount, uint64_t ns);

/* "iobench version", "timestamp", "timestamp_ms", "time" keys, as fio has. */
void report_json_stamp(struct json *j);

/*
 * key: {min, max, mean, stddev, N, percentile: {"1.000000": ns, ...}} with
 * fio's default percentiles and key spelling; percentile is left out when
 * there are no samples, as fio does.
 */
void report_json_latency(struct json *j, const char *key, const struct hist *h);

#endif
