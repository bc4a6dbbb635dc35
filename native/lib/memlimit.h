/*
 * memlimit.h - how much anonymous memory this process can sensibly take.
 *
 * For: refusing, before allocating, a working set that would not fit: the
 * memory cgroup's limit (cgroup v1 memory.limit_in_bytes or v2 memory.max,
 * the smallest on the way from this process's cgroup up to the root) and
 * MemAvailable from /proc/meminfo less a safety margin. The directories are
 * parameters so that tests can point them at a fake tree.
 * Not for: watching usage over time, memsw/swap limits, or changing limits.
 */
#ifndef NATIVE_MEMLIMIT_H
#define NATIVE_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEM_UNLIMITED UINT64_MAX
/* cgroup v1 writes "no limit" as a huge page-aligned number; anything this big is none. */
#define MEM_LIMIT_NONE_FROM (1ULL << 62)
#define MEM_MARGIN_MIN (256ULL << 20)
#define MEM_MARGIN_PERCENT 5
#define MEM_PATH_MAX 4096

struct mem_limits {
	uint64_t mem_total;          /* MemTotal, bytes */
	uint64_t mem_available;      /* MemAvailable, bytes */
	uint64_t cgroup_limit;       /* MEM_UNLIMITED if no cgroup limits memory */
	char cgroup_limit_file[MEM_PATH_MAX]; /* the file that gave cgroup_limit, or "" */
};

/*
 * Reads <proc_dir>/meminfo, <proc_dir>/self/cgroup and the limit files under
 * cgroup_dir (normally "/proc" and "/sys/fs/cgroup"). A missing cgroup file
 * just means no limit there. Returns 0, or -1 with a reason in why.
 */
int mem_limits_read(struct mem_limits *m, const char *proc_dir, const char *cgroup_dir,
		    char *why, size_t why_len);

/* The margin kept free: the larger of MEM_MARGIN_MIN and 5 % of MemTotal. */
uint64_t mem_limits_margin(const struct mem_limits *m);

/* MemAvailable less the margin (0 if below it). */
uint64_t mem_limits_available_after_margin(const struct mem_limits *m);

/* The largest allocation to allow: the smaller of the cgroup limit and the above. */
uint64_t mem_limits_allowance(const struct mem_limits *m);

/*
 * Room left now under the cgroup limit that mem_limits_read() found: the
 * limit less the usage in the same cgroup (v1 memory.usage_in_bytes beside
 * memory.limit_in_bytes, v2 memory.current beside memory.max), 0 if over it.
 * MEM_UNLIMITED when no cgroup limits memory; 0 if the usage cannot be read.
 */
uint64_t mem_limits_cgroup_room(const struct mem_limits *m);

/*
 * Whether the limiting cgroup makes its tasks wait rather than be OOM-killed
 * (cgroup v1 memory.oom_control "oom_kill_disable 1" beside the limit file).
 * In such a group a charge that fails outside a page fault, e.g. in
 * madvise(MADV_POPULATE_WRITE), gets the task a SIGSEGV (seen on Linux 6.18)
 * where elsewhere it gets ENOMEM: fault pages in one by one there instead.
 */
bool mem_limits_oom_waits(const struct mem_limits *m);

#endif
