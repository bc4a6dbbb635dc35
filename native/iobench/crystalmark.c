/*
 * crystalmark.c - "iobench crystalmark": CrystalMark 2004R2's disk test, replayed.
 *
 * For: the exact access sequence that seed 003 traced with Process Monitor
 * (refs.bib: seed003): create a file and fill it with synchronous 1 MiB
 * writes, then six tests of --sets sets each, every test on a freshly opened
 * file: sequential read and write of 1 MiB blocks from the start
 * (SEQUENTIAL_SCAN + NO_BUFFERING), then random reads and writes of 512 KiB
 * and of 64 KiB (RANDOM_ACCESS + NO_BUFFERING). All IO is synchronous, one
 * at a time. The tests are one table (cm_tests[]); the report gives MB/s per
 * set, the best set (CrystalMark's score) and the mean, and latency
 * percentiles per test.
 * Not for: other queue depths or patterns (that is "iobench job").
 *
 * Linux analogues: NO_BUFFERING = O_DIRECT (4 KiB aligned buffers);
 * SEQUENTIAL_SCAN / RANDOM_ACCESS = posix_fadvise SEQUENTIAL / RANDOM; the
 * fill's synchronous write = a buffered write on an O_DSYNC descriptor (the
 * call returns once the data and the metadata needed to read it back are on
 * the device, like a write-through WriteFile, without fsync's extra
 * metadata flush). The page cache is never dropped: whatever caches sit
 * below the file system count in the score, as they did for CrystalMark --
 * which is the seed's warning about reusing a file (--keep-file).
 *
 * How much a set covers (CrystalMark 2004 does not say): every set
 * transfers --size bytes, i.e. --size / block size IOs, optionally cut
 * short by --runtime. Random offsets are uniform over the file, aligned to
 * the block size, drawn with replacement from one stream per test seeded by
 * --seed and the test's position, so a test's offsets do not depend on how
 * long the tests before it ran.
 *
 * Phases: --tests runs only the named tests (still in seed 003's order), so a
 * caller can run each phase as its own invocation on a kept file and look at
 * the device between phases; since CrystalMark reopens the file for every
 * test, the IO is the same as in one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "crystalmark.h"
#include "engine.h"
#include "hist.h"
#include "json.h"
#include "opts.h"
#include "report.h"
#include "rng.h"
#include "timing.h"

#define DIRECT_ALIGN 4096
#define DATA_SEED_SALT 0x636d646174610000ULL    /* "cmdata" */
#define OFFSET_SEED_SALT 0x636d6f6666736574ULL  /* "cmoffset" */

static const char description[] =
	"Replays CrystalMark 2004R2's disk test (seed 003): creates --file and fills\n"
	"it to --size with synchronous 1 MiB writes (O_DSYNC), then runs, each on a\n"
	"newly opened file and each for --sets sets: Sequential Read and Sequential\n"
	"Write of 1 MiB blocks from offset 0 (posix_fadvise SEQUENTIAL + O_DIRECT),\n"
	"then Random Read 512K, Random Write 512K, Random Read 64K and Random Write\n"
	"64K (posix_fadvise RANDOM + O_DIRECT), one synchronous IO at a time.\n"
	"Every set transfers --size bytes (--size / block size IOs; --runtime cuts\n"
	"a set short). Random offsets are uniform over the file, aligned to the\n"
	"block size, reproducible from --seed. Reports MB/s (10^6 bytes/s) per set,\n"
	"the best set (CrystalMark's score) and the mean of the sets, and latency\n"
	"percentiles per test. The page cache is never dropped.\n"
	"Without --keep-file the file must not exist and is removed at the end.\n"
	"With --keep-file an existing file of at least --size bytes is reused as it\n"
	"is (IO covers its first --size bytes), not refilled: caches below the file\n"
	"system (here the page cache, with --buffered) then inflate the scores --\n"
	"the effect seed 003 warns about.\n"
	"--tests runs only the named tests, in the order above: one phase per run\n"
	"on a --keep-file file is the same IO as the whole sequence, since every\n"
	"test reopens the file.\n"
	"The --trace has one line per IO, fill included, in issue order:\n"
	"  test,set,op,offset,bytes,latency_ns\n"
	"with test one of fill, seq_read, seq_write, rand_read_512k,\n"
	"rand_write_512k, rand_read_64k, rand_write_64k (the fill is set 1).\n"
	"Exit status: 0 done, 1 IO error or interrupted, 2 usage error.";

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

const char *dir_name(enum io_dir dir)
{
	return dir == IO_READ ? "read" : "write";
}

/* --tests: which of cm_tests[] run (all when not given). */
static int select_tests(struct cli *cli, struct cm_spec *spec)
{
	const char *p = spec->tests;

	for (size_t t = 0; t < NTESTS; t++)
		spec->run_test[t] = p == NULL;
	while (p && *p) {
		size_t len = strcspn(p, ","), t;

		for (t = 0; t < NTESTS; t++)
			if (strlen(cm_tests[t].key) == len && !strncmp(cm_tests[t].key, p, len))
				break;
		if (t == NTESTS)
			return usage_error(cli, "--tests: no test '%.*s' (seq_read, seq_write, rand_read_512k,"
					   " rand_write_512k, rand_read_64k, rand_write_64k)", (int)len, p);
		spec->run_test[t] = true;
		p += len + (p[len] == ',');
	}
	return 0;
}

static int check_options(struct cli *cli, void *arg)
{
	struct cm_spec *spec = arg;
	if (spec->size < MiB || spec->size % MiB)
		return usage_error(cli, "--size %llu is not a whole number of MiB (at least 1M)",
				   (unsigned long long)spec->size);
	if (spec->sets < 1 || spec->sets > MAX_SETS)
		return usage_error(cli, "--sets must be between 1 and %d", MAX_SETS);
	if (opts_find(cli, "runtime")->given && spec->runtime_ns == 0)
		return usage_error(cli, "--runtime must be greater than 0");
	return select_tests(cli, spec);
}

static int io_error(const char *what, const struct io_unit *io, const char *file)
{
	if (io->result < 0)
		return runtime_error("%s: %s of %zu bytes at offset %llu of %s: %s", what,
				     dir_name(io->dir), io->len, (unsigned long long)io->offset,
				     file, strerror((int)-io->result));
	return runtime_error("%s: short %s at offset %llu of %s: %zd of %zu bytes", what,
			     dir_name(io->dir), (unsigned long long)io->offset, file,
			     io->result, io->len);
}

static void trace_io(struct cm_run *run, const char *test, uint64_t set,
		     const struct io_unit *io, uint64_t latency_ns)
{
	if (run->trace)
		fprintf(run->trace, "%s,%llu,%s,%llu,%zu,%llu\n", test, (unsigned long long)set,
			dir_name(io->dir), (unsigned long long)io->offset, io->len,
			(unsigned long long)latency_ns);
}

/*
 * Step 1 of the sequence: create the file and fill it with synchronous 1 MiB
 * writes, or, with --keep-file, reuse it if it is there. Returns 0 or the
 * exit status.
 */
static int create_and_fill(struct cli *cli, struct cm_run *run)
{
	const struct cm_spec *spec = run->spec;
	struct stat st;
	int fd;

	if (stat(spec->file, &st) == 0) {
		if (!spec->keep_file)
			return usage_error(cli, "--file %s exists (--keep-file reuses it;"
					   " without it the file is made and removed)", spec->file);
		if (!S_ISREG(st.st_mode))
			return usage_error(cli, "--file %s is not a regular file", spec->file);
		if ((uint64_t)st.st_size < spec->size)
			return usage_error(cli, "--file %s has %llu bytes, fewer than --size %llu",
					   spec->file, (unsigned long long)st.st_size,
					   (unsigned long long)spec->size);
		run->reused = true;
		return 0;
	}
	fd = open(spec->file, O_WRONLY | O_CREAT | O_EXCL | O_DSYNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return usage_error(cli, "--file %s: %s", spec->file, strerror(errno));
	run->created = true;
	if (!spec->buffered) {   /* find out now, not after the fill */
		int probe = open(spec->file, O_RDONLY | O_DIRECT | O_CLOEXEC);

		if (probe < 0) {
			int err = errno;

			close(fd);
			return usage_error(cli, "--file %s: O_DIRECT: %s%s", spec->file,
					   strerror(err), err == EINVAL ?
					   " (its file system has no O_DIRECT; --buffered avoids it)" : "");
		}
		close(probe);
	}

	struct engine engine;
	struct io_unit io = { .dir = IO_WRITE, .buf = run->buf, .len = FILL_BLOCK };
	struct rng data;
	int status = 0, err;

	err = engine_open(&engine, &psync_engine, fd, 1);
	if (err) {
		close(fd);
		return runtime_error("filling %s: %s", spec->file, strerror(-err));
	}
	rng_seed(&data, spec->seed ^ DATA_SEED_SALT);
	uint64_t start = monotonic_ns();

	for (io.offset = 0; io.offset < spec->size && !status; io.offset += FILL_BLOCK) {
		if (interrupted) {
			status = runtime_error("interrupted");
			break;
		}
		rng_fill(&data, run->buf, FILL_BLOCK);   /* fresh data per block */
		uint64_t t_issue = monotonic_ns();
		ssize_t done = engine_do_one(&engine, &io);
		uint64_t t_done = monotonic_ns();

		if (done != (ssize_t)io.len) {
			io.result = done;
			status = io_error("filling", &io, spec->file);
			break;
		}
		run->fill_ios++;
		trace_io(run, "fill", 1, &io, t_done - t_issue);
	}
	run->fill_ns = monotonic_ns() - start;
	run->filled = !status;
	engine.ops->close(&engine);
	if (close(fd) && !status)
		status = runtime_error("closing %s: %s", spec->file, strerror(errno));
	return status;
}

/* One test: open with its flags and advice, run every set, close. */
static int run_test(struct cm_run *run, size_t t)
{
	const struct cm_spec *spec = run->spec;
	const struct cm_test *test = &cm_tests[t];
	struct test_result *res = &run->tests[t];
	int flags = (test->dir == IO_READ ? O_RDONLY : O_WRONLY) | O_CLOEXEC;
	uint64_t blocks = spec->size / test->bs;
	struct engine engine;
	struct rng offsets;
	int fd, err, status = 0;

	fd = open(spec->file, flags | (spec->buffered ? 0 : O_DIRECT));
	if (fd < 0)
		return runtime_error("%s: opening %s: %s", test->title, spec->file, strerror(errno));
	posix_fadvise(fd, 0, 0, test->access == SEQUENTIAL ? POSIX_FADV_SEQUENTIAL
							   : POSIX_FADV_RANDOM);
	err = engine_open(&engine, &psync_engine, fd, 1);
	if (err) {
		close(fd);
		return runtime_error("%s: %s", test->title, strerror(-err));
	}
	rng_seed(&offsets, spec->seed ^ OFFSET_SEED_SALT ^ (uint64_t)(t + 1));

	struct io_unit io = { .dir = test->dir, .buf = run->buf, .len = test->bs };

	for (uint64_t set = 1; set <= spec->sets && !status; set++) {
		struct set_result *sr = &res->set[set - 1];
		uint64_t set_start = monotonic_ns(), set_end = set_start;
		uint64_t deadline = spec->runtime_ns ? set_start + spec->runtime_ns : UINT64_MAX;

		for (uint64_t i = 0; i < blocks; i++) {
			if (interrupted) {
				status = runtime_error("interrupted");
				break;
			}
			if (i > 0 && set_end >= deadline)
				break;
			uint64_t block = test->access == RANDOM ? rng_below(&offsets, blocks) : i;

			io.offset = block * test->bs;
			uint64_t t_issue = monotonic_ns();
			ssize_t done = engine_do_one(&engine, &io);

			set_end = monotonic_ns();
			if (done != (ssize_t)io.len) {
				io.result = done;
				status = io_error(test->title, &io, spec->file);
				break;
			}
			sr->ios++;
			sr->bytes += io.len;
			hist_record(&res->clat, set_end - t_issue);
			trace_io(run, test->key, set, &io, set_end - t_issue);
		}
		sr->ns = set_end - set_start;
	}
	engine.ops->close(&engine);
	if (close(fd) && !status)
		status = runtime_error("%s: closing %s: %s", test->title, spec->file,
				       strerror(errno));
	return status;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int crystalmark_command(int argc, char **argv)
{
	struct cm_spec spec = { 0 };
	const char *output = NULL;
	struct opt opts[] = {
		{ .name = "file", .kind = OPT_STRING, .dest = &spec.file, .metavar = "F",
		  .required = true, .help = "the test file to create (or reuse, with --keep-file)" },
		{ .name = "size", .kind = OPT_SIZE, .dest = &spec.size, .default_text = "128M",
		  .help = "file size, a whole number of MiB; also what every set transfers" },
		{ .name = "sets", .kind = OPT_UINT, .dest = &spec.sets, .default_text = "3",
		  .help = "sets per test; the best set is the score" },
		{ .name = "runtime", .kind = OPT_DURATION, .dest = &spec.runtime_ns,
		  .help = "end a set early after TIME (default: no limit)" },
		{ .name = "buffered", .kind = OPT_FLAG, .dest = &spec.buffered,
		  .help = "go through the page cache (no O_DIRECT)" },
		{ .name = "keep-file", .kind = OPT_FLAG, .dest = &spec.keep_file,
		  .help = "keep the file afterwards, and reuse it as it is if it exists" },
		opt_seed(&spec.seed),
		{ .name = "tests", .kind = OPT_STRING, .dest = &spec.tests, .metavar = "LIST",
		  .help = "run only these tests (comma-separated keys, as in the report)" },
		{ .name = "trace", .kind = OPT_STRING, .dest = &spec.trace, .metavar = "FILE",
		  .help = "write every IO to FILE (format above)" },
		opt_output_format(&spec.output_format),
		opt_output(&output),
		{ .name = NULL },
	};
	struct cli cli = {
		.prog = "iobench", .command = "iobench crystalmark",
		.description = description, .opts = opts,
	};
	struct cm_run *run = NULL;
	int status;

	if (!opts_start(&cli, argc, argv, check_options, &spec, &output, &status))
		return status;

	run = calloc(1, sizeof(*run));
	if (!run || posix_memalign(&run->buf, DIRECT_ALIGN, MiB)) {
		free(run);
		return runtime_error("out of memory");
	}
	run->spec = &spec;
	for (size_t t = 0; t < NTESTS; t++)
		hist_init(&run->tests[t].clat);
	if (spec.trace) {
		run->trace = fopen(spec.trace, "w");
		if (!run->trace) {
			status = usage_error(&cli, "--trace %s: %s", spec.trace, strerror(errno));
			goto out;
		}
		setvbuf(run->trace, NULL, _IOFBF, 1 << 20);
	}
	catch_signals();

	status = create_and_fill(&cli, run);
	if (!status) {
		struct rng data;

		rng_seed(&data, spec.seed ^ DATA_SEED_SALT ^ 1);
		rng_fill(&data, run->buf, MiB);   /* what the write tests write */
	}
	for (size_t t = 0; t < NTESTS && !status; t++)
		if (spec.run_test[t])
			status = run_test(run, t);

	if (run->trace && fclose(run->trace) && !status)
		status = runtime_error("writing %s: %s", spec.trace, strerror(errno));
	run->trace = NULL;
	if (!status) {
		if (spec.output_format == OUTPUT_JSON)
			report_json(run, stdout);
		else
			report_normal(run, stdout);
		if (fflush(stdout) || ferror(stdout))
			status = runtime_error("writing the report: %s", strerror(errno));
		else
			output_complete();
	}
out:
	if (run->trace)
		fclose(run->trace);
	/* A half-filled file is never kept: --keep-file would reuse it. */
	if (run->created && (!spec.keep_file || !run->filled) && unlink(spec.file) && !status)
		status = runtime_error("removing %s: %s", spec.file, strerror(errno));
	free(run->buf);
	free(run);
	return status;
}
