/*
 * job_report.c - prints a job's results: fio-shaped JSON, or a short summary.
 *
 * For: output only. The JSON follows fio 3.x --output-format=json (key
 * names, units, nesting, option values as strings) so one parser reads
 * both; iobench only leaves out what it does not measure (slat, bw/iops
 * samples, disk_util). Unlike fio, lat_ns also carries percentiles.
 */
#include "commands.h"
#include "job.h"
#include "json.h"
#include "opts.h"
#include "report.h"
#include "timing.h"

static const char *const dir_names[] = { [IO_READ] = "read", [IO_WRITE] = "write" };

static void json_direction(struct json *j, const char *key, const struct dir_stats *d,
			   uint64_t measured_ns)
{
	uint64_t bw_bytes = (uint64_t)report_rate(d->bytes, measured_ns);
	bool active = d->ios > 0;

	json_kv_object_begin(j, key);
	json_kv_uint(j, "io_bytes", d->bytes);
	json_kv_uint(j, "io_kbytes", d->bytes / 1024);
	json_kv_uint(j, "bw_bytes", bw_bytes);
	json_kv_uint(j, "bw", bw_bytes / 1024);
	json_kv_double(j, "iops", report_rate(d->ios, measured_ns));
	json_kv_uint(j, "runtime", active ? (measured_ns + NS_PER_MS / 2) / NS_PER_MS : 0);
	json_kv_uint(j, "total_ios", d->ios);
	json_kv_uint(j, "short_ios", 0);
	json_kv_uint(j, "drop_ios", 0);
	report_json_latency(j, "clat_ns", &d->clat);
	report_json_latency(j, "lat_ns", &d->lat);
	json_object_end(j);
}

/* fio writes option values as strings, numbers included. */
static void json_kv_decimal(struct json *j, const char *key, uint64_t value)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu", (unsigned long long)value);
	json_kv_string(j, key, text);
}

static void json_job_options(struct json *j, const struct job_spec *spec)
{
	char text[32];

	json_kv_object_begin(j, "job options");
	json_kv_string(j, "name", spec->name);
	json_kv_string(j, "filename", spec->file);
	json_kv_string(j, "rw", rw_pattern_names[spec->rw]);
	json_kv_decimal(j, "bs", spec->bs);
	json_kv_string(j, "ioengine", spec->engine->name);
	json_kv_decimal(j, "iodepth", spec->qd);
	json_kv_string(j, "direct", spec->direct ? "1" : "0");
	json_kv_string(j, "iomem", iomem_names[spec->iomem]);
	json_kv_string(j, "invalidate", spec->keep_cache ? "0" : "1");
	json_kv_decimal(j, "seed", spec->seed);
	json_kv_decimal(j, "size", spec->size ? spec->size : spec->file_size);
	json_kv_decimal(j, "offset", spec->offset);
	json_kv_decimal(j, "span", spec->span);
	opts_format_duration(spec->runtime_ns, text, sizeof(text));
	json_kv_string(j, "runtime", spec->runtime_ns ? text : "0");
	json_kv_decimal(j, "count", spec->count);
	opts_format_duration(spec->ramp_ns, text, sizeof(text));
	json_kv_string(j, "ramp", text);
	if (spec->data_file) {   /* not fio's: what the writes carried */
		json_kv_string(j, "data_file", spec->data_file);
		json_kv_decimal(j, "data_bytes", spec->data_bytes);
	}
	json_object_end(j);
}

void job_report_json(const struct job_spec *spec, const struct job_result *res, FILE *out)
{
	struct json j;

	json_init(&j, out, true);
	json_object_begin(&j);
	report_json_stamp(&j);
	json_kv_object_begin(&j, "global options");
	json_kv_string(&j, "ioengine", spec->engine->name);
	json_kv_decimal(&j, "iodepth", spec->qd);
	json_object_end(&j);

	json_kv_array_begin(&j, "jobs");
	json_object_begin(&j);
	json_kv_string(&j, "jobname", spec->name);
	json_kv_uint(&j, "groupid", 0);
	json_kv_uint(&j, "error", 0);
	json_kv_uint(&j, "elapsed", (res->elapsed_ns + NS_PER_SEC / 2) / NS_PER_SEC);
	json_job_options(&j, spec);
	for (int d = IO_READ; d <= IO_WRITE; d++)
		json_direction(&j, dir_names[d], &res->dir[d], res->measured_ns);
	json_kv_uint(&j, "job_runtime", (res->measured_ns + NS_PER_MS / 2) / NS_PER_MS);
	json_kv_double(&j, "usr_cpu", res->usr_cpu);
	json_kv_double(&j, "sys_cpu", res->sys_cpu);
	json_kv_uint(&j, "ctx", res->ctx);
	json_kv_uint(&j, "majf", res->majf);
	json_kv_uint(&j, "minf", res->minf);
	json_object_end(&j);
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

void job_report_normal(const struct job_spec *spec, const struct job_result *res, FILE *out)
{
	char bs[32], span[32], offset[32];

	opts_format_size(spec->bs, bs, sizeof(bs));
	opts_format_size(spec->span, span, sizeof(span));
	opts_format_size(spec->offset, offset, sizeof(offset));
	fprintf(out, "%s: (rw=%s, bs=%s, direct=%d, ioengine=%s, iodepth=%llu, seed=%llu)\n",
		spec->name, rw_pattern_names[spec->rw], bs, spec->direct, spec->engine->name,
		(unsigned long long)spec->qd, (unsigned long long)spec->seed);
	fprintf(out, "  file %s: span %s from offset %s\n", spec->file, span, offset);
	for (int d = IO_READ; d <= IO_WRITE; d++) {
		const struct dir_stats *s = &res->dir[d];
		double mib_s = report_rate(s->bytes, res->measured_ns) / (1 << 20);

		if (!s->ios)
			continue;
		fprintf(out, "  %s: IOPS=%.1f, BW=%.1fMiB/s, %llu IOs, %llu bytes in %.3f s\n",
			dir_names[d], report_rate(s->ios, res->measured_ns), mib_s,
			(unsigned long long)s->ios, (unsigned long long)s->bytes,
			(double)res->measured_ns / 1e9);
		fprintf(out, "    clat (us): min=%.1f, max=%.1f, avg=%.1f, stdev=%.1f\n",
			(double)hist_min(&s->clat) / 1e3, (double)s->clat.max / 1e3,
			hist_mean(&s->clat) / 1e3, hist_stddev(&s->clat) / 1e3);
		fprintf(out, "    clat percentiles (us): 50th=%.1f, 90th=%.1f, 99th=%.1f, 99.9th=%.1f\n",
			(double)hist_percentile(&s->clat, 50) / 1e3,
			(double)hist_percentile(&s->clat, 90) / 1e3,
			(double)hist_percentile(&s->clat, 99) / 1e3,
			(double)hist_percentile(&s->clat, 99.9) / 1e3);
	}
	fprintf(out, "  cpu: usr=%.2f%%, sys=%.2f%%, ctx=%llu, majf=%llu, minf=%llu\n",
		res->usr_cpu, res->sys_cpu, (unsigned long long)res->ctx,
		(unsigned long long)res->majf, (unsigned long long)res->minf);
}
