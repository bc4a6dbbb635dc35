/*
 * test_procfs.c - /proc/meminfo and /proc/self/io parsing from known text
 * (kB into bytes, missing fields, junk lines), then the real files.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "procfs.h"

static FILE *text(const char *s)
{
	return fmemopen((void *)s, strlen(s), "r");
}

int main(void)
{
	struct meminfo m;
	struct proc_io io, io2;
	FILE *in;

	in = text("MemTotal:       24576000 kB\n"
		  "MemFree:        100 kB\n"
		  "Cached:          2048 kB\n"
		  "junk line without colon\n"
		  "SwapCached:  x kB\n"
		  "Active(file):  12 kB\n"
		  "Dirty:          5 MB\n"
		  "HugePages_Total:       0\n");
	CHECK(meminfo_parse(in, &m) == 0, "meminfo text parses");
	fclose(in);
	CHECK(m.mem_total == 24576000LL * 1024, "MemTotal in bytes");
	CHECK(m.mem_free == 100 * 1024 && m.cached == 2048 * 1024, "MemFree and Cached in bytes");
	CHECK(m.active_file == 12 * 1024, "Active(file) (a name with parentheses)");
	CHECK(m.swap_cached == PROCFS_MISSING, "a bad value reads as missing");
	CHECK(m.dirty == PROCFS_MISSING, "an unknown unit reads as missing");
	CHECK(m.swap_total == PROCFS_MISSING, "an absent field reads as missing");

	for (const struct procfs_field *f = meminfo_fields; f->name; f++)
		if (strcmp(f->name, "Cached") == 0)
			CHECK(procfs_get(&m, f) == 2048 * 1024 && strcmp(f->key, "cached") == 0,
			      "the field table reaches Cached by name and key");

	in = text("nothing here\n");
	CHECK(meminfo_parse(in, &m) == -1, "text without any field is an error");
	fclose(in);

	in = text("rchar: 1000\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n"
		  "write_bytes: 0\ncancelled_write_bytes: 0\n");
	CHECK(proc_io_parse(in, &io) == 0 && io.rchar == 1000 && io.read_bytes == 4096 &&
	      io.syscw == 4 && io.cancelled_write_bytes == 0, "/proc/self/io text parses");
	fclose(in);

	int err = meminfo_read(&m);

	CHECK(err == 0 && m.mem_total > 0 && m.cached >= 0 && m.mem_free > 0,
	      "the real /proc/meminfo: MemTotal %lld, Cached %lld", (long long)m.mem_total,
	      (long long)m.cached);

	{
		char all[16384] = "";
		FILE *mi = fopen("/proc/meminfo", "re");
		size_t got = mi ? fread(all, 1, sizeof(all) - 1, mi) : 0;
		int64_t huge = meminfo_huge_page_size();

		if (mi)
			fclose(mi);
		all[got] = '\0';
		if (strstr(all, "Hugepagesize:"))
			CHECK(huge >= 4096 && (huge & (huge - 1)) == 0,
			      "Hugepagesize is a power of two of at least 4 KiB: %lld", (long long)huge);
		else
			CHECK(huge == PROCFS_MISSING, "no Hugepagesize line reads as missing");
	}

	if (proc_io_read(&io) == 0) {
		char buf[4096];
		int fd = open("/proc/self/stat", O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (fd >= 0)
			close(fd);
		CHECK(n > 0 && proc_io_read(&io2) == 0 && io2.rchar >= io.rchar + n,
		      "rchar counts a read of %zd bytes", n);
	} else {
		CHECK(true, "no /proc/self/io here (CONFIG_TASK_IO_ACCOUNTING off): skipped");
	}
	return 0;
}
