/*
 * flood.c - the read loop of cacheflood and the counters around it.
 *
 * For: buffered pread()s of --bs bytes through an open file set, in file
 * order (seq) or in a shuffled order of blocks (random), pass after pass,
 * until exactly --size bytes have been read; and the snapshots of /proc/meminfo,
 * /proc/self/io, rusage and the set's residency taken around it.
 * Not for: opening or making the set (main.c, lib/fileset) or printing.
 *
 * Orders: seq reads every file from start to end, in the order given;
 * random reads every --bs block of the set exactly once per pass (a file's
 * last block may be shorter), in an order drawn from --seed and the pass
 * number (lib/permute). Both read the same bytes per pass, so only the order
 * differs. Before the first read every file gets the --fadvise hint: by
 * default POSIX_FADV_SEQUENTIAL, as cat(1) gives (on Linux it doubles the
 * file's readahead window; it drops nothing), so the set streams through the
 * page cache as fast as cat reads it (benchmarked side by side, pinned to one
 * CPU). Windows' cache manager, which seed 004's reader relied on, detects
 * sequential reads by itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cacheflood.h"
#include "permute.h"
#include "timing.h"

#define BUFFER_ALIGN 4096

volatile sig_atomic_t flood_stop;

/* Where a block of the set lives. */
struct block_map {
	size_t count;             /* files */
	uint64_t *first_block;    /* [count + 1]: file i has blocks [first[i], first[i+1]) */
	uint64_t blocks;
};

static int map_blocks(const struct fileset *set, uint64_t bs, struct block_map *map)
{
	map->count = set->count;
	map->first_block = malloc((set->count + 1) * sizeof(*map->first_block));
	if (!map->first_block)
		return -1;
	map->blocks = 0;
	for (size_t i = 0; i < set->count; i++) {
		uint64_t size = set->files[i].size;

		map->first_block[i] = map->blocks;
		map->blocks += size / bs + (size % bs != 0);
	}
	map->first_block[set->count] = map->blocks;
	return 0;
}

/* The file holding block b (binary search: the last i with first[i] <= b and blocks). */
static size_t file_of_block(const struct block_map *map, uint64_t b)
{
	size_t lo = 0, hi = map->count;   /* first[lo] <= b < first[hi] */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->first_block[mid] <= b)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Reads len bytes at offset; returns 0, or -errno (-ENODATA: the file ended early). */
static int read_block(int fd, char *buf, size_t len, uint64_t offset, uint64_t *reads)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)offset);

		if (n < 0 && errno == EINTR) {
			if (flood_stop)
				return -EINTR;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		(*reads)++;
		buf += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

static int read_error(const struct fileset_file *f, uint64_t offset, int err)
{
	if (err == -ENODATA)
		return runtime_error("%s ended before offset %llu: did it shrink while open?",
				     f->path, (unsigned long long)offset);
	if (err == -EINTR)
		return runtime_error("interrupted");
	return runtime_error("reading %s at offset %llu: %s", f->path,
			     (unsigned long long)offset, strerror(-err));
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static int flood_seq(const struct flood_spec *spec, struct fileset *set, char *buf,
		     struct flood_result *res)
{
	size_t file = 0;
	uint64_t offset = 0;

	while (res->bytes < spec->bytes && !flood_stop) {
		struct fileset_file *f = &set->files[file];

		if (offset >= f->size) {
			file = (file + 1) % set->count;
			offset = 0;
			continue;   /* the set holds data, so some file is not empty */
		}
		size_t len = (size_t)min_u64(min_u64(spec->bs, f->size - offset),
					     spec->bytes - res->bytes);
		int err = read_block(f->fd, buf, len, offset, &res->reads);

		if (err)
			return read_error(f, offset, err);
		offset += len;
		res->bytes += len;
	}
	return 0;
}

static int flood_random(const struct flood_spec *spec, struct fileset *set, char *buf,
			struct flood_result *res)
{
	struct block_map map;
	struct permutation order;
	uint64_t pass = 0, position = 0;
	int status = 0;

	if (map_blocks(set, spec->bs, &map))
		return runtime_error("out of memory for %zu files", set->count);
	permute_init(&order, map.blocks, spec->seed);
	while (res->bytes < spec->bytes && !flood_stop) {
		if (position == map.blocks) {
			permute_init(&order, map.blocks, spec->seed + ++pass);
			position = 0;
		}
		uint64_t block = permute_at(&order, position++);
		size_t file = file_of_block(&map, block);
		struct fileset_file *f = &set->files[file];
		uint64_t offset = (block - map.first_block[file]) * spec->bs;
		size_t len = (size_t)min_u64(min_u64(spec->bs, f->size - offset),
					     spec->bytes - res->bytes);
		int err = read_block(f->fd, buf, len, offset, &res->reads);

		if (err) {
			status = read_error(f, offset, err);
			break;
		}
		res->bytes += len;
	}
	free(map.first_block);
	return status;
}

/*
 * Counters that any process may read; missing ones are reported as null.
 * /proc/self/io is read closest to the loop, so that reading /proc/meminfo
 * does not count in rchar (reading /proc/self/io itself adds ~100 bytes).
 */
static void read_counters_before(struct flood_snapshot *snap)
{
	meminfo_read(&snap->mem);
	getrusage(RUSAGE_SELF, &snap->usage);
	proc_io_read(&snap->io);
}

static void read_counters_after(struct flood_snapshot *snap)
{
	proc_io_read(&snap->io);
	getrusage(RUSAGE_SELF, &snap->usage);
	meminfo_read(&snap->mem);
}

static int measure_set(struct fileset *set, struct residency *r)
{
	if (fileset_residency(set, r))
		return runtime_error("%s", set->error);
	return 0;
}

static int advise_set(const struct flood_spec *spec, const struct fileset *set)
{
	static const int advice[] = {
		[ADVICE_SEQUENTIAL] = POSIX_FADV_SEQUENTIAL,
		[ADVICE_NONE] = POSIX_FADV_NORMAL,
		[ADVICE_RANDOM] = POSIX_FADV_RANDOM,
	};

	for (size_t i = 0; i < set->count; i++) {
		int err = posix_fadvise(set->files[i].fd, 0, 0, advice[spec->advice]);

		if (err)
			return runtime_error("posix_fadvise(%s, %s): %s", set->files[i].path,
					     flood_advice_names[spec->advice], strerror(err));
	}
	return 0;
}

int flood_run(const struct flood_spec *spec, struct fileset *set, struct flood_result *res)
{
	char *buf;
	int status;

	if (posix_memalign((void **)&buf, BUFFER_ALIGN, spec->bs))
		return runtime_error("cannot allocate a %llu byte buffer",
				     (unsigned long long)spec->bs);
	memset(buf, 0, spec->bs);   /* fault it in now, so the loop's minflt is the loop's own */
	status = advise_set(spec, set);
	if (status) {
		free(buf);
		return status;
	}
	status = measure_set(set, &res->before.set);
	if (status) {
		free(buf);
		return status;
	}
	read_counters_before(&res->before);

	uint64_t start = monotonic_ns();

	if (spec->order == ORDER_SEQ)
		status = flood_seq(spec, set, buf, res);
	else
		status = flood_random(spec, set, buf, res);
	res->elapsed_ns = monotonic_ns() - start;
	read_counters_after(&res->after);
	free(buf);
	if (!status && flood_stop)
		status = runtime_error("interrupted after %llu of %llu bytes",
				       (unsigned long long)res->bytes,
				       (unsigned long long)spec->bytes);
	if (!status)
		status = measure_set(set, &res->after.set);
	return status;
}
