/*
 * main.c - simdisk entry point: `simdisk model ...` or the mount daemon.
 *
 * For: dispatch only. The daemon is mount_cmd.c and daemon.c (README), the
 * analytic predictions model_cmd.c, ReadyBoost's device test qualify_cmd.c, the device models one file each.
 */
#include <stdio.h>
#include <string.h>

#include "daemon.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "model") == 0)
		return model_command(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "qualify") == 0)
		return qualify_command(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		puts(SIMDISK_VERSION);
		return 0;
	}
	return mount_command(argc, argv);
}
