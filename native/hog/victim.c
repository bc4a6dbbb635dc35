/*
 * victim.c - "hog victim": a working set that something else pushes out, and
 * the cost of bringing it back.
 *
 * Builds --size bytes of anonymous memory with --fill, announces it in the
 * --ready file, waits for go (a --go file appearing, or SIGUSR1), optionally
 * trims it itself (--trim pageout: madvise(MADV_PAGEOUT), Linux's analogue
 * of EmptyWorkingSet), then re-touches every page (one word read per page, in
 * order or in a seeded random order), timing each touch, and with --verify
 * compares every byte against what was written. --order has no default here:
 * the harness passes it from the schema (retouch_order, pagein's
 * retouch_orders), which holds its value and reason, so the tool refuses a
 * command line without it.
 *
 * For: seed 004's experiment (trim, re-touch, count hard faults) and the
 * victim side of seed 000's hog experiments. Not for: creating the pressure
 * itself ("hog run" does that) or changing system settings (swap, zswap).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"
#include "hist.h"
#include "hog.h"
#include "rng.h"
#include "timing.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21   /* Linux 5.4 */
#endif

#define GO_POLL_NS NS_PER_MS
#define ORDER_SEED_SALT 0x6f72646572ULL   /* "order" */

enum trim_mode { TRIM_NONE, TRIM_PAGEOUT };
enum order { ORDER_SEQ, ORDER_RANDOM };
static const char *const trim_names[] = { "none", "pageout", NULL };
static const char *const order_names[] = { "seq", "random", NULL };

static const char description[] =
	"1. build: mmap --size bytes (transparent huge pages off) and write every page\n"
	"   with --fill;\n"
	"2. ready: write {pid, address, size, page_size, pages, fill, seed} as JSON to\n"
	"   the --ready file (atomically: a temporary file renamed into place; a stale\n"
	"   one is removed at start);\n"
	"3. wait: until the --go file exists (polled every 1 ms) or SIGUSR1 arrives\n"
	"   (--go-signal; send it only once the ready file exists, as SIGUSR1 kills\n"
	"   the process until then); with neither, go at once;\n"
	"4. trim: --trim pageout asks the kernel to reclaim the whole buffer\n"
	"   (MADV_PAGEOUT); without swap, anonymous pages stay resident;\n"
	"5. re-touch: read one word of every page, in --order, timing each read;\n"
	"   report the total, a latency histogram and the minor and major faults;\n"
	"6. --verify: compare every byte of every page with its --fill. A mismatch\n"
	"   names the first bad page and the number of bad pages, and exits 1.\n"
	"Resident pages are as mincore(2) reports them (pages in the swap cache count).\n"
	"Exit status: 0 done, 1 runtime failure or verify mismatch, 2 usage error or\n"
	"refused size.";

struct victim_spec {
	struct hog_common c;
	const char *ready;
	const char *go;
	bool go_signal;
	uint64_t timeout_ns;
	int trim;
	int order;
	bool verify;
};

struct verify_result {
	uint64_t bad_pages;
	uint64_t first_bad_page;
	size_t first_bad_byte;
	bool first_bad_claims;       /* its header names another page of this fill */
	uint64_t first_bad_claimed;
};

struct victim_result {
	unsigned char *buf;
	uint64_t build_ns;
	struct faults build_faults;
	uint64_t build_prefaulted;
	int64_t resident_after_build;
	uint64_t wait_ns;
	uint64_t trim_ns;
	int64_t resident_after_trim;
	uint64_t retouch_ns;
	struct faults retouch_faults;
	struct hist latency;
	uint64_t sink;               /* the words read, so the reads cannot be dropped */
	struct verify_result verify;
};

static int write_ready_file(const struct victim_spec *spec, const struct victim_result *res)
{
	char tmp[4096], fill[64], address[32];
	struct json j;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", spec->ready, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return runtime_error("--ready %s: cannot create %s: %s", spec->ready, tmp,
				     strerror(errno));
	fill_describe(&spec->c.fill, fill, sizeof(fill));
	snprintf(address, sizeof(address), "0x%llx", (unsigned long long)(uintptr_t)res->buf);
	json_init(&j, f, false);
	json_object_begin(&j);
	json_kv_int(&j, "pid", (int64_t)getpid());
	json_kv_uint(&j, "address", (uint64_t)(uintptr_t)res->buf);
	json_kv_string(&j, "address_hex", address);
	json_kv_uint(&j, "size", spec->c.size);
	json_kv_uint(&j, "page_size", spec->c.page_size);
	json_kv_uint(&j, "pages", spec->c.pages);
	json_kv_string(&j, "fill", fill);
	json_kv_uint(&j, "seed", spec->c.seed);
	json_object_end(&j);
	if (json_finish(&j) | fclose(f)) {
		unlink(tmp);
		return runtime_error("--ready %s: writing %s failed", spec->ready, tmp);
	}
	if (rename(tmp, spec->ready)) {
		int err = errno;

		unlink(tmp);
		return runtime_error("--ready %s: %s", spec->ready, strerror(err));
	}
	return 0;
}

static bool timed_out(const struct victim_spec *spec, uint64_t start)
{
	return spec->timeout_ns && monotonic_ns() - start >= spec->timeout_ns;
}

static int wait_for_go_file(const struct victim_spec *spec)
{
	uint64_t start = monotonic_ns();

	while (access(spec->go, F_OK) != 0) {
		if (errno != ENOENT)
			return runtime_error("--go %s: %s", spec->go, strerror(errno));
		if (timed_out(spec, start))
			return runtime_error("--go %s did not appear within the --timeout", spec->go);
		sleep_ns(GO_POLL_NS);
	}
	return 0;
}

static int wait_for_go_signal(const struct victim_spec *spec, const sigset_t *usr1)
{
	uint64_t start = monotonic_ns();

	for (;;) {
		int got;

		if (spec->timeout_ns) {
			uint64_t waited = monotonic_ns() - start;
			uint64_t left = waited < spec->timeout_ns ? spec->timeout_ns - waited : 0;
			struct timespec ts = { .tv_sec = (time_t)(left / NS_PER_SEC),
					       .tv_nsec = (long)(left % NS_PER_SEC) };

			got = sigtimedwait(usr1, NULL, &ts);
		} else {
			got = sigwaitinfo(usr1, NULL);
		}
		if (got == SIGUSR1)
			return 0;
		if (errno == EAGAIN)
			return runtime_error("no SIGUSR1 within the --timeout");
		if (errno != EINTR)
			return runtime_error("waiting for SIGUSR1: %s", strerror(errno));
	}
}

/* Page indices in the re-touch order, or NULL for sequential (or on ENOMEM). */
static uint32_t *random_order(const struct victim_spec *spec)
{
	uint32_t *order = malloc(spec->c.pages * sizeof(*order));
	struct rng rng;

	if (!order)
		return NULL;
	for (uint64_t i = 0; i < spec->c.pages; i++)
		order[i] = (uint32_t)i;
	rng_seed(&rng, spec->c.seed ^ ORDER_SEED_SALT);
	for (uint64_t i = spec->c.pages - 1; i > 0; i--) {   /* Fisher-Yates */
		uint64_t j = rng_below(&rng, i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

static void retouch(const struct victim_spec *spec, const uint32_t *order,
		    struct victim_result *res)
{
	size_t page_size = spec->c.page_size;
	struct faults before = faults_now();
	uint64_t start = monotonic_ns();
	uint64_t sink = 0;

	for (uint64_t k = 0; k < spec->c.pages; k++) {
		uint64_t i = order ? order[k] : k;
		const volatile uint64_t *word = (const volatile uint64_t *)(res->buf + i * page_size);
		uint64_t t0 = monotonic_ns();

		sink += *word;
		hist_record(&res->latency, monotonic_ns() - t0);
	}
	res->retouch_ns = monotonic_ns() - start;
	res->retouch_faults = faults_since(before);
	res->sink = sink;
}

static int verify(const struct victim_spec *spec, struct victim_result *res)
{
	const struct fill *f = &spec->c.fill;
	struct verify_result *v = &res->verify;
	unsigned char *scratch = malloc(f->page_size);

	if (!scratch)
		return runtime_error("out of memory");
	for (uint64_t i = 0; i < spec->c.pages; i++) {
		const unsigned char *page = res->buf + i * f->page_size;
		size_t bad_byte;

		if (fill_page_matches(f, i, page, scratch, &bad_byte))
			continue;
		if (v->bad_pages++ == 0) {
			uint64_t claimed;

			v->first_bad_page = i;
			v->first_bad_byte = bad_byte;
			if (fill_page_claims(f, page, &claimed) && claimed != i &&
			    claimed < spec->c.pages &&
			    fill_page_matches(f, claimed, page, scratch, NULL)) {
				v->first_bad_claims = true;
				v->first_bad_claimed = claimed;
			}
		}
	}
	free(scratch);
	return 0;
}

static void json_latency(struct json *j, const struct hist *h)
{
	json_kv_object_begin(j, "latency_ns");
	json_kv_uint(j, "count", h->count);
	json_kv_uint(j, "min", hist_min(h));
	json_kv_double(j, "mean", hist_mean(h));
	json_kv_double(j, "stddev", hist_stddev(h));
	json_kv_uint(j, "p50", hist_percentile(h, 50));
	json_kv_uint(j, "p90", hist_percentile(h, 90));
	json_kv_uint(j, "p99", hist_percentile(h, 99));
	json_kv_uint(j, "p99_9", hist_percentile(h, 99.9));
	json_kv_uint(j, "max", h->max);
	json_object_end(j);
}

static const char *go_name(const struct victim_spec *spec)
{
	return spec->go ? "file" : spec->go_signal ? "signal" : "none";
}

static void report_json(const struct victim_spec *spec, const struct victim_result *res)
{
	const struct verify_result *v = &res->verify;
	struct json j;

	hog_json_begin(&j, stdout, "victim");
	json_kv_object_begin(&j, "options");
	hog_json_common(&j, &spec->c, true);
	json_kv_string(&j, "trim", trim_names[spec->trim]);
	json_kv_string(&j, "order", order_names[spec->order]);
	json_kv_string(&j, "go", go_name(spec));
	json_kv_uint(&j, "timeout_ns", spec->timeout_ns);
	json_key(&j, "verify");
	json_bool(&j, spec->verify);
	json_object_end(&j);

	json_kv_uint(&j, "address", (uint64_t)(uintptr_t)res->buf);
	json_kv_object_begin(&j, "build");
	json_kv_uint(&j, "ns", res->build_ns);
	json_kv_uint(&j, "minflt", res->build_faults.minor);
	json_kv_uint(&j, "majflt", res->build_faults.major);
	json_kv_uint(&j, "prefaulted_pages", res->build_prefaulted);
	json_kv_int(&j, "resident_pages", res->resident_after_build);
	json_object_end(&j);

	json_kv_object_begin(&j, "wait");
	json_kv_string(&j, "go", go_name(spec));
	json_kv_uint(&j, "ns", res->wait_ns);
	json_object_end(&j);

	json_kv_object_begin(&j, "trim");
	json_kv_string(&j, "mode", trim_names[spec->trim]);
	json_kv_uint(&j, "ns", res->trim_ns);
	json_kv_int(&j, "resident_pages_after", res->resident_after_trim);
	json_object_end(&j);

	json_kv_object_begin(&j, "retouch");
	json_kv_string(&j, "order", order_names[spec->order]);
	json_kv_uint(&j, "pages", spec->c.pages);
	json_kv_uint(&j, "ns", res->retouch_ns);
	json_kv_uint(&j, "minflt", res->retouch_faults.minor);
	json_kv_uint(&j, "majflt", res->retouch_faults.major);
	json_latency(&j, &res->latency);
	json_object_end(&j);

	if (spec->verify) {
		json_kv_object_begin(&j, "verify");
		json_key(&j, "ok");
		json_bool(&j, v->bad_pages == 0);
		json_kv_uint(&j, "checked_pages", spec->c.pages);
		json_kv_uint(&j, "bad_pages", v->bad_pages);
		json_key(&j, "first_bad_page");
		if (v->bad_pages)
			json_uint(&j, v->first_bad_page);
		else
			json_null(&j);
		json_key(&j, "first_bad_byte");
		if (v->bad_pages)
			json_uint(&j, v->first_bad_byte);
		else
			json_null(&j);
		json_key(&j, "first_bad_holds_page");
		if (v->first_bad_claims)
			json_uint(&j, v->first_bad_claimed);
		else
			json_null(&j);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_finish(&j);
}

static void report_normal(const struct victim_spec *spec, const struct victim_result *res)
{
	const struct hist *h = &res->latency;
	char size[32], page[32], fill[64];

	format_size(spec->c.size, size, sizeof(size));
	format_size(spec->c.page_size, page, sizeof(page));
	fill_describe(&spec->c.fill, fill, sizeof(fill));
	printf("hog victim: %s (%llu pages of %s), fill %s, seed %llu, pid %d, thp %s\n", size,
	       (unsigned long long)spec->c.pages, page, fill, (unsigned long long)spec->c.seed,
	       (int)getpid(), thp_mode());
	printf("  build:    %.3f ms, %llu minor / %llu major faults, %lld pages resident\n",
	       (double)res->build_ns / 1e6, (unsigned long long)res->build_faults.minor,
	       (unsigned long long)res->build_faults.major, (long long)res->resident_after_build);
	printf("  wait:     %.3f ms for go (%s)\n", (double)res->wait_ns / 1e6, go_name(spec));
	if (spec->trim == TRIM_NONE)
		printf("  trim:     none\n");
	else
		printf("  trim:     %s in %.3f ms, %lld pages resident after\n",
		       trim_names[spec->trim], (double)res->trim_ns / 1e6,
		       (long long)res->resident_after_trim);
	printf("  re-touch: %s, %llu pages in %.3f ms, %llu minor / %llu major faults\n",
	       order_names[spec->order], (unsigned long long)spec->c.pages,
	       (double)res->retouch_ns / 1e6, (unsigned long long)res->retouch_faults.minor,
	       (unsigned long long)res->retouch_faults.major);
	printf("  latency (us): mean %.3f, p50 %.3f, p99 %.3f, max %.3f\n", hist_mean(h) / 1e3,
	       (double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 99) / 1e3,
	       (double)h->max / 1e3);
	if (!spec->verify)
		return;
	if (res->verify.bad_pages == 0)
		printf("  verify:   all %llu pages OK\n", (unsigned long long)spec->c.pages);
	else
		printf("  verify:   %llu of %llu pages BAD, first bad page %llu (byte %zu)\n",
		       (unsigned long long)res->verify.bad_pages, (unsigned long long)spec->c.pages,
		       (unsigned long long)res->verify.first_bad_page, res->verify.first_bad_byte);
}

static int check_options(struct cli *cli, void *arg)
{
	const struct victim_spec *spec = arg;

	if (spec->go && spec->go_signal)
		return usage_error(cli, "--go and --go-signal exclude each other");
	if (opts_find(cli, "timeout")->given && !spec->go && !spec->go_signal)
		return usage_error(cli, "--timeout needs --go or --go-signal");
	if (spec->ready && !*spec->ready)
		return usage_error(cli, "--ready needs a file name");
	if (spec->go && !*spec->go)
		return usage_error(cli, "--go needs a file name");
	return 0;
}

/* Steps 1-6 of the description; the report is printed by the caller. */
static int run_victim(const struct victim_spec *spec, struct victim_result *res)
{
	const uint64_t size = spec->c.size;
	sigset_t usr1;
	uint32_t *order = NULL;
	int status;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (spec->go_signal && sigprocmask(SIG_BLOCK, &usr1, NULL))
		return runtime_error("blocking SIGUSR1: %s", strerror(errno));
	if (spec->ready && unlink(spec->ready) && errno != ENOENT)
		return runtime_error("--ready %s: cannot remove the old one: %s", spec->ready,
				     strerror(errno));
	if (spec->order == ORDER_RANDOM) {
		if (spec->c.pages > UINT32_MAX)
			return runtime_error("--order random supports up to 2^32 pages");
		order = random_order(spec);
		if (!order)
			return runtime_error("out of memory for the page order");
	}

	struct faults before = faults_now();
	uint64_t t0 = monotonic_ns();

	res->buf = hog_map(size);
	if (!res->buf) {
		free(order);
		return runtime_error("cannot map %llu bytes: %s", (unsigned long long)size,
				     strerror(errno));
	}
	status = hog_touch_pages(&spec->c, res->buf, &res->build_prefaulted);
	if (status) {
		free(order);
		return runtime_error("madvise(MADV_POPULATE_WRITE): %s", strerror(status));
	}
	res->build_ns = monotonic_ns() - t0;
	res->build_faults = faults_since(before);
	res->resident_after_build = hog_resident_pages(res->buf, size, spec->c.page_size);
	res->resident_after_trim = res->resident_after_build;

	status = spec->ready ? write_ready_file(spec, res) : 0;
	if (status)
		goto out;
	t0 = monotonic_ns();
	if (spec->go)
		status = wait_for_go_file(spec);
	else if (spec->go_signal)
		status = wait_for_go_signal(spec, &usr1);
	res->wait_ns = monotonic_ns() - t0;
	if (status)
		goto out;

	if (spec->trim == TRIM_PAGEOUT) {
		t0 = monotonic_ns();
		if (madvise(res->buf, size, MADV_PAGEOUT)) {
			status = runtime_error("madvise(MADV_PAGEOUT): %s%s", strerror(errno),
					       errno == EINVAL ? " (needs Linux 5.4 or later)" : "");
			goto out;
		}
		res->trim_ns = monotonic_ns() - t0;
		res->resident_after_trim = hog_resident_pages(res->buf, size, spec->c.page_size);
	}

	retouch(spec, order, res);
	if (spec->verify)
		status = verify(spec, res);
out:
	free(order);
	return status;
}

int victim_command(int argc, char **argv)
{
	struct victim_spec spec = { 0 };
	struct opt opts[] = {
		hog_opt_size(&spec.c, "bytes in the working set"),
		hog_opt_fill(&spec.c),
		opt_seed(&spec.c.seed),
		hog_opt_touch(&spec.c),
		{ .name = "ready", .kind = OPT_STRING, .dest = &spec.ready, .metavar = "FILE",
		  .help = "announce the built working set in FILE (JSON)" },
		{ .name = "go", .kind = OPT_STRING, .dest = &spec.go, .metavar = "FILE",
		  .help = "wait until FILE exists before trimming and re-touching" },
		{ .name = "go-signal", .kind = OPT_FLAG, .dest = &spec.go_signal,
		  .help = "wait for SIGUSR1 instead" },
		{ .name = "timeout", .kind = OPT_DURATION, .dest = &spec.timeout_ns,
		  .default_text = "0s", .help = "give up waiting for go after TIME (0: never)" },
		{ .name = "trim", .kind = OPT_ENUM, .dest = &spec.trim, .choices = trim_names,
		  .default_text = "none", .help = "what the victim does to itself after go" },
		{ .name = "order", .kind = OPT_ENUM, .dest = &spec.order, .choices = order_names,
		  .required = true, .help = "re-touch order (random: a permutation from --seed)" },
		{ .name = "verify", .kind = OPT_FLAG, .dest = &spec.verify,
		  .help = "check every byte after the re-touch; a mismatch exits 1" },
		HOG_REPORT_ROWS(&spec.c),
		{ .name = NULL },
	};
	struct cli cli = { .prog = "hog", .command = "hog victim", .description = description,
			   .opts = opts };
	struct victim_result *res;
	int status;

	if (!hog_start(&cli, argc, argv, check_options, &spec, &spec.c,
		       HOG_NEEDS_FILL | HOG_NEEDS_MEMORY | HOG_HAS_OUTPUT, &status))
		return status;

	res = calloc(1, sizeof(*res));
	if (!res)
		return runtime_error("out of memory");
	hist_init(&res->latency);
	status = run_victim(&spec, res);
	if (!status) {
		if (spec.c.output_format == OUTPUT_JSON)
			report_json(&spec, res);
		else
			report_normal(&spec, res);
		if (fflush(stdout) || ferror(stdout))
			status = runtime_error("writing the report: %s", strerror(errno));
		else
			output_complete();
	}
	if (!status && res->verify.bad_pages) {
		const struct verify_result *v = &res->verify;
		char holds[64] = "";

		if (v->first_bad_claims)
			snprintf(holds, sizeof(holds), "; it holds page %llu",
				 (unsigned long long)v->first_bad_claimed);
		status = runtime_error("verify failed: %llu of %llu pages differ from what was"
				       " written; first bad page %llu, from byte %zu%s",
				       (unsigned long long)v->bad_pages,
				       (unsigned long long)spec.c.pages,
				       (unsigned long long)v->first_bad_page, v->first_bad_byte,
				       holds);
	}
	if (res->buf)
		munmap(res->buf, spec.c.size);
	free(res);
	return status;
}
