/*
 * main.c - residency: how much of each file is in the page cache.
 *
 * For: the command line, walking the named files (and directories with -r),
 * and printing per-file and total residency as JSON or a table, like
 * fincore(1) or `vmtouch -v`. The measuring itself is lib/pagecache
 * (mmap + mincore: it never reads the files, so it does not change what it
 * measures).
 * Not for: changing residency (use posix_fadvise, or cacheflood), following
 * symbolic links inside directories, or the swap cache.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"
#include "json.h"
#include "operands.h"
#include "opts.h"
#include "pagecache.h"

#define RESIDENCY_VERSION "residency-0.1.0"


static const char description[] =
	"Reports how much of each FILE is in the page cache, like fincore(1): each file\n"
	"is mapped and mincore(2) says which of its pages are resident, so measuring\n"
	"reads nothing and changes nothing. Per file and in total: pages resident and in\n"
	"all (base pages of the size given as page_size), resident bytes (resident pages\n"
	"x page size, as fincore counts them), size in bytes, and percent (0 for an empty\n"
	"file). Block devices named on the command line are measured too.\n"
	"A directory is an error unless --recursive (-r): then every regular file under\n"
	"it is measured, in name order; symbolic links and special files found there\n"
	"are skipped (and counted as such), named ones are followed.\n"
	"Only a file's owner, a user who may write it, or root may see its page-cache\n"
	"residency (a kernel rule: mincore tells anyone else that every page is\n"
	"resident); such a file is reported as an error, not with a made-up number.\n"
	"Exit status: 0 every file measured; 1 some could not be (each is named on\n"
	"stderr and under \"errors\", and the others are still reported); 2 usage error.";

struct error_entry {
	char *file;
	char *reason;
};

struct run {
	int format;                 /* enum output_format */
	bool recursive;
	struct json json;
	uint64_t page_size;
	uint64_t files, skipped;
	struct residency total;
	struct error_entry *errors;
	size_t nerrors;
	bool out_of_memory;
};

static char *join_path(const char *dir, const char *name)
{
	char *path;
	size_t len = strlen(dir);

	if (asprintf(&path, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return path;
}

/* Names the file and the reason on stderr and keeps them for the JSON "errors". */
__attribute__((format(printf, 3, 4)))
static void file_error(struct run *run, const char *file, const char *fmt, ...)
{
	struct error_entry *grown, *e;
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	fprintf(stderr, "residency: %s: %s\n", file, reason);
	grown = realloc(run->errors, (run->nerrors + 1) * sizeof(*run->errors));
	if (!grown) {
		run->out_of_memory = true;   /* the exit status still says 1 */
		return;
	}
	run->errors = grown;
	e = &run->errors[run->nerrors++];
	e->file = strdup(file);
	e->reason = strdup(reason);
	if (!e->file || !e->reason)
		run->out_of_memory = true;
}

static void emit_file(struct run *run, const char *path, const struct residency *r)
{
	if (run->format == OUTPUT_JSON) {
		json_object_begin(&run->json);
		json_kv_string(&run->json, "file", path);
		json_kv_uint(&run->json, "size", r->size);
		json_kv_uint(&run->json, "pages", r->pages);
		json_kv_uint(&run->json, "resident_pages", r->resident_pages);
		json_kv_uint(&run->json, "resident_bytes", r->resident_pages * run->page_size);
		json_kv_double(&run->json, "percent", residency_percent(r));
		json_object_end(&run->json);
	} else {
		printf("%12" PRIu64 " %12" PRIu64 " %15" PRIu64 " %15" PRIu64 " %7.1f %%  %s\n",
		       r->resident_pages, r->pages, r->resident_pages * run->page_size, r->size,
		       residency_percent(r), path);
	}
	run->files++;
	run->total.size += r->size;
	run->total.pages += r->pages;
	run->total.resident_pages += r->resident_pages;
}

static void measure_file(struct run *run, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct residency r;
	uint64_t size;
	int err;

	if (fd < 0) {
		file_error(run, path, "%s", strerror(errno));
		return;
	}
	err = pagecache_size_of(fd, &size);
	if (!err)
		err = pagecache_residency(fd, size, &r);
	close(fd);
	if (!err && r.hidden)
		file_error(run, path, "the kernel hides its page-cache residency from this user "
			   "(only the owner, a user who may write it, or root may see it)");
	else if (err == -EINVAL)
		file_error(run, path, "not a regular file or block device");
	else if (err)
		file_error(run, path, "%s", strerror(-err));
	else
		emit_file(run, path, &r);
}

static int skip_dots(const struct dirent *entry)
{
	return strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
}

/* Every regular file under dir, in name order; links and special files are skipped. */
static void measure_tree(struct run *run, const char *dir)
{
	struct dirent **entries;
	int n = scandir(dir, &entries, skip_dots, alphasort);

	if (n < 0) {
		file_error(run, dir, "%s", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		char *path = join_path(dir, entries[i]->d_name);
		struct stat st;

		free(entries[i]);
		if (!path) {
			file_error(run, dir, "out of memory");
			continue;
		}
		if (lstat(path, &st))
			file_error(run, path, "%s", strerror(errno));
		else if (S_ISDIR(st.st_mode))
			measure_tree(run, path);
		else if (S_ISREG(st.st_mode))
			measure_file(run, path);
		else
			run->skipped++;
		free(path);
	}
	free(entries);
}

static void measure_operand(struct run *run, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		file_error(run, path, "%s", strerror(errno));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (run->recursive)
			measure_tree(run, path);
		else
			file_error(run, path, "is a directory (-r measures the files under it)");
		return;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		file_error(run, path, "not a regular file or block device");
		return;
	}
	measure_file(run, path);
}

static void report_total_json(struct run *run)
{
	struct json *j = &run->json;

	json_kv_object_begin(j, "total");
	json_kv_uint(j, "files", run->files);
	json_kv_uint(j, "skipped", run->skipped);
	json_kv_uint(j, "size", run->total.size);
	json_kv_uint(j, "pages", run->total.pages);
	json_kv_uint(j, "resident_pages", run->total.resident_pages);
	json_kv_uint(j, "resident_bytes", run->total.resident_pages * run->page_size);
	json_kv_double(j, "percent", residency_percent(&run->total));
	json_object_end(j);
	json_kv_array_begin(j, "errors");
	for (size_t i = 0; i < run->nerrors; i++) {
		json_object_begin(j);
		json_kv_string(j, "file", run->errors[i].file ? run->errors[i].file : "?");
		json_kv_string(j, "error", run->errors[i].reason ? run->errors[i].reason : "?");
		json_object_end(j);
	}
	json_array_end(j);
}

static int measure_all(struct run *run, char **files, int count)
{
	if (run->format == OUTPUT_JSON) {
		json_init(&run->json, stdout, true);
		json_object_begin(&run->json);
		json_kv_string(&run->json, "version", RESIDENCY_VERSION);
		json_kv_uint(&run->json, "page_size", run->page_size);
		json_kv_array_begin(&run->json, "files");
	} else {
		printf("%12s %12s %15s %15s %9s  %s\n", "RES_PAGES", "PAGES", "RES_BYTES",
		       "SIZE", "PERCENT", "FILE");
	}
	for (int i = 0; i < count; i++)
		measure_operand(run, files[i]);
	if (run->format == OUTPUT_JSON) {
		json_array_end(&run->json);
		report_total_json(run);
		json_object_end(&run->json);
		if (json_finish(&run->json)) {
			fprintf(stderr, "residency: writing the report: %s\n", strerror(errno));
			return 1;
		}
		output_complete();
	} else {
		printf("%12" PRIu64 " %12" PRIu64 " %15" PRIu64 " %15" PRIu64 " %7.1f %%  total: "
		       "%" PRIu64 " files, %" PRIu64 " skipped, %zu errors\n",
		       run->total.resident_pages, run->total.pages,
		       run->total.resident_pages * run->page_size, run->total.size,
		       residency_percent(&run->total), run->files, run->skipped, run->nerrors);
		if (fflush(stdout) || ferror(stdout)) {
			fprintf(stderr, "residency: writing the report: %s\n", strerror(errno));
			return 1;
		}
		output_complete();
	}
	return run->nerrors || run->out_of_memory ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct short_alias aliases[] = {
		{ "-r", "--recursive" }, { NULL, NULL },
	};
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		puts(RESIDENCY_VERSION);
		return 0;
	}
	struct run run = { .page_size = pagecache_page_size() };
	const char *output = NULL;
	struct opt opts[] = {
		{ .name = "recursive", .kind = OPT_FLAG, .dest = &run.recursive,
		  .help = "(-r) measure every regular file under a directory" },
		opt_output_format(&run.format),
		opt_output(&output),
		{ .name = NULL },
	};
	struct cli cli = {
		.prog = "residency", .command = "residency", .operands = "FILE...",
		.description = description, .opts = opts,
	};
	struct operands ops;
	int status;

	if (operands_split(&cli, aliases, argc, argv, &ops))
		return runtime_error("out of memory");
	status = opts_parse_status(&cli, ops.argc, ops.argv);
	if (status == OPTS_GO_ON) {
		if (ops.count == 0)
			status = usage_error(&cli, "no files given");
		else
			status = output_begin(&cli, output);
		if (!status)
			status = measure_all(&run, ops.words, ops.count);
	}
	for (size_t i = 0; i < run.nerrors; i++) {
		free(run.errors[i].file);
		free(run.errors[i].reason);
	}
	free(run.errors);
	operands_free(&ops);
	return output_finish(status);
}
