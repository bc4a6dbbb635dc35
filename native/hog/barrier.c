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
 * FILE is a shared mapping of one page (struct barrier_page): a 32-bit count
 * of arrivals, waited on with a futex, where round r (from 0) is complete
 * when the count reaches (r + 1) * N; and a slot per hog. It must start at
 * zero: a fresh or empty file, one per run.
 *
 * A hog that dies (the OOM killer, a signal) or exits early never arrives,
 * and the others must not wait for it: each hog holds an open file
 * description lock (F_OFD_SETLK) on the byte of FILE at its slot's index for
 * as long as it lives, and the kernel drops that lock when the process is
 * gone, whatever ends it. A waiting hog looks at its partners' locks every
 * BARRIER_CHECK_NS; one whose slot is taken but unlocked is gone, and the
 * wait fails at once (BARRIER_PARTNER_GONE). Locks, not pids: a lock cannot
 * outlive its process or name a pid the system has since reused.
 *
 * For: holding hogs' rounds together. Not for: ordering anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hog.h"
#include "timing.h"

#define BARRIER_BYTES 4096
#define BARRIER_CHECK_NS (50 * NS_PER_MS)   /* how often a waiting hog looks at its partners */

/* The shared page: the first word is the count (pagelab.run.victim reads it). */
struct barrier_page {
	uint32_t count;                       /* arrivals, all rounds */
	uint32_t joined;                      /* slots handed out */
	int32_t pid[BARRIER_MAX_PARTIES];     /* a slot's hog, 0 until its lock is held */
};
_Static_assert(sizeof(struct barrier_page) <= BARRIER_BYTES, "the barrier fits its page");

/* F_OFD_SETLK (set) or F_OFD_GETLK (test) a write lock on slot's byte. */
static int slot_lock(int fd, int cmd, uint32_t slot, short *type)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)slot,
			    .l_len = 1, .l_pid = 0 };

	if (fcntl(fd, cmd, &fl))
		return -1;
	if (type)
		*type = fl.l_type;
	return 0;
}

/* Undoes barrier_open so far; "hog: --barrier FILE: [what: ]error", 1. */
static int barrier_fail(struct barrier *b, const char *what, int err)
{
	const char *path = b->path;

	barrier_close(b);
	return runtime_error("--barrier %s: %s%s%s", path, what, *what ? ": " : "", strerror(err));
}

int barrier_open(struct barrier *b, const char *path, uint64_t parties, uint64_t timeout_ns)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return runtime_error("--barrier %s: %s", path, strerror(errno));
	b->page = NULL;
	b->count = NULL;
	b->fd = fd;
	b->path = path;
	if (fstat(fd, &st) || (st.st_size < BARRIER_BYTES && ftruncate(fd, BARRIER_BYTES)))
		return barrier_fail(b, "", errno);
	void *p = mmap(NULL, BARRIER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return barrier_fail(b, "mmap", errno);
	b->page = p;
	b->count = &b->page->count;
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
	uint32_t slot = __atomic_fetch_add(&b->page->joined, 1, __ATOMIC_SEQ_CST);

	if (slot >= b->parties) {
		barrier_close(b);
		return runtime_error("--barrier %s is shared by more hogs than --parties %u (or holds"
				     " an earlier run's): give each run a new or empty file", path,
				     b->parties);
	}
	/* The lock first, then the pid: a slot with a pid always has its lock while
	 * its hog lives. */
	if (slot_lock(fd, F_OFD_SETLK, slot, NULL))
		return barrier_fail(b, "locking its slot (F_OFD_SETLK)", errno);
	b->slot = slot;
	__atomic_store_n(&b->page->pid[slot], (int32_t)getpid(), __ATOMIC_SEQ_CST);
	return 0;
}

/* The pid of a partner that has joined and is gone (its lock dropped), or 0. */
static int32_t partner_gone(const struct barrier *b)
{
	uint32_t joined = __atomic_load_n(&b->page->joined, __ATOMIC_SEQ_CST);

	for (uint32_t s = 0; s < joined && s < b->parties; s++) {
		int32_t pid = __atomic_load_n(&b->page->pid[s], __ATOMIC_SEQ_CST);
		short type;

		if (s == b->slot || pid == 0)
			continue;   /* this hog, or one still joining */
		if (slot_lock(b->fd, F_OFD_GETLK, s, &type) == 0 && type == F_UNLCK)
			return pid;
	}
	return 0;
}

static void futex_wait(uint32_t *word, uint32_t seen, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC) };

	/* EAGAIN (the count moved), EINTR and ETIMEDOUT all mean: look again. */
	syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

int barrier_wait(struct barrier *b, uint64_t round, uint64_t *waited_ns)
{
	*waited_ns = 0;
	if (!b->page || b->broken_round)
		return 0;
	uint64_t t0 = monotonic_ns();
	uint32_t target = (uint32_t)((round + 1) * b->parties);
	uint32_t seen = __atomic_add_fetch(b->count, 1, __ATOMIC_SEQ_CST);

	if (seen >= target) {
		syscall(SYS_futex, b->count, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		*waited_ns = monotonic_ns() - t0;
		return 0;
	}
	while ((seen = __atomic_load_n(b->count, __ATOMIC_SEQ_CST)) < target) {
		uint64_t waited = monotonic_ns() - t0;
		int32_t gone = partner_gone(b);

		/* A partner that arrived and then finished its last round is gone too:
		 * only one gone while the round is still short counts. */
		if (gone && __atomic_load_n(b->count, __ATOMIC_SEQ_CST) < target) {
			*waited_ns = monotonic_ns() - t0;
			fprintf(stderr, "hog: --barrier %s: the hog with pid %d is gone (killed or"
				" exited) while this one waited for round %llu: the %u hogs can no longer"
				" hold their rounds side by side\n", b->path, (int)gone,
				(unsigned long long)round + 1, b->parties);
			return BARRIER_PARTNER_GONE;
		}
		if (waited >= b->timeout_ns) {
			/* A hog that never came: go on alone, and say so. */
			b->broken_round = round + 1;
			break;
		}
		uint64_t left = b->timeout_ns - waited;

		futex_wait(b->count, seen, left < BARRIER_CHECK_NS ? left : BARRIER_CHECK_NS);
	}
	*waited_ns = monotonic_ns() - t0;
	return 0;
}

void barrier_close(struct barrier *b)
{
	if (!b->path)
		return;   /* never opened */
	if (b->page)
		munmap(b->page, BARRIER_BYTES);
	close(b->fd);   /* drops the slot's lock */
	b->page = NULL;
	b->count = NULL;
	b->path = NULL;
}
