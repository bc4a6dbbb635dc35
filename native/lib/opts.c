/*
 * opts.c - table-driven command-line options (see opts.h for what it is for).
 */
#include "opts.h"

#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIRST_ROW_VAL 1000   /* getopt_long val of table row i is this + i */
#define HELP_VAL 'h'
#define DESCRIBE_WORD "--describe-options"
#define HELP_COLUMN 28

static FILE *err_stream(const struct cli *cli)
{
	return cli->err ? cli->err : stderr;
}

static void vreport(const struct cli *cli, const char *fmt, va_list ap)
{
	FILE *err = err_stream(cli);

	fprintf(err, "%s: ", cli->prog);
	vfprintf(err, fmt, ap);
	fputc('\n', err);
	opts_print_usage_line(cli, err);
	fprintf(err, "try '%s --help'\n", cli->command);
}

struct opt opt_seed(uint64_t *dest)
{
	return (struct opt){ .name = "seed", .kind = OPT_UINT, .dest = dest, .default_text = "1",
			     .help = "seed of every pseudo-random choice (data, order, offsets): "
				     "the same seed, the same run" };
}

int opts_parse_status(struct cli *cli, int argc, char **argv)
{
	switch (opts_parse(cli, argc, argv)) {
	case OPTS_HELP:
		return 0;
	case OPTS_ERROR:
		return EXIT_USAGE;
	case OPTS_OK:
		break;
	}
	return OPTS_GO_ON;
}

int usage_error(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cli, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

/* --- value parsers --- */

static int parse_leading_uint(const char *text, uint64_t *value, char **rest)
{
	if (*text < '0' || *text > '9')
		return -1;   /* also rejects the signs and spaces strtoull allows */
	errno = 0;
	unsigned long long v = strtoull(text, rest, 10);
	if (errno)
		return -1;
	*value = v;
	return 0;
}

int parse_uint(const char *text, uint64_t *value)
{
	char *rest;

	if (parse_leading_uint(text, value, &rest) || *rest)
		return -1;
	return 0;
}

int parse_size(const char *text, uint64_t *bytes)
{
	static const char units[] = "KMGT";
	uint64_t value;
	char *rest;

	if (parse_leading_uint(text, &value, &rest))
		return -1;
	if (*rest) {
		const char *unit = strchr(units, *rest >= 'a' ? *rest - 'a' + 'A' : *rest);

		if (!unit || !*unit || rest[1])
			return -1;
		unsigned shift = 10 * (unsigned)(unit - units + 1);

		if (value > (UINT64_MAX >> shift))
			return -1;
		value <<= shift;
	}
	*bytes = value;
	return 0;
}

int parse_double(const char *text, double *value)
{
	char *rest;

	if (!*text)
		return -1;
	errno = 0;
	double v = strtod(text, &rest);
	if (errno || *rest || !isfinite(v))
		return -1;
	*value = v;
	return 0;
}

int parse_duration_ns(const char *text, uint64_t *ns)
{
	static const struct { const char *suffix; double ns; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
		{ "m", 60e9 }, { "h", 3600e9 },
	};
	char *rest;

	if ((*text < '0' || *text > '9') && *text != '.')
		return -1;   /* no sign, no "inf", no "nan" */
	errno = 0;
	double v = strtod(text, &rest);
	if (errno || rest == text)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(rest, units[i].suffix) == 0) {
			double total = v * units[i].ns;

			if (!(total < 18446744073709549568.0))  /* largest double < 2^64 */
				return -1;
			*ns = (uint64_t)(total + 0.5);
			return 0;
		}
	}
	return -1;
}

void opts_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		unsigned shift = 10 * (unsigned)(4 - i);

		if (bytes && bytes % (1ULL << shift) == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> shift), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

void opts_format_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct { const char *suffix; uint64_t ns; } units[] = {
		{ "s", 1000000000ULL }, { "ms", 1000000ULL }, { "us", 1000ULL }, { "ns", 1 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns),
				 units[i].suffix);
			return;
		}
	}
}

/* --- the table --- */

struct opt *opts_find(struct cli *cli, const char *name)
{
	for (struct opt *o = cli->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	fprintf(stderr, "%s: internal error: no option --%s\n", cli->prog, name);
	abort();
}

static const char *kind_expectation(enum opt_kind kind)
{
	switch (kind) {
	case OPT_SIZE:     return "bytes with an optional K, M, G or T suffix";
	case OPT_UINT:     return "a non-negative integer";
	case OPT_DOUBLE:   return "a number";
	case OPT_DURATION: return "a time with an ns, us, ms, s, m or h suffix";
	default:           return "a value";
	}
}

/* "read|write|..." into buf; truncated to fit. */
static const char *join_choices(const struct opt *o, const char *separator,
				char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *const *c = o->choices; *c && used < len; c++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 c == o->choices ? "" : separator, *c);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

/* Stores text into o->dest; on failure explains why on cli's error stream. */
static int set_value(const struct cli *cli, struct opt *o, const char *text)
{
	char choices[256];
	int bad = 0;

	switch (o->kind) {
	case OPT_SIZE:     bad = parse_size(text, o->dest); break;
	case OPT_UINT:     bad = parse_uint(text, o->dest); break;
	case OPT_DOUBLE:   bad = parse_double(text, o->dest); break;
	case OPT_DURATION: bad = parse_duration_ns(text, o->dest); break;
	case OPT_STRING:   *(const char **)o->dest = text; break;
	case OPT_FLAG:     *(bool *)o->dest = true; break;
	case OPT_ENUM:
		for (int i = 0; o->choices[i]; i++) {
			if (strcmp(o->choices[i], text) == 0) {
				*(int *)o->dest = i;
				return 0;
			}
		}
		usage_error(cli, "--%s: '%s' is not one of %s", o->name, text,
			    join_choices(o, ", ", choices, sizeof(choices)));
		return -1;
	}
	if (bad) {
		usage_error(cli, "--%s: bad value '%s' (expected %s)", o->name, text,
			    kind_expectation(o->kind));
		return -1;
	}
	return 0;
}

static const char *metavar(const struct opt *o, char *buf, size_t len)
{
	static const char *const by_kind[] = {
		[OPT_SIZE] = "SIZE", [OPT_UINT] = "N", [OPT_DOUBLE] = "X",
		[OPT_DURATION] = "TIME", [OPT_STRING] = "STR", [OPT_FLAG] = "",
	};

	if (o->metavar)
		return o->metavar;
	if (o->kind == OPT_ENUM)
		return join_choices(o, "|", buf, len);
	return by_kind[o->kind];
}

static void write_help_row(FILE *out, const char *left, const char *help)
{
	int width = fprintf(out, "  %s", left);

	if (width >= HELP_COLUMN) {
		fputc('\n', out);
		width = 0;
	}
	fprintf(out, "%*s%s", HELP_COLUMN - width, "", help);
}

void opts_print_usage_line(const struct cli *cli, FILE *out)
{
	fprintf(out, "usage: %s", cli->command);
	for (const struct opt *o = cli->opts; o->name; o++) {
		char choices[256];

		fprintf(out, " %s--%s%s%s%s", o->required ? "" : "[", o->name,
			o->kind == OPT_FLAG ? "" : " ", metavar(o, choices, sizeof(choices)),
			o->required ? "" : "]");
	}
	if (cli->operands)
		fprintf(out, " %s", cli->operands);
	fputc('\n', out);
}

void opts_print_help(const struct cli *cli, FILE *out)
{
	opts_print_usage_line(cli, out);
	if (cli->description)
		fprintf(out, "\n%s\n", cli->description);
	fputs("\noptions:\n", out);
	for (const struct opt *o = cli->opts; o->name; o++) {
		char left[320], choices[256];

		snprintf(left, sizeof(left), "--%s%s%s", o->name,
			 o->kind == OPT_FLAG ? "" : " ",
			 metavar(o, choices, sizeof(choices)));
		write_help_row(out, left, o->help);
		if (o->required)
			fputs(" (required)", out);
		if (o->default_text)
			fprintf(out, " (default: %s)", o->default_text);
		fputc('\n', out);
	}
	write_help_row(out, "--help", "show this help and exit\n");
	write_help_row(out, DESCRIBE_WORD, "print the options above as JSON and exit\n");
}

/* --- parsing --- */

static size_t count_rows(const struct cli *cli)
{
	size_t n = 0;

	while (cli->opts[n].name)
		n++;
	return n;
}

/* getopt_long accepts unique prefixes ("--run"); a recorded job must not. */
static bool spelled_in_full(const char *word, const char *name)
{
	size_t len = strlen(name);

	return strncmp(word, "--", 2) == 0 && strncmp(word + 2, name, len) == 0 &&
	       (word[2 + len] == '\0' || word[2 + len] == '=');
}

/* "--foo=bar" -> "--foo", for error messages. */
static int option_word_length(const char *word)
{
	return (int)strcspn(word, "=");
}

static enum opts_result parse_argv(struct cli *cli, struct option *longopts,
				   int argc, char **argv)
{
	optind = 0;   /* glibc: full re-initialisation, so parsing can be repeated */
	opterr = 0;   /* every message comes from here */
	for (;;) {
		const char *word = argv[optind ? optind : 1];
		int c = getopt_long(argc, argv, "+:h", longopts, NULL);

		if (c == -1)
			break;
		if (c == HELP_VAL) {
			opts_print_help(cli, stdout);
			return OPTS_HELP;
		}
		if (c == ':') {
			struct opt *o = &cli->opts[optopt - FIRST_ROW_VAL];

			usage_error(cli, "--%s needs a value", o->name);
			return OPTS_ERROR;
		}
		if (c == '?' && optopt >= FIRST_ROW_VAL) {
			usage_error(cli, "--%s takes no value",
				    cli->opts[optopt - FIRST_ROW_VAL].name);
			return OPTS_ERROR;
		}
		if (c == '?') {
			usage_error(cli, "unknown option '%.*s'",
				    option_word_length(word), word);
			return OPTS_ERROR;
		}

		struct opt *o = &cli->opts[c - FIRST_ROW_VAL];

		if (!spelled_in_full(word, o->name)) {
			usage_error(cli, "unknown option '%.*s' (did you mean --%s?)",
				    option_word_length(word), word, o->name);
			return OPTS_ERROR;
		}
		if (set_value(cli, o, optarg))
			return OPTS_ERROR;
		o->given = true;
	}
	if (optind < argc) {
		usage_error(cli, "unexpected argument '%s'", argv[optind]);
		return OPTS_ERROR;
	}
	for (struct opt *o = cli->opts; o->name; o++) {
		if (o->required && !o->given) {
			usage_error(cli, "missing --%s", o->name);
			return OPTS_ERROR;
		}
	}
	return OPTS_OK;
}

/* --- the table for programs --- */

static const char *const kind_names[] = {
	[OPT_SIZE] = "size", [OPT_UINT] = "uint", [OPT_DOUBLE] = "double",
	[OPT_DURATION] = "duration", [OPT_STRING] = "string", [OPT_ENUM] = "enum",
	[OPT_FLAG] = "flag",
};

/* The document subcmd_main has begun (opts_describe_begin), if any. */
static struct {
	struct json j;
	bool open;
} describing;

/* The row's default, parsed, in the row's unit. */
static void describe_default(struct json *j, const struct opt *o)
{
	uint64_t u = 0;
	double d = 0;

	if (o->kind == OPT_FLAG) {
		json_bool(j, false);
		return;
	}
	if (!o->default_text) {
		json_null(j);
		return;
	}
	switch (o->kind) {
	case OPT_SIZE:
		parse_size(o->default_text, &u);
		json_uint(j, u);
		break;
	case OPT_UINT:
		parse_uint(o->default_text, &u);
		json_uint(j, u);
		break;
	case OPT_DOUBLE:
		parse_double(o->default_text, &d);
		json_double(j, d);
		break;
	case OPT_DURATION:
		parse_duration_ns(o->default_text, &u);
		json_double(j, (double)u / 1e9);
		break;
	default:
		json_string(j, o->default_text);
		break;
	}
}

static void describe_rows(struct json *j, const struct cli *cli)
{
	const char *space = strchr(cli->command, ' ');
	char sub[64] = "";

	if (space)
		snprintf(sub, sizeof(sub), "%.*s", (int)strcspn(space + 1, " "), space + 1);
	for (const struct opt *o = cli->opts; o->name; o++) {
		char choices[256];

		json_object_begin(j);
		json_kv_string(j, "name", o->name);
		json_key(j, "subcommand");
		if (*sub)
			json_string(j, sub);
		else
			json_null(j);
		json_kv_string(j, "type", kind_names[o->kind]);
		json_key(j, "unit");
		if (o->kind == OPT_SIZE)
			json_string(j, "bytes");
		else if (o->kind == OPT_DURATION)
			json_string(j, "s");
		else
			json_null(j);
		json_key(j, "default");
		describe_default(j, o);
		json_key(j, "default_text");
		if (o->default_text)
			json_string(j, o->default_text);
		else
			json_null(j);
		json_key(j, "required");
		json_bool(j, o->required);
		json_key(j, "choices");
		if (o->kind == OPT_ENUM) {
			json_array_begin(j);
			for (const char *const *c = o->choices; *c; c++)
				json_string(j, *c);
			json_array_end(j);
		} else {
			json_null(j);
		}
		json_key(j, "metavar");
		if (o->kind == OPT_FLAG)
			json_null(j);
		else
			json_string(j, metavar(o, choices, sizeof(choices)));
		json_kv_string(j, "help", o->help);
		json_object_end(j);
	}
}

void opts_describe_begin(FILE *out, const char *tool)
{
	json_init(&describing.j, out, true);
	json_object_begin(&describing.j);
	json_kv_string(&describing.j, "tool", tool);
	json_kv_array_begin(&describing.j, "options");
	describing.open = true;
}

int opts_describe_end(void)
{
	describing.open = false;
	json_array_end(&describing.j);
	json_object_end(&describing.j);
	return json_finish(&describing.j);
}

void opts_describe(const struct cli *cli, FILE *out)
{
	char tool[64];

	if (describing.open) {
		describe_rows(&describing.j, cli);
		return;
	}
	snprintf(tool, sizeof(tool), "%.*s", (int)strcspn(cli->command, " "), cli->command);
	opts_describe_begin(out, tool);
	describe_rows(&describing.j, cli);
	opts_describe_end();
}

enum opts_result opts_parse(struct cli *cli, int argc, char **argv)
{
	size_t n = count_rows(cli);

	cli->described = false;
	if (argc == 2 && cli->version && strcmp(argv[1], "--version") == 0) {
		puts(cli->version);
		return OPTS_HELP;
	}
	if (argc == 2 && strcmp(argv[1], DESCRIBE_WORD) == 0) {
		opts_describe(cli, stdout);
		cli->described = true;
		return OPTS_HELP;
	}
	struct option *longopts = calloc(n + 2, sizeof(*longopts));

	if (!longopts) {
		fprintf(err_stream(cli), "%s: out of memory\n", cli->prog);
		return OPTS_ERROR;
	}
	for (size_t i = 0; i < n; i++) {
		struct opt *o = &cli->opts[i];

		o->given = false;
		if (o->default_text && set_value(cli, o, o->default_text)) {
			fprintf(stderr, "%s: internal error: bad default for --%s\n",
				cli->prog, o->name);
			abort();
		}
		longopts[i] = (struct option){
			.name = o->name,
			.has_arg = o->kind == OPT_FLAG ? no_argument : required_argument,
			.val = FIRST_ROW_VAL + (int)i,
		};
	}
	longopts[n] = (struct option){ .name = "help", .val = HELP_VAL };

	enum opts_result result = parse_argv(cli, longopts, argc, argv);

	free(longopts);
	return result;
}
