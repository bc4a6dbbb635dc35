/*
 * commands.h - the subcommands of hog, one file each.
 *
 * Each takes the arguments after its name (argv[0] is the command name) and
 * returns the process exit status: 0 success, 1 runtime failure (including a
 * failed --verify), 2 usage error or a size refused by the memory guard.
 */
#ifndef HOG_COMMANDS_H
#define HOG_COMMANDS_H

#define HOG_VERSION "hog-0.1.0"

int run_command(int argc, char **argv);
int victim_command(int argc, char **argv);
int populate_command(int argc, char **argv);
int dump_command(int argc, char **argv);

#endif
