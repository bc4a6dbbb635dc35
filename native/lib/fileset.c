/*
 * fileset.c - sets of files for streaming reads (see fileset.h).
 */
#include "fileset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rng.h"
#include "fullio.h"

#define FILL_CHUNK (1 << 20)
#define FILL_SEED_SALT 0x666c6f6f64736574ULL   /* "floodset" */

__attribute__((format(printf, 3, 4)))
static int fail(struct fileset *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	return err < 0 ? err : -err;
}

static int allocate_files(struct fileset *s, size_t count)
{
	*s = (struct fileset){ 0 };
	s->files = calloc(count ? count : 1, sizeof(*s->files));
	if (!s->files)
		return fail(s, ENOMEM, "out of memory for %zu files", count);
	s->count = count;
	for (size_t i = 0; i < count; i++)
		s->files[i].fd = -1;
	return 0;
}

int fileset_of_paths(struct fileset *s, char *const *paths, size_t count)
{
	int err = allocate_files(s, count);

	for (size_t i = 0; i < count && !err; i++) {
		s->files[i].path = strdup(paths[i]);
		if (!s->files[i].path)
			err = fail(s, ENOMEM, "out of memory");
	}
	return err;
}

int fileset_plan(struct fileset *s, const char *dir, uint64_t set_size, uint64_t file_size)
{
	uint64_t count = set_size / file_size + (set_size % file_size != 0);
	int err;

	if (count > SIZE_MAX / sizeof(struct fileset_file)) {
		*s = (struct fileset){ 0 };
		return fail(s, E2BIG, "a set of %llu files is too many",
			    (unsigned long long)count);
	}
	err = allocate_files(s, (size_t)count);
	if (!err && !(s->dir = strdup(dir)))
		err = fail(s, ENOMEM, "out of memory");
	for (size_t i = 0; i < s->count && !err; i++) {
		uint64_t at = (uint64_t)i * file_size;

		s->files[i].size = set_size - at < file_size ? set_size - at : file_size;
		if (asprintf(&s->files[i].path, "%s/" FILESET_NAME_FORMAT, dir, i) < 0) {
			s->files[i].path = NULL;
			err = fail(s, ENOMEM, "out of memory");
		}
	}
	s->bytes = set_size;
	return err;
}

/* Writes f->size bytes of the index's data stream, syncs, and drops it from the cache. */
static int write_file(struct fileset *s, struct fileset_file *f, size_t index,
		      uint64_t seed, char *chunk)
{
	int fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct rng rng;
	int err = 0;

	if (fd < 0)
		return fail(s, errno, "%s: %s", f->path, strerror(errno));
	rng_seed(&rng, (seed ^ FILL_SEED_SALT) + index);
	for (uint64_t at = 0; at < f->size && !err; at += FILL_CHUNK) {
		size_t len = f->size - at < FILL_CHUNK ? (size_t)(f->size - at) : FILL_CHUNK;

		rng_fill(&rng, chunk, len);
		err = write_full(fd, chunk, len);
	}
	if (!err && fsync(fd))
		err = -errno;
	if (!err)
		err = pagecache_evict(fd);
	if (close(fd) && !err)
		err = -errno;
	if (err)
		return fail(s, err, "writing %s: %s", f->path, strerror(-err));
	f->created = true;
	return 0;
}

int fileset_make(struct fileset *s, uint64_t seed)
{
	char *chunk = NULL;
	int err = 0;

	if (mkdir(s->dir, 0755) == 0)
		s->made_dir = true;
	else if (errno != EEXIST)
		return fail(s, errno, "cannot create %s: %s", s->dir, strerror(errno));
	s->created = s->reused = 0;
	for (size_t i = 0; i < s->count && !err; i++) {
		struct fileset_file *f = &s->files[i];
		struct stat st;

		if (lstat(f->path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == f->size) {
			s->reused++;
			continue;
		}
		if (!chunk && !(chunk = malloc(FILL_CHUNK))) {
			err = fail(s, ENOMEM, "out of memory");
			break;
		}
		err = write_file(s, f, i, seed, chunk);
		if (!err)
			s->created++;
	}
	free(chunk);
	return err;
}

/* Makes room for count more descriptors than are open now, if the hard limit allows. */
static int ensure_descriptors(struct fileset *s, size_t count)
{
	struct rlimit lim;
	rlim_t want = (rlim_t)count + 64;   /* stdio, the report, the caller's own */

	if (getrlimit(RLIMIT_NOFILE, &lim))
		return fail(s, errno, "getrlimit: %s", strerror(errno));
	if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
		if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want)
			return fail(s, EMFILE, "a set of %zu files needs %llu descriptors, but "
				    "the hard limit (ulimit -Hn) is %llu", count,
				    (unsigned long long)want, (unsigned long long)lim.rlim_max);
		lim.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &lim))
			return fail(s, errno, "setrlimit: %s", strerror(errno));
	}
	return 0;
}

int fileset_open(struct fileset *s)
{
	int err = ensure_descriptors(s, s->count);

	s->bytes = 0;
	for (size_t i = 0; i < s->count && !err; i++) {
		struct fileset_file *f = &s->files[i];
		struct stat st;

		/* Checked before opening too: opening a FIFO would block. */
		if (stat(f->path, &st))
			return fail(s, errno, "%s: %s", f->path, strerror(errno));
		if (S_ISDIR(st.st_mode))
			return fail(s, EISDIR, "%s: is a directory", f->path);
		if (!S_ISREG(st.st_mode))
			return fail(s, EINVAL, "%s: not a regular file", f->path);
		f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0)
			return fail(s, errno, "%s: %s", f->path, strerror(errno));
		if (fstat(f->fd, &st))
			return fail(s, errno, "%s: %s", f->path, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return fail(s, EINVAL, "%s: not a regular file", f->path);
		f->size = (uint64_t)st.st_size;
		s->bytes += f->size;
	}
	return err;
}

int fileset_residency(struct fileset *s, struct residency *total)
{
	*total = (struct residency){ 0 };
	for (size_t i = 0; i < s->count; i++) {
		struct residency r;
		int err = pagecache_residency(s->files[i].fd, s->files[i].size, &r);

		if (err)
			return fail(s, err, "measuring %s: %s", s->files[i].path, strerror(-err));
		total->size += r.size;
		total->pages += r.pages;
		total->resident_pages += r.resident_pages;
		total->hidden |= r.hidden;
	}
	return 0;
}

int fileset_evict(struct fileset *s)
{
	for (size_t i = 0; i < s->count; i++) {
		int err = pagecache_evict(s->files[i].fd);

		if (err)
			return fail(s, err, "evicting %s: %s", s->files[i].path, strerror(-err));
	}
	return 0;
}

void fileset_close(struct fileset *s)
{
	for (size_t i = 0; i < s->count; i++) {
		if (s->files[i].fd >= 0)
			close(s->files[i].fd);
		s->files[i].fd = -1;
	}
}

int fileset_remove(struct fileset *s)
{
	int err = 0;

	if (!s->dir)
		return 0;
	for (size_t i = 0; i < s->count; i++) {
		if (unlink(s->files[i].path) && errno != ENOENT && !err)
			err = fail(s, errno, "removing %s: %s", s->files[i].path, strerror(errno));
	}
	if (s->made_dir && rmdir(s->dir) && !err)
		err = fail(s, errno, "removing %s: %s", s->dir, strerror(errno));
	return err;
}

void fileset_free(struct fileset *s)
{
	fileset_close(s);
	for (size_t i = 0; i < s->count; i++)
		free(s->files[i].path);
	free(s->files);
	free(s->dir);
	*s = (struct fileset){ 0 };
}
