/*
 * run.c - "hog run": the memory hog. Each round maps --size bytes of fresh
 * anonymous memory, writes every byte of every page with the --fill, holds it
 * for --hold, and unmaps it; the phases are timed and the round's minor and
 * major faults counted (getrusage).
 *
 * For: putting memory pressure on the rest of the system, and measuring what
 * first touch costs. Not for: re-touching a working set after a trim (that is
 * "hog victim"). Several hogs at once are several processes; with --barrier
 * they hold each round's memory side by side (barrier.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "commands.h"
#include "hog.h"
#include "timing.h"

static const char description[] =
	"Each round: mmap --size bytes of private anonymous memory (transparent huge\n"
	"pages off, so one fault per page), write every byte of every page with --fill\n"
	"(the touch phase; see --touch), wait at the --barrier until all --parties\n"
	"hogs sharing it have written their round (side by side), sleep --hold,\n"
	"munmap. Reports each round's phase times, its minor and major faults\n"
	"(getrusage) and the touch throughput in decimal GB/s. The same --seed gives\n"
	"the same bytes in every round.\n"
	"Refuses a --size beyond the memory cgroup limit or MemAvailable less\n"
	"max(256 MiB, 5 % of MemTotal) unless --force.\n"
	"A hog that dies or exits while the others wait for it at the --barrier ends\n"
	"their wait at once (each hog holds a lock on the file while it lives).\n"
	"Exit status: 0 done, 1 runtime failure, 2 usage error or refused size,\n"
	"3 a hog sharing the --barrier is gone (killed or exited) mid-round.";

struct round {
	uint64_t alloc_ns, touch_ns, barrier_ns, hold_ns, free_ns;
	uint64_t prefaulted_pages;
	struct faults faults;
};

struct run_spec {
	struct hog_common c;
	uint64_t hold_ns;
	const char *barrier_path;
	uint64_t parties, barrier_timeout_ns;
	struct barrier barrier;
};

static int run_round(struct run_spec *spec, uint64_t index, struct round *r)
{
	struct faults before = faults_now();
	uint64_t t0 = monotonic_ns();
	unsigned char *buf = hog_map(spec->c.size);
	uint64_t t1 = monotonic_ns();

	if (!buf)
		return runtime_error("cannot map %llu bytes: %s", (unsigned long long)spec->c.size,
				     strerror(errno));
	int err = hog_touch_pages(&spec->c, buf, &r->prefaulted_pages);
	uint64_t t2 = monotonic_ns();

	if (err) {
		munmap(buf, spec->c.size);
		return runtime_error("madvise(MADV_POPULATE_WRITE): %s%s", strerror(err),
				     err == EINVAL ? " (--touch prefault needs Linux 5.14)" : "");
	}

	err = barrier_wait(&spec->barrier, index, &r->barrier_ns);
	if (err) {
		munmap(buf, spec->c.size);
		return err;
	}
	r->hold_ns = spec->hold_ns ? sleep_ns(spec->hold_ns) : 0;
	uint64_t t3 = monotonic_ns();

	if (munmap(buf, spec->c.size))
		return runtime_error("munmap: %s", strerror(errno));
	uint64_t t4 = monotonic_ns();

	r->alloc_ns = t1 - t0;
	r->touch_ns = t2 - t1;
	r->free_ns = t4 - t3;
	r->faults = faults_since(before);
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t median_touch_ns(const struct round *rounds, uint64_t n)
{
	uint64_t *t = malloc(n * sizeof(*t));
	uint64_t median;

	if (!t)
		return rounds[0].touch_ns;
	for (uint64_t i = 0; i < n; i++)
		t[i] = rounds[i].touch_ns;
	qsort(t, n, sizeof(*t), compare_u64);
	median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	return median;
}

static void report_json(const struct run_spec *spec, const struct round *rounds)
{
	uint64_t n = spec->c.rounds, min = UINT64_MAX, max = 0;
	struct json j;

	hog_json_begin(&j, stdout, "run");
	json_kv_object_begin(&j, "options");
	hog_json_common(&j, &spec->c, true);
	json_kv_uint(&j, "rounds", spec->c.rounds);
	json_kv_uint(&j, "hold_ns", spec->hold_ns);
	if (spec->barrier_path)
		json_kv_string(&j, "barrier", spec->barrier_path);
	json_kv_uint(&j, "parties", spec->parties);
	json_kv_uint(&j, "barrier_timeout_ns", spec->barrier_timeout_ns);
	json_object_end(&j);

	json_kv_array_begin(&j, "rounds");
	for (uint64_t i = 0; i < n; i++) {
		const struct round *r = &rounds[i];

		json_object_begin(&j);
		json_kv_uint(&j, "round", i + 1);
		json_kv_uint(&j, "alloc_ns", r->alloc_ns);
		json_kv_uint(&j, "touch_ns", r->touch_ns);
		json_kv_uint(&j, "prefaulted_pages", r->prefaulted_pages);
		json_kv_uint(&j, "barrier_ns", r->barrier_ns);
		json_kv_uint(&j, "hold_ns", r->hold_ns);
		json_kv_uint(&j, "free_ns", r->free_ns);
		json_kv_uint(&j, "minflt", r->faults.minor);
		json_kv_uint(&j, "majflt", r->faults.major);
		json_kv_double(&j, "touch_gb_per_s", gb_per_s(spec->c.size, r->touch_ns));
		json_object_end(&j);
		min = r->touch_ns < min ? r->touch_ns : min;
		max = r->touch_ns > max ? r->touch_ns : max;
	}
	json_array_end(&j);

	uint64_t median = median_touch_ns(rounds, n);

	json_kv_object_begin(&j, "summary");
	json_kv_uint(&j, "touch_ns_min", min);
	json_kv_uint(&j, "touch_ns_median", median);
	json_kv_uint(&j, "touch_ns_max", max);
	json_kv_double(&j, "touch_gb_per_s_median", gb_per_s(spec->c.size, median));
	/* the round whose barrier gave up waiting for the other hogs (0: none) */
	json_kv_uint(&j, "barrier_broken_round", spec->barrier.broken_round);
	json_object_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static void report_normal(const struct run_spec *spec, const struct round *rounds)
{
	char size[32], page[32], fill[64];

	format_size(spec->c.size, size, sizeof(size));
	format_size(spec->c.page_size, page, sizeof(page));
	fill_describe(&spec->c.fill, fill, sizeof(fill));
	printf("hog run: %s (%llu pages of %s), fill %s, seed %llu, touch %s, %llu round%s,"
	       " thp %s\n", size, (unsigned long long)spec->c.pages, page, fill,
	       (unsigned long long)spec->c.seed, touch_method_names[spec->c.touch],
	       (unsigned long long)spec->c.rounds, spec->c.rounds == 1 ? "" : "s", thp_mode());
	printf("%5s %10s %10s %10s %10s %10s %8s %10s\n", "round", "alloc_ms", "touch_ms",
	       "hold_ms", "free_ms", "minflt", "majflt", "touch_GB/s");
	for (uint64_t i = 0; i < spec->c.rounds; i++) {
		const struct round *r = &rounds[i];

		printf("%5llu %10.3f %10.3f %10.3f %10.3f %10llu %8llu %10.2f\n",
		       (unsigned long long)(i + 1), (double)r->alloc_ns / 1e6,
		       (double)r->touch_ns / 1e6, (double)r->hold_ns / 1e6,
		       (double)r->free_ns / 1e6, (unsigned long long)r->faults.minor,
		       (unsigned long long)r->faults.major, gb_per_s(spec->c.size, r->touch_ns));
	}
	uint64_t median = median_touch_ns(rounds, spec->c.rounds);

	printf("touch: median %.3f ms, %.2f GB/s\n", (double)median / 1e6,
	       gb_per_s(spec->c.size, median));
}

/* Checks that need more than one option; returns 0 or EXIT_USAGE. */
static int check_options(struct cli *cli, void *arg)
{
	const struct run_spec *spec = arg;

	if (spec->parties == 0 || spec->parties > BARRIER_MAX_PARTIES)
		return usage_error(cli, "--parties must be from 1 to %d", BARRIER_MAX_PARTIES);
	if (spec->parties > 1 && !spec->barrier_path)
		return usage_error(cli, "--parties %llu needs --barrier FILE, shared by the hogs",
				   (unsigned long long)spec->parties);
	if (spec->barrier_path && spec->barrier_timeout_ns == 0)
		return usage_error(cli, "--barrier-timeout must be more than 0");
	return 0;
}

int run_command(int argc, char **argv)
{
	struct run_spec spec = { 0 };
	struct opt opts[] = {
		hog_opt_size(&spec.c, "bytes to allocate and write each round"),
		hog_opt_rounds(&spec.c),
		{ .name = "hold", .kind = OPT_DURATION, .dest = &spec.hold_ns, .default_text = "0s",
		  .help = "how long to keep the memory after writing it, each round" },
		{ .name = "barrier", .kind = OPT_STRING, .dest = &spec.barrier_path, .metavar = "FILE",
		  .help = "a new or empty file shared by the --parties hogs of one run: each round's"
			  " memory is held until all of them have written theirs" },
		{ .name = "parties", .kind = OPT_UINT, .dest = &spec.parties, .default_text = "1",
		  .help = "how many hogs share the --barrier" },
		{ .name = "barrier-timeout", .kind = OPT_DURATION, .dest = &spec.barrier_timeout_ns,
		  .default_text = "300s",
		  .help = "give up waiting at the barrier after this for a hog that never came;"
			  " later rounds do not wait, and the report names the round"
			  " (barrier_broken_round)" },
		hog_opt_fill(&spec.c),
		opt_seed(&spec.c.seed),
		hog_opt_touch(&spec.c),
		HOG_REPORT_ROWS(&spec.c),
		{ .name = NULL },
	};
	struct cli cli = { .prog = "hog", .command = "hog run", .description = description,
			   .opts = opts };
	struct round *rounds;
	int status;

	if (!hog_start(&cli, argc, argv, check_options, &spec, &spec.c,
		       HOG_NEEDS_FILL | HOG_NEEDS_MEMORY | HOG_HAS_OUTPUT | HOG_HAS_ROUNDS, &status))
		return status;
	if (spec.barrier_path && barrier_open(&spec.barrier, spec.barrier_path, spec.parties,
						spec.barrier_timeout_ns))
		return 1;
	rounds = calloc(spec.c.rounds, sizeof(*rounds));
	if (!rounds)
		return runtime_error("out of memory");
	for (uint64_t i = 0; i < spec.c.rounds && !status; i++)
		status = run_round(&spec, i, &rounds[i]);
	if (!status) {
		if (spec.c.output_format == OUTPUT_JSON)
			report_json(&spec, rounds);
		else
			report_normal(&spec, rounds);
		if (fflush(stdout) || ferror(stdout))
			status = runtime_error("writing the report: %s", strerror(errno));
		else
			output_complete();
	}
	free(rounds);
	barrier_close(&spec.barrier);
	return status;
}
