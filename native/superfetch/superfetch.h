/*
 * superfetch.h - the state the agent's files share (internal to superfetch).
 *
 * main.c   the command line, the loop (when to read, how fast), the report
 * scan.c   the victim's pages: /proc/PID/maps and pagemap, the recency order,
 *          process_madvise(MADV_WILLNEED) of one group
 * host.c   what the agent watches: the memory cgroup's free memory, /proc/vmstat,
 *          the swap devices' requests in flight, the zones' watermarks; its own
 *          CPU and IO priority
 * files.c  the file cache: which pages of the files were cached at start, and
 *          reading back those that are gone (posix_fadvise WILLNEED)
 */
#ifndef SUPERFETCH_H
#define SUPERFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SUPERFETCH_VERSION "superfetch-0.1.0"

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP (1ULL << 62)
#define PM_SWAP_TYPE(e) ((e) & 0x1f)
#define PM_SWAP_OFFSET(e) (((e) >> 5) & ((1ULL << 50) - 1))
#define PM_SWAP_ENTRY(e) ((e) & ((1ULL << 55) - 1))   /* type and offset: one slot */

/* One page of the victim as the agent sees it. */
struct page_state {
	uint64_t swp;          /* the swap slot (type and offset) last seen, 0: not swapped */
	uint64_t asked_swp;    /* the slot when the agent last asked for the page, 0: not asked */
	uint32_t out_since;    /* the scan that first saw it swapped (its eviction, as seen) */
	uint32_t asked_pass;   /* the last pass that asked for it */
	bool asked_rounds;     /* asked for while the hogs ran */
};

struct region {
	uint64_t start, end;   /* [start, end) of one mapping */
	size_t pages;
	struct page_state *st;
};

/* A page to ask for: where it is and its place in the order. */
struct candidate {
	uint32_t out_since;
	uint32_t region;
	uint64_t offset;       /* swap offset (PM_SWAP_OFFSET) */
	uint64_t index;        /* page within the region */
};

struct victim {
	int pid;
	int pidfd;
	uint64_t page_size;
	struct region *regions;
	size_t nregions;
	uint64_t *buf;              /* pagemap entries of one region */
	size_t buf_cap;
	uint32_t scans;             /* scans made so far (the recency clock) */
	uint64_t swapped;           /* pages swapped at the last scan */
	uint64_t rewritten;         /* asked-for pages later seen on another slot */
	struct candidate *cand;     /* pages not yet asked in this pass, best first */
	size_t ncand, next_cand, cand_cap;
	uint64_t madvise_calls, madvise_errors;
	int last_errno;
};

int victim_open(struct victim *v, int pid, char *err, size_t errlen);
void victim_close(struct victim *v);
/* Re-reads the victim's mappings and pagemap; updates every page's state. 0 or -errno. */
int victim_scan(struct victim *v);
/* Builds the candidates of `pass`: swapped pages not yet asked in it, most recently evicted
 * first (ties: the higher swap offset first, the allocator's later slot). */
int victim_candidates(struct victim *v, uint32_t pass);
/* Asks for the next group of at most `group` candidates (in swap-offset order, one
 * process_madvise call); marks them asked in `pass` (and `rounds`). Returns pages asked,
 * 0 when none is left, -errno when the victim is gone. */
long victim_ask_group(struct victim *v, size_t group, uint32_t pass, bool rounds);
/* Of the pages swapped now: how many, and how many were asked for while the hogs ran. */
void victim_coverage(const struct victim *v, uint64_t *swapped, uint64_t *asked_rounds);

/* host.c */
struct host {
	char memcg[4096];          /* the memory cgroup's directory */
	bool v2;
	char devices[8][64];       /* block devices whose in-flight requests gate the agent */
	int ndevices;
};

int host_init(struct host *h, const char *memcg, const char *devices, char *err, size_t errlen);
/* The group's limit and usage in bytes; 0 or -errno. */
int host_memcg(const struct host *h, uint64_t *limit, uint64_t *usage);
/* Bytes of the group's memory that are only in swap (not in RAM, not in the swap cache), or -1. */
int64_t host_memcg_swapped(const struct host *h);
/* A /proc/vmstat counter, or -1. */
int64_t host_vmstat(const char *name);
/* Pages read from swap so far: pswpin (a swap device) + zswpin (zswap's pool). */
int64_t host_swapins(void);
/* Pages written to swap so far: pswpout + zswpout. */
int64_t host_swapouts(void);
/* Requests in flight (reads + writes) on the watched devices; -1 when none is watched. */
long host_inflight(const struct host *h);
/* 512-byte sectors read (completed) from the watched devices so far (/sys/class/block/DEV/stat);
 * -1 when none is watched. */
int64_t host_read_sectors(const struct host *h);
/* Sum of the zones' high watermarks over their managed pages (/proc/zoneinfo), or 0. */
double host_high_watermark_share(void);
/* nice 19, SCHED_BATCH, IOPRIO_CLASS_IDLE, as swap-prefetch's kprefetchd set itself. */
void host_lower_priority(bool *nice_ok, bool *batch_ok, bool *ioprio_ok);
/* Moves this process into the memory cgroup (its page cache is then charged there). */
int host_join_memcg(const struct host *h);

/* files.c */
struct cached_file {
	char *path;
	uint64_t size;
	uint64_t pages;
	unsigned char *was;        /* mincore at start: bit 0 of each byte */
};

struct file_cache {
	struct cached_file *files;
	size_t nfiles;
	uint64_t cached_bytes;     /* resident at start */
	uint64_t asked_bytes;      /* asked back (not resident when asked) */
	uint64_t back_bytes;       /* of those remembered, resident at the end */
};

/* Remembers which pages of the regular files in dir are cached now. 0 or -errno. */
int files_remember(struct file_cache *fc, const char *dir, char *err, size_t errlen);
/* Asks the kernel to read back every remembered page that is no longer cached, in
 * chunks of `chunk` bytes; then counts what is back. 0 or -errno. */
int files_restore(struct file_cache *fc, uint64_t chunk);
void files_free(struct file_cache *fc);

#endif
