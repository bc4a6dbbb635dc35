/*
 * crystalmark_report.c - the CrystalMark replay's report: per test the MB/s of every set,
 * the best (CrystalMark's score) and the mean, and latency percentiles (crystalmark.c runs it).
 */
#include "crystalmark.h"
#include "json.h"
#include "opts.h"
#include "report.h"

static double set_mb_s(const struct set_result *sr)
{
	return report_rate(sr->bytes, sr->ns) / 1e6;
}

static double best_mb_s(const struct cm_run *run, size_t t)
{
	double best = 0;

	for (uint64_t s = 0; s < run->spec->sets; s++)
		if (set_mb_s(&run->tests[t].set[s]) > best)
			best = set_mb_s(&run->tests[t].set[s]);
	return best;
}

static double mean_mb_s(const struct cm_run *run, size_t t)
{
	double sum = 0;

	for (uint64_t s = 0; s < run->spec->sets; s++)
		sum += set_mb_s(&run->tests[t].set[s]);
	return sum / (double)run->spec->sets;
}

static void json_kv_bool(struct json *j, const char *key, bool value)
{
	json_key(j, key);
	json_bool(j, value);
}

static const char *file_state(const struct cm_run *run)
{
	return run->reused ? "reused" : "new";
}

static const char reuse_note[] =
	"the file was reused, not refilled: caches below the file system may inflate its scores";

void report_json(const struct cm_run *run, FILE *out)
{
	const struct cm_spec *spec = run->spec;
	char text[32];
	struct json j;

	json_init(&j, out, true);
	json_object_begin(&j);
	report_json_stamp(&j);
	json_kv_object_begin(&j, "options");
	json_kv_string(&j, "file", spec->file);
	json_kv_uint(&j, "size", spec->size);
	json_kv_uint(&j, "sets", spec->sets);
	opts_format_duration(spec->runtime_ns, text, sizeof(text));
	json_kv_string(&j, "runtime", spec->runtime_ns ? text : "0");
	json_kv_bool(&j, "direct", !spec->buffered);
	json_kv_bool(&j, "keep_file", spec->keep_file);
	json_kv_uint(&j, "seed", spec->seed);
	json_object_end(&j);

	json_kv_object_begin(&j, "file");
	json_kv_string(&j, "state", file_state(run));
	json_kv_bool(&j, "removed", !spec->keep_file);
	if (run->reused)
		json_kv_string(&j, "note", reuse_note);
	json_object_end(&j);

	json_kv_object_begin(&j, "fill");
	json_kv_string(&j, "sync", "O_DSYNC");
	json_kv_uint(&j, "bs", FILL_BLOCK);
	json_kv_uint(&j, "ios", run->fill_ios);
	json_kv_uint(&j, "bytes", run->fill_ios * FILL_BLOCK);
	json_kv_double(&j, "seconds", (double)run->fill_ns / 1e9);
	json_kv_double(&j, "mb_s", report_rate(run->fill_ios * FILL_BLOCK, run->fill_ns) / 1e6);
	json_object_end(&j);

	json_kv_array_begin(&j, "tests");
	for (size_t t = 0; t < NTESTS; t++) {
		const struct cm_test *test = &cm_tests[t];
		const struct test_result *res = &run->tests[t];

		if (!spec->run_test[t])
			continue;
		json_object_begin(&j);
		json_kv_string(&j, "name", test->key);
		json_kv_string(&j, "title", test->title);
		json_kv_string(&j, "op", dir_name(test->dir));
		json_kv_string(&j, "access", test->access == RANDOM ? "random" : "sequential");
		json_kv_uint(&j, "bs", test->bs);
		json_kv_double(&j, "best_mb_s", best_mb_s(run, t));
		json_kv_double(&j, "mean_mb_s", mean_mb_s(run, t));
		json_kv_array_begin(&j, "sets");
		for (uint64_t s = 0; s < spec->sets; s++) {
			const struct set_result *sr = &res->set[s];

			json_object_begin(&j);
			json_kv_uint(&j, "set", s + 1);
			json_kv_uint(&j, "ios", sr->ios);
			json_kv_uint(&j, "bytes", sr->bytes);
			json_kv_double(&j, "seconds", (double)sr->ns / 1e9);
			json_kv_double(&j, "mb_s", set_mb_s(sr));
			json_kv_double(&j, "iops", report_rate(sr->ios, sr->ns));
			json_object_end(&j);
		}
		json_array_end(&j);
		report_json_latency(&j, "clat_ns", &res->clat);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

void report_normal(const struct cm_run *run, FILE *out)
{
	const struct cm_spec *spec = run->spec;
	char size[32];

	opts_format_size(spec->size, size, sizeof(size));
	fprintf(out, "CrystalMark 2004R2 disk sequence: %s, %s, %llu sets, %s, seed %llu\n",
		spec->file, size, (unsigned long long)spec->sets,
		spec->buffered ? "buffered" : "O_DIRECT", (unsigned long long)spec->seed);
	if (run->reused)
		fprintf(out, "  note: %s\n", reuse_note);
	else
		fprintf(out, "  fill: %llu x 1M O_DSYNC writes at %.1f MB/s\n",
			(unsigned long long)run->fill_ios,
			report_rate(run->fill_ios * FILL_BLOCK, run->fill_ns) / 1e6);
	fprintf(out, "  %-18s %10s %10s %10s %10s  sets (MB/s)\n", "test", "best MB/s",
		"mean MB/s", "p50 us", "p99 us");
	for (size_t t = 0; t < NTESTS; t++) {
		const struct hist *h = &run->tests[t].clat;

		if (!spec->run_test[t])
			continue;
		fprintf(out, "  %-18s %10.2f %10.2f %10.1f %10.1f ", cm_tests[t].title,
			best_mb_s(run, t), mean_mb_s(run, t),
			(double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 99) / 1e3);
		for (uint64_t s = 0; s < spec->sets; s++)
			fprintf(out, " %.2f", set_mb_s(&run->tests[t].set[s]));
		fputc('\n', out);
	}
}
