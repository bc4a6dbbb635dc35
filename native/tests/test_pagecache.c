/*
 * test_pagecache.c - residency (cachestat, checked against mmap + mincore) on real files: a file
 * just written is resident, dropped with POSIX_FADV_DONTNEED it is not,
 * reading part of it brings back that part; empty and sparse files, a file
 * larger than one mapping window, sizes, and what is not a file.
 * Files live in $TMPDIR or /var/tmp; on tmpfs (where nothing can be dropped)
 * the eviction checks are skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "check.h"
#include "pagecache.h"

static char dir[256], path[300];

static void clean_up(void)
{
	unlink(path);
	rmdir(dir);
}

static int write_file(uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char buf[65536];

	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t at = 0; fd >= 0 && at < size; at += sizeof(buf)) {
		size_t len = size - at < sizeof(buf) ? (size_t)(size - at) : sizeof(buf);

		if (write(fd, buf, len) != (ssize_t)len)
			return -1;
	}
	if (fd >= 0 && fsync(fd))
		return -1;
	return fd;
}

static struct residency measure(int fd)
{
	struct residency r;
	uint64_t size = 0;

	int err = pagecache_size_of(fd, &size);

	CHECK(err == 0, "size of the file: %llu", (unsigned long long)size);
	err = pagecache_residency(fd, size, &r);
	CHECK(err == 0 && !r.hidden, "residency measured: %llu of %llu pages resident",
	      (unsigned long long)r.resident_pages, (unsigned long long)r.pages);
	/* cachestat (where the kernel has it) and mincore must tell the same story */
	struct residency m;

	err = pagecache_residency_mincore(fd, size, &m);
	CHECK(err == 0 && m.pages == r.pages && m.resident_pages == r.resident_pages,
	      "mincore agrees: %llu of %llu pages resident", (unsigned long long)m.resident_pages,
	      (unsigned long long)m.pages);
	return r;
}

int main(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	uint64_t page = pagecache_page_size();
	const uint64_t size = 256 * page + 100;   /* a partial last page */
	struct residency r;
	struct statfs fs;
	char half[65536];
	int fd;

	snprintf(dir, sizeof(dir), "%s/test_pagecache.XXXXXX", base);
	CHECK(mkdtemp(dir) != NULL, "temporary directory %s", dir);
	snprintf(path, sizeof(path), "%s/data", dir);
	atexit(clean_up);
	bool can_drop = statfs(dir, &fs) == 0 && fs.f_type != TMPFS_MAGIC;

	fd = write_file(size);
	CHECK(fd >= 0, "wrote %llu bytes", (unsigned long long)size);
	r = measure(fd);
	CHECK(r.size == size && r.pages == 257, "257 pages in all (the last one partial)");
	CHECK(r.resident_pages == 257 && residency_percent(&r) == 100.0,
	      "a file just written is resident: %llu pages", (unsigned long long)r.resident_pages);

	if (can_drop) {
		CHECK(pagecache_evict(fd) == 0, "POSIX_FADV_DONTNEED");
		r = measure(fd);
		CHECK(r.resident_pages == 0, "dropped: %llu pages resident",
		      (unsigned long long)r.resident_pages);

		/* No readahead, so exactly what is read comes in. */
		posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
		uint64_t got = 0;

		for (uint64_t at = 0; at < 128 * page; at += sizeof(half))
			got += (uint64_t)pread(fd, half, sizeof(half), (off_t)at);
		CHECK(got == 128 * page, "read the first half: %llu bytes", (unsigned long long)got);
		r = measure(fd);
		CHECK(r.resident_pages >= 128 && r.resident_pages < 257,
		      "the half that was read is resident: %llu of 257 pages",
		      (unsigned long long)r.resident_pages);
	} else {
		CHECK(true, "%s is tmpfs: eviction checks skipped", dir);
	}
	close(fd);

	fd = write_file(0);
	r = measure(fd);
	CHECK(r.pages == 0 && r.resident_pages == 0 && residency_percent(&r) == 0.0,
	      "an empty file has no pages and 0 %%");
	close(fd);

	/* Sparse, past one mapping window: only the last page has data, cached. */
	fd = open(path, O_RDWR | O_TRUNC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)(PAGECACHE_WINDOW + 2 * page)) == 0,
	      "sparse file of one window and two pages");
	CHECK(pwrite(fd, "x", 1, (off_t)(PAGECACHE_WINDOW + page)) == 1, "one byte in the last page");
	r = measure(fd);
	CHECK(r.pages == PAGECACHE_WINDOW / page + 2, "pages across two windows: %llu",
	      (unsigned long long)r.pages);
	CHECK(r.resident_pages >= 1 && r.resident_pages <= 2, "only the written page is resident: %llu",
	      (unsigned long long)r.resident_pages);
	close(fd);

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	uint64_t size_of_dir;

	CHECK(fd >= 0 && pagecache_size_of(fd, &size_of_dir) == -EINVAL,
	      "a directory is neither a file nor a block device");
	close(fd);
	return 0;
}
