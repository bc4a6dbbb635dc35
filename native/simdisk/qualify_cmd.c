/*
 * qualify_cmd.c - `simdisk qualify`: ReadyBoost's device test on an emulated
 * device.
 *
 * For: saying whether a flash profile would have been accepted by Windows
 * Vista as a ReadyBoost device: 4 KB random reads at >= 2.5 MB/s and 512 KB
 * random writes at >= 1.75 MB/s; "Enhanced for ReadyBoost" at 5 and 3 MB/s
 * (research NOTES section 9; seed 000's stick passed). The requests are
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
	"for \"Enhanced for ReadyBoost\".\n"
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

int qualify_command(int argc, char **argv)
{
	const char *profile_name = NULL, *profile_dir = NULL, *overrides = NULL;
	uint64_t span = 0, count = 0, seed = 0;
	bool as_json = false;
	struct opt table[] = {
		{ .name = "profile", .kind = OPT_STRING, .dest = &profile_name, .metavar = "P",
		  .help = "device profile: a name in --profile-dir or a path", .required = true },
		{ .name = "span", .kind = OPT_SIZE, .dest = &span, .default_text = "1G",
		  .help = "bytes the requests fall in (at most the capacity)" },
		{ .name = "count", .kind = OPT_UINT, .dest = &count, .default_text = "2000",
		  .help = "requests per test" },
		{ .name = "seed", .kind = OPT_UINT, .dest = &seed, .default_text = "1",
		  .help = "seed of the random offsets" },
		{ .name = "json", .kind = OPT_FLAG, .dest = &as_json, .help = "print JSON" },
		{ .name = "profile-dir", .kind = OPT_STRING, .dest = &profile_dir, .metavar = "DIR",
		  .help = "where profile names are looked up (default: config/devices)" },
		{ .name = "set", .kind = OPT_STRING, .dest = &overrides, .metavar = "K=V,...",
		  .help = "override profile keys" },
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk qualify", .command = "simdisk qualify",
			   .description = description, .opts = table };
	static char buf[524288];
	char dir[4096], err[2048];
	struct device_env env = { 0 };
	double rate[NTESTS];
	bool pass = true, enhanced = true;
	int status = opts_parse_status(&cli, argc, argv);

	if (status != OPTS_GO_ON)
		return status;
	if (!profile_dir) {
		profile_default_dir(dir, sizeof(dir));
		profile_dir = dir;
	}
	struct profile *p = profile_load(profile_name, profile_dir, overrides, err, sizeof(err));

	if (!p)
		return usage_error(&cli, "%s", err);
	status = 0;
	uint64_t capacity = p->model->capacity(p);

	if (!opts_find(&cli, "span")->given)
		span = 1ull << 30;
	if (!opts_find(&cli, "count")->given)
		count = 2000;
	if (!opts_find(&cli, "seed")->given)
		seed = 1;
	if (span > capacity)
		span = capacity;
	if (span < tests[NTESTS - 1].bs || count == 0) {
		profile_free(p);
		return usage_error(&cli, "--span must hold a 512 KB request and --count be positive");
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
	if (as_json) {
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
			json_object_end(&j);
		}
		json_key(&j, "readyboost");
		json_bool(&j, pass);
		json_key(&j, "enhanced");
		json_bool(&j, enhanced);
		json_object_end(&j);
		if (json_finish(&j))
			status = 1;
	} else {
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
	profile_free(p);
	return status ? status : pass ? 0 : 1;
}
