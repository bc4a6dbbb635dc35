/*
 * main.c - hog entry point: picks the subcommand from a table (lib/subcmd).
 *
 * For: dispatch only. Each subcommand lives in its own file and owns its
 * options, output and exit status; what several share is in common.c.
 */
#include "commands.h"
#include "subcmd.h"

static const struct subcommand commands[] = {
	{ "run", "allocate, write every page, hold, free; in --rounds rounds, each phase timed",
	  run_command },
	{ "victim", "build a working set, wait for go, trim it, re-touch it, time and verify",
	  victim_command },
	{ "populate", "let the kernel populate a mapping (MAP_POPULATE): the first-touch floor",
	  populate_command },
	{ "dump", "write the bytes a --fill produces, for checking them with a compressor",
	  dump_command },
};

int main(int argc, char **argv)
{
	static const struct subcommand_table table = {
		.prog = "hog", .version = HOG_VERSION,
		.description = "A memory hog and working-set victim for paging experiments.",
		.commands = commands, .ncommands = sizeof(commands) / sizeof(commands[0]),
	};
	return subcmd_main(&table, argc, argv);
}
