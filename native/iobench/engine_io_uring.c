/*
 * engine_io_uring.c - asynchronous IO through io_uring (fio's io_uring), any
 * queue depth.
 *
 * For: keeping up to depth reads or writes in flight: queue() fills a
 * submission entry and submits it at once (see engine.h for why not in
 * batches), reap() waits for at least one completion and takes every
 * completion that is ready. Like fio's defaults: plain (unregistered) file
 * and buffers, interrupt-driven completions, no SQ polling thread.
 * The ring is single-issuer with deferred task work where the kernel has it
 * (6.1+), which only lowers overhead; older kernels get a plain ring.
 * Not for: polled IO, registered buffers, or sharing a ring between threads.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

#include "engine.h"

struct uring_state {
	struct io_uring ring;
	unsigned outstanding;           /* queued or in flight */
	struct io_uring_cqe **cqes;     /* depth entries, for peeking a batch */
};

static int uring_init_ring(struct io_uring *ring, unsigned depth)
{
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int err = -EINVAL;

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params params = { .flags = flag_sets[i] };

		err = io_uring_queue_init_params(depth, ring, &params);
		if (err != -EINVAL)
			break;   /* only an unknown flag is worth a retry */
	}
	return err;
}

static int uring_open(struct engine *e)
{
	struct uring_state *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->cqes = calloc(e->depth, sizeof(*s->cqes));
	if (!s->cqes) {
		free(s);
		return -ENOMEM;
	}
	err = uring_init_ring(&s->ring, e->depth);
	if (err) {
		free(s->cqes);
		free(s);
		return err;
	}
	e->priv = s;
	return 0;
}

static int uring_queue(struct engine *e, struct io_unit *io)
{
	struct uring_state *s = e->priv;
	/* Cannot be NULL: the ring has depth entries, at most depth IOs are
	 * outstanding, and every entry is submitted before the next is taken. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
	int ret;

	if (io->dir == IO_READ)
		io_uring_prep_read(sqe, e->fd, io->buf, (unsigned)io->len, io->offset);
	else
		io_uring_prep_write(sqe, e->fd, io->buf, (unsigned)io->len, io->offset);
	io_uring_sqe_set_data(sqe, io);
	s->outstanding++;
	do
		ret = io_uring_submit(&s->ring);
	while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

static int uring_reap(struct engine *e, unsigned min_done, struct io_unit **done,
		      unsigned max_done)
{
	struct uring_state *s = e->priv;
	unsigned got = 0;

	if (min_done > s->outstanding)
		min_done = s->outstanding;
	if (max_done > e->depth)
		max_done = e->depth;
	for (;;) {
		unsigned n = io_uring_peek_batch_cqe(&s->ring, s->cqes, max_done - got);

		for (unsigned i = 0; i < n; i++) {
			struct io_unit *io = io_uring_cqe_get_data(s->cqes[i]);

			io->result = s->cqes[i]->res;
			done[got++] = io;
		}
		io_uring_cq_advance(&s->ring, n);
		s->outstanding -= n;
		if (got >= min_done || got == max_done)
			return (int)got;

		/* Nothing ready yet: sleep in the kernel until something is. */
		int ret = io_uring_submit_and_wait(&s->ring, 1);

		if (ret < 0 && ret != -EINTR)
			return ret;
	}
}

static void uring_close(struct engine *e)
{
	struct uring_state *s = e->priv;

	if (!s)
		return;
	/* Let anything still in flight finish before its buffer can go away. */
	while (s->outstanding) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait(&s->ring, 1);

		if (ret < 0 && ret != -EINTR)
			break;
		while (s->outstanding && io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			io_uring_cqe_seen(&s->ring, cqe);
			s->outstanding--;
		}
	}
	io_uring_queue_exit(&s->ring);
	free(s->cqes);
	free(s);
	e->priv = NULL;
}

const struct io_engine io_uring_engine = {
	.name = "io_uring",
	.max_depth = 4096,
	.open = uring_open,
	.queue = uring_queue,
	.reap = uring_reap,
	.close = uring_close,
};
