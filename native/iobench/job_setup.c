/*
 * job_setup.c - what "iobench job" prepares before its IO loop: the file,
 * created or extended with random data when --size asks (laid out like fio's,
 * in large writes, then fsync), opened and measured, the region [offset,
 * offset + span) resolved against it; and --data-file read into memory.
 *
 * For: turning the options into an open file and a checked region, refusing a
 * file that does not fit them with a usage error. Not for: the IO (job_run.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "opts.h"
#include "rng.h"
#include "fullio.h"
#include "report.h"

#define LAYOUT_CHUNK (1 << 20)

/* Like fio's layout: extend with random data in large writes, then fsync. */
static int lay_out_file(const struct job_spec *spec, int fd, uint64_t from)
{
	char *chunk = malloc(LAYOUT_CHUNK);
	struct rng rng;
	int err = 0;

	if (!chunk)
		return runtime_error("out of memory");
	rng_seed(&rng, spec->seed ^ FILL_SEED_SALT);
	for (uint64_t at = from; at < spec->size && !err; at += LAYOUT_CHUNK) {
		uint64_t left = spec->size - at;
		size_t len = left < LAYOUT_CHUNK ? (size_t)left : LAYOUT_CHUNK;

		rng_fill(&rng, chunk, len);
		err = pwrite_full(fd, chunk, len, at);
	}
	if (!err && fsync(fd))
		err = -errno;
	free(chunk);
	if (err)
		return runtime_error("laying out %s: %s", spec->file, strerror(-err));
	return 0;
}

static int file_size_of(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	*size = (uint64_t)st.st_size;
	return 0;
}

static int open_error(struct cli *cli, const struct job_spec *spec, int err)
{
	const char *hint = "";

	if (err == ENOENT && !spec->size)
		hint = " (--size creates it)";
	else if (err == EINVAL && spec->direct)
		hint = " (does its filesystem support --direct?)";
	return usage_error(cli, "--file %s: %s%s", spec->file, strerror(err), hint);
}

/*
 * Opens the file for the job, creating or extending it first if --size asks
 * for it, and resolves the region [offset, offset + span). Returns the fd,
 * or -1 with *status set to the exit status.
 */
int open_job_file(struct cli *cli, struct job_spec *spec, int *status)
{
	if (spec->size) {
		int fd = open(spec->file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		uint64_t have = 0;
		int err;

		if (fd < 0) {
			*status = open_error(cli, spec, errno);
			return -1;
		}
		err = file_size_of(fd, &have);
		if (err)
			*status = runtime_error("%s: %s", spec->file, strerror(-err));
		else if (have < spec->size)
			*status = lay_out_file(spec, fd, have);
		else
			*status = 0;
		close(fd);
		if (*status)
			return -1;
	}

	int flags = (job_dir(spec) == IO_READ ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd = open(spec->file, flags | (spec->direct ? O_DIRECT : 0));
	int err;

	if (fd < 0) {
		*status = open_error(cli, spec, errno);
		return -1;
	}
	err = file_size_of(fd, &spec->file_size);
	if (err) {
		*status = runtime_error("%s: %s", spec->file, strerror(-err));
		goto fail;
	}

	/* --size also bounds the region, like fio's size. */
	uint64_t end = spec->size ? spec->size : spec->file_size;

	if (end == 0) {
		*status = usage_error(cli, "--file %s is empty (--size fills it)", spec->file);
		goto fail;
	}
	if (spec->offset >= end) {
		*status = usage_error(cli, "--offset %llu is not inside the %llu bytes of %s",
				      (unsigned long long)spec->offset,
				      (unsigned long long)end, spec->file);
		goto fail;
	}
	if (!spec->span)
		spec->span = end - spec->offset;
	if (spec->span > end - spec->offset) {
		*status = usage_error(cli, "--span %llu from --offset %llu goes past the %llu bytes of %s",
				      (unsigned long long)spec->span,
				      (unsigned long long)spec->offset,
				      (unsigned long long)end, spec->file);
		goto fail;
	}
	if (spec->span < spec->bs) {
		*status = usage_error(cli, "%s has fewer than --bs %llu bytes to do IO on",
				      spec->file, (unsigned long long)spec->bs);
		goto fail;
	}
	/* Start cold for buffered IO, like fio's invalidate=1. */
	if (!spec->keep_cache)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	*status = 0;
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Reads up to spec->span bytes of --data-file into aligned memory (O_DIRECT
 * writes need aligned buffers) and keeps a whole number of --bs of them.
 * Returns 0 and the buffer in *data, or the exit status.
 */
int load_data_file(struct cli *cli, struct job_spec *spec, char **data)
{
	int fd = open(spec->data_file, O_RDONLY | O_CLOEXEC);
	uint64_t have = 0, want, got = 0;
	void *buf = NULL;
	int err;

	if (fd < 0)
		return usage_error(cli, "--data-file %s: %s", spec->data_file, strerror(errno));
	err = file_size_of(fd, &have);
	if (err) {
		close(fd);
		return runtime_error("--data-file %s: %s", spec->data_file, strerror(-err));
	}
	want = have < spec->span ? have : spec->span;
	want -= want % spec->bs;
	if (want == 0) {
		close(fd);
		return usage_error(cli, "--data-file %s has fewer than --bs %llu bytes",
				   spec->data_file, (unsigned long long)spec->bs);
	}
	if (posix_memalign(&buf, DIRECT_ALIGN, want)) {
		close(fd);
		return runtime_error("cannot allocate %llu bytes for --data-file",
				     (unsigned long long)want);
	}
	while (got < want) {
		ssize_t n = pread(fd, (char *)buf + got, want - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return runtime_error("reading --data-file %s: %s", spec->data_file,
					     strerror(err));
		}
		got += (uint64_t)n;
	}
	close(fd);
	spec->data_bytes = want;
	*data = buf;
	return 0;
}
