/*
 * commands.h - the subcommands of iobench, one file each.
 *
 * Each takes the arguments after its name (argv[0] is the command name) and
 * returns the process exit status: 0 success, 1 runtime failure, 2 usage.
 */
#ifndef IOBENCH_COMMANDS_H
#define IOBENCH_COMMANDS_H

#define IOBENCH_VERSION "iobench-0.1.0"

int job_command(int argc, char **argv);
int crystalmark_command(int argc, char **argv);

#endif
