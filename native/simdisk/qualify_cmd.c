/*
 * qualify_cmd.c - `simdisk qualify`: ReadyBoost's device test on an emulated
 * device.
 *
 * For: saying whether a flash profile would have been accepted by Windows
 * Vista as a ReadyBoost device: 4 KB random reads at >= 2.5 MB/s and 512 KB
 * random writes at >= 1.75 MB/s; "Enhanced for ReadyBoost" at 5 and 3 MB/s
 * (Microsoft's published requirements; seed 000's stick passed). The requests are
 * served one after another by the device model on a simulated clock: what is
 * measured is the model's own behaviour (latencies, erase-block merges), the
 * same code that times a mounted device, without FUSE or this machine's disk.
 * Not for: timing the mounted emulator (fio or iobench on the mount do that).
 */
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "device.h"
#include "json.h"
#include "opts.h"
#include "profile.h"
#include "rng.h"

#define MB 1e6

struct test {
	const char *name;         /* JSON key */
	const char *label;
	enum io_op op;
	uint64_t bs;
	double need, enhanced;    /* MB/s */
};

static const struct test tests[] = {
	{ "random_read_4k", "4 KB random read", IO_READ, 4096, 2.5, 5.0 },
	{ "random_write_512k", "512 KB random write", IO_WRITE, 524288, 1.75, 3.0 },
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static const char description[] =
	"Runs ReadyBoost's device test on the device of --profile: --count requests of 4 KB\n"
	"random reads and of 512 KB random writes, aligned, uniformly placed in the first --span\n"
	"bytes, one at a time on the model's simulated clock. Prints each rate (MB = 10^6\n"
	"bytes) against Windows Vista's thresholds: 2.5 and 1.75 MB/s to qualify, 5 and 3 MB/s\n"
	"for \"Enhanced for ReadyBoost\" (Microsoft's logo requirement).\n"
	"Exit status: 0 the device qualifies, 1 it does not, 2 usage error (including a bad\n"
	"profile).";

/* Serves count requests of one test; returns MB/s. */
static double measure(const struct device_model *m, struct device *dev, const struct test *t,
		      uint64_t span, uint64_t count, uint64_t seed, const char *buf)
{
	struct rng rng;
	uint64_t now = 1000000000ull, begin = now, slots = span / t->bs;

	rng_seed(&rng, seed);
	for (uint64_t i = 0; i < count; i++) {
		struct io_request r = { .op = t->op, .offset = rng_below(&rng, slots) * t->bs,
					.length = t->bs, .data = t->op == IO_WRITE ? buf : NULL };
		struct io_cost c = { 0 };

		m->service(dev, &r, now, &c);
		now += c.total_ns;
	}
	return now > begin ? (double)(count * t->bs) * 1e9 / (double)(now - begin) / MB : 0;
}

static void print_json(const struct profile *p, uint64_t span, uint64_t count, const double *rate,
		       bool pass, bool enhanced)
{
	struct json j;

	json_init(&j, stdout, true);
	json_object_begin(&j);
	json_kv_string(&j, "profile", p->name);
	json_kv_string(&j, "model", p->model->name);
	json_kv_uint(&j, "span", span);
	json_kv_uint(&j, "count", count);
	for (size_t i = 0; i < NTESTS; i++) {
		json_kv_object_begin(&j, tests[i].name);
		json_kv_double(&j, "mb_s", rate[i]);
		json_kv_double(&j, "required_mb_s", tests[i].need);
		json_kv_double(&j, "enhanced_mb_s", tests[i].enhanced);
		json_key(&j, "pass");
		json_bool(&j, rate[i] >= tests[i].need);
		json_key(&j, "enhanced");
		json_bool(&j, rate[i] >= tests[i].enhanced);
		json_object_end(&j);
	}
	json_key(&j, "readyboost");
	json_bool(&j, pass);
	json_key(&j, "enhanced");
	json_bool(&j, enhanced);
	json_object_end(&j);
	json_finish(&j);
}

static void print_normal(const struct profile *p, uint64_t span, uint64_t count, const double *rate,
			 bool pass, bool enhanced)
{
	printf("simdisk qualify: %s (%s), %llu requests per test in the first %llu bytes\n",
	       p->name, p->model->name, (unsigned long long)count, (unsigned long long)span);
	for (size_t i = 0; i < NTESTS; i++)
		printf("  %-20s %7.2f MB/s   needs %.2f, enhanced %.2f   %s\n", tests[i].label,
		       rate[i], tests[i].need, tests[i].enhanced,
		       rate[i] >= tests[i].need ? "pass" : "FAIL");
	printf("  verdict: %s\n", !pass ? "does not qualify for ReadyBoost" :
	       enhanced ? "qualifies, Enhanced for ReadyBoost" :
	       "qualifies for ReadyBoost (not enhanced)");
}

int qualify_command(int argc, char **argv)
{
	struct profile_opts po = { 0 };
	const char *output = NULL;
	uint64_t span = 0, count = 0, seed = 0;
	int format = OUTPUT_NORMAL;
	struct opt table[] = {
		PROFILE_OPTION_ROWS(&po),
		{ .name = "span", .kind = OPT_SIZE, .dest = &span, .default_text = "1G",
		  .help = "bytes the requests fall in (at most the capacity)" },
		{ .name = "count", .kind = OPT_UINT, .dest = &count, .default_text = "2000",
		  .help = "requests per test" },
		opt_seed(&seed),
		opt_output_format(&format),
		opt_output(&output),
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk qualify", .command = "simdisk qualify",
			   .description = description, .opts = table };
	static char buf[524288];
	char err[2048];
	struct device_env env = { 0 };
	double rate[NTESTS];
	bool pass = true, enhanced = true;
	struct profile *p;
	int status = profile_command_start(&cli, argc, argv, &po, &p);

	if (status != OPTS_GO_ON)
		return status;
	uint64_t capacity = p->model->capacity(p);

	if (span > capacity)
		span = capacity;
	if (span < tests[NTESTS - 1].bs || count == 0)
		status = usage_error(&cli, "--span must hold a 512 KB request and --count be positive");
	else
		status = output_begin(&cli, output);
	if (status) {
		profile_free(p);
		return status;
	}
	for (size_t i = 0; i < NTESTS; i++) {
		struct device *dev = p->model->create(p, &env, err, sizeof(err));

		if (!dev) {
			profile_free(p);
			fprintf(stderr, "simdisk qualify: %s\n", err);
			return 1;
		}
		rate[i] = measure(p->model, dev, &tests[i], span, count, seed + i, buf);
		p->model->destroy(dev);
		pass = pass && rate[i] >= tests[i].need;
		enhanced = enhanced && rate[i] >= tests[i].enhanced;
	}
	if (format == OUTPUT_JSON)
		print_json(p, span, count, rate, pass, enhanced);
	else
		print_normal(p, span, count, rate, pass, enhanced);
	profile_free(p);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	output_complete();
	return pass ? 0 : 1;
}
