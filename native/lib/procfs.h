/*
 * procfs.h - the /proc counters a tool reads before and after a run.
 *
 * For: system memory (/proc/meminfo: the page cache, the swap cache, free
 * memory) and this process's IO accounting (/proc/self/io: bytes it asked
 * for versus bytes that really came from storage), both readable without
 * privileges. Each has a parser that takes a FILE, so tests can feed text.
 * Not for: sampling over time, other processes, or /proc/vmstat (add it
 * here, in the same shape, when a tool needs it).
 */
#ifndef NATIVE_PROCFS_H
#define NATIVE_PROCFS_H

#include <stdint.h>
#include <stdio.h>

#define PROCFS_MISSING INT64_MIN   /* a field the kernel did not report */

/* /proc/meminfo, in bytes (the file says kB = 1024 bytes). */
struct meminfo {
	int64_t mem_total, mem_free, mem_available, buffers, cached, swap_cached,
		active_file, inactive_file, dirty, writeback, swap_total, swap_free;
};

/* One field of a /proc file: its name there, a JSON-friendly key, where it goes. */
struct procfs_field {
	const char *name;      /* "Cached", "Active(file)" */
	const char *key;       /* "cached", "active_file" */
	size_t offset;         /* of the int64_t in the struct */
};

/* The fields of struct meminfo and struct proc_io; each ends with name == NULL. */
extern const struct procfs_field meminfo_fields[];
extern const struct procfs_field proc_io_fields[];

/* The value of field f in a struct meminfo or struct proc_io. */
int64_t procfs_get(const void *counters, const struct procfs_field *f);

/* Parses the text; fields not found are PROCFS_MISSING. 0, or -1 if none found. */
int meminfo_parse(FILE *in, struct meminfo *m);

/* Reads /proc/meminfo; 0 or -errno (every field is then PROCFS_MISSING). */
int meminfo_read(struct meminfo *m);

/* Hugepagesize from /proc/meminfo in bytes (the default size of MAP_HUGETLB mappings), or
 * PROCFS_MISSING when the kernel reports none (no hugetlbfs) or the file cannot be read. */
int64_t meminfo_huge_page_size(void);

/* /proc/self/io (needs CONFIG_TASK_IO_ACCOUNTING). */
struct proc_io {
	int64_t rchar;        /* bytes read(2) and friends returned, cached or not */
	int64_t wchar;
	int64_t syscr, syscw; /* read and write system calls */
	int64_t read_bytes;   /* bytes this process caused to be read from storage */
	int64_t write_bytes;
	int64_t cancelled_write_bytes;
};

int proc_io_parse(FILE *in, struct proc_io *io);
int proc_io_read(struct proc_io *io);   /* 0 or -errno, like meminfo_read */

#endif
