/*
 * operands.h - operands (file names) mixed with table-driven options.
 *
 * For: commands that take operands ("residency [options] FILE...") or an
 * option whose value is a list ("cacheflood --files F..."). operands_split()
 * moves the operands out of argv, using the option table to tell an option's
 * value from an operand ("--bs 1M": 1M is a value), and replaces whole-word
 * short aliases ("-r" -> "--recursive"); the caller hands the options that are
 * left to opts_parse() and then checks the operands itself. "--" ends the
 * options; a lone "-" is an operand. Set cli->operands (e.g. "FILE...") so
 * the usage line shows them.
 * Not for: parsing or checking option values, or reporting unknown options
 * (opts_parse does that on what is left), or bundled short options ("-rv").
 */
#ifndef NATIVE_OPERANDS_H
#define NATIVE_OPERANDS_H

#include "opts.h"

struct short_alias {
	const char *word;          /* "-r" */
	const char *replacement;   /* "--recursive" */
};

struct operands {
	int argc;       /* argv[0] and the options, ready for opts_parse */
	char **argv;    /* NULL-terminated; points into the original argv */
	int count;      /* number of operands */
	char **words;   /* the operands, in command-line order */
};

/*
 * Splits argv[1..argc-1]. aliases is terminated by a row with word == NULL,
 * or is NULL. Returns 0, or -1 if out of memory (out is then empty).
 */
int operands_split(const struct cli *cli, const struct short_alias *aliases,
		   int argc, char **argv, struct operands *out);

void operands_free(struct operands *ops);

/*
 * The start of a main that takes operands: operands_split, then opts_parse_status on the
 * options left. Returns OPTS_GO_ON (the operands are in out; the caller frees them), or
 * the exit status to return (1 out of memory; out is then empty).
 */
int operands_start(struct cli *cli, const struct short_alias *aliases, int argc, char **argv,
		   struct operands *out);

#endif
