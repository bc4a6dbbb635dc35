/*
 * populate.c - "hog populate": the kernel fills a mapping by itself, with no
 * user-space page faults: mmap(MAP_POPULATE), or MADV_POPULATE_WRITE on a
 * mapping with transparent huge pages off (the same 4 KiB pages hog run gets).
 *
 * For: the peer of "hog run --fill zero": the floor of what writing every
 * page of fresh anonymous memory can cost (allocating and zeroing the pages,
 * without the fault entry and exit per page). Not for: page contents; the
 * pages stay zero.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "commands.h"
#include "hog.h"
#include "timing.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

enum method { METHOD_MAP, METHOD_WRITE };
static const char *const method_names[] = { "map", "write", NULL };

static const char description[] =
	"Each round maps --size bytes of private anonymous memory that the kernel\n"
	"populates before returning, then unmaps it, and reports the time of each.\n"
	"--method map is mmap(MAP_POPULATE) (transparent huge pages as the system\n"
	"decides, see \"thp\" in the report); --method write is mmap, MADV_NOHUGEPAGE,\n"
	"then madvise(MADV_POPULATE_WRITE), which gives 4 KiB pages like hog run.\n"
	"Exit status: 0 done, 1 runtime failure, 2 usage error or refused size.";

struct populate_spec {
	struct hog_common c;
	int method;
};

struct round {
	uint64_t populate_ns, free_ns;
	struct faults faults;
};

static void *populate(const struct populate_spec *spec)
{
	if (spec->method == METHOD_MAP) {
		void *buf = mmap(NULL, spec->c.size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

		return buf == MAP_FAILED ? NULL : buf;
	}

	void *buf = hog_map(spec->c.size);

	if (buf && madvise(buf, spec->c.size, MADV_POPULATE_WRITE)) {
		int err = errno;

		munmap(buf, spec->c.size);
		errno = err;
		return NULL;
	}
	return buf;
}

static int populate_round(const struct populate_spec *spec, struct round *r)
{
	struct faults before = faults_now();
	uint64_t t0 = monotonic_ns();
	void *buf = populate(spec);
	uint64_t t1 = monotonic_ns();

	if (!buf)
		return runtime_error("cannot populate %llu bytes with --method %s: %s",
				     (unsigned long long)spec->c.size, method_names[spec->method],
				     strerror(errno));
	if (munmap(buf, spec->c.size))
		return runtime_error("munmap: %s", strerror(errno));
	r->free_ns = monotonic_ns() - t1;
	r->populate_ns = t1 - t0;
	r->faults = faults_since(before);
	return 0;
}

static void report(const struct populate_spec *spec, const struct round *rounds)
{
	if (spec->c.output_format == OUTPUT_JSON) {
		struct json j;

		hog_json_begin(&j, stdout, "populate");
		json_kv_object_begin(&j, "options");
		hog_json_common(&j, &spec->c, false);
		json_kv_uint(&j, "rounds", spec->c.rounds);
		json_kv_string(&j, "method", method_names[spec->method]);
		json_object_end(&j);
		json_kv_array_begin(&j, "rounds");
		for (uint64_t i = 0; i < spec->c.rounds; i++) {
			json_object_begin(&j);
			json_kv_uint(&j, "round", i + 1);
			json_kv_uint(&j, "populate_ns", rounds[i].populate_ns);
			json_kv_uint(&j, "free_ns", rounds[i].free_ns);
			json_kv_uint(&j, "minflt", rounds[i].faults.minor);
			json_kv_uint(&j, "majflt", rounds[i].faults.major);
			json_kv_double(&j, "populate_gb_per_s",
				       gb_per_s(spec->c.size, rounds[i].populate_ns));
			json_object_end(&j);
		}
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
		return;
	}

	char size[32];

	format_size(spec->c.size, size, sizeof(size));
	printf("hog populate: %s, method %s, %llu round%s, thp %s\n", size,
	       method_names[spec->method], (unsigned long long)spec->c.rounds,
	       spec->c.rounds == 1 ? "" : "s", thp_mode());
	printf("%5s %12s %10s %10s %8s %13s\n", "round", "populate_ms", "free_ms", "minflt",
	       "majflt", "populate_GB/s");
	for (uint64_t i = 0; i < spec->c.rounds; i++)
		printf("%5llu %12.3f %10.3f %10llu %8llu %13.2f\n", (unsigned long long)(i + 1),
		       (double)rounds[i].populate_ns / 1e6, (double)rounds[i].free_ns / 1e6,
		       (unsigned long long)rounds[i].faults.minor,
		       (unsigned long long)rounds[i].faults.major,
		       gb_per_s(spec->c.size, rounds[i].populate_ns));
}

int populate_command(int argc, char **argv)
{
	struct populate_spec spec = { 0 };
	struct opt opts[] = {
		hog_opt_size(&spec.c, "bytes to map and populate each round"),
		hog_opt_rounds(&spec.c),
		{ .name = "method", .kind = OPT_ENUM, .dest = &spec.method, .choices = method_names,
		  .default_text = "map", .help = "how the kernel populates the mapping" },
		HOG_REPORT_ROWS(&spec.c),
		{ .name = NULL },
	};
	struct cli cli = { .prog = "hog", .command = "hog populate", .description = description,
			   .opts = opts };
	struct round *rounds;
	int status;

	if (!hog_start(&cli, argc, argv, NULL, NULL, &spec.c,
		       HOG_NEEDS_MEMORY | HOG_HAS_OUTPUT | HOG_HAS_ROUNDS, &status))
		return status;
	rounds = calloc(spec.c.rounds, sizeof(*rounds));
	if (!rounds)
		return runtime_error("out of memory");
	for (uint64_t i = 0; i < spec.c.rounds && !status; i++)
		status = populate_round(&spec, &rounds[i]);
	if (!status) {
		report(&spec, rounds);
		if (fflush(stdout) || ferror(stdout))
			status = runtime_error("writing the report: %s", strerror(errno));
		else
			output_complete();
	}
	free(rounds);
	return status;
}
