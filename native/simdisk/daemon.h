/*
 * daemon.h - the subcommands of simdisk, one file each.
 *
 * Each takes its arguments (argv[0] is the program or command name) and
 * returns the exit status: 0 success, 1 runtime failure, 2 usage error.
 */
#ifndef SIMDISK_DAEMON_H
#define SIMDISK_DAEMON_H

#define SIMDISK_VERSION "simdisk-0.1.0"

/* `simdisk mount MOUNTPOINT --profile P --backing F ...`: the FUSE daemon (mount_cmd.c). */
int mount_command(int argc, char **argv);

/* `simdisk model --profile P --rw R --bs B`: the analytic mean (model_cmd.c). */
int model_command(int argc, char **argv);

/* `simdisk qualify --profile P`: ReadyBoost's device test (qualify_cmd.c). */
int qualify_command(int argc, char **argv);

#endif
