/*
 * memlimit.c - how much anonymous memory this process can take (see memlimit.h).
 *
 * /proc/self/cgroup has one line per hierarchy, "ID:CONTROLLERS:PATH". The
 * v1 memory controller is the line whose comma-separated CONTROLLERS include
 * "memory"; its files are under <cgroup_dir>/memory/PATH. The v2 line is
 * "0::PATH", under <cgroup_dir> itself (pure v2) or <cgroup_dir>/unified
 * (hybrid). A limit set on any ancestor applies too, so every level from
 * PATH up to the root is read and the smallest limit wins.
 */
#include "memlimit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_LEN MEM_PATH_MAX

/* Reads "<key>: <n> kB" from a meminfo file; 0, or -1 if absent. */
static int meminfo_value(FILE *f, const char *key, uint64_t *bytes)
{
	char line[256];
	size_t key_len = strlen(key);

	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kib;

		if (strncmp(line, key, key_len) == 0 && line[key_len] == ':' &&
		    sscanf(line + key_len + 1, "%llu", &kib) == 1) {
			*bytes = (uint64_t)kib * 1024;
			return 0;
		}
	}
	return -1;
}

/*
 * Reads a limit file: a decimal number, or "max" (v2: no limit). Returns 1
 * with *limit set, 0 if the file is missing or says no limit, -1 if the file
 * exists but cannot be understood.
 */
static int read_limit_file(const char *path, uint64_t *limit)
{
	FILE *f = fopen(path, "r");
	char text[64];
	int found = 0;

	if (!f)
		return 0;
	if (!fgets(text, sizeof(text), f)) {
		found = -1;
	} else if (strncmp(text, "max", 3) == 0) {
		found = 0;
	} else {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(text, &end, 10);
		if (errno || end == text || (*end && *end != '\n'))
			found = -1;
		else if (v < MEM_LIMIT_NONE_FROM) {
			*limit = v;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* Applies the limits in <base><path>/<file> for path and each ancestor. */
static int walk_up(struct mem_limits *m, const char *base, const char *cgroup_path,
		   const char *file, char *why, size_t why_len)
{
	char path[LINE_MAX_LEN];
	char file_path[MEM_PATH_MAX];

	snprintf(path, sizeof(path), "%s", cgroup_path);
	for (;;) {
		size_t len = strlen(path);
		uint64_t limit;
		int found;

		while (len && path[len - 1] == '/')
			path[--len] = '\0';
		if (snprintf(file_path, sizeof(file_path), "%s%s/%s", base, path, file) >=
		    (int)sizeof(file_path)) {
			snprintf(why, why_len, "cgroup path too long: %s", cgroup_path);
			return -1;
		}
		found = read_limit_file(file_path, &limit);
		if (found < 0) {
			snprintf(why, why_len, "cannot understand %s", file_path);
			return -1;
		}
		if (found && limit < m->cgroup_limit) {
			m->cgroup_limit = limit;
			memcpy(m->cgroup_limit_file, file_path, sizeof(file_path));
		}
		if (!len)
			return 0;

		char *slash = strrchr(path, '/');

		if (!slash)
			return 0;
		*slash = '\0';
	}
}

static bool has_controller(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

static bool exists(const char *dir, const char *name)
{
	char path[LINE_MAX_LEN];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static int read_cgroup_limits(struct mem_limits *m, const char *proc_dir, const char *cgroup_dir,
			      char *why, size_t why_len)
{
	char path[LINE_MAX_LEN], base[LINE_MAX_LEN], line[LINE_MAX_LEN];
	FILE *f;
	int status = 0;

	snprintf(path, sizeof(path), "%s/self/cgroup", proc_dir);
	f = fopen(path, "r");
	if (!f)
		return 0;   /* no cgroups at all: nothing limits us */
	while (status == 0 && fgets(line, sizeof(line), f)) {
		char *controllers = strchr(line, ':');
		char *cgroup_path = controllers ? strchr(controllers + 1, ':') : NULL;

		if (!cgroup_path)
			continue;
		*controllers++ = '\0';
		*cgroup_path++ = '\0';
		cgroup_path[strcspn(cgroup_path, "\n")] = '\0';

		if (has_controller(controllers, "memory")) {
			snprintf(base, sizeof(base), "%s/memory", cgroup_dir);
			status = walk_up(m, base, cgroup_path, "memory.limit_in_bytes", why, why_len);
		} else if (strcmp(line, "0") == 0 && controllers[0] == '\0') {
			if (exists(cgroup_dir, "cgroup.controllers"))
				snprintf(base, sizeof(base), "%s", cgroup_dir);
			else
				snprintf(base, sizeof(base), "%s/unified", cgroup_dir);
			status = walk_up(m, base, cgroup_path, "memory.max", why, why_len);
		}
	}
	fclose(f);
	return status;
}

int mem_limits_read(struct mem_limits *m, const char *proc_dir, const char *cgroup_dir,
		    char *why, size_t why_len)
{
	char path[LINE_MAX_LEN];
	FILE *f;
	int missing;

	memset(m, 0, sizeof(*m));
	m->cgroup_limit = MEM_UNLIMITED;
	snprintf(path, sizeof(path), "%s/meminfo", proc_dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	missing = meminfo_value(f, "MemTotal", &m->mem_total) ||
		  meminfo_value(f, "MemAvailable", &m->mem_available);
	fclose(f);
	if (missing) {
		snprintf(why, why_len, "%s has no MemTotal or MemAvailable line", path);
		return -1;
	}
	return read_cgroup_limits(m, proc_dir, cgroup_dir, why, why_len);
}

uint64_t mem_limits_margin(const struct mem_limits *m)
{
	uint64_t share = m->mem_total / 100 * MEM_MARGIN_PERCENT;

	return share > MEM_MARGIN_MIN ? share : MEM_MARGIN_MIN;
}

uint64_t mem_limits_available_after_margin(const struct mem_limits *m)
{
	uint64_t margin = mem_limits_margin(m);

	return m->mem_available > margin ? m->mem_available - margin : 0;
}

uint64_t mem_limits_allowance(const struct mem_limits *m)
{
	uint64_t available = mem_limits_available_after_margin(m);

	return m->cgroup_limit < available ? m->cgroup_limit : available;
}

uint64_t mem_limits_cgroup_room(const struct mem_limits *m)
{
	static const char *const pairs[][2] = {
		{ "memory.limit_in_bytes", "memory.usage_in_bytes" },
		{ "memory.max", "memory.current" },
	};
	char path[MEM_PATH_MAX];
	const char *slash = strrchr(m->cgroup_limit_file, '/');
	uint64_t usage;

	if (m->cgroup_limit == MEM_UNLIMITED)
		return MEM_UNLIMITED;
	if (!slash)
		return 0;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		if (strcmp(slash + 1, pairs[i][0]))
			continue;
		if (snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - m->cgroup_limit_file),
			     m->cgroup_limit_file, pairs[i][1]) >= (int)sizeof(path) ||
		    read_limit_file(path, &usage) != 1)
			return 0;
		return usage < m->cgroup_limit ? m->cgroup_limit - usage : 0;
	}
	return 0;
}

bool mem_limits_oom_waits(const struct mem_limits *m)
{
	char path[MEM_PATH_MAX], line[LINE_MAX_LEN];
	const char *slash = strrchr(m->cgroup_limit_file, '/');
	bool waits = false;
	FILE *f;

	if (!slash || strcmp(slash + 1, "memory.limit_in_bytes"))
		return false;
	if (snprintf(path, sizeof(path), "%.*s/memory.oom_control", (int)(slash - m->cgroup_limit_file),
		     m->cgroup_limit_file) >= (int)sizeof(path))
		return false;
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strcmp(line, "oom_kill_disable 1\n") == 0)
			waits = true;
	fclose(f);
	return waits;
}
