/*
 * scan.c - the victim's swapped pages and asking for them back.
 *
 * For: finding which pages of another process are in swap (/proc/PID/pagemap:
 * bit 62 swapped, bits 0-4 the swap type, 5-54 the offset), remembering when
 * each was first seen out, ordering them, and reading a group of them back
 * into the swap cache with process_madvise(pidfd, iov, n, MADV_WILLNEED, 0)
 * (Linux 5.15; the caller needs CAP_SYS_NICE and PTRACE_MODE_READ).
 * Not for: deciding when to read (main.c).
 *
 * What the kernel does with it (mm/madvise.c, madvise_willneed on an anonymous
 * mapping): the page walk's swapin_walk_pmd_entry calls read_swap_cache_async
 * for every swap PTE, one page each, no readahead around it; the read is
 * asynchronous; the page lands in the swap cache, clean, with its slot kept,
 * and the PTE stays a swap entry until the owner touches the page, which is
 * then a minor fault (mm/memory.c do_swap_page finds it in the swap cache).
 * The pages of one call are read under one block plug, so adjacent slots
 * merge into one request.
 *
 * The order is a recency predictor: the page evicted most recently (first
 * seen swapped by the latest scan) comes back first, as Superfetch asks the
 * memory manager for "data and code that was recently evicted" (Russinovich,
 * Inside the Windows Vista Kernel: Part 2, 2007) and swap-prefetch kept its
 * swapped entries "in a list ordered most recently used" (Kolivas, 2006).
 * Pages that went out between two scans, or before the first, are ordered by
 * swap offset, highest first (the swap allocator hands out slots upwards, so
 * the later slot is the later eviction). Within a group the pages are asked
 * in swap-offset order, as the Windows memory manager sorts the pages of one
 * prefetch request, so that a group is one or a few disk requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "superfetch.h"

#ifndef MADV_WILLNEED
#define MADV_WILLNEED 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

#define MAX_GROUP 1024   /* IOV_MAX: one iovec per page at worst */

int victim_open(struct victim *v, int pid, char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->pid = pid;
	v->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	v->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (v->pidfd < 0) {
		snprintf(err, errlen, "--pid %d: pidfd_open: %s", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

void victim_close(struct victim *v)
{
	for (size_t i = 0; i < v->nregions; i++)
		free(v->regions[i].st);
	free(v->regions);
	free(v->buf);
	free(v->cand);
	if (v->pidfd >= 0)
		close(v->pidfd);
	memset(v, 0, sizeof(*v));
	v->pidfd = -1;
}

/* The region with this range in the previous scan's list, or -1. */
static long find_region(const struct region *r, size_t n, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].start == start && r[i].end == end)
			return (long)i;
	return -1;
}

/* The victim's mappings now, keeping each unchanged one's page states. */
static int read_maps(struct victim *v)
{
	char path[64], line[4096];
	struct region *next = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", v->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		char name[4096] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %4095s", &start, &end, name) < 2)
			continue;
		if (!strcmp(name, "[vsyscall]") || !strcmp(name, "[vvar]") || !strcmp(name, "[vdso]"))
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct region *g = realloc(next, ncap * sizeof(*g));

			if (!g)
				goto nomem;
			next = g;
			cap = ncap;
		}
		long old = find_region(v->regions, v->nregions, start, end);
		struct region *r = &next[n++];

		r->start = start;
		r->end = end;
		r->pages = (end - start) / v->page_size;
		if (old >= 0) {
			r->st = v->regions[old].st;
			v->regions[old].st = NULL;
		} else {
			r->st = calloc(r->pages, sizeof(*r->st));
			if (!r->st) {
				n--;
				goto nomem;
			}
		}
	}
	fclose(f);
	for (size_t i = 0; i < v->nregions; i++)
		free(v->regions[i].st);
	free(v->regions);
	v->regions = next;
	v->nregions = n;
	return 0;
nomem:
	fclose(f);
	for (size_t i = 0; i < n; i++)
		free(next[i].st);
	free(next);
	return -ENOMEM;
}

int victim_scan(struct victim *v)
{
	char path[64];
	int fd, err = read_maps(v);

	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", v->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	v->scans++;
	v->swapped = 0;
	for (size_t i = 0; i < v->nregions; i++) {
		struct region *r = &v->regions[i];

		if (r->pages > v->buf_cap) {
			uint64_t *b = realloc(v->buf, r->pages * sizeof(*b));

			if (!b) {
				close(fd);
				return -ENOMEM;
			}
			v->buf = b;
			v->buf_cap = r->pages;
		}
		size_t want = r->pages * sizeof(uint64_t), got = 0;
		off_t at = (off_t)(r->start / v->page_size * sizeof(uint64_t));

		while (got < want) {
			ssize_t k = pread(fd, (char *)v->buf + got, want - got, at + (off_t)got);

			if (k <= 0)
				break;
			got += (size_t)k;
		}
		size_t seen = got / sizeof(uint64_t);

		for (size_t p = 0; p < r->pages; p++) {
			struct page_state *s = &r->st[p];
			uint64_t e = p < seen ? v->buf[p] : 0;

			if (e & PM_SWAP) {
				uint64_t swp = PM_SWAP_ENTRY(e) | (1ULL << 60);   /* nonzero even at slot 0 */

				if (s->swp != swp)
					s->out_since = v->scans;    /* newly out, or moved to a new slot */
				s->swp = swp;
				/* An asked-for page on another slot now was written out again. */
				if (s->asked_swp && s->asked_swp != swp) {
					v->rewritten++;
					s->asked_swp = 0;
				}
				v->swapped++;
			} else {
				s->swp = 0;
				s->out_since = 0;
				if (e & PM_PRESENT)
					s->asked_swp = 0;       /* the owner touched it: no longer ours */
			}
		}
	}
	close(fd);
	return 0;
}

static int by_recency(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->out_since != y->out_since)
		return x->out_since < y->out_since ? 1 : -1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? 1 : -1;
	return 0;
}

int victim_candidates(struct victim *v, uint32_t pass)
{
	size_t n = 0;

	for (size_t i = 0; i < v->nregions; i++)
		for (size_t p = 0; p < v->regions[i].pages; p++) {
			const struct page_state *s = &v->regions[i].st[p];

			if (!s->swp || s->asked_pass == pass)
				continue;
			if (n == v->cand_cap) {
				size_t ncap = v->cand_cap ? 2 * v->cand_cap : 4096;
				struct candidate *c = realloc(v->cand, ncap * sizeof(*c));

				if (!c)
					return -ENOMEM;
				v->cand = c;
				v->cand_cap = ncap;
			}
			v->cand[n++] = (struct candidate){ .out_since = s->out_since, .region = (uint32_t)i,
							   .offset = PM_SWAP_OFFSET(s->swp), .index = p };
		}
	if (n)
		qsort(v->cand, n, sizeof(*v->cand), by_recency);
	v->ncand = n;
	v->next_cand = 0;
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

long victim_ask_group(struct victim *v, size_t group, uint32_t pass, bool rounds)
{
	struct candidate pick[MAX_GROUP];
	struct iovec iov[MAX_GROUP];
	size_t n = 0, niov = 0;

	if (group > MAX_GROUP)
		group = MAX_GROUP;
	while (n < group && v->next_cand < v->ncand) {
		const struct candidate *c = &v->cand[v->next_cand++];

		if (c->region >= v->nregions || c->index >= v->regions[c->region].pages)
			continue;
		const struct page_state *s = &v->regions[c->region].st[c->index];

		if (!s->swp || s->asked_pass == pass)
			continue;    /* came back, or its mapping changed since the list was made */
		pick[n++] = *c;
	}
	if (!n)
		return 0;
	qsort(pick, n, sizeof(*pick), by_offset);
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = v->regions[pick[i].region].start + pick[i].index * v->page_size;

		if (niov && (uint64_t)iov[niov - 1].iov_base + iov[niov - 1].iov_len == addr) {
			iov[niov - 1].iov_len += v->page_size;
		} else {
			iov[niov].iov_base = (void *)addr;
			iov[niov].iov_len = v->page_size;
			niov++;
		}
		struct page_state *s = &v->regions[pick[i].region].st[pick[i].index];

		s->asked_pass = pass;
		s->asked_swp = s->swp;
		if (rounds)
			s->asked_rounds = true;
	}
	v->madvise_calls++;
	if (syscall(SYS_process_madvise, v->pidfd, iov, niov, MADV_WILLNEED, 0) < 0) {
		int e = errno;

		v->madvise_errors++;
		v->last_errno = e;
		if (e == ESRCH)
			return -ESRCH;
	}
	return (long)n;
}

void victim_coverage(const struct victim *v, uint64_t *swapped, uint64_t *asked_rounds)
{
	*swapped = *asked_rounds = 0;
	for (size_t i = 0; i < v->nregions; i++)
		for (size_t p = 0; p < v->regions[i].pages; p++) {
			const struct page_state *s = &v->regions[i].st[p];

			if (s->swp) {
				(*swapped)++;
				*asked_rounds += s->asked_rounds;
			}
		}
}
