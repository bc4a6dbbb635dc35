/*
 * model_cmd.c - `simdisk model`: the device model's expected mean service
 * time for a steady workload, computed analytically.
 *
 * For: putting model and measurement side by side (fio on the mount against
 * this prediction). The arithmetic is each model's `expect` (diskmath.h for
 * the disk); this file only parses options and prints (a text summary, or
 * one JSON document with --output-format json). --help also lists every
 * model's profile keys.
 * Not for: simulating a run (mount the device and measure it).
 */
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "device.h"
#include "json.h"
#include "opts.h"
#include "profile.h"

static const char *const rw_names[] = { "read", "write", "randread", "randwrite", NULL };

static const char description[] =
	"Prints the expected mean service time per request of a steady workload at queue depth\n"
	"1 on the device of --profile: requests of --bs bytes, sequential or uniformly random in\n"
	"[--offset, --offset + --span). Parts: overhead, seek, rotation, transfer, gc (flash\n"
	"merges), queue; 'assumes' says what the prediction neglects. For tiered profiles\n"
	"--hit-ratio is the share of reads served by the cache. Faults (the fault keys) are not\n"
	"part of the prediction.\n"
	"Exit status: 0 done, 2 usage error (including a bad profile).";

static void print_json(const struct profile *p, const struct workload *w, const struct io_cost *mean,
		       const char *note)
{
	struct json j;

	json_init(&j, stdout, true);
	json_object_begin(&j);
	json_kv_string(&j, "profile", p->name);
	json_kv_string(&j, "model", p->model->name);
	json_kv_string(&j, "rw", rw_names[w->rw]);
	json_kv_uint(&j, "bs", w->bs);
	json_kv_uint(&j, "offset", w->offset);
	json_kv_uint(&j, "span", w->span);
	json_kv_double(&j, "hit_ratio", w->hit_ratio);
	json_kv_uint(&j, "mean_service_ns", mean->total_ns);
	json_kv_double(&j, "mean_service_ms", (double)mean->total_ns / 1e6);
	json_kv_double(&j, "iops", mean->total_ns ? 1e9 / (double)mean->total_ns : 0);
	json_kv_double(&j, "bw_bytes", mean->total_ns ? (double)w->bs * 1e9 / (double)mean->total_ns : 0);
	json_kv_object_begin(&j, "components_ns");
	json_kv_uint(&j, "queue", mean->queue_ns);
	json_kv_uint(&j, "overhead", mean->overhead_ns);
	json_kv_uint(&j, "seek", mean->seek_ns);
	json_kv_uint(&j, "rotation", mean->rotation_ns);
	json_kv_uint(&j, "transfer", mean->transfer_ns);
	json_kv_uint(&j, "gc", mean->gc_ns);
	json_object_end(&j);
	json_kv_string(&j, "assumes", note);
	json_object_end(&j);
	json_finish(&j);
}

static void print_normal(const struct profile *p, const struct workload *w, const struct io_cost *mean,
			 const char *note)
{
	double ms = (double)mean->total_ns / 1e6;

	printf("simdisk model: %s (%s), %s of %llu bytes in [%llu, %llu)%s\n", p->name, p->model->name,
	       rw_names[w->rw], (unsigned long long)w->bs, (unsigned long long)w->offset,
	       (unsigned long long)(w->offset + w->span), w->hit_ratio > 0 ? ", with cache hits" : "");
	if (w->hit_ratio > 0)
		printf("  hit ratio       %.3f\n", w->hit_ratio);
	printf("  mean service    %.4f ms   %.1f IOPS   %.3f MB/s\n", ms, ms > 0 ? 1e3 / ms : 0,
	       ms > 0 ? (double)w->bs / ms / 1e3 : 0);
	printf("  parts (ms)      queue %.4f, overhead %.4f, seek %.4f, rotation %.4f, transfer %.4f, "
	       "gc %.4f\n", (double)mean->queue_ns / 1e6, (double)mean->overhead_ns / 1e6,
	       (double)mean->seek_ns / 1e6, (double)mean->rotation_ns / 1e6,
	       (double)mean->transfer_ns / 1e6, (double)mean->gc_ns / 1e6);
	printf("  assumes         %s\n", note);
}

int model_command(int argc, char **argv)
{
	struct profile_opts po = { 0 };
	const char *output = NULL;
	int rw = 0, format = OUTPUT_NORMAL;
	uint64_t bs = 0, span = 0, offset = 0;
	double hit_ratio = 0;
	struct opt table[] = {
		PROFILE_OPTION_ROWS(&po),
		{ .name = "rw", .kind = OPT_ENUM, .dest = &rw, .choices = rw_names,
		  .help = "access pattern", .required = true },
		{ .name = "bs", .kind = OPT_SIZE, .dest = &bs, .help = "request size", .required = true },
		{ .name = "span", .kind = OPT_SIZE, .dest = &span,
		  .help = "bytes the requests fall in (default: from --offset to the end)" },
		{ .name = "offset", .kind = OPT_SIZE, .dest = &offset, .default_text = "0",
		  .help = "where the span starts" },
		{ .name = "hit-ratio", .kind = OPT_DOUBLE, .dest = &hit_ratio, .default_text = "0",
		  .help = "tiered: share of reads served by the cache, 0 to 1" },
		opt_output_format(&format),
		opt_output(&output),
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk model", .command = "simdisk model",
			   .description = description, .opts = table };
	char note[512] = "";
	struct profile *p;
	struct io_cost mean;
	int status;

	status = profile_command_start(&cli, argc, argv, &po, &p);
	if (status != OPTS_GO_ON)
		return status;
	uint64_t capacity = p->model->capacity(p);

	status = 0;
	if (!opts_find(&cli, "span")->given)
		span = offset < capacity ? capacity - offset : 0;
	if (bs == 0)
		status = usage_error(&cli, "--bs must be greater than 0");
	else if (offset >= capacity || span > capacity - offset)
		status = usage_error(&cli, "--offset + --span exceed the capacity %llu",
				     (unsigned long long)capacity);
	else if (span < bs)
		status = usage_error(&cli, "--span %llu is smaller than --bs %llu",
				     (unsigned long long)span, (unsigned long long)bs);
	else if (!(hit_ratio >= 0 && hit_ratio <= 1))
		status = usage_error(&cli, "--hit-ratio must be between 0 and 1");
	else
		status = output_begin(&cli, output);
	if (status) {
		profile_free(p);
		return status;
	}
	struct workload w = { .rw = (enum workload_rw)rw, .bs = bs, .offset = offset, .span = span,
			      .hit_ratio = hit_ratio };

	if (p->model->expect(p, &w, &mean, note, sizeof(note))) {
		profile_free(p);
		fprintf(stderr, "simdisk model: %s\n", note);
		return 1;
	}
	if (format == OUTPUT_JSON)
		print_json(p, &w, &mean, note);
	else
		print_normal(p, &w, &mean, note);
	profile_free(p);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	output_complete();
	return 0;
}
