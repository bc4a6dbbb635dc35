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
	struct io_unit *done;   /* started and finished, not yet reaped */
};

static int psync_open(struct engine *e)
{
	e->priv = calloc(1, sizeof(struct psync_state));
	return e->priv ? 0 : -ENOMEM;
}

/* The IO happens here; reap() only hands it back. */
static int psync_queue(struct engine *e, struct io_unit *io)
{
	struct psync_state *s = e->priv;
	ssize_t n;

	do {
		if (io->dir == IO_READ)
			n = pread(e->fd, io->buf, io->len, (off_t)io->offset);
		else
			n = pwrite(e->fd, io->buf, io->len, (off_t)io->offset);
	} while (n < 0 && errno == EINTR);
	io->result = n < 0 ? -errno : n;
	s->done = io;
	return 0;
}

static int psync_reap(struct engine *e, unsigned min_done, struct io_unit **done,
		      unsigned max_done)
{
	struct psync_state *s = e->priv;

	(void)min_done;   /* the one IO is always complete */
	if (!s->done || max_done == 0)
		return 0;
	done[0] = s->done;
	s->done = NULL;
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
	.reap = psync_reap,
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
	int n = e->ops->queue(e, io);

	while (n == 0)
		n = e->ops->reap(e, 1, &done, 1);
	return n < 0 ? n : done->result;
}
