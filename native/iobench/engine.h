/*
 * engine.h - the interface between a job and the system calls doing its IO.
 *
 * For: swapping how IO is issued (fio's "ioengine") without touching the job
 * loop: one file per engine, each exporting one struct io_engine, listed in
 * io_engines[]. The same two calls serve synchronous and asynchronous
 * engines: queue() starts one IO -- a synchronous engine does it right there,
 * an asynchronous one submits it to the kernel at once -- and reap() waits
 * for completions. The caller's clock reads around queue() therefore bracket
 * the system call that issues the IO, for every engine.
 * Submitting every IO as soon as it is queued is fio's default
 * (iodepth_batch_submit=1); batching a reaped batch's worth of submissions
 * into one system call made each IO ~15 % slower on this project's virtio
 * disk at queue depth 32, measured side by side with fio.
 * Not for: choosing offsets, timing or statistics; those belong to the job.
 */
#ifndef IOBENCH_ENGINE_H
#define IOBENCH_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum io_dir { IO_READ, IO_WRITE };

struct io_unit {
	enum io_dir dir;
	void *buf;
	size_t len;
	uint64_t offset;
	ssize_t result;         /* set by the engine: bytes transferred, or -errno */
	/* The caller's bookkeeping; engines leave these alone. */
	uint64_t t_start;       /* when the IO was chosen */
	uint64_t t_issue;       /* when it was handed to the kernel */
	bool measured;
};

/* One engine opened on one file descriptor. */
struct engine {
	const struct io_engine *ops;
	int fd;
	unsigned depth;         /* most IOs queued or in flight at once */
	void *priv;             /* the engine's own state */
};

struct io_engine {
	const char *name;
	unsigned max_depth;     /* 1 for synchronous engines */
	/* Prepares e (ops, fd and depth already set); returns 0 or -errno. */
	int (*open)(struct engine *e);
	/*
	 * Starts io; never more than depth IOs may be started and not yet
	 * reaped. Returns 0, or -errno if the engine itself failed (the IO's
	 * own outcome is io->result, set by the time it is reaped).
	 */
	int (*queue)(struct engine *e, struct io_unit *io);
	/*
	 * Waits until at least min_done started IOs are complete (fewer if
	 * fewer are outstanding) and stores up to max_done completed IOs, with
	 * their result set, in done. Returns how many it stored, or -errno if
	 * the engine itself failed.
	 */
	int (*reap)(struct engine *e, unsigned min_done, struct io_unit **done, unsigned max_done);
	/* Waits for anything still in flight and releases e's resources. */
	void (*close)(struct engine *e);
};

extern const struct io_engine psync_engine;
extern const struct io_engine io_uring_engine;

/* Every engine, NULL-terminated, and their names in the same order (for
 * an option table's choices). */
extern const struct io_engine *const io_engines[];
extern const char *const io_engine_names[];

/* Opens ops on fd for depth IOs; returns 0 or -errno. */
int engine_open(struct engine *e, const struct io_engine *ops, int fd, unsigned depth);

/* One IO through e, waiting for it; returns the bytes transferred or
 * -errno, like pread. */
ssize_t engine_do_one(struct engine *e, struct io_unit *io);

#endif
