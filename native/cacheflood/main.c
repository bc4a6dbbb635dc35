/*
 * main.c - cacheflood: flush the page cache the way seed 004's reader did.
 *
 * For: the options, checks that involve several of them, the file set's life
 * cycle (make or name it, open every file once, keep every descriptor open,
 * remove a made set unless --keep-set) and the exit status. The read loop is
 * flood.c, the output report.c, the set itself lib/fileset.
 * Not for: dropping other caches (no drop_caches: only the set's own pages
 * are ever dropped, with --cold), or writing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cacheflood.h"
#include "operands.h"
#include "opts.h"

#define MAX_SET_FILES 1000000

const char *const flood_order_names[] = { "seq", "random", NULL };
const char *const flood_advice_names[] = { "sequential", "none", "random", NULL };

static const char description[] =
	"Buffered reads (no O_DIRECT) of a set of files until --size bytes have gone through\n"
	"the page cache, like seed 004's reader of C:\\Windows\\Installer: every file is\n"
	"opened once and stays open until the end, and the set is read pass after pass\n"
	"(the last read is cut short so that exactly --size bytes are read). The set is the\n"
	"files after --files, or a set made by --make-set: DIR/flood-00000.dat, ...\n"
	"holding --set-size bytes of pseudo-random data (from --seed) in files of\n"
	"--file-size bytes. A made set reuses files that already have the right name and\n"
	"size, starts cold (files it writes are synced and dropped from the page cache),\n"
	"and is removed at the end (and DIR, if it made DIR) unless --keep-set.\n"
	"Orders: seq reads each file start to end, in order; random reads each --bs\n"
	"block of the set once per pass, shuffled by --seed and the pass number.\n"
	"--fadvise gives every file a readahead hint first: sequential (the default,\n"
	"as cat(1) does: the kernel doubles its readahead window), none, or random (no\n"
	"readahead). The hint changes how the set is read, not what the cache keeps.\n"
	"Reports bytes, time and throughput (MB/s = 1e6 B/s), Cached and SwapCached from\n"
	"/proc/meminfo before and after, the set's own residency (mmap + mincore), and\n"
	"this process's rusage faults and /proc/self/io (read_bytes: bytes that came\n"
	"from the disk; rchar: all bytes read). Exit status: 0 done, 1 runtime failure\n"
	"(IO error, interrupted), 2 usage error (including files that cannot be read).";

/* Checks that need more than one option, and the operands; 0 or EXIT_USAGE. */
static int check_options(struct cli *cli, const struct flood_spec *spec,
			 const struct operands *ops)
{
	static const char *const make_set_only[] = { "set-size", "file-size", "keep-set", NULL };
	bool files = opts_find(cli, "files")->given;
	bool make_set = opts_find(cli, "make-set")->given;

	if (ops->count && !files)
		return usage_error(cli, "unexpected argument '%s' (file names go after --files)",
				   ops->words[0]);
	if (files && make_set)
		return usage_error(cli, "--files and --make-set exclude each other");
	if (!files && !make_set)
		return usage_error(cli, "no files: give --files F... or --make-set DIR");
	if (spec->bytes == 0)
		return usage_error(cli, "--size must be greater than 0");
	if (spec->bs == 0)
		return usage_error(cli, "--bs must be greater than 0");
	if (files) {
		for (const char *const *name = make_set_only; *name; name++)
			if (opts_find(cli, *name)->given)
				return usage_error(cli, "--%s goes with --make-set, not --files", *name);
		return 0;
	}
	if (!opts_find(cli, "set-size")->given)
		return usage_error(cli, "--make-set needs --set-size");
	if (spec->set_size == 0)
		return usage_error(cli, "--set-size must be greater than 0");
	if (spec->file_size == 0)
		return usage_error(cli, "--file-size must be greater than 0");
	if (spec->set_size / spec->file_size >= MAX_SET_FILES)
		return usage_error(cli, "--set-size / --file-size makes more than %d files",
				   MAX_SET_FILES);
	return 0;
}

/* The set named by --files and the operands, opened; 0 or EXIT_USAGE. */
static int open_named_set(struct cli *cli, const struct flood_spec *spec,
			  const struct operands *ops, struct fileset *set)
{
	char **paths = calloc((size_t)ops->count + 1, sizeof(*paths));
	int err;

	if (!paths)
		return runtime_error("out of memory");
	paths[0] = (char *)spec->first_file;
	memcpy(paths + 1, ops->words, (size_t)ops->count * sizeof(*paths));
	err = fileset_of_paths(set, paths, (size_t)ops->count + 1);
	free(paths);
	if (err)
		return runtime_error("%s", set->error);
	if (fileset_open(set))
		return usage_error(cli, "--files %s", set->error);
	if (set->bytes == 0)
		return usage_error(cli, "--files: the files hold no data");
	return 0;
}

/* The set made (or reused) in --make-set DIR, opened; 0 or 1. */
static int open_made_set(const struct flood_spec *spec, struct fileset *set)
{
	if (fileset_plan(set, spec->make_set, spec->set_size, spec->file_size) ||
	    fileset_make(set, spec->seed) || fileset_open(set))
		return runtime_error("--make-set: %s", set->error);
	return 0;
}

static void stop_on_signal(int sig)
{
	(void)sig;
	flood_stop = 1;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = stop_on_signal };   /* no SA_RESTART */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int flood(struct cli *cli, const struct flood_spec *spec, const struct operands *ops)
{
	struct fileset set = { 0 };
	struct flood_result res = { 0 };
	int status;

	catch_stop_signals();
	if (spec->make_set)
		status = open_made_set(spec, &set);
	else
		status = open_named_set(cli, spec, ops, &set);
	if (!status && spec->cold && fileset_evict(&set))
		status = runtime_error("--cold: %s", set.error);
	if (!status && flood_stop)
		status = runtime_error("interrupted before reading");
	if (!status)
		status = flood_run(spec, &set, &res);
	fileset_close(&set);
	if (set.dir && !spec->keep_set) {
		if (fileset_remove(&set))
			status = status ? status : runtime_error("%s", set.error);
		else
			res.set_removed = true;
	}
	if (!status) {
		if (spec->output_format == OUTPUT_JSON)
			flood_report_json(spec, &set, &res, stdout);
		else
			flood_report_normal(spec, &set, &res, stdout);
		if (fflush(stdout) || ferror(stdout))
			status = runtime_error("writing the report: %s", strerror(errno));
		else
			output_complete();
	}
	fileset_free(&set);
	return status;
}

int main(int argc, char **argv)
{
	struct flood_spec spec = { 0 };
	const char *output = NULL;
	struct opt opts[] = {
		{ .name = "files", .kind = OPT_STRING, .dest = &spec.first_file, .metavar = "F...",
		  .help = "read these files (every word up to the next option)" },
		{ .name = "make-set", .kind = OPT_STRING, .dest = &spec.make_set, .metavar = "DIR",
		  .help = "read a set of files made (or reused) in DIR" },
		{ .name = "set-size", .kind = OPT_SIZE, .dest = &spec.set_size,
		  .help = "bytes in the made set" },
		{ .name = "file-size", .kind = OPT_SIZE, .dest = &spec.file_size,
		  .default_text = "64M", .help = "bytes per file of the made set (the last may be"
		  " shorter)" },
		{ .name = "size", .kind = OPT_SIZE, .dest = &spec.bytes, .metavar = "B",
		  .required = true, .help = "read exactly B bytes, cycling through the set" },
		{ .name = "bs", .kind = OPT_SIZE, .dest = &spec.bs, .default_text = "128K",
		  .help = "bytes per read" },
		{ .name = "order", .kind = OPT_ENUM, .dest = &spec.order,
		  .choices = flood_order_names, .default_text = "seq",
		  .help = "file by file, or every --bs block once per pass in a shuffled order" },
		{ .name = "fadvise", .kind = OPT_ENUM, .dest = &spec.advice,
		  .choices = flood_advice_names, .default_text = "sequential",
		  .help = "readahead hint for every file (posix_fadvise)" },
		opt_seed(&spec.seed),
		{ .name = "cold", .kind = OPT_FLAG, .dest = &spec.cold,
		  .help = "first drop the set's pages from the page cache (POSIX_FADV_DONTNEED)" },
		{ .name = "keep-set", .kind = OPT_FLAG, .dest = &spec.keep_set,
		  .help = "leave the made set in DIR for the next run" },
		opt_output_format(&spec.output_format),
		opt_output(&output),
		{ .name = NULL },
	};
	struct cli cli = {
		.prog = "cacheflood", .command = "cacheflood",
		.description = description, .opts = opts, .version = CACHEFLOOD_VERSION,
	};
	struct operands ops;
	int status;

	status = operands_start(&cli, NULL, argc, argv, &ops);
	if (status == OPTS_GO_ON) {
		status = check_options(&cli, &spec, &ops);
		if (!status)
			status = output_begin(&cli, output);
		if (!status)
			status = flood(&cli, &spec, &ops);
	}
	operands_free(&ops);
	return output_finish(status);
}
