/*
 * common.c - what the hog subcommands share (see hog.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "hog.h"
#include "timing.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

const char *const touch_method_names[] = { "auto", "fault", "prefault", NULL };

struct opt hog_opt_size(struct hog_common *c, const char *help)
{
	return (struct opt){ .name = "size", .kind = OPT_SIZE, .dest = &c->size, .metavar = "S",
			     .required = true, .help = help };
}

struct opt hog_opt_fill(struct hog_common *c)
{
	return (struct opt){ .name = "fill", .kind = OPT_STRING, .dest = &c->fill_text,
			     .metavar = "zero|random|ratio:R", .default_text = "random",
			     .help = "page contents: zero bytes, incompressible bytes, or pages"
				     " that lz4 compresses to about R of their size (0 < R <= 1)" };
}

struct opt hog_opt_rounds(struct hog_common *c)
{
	return (struct opt){ .name = "rounds", .kind = OPT_UINT, .dest = &c->rounds,
			     .default_text = "1", .help = "rounds to run" };
}

struct opt hog_opt_force(struct hog_common *c)
{
	return (struct opt){ .name = "force", .kind = OPT_FLAG, .dest = &c->force,
			     .help = "allocate even beyond the memory cgroup limit or"
				     " MemAvailable less a safety margin" };
}

struct opt hog_opt_touch(struct hog_common *c)
{
	return (struct opt){ .name = "touch", .kind = OPT_ENUM, .dest = &c->touch,
			     .choices = touch_method_names, .default_text = "auto",
			     .help = "fault: each first write faults the page in; prefault: the"
				     " kernel populates 256 KiB at a time (MADV_POPULATE_WRITE),"
				     " then the pages are written; auto: prefault while the memory"
				     " cgroup has room, fault near its limit or in a group whose"
				     " tasks wait on OOM (memory.oom_control)" };
}

void format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double value = (double)bytes;
	int unit = 0;

	if (bytes < 1024 || bytes % (1 << 20) == 0 || (bytes < (1 << 20) && bytes % 1024 == 0)) {
		opts_format_size(bytes, buf, len);   /* exact: "64M", "1G", "100" */
		return;
	}
	while (value >= 1024 && unit < 6) {
		value /= 1024;
		unit++;
	}
	snprintf(buf, len, "%.1f %s", value, units[unit]);
}

double gb_per_s(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : 0;
}

static void describe_bytes(uint64_t bytes, char *buf, size_t len)
{
	char human[32];

	format_size(bytes, human, sizeof(human));
	snprintf(buf, len, "%llu bytes (%s)", (unsigned long long)bytes, human);
}

/* The memory guard: 0 if size fits, else 2 after saying why, or 1 if unreadable. */
static int check_memory(struct hog_common *c)
{
	char why[600], size_text[64], most[64], available[64], margin[64], left[64], limit[64];

	if (mem_limits_read(&c->limits, "/proc", "/sys/fs/cgroup", why, sizeof(why))) {
		if (c->force)
			return 0;
		return runtime_error("cannot check the memory limits: %s (--force skips the check)",
				     why);
	}
	if (c->force || c->size <= mem_limits_allowance(&c->limits))
		return 0;

	describe_bytes(c->size, size_text, sizeof(size_text));
	describe_bytes(c->limits.mem_available, available, sizeof(available));
	describe_bytes(mem_limits_margin(&c->limits), margin, sizeof(margin));
	describe_bytes(mem_limits_available_after_margin(&c->limits), left, sizeof(left));
	describe_bytes(mem_limits_allowance(&c->limits), most, sizeof(most));
	fprintf(stderr, "hog: refusing --size %s: more than this process may take, %s, the"
		" smaller of MemAvailable %s less a margin of %s = %s and the memory cgroup"
		" limit (", size_text, most, available, margin, left);
	if (c->limits.cgroup_limit == MEM_UNLIMITED) {
		fputs("none", stderr);
	} else {
		describe_bytes(c->limits.cgroup_limit, limit, sizeof(limit));
		fprintf(stderr, "%s from %s", limit, c->limits.cgroup_limit_file);
	}
	fputs("); --force overrides\n", stderr);
	return EXIT_USAGE;
}

int hog_resolve(struct cli *cli, struct hog_common *c, unsigned needs)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		return runtime_error("cannot find the page size");
	c->page_size = (size_t)page;
	if (c->size == 0)
		return usage_error(cli, "--size must be greater than 0");
	if (c->size % c->page_size)
		return usage_error(cli, "--size %llu is not a whole number of %zu-byte pages",
				   (unsigned long long)c->size, c->page_size);
	c->pages = c->size / c->page_size;
	if ((needs & HOG_HAS_ROUNDS) && (c->rounds == 0 || c->rounds > HOG_MAX_ROUNDS))
		return usage_error(cli, "--rounds must be from 1 to %u", HOG_MAX_ROUNDS);

	if (needs & HOG_NEEDS_FILL) {
		enum fill_kind kind;
		double ratio;
		char why[200];

		if (fill_parse(c->fill_text, &kind, &ratio, why, sizeof(why)))
			return usage_error(cli, "--fill %s", why);
		if (fill_init(&c->fill, kind, ratio, c->seed, c->page_size))
			return runtime_error("page size %zu is not usable for --fill", c->page_size);
	}
	if (needs & HOG_NEEDS_MEMORY) {
		int status = check_memory(c);

		if (status)
			return status;
	}
	if (needs & HOG_HAS_OUTPUT)
		return output_begin(cli, c->output);
	return 0;
}

bool hog_start(struct cli *cli, int argc, char **argv, opts_check_fn *check, void *spec,
	       struct hog_common *c, unsigned needs, int *status)
{
	if (!opts_start(cli, argc, argv, check, spec, NULL, status))
		return false;
	*status = hog_resolve(cli, c, needs);
	return *status == 0;
}

void *hog_map(uint64_t size)
{
	void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	if (madvise(buf, size, MADV_NOHUGEPAGE)) {
		int err = errno;

		munmap(buf, size);
		errno = err;
		return NULL;
	}
	return buf;
}

/* auto: bytes that may be prefaulted before the cgroup's room is looked at again. */
static uint64_t prefault_budget(const struct hog_common *c)
{
	uint64_t room = mem_limits_cgroup_room(&c->limits);
	uint64_t margin = c->limits.cgroup_limit / TOUCH_ROOM_MARGIN_DIVISOR;

	if (room == MEM_UNLIMITED)
		return UINT64_MAX;
	if (mem_limits_oom_waits(&c->limits))
		return 0;   /* a failed populate there is a SIGSEGV, not ENOMEM */
	margin = margin > TOUCH_ROOM_MARGIN_MIN ? margin : TOUCH_ROOM_MARGIN_MIN;
	return room > margin ? room - margin : 0;
}

int hog_touch_pages(const struct hog_common *c, unsigned char *buf, uint64_t *prefaulted)
{
	const struct fill *f = &c->fill;
	uint64_t budget = c->touch == TOUCH_AUTO ? prefault_budget(c) : 0;
	uint64_t since_check = 0;

	*prefaulted = 0;
	for (uint64_t first = 0; first < c->pages; first += TOUCH_CHUNK_PAGES) {
		uint64_t n = c->pages - first < TOUCH_CHUNK_PAGES ? c->pages - first
								   : TOUCH_CHUNK_PAGES;
		unsigned char *chunk = buf + first * f->page_size;
		uint64_t bytes = n * f->page_size;

		if (c->touch == TOUCH_PREFAULT) {
			if (madvise(chunk, bytes, MADV_POPULATE_WRITE))
				return errno;
			*prefaulted += n;
		} else if (c->touch == TOUCH_AUTO) {
			if (budget < bytes && (since_check += n) >= TOUCH_RECHECK_PAGES) {
				budget = prefault_budget(c);
				since_check = 0;
			}
			if (budget >= bytes) {
				/* a chunk the kernel could not populate (ENOMEM, or no
				 * MADV_POPULATE_WRITE before Linux 5.14) faults instead */
				if (madvise(chunk, bytes, MADV_POPULATE_WRITE) == 0)
					*prefaulted += n;
				else
					budget = 0;
				budget = budget >= bytes ? budget - bytes : 0;
			}
		}
		for (uint64_t i = 0; i < n; i++)
			fill_page(f, first + i, chunk + i * f->page_size);
	}
	return 0;
}

int64_t hog_resident_pages(void *buf, uint64_t size, size_t page_size)
{
	/* In slices, so that a large working set needs only a small vector. */
	enum { SLICE_PAGES = 1 << 16 };
	static unsigned char vec[SLICE_PAGES];
	uint64_t pages = size / page_size;
	int64_t resident = 0;

	for (uint64_t first = 0; first < pages; first += SLICE_PAGES) {
		uint64_t n = pages - first < SLICE_PAGES ? pages - first : SLICE_PAGES;

		if (mincore((unsigned char *)buf + first * page_size, n * page_size, vec))
			return -1;
		for (uint64_t i = 0; i < n; i++)
			resident += vec[i] & 1;
	}
	return resident;
}

struct faults faults_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (struct faults){ .minor = (uint64_t)ru.ru_minflt, .major = (uint64_t)ru.ru_majflt };
}

struct faults faults_since(struct faults before)
{
	struct faults now = faults_now();

	return (struct faults){ .minor = now.minor - before.minor,
				.major = now.major - before.major };
}

uint64_t sleep_ns(uint64_t ns)
{
	uint64_t start = monotonic_ns();
	struct timespec left = { .tv_sec = (time_t)(ns / NS_PER_SEC),
				 .tv_nsec = (long)(ns % NS_PER_SEC) };

	while (nanosleep(&left, &left) && errno == EINTR)
		;
	return monotonic_ns() - start;
}

const char *thp_mode(void)
{
	static char mode[32] = "";
	FILE *f;
	char line[256];

	if (mode[0])
		return mode;
	snprintf(mode, sizeof(mode), "unknown");
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return mode;
	if (fgets(line, sizeof(line), f)) {
		char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;

		if (open && close && close - open - 1 < (long)sizeof(mode))
			snprintf(mode, sizeof(mode), "%.*s", (int)(close - open - 1), open + 1);
	}
	fclose(f);
	return mode;
}

void hog_json_begin(struct json *j, FILE *out, const char *command)
{
	uint64_t now_ns = realtime_ns();
	char when[64];

	format_wallclock((time_t)(now_ns / NS_PER_SEC), when, sizeof(when));
	json_init(j, out, true);
	json_object_begin(j);
	json_kv_string(j, "version", HOG_VERSION);
	json_kv_string(j, "command", command);
	json_kv_uint(j, "timestamp_ms", now_ns / NS_PER_MS);
	json_kv_string(j, "time", when);
	json_kv_int(j, "pid", (int64_t)getpid());
	json_kv_string(j, "thp", thp_mode());
}

void hog_json_common(struct json *j, const struct hog_common *c, bool with_fill)
{
	json_kv_uint(j, "size", c->size);
	json_kv_uint(j, "page_size", c->page_size);
	json_kv_uint(j, "pages", c->pages);
	if (with_fill) {
		char fill[64];

		fill_describe(&c->fill, fill, sizeof(fill));
		json_kv_string(j, "fill", fill);
		json_kv_uint(j, "fill_random_bytes_per_page", c->fill.random_bytes);
		json_kv_uint(j, "seed", c->seed);
	}
	if (with_fill)
		json_kv_string(j, "touch", touch_method_names[c->touch]);
	json_key(j, "force");
	json_bool(j, c->force);
}
