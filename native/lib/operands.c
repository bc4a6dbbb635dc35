/*
 * operands.c - split operands from table options (see operands.h).
 */
#include "operands.h"

#include <stdlib.h>
#include <string.h>

#include "fail.h"

/* The table row "--name" (without "=value") names, or NULL. */
static const struct opt *row_for_word(const struct cli *cli, const char *word)
{
	if (strncmp(word, "--", 2) != 0 || strchr(word, '='))
		return NULL;
	for (const struct opt *o = cli->opts; o->name; o++)
		if (strcmp(word + 2, o->name) == 0)
			return o;
	return NULL;
}

static const char *alias_for(const struct short_alias *aliases, const char *word)
{
	for (const struct short_alias *a = aliases; a && a->word; a++)
		if (strcmp(a->word, word) == 0)
			return a->replacement;
	return NULL;
}

int operands_split(const struct cli *cli, const struct short_alias *aliases,
		   int argc, char **argv, struct operands *out)
{
	bool options_ended = false;

	*out = (struct operands){ 0 };
	out->argv = calloc((size_t)argc + 1, sizeof(*out->argv));
	out->words = calloc((size_t)argc + 1, sizeof(*out->words));
	if (!out->argv || !out->words) {
		operands_free(out);
		return -1;
	}
	out->argv[out->argc++] = argv[0];
	for (int i = 1; i < argc; i++) {
		char *word = argv[i];
		const char *replacement;

		if (options_ended || word[0] != '-' || word[1] == '\0') {
			out->words[out->count++] = word;
			continue;
		}
		if (strcmp(word, "--") == 0) {
			options_ended = true;
			continue;
		}
		replacement = alias_for(aliases, word);
		if (replacement)
			word = (char *)replacement;   /* opts_parse never writes to argv words */
		out->argv[out->argc++] = word;

		const struct opt *o = row_for_word(cli, word);

		if (o && o->kind != OPT_FLAG && i + 1 < argc)
			out->argv[out->argc++] = argv[++i];   /* its value, whatever it looks like */
	}
	return 0;
}

int operands_start(struct cli *cli, const struct short_alias *aliases, int argc, char **argv,
		   struct operands *out)
{
	if (operands_split(cli, aliases, argc, argv, out))
		return runtime_error("out of memory");
	return opts_parse_status(cli, out->argc, out->argv);
}

void operands_free(struct operands *ops)
{
	free(ops->argv);
	free(ops->words);
	*ops = (struct operands){ 0 };
}
