/*
 * host.c - what the agent watches, and its own priority.
 *
 * For: the memory cgroup's limit and usage (v1 memory.limit_in_bytes and
 * memory.usage_in_bytes, v2 memory.max and memory.current), the swap its pages
 * hold (memory.stat, v2 memory.swap.current), one /proc/vmstat counter, the requests in flight on block devices (/sys/block/DEV/inflight:
 * reads and writes the driver has not completed), the zones' high watermarks
 * (/proc/zoneinfo), and lowering the agent's CPU and IO priority.
 * Not for: deciding anything (main.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "superfetch.h"

#ifndef SYS_ioprio_set
#define SYS_ioprio_set 251
#endif
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_WHO_PROCESS 1

static int read_u64(const char *dir, const char *file, uint64_t *out)
{
	char path[4200], text[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(text, sizeof(text), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	if (!strncmp(text, "max", 3)) {
		*out = UINT64_MAX;
		return 0;
	}
	*out = strtoull(text, NULL, 10);
	return 0;
}

int host_init(struct host *h, const char *memcg, const char *devices, char *err, size_t errlen)
{
	char path[4200];
	struct stat sb;

	memset(h, 0, sizeof(*h));
	if (snprintf(h->memcg, sizeof(h->memcg), "%s", memcg) >= (int)sizeof(h->memcg)) {
		snprintf(err, errlen, "--cgroup: path too long");
		return -ENAMETOOLONG;
	}
	snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", memcg);
	if (stat(path, &sb)) {
		snprintf(path, sizeof(path), "%s/memory.max", memcg);
		if (stat(path, &sb)) {
			snprintf(err, errlen, "--cgroup %s: neither memory.limit_in_bytes (v1) nor memory.max (v2) "
				 "is there", memcg);
			return -ENOENT;
		}
		h->v2 = true;
	}
	for (const char *p = devices; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (h->ndevices == (int)(sizeof(h->devices) / sizeof(h->devices[0])) || len == 0 ||
		    len >= sizeof(h->devices[0])) {
			snprintf(err, errlen, "--devices %s: at most 8 names, none empty or longer than 63", devices);
			return -EINVAL;
		}
		memcpy(h->devices[h->ndevices], p, len);
		h->devices[h->ndevices][len] = '\0';
		snprintf(path, sizeof(path), "/sys/class/block/%s/inflight", h->devices[h->ndevices]);
		if (stat(path, &sb)) {
			snprintf(err, errlen, "--devices: %s: no /sys/class/block/%s/inflight",
				 h->devices[h->ndevices], h->devices[h->ndevices]);
			return -ENOENT;
		}
		h->ndevices++;
		p = comma ? comma + 1 : p + len;
	}
	return 0;
}

int host_memcg(const struct host *h, uint64_t *limit, uint64_t *usage)
{
	int err = read_u64(h->memcg, h->v2 ? "memory.max" : "memory.limit_in_bytes", limit);

	return err ? err : read_u64(h->memcg, h->v2 ? "memory.current" : "memory.usage_in_bytes", usage);
}

/* The value of the "name value" line whose name is `name` in a file of such lines
 * (/proc/vmstat, a cgroup's memory.stat), or -1. */
static int64_t keyed_field(const char *path, const char *name)
{
	char key[128];
	long long value;
	int64_t out = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fscanf(f, "%127s %lld", key, &value) == 2)
		if (!strcmp(key, name)) {
			out = value;
			break;
		}
	fclose(f);
	return out;
}

/* One "name value" line of a cgroup file (memory.stat), or -1. */
static int64_t stat_field(const char *dir, const char *file, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return keyed_field(path, name);
}

int64_t host_memcg_swapped(const struct host *h)
{
	uint64_t cur, mem;

	/* v1: memory+swap less memory, both page counters, exact at every read: the memsw charge of
	 * a page moves to its swap entry when it leaves the swap cache for swap only and back when
	 * it is read (mm/memcontrol-v1.c: mem_cgroup_swapout, mm/memcontrol.c:
	 * mem_cgroup_swapin_uncharge_swap). memory.stat's swap says the same, but from per-CPU
	 * statistics that a read flushes only once more than 64 updates per CPU are pending (the
	 * rest wait for the flush every 2 s), so a reader that looks often sees it up to that many
	 * pages behind. v2 counts slots (memory.swap.current), so its swap cache is taken off. */
	if (!h->v2) {
		if (read_u64(h->memcg, "memory.memsw.usage_in_bytes", &cur) ||
		    read_u64(h->memcg, "memory.usage_in_bytes", &mem))
			return -1;
		return cur > mem ? (int64_t)(cur - mem) : 0;
	}
	if (read_u64(h->memcg, "memory.swap.current", &cur))
		return -1;
	int64_t cached = stat_field(h->memcg, "memory.stat", "swapcached");

	return (int64_t)cur > cached ? (int64_t)cur - (cached > 0 ? cached : 0) : 0;
}

int64_t host_memcg_swap_slots(const struct host *h)
{
	uint64_t cur;

	/* v1: total_swap counts the group's pages only in swap, total_swapcached those in the swap
	 * cache (both with the group's descendants). A page read back from swap moves from the
	 * first to the second (mm/memcontrol-v1.c: mem_cgroup_swapin_uncharge_swap; the page is
	 * added to the swap cache), and a clean swap-cache page reclaimed moves back
	 * (mem_cgroup_swapout): the sum changes only when a page gets a slot (add_to_swap: its
	 * swap-out, written or stored by zswap) or one is freed. v2 charges the slot itself when
	 * it is allocated (memory.swap.current). */
	if (h->v2)
		return read_u64(h->memcg, "memory.swap.current", &cur) ? -1 : (int64_t)cur;
	int64_t out = stat_field(h->memcg, "memory.stat", "total_swap");
	int64_t cached = stat_field(h->memcg, "memory.stat", "total_swapcached");

	return out < 0 || cached < 0 ? -1 : out + cached;
}

int64_t host_vmstat(const char *name)
{
	return keyed_field("/proc/vmstat", name);
}

int64_t host_swapins(void)
{
	int64_t p = host_vmstat("pswpin"), z = host_vmstat("zswpin");

	return (p > 0 ? p : 0) + (z > 0 ? z : 0);
}

long host_inflight(const struct host *h)
{
	long total = 0;

	if (!h->ndevices)
		return -1;
	for (int i = 0; i < h->ndevices; i++) {
		char path[128];
		long r = 0, w = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/block/%s/inflight", h->devices[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%ld %ld", &r, &w) == 2)
			total += r + w;
		fclose(f);
	}
	return total;
}

int64_t host_read_sectors(const struct host *h)
{
	int64_t total = 0;

	if (!h->ndevices)
		return -1;
	for (int i = 0; i < h->ndevices; i++) {
		char path[128];
		long long ios, merges, sectors;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/block/%s/stat", h->devices[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%lld %lld %lld", &ios, &merges, &sectors) == 3)
			total += sectors;
		fclose(f);
	}
	return total;
}

double host_high_watermark_share(void)
{
	char line[256];
	uint64_t high = 0, managed = 0, v;
	bool in_pages = false;
	FILE *f = fopen("/proc/zoneinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Node", 4))
			in_pages = false;
		if (strstr(line, "pages free"))
			in_pages = true;
		if (in_pages && sscanf(line, " high %" SCNu64, &v) == 1)
			high += v;
		else if (in_pages && sscanf(line, " managed %" SCNu64, &v) == 1)
			managed += v;
	}
	fclose(f);
	return managed ? (double)high / (double)managed : 0;
}

void host_lower_priority(bool *nice_ok, bool *batch_ok, bool *ioprio_ok)
{
	struct sched_param sp = { .sched_priority = 0 };

	*batch_ok = sched_setscheduler(0, SCHED_BATCH, &sp) == 0;
	*nice_ok = setpriority(PRIO_PROCESS, 0, 19) == 0;
	*ioprio_ok = syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			     IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) == 0;
}

int host_join_memcg(const struct host *h)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", h->memcg);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f) ? -errno : 0;
}
