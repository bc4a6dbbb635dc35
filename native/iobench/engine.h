/*
 * engine.h - the interface between a job and the system calls doing its IO.
 *
 * For: swapping how IO is issued (fio's "ioengine") without touching the job
 * loop: one file per engine, each exporting one struct io_engine.
 * Not for: choosing offsets, timing or statistics; those belong to the job.
 * Only synchronous engines exist yet; an asynchronous one (io_uring) will add
 * submit/reap hooks beside queue and a queue depth to the job.
 */
#ifndef IOBENCH_ENGINE_H
#define IOBENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum io_dir { IO_READ, IO_WRITE };

struct io_unit {
	enum io_dir dir;
	void *buf;
	size_t len;
	uint64_t offset;
};

struct io_engine {
	const char *name;
	/* Performs io on fd; returns the bytes transferred, or -errno. */
	ssize_t (*queue)(int fd, const struct io_unit *io);
};

extern const struct io_engine psync_engine;

#endif
