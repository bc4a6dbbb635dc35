/*
 * serve.c - one request on the emulated disk, from arrival to reply: the
 * injected faults, the model's service time, the backing-file IO, the wait to
 * the deadline, the reply and the counters (serve_io, called by fuse_ops.c).
 *
 * For: completing every request at the instant its device model says.
 * Not for: the loop that receives requests and does background work
 * (daemon.c), the backing file itself (backing.c), counters (stats.c).
 *
 * Timing: a request is stamped when the loop receives it (arrival), starts
 * when the device is free (start = max(arrival, busy_until); background work
 * such as prefetching keeps the device busy), and is answered at start + the
 * model's service time. serve_io does the backing-file IO first, then sleeps
 * to the absolute deadline with clock_nanosleep(TIMER_ABSTIME) and spins the
 * last --spin, so errors never accumulate; the reply is started early by the
 * time replies have been taking (a moving average per request size, at most
 * MAX_REPLY_LEAD_NS), so that it is complete at the deadline. Requests the kernel queues while
 * one is served wait inside the kernel; the loop serves them in arrival order.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_int.h"
#include "timing.h"

static void wait_until(uint64_t deadline, uint64_t spin)
{
	for (;;) {
		uint64_t now = monotonic_ns();

		if (now >= deadline)
			return;
		if (deadline - now > spin) {
			uint64_t wake = deadline - spin;
			struct timespec ts = { .tv_sec = (time_t)(wake / NS_PER_SEC),
					       .tv_nsec = (long)(wake % NS_PER_SEC) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
}

/*
 * The reply itself (copying the data to the kernel, waking the reader) takes
 * from tens of microseconds (4 KiB) to a few hundred (1 MiB), and up to about
 * 1.5 ms for 1 MiB on a slower VM; start it that much before the deadline so
 * the request completes at the deadline. A moving average per power-of-two
 * size class that falls faster than it rises, capped.
 */
static unsigned size_class(uint64_t bytes)
{
	unsigned c = 0;

	while (bytes > 4096 && c < SIZE_CLASSES - 1) {
		bytes >>= 1;
		c++;
	}
	return c;
}

static void learn_reply_time(struct daemon *d, uint64_t bytes, uint64_t took)
{
	uint64_t *lead = &d->reply_lead_ns[size_class(bytes)];

	if (took > MAX_REPLY_LEAD_NS)
		took = MAX_REPLY_LEAD_NS;
	/* down quickly, up slowly: the lead follows the faster replies, so a
	 * reply rarely completes before its deadline (a disk never answers early) */
	if (took < *lead)
		*lead = (*lead * 3 + took) / 4;
	else
		*lead = (*lead * 15 + took) / 16;
}

/*
 * Waits until `until` unless a stop signal comes first (true then; the signal
 * stays in the pipe for the loop). For the injected waits, which can be long:
 * a stalled device must not keep the daemon from stopping.
 */
static bool wait_or_signal(struct daemon *d, uint64_t until)
{
	struct pollfd pfd = { .fd = d->signal_pipe[0], .events = POLLIN };

	for (;;) {
		uint64_t now = monotonic_ns();

		if (now >= until)
			return false;
		uint64_t left = until - now;
		struct timespec ts = { .tv_sec = (time_t)(left / NS_PER_SEC),
				       .tv_nsec = (long)(left % NS_PER_SEC) };

		if (ppoll(&pfd, 1, &ts, NULL) > 0)
			return true;
	}
}

/* Answers a request with EIO for an injected fault; the trace shows it. */
static void fail_io(struct daemon *d, fuse_req_t req, const struct io_request *r, uint64_t arrival,
		    enum fault_kind kind)
{
	fuse_reply_err(req, EIO);
	uint64_t done = monotonic_ns();

	account_failed(d, r, &(struct io_times){ .arrival = arrival, .start = arrival, .done = done,
						 .fault = kind });
	d->last_activity = done;
	d->idle_done = false;
}

/* The backing file's part of a request: 0 or -errno; a read's data in *out. */
static int backing_io(struct daemon *d, enum io_op op, uint64_t off, size_t len, const char *data,
		      char **out)
{
	if (op == IO_READ)
		return backing_read(d, d->iobuf, off, len, out);
	if (op == IO_WRITE)
		return backing_write(d, off, len, data);
	return fdatasync(d->fd) ? -errno : 0;
}

/* The successful answer to a request. */
static void reply_done(fuse_req_t req, enum io_op op, const char *out, size_t len)
{
	if (op == IO_READ)
		fuse_reply_buf(req, out, len);
	else if (op == IO_WRITE)
		fuse_reply_write(req, len);
	else
		fuse_reply_err(req, 0);
}

/*
 * Set-up mode ('setup' written to MOUNTPOINT/control, 'timed' ends it): the
 * harness fills the page cache from the disk before a trial's clock starts,
 * which is preparation, not a measurement. Its requests are answered as soon
 * as the backing file has served them, without waiting for the model's time.
 * The model still serves each one, back to back on its own clock (the head
 * moves, a tier copies a random-read miss, its copy queue drains at the
 * flash's speed and the block's use is counted, as the seed machine's cache
 * saw the reads that filled it), but no fault applies, the device is not busy
 * for it in real time, and the daemon's counters and trace leave it out
 * (setup_ios and setup_bytes count it); the model's own counters include it.
 *
 * The model's clock: every time the model gets is CLOCK_MONOTONIC plus
 * clock_offset. A set-up request starts when the model's clock says the
 * device is free and moves the offset on so that the clock reads at least the
 * request's model end once it is answered; so the model sees the fill take
 * as long as a timed fill would, and the clock never goes back. Between
 * set-ups the offset is constant, so the model's times and the daemon's
 * deadlines differ by it alone.
 */
int setup_message(struct daemon *d, const char *msg, size_t len)
{
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	if (len == 5 && memcmp(msg, "setup", 5) == 0)
		d->setup = true;
	else if (len == 5 && memcmp(msg, "timed", 5) == 0)
		d->setup = false;
	else
		return -1;
	return 0;
}

uint64_t model_clock(void *ctx)
{
	const struct daemon *d = ctx;

	return monotonic_ns() + d->clock_offset;
}

static void serve_setup(struct daemon *d, fuse_req_t req, enum io_op op, uint64_t off, size_t len,
			const char *data)
{
	struct io_request r = { .op = op, .offset = off, .length = len, .data = data };
	struct io_cost cost = { 0 };
	uint64_t now = monotonic_ns();
	uint64_t start = (now > d->busy_until ? now : d->busy_until) + d->clock_offset;
	char *out = NULL;
	int err;

	d->model->service(d->dev, &r, start, &cost);
	err = backing_io(d, op, off, len, data, &out);
	now = monotonic_ns();
	if (start + cost.total_ns > now + d->clock_offset)
		d->clock_offset = start + cost.total_ns - now;
	d->last_activity = now;
	d->idle_done = false;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	reply_done(req, op, out, len);
	d->setup_ios++;
	d->setup_bytes += len;
}

/* One request on the disk: faults, model, backing IO, deadline, reply, counters. */
void serve_io(struct daemon *d, fuse_req_t req, enum io_op op, uint64_t off, size_t len,
		     const char *data)
{
	uint64_t arrival = monotonic_ns();
	struct io_cost cost = { 0 };
	struct fault_plan fault;
	char *out = NULL;
	int err = 0;

	if (op != IO_FLUSH) {
		if (off >= d->size) {
			if (op == IO_READ)
				fuse_reply_buf(req, NULL, 0);
			else
				fuse_reply_err(req, ENOSPC);
			return;
		}
		if (len > d->size - off)
			len = (size_t)(d->size - off);
	}
	if (d->setup) {
		serve_setup(d, req, op, off, len, data);
		return;
	}
	uint64_t start = arrival > d->busy_until ? arrival : d->busy_until;
	struct io_request r = { .op = op, .offset = off, .length = len, .data = data };

	/* A timeout waits, then fails the request and takes the device offline; an
	 * error fails it at once; a delay or a stall moves the model's start. */
	faults_plan(&d->faults, op, off, len, arrival, start, &fault);
	if (fault.kind == FAULT_TIMEOUT) {
		if (!wait_or_signal(d, fault.fail_ns))
			faults_timed_out(&d->faults);
		fail_io(d, req, &r, arrival, fault.kind);
		return;
	}
	if (fault.error || (fault.start_ns > start && wait_or_signal(d, fault.start_ns))) {
		fail_io(d, req, &r, arrival, fault.kind);
		return;
	}
	d->model->service(d->dev, &r, fault.start_ns + d->clock_offset, &cost);
	cost.fault_ns = fault.start_ns - start;
	cost.total_ns += cost.fault_ns;
	uint64_t deadline = start + cost.total_ns;
	uint64_t backing_start = monotonic_ns();

	err = backing_io(d, op, off, len, data, &out);
	uint64_t backing_end = monotonic_ns();

	d->busy_until = deadline;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	uint64_t lead = d->reply_lead_ns[size_class(op == IO_READ ? len : 0)];
	uint64_t planned = deadline > lead ? deadline - lead : 0;

	wait_until(planned, d->spin_ns);
	uint64_t replying = monotonic_ns();
	struct io_times tm = { .arrival = arrival, .start = start,
			       .backing_ns = backing_end - backing_start,
			       .start_late_ns = replying > planned ? replying - planned : 0,
			       .fault = fault.kind };

	if (tm.start_late_ns > LATE_START_NS)
		tm.cause = backing_end > planned ? LATE_BACKING : LATE_WAKEUP;

	reply_done(req, op, out, len);
	tm.done = monotonic_ns();   /* the reply is out: what the reader sees */

	learn_reply_time(d, op == IO_READ ? len : 0, tm.done - replying);

	d->last_activity = tm.done;
	d->idle_done = false;
	account(d, &r, &tm, &cost);
}
