/*
 * main.c - iobench entry point: picks the subcommand from a table (lib/subcmd).
 *
 * For: dispatch only. Each subcommand lives in its own file and owns its
 * options, output and exit status.
 */
#include "commands.h"
#include <stddef.h>

#include "subcmd.h"

static const struct subcommand commands[] = {
	{ "job", "run one fio-like IO job and report it (text, or JSON shaped like fio's)", job_command },
	{ "crystalmark", "replay CrystalMark 2004R2's disk test sequence (seed 003)",
	  crystalmark_command },
};

int main(int argc, char **argv)
{
	static const struct subcommand_table table = {
		.prog = "iobench", .version = IOBENCH_VERSION, .description = NULL,
		.commands = commands, .ncommands = sizeof(commands) / sizeof(commands[0]),
	};
	return subcmd_main(&table, argc, argv);
}
