/*
 * opts.h - command-line options declared once, in a table.
 *
 * For: the options of one (sub)command. Each table row names an option, its
 * kind, its destination, its default and its help text; the parser
 * (getopt_long underneath), the --help text and the error messages are all
 * generated from that row, so they cannot drift apart, and so is the table's
 * description for programs (--describe-options: JSON, one object per row, which
 * pagelab.run.tools builds every command line from). Tools can also print
 * effective values back (e.g. into JSON) with opts_format_size/duration.
 * Not for: subcommand dispatch, config files, or checks that involve several
 * options (do those after parsing and report them with usage_error()).
 *
 * Value syntax:
 *   size      bytes, with an optional K, M, G or T suffix (powers of 1024)
 *   uint      non-negative decimal integer
 *   double    decimal number
 *   duration  a number with a unit: ns, us, ms, s, m (minutes) or h; a bare
 *             number is seconds ("500ms", "2s", "1.5m", "0")
 *   string    any text
 *   enum      one of the row's choices; the destination gets its index
 *   flag      takes no value; the destination becomes true
 */
#ifndef NATIVE_OPTS_H
#define NATIVE_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define EXIT_USAGE 2    /* bad command line: the convention of getopt tools */

enum opt_kind {
	OPT_SIZE,       /* uint64_t, bytes */
	OPT_UINT,       /* uint64_t */
	OPT_DOUBLE,     /* double */
	OPT_DURATION,   /* uint64_t, nanoseconds */
	OPT_STRING,     /* const char *, pointing into argv or the default */
	OPT_ENUM,       /* int, index into choices */
	OPT_FLAG,       /* bool */
};

struct opt {
	const char *name;              /* long name without the dashes */
	enum opt_kind kind;
	void *dest;
	const char *metavar;           /* shown in help; NULL: derived from kind */
	const char *help;
	const char *default_text;      /* parsed like a command-line value; NULL: none */
	const char *const *choices;    /* OPT_ENUM only, NULL-terminated */
	bool required;
	bool given;                    /* set by opts_parse when on the command line */
};

struct cli {
	const char *prog;        /* "iobench": prefix of every error message */
	const char *command;     /* "iobench job": starts the usage line */
	const char *description; /* a paragraph for --help, or NULL */
	struct opt *opts;        /* terminated by a row with name == NULL */
	FILE *err;               /* where errors go; NULL means stderr */
	const char *operands;    /* e.g. "FILE...": shown after the options in the usage
				    line (opts_parse still rejects them: see operands.h);
				    NULL: the command takes none */
	const char *version;     /* a tool without subcommands: what `TOOL --version` prints
				    (subcmd_main answers it for the others); NULL: none */
	bool described;          /* set by opts_parse: it answered --describe-options */
};

enum opts_result { OPTS_OK, OPTS_HELP, OPTS_ERROR };

/*
 * Applies the defaults, then parses argv[1..argc-1]. On --help prints the
 * full help to stdout and returns OPTS_HELP (exit 0); so on --version alone
 * (with cli->version), printing it, and on --describe-options alone, printing
 * opts_describe's document (or its rows into the one subcmd_main has begun)
 * and setting cli->described. On any mistake prints
 * the error, the usage line and a hint to stderr and returns OPTS_ERROR (exit
 * EXIT_USAGE). Positional arguments are rejected.
 */
enum opts_result opts_parse(struct cli *cli, int argc, char **argv);

/*
 * The shared start of every command's main: opts_parse (so --help, --version,
 * --describe-options and every mistake are answered the same way in every
 * tool), turned into what main does next: OPTS_GO_ON, or the exit status to
 * return (0 after --help, --version or --describe-options, EXIT_USAGE after a
 * mistake).
 */
#define OPTS_GO_ON (-1)
int opts_parse_status(struct cli *cli, int argc, char **argv);

/*
 * The start of a command whose options need checks across them and which
 * writes a report: opts_parse_status, then check(cli, spec) (NULL: none; it
 * reports a problem with usage_error and returns its status), then, when
 * output is not NULL, output_begin(cli, *output). Returns true to go on
 * (*status is then 0), or false with *status the exit status to return (0
 * after --help, --version or --describe-options).
 */
typedef int opts_check_fn(struct cli *cli, void *spec);
bool opts_start(struct cli *cli, int argc, char **argv, opts_check_fn *check, void *spec,
		const char *const *output, int *status);

/*
 * --output-format and --output, the same in every tool (as fio's): what the
 * report is, and where it goes.
 *
 * --output-format normal|json: a text summary for people (the default in every
 * tool) or one JSON document for programs (what the harness asks for).
 */
enum output_format { OUTPUT_NORMAL, OUTPUT_JSON };
extern const char *const output_format_names[];   /* "normal", "json" */
struct opt opt_output_format(int *dest);

/*
 * --output FILE: the report goes to FILE instead of stdout, whole or not at
 * all. output_begin (after the options are checked) sends stdout to a new
 * temporary file beside FILE; the command calls output_complete once its
 * report is written and flushed; output_finish (when the command ends, in
 * subcmd_main or the tool's main) renames the file to FILE if the report was
 * completed, and removes it otherwise (a failure, a signal that ended the run).
 */
struct opt opt_output(const char **dest);

/* No path: nothing to do. Returns 0, or EXIT_USAGE naming FILE when its
 * temporary file cannot be made (no such directory, no permission). */
int output_begin(const struct cli *cli, const char *path);

/* The report on stdout is whole (it may accompany a non-zero status, such as
 * residency's files that could not be measured). */
void output_complete(void);

/* Restores stdout and commits or removes the temporary file. Returns status,
 * or 1 when the completed report could not be written or renamed. A no-op
 * without an output_begin. */
int output_finish(int status);

/*
 * --seed N, the same in every tool: the seed of every pseudo-random choice the
 * command makes (data, orders, offsets); default 1.
 */
struct opt opt_seed(uint64_t *dest);

/*
 * The table for programs, as one JSON document:
 *   {"tool": "hog", "options": [{"name": "size", "subcommand": "run",
 *     "type": "size", "unit": "bytes", "default": null, "default_text": null,
 *     "required": true, "choices": null, "metavar": "S", "help": "..."}, ...]}
 * type is the kind (size, uint, double, duration, string, enum, flag); unit is
 * "bytes" for a size, "s" for a duration, else null; default is the parsed
 * default in that unit (bytes, seconds, a number, a string, false for a flag),
 * or null; subcommand is the second word of cli->command, or null. --help is
 * not a row.
 */
void opts_describe(const struct cli *cli, FILE *out);

/*
 * A tool of subcommands: one document whose rows are every subcommand's.
 * Between begin and end, each opts_parse that answers --describe-options adds
 * its rows to it instead of printing a document of its own.
 */
void opts_describe_begin(FILE *out, const char *tool);
int opts_describe_end(void);

/* Writes the help text generated from the table. */
void opts_print_help(const struct cli *cli, FILE *out);

/* Writes "usage: <command> --required X [--optional Y] ...\n" from the table. */
void opts_print_usage_line(const struct cli *cli, FILE *out);

/* Reports a usage problem the table cannot express; returns EXIT_USAGE. */
int usage_error(const struct cli *cli, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The row for name; aborts if there is none (a programming error). */
struct opt *opts_find(struct cli *cli, const char *name);

/* Value parsers used by opts_parse; each returns 0, or -1 if text is bad. */
int parse_size(const char *text, uint64_t *bytes);
int parse_uint(const char *text, uint64_t *value);
int parse_double(const char *text, double *value);
int parse_duration_ns(const char *text, uint64_t *ns);

/* Inverse of the parsers, with the largest exact unit: "64K", "1500ms". */
void opts_format_size(uint64_t bytes, char *buf, size_t len);
void opts_format_duration(uint64_t ns, char *buf, size_t len);

#endif
