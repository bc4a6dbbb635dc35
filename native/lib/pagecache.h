/*
 * pagecache.h - how much of a file is in the page cache, and dropping it.
 *
 * For: measuring residency the way fincore(1) and vmtouch do: cachestat(2)
 * (Linux 6.5) counts the cached pages of the file in one call; on older
 * kernels the file is mapped (PROT_READ, MAP_SHARED, in windows of
 * PAGECACHE_WINDOW bytes, so any size works) and mincore(2) says which of its
 * pages are resident. Neither reads the file, so measuring does not change
 * what it measures. Block devices are measured too (their own page cache).
 * Also the size of a file or block device, and dropping a file's clean pages
 * (posix_fadvise DONTNEED).
 * Not for: anonymous memory or the swap cache, dirty or writeback counts,
 * or reading data into the cache.
 *
 * Caveat from the kernel (since 5.0): mincore() reveals the page cache of a
 * file mapping only to its owner, a caller that may write the file, or one
 * with CAP_FOWNER/CAP_DAC_OVERRIDE; anyone else is told that every page is
 * resident. pagecache_residency() checks this first and marks such a file
 * hidden instead of returning that made-up answer.
 */
#ifndef NATIVE_PAGECACHE_H
#define NATIVE_PAGECACHE_H

#include <stdbool.h>
#include <stdint.h>

#define PAGECACHE_WINDOW (1ULL << 30)   /* bytes mapped at a time */

struct residency {
	uint64_t size;             /* bytes */
	uint64_t pages;            /* ceil(size / page size) */
	uint64_t resident_pages;
	bool hidden;               /* the kernel would not tell: resident_pages is 0 */
};

/* The base page size mincore() counts in. */
uint64_t pagecache_page_size(void);

/* Size of a regular file or block device; 0 or -errno (-EINVAL: neither). */
int pagecache_size_of(int fd, uint64_t *size);

/*
 * Residency of the first size bytes of fd (open for reading); 0 or -errno.
 * A file whose residency the kernel hides is 0, with out->hidden set.
 */
int pagecache_residency(int fd, uint64_t size, struct residency *out);

/* The same, always by mmap + mincore (what pagecache_residency falls back to). */
int pagecache_residency_mincore(int fd, uint64_t size, struct residency *out);

/* Drops fd's clean cached pages (dirty ones stay); 0 or -errno. */
int pagecache_evict(int fd);

/* 100 * resident / pages; 0 for a file with no pages. */
double residency_percent(const struct residency *r);

#endif
