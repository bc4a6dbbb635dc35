/*
 * barrier.c - hogs side by side: "hog run --barrier FILE --parties N".
 *
 * Seed 000 ran two 1 GB hogs at once on a 3 GB machine: together they asked
 * for more than the RAM, so the working set they were meant to evict had to
 * go. Two processes started one after the other do not overlap by themselves
 * when swapping is fast (zswap, zram: a round of a 16 MiB hog takes ~15 ms,
 * less than the start-up skew between them), and then neither asks for more
 * than the RAM. With a barrier every hog holds each round's memory until all
 * N have written theirs, so the N rounds are resident side by side.
 *
 * FILE is a shared mapping of one page: a 32-bit count of arrivals, waited on
 * with a futex. Round r (from 0) is complete when the count reaches
 * (r + 1) * N. It must start at zero: a fresh or empty file, one per run.
 *
 * For: holding hogs' rounds together. Not for: ordering anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hog.h"
#include "timing.h"

#define BARRIER_BYTES 4096

int barrier_open(struct barrier *b, const char *path, uint64_t parties, uint64_t timeout_ns)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return runtime_error("--barrier %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || (st.st_size < BARRIER_BYTES && ftruncate(fd, BARRIER_BYTES))) {
		int err = errno;

		close(fd);
		return runtime_error("--barrier %s: %s", path, strerror(err));
	}
	void *p = mmap(NULL, BARRIER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int err = errno;

	close(fd);
	if (p == MAP_FAILED)
		return runtime_error("--barrier %s: mmap: %s", path, strerror(err));
	b->count = p;
	b->parties = (uint32_t)parties;
	b->timeout_ns = timeout_ns;
	b->broken_round = 0;
	/* No hog can be past round 1 before this one arrives: a count of N or
	 * more is left over from an earlier run. */
	uint32_t now = __atomic_load_n(b->count, __ATOMIC_SEQ_CST);

	if (now >= b->parties) {
		barrier_close(b);
		return runtime_error("--barrier %s holds a count (%u) from an earlier run: give each run"
				     " a new or empty file", path, now);
	}
	return 0;
}

static void futex_wait(uint32_t *word, uint32_t seen, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC) };

	/* EAGAIN (the count moved), EINTR and ETIMEDOUT all mean: look again. */
	syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

uint64_t barrier_wait(struct barrier *b, uint64_t round)
{
	if (!b->count || b->broken_round)
		return 0;
	uint64_t t0 = monotonic_ns();
	uint32_t target = (uint32_t)((round + 1) * b->parties);
	uint32_t seen = __atomic_add_fetch(b->count, 1, __ATOMIC_SEQ_CST);

	if (seen >= target) {
		syscall(SYS_futex, b->count, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		return monotonic_ns() - t0;
	}
	while ((seen = __atomic_load_n(b->count, __ATOMIC_SEQ_CST)) < target) {
		uint64_t waited = monotonic_ns() - t0;

		if (waited >= b->timeout_ns) {
			/* A hog that died or never came: go on alone, and say so. */
			b->broken_round = round + 1;
			break;
		}
		futex_wait(b->count, seen, b->timeout_ns - waited);
	}
	return monotonic_ns() - t0;
}

void barrier_close(struct barrier *b)
{
	if (b->count)
		munmap(b->count, BARRIER_BYTES);
	b->count = NULL;
}
