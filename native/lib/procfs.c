/*
 * procfs.c - /proc/meminfo and /proc/self/io readers (see procfs.h).
 */
#include "procfs.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define FIELD(type, name, member) { name, #member, offsetof(type, member) }

const struct procfs_field meminfo_fields[] = {
	FIELD(struct meminfo, "MemTotal", mem_total),
	FIELD(struct meminfo, "MemFree", mem_free),
	FIELD(struct meminfo, "MemAvailable", mem_available),
	FIELD(struct meminfo, "Buffers", buffers),
	FIELD(struct meminfo, "Cached", cached),
	FIELD(struct meminfo, "SwapCached", swap_cached),
	FIELD(struct meminfo, "Active(file)", active_file),
	FIELD(struct meminfo, "Inactive(file)", inactive_file),
	FIELD(struct meminfo, "Dirty", dirty),
	FIELD(struct meminfo, "Writeback", writeback),
	FIELD(struct meminfo, "SwapTotal", swap_total),
	FIELD(struct meminfo, "SwapFree", swap_free),
	{ NULL, NULL, 0 },
};

const struct procfs_field proc_io_fields[] = {
	FIELD(struct proc_io, "rchar", rchar),
	FIELD(struct proc_io, "wchar", wchar),
	FIELD(struct proc_io, "syscr", syscr),
	FIELD(struct proc_io, "syscw", syscw),
	FIELD(struct proc_io, "read_bytes", read_bytes),
	FIELD(struct proc_io, "write_bytes", write_bytes),
	FIELD(struct proc_io, "cancelled_write_bytes", cancelled_write_bytes),
	{ NULL, NULL, 0 },
};

int64_t procfs_get(const void *counters, const struct procfs_field *f)
{
	return *(const int64_t *)((const char *)counters + f->offset);
}

static int64_t *slot(void *counters, const struct procfs_field *f)
{
	return (int64_t *)((char *)counters + f->offset);
}

/*
 * "Name:   1234 kB" (meminfo) or "name: 1234" (io) -> name and value, kB
 * turned into bytes; 0, or -1 if the line is not like that.
 */
static int split_line(char *line, const char **name, int64_t *value)
{
	char *colon = strchr(line, ':');
	char unit[8] = "";
	long long v;
	int n;

	if (!colon)
		return -1;
	*colon = '\0';
	n = sscanf(colon + 1, "%lld %7s", &v, unit);
	if (n < 1 || v < 0)
		return -1;
	if (n == 2 && (strcmp(unit, "kB") != 0 || v > INT64_MAX / 1024))
		return -1;
	*name = line;
	*value = n == 2 ? v * 1024 : v;
	return 0;
}

/* Fills the table's fields from in; the others become PROCFS_MISSING. */
static int parse_fields(FILE *in, const struct procfs_field *fields, void *counters)
{
	char line[256];
	int found = 0;

	for (const struct procfs_field *f = fields; f->name; f++)
		*slot(counters, f) = PROCFS_MISSING;
	while (fgets(line, sizeof(line), in)) {
		const char *name;
		int64_t value;

		if (split_line(line, &name, &value))
			continue;
		for (const struct procfs_field *f = fields; f->name; f++) {
			if (strcmp(f->name, name) == 0) {
				*slot(counters, f) = value;
				found++;
				break;
			}
		}
	}
	return found ? 0 : -1;
}

static int read_fields(const char *path, const struct procfs_field *fields, void *counters)
{
	FILE *in = fopen(path, "re");
	int err;

	if (!in) {
		err = -errno;
		for (const struct procfs_field *f = fields; f->name; f++)
			*slot(counters, f) = PROCFS_MISSING;
		return err;
	}
	err = parse_fields(in, fields, counters) ? -EINVAL : 0;
	fclose(in);
	return err;
}

int meminfo_parse(FILE *in, struct meminfo *m)
{
	return parse_fields(in, meminfo_fields, m);
}

int64_t meminfo_huge_page_size(void)
{
	static const struct procfs_field field[] = {
		{ "Hugepagesize", "huge_page_size", 0 },
		{ NULL, NULL, 0 },
	};
	int64_t size;

	read_fields("/proc/meminfo", field, &size);
	return size;
}

int meminfo_read(struct meminfo *m)
{
	return read_fields("/proc/meminfo", meminfo_fields, m);
}

int proc_io_parse(FILE *in, struct proc_io *io)
{
	return parse_fields(in, proc_io_fields, io);
}

int proc_io_read(struct proc_io *io)
{
	return read_fields("/proc/self/io", proc_io_fields, io);
}
