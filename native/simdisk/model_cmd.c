/*
 * model_cmd.c - `simdisk model`: the device model's expected mean service
 * time for a steady workload, computed analytically, as JSON.
 *
 * For: putting model and measurement side by side (fio on the mount against
 * this prediction). The arithmetic is each model's `expect` (diskmath.h for
 * the disk); this file only parses options and prints.
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
	"--hit-ratio is the share of reads served by the cache.\n"
	"Exit status: 0 done, 2 usage error (including a bad profile).";

int model_command(int argc, char **argv)
{
	const char *profile_name = NULL, *profile_dir = NULL, *overrides = NULL;
	int rw = 0;
	uint64_t bs = 0, span = 0, offset = 0;
	double hit_ratio = 0;
	struct opt table[] = {
		{ .name = "profile", .kind = OPT_STRING, .dest = &profile_name, .metavar = "P",
		  .help = "device profile: a name in --profile-dir or a path", .required = true },
		{ .name = "rw", .kind = OPT_ENUM, .dest = &rw, .choices = rw_names,
		  .help = "access pattern", .required = true },
		{ .name = "bs", .kind = OPT_SIZE, .dest = &bs, .help = "request size", .required = true },
		{ .name = "span", .kind = OPT_SIZE, .dest = &span,
		  .help = "bytes the requests fall in (default: from --offset to the end)" },
		{ .name = "offset", .kind = OPT_SIZE, .dest = &offset, .default_text = "0",
		  .help = "where the span starts" },
		{ .name = "hit-ratio", .kind = OPT_DOUBLE, .dest = &hit_ratio, .default_text = "0",
		  .help = "tiered: share of reads served by the cache, 0 to 1" },
		{ .name = "profile-dir", .kind = OPT_STRING, .dest = &profile_dir, .metavar = "DIR",
		  .help = "where profile names are looked up (default: config/devices)" },
		{ .name = "set", .kind = OPT_STRING, .dest = &overrides, .metavar = "K=V,...",
		  .help = "override profile keys" },
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk model", .command = "simdisk model",
			   .description = description, .opts = table };
	char dir[4096], err[2048], note[512] = "";
	struct profile *p;
	struct io_cost mean;
	struct json j;
	int status = opts_parse_status(&cli, argc, argv);

	if (status != OPTS_GO_ON)
		return status;
	if (!profile_dir) {
		profile_default_dir(dir, sizeof(dir));
		profile_dir = dir;
	}
	p = profile_load(profile_name, profile_dir, overrides, err, sizeof(err));
	if (!p)
		return usage_error(&cli, "%s", err);
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
	json_init(&j, stdout, true);
	json_object_begin(&j);
	json_kv_string(&j, "profile", p->name);
	json_kv_string(&j, "model", p->model->name);
	json_kv_string(&j, "rw", rw_names[rw]);
	json_kv_uint(&j, "bs", bs);
	json_kv_uint(&j, "offset", offset);
	json_kv_uint(&j, "span", span);
	json_kv_double(&j, "hit_ratio", hit_ratio);
	json_kv_uint(&j, "mean_service_ns", mean.total_ns);
	json_kv_double(&j, "mean_service_ms", (double)mean.total_ns / 1e6);
	json_kv_double(&j, "iops", mean.total_ns ? 1e9 / (double)mean.total_ns : 0);
	json_kv_double(&j, "bw_bytes", mean.total_ns ? (double)bs * 1e9 / (double)mean.total_ns : 0);
	json_kv_object_begin(&j, "components_ns");
	json_kv_uint(&j, "queue", mean.queue_ns);
	json_kv_uint(&j, "overhead", mean.overhead_ns);
	json_kv_uint(&j, "seek", mean.seek_ns);
	json_kv_uint(&j, "rotation", mean.rotation_ns);
	json_kv_uint(&j, "transfer", mean.transfer_ns);
	json_kv_uint(&j, "gc", mean.gc_ns);
	json_object_end(&j);
	json_kv_string(&j, "assumes", note);
	json_object_end(&j);
	profile_free(p);
	return json_finish(&j) ? 1 : 0;
}
