/*
 * dump.c - "hog dump": writes exactly the bytes that --fill puts into --size
 * bytes of memory (page 0 first), to a file or stdout.
 *
 * For: checking a fill's compressibility with a real compressor
 * (`hog dump --size 64M --fill ratio:0.5 | lz4 -1 -c | wc -c`) and looking at
 * the pages. Not for: allocating anything; it needs one chunk of memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "hog.h"
#include "fullio.h"

#define CHUNK_PAGES 256

static const char description[] =
	"Writes the --size bytes that hog run and hog victim would write for the same\n"
	"--fill, --seed and page size, to --output (whole, or not at all) or to stdout\n"
	"(not to a terminal).\n"
	"Exit status: 0 done, 1 write failure, 2 usage error.";

int dump_command(int argc, char **argv)
{
	struct hog_common c = { 0 };
	struct opt opts[] = {
		hog_opt_size(&c, "bytes to write"),
		hog_opt_fill(&c),
		opt_seed(&c.seed),
		opt_output(&c.output),
		{ .name = NULL },
	};
	struct cli cli = { .prog = "hog", .command = "hog dump", .description = description,
			   .opts = opts };
	unsigned char *chunk;
	int status, err = 0;

	if (!hog_start(&cli, argc, argv, NULL, NULL, &c, HOG_NEEDS_FILL | HOG_HAS_OUTPUT, &status))
		return status;
	if (!c.output && isatty(STDOUT_FILENO)) {
		return usage_error(&cli, "refusing to write binary data to a terminal"
				   " (redirect stdout or use --output)");
	}
	chunk = malloc(CHUNK_PAGES * c.page_size);
	if (!chunk) {
		status = runtime_error("out of memory");
		goto out;
	}
	for (uint64_t first = 0; first < c.pages && !err; first += CHUNK_PAGES) {
		uint64_t n = c.pages - first < CHUNK_PAGES ? c.pages - first : CHUNK_PAGES;

		for (uint64_t i = 0; i < n; i++)
			fill_page(&c.fill, first + i, chunk + i * c.page_size);
		err = -write_full(STDOUT_FILENO, chunk, n * c.page_size);
	}
	if (err)
		status = runtime_error("writing %s: %s", c.output ? c.output : "stdout", strerror(err));
	else
		output_complete();
out:
	free(chunk);
	return status;
}
