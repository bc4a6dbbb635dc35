/*
 * main.c - hog entry point: picks the subcommand from a table.
 *
 * For: dispatch only. Each subcommand lives in its own file and owns its
 * options, output and exit status; what several share is in common.c.
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
	{ "run", "allocate, write every page, hold, free; repeat and time each phase",
	  run_command },
	{ "victim", "build a working set, wait for go, trim it, re-touch it, time and verify",
	  victim_command },
	{ "populate", "let the kernel populate a mapping (MAP_POPULATE): the first-touch floor",
	  populate_command },
	{ "dump", "write the bytes a --fill produces, for checking them with a compressor",
	  dump_command },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *out)
{
	fprintf(out, "usage: hog <command> [options]\n\n"
		"A memory hog and working-set victim for paging experiments.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'hog <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "hog: missing command\n");
		print_help(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_help(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts(HOG_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "hog: unknown command '%s'\n", argv[1]);
	print_help(stderr);
	return EXIT_USAGE;
}
