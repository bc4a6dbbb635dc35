/*
 * daemon.c - `simdisk MOUNTPOINT ...`: the FUSE daemon that makes a backing
 * file look like the device of a profile.
 *
 * For: the one-at-a-time request loop, background work, and the mount's
 * set-up and clean shutdown.
 * Not for: one request from arrival to reply (serve.c), the FUSE operations
 * (fuse_ops.c), the backing file (backing.c), counters and trace (stats.c),
 * the command line (mount_cmd.c), device behaviour (the models), profile
 * parsing (profile.c).
 *
 * Low-level FUSE API with its own loop (ppoll on the FUSE fd, a signal pipe,
 * and idle timeouts for background work), single-threaded. The disk file is
 * direct_io (no page cache: every read reaches the model, O_DIRECT works),
 * with max_read = max_write = 1 MiB so a 1 MiB request arrives whole; larger
 * ones arrive as back-to-back pieces, which the disk model streams without a
 * new seek (its read-ahead). The backing file is opened with O_DIRECT when the
 * file system allows (--backing-io direct, the default), through an aligned
 * bounce buffer, so the host page cache, which experiments measure, never
 * holds the emulated disk's data. The backing IO happens before the deadline
 * and is hidden by it; when the host disk is slower than the emulated device
 * (a busy machine, a first write into a sparse region) the reply is late, and
 * the stats (timing.late_ios, error_ns) and the trace (measured_ns) say so;
 * they also say why a reply began late (late_starts, late_cause: the backing
 * IO, or the daemon woken or run late).
 *
 * For swap on the emulated disk the daemon locks its memory (mlockall),
 * marks itself an IO flusher (PR_SET_IO_FLUSHER) and allocates its buffers
 * before the mount; run it outside the memory cgroup under test. It runs at
 * nice -20 (unless --normal-priority) so a busy machine does not make it late:
 * it only ever runs to serve a request or a short spin before a deadline.
 *
 * Why nice -20 in the normal class and not SCHED_FIFO (measured with make
 * bench's simdisk cases beside three busy loops on a 2-vCPU VM): a SCHED_FIFO
 * task that wakes the reader cannot be preempted by it, so the scheduler sends
 * the reader to another CPU, an inter-processor wake-up that adds 40-90 us to
 * every IO; sending the replies from the normal class instead (two class
 * changes per IO) costs 21-43 us of added latency at the zero profile, and
 * under load the reply then waits behind the busy loops: p99 timing error
 * 2.7-4.5 ms at hdd5400-2008 settings. At nice -20 the reader is woken on this
 * CPU and runs once the daemon blocks, nothing changes per IO (18.7 us added,
 * 1.25x passthrough_ll's 15.0), and the same load gives a p99 error of 19-340
 * us.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon_int.h"
#include "fail.h"
#include "timing.h"
#include "warn.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

/* --- the loop --- */

static int signal_fd = -1;

static void on_signal(int sig)
{
	char c = (char)sig;
	int saved = errno;

	if (write(signal_fd, &c, 1) < 0) {
		/* the pipe is full: a stop is already pending */
	}
	errno = saved;
}

static int install_signals(struct daemon *d)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (pipe2(d->signal_pipe, O_NONBLOCK | O_CLOEXEC))
		return -1;
	signal_fd = d->signal_pipe[1];
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Background work (prefetch) while no request comes; returns when it is not yet due. */
static void run_idle_work(struct daemon *d)
{
	uint64_t now = monotonic_ns();
	struct io_request r;
	struct io_cost cost = { 0 };
	uint64_t start = now > d->busy_until ? now : d->busy_until;
	uint64_t end = d->model->idle(d->dev, start + d->clock_offset, &r, &cost);

	if (!end) {
		d->idle_done = true;
		return;
	}
	end = end > start + d->clock_offset ? end - d->clock_offset : start;
	if (!r.length) {
		d->idle_not_before = end;    /* the model waits for itself, the disk is free */
		return;
	}
	d->busy_until = end;
	account(d, &r, &(struct io_times){ .arrival = start, .start = start, .done = end }, &cost);
}

static int loop(struct daemon *d)
{
	struct fuse_buf buf = { .mem = NULL };
	struct pollfd fds[2] = {
		{ .fd = fuse_session_fd(d->se), .events = POLLIN },
		{ .fd = d->signal_pipe[0], .events = POLLIN },
	};
	int status = 0;

	while (!fuse_session_exited(d->se)) {
		struct timespec timeout, *tp = NULL;

		if (d->model->idle && !d->idle_done) {
			uint64_t now = monotonic_ns(), due = d->last_activity + d->model->idle_delay_ns(d->dev);

			if (due < d->busy_until)
				due = d->busy_until;
			if (due < d->idle_not_before)
				due = d->idle_not_before;
			due = due > now ? due - now : 0;
			timeout = (struct timespec){ .tv_sec = (time_t)(due / NS_PER_SEC),
						     .tv_nsec = (long)(due % NS_PER_SEC) };
			tp = &timeout;
		}
		int n = ppoll(fds, 2, tp, NULL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			status = runtime_error("poll: %s", strerror(errno));
			break;
		}
		if (fds[1].revents)
			break;                         /* SIGTERM, SIGINT or SIGHUP */
		if (fds[0].revents) {
			int res = fuse_session_receive_buf(d->se, &buf);

			if (res == -EINTR || res == -EAGAIN)
				continue;
			if (res <= 0)
				break;                 /* unmounted (ENODEV) or the session ended */
			fuse_session_process_buf(d->se, &buf);
			continue;
		}
		run_idle_work(d);
	}
	free(buf.mem);
	return status;
}

/* --- set-up and shutdown --- */

static void set_up_process(const struct mount_opts *o)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)o;   /* ASan's shadow memory is terabytes of address space: never lock it */
#else
	if (!o->no_mlock && mlockall(MCL_CURRENT | MCL_FUTURE))
		warn("mlockall: %s (the daemon may be paged out under memory pressure)",
		     strerror(errno));
#endif
	if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0)) {
		if (errno == EINVAL || errno == EPERM)
			warn("PR_SET_IO_FLUSHER: %s (reclaim may wait on this daemon)", strerror(errno));
		else
			warn("PR_SET_IO_FLUSHER: %s", strerror(errno));
	}
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	if (!o->normal_priority && setpriority(PRIO_PROCESS, 0, DAEMON_NICE))
		warn("nice %d: %s (deadlines may slip when the CPUs are busy)", DAEMON_NICE,
		     strerror(errno));
}

int daemon_run(struct daemon *d, const struct mount_opts *o)
{
	char err[1024];
	struct device_env env = { .read_data = env_read_data, .identity = env_identity,
				  .now = model_clock, .ctx = d };
	char *fuse_argv[] = { "simdisk", "-o", "max_read=1048576,fsname=simdisk,subtype=simdisk",
			      o->allow_other ? "-oallow_other" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(o->allow_other ? 4 : 3, fuse_argv);
	int status;

	d->iobuf = aligned_buffer(MAX_IO + 2 * ALIGN);
	d->auxbuf = aligned_buffer(AUX_BYTES + 2 * ALIGN);
	if (!d->iobuf || !d->auxbuf)
		return runtime_error("out of memory");
	if (setup_backing(d, o->backing, o->backing_io))
		return 1;
	d->dev = d->model->create(d->profile, &env, err, sizeof(err));
	if (!d->dev)
		return runtime_error("%s", err);
	if (faults_init(&d->faults, &d->profile->faults, monotonic_ns(), err, sizeof(err)))
		return runtime_error("%s", err);
	if (d->cache_state[0]) {
		int loaded = d->model->load_state(d->dev, d->cache_state, err, sizeof(err));

		if (loaded < 0)
			return runtime_error("%s", err);
		if (loaded == 0 && o->require_state)
			return runtime_error("--require-state: %s holds no cached blocks (%s); a warm "
					     "start would be cold", d->cache_state,
					     access(d->cache_state, F_OK) ? "no such file" : "empty cache");
	}
	if (d->trace_path[0]) {
		d->trace = fopen(d->trace_path, "w");
		d->trace_buffer = malloc(TRACE_BUFFER);
		if (!d->trace || !d->trace_buffer)
			return runtime_error("cannot write --trace %s: %s", d->trace_path, strerror(errno));
		setvbuf(d->trace, d->trace_buffer, _IOFBF, TRACE_BUFFER);
		fputs(trace_header, d->trace);
	}
	hist_init(&d->timing_error);
	hist_init(&d->start_late);
	if (install_signals(d))
		return runtime_error("cannot install signal handlers: %s", strerror(errno));
	d->se = fuse_session_new(&args, &simdisk_operations, sizeof(simdisk_operations), d);
	fuse_opt_free_args(&args);
	if (!d->se)
		return runtime_error("cannot create the FUSE session");
	if (fuse_session_mount(d->se, d->mountpoint)) {
		fuse_session_destroy(d->se);
		return runtime_error("cannot mount on %s", d->mountpoint);
	}
	if (fuse_daemonize(o->foreground)) {
		fuse_session_unmount(d->se);
		fuse_session_destroy(d->se);
		return runtime_error("cannot go to the background");
	}
	if (d->pidfile[0]) {
		char text[32];

		snprintf(text, sizeof(text), "%d\n", (int)getpid());
		if (write_file_atomic(d->pidfile, text))
			warn("cannot write --pidfile %s: %s", d->pidfile, strerror(errno));
	}
	set_up_process(o);
	d->t0 = d->last_activity = monotonic_ns();
	d->mount_time = time(NULL);
	d->faults.armed_ns = d->t0;        /* the fault schedule starts with the mount */
	status = loop(d);
	if (d->cache_state[0] && d->model->save_state(d->dev, d->cache_state, err, sizeof(err)))
		status = runtime_error("%s", err);
	if (d->trace && fflush(d->trace))
		status = runtime_error("writing --trace %s: %s", d->trace_path, strerror(errno));
	if (d->ready[0])
		unlink(d->ready);
	if (d->pidfile[0])
		unlink(d->pidfile);
	fuse_session_unmount(d->se);
	fuse_session_destroy(d->se);
	return status;
}
