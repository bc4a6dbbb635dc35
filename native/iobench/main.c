/*
 * main.c - iobench entry point: picks the subcommand from a table.
 *
 * For: dispatch only. Each subcommand lives in its own file and owns its
 * options, output and exit status.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "opts.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "job", "run one fio-like IO job and report it as fio-shaped JSON", job_command },
	{ "crystalmark", "replay CrystalMark 2004R2's disk test sequence (seed 003)",
	  crystalmark_command },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *out)
{
	fprintf(out, "usage: iobench <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'iobench <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "iobench: missing command\n");
		print_help(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_help(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts(IOBENCH_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "iobench: unknown command '%s'\n", argv[1]);
	print_help(stderr);
	return EXIT_USAGE;
}
