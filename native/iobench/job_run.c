/*
 * job_run.c - the IO loop of "iobench job" and its measurements.
 *
 * For: issuing the job's IOs through its engine, timing them and counting
 * them (latency histograms, CPU and faults while measuring, the --lat-log).
 * Not for: the file's set-up (job_setup.c) or the report (job_report.c).
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
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "job.h"
#include "rng.h"
#include "timing.h"
#include "procfs.h"
#include "report.h"

static bool is_random(const struct job_spec *spec)
{
	return spec->rw == RW_RANDREAD || spec->rw == RW_RANDWRITE;
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

int run_job(const struct job_spec *spec, const char *data, int fd, FILE *lat_log,
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
