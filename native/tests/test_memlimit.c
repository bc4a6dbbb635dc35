/*
 * test_memlimit.c - memory limits read from fake /proc and /sys/fs/cgroup
 * trees: cgroup v1, v2, hybrid, a tighter ancestor, "no limit" spellings,
 * missing files, the margin and the allowance.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "memlimit.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static char root[256];

/* Writes text to root/relative, creating the directories on the way. */
static void put(const char *relative, const char *fmt, ...)
{
	char path[1024];
	va_list ap;

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(path, 0755) && errno != EEXIST) {
				perror(path);
				exit(1);
			}
			*p = '/';
		}
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void wipe(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

static void fresh_tree(const char *cgroup_lines)
{
	wipe();
	if (mkdir(root, 0755)) {
		perror(root);
		exit(1);
	}
	put("proc/meminfo", "MemTotal:       24684084 kB\nMemFree:        100 kB\n"
	    "MemAvailable:   24243396 kB\nBuffers:  0 kB\n");
	put("proc/self/cgroup", "%s", cgroup_lines);
}

static int read_limits(struct mem_limits *m, char *why, size_t len)
{
	char proc[300], cgroup[300];

	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(cgroup, sizeof(cgroup), "%s/cg", root);
	return mem_limits_read(m, proc, cgroup, why, len);
}

int main(void)
{
	struct mem_limits m;
	char why[600] = "";

	snprintf(root, sizeof(root), "/tmp/test_memlimit.%d", (int)getpid());

	fresh_tree("4:memory:/a/b\n0::/\n");
	CHECK(read_limits(&m, why, sizeof(why)) == 0, "no cgroup files: read ok (%s)", why);
	CHECK(m.mem_total == 24684084ULL * 1024 && m.mem_available == 24243396ULL * 1024,
	      "MemTotal and MemAvailable in bytes");
	CHECK(m.cgroup_limit == MEM_UNLIMITED && m.cgroup_limit_file[0] == '\0',
	      "no limit files: unlimited");
	CHECK(mem_limits_margin(&m) == 24684084ULL * 1024 / 100 * 5, "margin is 5 %% of MemTotal");
	CHECK(mem_limits_allowance(&m) == m.mem_available - mem_limits_margin(&m),
	      "allowance is MemAvailable less the margin");
	CHECK(mem_limits_cgroup_room(&m) == MEM_UNLIMITED, "no limit: unlimited room");

	fresh_tree("9:name=systemd:/\n4:memory:/a/b\n0::/\n");
	put("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("cg/memory/a/memory.limit_in_bytes", "%llu\n", 2 * GiB);
	put("cg/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
	CHECK(read_limits(&m, why, sizeof(why)) == 0, "v1 tree read");
	CHECK(m.cgroup_limit == 2 * GiB, "v1: the ancestor's 2 GiB limit applies");
	CHECK(strstr(m.cgroup_limit_file, "/cg/memory/a/memory.limit_in_bytes") != NULL,
	      "v1: names the file that set it: %s", m.cgroup_limit_file);
	CHECK(mem_limits_allowance(&m) == 2 * GiB, "allowance is the cgroup limit when smaller");
	CHECK(mem_limits_cgroup_room(&m) == 0, "v1: usage unreadable: no room claimed");
	put("cg/memory/a/memory.usage_in_bytes", "%llu\n", 1536 * MiB);
	CHECK(mem_limits_cgroup_room(&m) == 512 * MiB,
	      "v1: room is the limit less usage_in_bytes of the limiting cgroup");
	put("cg/memory/a/memory.usage_in_bytes", "%llu\n", 3 * GiB);
	CHECK(mem_limits_cgroup_room(&m) == 0, "v1: usage over the limit: no room");
	CHECK(!mem_limits_oom_waits(&m), "v1: no memory.oom_control: the OOM killer is on");
	put("cg/memory/a/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	CHECK(!mem_limits_oom_waits(&m), "v1: oom_kill_disable 0: the OOM killer is on");
	put("cg/memory/a/memory.oom_control", "oom_kill_disable 1\nunder_oom 1\noom_kill 0\n");
	CHECK(mem_limits_oom_waits(&m), "v1: oom_kill_disable 1 beside the limit: tasks wait");

	fresh_tree("5:cpu,memory:/x\n");
	put("cg/memory/x/memory.limit_in_bytes", "%llu\n", 512 * MiB);
	CHECK(read_limits(&m, why, sizeof(why)) == 0 && m.cgroup_limit == 512 * MiB,
	      "v1: memory co-mounted with cpu is found");

	fresh_tree("5:memory_extra:/x\n");
	put("cg/memory/x/memory.limit_in_bytes", "%llu\n", 512 * MiB);
	CHECK(read_limits(&m, why, sizeof(why)) == 0 && m.cgroup_limit == MEM_UNLIMITED,
	      "v1: a controller merely starting with 'memory' is not memory");

	fresh_tree("0::/user.slice/job\n");
	put("cg/cgroup.controllers", "cpu memory\n");
	put("cg/user.slice/memory.max", "max\n");
	put("cg/user.slice/job/memory.max", "%llu\n", 300 * MiB);
	CHECK(read_limits(&m, why, sizeof(why)) == 0 && m.cgroup_limit == 300 * MiB,
	      "v2: memory.max of the process's cgroup");
	put("cg/user.slice/job/memory.current", "%llu\n", 100 * MiB);
	CHECK(mem_limits_cgroup_room(&m) == 200 * MiB, "v2: room is memory.max less memory.current");

	fresh_tree("0::/job/\n");
	put("cg/unified/cgroup.controllers", "\n");
	put("cg/unified/job/memory.max", "%llu\n", 100 * MiB);
	CHECK(read_limits(&m, why, sizeof(why)) == 0 && m.cgroup_limit == 100 * MiB,
	      "hybrid: memory.max under unified/ (trailing slash in the path)");

	fresh_tree("0::/job\n");
	put("cg/cgroup.controllers", "memory\n");
	put("cg/job/memory.max", "lots\n");
	CHECK(read_limits(&m, why, sizeof(why)) == -1 && strstr(why, "memory.max"),
	      "garbage in memory.max is an error naming the file: %s", why);

	fresh_tree("0::/\n");
	put("proc/meminfo", "MemTotal: 1000 kB\n");
	CHECK(read_limits(&m, why, sizeof(why)) == -1 && strstr(why, "MemAvailable"),
	      "meminfo without MemAvailable is an error: %s", why);

	fresh_tree("0::/\n");
	put("proc/meminfo", "MemTotal: 1048576 kB\nMemAvailable: 204800 kB\n");
	CHECK(read_limits(&m, why, sizeof(why)) == 0 && mem_limits_margin(&m) == MEM_MARGIN_MIN,
	      "small machine: the margin is at least 256 MiB");
	CHECK(mem_limits_allowance(&m) == 0, "MemAvailable below the margin allows nothing");

	wipe();
	return 0;
}
