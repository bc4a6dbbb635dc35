/*
 * files.c - the file cache the agent restores.
 *
 * For: remembering which pages of the regular files in a directory are in the
 * page cache when the agent starts (mmap + mincore: nothing is read), and,
 * once pressure has ended, asking the kernel to read back the remembered
 * pages that are gone (posix_fadvise POSIX_FADV_WILLNEED on each run of
 * them: asynchronous readahead into the page cache), as Superfetch refilled
 * the standby list. The pages are charged to the memory cgroup of the task
 * that reads them, so the agent joins the group first (main.c).
 * Not for: files that change size, or subdirectories.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "superfetch.h"

/* mincore of the whole file into vec (one byte a page); 0 or -errno. */
static int residency(int fd, uint64_t size, unsigned char *vec)
{
	void *map;

	if (!size)
		return 0;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	int err = mincore(map, size, vec) ? -errno : 0;

	munmap(map, size);
	return err;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int files_remember(struct file_cache *fc, const char *dir, char *err, size_t errlen)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct dirent **names;
	int n = scandir(dir, &names, NULL, by_name);

	memset(fc, 0, sizeof(*fc));
	if (n < 0) {
		snprintf(err, errlen, "--files %s: %s", dir, strerror(errno));
		return -errno;
	}
	fc->files = calloc((size_t)n + 1, sizeof(*fc->files));
	for (int i = 0; i < n; i++) {
		struct cached_file *f;
		struct stat sb;
		char *path = NULL;
		int fd;

		if (!fc->files || asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0)
			goto nomem;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
			if (fd >= 0)
				close(fd);
			free(path);
			continue;
		}
		f = &fc->files[fc->nfiles];
		f->path = path;
		f->size = (uint64_t)sb.st_size;
		f->pages = (f->size + page - 1) / page;
		f->was = calloc(f->pages + 1, 1);
		if (!f->was) {
			close(fd);
			free(path);
			goto nomem;
		}
		if (residency(fd, f->size, f->was)) {
			snprintf(err, errlen, "--files: %s: mincore: %s", path, strerror(errno));
			close(fd);
			free(f->was);
			free(path);
			for (int k = i; k < n; k++)
				free(names[k]);
			free(names);
			return -EIO;
		}
		close(fd);
		for (uint64_t p = 0; p < f->pages; p++)
			fc->cached_bytes += (f->was[p] & 1) * page;
		fc->nfiles++;
		free(names[i]);
		names[i] = NULL;
	}
	free(names);
	return 0;
nomem:
	snprintf(err, errlen, "--files %s: out of memory", dir);
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
	return -ENOMEM;
}

int files_restore(struct file_cache *fc, uint64_t chunk)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t chunk_pages = chunk / page ? chunk / page : 1;

	fc->back_bytes = 0;
	for (size_t i = 0; i < fc->nfiles; i++) {
		struct cached_file *f = &fc->files[i];
		unsigned char *now = calloc(f->pages + 1, 1);
		int fd = open(f->path, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || !now) {
			free(now);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (residency(fd, f->size, now) == 0) {
			/* runs of pages cached at start and gone now, at most `chunk` bytes each */
			for (uint64_t p = 0; p < f->pages;) {
				if (!(f->was[p] & 1) || (now[p] & 1)) {
					p++;
					continue;
				}
				uint64_t q = p;

				while (q < f->pages && q - p < chunk_pages && (f->was[q] & 1) && !(now[q] & 1))
					q++;
				posix_fadvise(fd, (off_t)(p * page), (off_t)((q - p) * page), POSIX_FADV_WILLNEED);
				fc->asked_bytes += (q - p) * page;
				p = q;
			}
			/* what of the remembered cache is there now (readahead may still be reading) */
			if (residency(fd, f->size, now) == 0)
				for (uint64_t p = 0; p < f->pages; p++)
					fc->back_bytes += ((f->was[p] & now[p]) & 1) * page;
		}
		free(now);
		close(fd);
	}
	return 0;
}

void files_free(struct file_cache *fc)
{
	for (size_t i = 0; i < fc->nfiles; i++) {
		free(fc->files[i].path);
		free(fc->files[i].was);
	}
	free(fc->files);
	memset(fc, 0, sizeof(*fc));
}
