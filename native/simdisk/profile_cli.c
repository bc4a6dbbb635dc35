/*
 * profile_cli.c - the profile options every simdisk subcommand takes (--profile,
 * --profile-dir, --set), the one function that parses a subcommand's options and
 * loads the profile they name, and the list of profile keys that every
 * subcommand's --help prints.
 */
#include <stdio.h>

#include "profile.h"

struct opt opt_profile(struct profile_opts *po)
{
	return (struct opt){ .name = "profile", .kind = OPT_STRING, .dest = &po->name, .metavar = "P",
			     .help = "device profile: a name in --profile-dir or a path to a .yaml file",
			     .required = true };
}

struct opt opt_profile_dir(struct profile_opts *po)
{
	return (struct opt){ .name = "profile-dir", .kind = OPT_STRING, .dest = &po->dir,
			     .metavar = "DIR",
			     .help = "where profile names are looked up (default: config/devices of this "
				     "repository)" };
}

struct opt opt_profile_set(struct profile_opts *po)
{
	return (struct opt){ .name = "set", .kind = OPT_STRING, .dest = &po->overrides,
			     .metavar = "K=V,...", .help = "override profile keys (listed at the end of --help)" };
}

struct profile *profile_from_opts(const struct cli *cli, struct profile_opts *po)
{
	char err[2048];
	struct profile *p;

	if (!po->dir) {
		profile_default_dir(po->default_dir, sizeof(po->default_dir));
		po->dir = po->default_dir;
	}
	p = profile_load(po->name, po->dir, po->overrides, err, sizeof(err));
	if (!p)
		usage_error(cli, "%s", err);
	return p;
}

int profile_command_finish(struct cli *cli, int status, struct profile_opts *po,
			   struct profile **profile)
{
	*profile = NULL;
	/* 0 is --help or --describe-options: a subcommand's cli has no --version */
	if (status == 0 && !cli->described)
		profile_keys_help(stdout);
	if (status != OPTS_GO_ON)
		return status;
	*profile = profile_from_opts(cli, po);
	return *profile ? OPTS_GO_ON : EXIT_USAGE;
}

int profile_command_start(struct cli *cli, int argc, char **argv, struct profile_opts *po,
			  struct profile **profile)
{
	return profile_command_finish(cli, opts_parse_status(cli, argc, argv), po, profile);
}

static void key_rows(FILE *out, const struct profile_key *keys)
{
	for (const struct profile_key *k = keys; k->name; k++) {
		int width = fprintf(out, "    %s", k->name);

		fprintf(out, "%*s%s", width < 28 ? 28 - width : 1, "", k->help);
		if (k->optional)
			fprintf(out, " (default: %s)", *k->fallback ? k->fallback : "none");
		fputc('\n', out);
	}
}

void profile_keys_help(FILE *out)
{
	fputs("\nprofile keys (flat YAML, `key: value`; --set key=value,... overrides them):\n"
	      "  every profile: model (one of the models below), description (optional)\n", out);
	for (int i = 0; device_models[i]; i++) {
		fprintf(out, "  model %s: %s\n", device_models[i]->name, device_models[i]->summary);
		key_rows(out, device_models[i]->keys);
	}
	fputs("  fault injection, optional in the mounted profile of any model (model and qualify\n"
	      "  describe the device without them):\n", out);
	key_rows(out, fault_keys);
}
