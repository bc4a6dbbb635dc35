/*
 * test_fileset.c - made sets: names and sizes, seeded non-zero data, reuse
 * of files with the right size, rewriting of the others, a cold start,
 * opening and removing; named sets: a missing file is reported by name.
 * Files live in $TMPDIR or /var/tmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fileset.h"

static char base[256], dir[300];

static void clean_up(void)
{
	char path[400];

	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/" FILESET_NAME_FORMAT, dir, (size_t)i);
		unlink(path);
	}
	rmdir(dir);
	rmdir(base);
}

static uint64_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? UINT64_MAX : (uint64_t)st.st_size;
}

static void read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && read(fd, buf, len) == (ssize_t)len, "read %s", path);
	close(fd);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	static char a[8192], b[8192];
	struct fileset s;
	struct residency r;

	snprintf(base, sizeof(base), "%s/test_fileset.XXXXXX", tmp);
	CHECK(mkdtemp(base) != NULL, "temporary directory %s", base);
	snprintf(dir, sizeof(dir), "%s/set", base);
	atexit(clean_up);

	CHECK(fileset_plan(&s, dir, 20480, 8192) == 0 && s.count == 3 && s.bytes == 20480,
	      "20 KiB in 8 KiB files: 3 files");
	CHECK(s.files[0].size == 8192 && s.files[2].size == 4096, "the last file is shorter");
	CHECK(strstr(s.files[1].path, "/set/flood-00001.dat") != NULL, "named %s", s.files[1].path);
	CHECK(fileset_make(&s, 5) == 0 && s.made_dir && s.created == 3 && s.reused == 0,
	      "made: directory and 3 files created");
	CHECK(size_of(s.files[0].path) == 8192 && size_of(s.files[2].path) == 4096,
	      "files have their sizes");

	read_file(s.files[0].path, a, sizeof(a));
	read_file(s.files[1].path, b, sizeof(b));
	size_t zeros = 0;

	for (size_t i = 0; i < sizeof(a); i++)
		zeros += a[i] == 0;
	CHECK(zeros < 100, "data is not zeros (%zu zero bytes of 8192)", zeros);
	CHECK(memcmp(a, b, sizeof(a)) != 0, "each file has its own data");
	fileset_free(&s);

	/* Same plan again: everything reused. Then one file has the wrong size. */
	CHECK(fileset_plan(&s, dir, 20480, 8192) == 0 && fileset_make(&s, 5) == 0 &&
	      s.created == 0 && s.reused == 3 && !s.made_dir, "a matching set is reused");
	CHECK(truncate(s.files[1].path, 100) == 0, "spoil the second file");
	fileset_free(&s);
	CHECK(fileset_plan(&s, dir, 20480, 8192) == 0 && fileset_make(&s, 5) == 0 &&
	      s.created == 1 && s.reused == 2, "only the file of the wrong size is written again");
	read_file(s.files[1].path, a, sizeof(a));
	CHECK(memcmp(a, b, sizeof(a)) == 0, "with the same data (same seed and index)");

	CHECK(fileset_open(&s) == 0 && s.bytes == 20480, "opened: 20480 bytes");
	CHECK(s.files[0].fd >= 0 && s.files[2].fd >= 0, "every file has a descriptor");
	CHECK(fileset_residency(&s, &r) == 0 && r.pages == 5 && !r.hidden,
	      "residency of the set: %llu of 5 pages", (unsigned long long)r.resident_pages);
	CHECK(pread(s.files[0].fd, a, sizeof(a), 0) == sizeof(a) &&
	      fileset_residency(&s, &r) == 0 && r.resident_pages >= 2, "reading brings pages in");
	CHECK(fileset_evict(&s) == 0, "evict the set");
	fileset_close(&s);
	fileset_close(&s);
	CHECK(s.files[0].fd == -1, "closed (twice is fine)");
	CHECK(fileset_remove(&s) == 0 && size_of(s.files[0].path) == UINT64_MAX &&
	      size_of(dir) != UINT64_MAX, "removed: the files, not the directory it found");
	fileset_free(&s);
	CHECK(rmdir(dir) == 0, "the directory was left empty");
	CHECK(fileset_plan(&s, dir, 100, 64 << 20) == 0 && fileset_make(&s, 1) == 0 &&
	      s.made_dir && s.count == 1 && fileset_remove(&s) == 0 && size_of(dir) == UINT64_MAX,
	      "a directory it made is removed with the set");
	fileset_free(&s);

	/* A named set with a missing file. */
	char missing[400];
	char *paths[] = { missing };

	snprintf(missing, sizeof(missing), "%s/nope", base);
	CHECK(fileset_of_paths(&s, paths, 1) == 0 && s.dir == NULL, "a named set");
	CHECK(fileset_open(&s) == -ENOENT && strstr(s.error, missing) &&
	      strstr(s.error, "No such file"), "a missing file is named: %s", s.error);
	CHECK(fileset_remove(&s) == 0, "removing a named set removes nothing");
	fileset_free(&s);
	return 0;
}
