/*
 * main.c - simdisk entry point: picks the subcommand from a table (lib/subcmd).
 *
 * For: dispatch only. The daemon is mount_cmd.c, daemon.c and serve.c
 * (README), the analytic predictions model_cmd.c, ReadyBoost's device test
 * qualify_cmd.c, the device models one file each.
 */
#include "daemon.h"
#include "subcmd.h"

int main(int argc, char **argv)
{
	static const struct subcommand commands[] = {
		{ "mount", "mount the emulated device at MOUNTPOINT (the FUSE daemon)", mount_command },
		{ "model", "the model's mean service time of a steady workload; --help lists the "
			   "profile keys", model_command },
		{ "qualify", "ReadyBoost's device test (Windows Vista's thresholds) on the model",
		  qualify_command },
	};
	static const struct subcommand_table table = {
		.prog = "simdisk", .version = SIMDISK_VERSION,
		.description = "A FUSE emulator of 2008 disks, USB sticks and a ReadyBoost-like cache "
			       "tier, made from a file\n(native/simdisk/README.md).",
		.commands = commands, .ncommands = sizeof(commands) / sizeof(commands[0]),
	};

	return subcmd_main(&table, argc, argv);
}
