/*
 * profile.h - device profiles: flat YAML files in config/devices/ checked
 * against the keys their model declares.
 *
 * For: turning `--profile NAME` (or a path) plus `--set key=value,...` into a
 * model and a filled parameter struct, refusing every mistake with the key
 * named: missing or unknown keys, wrong types, values out of range (negative
 * times), unknown models, and what a model's own check finds.
 * Not for: the models' behaviour (hdd.c, flash.c, ...).
 *
 * Every profile has `model:` (hdd, flash, ssd, tiered, zero) and may have
 * `description:`; the rest are the model's keys and the optional fault keys
 * (faults.h), which the mounted profile may have and a referenced one may not. Units are in the key names
 * (_ms, _mb_s with MB = 10^6 bytes, _bytes), so YAML numbers stay plain.
 */
#ifndef SIMDISK_PROFILE_H
#define SIMDISK_PROFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "device.h"
#include "faults.h"
#include "flatyaml.h"
#include "opts.h"

enum key_kind {
	KEY_BYTES,        /* uint64_t: a whole number of bytes */
	KEY_COUNT,        /* uint64_t: a whole number */
	KEY_MS,           /* uint64_t ns, written in milliseconds */
	KEY_RATE,         /* double bytes/s, written in MB/s (10^6 bytes) */
	KEY_NUMBER,       /* double */
	KEY_BOOL,         /* bool */
	KEY_CHOICE,       /* int: index into choices */
	KEY_PROFILE,      /* struct profile *: another profile, by name */
	KEY_COMPRESSION,  /* double: a fixed ratio >= 1, or 0 for "lz4" (measured) */
	KEY_TEXT,         /* char[FLAT_VALUE_MAX]: the value as written */
};

struct profile_key {
	const char *name;
	enum key_kind kind;
	size_t offset;               /* into the model's parameter struct */
	bool optional;               /* then `fallback` is the value used when absent */
	double min, max;             /* numeric bounds, inclusive */
	bool min_exclusive;          /* min itself is not allowed (e.g. rates > 0) */
	const char *const *choices;  /* KEY_CHOICE, NULL-terminated */
	const char *fallback;        /* optional keys: the value used when absent */
	const char *help;
};

/* The optional fault keys every profile accepts (faults.c; offsets into struct fault_params). */
extern const struct profile_key fault_keys[];

#define PROFILE_NAME_MAX 128

struct profile {
	char name[PROFILE_NAME_MAX];     /* file name without .yaml */
	char path[PATH_MAX];
	char dir[PATH_MAX];              /* where referenced profiles are looked up */
	char description[FLAT_VALUE_MAX];
	const struct device_model *model;
	void *params;                    /* model->params_size bytes */
	struct fault_params faults;      /* the fault keys (all optional) */
	struct profile *children[4];     /* profiles referenced by KEY_PROFILE keys */
	int nchildren;
};

/*
 * Loads `name_or_path` (a path if it contains '/' or ends in .yaml, else
 * DIR/NAME.yaml) and applies overrides ("key=value,key=value", may be NULL).
 * Returns NULL with a message naming the file and key in err.
 */
struct profile *profile_load(const char *name_or_path, const char *dir, const char *overrides,
			     char *err, size_t errlen);
void profile_free(struct profile *p);

/* The default profile directory: config/devices next to this build. */
void profile_default_dir(char *buf, size_t len);

/* The registered models, NULL-terminated. */
extern const struct device_model *const device_models[];

/* --- the command line: the profile options of every subcommand (profile_cli.c) --- */

struct profile_opts {
	const char *name, *dir, *overrides;
	char default_dir[PATH_MAX];
};

/* The rows --profile (required), --profile-dir and --set, first in every subcommand's table:
 * `struct opt table[] = { PROFILE_OPTION_ROWS(&po), <the subcommand's own rows>, { 0 } };` */
#define PROFILE_OPTION_ROWS(po) opt_profile(po), opt_profile_dir(po), opt_profile_set(po)
struct opt opt_profile(struct profile_opts *po);
struct opt opt_profile_dir(struct profile_opts *po);
struct opt opt_profile_set(struct profile_opts *po);

/* Loads the profile the options name (from config/devices without --profile-dir); NULL
 * after reporting the problem, naming file and key, as a usage error on cli. */
struct profile *profile_from_opts(const struct cli *cli, struct profile_opts *po);

/*
 * A subcommand's start: parses its options (a table with PROFILE_OPTION_ROWS) with the shared
 * start, opts_parse_status, and loads the profile they name. Returns OPTS_GO_ON with *profile
 * loaded (profile_free it), or the exit status with *profile NULL: 0 after --help (which also
 * lists the profile keys --set takes) or --describe-options, EXIT_USAGE after a mistake
 * (reported).
 */
int profile_command_start(struct cli *cli, int argc, char **argv, struct profile_opts *po,
			  struct profile **profile);
/* The same after a start of the caller's own that returned status (operands_start, for a
 * subcommand that takes operands): what profile_command_start does once the options are parsed. */
int profile_command_finish(struct cli *cli, int status, struct profile_opts *po,
			   struct profile **profile);

/* Every model's profile keys and the fault keys, with their help (simdisk model --help). */
void profile_keys_help(FILE *out);

/* Field access for models: the member at key->offset of p->params. */
#define PARAMS(p, type) ((const type *)(p)->params)

#endif
