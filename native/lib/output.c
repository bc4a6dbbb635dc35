/*
 * output.c - --output-format and --output, the same in every tool (see opts.h): the report
 * goes to a temporary file beside FILE and is renamed to FILE only once it is whole.
 */
#include "opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const output_format_names[] = { "normal", "json", NULL };

struct opt opt_output_format(int *dest)
{
	return (struct opt){ .name = "output-format", .kind = OPT_ENUM, .dest = dest,
			     .choices = output_format_names, .default_text = "normal",
			     .help = "the report: a text summary, or one JSON document" };
}

struct opt opt_output(const char **dest)
{
	return (struct opt){ .name = "output", .kind = OPT_STRING, .dest = dest, .metavar = "FILE",
			     .help = "write the report to FILE (whole, or not at all) instead of stdout" };
}

bool opts_start(struct cli *cli, int argc, char **argv, opts_check_fn *check, void *spec,
		const char *const *output, int *status)
{
	*status = opts_parse_status(cli, argc, argv);
	if (*status != OPTS_GO_ON)
		return false;
	*status = check ? check(cli, spec) : 0;
	if (!*status && output)
		*status = output_begin(cli, *output);
	return *status == 0;
}

/* The report being written to a temporary file: where it goes, stdout's own
 * fd, and whether the command has completed it. */
static struct {
	char *path, *tmp;
	int saved_stdout;
	bool complete;
} output;

int output_begin(const struct cli *cli, const char *path)
{
	const char *slash;
	int fd;

	if (!path)
		return 0;
	slash = strrchr(path, '/');
	if (asprintf(&output.tmp, "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0, path,
		     slash ? slash + 1 : path) < 0) {
		output.tmp = NULL;
		return usage_error(cli, "--output %s: out of memory", path);
	}
	fd = mkstemp(output.tmp);
	if (fd < 0) {
		int err = errno;

		free(output.tmp);
		output.tmp = NULL;
		return usage_error(cli, "--output %s: %s", path, strerror(err));
	}
	mode_t mask = umask(0);

	umask(mask);
	fflush(stdout);
	output.saved_stdout = dup(STDOUT_FILENO);
	output.path = strdup(path);
	/* mkstemp's 0600 is for the unfinished file; FILE gets what open(2) would give it */
	if (output.saved_stdout < 0 || !output.path || fchmod(fd, 0666 & ~mask) ||
	    dup2(fd, STDOUT_FILENO) < 0) {
		int err = errno ? errno : ENOMEM;

		if (output.saved_stdout >= 0)
			close(output.saved_stdout);
		close(fd);
		unlink(output.tmp);
		free(output.tmp);
		free(output.path);
		output.tmp = output.path = NULL;
		return usage_error(cli, "--output %s: %s", path, strerror(err));
	}
	close(fd);
	output.complete = false;
	return 0;
}

void output_complete(void)
{
	output.complete = true;
}

int output_finish(int status)
{
	int err = 0;

	if (!output.tmp)
		return status;
	if (fflush(stdout) || ferror(stdout))
		err = errno ? errno : EIO;
	if (output.complete && !err && fsync(STDOUT_FILENO) && errno != EINVAL)
		err = errno;
	dup2(output.saved_stdout, STDOUT_FILENO);
	close(output.saved_stdout);
	if (output.complete && !err && rename(output.tmp, output.path))
		err = errno;
	if (!output.complete || err)
		unlink(output.tmp);
	if (output.complete && err) {
		fprintf(stderr, "writing %s: %s\n", output.path, strerror(err));
		status = status ? status : 1;
	}
	free(output.tmp);
	free(output.path);
	output.tmp = output.path = NULL;
	return status;
}
