/*
 * test_opts.c - option values (sizes, durations, integers), the
 * table-driven parser (defaults, errors, the generated help), --output
 * (a report whole or not at all) and opts_start (parse, check, output_begin).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opts.h"

static void test_sizes(void)
{
	static const struct { const char *text; uint64_t bytes; } good[] = {
		{ "0", 0 }, { "512", 512 }, { "4k", 4096 }, { "4K", 4096 }, { "64M", 64ULL << 20 },
		{ "2g", 2ULL << 30 }, { "1T", 1ULL << 40 }, { "16777215T", 16777215ULL << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = {
		"", "k", "-1", "+1", " 1", "1.5K", "4KB", "4 K", "1X", "0x10",
		"18446744073709551616", "16777216T",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t bytes = 1;

		CHECK(parse_size(good[i].text, &bytes) == 0 && bytes == good[i].bytes,
		      "size '%s' = %llu", good[i].text, (unsigned long long)good[i].bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t bytes = 7;

		CHECK(parse_size(bad[i], &bytes) == -1 && bytes == 7, "size '%s' rejected", bad[i]);
	}
}

static void test_durations(void)
{
	static const struct { const char *text; uint64_t ns; } good[] = {
		{ "3", 3000000000ULL }, { "3s", 3000000000ULL }, { "500ms", 500000000ULL },
		{ "250us", 250000ULL }, { "10ns", 10 }, { "0.5s", 500000000ULL },
		{ "1.5ms", 1500000ULL }, { "0", 0 }, { ".25", 250000000ULL },
		{ "1m", 60000000000ULL }, { "1.5m", 90000000000ULL }, { "2h", 7200000000000ULL },
	};
	static const char *const bad[] = {
		"", "s", "-1s", "5min", "5sec", "5 s", "nan", "inf", "1e30s", "ms5", "5M", "1d",
		"2s500ms",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t ns = 1;

		CHECK(parse_duration_ns(good[i].text, &ns) == 0 && ns == good[i].ns,
		      "duration '%s' = %llu ns", good[i].text, (unsigned long long)good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t ns = 7;

		CHECK(parse_duration_ns(bad[i], &ns) == -1 && ns == 7, "duration '%s' rejected", bad[i]);
	}
}

static void test_numbers_and_formatting(void)
{
	uint64_t u = 0;
	double d = 0;
	char text[32];

	CHECK(parse_uint("123", &u) == 0 && u == 123, "uint '123'");
	CHECK(parse_uint("-1", &u) && parse_uint("1x", &u) && parse_uint("", &u),
	      "uint '-1', '1x', '' rejected");
	CHECK(parse_double("2.5", &d) == 0 && d == 2.5, "double '2.5'");
	CHECK(parse_double("2.5x", &d) && parse_double("", &d) && parse_double("inf", &d),
	      "double '2.5x', '', 'inf' rejected");

	opts_format_size(65536, text, sizeof(text));
	CHECK(strcmp(text, "64K") == 0, "format size 65536 -> %s", text);
	opts_format_size(1000, text, sizeof(text));
	CHECK(strcmp(text, "1000") == 0, "format size 1000 -> %s", text);
	opts_format_duration(1500000, text, sizeof(text));
	CHECK(strcmp(text, "1500us") == 0, "format duration 1.5 ms -> %s", text);
	opts_format_duration(3000000000ULL, text, sizeof(text));
	CHECK(strcmp(text, "3s") == 0, "format duration 3 s -> %s", text);
}

/* A small table as a tool would declare it. */
struct settings {
	const char *file;
	uint64_t bs, count, runtime;
	int mode;
	bool fast;
};

static const char *const modes[] = { "slow", "quick", NULL };

static enum opts_result parse(struct settings *s, FILE *err, const char *args)
{
	static char buf[512];
	char *argv[32] = { "test" };
	int argc = 1;

	memset(s, 0, sizeof(*s));
	snprintf(buf, sizeof(buf), "%s", args);
	for (char *word = strtok(buf, " "); word && argc < 31; word = strtok(NULL, " "))
		argv[argc++] = word;

	struct opt opts[] = {
		{ .name = "file", .kind = OPT_STRING, .dest = &s->file, .required = true, .help = "input" },
		{ .name = "bs", .kind = OPT_SIZE, .dest = &s->bs, .default_text = "4K", .help = "block" },
		{ .name = "count", .kind = OPT_UINT, .dest = &s->count, .help = "how many" },
		{ .name = "runtime", .kind = OPT_DURATION, .dest = &s->runtime, .default_text = "2s", .help = "time" },
		{ .name = "mode", .kind = OPT_ENUM, .dest = &s->mode, .choices = modes, .help = "mode" },
		{ .name = "fast", .kind = OPT_FLAG, .dest = &s->fast, .help = "go fast" },
		{ .name = NULL },
	};

	struct cli cli = { .prog = "tool", .command = "tool run", .opts = opts, .err = err };

	return opts_parse(&cli, argc, argv);
}

/* True if the error stream holds text; empties it for the next check. */
static bool said(FILE *err, const char *text)
{
	char out[1024] = "";
	size_t n;

	fflush(err);
	rewind(err);
	n = fread(out, 1, sizeof(out) - 1, err);
	out[n] = '\0';
	rewind(err);
	if (ftruncate(fileno(err), 0)) {
		perror("ftruncate");
		exit(1);
	}
	return strstr(out, text) != NULL;
}

static void test_parser(void)
{
	FILE *err = tmpfile();
	struct settings s;

	if (!err)
		exit(1);
	CHECK(parse(&s, err, "--file a") == OPTS_OK && strcmp(s.file, "a") == 0 &&
	      s.bs == 4096 && s.runtime == 2000000000ULL && !s.fast && s.mode == 0,
	      "defaults applied, only --file given");
	CHECK(parse(&s, err, "--file=b --bs 1M --mode quick --fast --count 9") == OPTS_OK &&
	      strcmp(s.file, "b") == 0 && s.bs == 1 << 20 && s.mode == 1 && s.fast && s.count == 9,
	      "--opt=value, size suffix, enum index, flag, uint");
	CHECK(parse(&s, err, "--file a --nope 3") == OPTS_ERROR &&
	      said(err, "tool: unknown option '--nope'"), "unknown option is named");
	CHECK(parse(&s, err, "--file a --nope=3") == OPTS_ERROR &&
	      said(err, "unknown option '--nope'\n"), "unknown --opt=value is named without its value");
	CHECK(parse(&s, err, "--file a --coun 3") == OPTS_ERROR &&
	      said(err, "unknown option '--coun' (did you mean --count?)"), "abbreviations rejected");
	CHECK(parse(&s, err, "--file a --bs") == OPTS_ERROR && said(err, "--bs needs a value"),
	      "missing value");
	CHECK(parse(&s, err, "--file a --bs 4Q") == OPTS_ERROR &&
	      said(err, "--bs: bad value '4Q'"), "bad size names the option and the value");
	CHECK(parse(&s, err, "--file a --mode medium") == OPTS_ERROR &&
	      said(err, "--mode: 'medium' is not one of slow, quick"), "bad enum lists the choices");
	CHECK(parse(&s, err, "--file a --fast=1") == OPTS_ERROR && said(err, "--fast takes no value"),
	      "flag with a value");
	CHECK(parse(&s, err, "--bs 8K") == OPTS_ERROR && said(err, "missing --file"),
	      "missing required option");
	CHECK(parse(&s, err, "--file a extra") == OPTS_ERROR &&
	      said(err, "unexpected argument 'extra'"), "positional argument rejected");
	CHECK(parse(&s, err, "--file a --count 1") == OPTS_OK && !said(err, "tool"),
	      "parsing again after errors works and prints nothing");
	CHECK(parse(&s, err, "--nope") == OPTS_ERROR &&
	      said(err, "usage: tool run --file STR [--bs SIZE] [--count N] [--runtime TIME] "
		       "[--mode slow|quick] [--fast]\ntry 'tool run --help'"),
	      "errors end with the table-made usage line and a hint");
	fclose(err);
}

static void test_help(void)
{
	struct settings s;
	struct opt opts[] = {
		{ .name = "bs", .kind = OPT_SIZE, .dest = &s.bs, .default_text = "4K", .help = "block size" },
		{ .name = "mode", .kind = OPT_ENUM, .dest = &s.mode, .choices = modes, .help = "how" },
		{ .name = "file", .kind = OPT_STRING, .dest = &s.file, .metavar = "F",
		  .required = true, .help = "input" },
		{ .name = NULL },
	};
	struct cli cli = { .prog = "tool", .command = "tool", .opts = opts };
	char help[2048] = "";
	FILE *out = fmemopen(help, sizeof(help) - 1, "w");

	if (!out)
		exit(1);
	opts_print_help(&cli, out);
	fclose(out);
	CHECK(strncmp(help, "usage: tool [--bs SIZE] [--mode slow|quick] --file F\n", 53) == 0,
	      "help starts with the usage line made from the table");
	CHECK(strstr(help, "--bs SIZE") && strstr(help, "block size (default: 4K)"),
	      "help shows metavar, text and default");
	CHECK(strstr(help, "--mode slow|quick") != NULL, "help lists enum choices");
	CHECK(strstr(help, "--file F") && strstr(help, "input (required)"), "help marks required");
	CHECK(strstr(help, "--help") != NULL, "help mentions --help");
}


/* The JSON a table describes itself with: one object per row, its default parsed into the
 * row's unit; a tool of subcommands gets every subcommand's rows in one document. */
static void test_describe(void)
{
	struct settings s;
	uint64_t seed;
	struct opt opts[] = {
		{ .name = "bs", .kind = OPT_SIZE, .dest = &s.bs, .default_text = "4K", .help = "block size" },
		{ .name = "runtime", .kind = OPT_DURATION, .dest = &s.runtime, .default_text = "1.5m",
		  .help = "how long" },
		{ .name = "mode", .kind = OPT_ENUM, .dest = &s.mode, .choices = modes,
		  .default_text = "quick", .help = "how" },
		{ .name = "file", .kind = OPT_STRING, .dest = &s.file, .metavar = "F",
		  .required = true, .help = "in\"put" },
		{ .name = "fast", .kind = OPT_FLAG, .dest = &s.fast, .help = "go fast" },
		opt_seed(&seed),
		{ .name = NULL },
	};
	struct cli run = { .prog = "tool", .command = "tool run", .opts = opts };
	struct cli top = { .prog = "tool", .command = "tool", .opts = opts + 4 };
	char *doc = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&doc, &len);

	if (!out)
		exit(1);
	opts_describe(&run, out);
	fclose(out);
	CHECK(strncmp(doc, "{\n  \"tool\": \"tool\",\n  \"options\": [", 34) == 0,
	      "the document names the tool, then its options");
	CHECK(strstr(doc, "\"name\": \"bs\",\n      \"subcommand\": \"run\",\n      \"type\": \"size\",\n"
			  "      \"unit\": \"bytes\",\n      \"default\": 4096,") != NULL,
	      "a size: unit bytes, its default in bytes, its subcommand");
	CHECK(strstr(doc, "\"type\": \"duration\",\n      \"unit\": \"s\",\n      \"default\": 90.0,") &&
	      strstr(doc, "\"default_text\": \"1.5m\""), "a duration: unit s, its default in seconds");
	CHECK(strstr(doc, "\"choices\": [\n        \"slow\",\n        \"quick\"\n      ]") &&
	      strstr(doc, "\"default\": \"quick\""), "an enum: its choices and its default");
	CHECK(strstr(doc, "\"required\": true") && strstr(doc, "\"help\": \"in\\\"put\""),
	      "required is marked; the help is escaped");
	CHECK(strstr(doc, "\"type\": \"flag\",\n      \"unit\": null,\n      \"default\": false,") != NULL,
	      "a flag's default is false");
	CHECK(strstr(doc, "\"name\": \"seed\"") && strstr(doc, "\"default\": 1,") &&
	      strstr(doc, "the same seed, the same run"), "--seed is the shared row");
	free(doc);

	doc = NULL;
	out = open_memstream(&doc, &len);
	if (!out)
		exit(1);
	opts_describe_begin(out, "tool");
	opts_describe(&run, NULL);
	opts_describe(&top, NULL);
	CHECK(opts_describe_end() == 0, "a document of subcommands ends");
	fclose(out);
	const char *tool = strstr(doc, "\"tool\":");

	CHECK(strstr(doc, "\"subcommand\": \"run\"") && strstr(doc, "\"subcommand\": null") &&
	      tool && !strstr(tool + 1, "\"tool\":") && doc[strlen(doc) - 2] == '}',
	      "every command's rows in one document");
	free(doc);

	int saved = dup(STDOUT_FILENO);
	FILE *null = freopen("/dev/null", "w", stdout);
	char *argv[] = { "tool", "--describe-options", NULL };
	char *version[] = { "tool", "--version", NULL };
	enum opts_result described = opts_parse(&run, 2, argv);
	bool flagged = run.described;

	run.version = "tool-1.0";
	enum opts_result versioned = opts_parse(&run, 2, version);
	bool unflagged = !run.described;

	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	CHECK(null && described == OPTS_HELP && flagged && versioned == OPTS_HELP && unflagged,
	      "--describe-options and --version are answered before parsing, exit 0");
}

/* Entries in dir other than . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static const char *contents(const char *path)
{
	static char buf[64];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return f ? buf : "(none)";
}

static void test_output(void)
{
	char dir[] = "/tmp/test_opts.XXXXXX", path[128], missing[160];
	struct opt opts[] = { { .name = NULL } };
	FILE *quiet = fopen("/dev/null", "w");
	struct cli cli = { .prog = "t", .command = "t", .opts = opts, .err = quiet };
	int begun, status;

	CHECK(mkdtemp(dir) != NULL, "a scratch directory for --output");
	snprintf(path, sizeof(path), "%s/report", dir);
	snprintf(missing, sizeof(missing), "%s/no-such-dir/report", dir);

	begun = output_begin(&cli, path);
	printf("whole\n");
	output_complete();
	status = output_finish(0);
	CHECK(begun == 0 && status == 0 && strcmp(contents(path), "whole\n") == 0 &&
	      entries(dir) == 1, "a completed report is renamed to FILE, nothing else is left");

	begun = output_begin(&cli, path);
	printf("half");
	status = output_finish(1);
	CHECK(begun == 0 && status == 1 && strcmp(contents(path), "whole\n") == 0 &&
	      entries(dir) == 1, "a report never completed is removed; FILE keeps what it held");

	begun = output_begin(&cli, path);
	printf("partial run, whole report\n");
	output_complete();
	status = output_finish(1);
	CHECK(begun == 0 && status == 1 &&
	      strcmp(contents(path), "partial run, whole report\n") == 0 && entries(dir) == 1,
	      "a completed report is kept beside a non-zero status");

	CHECK(output_begin(&cli, missing) == EXIT_USAGE && entries(dir) == 1,
	      "--output in a directory that does not exist: a usage error, nothing made");
	CHECK(output_begin(&cli, NULL) == 0 && output_finish(3) == 3,
	      "no --output: nothing to commit, the status passes through");
	printf("stdout is stdout again\n");
	CHECK(strcmp(contents(path), "partial run, whole report\n") == 0,
	      "stdout is restored after output_finish");
	unlink(path);
	rmdir(dir);
	fclose(quiet);
}

/* A check across options, as commands pass to opts_start. */
static int check_count(struct cli *cli, void *spec)
{
	return *(uint64_t *)spec ? 0 : usage_error(cli, "--count must be more than 0");
}

static bool start(struct cli *cli, char *args, int *status)
{
	char *argv[8] = { "t" };
	int argc = 1;

	for (char *word = strtok(args, " "); word && argc < 7; word = strtok(NULL, " "))
		argv[argc++] = word;
	*status = -7;
	*(uint64_t *)cli->opts[0].dest = 0;             /* as a command starts: nothing given */
	*(const char **)cli->opts[1].dest = NULL;
	return opts_start(cli, argc, argv, check_count, cli->opts[0].dest,
			  (const char *const *)cli->opts[1].dest, status);
}

static void test_start(void)
{
	char dir[] = "/tmp/test_opts.XXXXXX", args[256];
	uint64_t count;
	const char *output;
	struct opt opts[] = {
		{ .name = "count", .kind = OPT_UINT, .dest = &count, .default_text = "1" },
		opt_output(&output),
		{ .name = NULL },
	};
	FILE *quiet = fopen("/dev/null", "w");
	struct cli cli = { .prog = "t", .command = "t", .opts = opts, .err = quiet };
	bool went_on;
	int status;

	CHECK(mkdtemp(dir) != NULL, "a scratch directory for --output");
	snprintf(args, sizeof(args), "--count x --output %s/report", dir);
	CHECK(!start(&cli, args, &status) && status == EXIT_USAGE && entries(dir) == 0,
	      "opts_start: a bad value stops before the check and --output");
	snprintf(args, sizeof(args), "--count 0 --output %s/report", dir);
	CHECK(!start(&cli, args, &status) && status == EXIT_USAGE && entries(dir) == 0,
	      "opts_start: a failed check stops before --output is begun");
	snprintf(args, sizeof(args), "--count 3 --output %s/no-such-dir/report", dir);
	CHECK(!start(&cli, args, &status) && status == EXIT_USAGE && count == 3,
	      "opts_start: an --output that cannot be begun is a usage error");
	snprintf(args, sizeof(args), "--count 3 --output %s/report", dir);
	went_on = start(&cli, args, &status) && status == 0 && count == 3 && entries(dir) == 1;
	CHECK(output_finish(0) == 0 && went_on && entries(dir) == 0,
	      "opts_start: all good, go on with status 0 and the report begun (then removed)");
	snprintf(args, sizeof(args), "--count 2");
	CHECK(start(&cli, args, &status) && status == 0 && count == 2 && output == NULL,
	      "opts_start: no --output, nothing begun");
	rmdir(dir);
	fclose(quiet);
}

int main(void)
{
	test_sizes();
	test_durations();
	test_numbers_and_formatting();
	test_parser();
	test_help();
	test_describe();
	test_output();
	test_start();
	return 0;
}
