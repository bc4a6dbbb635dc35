/*
 * job.c - "iobench job": one fio-like job on one file.
 *
 * For: the command: its options and the checks across them, then the job's
 * steps in order: the file and data set-up (job_setup.c), the IO loop and its
 * measurements (job_run.c), the report (job_report.c). The system calls are
 * in the engines (engine.h). Not for: several jobs at once, or mixed
 * read/write.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "opts.h"
#include "timing.h"
#include "report.h"

#define SECTOR 512
#define DEFAULT_RUNTIME_NS (5 * NS_PER_SEC)
#define MAX_QD 4096

static const char description[] =
	"Runs one job and reports it, as text or (--output-format json) as JSON\n"
	"shaped like fio --output-format=json.\n"
	"--engine psync does one pread/pwrite at a time (queue depth 1 only);\n"
	"--engine io_uring keeps up to --qd IOs in flight. Random offsets are uniform,\n"
	"aligned to --bs, within [offset, offset+span), drawn from --seed: the same\n"
	"seed gives the same offsets (drawn in issue order). Sequential jobs wrap\n"
	"around at the end of the span. Buffered jobs start with the file's pages\n"
	"dropped from the page cache (fio's invalidate=1) unless --keep-cache.\n"
	"Exit status: 0 done, 1 IO error, 2 usage error.\n"
	"The --lat-log has one line per measured IO:\n"
	"  t_ns_since_start,offset,bytes,latency_ns,op\n"
	"in completion order, where t is the completion time since the job started\n"
	"(ramp included) and latency is the completion latency (clat) in ns.\n"
	"--data-file makes write jobs write that file's bytes (read into memory\n"
	"first; the IO at offset o writes the file's bytes from (o - offset) mod its\n"
	"length, rounded down to a whole number of --bs) instead of random bytes.";

/* Checks that need more than one option; returns 0 or EXIT_USAGE. */
static int check_options(struct cli *cli, void *arg)
{
	struct job_spec *spec = arg;
	uint64_t align = spec->direct ? DIRECT_ALIGN : SECTOR;

	if (spec->bs == 0)
		return usage_error(cli, "--bs must be greater than 0");
	if (spec->bs % align)
		return usage_error(cli, "--bs %llu is not a multiple of %llu%s",
				   (unsigned long long)spec->bs, (unsigned long long)align,
				   spec->direct ? " (needed with --direct)" : "");
	if (spec->offset % align)
		return usage_error(cli, "--offset %llu is not a multiple of %llu",
				   (unsigned long long)spec->offset, (unsigned long long)align);
	if (opts_find(cli, "runtime")->given && opts_find(cli, "count")->given)
		return usage_error(cli, "--runtime and --count exclude each other");
	if (opts_find(cli, "runtime")->given && spec->runtime_ns == 0)
		return usage_error(cli, "--runtime must be greater than 0");
	if (opts_find(cli, "count")->given && spec->count == 0)
		return usage_error(cli, "--count must be at least 1");
	if (!opts_find(cli, "runtime")->given && !opts_find(cli, "count")->given)
		spec->runtime_ns = DEFAULT_RUNTIME_NS;
	if (spec->qd == 0 || spec->qd > MAX_QD)
		return usage_error(cli, "--qd must be between 1 and %d", MAX_QD);
	spec->engine = io_engines[spec->engine_index];
	if (spec->qd > spec->engine->max_depth)
		return usage_error(cli, "--qd %llu needs --engine io_uring (--engine %s does one IO at a time)",
				   (unsigned long long)spec->qd, spec->engine->name);
	if (spec->data_file && job_dir(spec) != IO_WRITE)
		return usage_error(cli, "--data-file is for write jobs (--rw write or randwrite)");
	if (opts_find(cli, "span")->given && spec->span < spec->bs)
		return usage_error(cli, "--span %llu is smaller than --bs %llu",
				   (unsigned long long)spec->span, (unsigned long long)spec->bs);
	return 0;
}

int job_command(int argc, char **argv)
{
	struct job_spec spec = { 0 };
	const char *output = NULL;
	struct opt opts[] = {
		{ .name = "file", .kind = OPT_STRING, .dest = &spec.file, .metavar = "F",
		  .required = true, .help = "file or block device to do IO on" },
		{ .name = "rw", .kind = OPT_ENUM, .dest = &spec.rw, .choices = rw_pattern_names,
		  .required = true, .help = "access pattern" },
		{ .name = "bs", .kind = OPT_SIZE, .dest = &spec.bs, .metavar = "B", .required = true,
		  .help = "block size: a multiple of 512, and of 4096 with --direct" },
		{ .name = "direct", .kind = OPT_FLAG, .dest = &spec.direct,
		  .help = "open with O_DIRECT (bypass the page cache)" },
		{ .name = "engine", .kind = OPT_ENUM, .dest = &spec.engine_index,
		  .choices = io_engine_names, .default_text = "psync",
		  .help = "how IO is issued (fio's ioengine): psync is queue depth 1 only" },
		{ .name = "qd", .kind = OPT_UINT, .dest = &spec.qd, .default_text = "1",
		  .help = "IOs in flight at once (fio's iodepth); above 1 needs --engine io_uring" },
		{ .name = "iomem", .kind = OPT_ENUM, .dest = &spec.iomem, .choices = iomem_names,
		  .default_text = "malloc",
		  .help = "where the IO buffers live (fio's iomem): malloc, or mmaphuge for"
			  " anonymous huge pages (MAP_HUGETLB; reserve them with vm.nr_hugepages)" },
		{ .name = "keep-cache", .kind = OPT_FLAG, .dest = &spec.keep_cache,
		  .help = "do not drop the file's pages from the page cache first"
			  " (fio's invalidate=0)" },
		{ .name = "size", .kind = OPT_SIZE, .dest = &spec.size,
		  .help = "first create or extend the file to SIZE with random data;"
			  " also bounds the region" },
		{ .name = "runtime", .kind = OPT_DURATION, .dest = &spec.runtime_ns,
		  .help = "measure for TIME (5s if neither --runtime nor --count is given)" },
		{ .name = "count", .kind = OPT_UINT, .dest = &spec.count,
		  .help = "measure exactly N IOs instead of a --runtime" },
		{ .name = "ramp", .kind = OPT_DURATION, .dest = &spec.ramp_ns, .default_text = "0s",
		  .help = "run TIME before measuring (fio's ramp_time)" },
		opt_seed(&spec.seed),
		{ .name = "span", .kind = OPT_SIZE, .dest = &spec.span,
		  .help = "bytes to spread IO over (default: the rest of the file after --offset)" },
		{ .name = "offset", .kind = OPT_SIZE, .dest = &spec.offset, .default_text = "0",
		  .help = "where the region starts" },
		{ .name = "data-file", .kind = OPT_STRING, .dest = &spec.data_file, .metavar = "FILE",
		  .help = "write jobs write this file's bytes (cyclically) instead of random data" },
		{ .name = "lat-log", .kind = OPT_STRING, .dest = &spec.lat_log, .metavar = "FILE",
		  .help = "log every measured IO to FILE" },
		opt_output_format(&spec.output_format),
		opt_output(&output),
		{ .name = "name", .kind = OPT_STRING, .dest = &spec.name, .metavar = "NAME",
		  .default_text = "iobench",
		  .help = "job name in the report" },
		{ .name = NULL },
	};
	struct cli cli = {
		.prog = "iobench", .command = "iobench job",
		.description = description, .opts = opts,
	};
	struct job_result *res = NULL;
	FILE *lat_log = NULL;
	char *data = NULL;
	int status, fd;

	if (!opts_start(&cli, argc, argv, check_options, &spec, &output, &status))
		return status;
	fd = open_job_file(&cli, &spec, &status);
	if (fd < 0)
		return status;

	if (spec.data_file) {
		status = load_data_file(&cli, &spec, &data);
		if (status)
			goto out;
	}
	res = calloc(1, sizeof(*res));
	if (!res) {
		status = runtime_error("out of memory");
		goto out;
	}
	for (int d = IO_READ; d <= IO_WRITE; d++) {
		hist_init(&res->dir[d].clat);
		hist_init(&res->dir[d].lat);
	}
	if (spec.lat_log) {
		lat_log = fopen(spec.lat_log, "w");
		if (!lat_log) {
			status = usage_error(&cli, "--lat-log %s: %s", spec.lat_log, strerror(errno));
			goto out;
		}
		setvbuf(lat_log, NULL, _IOFBF, 1 << 20);
	}

	status = run_job(&spec, data, fd, lat_log, res);
	if (lat_log && fclose(lat_log) && !status)
		status = runtime_error("writing %s: %s", spec.lat_log, strerror(errno));
	lat_log = NULL;
	if (status)
		goto out;

	if (spec.output_format == OUTPUT_JSON)
		job_report_json(&spec, res, stdout);
	else
		job_report_normal(&spec, res, stdout);
	if (fflush(stdout) || ferror(stdout))
		status = runtime_error("writing the report: %s", strerror(errno));
	else
		output_complete();
out:
	if (lat_log)
		fclose(lat_log);
	free(res);
	free(data);
	close(fd);
	return status;
}
