/*
 * engine_psync.c - one pread/pwrite per IO, queue depth 1 (fio's psync).
 */
#include <errno.h>
#include <unistd.h>

#include "engine.h"

static ssize_t psync_queue(int fd, const struct io_unit *io)
{
	ssize_t done;

	do {
		if (io->dir == IO_READ)
			done = pread(fd, io->buf, io->len, (off_t)io->offset);
		else
			done = pwrite(fd, io->buf, io->len, (off_t)io->offset);
	} while (done < 0 && errno == EINTR);
	return done < 0 ? -errno : done;
}

const struct io_engine psync_engine = {
	.name = "psync",
	.queue = psync_queue,
};
