/* subcmd: see subcmd.h. */
#include "subcmd.h"

#include <stdio.h>
#include <string.h>

#include "opts.h"

static void print_help(const struct subcommand_table *t, FILE *out)
{
	fprintf(out, "usage: %s <command> [options]\n\n", t->prog);
	if (t->description)
		fprintf(out, "%s\n\n", t->description);
	fprintf(out, "commands:\n");
	for (int i = 0; i < t->ncommands; i++)
		fprintf(out, "  %-12s %s\n", t->commands[i].name, t->commands[i].summary);
	fprintf(out, "\n'%s <command> --help' describes a command's options; '%s --describe-options'"
		" prints\nevery command's as JSON.\n", t->prog, t->prog);
}

int subcmd_main(const struct subcommand_table *t, int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "%s: missing command\n", t->prog);
		print_help(t, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_help(t, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts(t->version);
		return 0;
	}
	if (strcmp(argv[1], "--describe-options") == 0 && argc == 2) {
		/* Every subcommand's rows, from the tables its own parse uses: each is run with
		 * --describe-options alone, which opts_parse answers before doing anything else. */
		int status = 0;

		opts_describe_begin(stdout, t->prog);
		for (int i = 0; i < t->ncommands && !status; i++) {
			char *words[] = { (char *)t->commands[i].name, "--describe-options", NULL };

			status = t->commands[i].run(2, words);
		}
		return opts_describe_end() ? 1 : status;
	}
	for (int i = 0; i < t->ncommands; i++)
		if (strcmp(argv[1], t->commands[i].name) == 0)
			return output_finish(t->commands[i].run(argc - 1, argv + 1));
	fprintf(stderr, "%s: unknown command '%s'\n", t->prog, argv[1]);
	print_help(t, stderr);
	return EXIT_USAGE;
}
