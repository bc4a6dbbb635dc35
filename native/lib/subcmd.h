/*
 * subcmd: the entry point of a tool made of subcommands (`hog run`, `iobench job`): picks the
 * subcommand from a table, answers --help, --version and --describe-options (every
 * subcommand's option table as one JSON document), names an unknown command.
 * For: dispatch only; each subcommand owns its options, output and exit status.
 */
#ifndef NATIVE_SUBCMD_H
#define NATIVE_SUBCMD_H

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
};

struct subcommand_table {
	const char *prog;        /* "hog" */
	const char *version;     /* "hog-0.1.0" */
	const char *description; /* a line under the usage, or NULL */
	const struct subcommand *commands;
	int ncommands;
};

/* Runs the chosen subcommand and returns its exit status (2 for a usage error here), after
 * output_finish (opts.h): a report the subcommand sent to --output is committed or removed. */
int subcmd_main(const struct subcommand_table *t, int argc, char **argv);

#endif
