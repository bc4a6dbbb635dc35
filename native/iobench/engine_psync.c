/*
 * engine_psync.c - one pread/pwrite per IO, queue depth 1 (fio's psync).
 *
 * Also holds the engine table and the helpers shared by every engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"

const struct io_engine *const io_engines[] = { &psync_engine, &io_uring_engine, NULL };
const char *const io_engine_names[] = { "psync", "io_uring", NULL };

struct psync_state {
	struct io_unit *queued;
};

static int psync_open(struct engine *e)
{
	e->priv = calloc(1, sizeof(struct psync_state));
	return e->priv ? 0 : -ENOMEM;
}

static void psync_queue(struct engine *e, struct io_unit *io)
{
	struct psync_state *s = e->priv;

	s->queued = io;
}

static int psync_submit_and_reap(struct engine *e, unsigned min_done,
				 struct io_unit **done, unsigned max_done)
{
	struct psync_state *s = e->priv;
	struct io_unit *io = s->queued;
	ssize_t n;

	(void)min_done;   /* the one IO is always complete on return */
	if (!io || max_done == 0)
		return 0;
	s->queued = NULL;
	do {
		if (io->dir == IO_READ)
			n = pread(e->fd, io->buf, io->len, (off_t)io->offset);
		else
			n = pwrite(e->fd, io->buf, io->len, (off_t)io->offset);
	} while (n < 0 && errno == EINTR);
	io->result = n < 0 ? -errno : n;
	done[0] = io;
	return 1;
}

static void psync_close(struct engine *e)
{
	free(e->priv);
	e->priv = NULL;
}

const struct io_engine psync_engine = {
	.name = "psync",
	.max_depth = 1,
	.open = psync_open,
	.queue = psync_queue,
	.submit_and_reap = psync_submit_and_reap,
	.close = psync_close,
};

int engine_open(struct engine *e, const struct io_engine *ops, int fd, unsigned depth)
{
	*e = (struct engine){ .ops = ops, .fd = fd, .depth = depth };
	return ops->open(e);
}

ssize_t engine_do_one(struct engine *e, struct io_unit *io)
{
	struct io_unit *done;
	int n;

	e->ops->queue(e, io);
	do
		n = e->ops->submit_and_reap(e, 1, &done, 1);
	while (n == 0);
	return n < 0 ? n : done->result;
}
