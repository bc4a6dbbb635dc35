/*
 * test_operands.c - splitting operands from table options: option values
 * are never taken for operands, "--" and "-" behave as in getopt tools,
 * short aliases are replaced, and the usage line shows the operands.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "operands.h"

static uint64_t bs, seed;
static const char *files;
static bool recursive;

static struct opt table[] = {
	{ .name = "bs", .kind = OPT_SIZE, .dest = &bs, .help = "block size" },
	{ .name = "seed", .kind = OPT_UINT, .dest = &seed, .help = "seed" },
	{ .name = "files", .kind = OPT_STRING, .dest = &files, .metavar = "F...", .help = "files" },
	{ .name = "recursive", .kind = OPT_FLAG, .dest = &recursive, .help = "recurse" },
	{ .name = NULL },
};

static const struct short_alias aliases[] = { { "-r", "--recursive" }, { NULL, NULL } };

/* Joins words with spaces, for comparing a whole argv at once. */
static const char *joined(char **words, int count)
{
	static char buf[512];

	buf[0] = '\0';
	for (int i = 0; i < count; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, words[i]);
	}
	return buf;
}

static void split(struct cli *cli, char **argv, struct operands *ops)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	CHECK(operands_split(cli, aliases, argc, argv, ops) == 0, "split %s", joined(argv, argc));
}

int main(void)
{
	struct cli cli = { .prog = "t", .command = "t", .opts = table, .operands = "FILE..." };
	struct operands ops;

	{
		char *argv[] = { "t", "a", "--bs", "1M", "b", "--files", "c", "d", "--recursive",
				 "e", NULL };

		split(&cli, argv, &ops);
		CHECK(strcmp(joined(ops.argv, ops.argc), "t --bs 1M --files c --recursive") == 0,
		      "options keep their values: '%s'", joined(ops.argv, ops.argc));
		CHECK(strcmp(joined(ops.words, ops.count), "a b d e") == 0,
		      "operands in order: '%s'", joined(ops.words, ops.count));
		CHECK(ops.argv[ops.argc] == NULL, "options argv is NULL-terminated");
		CHECK(opts_parse(&cli, ops.argc, ops.argv) == OPTS_OK && bs == 1 << 20 &&
		      strcmp(files, "c") == 0 && recursive, "opts_parse takes what is left");
		operands_free(&ops);
	}
	{
		char *argv[] = { "t", "--seed", "-5", "--bs=4K", "-", "--", "--bs", "-r", NULL };

		split(&cli, argv, &ops);
		CHECK(strcmp(joined(ops.argv, ops.argc), "t --seed -5 --bs=4K") == 0,
		      "a value may look like an option; --x=v is one word: '%s'",
		      joined(ops.argv, ops.argc));
		CHECK(strcmp(joined(ops.words, ops.count), "- --bs -r") == 0,
		      "'-' is an operand and '--' ends the options: '%s'",
		      joined(ops.words, ops.count));
		operands_free(&ops);
	}
	{
		char *argv[] = { "t", "-r", "x", "-q", "--bogus", "y", "--files", NULL };

		split(&cli, argv, &ops);
		CHECK(strcmp(joined(ops.argv, ops.argc), "t --recursive -q --bogus --files") == 0,
		      "aliases replaced; unknown options and a value-less last option are left "
		      "for opts_parse: '%s'", joined(ops.argv, ops.argc));
		CHECK(strcmp(joined(ops.words, ops.count), "x y") == 0, "operands x y");
		operands_free(&ops);
		CHECK(ops.argv == NULL && ops.words == NULL && ops.count == 0, "free empties it");
	}
	{
		char *usage = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&usage, &len);

		opts_print_usage_line(&cli, out);
		fclose(out);
		CHECK(strcmp(usage, "usage: t [--bs SIZE] [--seed N] [--files F...] [--recursive]"
			      " FILE...\n") == 0, "usage line ends with the operands: %.*s",
		      (int)strcspn(usage, "\n"), usage);
		free(usage);
	}
	return 0;
}
