/*
 * job.c - "iobench job": one fio-like job on one file.
 *
 * For: the job's options, laying out the file, the IO loop and its
 * measurements. Output formatting is in job_report.c, the system calls in
 * the engines (engine.h). Not for: several jobs at once, or mixed
 * read/write.
 *
 * The loop keeps up to --qd IOs outstanding: it starts a new IO in every
 * free slot (each handed to the kernel at once), waits for at least one
 * completion, then accounts every IO that completed. At --qd 1 with psync
 * this is exactly choose, pread, account. Clock reads, as fio takes them:
 * one per round when choosing (lat start), one per IO just before it is
 * issued (clat start) and one per batch of completions (their end).
 *
 * Reproducibility: offsets come from rng.h seeded with --seed, one draw per
 * random IO in issue order, so the same seed, --bs, --offset and --span give
 * the same offset sequence on any machine and at any queue depth (at depth
 * above 1 they complete in a different order). The file's fill data uses a
 * separate stream.
 *
 * Data written: random bytes (incompressible), or with --data-file the bytes
 * of that file, read into memory before the job starts: the IO at offset o
 * writes the file's bytes from (o - --offset) mod its length, so a
 * sequential pass over a span no longer than the file writes it once, in
 * order. For stores whose speed depends on the data (a compressed block
 * device such as zram), fill patterns compress unrealistically well.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "opts.h"
#include "rng.h"
#include "timing.h"
#include "fullio.h"
#include "procfs.h"
#include "report.h"

#define SECTOR 512
#define DIRECT_ALIGN 4096
#define DEFAULT_RUNTIME_NS (5 * NS_PER_SEC)
#define LAYOUT_CHUNK (1 << 20)
#define MAX_QD 4096
#define FILL_SEED_SALT 0x66696c6c64617461ULL   /* "filldata" */

const char *const rw_pattern_names[] = { "read", "write", "randread", "randwrite", NULL };
const char *const iomem_names[] = { "malloc", "mmaphuge", NULL };

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

static bool is_random(const struct job_spec *spec)
{
	return spec->rw == RW_RANDREAD || spec->rw == RW_RANDWRITE;
}

static enum io_dir job_dir(const struct job_spec *spec)
{
	return (spec->rw == RW_READ || spec->rw == RW_RANDREAD) ? IO_READ : IO_WRITE;
}

/* Checks that need more than one option; returns 0 or EXIT_USAGE. */
static int check_options(struct cli *cli, struct job_spec *spec)
{
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

/* Like fio's layout: extend with random data in large writes, then fsync. */
static int lay_out_file(const struct job_spec *spec, int fd, uint64_t from)
{
	char *chunk = malloc(LAYOUT_CHUNK);
	struct rng rng;
	int err = 0;

	if (!chunk)
		return runtime_error("out of memory");
	rng_seed(&rng, spec->seed ^ FILL_SEED_SALT);
	for (uint64_t at = from; at < spec->size && !err; at += LAYOUT_CHUNK) {
		uint64_t left = spec->size - at;
		size_t len = left < LAYOUT_CHUNK ? (size_t)left : LAYOUT_CHUNK;

		rng_fill(&rng, chunk, len);
		err = pwrite_full(fd, chunk, len, at);
	}
	if (!err && fsync(fd))
		err = -errno;
	free(chunk);
	if (err)
		return runtime_error("laying out %s: %s", spec->file, strerror(-err));
	return 0;
}

static int file_size_of(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	*size = (uint64_t)st.st_size;
	return 0;
}

static int open_error(struct cli *cli, const struct job_spec *spec, int err)
{
	const char *hint = "";

	if (err == ENOENT && !spec->size)
		hint = " (--size creates it)";
	else if (err == EINVAL && spec->direct)
		hint = " (does its filesystem support --direct?)";
	return usage_error(cli, "--file %s: %s%s", spec->file, strerror(err), hint);
}

/*
 * Opens the file for the job, creating or extending it first if --size asks
 * for it, and resolves the region [offset, offset + span). Returns the fd,
 * or -1 with *status set to the exit status.
 */
static int open_job_file(struct cli *cli, struct job_spec *spec, int *status)
{
	if (spec->size) {
		int fd = open(spec->file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		uint64_t have = 0;
		int err;

		if (fd < 0) {
			*status = open_error(cli, spec, errno);
			return -1;
		}
		err = file_size_of(fd, &have);
		if (err)
			*status = runtime_error("%s: %s", spec->file, strerror(-err));
		else if (have < spec->size)
			*status = lay_out_file(spec, fd, have);
		else
			*status = 0;
		close(fd);
		if (*status)
			return -1;
	}

	int flags = (job_dir(spec) == IO_READ ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd = open(spec->file, flags | (spec->direct ? O_DIRECT : 0));
	int err;

	if (fd < 0) {
		*status = open_error(cli, spec, errno);
		return -1;
	}
	err = file_size_of(fd, &spec->file_size);
	if (err) {
		*status = runtime_error("%s: %s", spec->file, strerror(-err));
		goto fail;
	}

	/* --size also bounds the region, like fio's size. */
	uint64_t end = spec->size ? spec->size : spec->file_size;

	if (end == 0) {
		*status = usage_error(cli, "--file %s is empty (--size fills it)", spec->file);
		goto fail;
	}
	if (spec->offset >= end) {
		*status = usage_error(cli, "--offset %llu is not inside the %llu bytes of %s",
				      (unsigned long long)spec->offset,
				      (unsigned long long)end, spec->file);
		goto fail;
	}
	if (!spec->span)
		spec->span = end - spec->offset;
	if (spec->span > end - spec->offset) {
		*status = usage_error(cli, "--span %llu from --offset %llu goes past the %llu bytes of %s",
				      (unsigned long long)spec->span,
				      (unsigned long long)spec->offset,
				      (unsigned long long)end, spec->file);
		goto fail;
	}
	if (spec->span < spec->bs) {
		*status = usage_error(cli, "%s has fewer than --bs %llu bytes to do IO on",
				      spec->file, (unsigned long long)spec->bs);
		goto fail;
	}
	/* Start cold for buffered IO, like fio's invalidate=1. */
	if (!spec->keep_cache)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	*status = 0;
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Reads up to spec->span bytes of --data-file into aligned memory (O_DIRECT
 * writes need aligned buffers) and keeps a whole number of --bs of them.
 * Returns 0 and the buffer in *data, or the exit status.
 */
static int load_data_file(struct cli *cli, struct job_spec *spec, char **data)
{
	int fd = open(spec->data_file, O_RDONLY | O_CLOEXEC);
	uint64_t have = 0, want, got = 0;
	void *buf = NULL;
	int err;

	if (fd < 0)
		return usage_error(cli, "--data-file %s: %s", spec->data_file, strerror(errno));
	err = file_size_of(fd, &have);
	if (err) {
		close(fd);
		return runtime_error("--data-file %s: %s", spec->data_file, strerror(-err));
	}
	want = have < spec->span ? have : spec->span;
	want -= want % spec->bs;
	if (want == 0) {
		close(fd);
		return usage_error(cli, "--data-file %s has fewer than --bs %llu bytes",
				   spec->data_file, (unsigned long long)spec->bs);
	}
	if (posix_memalign(&buf, DIRECT_ALIGN, want)) {
		close(fd);
		return runtime_error("cannot allocate %llu bytes for --data-file",
				     (unsigned long long)want);
	}
	while (got < want) {
		ssize_t n = pread(fd, (char *)buf + got, want - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return runtime_error("reading --data-file %s: %s", spec->data_file,
					     strerror(err));
		}
		got += (uint64_t)n;
	}
	close(fd);
	spec->data_bytes = want;
	*data = buf;
	return 0;
}

static uint64_t timeval_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * NS_PER_SEC + (uint64_t)tv.tv_usec * NS_PER_US;
}

static void account_rusage(struct job_result *res, const struct rusage *before,
			   const struct rusage *after)
{
	double window = res->measured_ns ? (double)res->measured_ns : 1;

	res->usr_cpu = 100.0 * (double)(timeval_ns(after->ru_utime) - timeval_ns(before->ru_utime)) / window;
	res->sys_cpu = 100.0 * (double)(timeval_ns(after->ru_stime) - timeval_ns(before->ru_stime)) / window;
	res->ctx = (uint64_t)((after->ru_nvcsw - before->ru_nvcsw) +
			      (after->ru_nivcsw - before->ru_nivcsw));
	res->majf = (uint64_t)(after->ru_majflt - before->ru_majflt);
	res->minf = (uint64_t)(after->ru_minflt - before->ru_minflt);
}

/* Where the IO after block number *next goes; sequential jobs wrap around. */
static uint64_t next_offset(const struct job_spec *spec, struct rng *rng, uint64_t *next)
{
	uint64_t blocks = spec->span / spec->bs;
	uint64_t block;

	if (is_random(spec)) {
		block = rng_below(rng, blocks);
	} else {
		block = *next;
		*next = (block + 1) % blocks;
	}
	return spec->offset + block * spec->bs;
}

static int io_failure(const struct job_spec *spec, const struct io_unit *io)
{
	const char *op = io->dir == IO_READ ? "read" : "write";

	if (io->result < 0)
		return runtime_error("%s of %zu bytes at offset %llu of %s: %s",
				     op, io->len, (unsigned long long)io->offset,
				     spec->file, strerror((int)-io->result));
	return runtime_error("short %s at offset %llu of %s: %zd of %zu bytes",
			     op, (unsigned long long)io->offset, spec->file,
			     io->result, io->len);
}

/* The IO buffers and the bookkeeping of the loop, allocated once. */
struct job_slots {
	struct io_unit *units;          /* qd of them */
	struct io_unit **free;          /* a stack of the units not in flight */
	struct io_unit **done;          /* completions of one reap */
	unsigned nfree;
	char *buffers;
	size_t mapped;                  /* bytes of huge pages under buffers, or 0 if malloc'd */
};

static void free_slots(struct job_slots *slots)
{
	free(slots->units);
	free(slots->free);
	free(slots->done);
	if (slots->mapped)
		munmap(slots->buffers, slots->mapped);
	else
		free(slots->buffers);
}

/*
 * --iomem mmaphuge: the buffers in anonymous huge pages, as fio's iomem=mmaphuge. A huge page
 * is physically contiguous, so an IO up to its size is one DMA segment; a malloc'd buffer
 * gets whatever small pages the allocator hands out, and on a virtual disk whose cost grows
 * with the segments of a request (make bench's disk: 1M reads 2.3x faster from huge pages)
 * that layout, not the tool, can decide the figure.
 */
static int map_huge(uint64_t want, struct job_slots *slots)
{
	int64_t page = meminfo_huge_page_size();
	size_t len;
	void *map;

	if (page <= 0)
		return runtime_error("--iomem mmaphuge: /proc/meminfo reports no Hugepagesize"
				     " (a kernel without hugetlbfs)");
	len = (size_t)((want + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		   -1, 0);
	if (map == MAP_FAILED)
		return runtime_error("--iomem mmaphuge: cannot map %zu bytes of %lld KiB huge pages: %s"
				     " (reserve them first, e.g. sysctl vm.nr_hugepages=%zu;"
				     " HugePages_Free in /proc/meminfo counts the free ones)",
				     len, (long long)(page / 1024), strerror(errno),
				     len / (size_t)page);
	slots->buffers = map;
	slots->mapped = len;
	return 0;
}

static int alloc_slots(const struct job_spec *spec, struct job_slots *slots)
{
	unsigned qd = (unsigned)spec->qd;
	void *buffers = NULL;

	*slots = (struct job_slots){ 0 };
	slots->units = calloc(qd, sizeof(*slots->units));
	slots->free = calloc(qd, sizeof(*slots->free));
	slots->done = calloc(qd, sizeof(*slots->done));
	if (spec->iomem == IOMEM_MMAPHUGE) {
		int status = map_huge(qd * spec->bs, slots);

		if (status) {
			free_slots(slots);
			return status;
		}
	} else if (posix_memalign(&buffers, DIRECT_ALIGN, qd * spec->bs) == 0) {
		slots->buffers = buffers;
	}
	if (!slots->units || !slots->free || !slots->done || !slots->buffers) {
		free_slots(slots);
		return runtime_error("cannot allocate %llu buffers of %llu bytes",
				     (unsigned long long)qd, (unsigned long long)spec->bs);
	}
	if (job_dir(spec) == IO_WRITE) {
		struct rng rng;

		rng_seed(&rng, spec->seed ^ FILL_SEED_SALT);
		rng_fill(&rng, slots->buffers, qd * spec->bs);
	}
	for (unsigned i = 0; i < qd; i++) {
		slots->units[i] = (struct io_unit){
			.dir = job_dir(spec),
			.buf = slots->buffers + (size_t)i * spec->bs,
			.len = spec->bs,
		};
		slots->free[i] = &slots->units[qd - 1 - i];
	}
	slots->nfree = qd;
	return 0;
}

static int run_job(const struct job_spec *spec, const char *data, int fd, FILE *lat_log,
		   struct job_result *res)
{
	enum io_dir dir = job_dir(spec);
	struct dir_stats *stats = &res->dir[dir];
	struct rusage usage_before, usage_after;
	uint64_t next_block = 0, window_start = 0, window_end = 0, issued_measured = 0;
	unsigned outstanding = 0;
	bool measuring = false, failed = false;
	struct job_slots slots;
	struct engine engine;
	struct rng rng;
	int status, err;

	status = alloc_slots(spec, &slots);
	if (status)
		return status;
	err = engine_open(&engine, spec->engine, fd, (unsigned)spec->qd);
	if (err) {
		free_slots(&slots);
		return runtime_error("starting the %s engine: %s", spec->engine->name,
				     strerror(-err));
	}
	rng_seed(&rng, spec->seed);
	getrusage(RUSAGE_SELF, &usage_before);   /* taken again when measuring starts */

	uint64_t job_start = monotonic_ns();
	uint64_t measure_from = job_start + spec->ramp_ns;
	uint64_t deadline = UINT64_MAX;   /* --runtime counts from the first measured IO */

	for (;;) {
		uint64_t now = monotonic_ns();

		if (now >= measure_from && !measuring) {
			measuring = true;
			window_start = now;
			deadline = now + spec->runtime_ns;
			getrusage(RUSAGE_SELF, &usage_before);
		}
		bool may_issue = !failed && (spec->count ? issued_measured < spec->count
							  : now < deadline);

		while (may_issue && slots.nfree) {
			struct io_unit *io = slots.free[--slots.nfree];

			io->offset = next_offset(spec, &rng, &next_block);
			if (data)   /* aligned: data_bytes and offset - spec->offset are multiples of bs */
				io->buf = (char *)data + (io->offset - spec->offset) % spec->data_bytes;
			io->t_start = now;
			io->measured = measuring;
			issued_measured += measuring;
			io->t_issue = monotonic_ns();
			err = spec->engine->queue(&engine, io);
			if (err) {
				slots.free[slots.nfree++] = io;
				status = runtime_error("%s engine: %s", spec->engine->name,
						       strerror(-err));
				failed = true;
				break;
			}
			outstanding++;
			if (spec->count && issued_measured == spec->count)
				break;
		}
		if (!outstanding)
			break;

		int ndone = spec->engine->reap(&engine, 1, slots.done, (unsigned)spec->qd);
		uint64_t t_done = monotonic_ns();

		if (ndone < 0) {
			if (!failed)
				status = runtime_error("%s engine: %s", spec->engine->name,
						       strerror(-ndone));
			break;   /* close() below waits for what is in flight */
		}
		for (int i = 0; i < ndone; i++) {
			struct io_unit *io = slots.done[i];

			outstanding--;
			slots.free[slots.nfree++] = io;
			if (failed)
				continue;
			if (io->result < 0 || (size_t)io->result != io->len) {
				status = io_failure(spec, io);
				failed = true;   /* stop issuing, let the rest complete */
				continue;
			}
			if (!io->measured)
				continue;
			stats->ios++;
			stats->bytes += io->len;
			hist_record(&stats->clat, t_done - io->t_issue);
			hist_record(&stats->lat, t_done - io->t_start);
			window_end = t_done;
			if (lat_log)
				fprintf(lat_log, "%llu,%llu,%zu,%llu,%s\n",
					(unsigned long long)(t_done - job_start),
					(unsigned long long)io->offset, io->len,
					(unsigned long long)(t_done - io->t_issue),
					dir == IO_READ ? "read" : "write");
		}
	}
	getrusage(RUSAGE_SELF, &usage_after);
	res->elapsed_ns = monotonic_ns() - job_start;
	res->measured_ns = window_end > window_start ? window_end - window_start : 0;
	account_rusage(res, &usage_before, &usage_after);
	spec->engine->close(&engine);
	free_slots(&slots);
	return status;
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
		{ .name = "seed", .kind = OPT_UINT, .dest = &spec.seed, .default_text = "1",
		  .help = "seed for the random offsets" },
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

	status = opts_parse_status(&cli, argc, argv);
	if (status != OPTS_GO_ON)
		return status;
	status = check_options(&cli, &spec);
	if (!status)
		status = output_begin(&cli, output);
	if (status)
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
