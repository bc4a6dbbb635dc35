/*
 * daemon.c - `simdisk MOUNTPOINT ...`: the FUSE daemon that makes a backing
 * file look like the device of a profile.
 *
 * For: the mount (MOUNTPOINT/disk and MOUNTPOINT/stats), the one-at-a-time
 * request loop, completing every request at the instant its device model
 * says, counters, the per-IO trace, and a clean shutdown.
 * Not for: device behaviour (the models), profile parsing (profile.c).
 *
 * Timing: a request is stamped when the loop receives it (arrival), starts
 * when the device is free (start = max(arrival, busy_until); background work
 * such as prefetching keeps the device busy), and is answered at start + the
 * model's service time. The loop does the backing-file IO first, then sleeps
 * to the absolute deadline with clock_nanosleep(TIMER_ABSTIME) and spins the
 * last --spin, so errors never accumulate; the reply is started early by the
 * time replies have been taking (a moving average per request size, at most
 * 0.5 ms), so that it is complete at the deadline. Requests the kernel queues while
 * one is served wait inside the kernel; the loop serves them in arrival order.
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
 * the stats (timing.late_ios, error_ns) and the trace (measured_ns) say so.
 *
 * For swap on the emulated disk the daemon locks its memory (mlockall),
 * marks itself an IO flusher (PR_SET_IO_FLUSHER) and allocates its buffers
 * before the mount; run it outside the memory cgroup under test. It runs
 * SCHED_FIFO (unless --no-realtime) so a busy machine does not make it late:
 * it only ever runs to serve a request or a short spin before a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "daemon.h"
#include "device.h"
#include "hist.h"
#include "json.h"
#include "opts.h"
#include "profile.h"
#include "timing.h"
#include "fullio.h"
#include "fail.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

#define MAX_IO (1u << 20)           /* max_read and max_write */
#define ALIGN 4096u                 /* O_DIRECT alignment of the backing file */
#define AUX_BYTES (64u << 10)       /* for models reading block data (lz4) */
#define TRACE_BUFFER (1u << 20)
#define ATTR_TIMEOUT 1.0
#define MAX_REPLY_LEAD_NS 500000     /* never answer more than 0.5 ms early */
#define SIZE_CLASSES 10              /* reply times kept for <= 4K, 8K, ..., >= 1M */
#define REALTIME_PRIORITY 10         /* SCHED_FIFO: above every normal task, below kernel threads */

enum { INO_ROOT = 1, INO_DISK = 2, INO_STATS = 3 };

static const char *const op_names[] = { "read", "write", "flush", "prefetch" };
#define NOPS 4

struct op_totals {
	uint64_t ios, bytes;
	uint64_t queue, device_wait, overhead, seek, rotation, transfer, gc, service, measured;
};

struct daemon {
	/* configuration */
	const char *mountpoint;
	char backing_path[PATH_MAX];
	char pidfile[PATH_MAX], ready[PATH_MAX], trace_path[PATH_MAX], cache_state[PATH_MAX];
	uint64_t size;
	uint64_t spin_ns;
	struct profile *profile;
	const struct device_model *model;
	struct device *dev;
	/* backing file */
	int fd;
	bool direct;
	char *iobuf;                    /* MAX_IO + 2 * ALIGN, aligned */
	char *auxbuf;                   /* AUX_BYTES + 2 * ALIGN, aligned */
	/* timing */
	uint64_t t0;
	uint64_t busy_until;
	uint64_t reply_lead_ns[SIZE_CLASSES];  /* how long a reply takes, by size: start that early */
	uint64_t last_activity;
	bool idle_done;
	uint64_t idle_not_before;     /* background work waits until then */
	time_t mount_time;
	/* counters */
	struct op_totals ops[NOPS];
	uint64_t cache_hits, cache_partial_hits, cache_misses, cache_hit_bytes;
	uint64_t late_ios;
	struct hist timing_error;
	FILE *trace;
	char *trace_buffer;
	struct fuse_session *se;
	int signal_pipe[2];
};

/* --- small helpers --- */

__attribute__((format(printf, 1, 2)))
static void warn(const char *fmt, ...)
{
	va_list ap;

	fputs("simdisk: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *aligned_buffer(size_t bytes)
{
	void *p = aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);

	if (p)
		memset(p, 0, bytes);   /* touch it now, before mlockall and before any IO */
	return p;
}

/* An absolute path for path (relative to the current directory), since the daemon chdirs to /. */
static int absolute(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (!path || !*path) {
		out[0] = '\0';
		return 0;
	}
	if (path[0] == '/')
		return snprintf(out, len, "%s", path) >= (int)len ? -1 : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(out, len, "%s/%s", cwd, path) >= (int)len ? -1 : 0;
}

/* Writes text to path atomically (a temporary file renamed over it). */
static int write_file_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	bool ok = fputs(text, f) >= 0;

	if (fclose(f) || !ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

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

/* --- the backing file --- */

static int pread_full(int fd, char *buf, size_t len, uint64_t offset)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {              /* beyond the backing file's end: zeros */
			memset(buf, 0, len);
			return 0;
		}
		buf += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

/* Reads [off, off+len) through the aligned buffer buf; *out points at the bytes. */
static int backing_read(struct daemon *d, char *buf, uint64_t off, size_t len, char **out)
{
	uint64_t lo = off / ALIGN * ALIGN, hi = (off + len + ALIGN - 1) / ALIGN * ALIGN;
	int err = pread_full(d->fd, buf, (size_t)(hi - lo), lo);

	*out = buf + (off - lo);
	return err;
}

static int backing_write(struct daemon *d, uint64_t off, size_t len, const char *data)
{
	uint64_t lo = off / ALIGN * ALIGN, hi = (off + len + ALIGN - 1) / ALIGN * ALIGN;
	int err = 0;

	if (lo != off)
		err = pread_full(d->fd, d->iobuf, ALIGN, lo);
	if (!err && (off + len) % ALIGN && (hi - ALIGN != lo || lo == off))
		err = pread_full(d->fd, d->iobuf + (hi - ALIGN - lo), ALIGN, hi - ALIGN);
	if (err)
		return err;
	memcpy(d->iobuf + (off - lo), data, len);
	return pwrite_full(d->fd, d->iobuf, (size_t)(hi - lo), lo);
}

static int env_read_data(void *ctx, uint64_t offset, void *buf, size_t len)
{
	struct daemon *d = ctx;
	char *at;
	int err;

	if (len > AUX_BYTES)
		return -EINVAL;
	err = backing_read(d, d->auxbuf, offset, len, &at);
	if (!err)
		memcpy(buf, at, len);
	return err;
}

static int env_identity(void *ctx, uint64_t out[4])
{
	struct daemon *d = ctx;
	struct stat st;

	if (fstat(d->fd, &st))
		return -1;
	out[0] = (uint64_t)st.st_dev;
	out[1] = (uint64_t)st.st_ino;
	out[2] = (uint64_t)st.st_size;
	out[3] = (uint64_t)st.st_mtim.tv_sec * NS_PER_SEC + (uint64_t)st.st_mtim.tv_nsec;
	return 0;
}

/* --- counters and trace --- */

static const char *hit_word(const struct io_cost *c, uint64_t len)
{
	if (!c->cache_lookup)
		return "-";
	return c->hit_bytes == 0 ? "miss" : c->hit_bytes >= len ? "hit" : "partial";
}

static void account(struct daemon *d, const struct io_request *r, uint64_t arrival,
		    uint64_t start, const struct io_cost *c, uint64_t done)
{
	struct op_totals *t = &d->ops[r->op];
	uint64_t measured = done - start;

	t->ios++;
	t->bytes += r->length;
	t->queue += start - arrival;
	t->device_wait += c->queue_ns;
	t->overhead += c->overhead_ns;
	t->seek += c->seek_ns;
	t->rotation += c->rotation_ns;
	t->transfer += c->transfer_ns;
	t->gc += c->gc_ns;
	t->service += c->total_ns;
	t->measured += measured;
	if (r->op != IO_PREFETCH) {
		hist_record(&d->timing_error, measured > c->total_ns ? measured - c->total_ns :
			    c->total_ns - measured);
		d->late_ios += measured > c->total_ns;
	}
	if (c->cache_lookup && r->op == IO_READ) {
		if (c->hit_bytes == 0)
			d->cache_misses++;
		else if (c->hit_bytes >= r->length)
			d->cache_hits++;
		else
			d->cache_partial_hits++;
		d->cache_hit_bytes += c->hit_bytes;
	}
	if (d->trace)
		fprintf(d->trace, "%llu,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s\n",
			(unsigned long long)(arrival - d->t0), op_names[r->op],
			(unsigned long long)r->offset, (unsigned long long)r->length,
			(unsigned long long)(start - arrival), (unsigned long long)c->queue_ns,
			(unsigned long long)c->overhead_ns, (unsigned long long)c->seek_ns,
			(unsigned long long)c->rotation_ns, (unsigned long long)c->transfer_ns,
			(unsigned long long)c->gc_ns, (unsigned long long)c->total_ns,
			(unsigned long long)measured, (unsigned long long)c->hit_bytes,
			hit_word(c, r->length));
}

static const char trace_header[] =
	"t_ns,op,offset,size,queue_ns,device_wait_ns,overhead_ns,seek_ns,rotation_ns,"
	"transfer_ns,gc_ns,service_ns,measured_ns,hit_bytes,hit\n";

static void write_times(struct json *j, const struct op_totals *t)
{
	json_kv_uint(j, "queue", t->queue);
	json_kv_uint(j, "device_wait", t->device_wait);
	json_kv_uint(j, "overhead", t->overhead);
	json_kv_uint(j, "seek", t->seek);
	json_kv_uint(j, "rotation", t->rotation);
	json_kv_uint(j, "transfer", t->transfer);
	json_kv_uint(j, "gc", t->gc);
	json_kv_uint(j, "service", t->service);
	json_kv_uint(j, "measured", t->measured);
}

/* The stats document, in a malloc'd string. */
static char *stats_json(struct daemon *d, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	struct op_totals host = { 0 };
	struct json j;

	if (!f)
		return NULL;
	for (int op = IO_READ; op <= IO_FLUSH; op++) {
		const struct op_totals *t = &d->ops[op];

		host.queue += t->queue;
		host.device_wait += t->device_wait;
		host.overhead += t->overhead;
		host.seek += t->seek;
		host.rotation += t->rotation;
		host.transfer += t->transfer;
		host.gc += t->gc;
		host.service += t->service;
		host.measured += t->measured;
	}
	json_init(&j, f, true);
	json_object_begin(&j);
	json_kv_string(&j, "profile", d->profile->name);
	json_kv_string(&j, "model", d->model->name);
	json_kv_uint(&j, "size", d->size);
	json_kv_string(&j, "backing", d->backing_path);
	json_kv_string(&j, "backing_io", d->direct ? "direct" : "buffered");
	json_kv_uint(&j, "uptime_ns", monotonic_ns() - d->t0);
	json_kv_uint(&j, "reads", d->ops[IO_READ].ios);
	json_kv_uint(&j, "writes", d->ops[IO_WRITE].ios);
	json_kv_uint(&j, "flushes", d->ops[IO_FLUSH].ios);
	json_kv_uint(&j, "read_bytes", d->ops[IO_READ].bytes);
	json_kv_uint(&j, "write_bytes", d->ops[IO_WRITE].bytes);
	json_kv_uint(&j, "cache_hits", d->cache_hits);
	json_kv_uint(&j, "cache_partial_hits", d->cache_partial_hits);
	json_kv_uint(&j, "cache_misses", d->cache_misses);
	json_kv_uint(&j, "cache_hit_bytes", d->cache_hit_bytes);
	json_kv_object_begin(&j, "time_ns");
	write_times(&j, &host);
	json_object_end(&j);
	json_kv_object_begin(&j, "by_op");
	for (int op = 0; op < NOPS; op++) {
		json_kv_object_begin(&j, op_names[op]);
		json_kv_uint(&j, "ios", d->ops[op].ios);
		json_kv_uint(&j, "bytes", d->ops[op].bytes);
		json_kv_object_begin(&j, "time_ns");
		write_times(&j, &d->ops[op]);
		json_object_end(&j);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_kv_object_begin(&j, "timing");
	json_kv_uint(&j, "ios", d->timing_error.count);
	json_kv_uint(&j, "late_ios", d->late_ios);
	json_kv_object_begin(&j, "error_ns");
	json_kv_double(&j, "mean", hist_mean(&d->timing_error));
	json_kv_uint(&j, "p50", hist_percentile(&d->timing_error, 50));
	json_kv_uint(&j, "p99", hist_percentile(&d->timing_error, 99));
	json_kv_uint(&j, "max", d->timing_error.max);
	json_object_end(&j);
	json_object_end(&j);
	json_kv_object_begin(&j, "device");
	if (d->model->stats)
		d->model->stats(d->dev, &j);
	json_object_end(&j);
	json_object_end(&j);
	if (json_finish(&j) || fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* --- FUSE operations --- */

static struct daemon *daemon_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct daemon *d, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = d->mount_time;
	st->st_blksize = ALIGN;
	switch (ino) {
	case INO_ROOT:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		break;
	case INO_DISK:
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)d->size;
		st->st_blocks = (blkcnt_t)(d->size / 512);
		break;
	case INO_STATS:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		break;
	}
}

static void sd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct daemon *d = userdata;
	char text[PATH_MAX * 2 + 128];

	conn->max_write = MAX_IO;
	conn->max_read = MAX_IO;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (d->ready[0]) {
		snprintf(text, sizeof(text), "{\"pid\": %d, \"mountpoint\": \"%s\", \"size\": %llu}\n",
			 (int)getpid(), d->mountpoint, (unsigned long long)d->size);
		if (write_file_atomic(d->ready, text))
			warn("cannot write --ready %s: %s", d->ready, strerror(errno));
	}
}

static void sd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *d = daemon_of(req);
	struct fuse_entry_param e = { .attr_timeout = ATTR_TIMEOUT, .entry_timeout = ATTR_TIMEOUT };

	if (parent != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (strcmp(name, "disk") == 0)
		e.ino = INO_DISK;
	else if (strcmp(name, "stats") == 0)
		e.ino = INO_STATS;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(d, e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void sd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino < INO_ROOT || ino > INO_STATS) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(daemon_of(req), ino, &st);
	fuse_reply_attr(req, &st, ATTR_TIMEOUT);
}

static void sd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct stat st;

	(void)fi;
	if ((to_set & FUSE_SET_ATTR_SIZE) && (ino != INO_DISK || (uint64_t)attr->st_size != d->size)) {
		fuse_reply_err(req, EPERM);   /* the disk has a fixed size */
		return;
	}
	fill_attr(d, ino, &st);
	fuse_reply_attr(req, &st, ATTR_TIMEOUT);
}

static void sd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const struct { const char *name; fuse_ino_t ino; } entries[] = {
		{ ".", INO_ROOT }, { "..", INO_ROOT }, { "disk", INO_DISK }, { "stats", INO_STATS },
	};
	char buf[1024];
	size_t used = 0;

	(void)fi;
	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off; i < 4; i++) {
		struct stat st = { .st_ino = entries[i].ino,
				   .st_mode = entries[i].ino == INO_ROOT ? S_IFDIR : S_IFREG };
		size_t need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, entries[i].name,
						&st, i + 1);

		if (need > sizeof(buf) - used || used + need > size)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

struct snapshot {
	size_t len;
	char *text;
};

static void sd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);

	if (ino == INO_DISK) {
		fi->direct_io = 1;
		fi->keep_cache = 0;
		fuse_reply_open(req, fi);
		return;
	}
	if (ino != INO_STATS) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	struct snapshot *s = malloc(sizeof(*s));

	if (!s || !(s->text = stats_json(d, &s->len))) {
		free(s);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)s;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void sd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS && fi->fh) {
		struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;

		free(s->text);
		free(s);
	}
	fuse_reply_err(req, 0);
}

/*
 * The reply itself (copying the data to the kernel, waking the reader) takes
 * from tens of microseconds (4 KiB) to a few hundred (1 MiB); start it that
 * much before the deadline so the request completes at the deadline. A slow
 * moving average per power-of-two size class, capped.
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
	*lead = (*lead * 15 + took) / 16;
}

/* One request on the disk: model, backing IO, deadline, reply, counters. */
static void serve_io(struct daemon *d, fuse_req_t req, enum io_op op, uint64_t off, size_t len,
		     const char *data)
{
	uint64_t arrival = monotonic_ns();
	struct io_cost cost = { 0 };
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
	uint64_t start = arrival > d->busy_until ? arrival : d->busy_until;
	struct io_request r = { .op = op, .offset = off, .length = len, .data = data };

	d->model->service(d->dev, &r, start, &cost);
	uint64_t deadline = start + cost.total_ns;

	if (op == IO_READ)
		err = backing_read(d, d->iobuf, off, len, &out);
	else if (op == IO_WRITE)
		err = backing_write(d, off, len, data);
	else if (fdatasync(d->fd))
		err = -errno;
	d->busy_until = deadline;
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	uint64_t lead = d->reply_lead_ns[size_class(op == IO_READ ? len : 0)];

	wait_until(deadline > lead ? deadline - lead : 0, d->spin_ns);
	uint64_t replying = monotonic_ns();

	if (op == IO_READ)
		fuse_reply_buf(req, out, len);
	else if (op == IO_WRITE)
		fuse_reply_write(req, len);
	else
		fuse_reply_err(req, 0);
	uint64_t done = monotonic_ns();

	learn_reply_time(d, op == IO_READ ? len : 0, done - replying);

	d->last_activity = done;
	d->idle_done = false;
	account(d, &r, arrival, start, &cost, done);
}

static void sd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);

	if (ino == INO_DISK) {
		serve_io(d, req, IO_READ, (uint64_t)off, size < MAX_IO ? size : MAX_IO, NULL);
	} else if (ino == INO_STATS) {
		const struct snapshot *s = (const struct snapshot *)(uintptr_t)fi->fh;
		size_t from = (size_t)off < s->len ? (size_t)off : s->len;
		size_t n = s->len - from < size ? s->len - from : size;

		fuse_reply_buf(req, s->text + from, n);
	} else {
		fuse_reply_err(req, EISDIR);
	}
}

static void sd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (size > MAX_IO) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	serve_io(daemon_of(req), req, IO_WRITE, (uint64_t)off, size, buf);
}

static void sd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);   /* close(2): nothing to do; fsync is the device flush */
}

static void sd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	if (ino != INO_DISK) {
		fuse_reply_err(req, 0);
		return;
	}
	serve_io(daemon_of(req), req, IO_FLUSH, 0, 0, NULL);
}

static void sd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct daemon *d = daemon_of(req);
	struct statvfs st = {
		.f_bsize = ALIGN, .f_frsize = ALIGN, .f_blocks = d->size / ALIGN,
		.f_files = 3, .f_namemax = 255,
	};

	(void)ino;
	fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops operations = {
	.init = sd_init,
	.lookup = sd_lookup,
	.getattr = sd_getattr,
	.setattr = sd_setattr,
	.readdir = sd_readdir,
	.open = sd_open,
	.release = sd_release,
	.read = sd_read,
	.write = sd_write,
	.flush = sd_flush,
	.fsync = sd_fsync,
	.statfs = sd_statfs,
};

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
	uint64_t end = d->model->idle(d->dev, start, &r, &cost);

	if (!end) {
		d->idle_done = true;
		return;
	}
	if (!r.length) {
		d->idle_not_before = end;    /* the model waits for itself, the disk is free */
		return;
	}
	d->busy_until = end;
	account(d, &r, start, start, &cost, end);
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

/* --- options and set-up --- */

struct mount_opts {
	const char *profile, *backing, *profile_dir, *overrides;
	const char *pidfile, *ready, *trace, *cache_state;
	uint64_t size, spin_ns;
	int backing_io;
	bool foreground, allow_other, no_mlock, no_realtime, require_state;
};

static const char description[] =
	"Mounts a FUSE file system at MOUNTPOINT holding MOUNTPOINT/disk, a file of --size bytes\n"
	"stored in the sparse --backing file, which behaves like the device of --profile: every\n"
	"request is served one at a time, in arrival order, and completes when the device model\n"
	"says. MOUNTPOINT/stats is a JSON snapshot of the counters (reads, writes, bytes, cache\n"
	"hits and hit bytes, time in queue, seek, rotation, transfer, overhead, ...), taken when\n"
	"it is opened. --trace writes one CSV line per IO:\n"
	"  t_ns,op,offset,size,queue_ns,device_wait_ns,overhead_ns,seek_ns,rotation_ns,\n"
	"  transfer_ns,gc_ns,service_ns,measured_ns,hit_bytes,hit\n"
	"t is the arrival since the mount; queue is the wait for the device (background work);\n"
	"service is the model's time from start to completion (its parts: device_wait ... gc);\n"
	"measured is the daemon's own start-to-reply time; hit is hit, miss, partial or - (no\n"
	"cache). A profile is a NAME in --profile-dir or a path to a flat YAML file; --set\n"
	"overrides its keys (key=value,key=value). Stop with SIGTERM, SIGINT or fusermount3 -u;\n"
	"the cache state (--cache-state, tiered profiles) is then saved.\n"
	"'simdisk model --help' describes the analytic predictions.\n"
	"Exit status: 0 clean shutdown, 1 runtime failure, 2 usage error.";

/* Separates the one positional argument (MOUNTPOINT) from the options. */
static int take_positional(const struct cli *cli, int argc, char **argv, int *newc, char **newv,
			   const char **positional)
{
	int count = 0;

	*newc = 0;
	newv[(*newc)++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i];

		if (strncmp(w, "--", 2) == 0 && w[2]) {
			newv[(*newc)++] = argv[i];
			if (strchr(w, '='))
				continue;
			for (const struct opt *o = cli->opts; o->name; o++) {
				if (strcmp(o->name, w + 2) == 0 && o->kind != OPT_FLAG && i + 1 < argc) {
					newv[(*newc)++] = argv[++i];
					break;
				}
			}
		} else if (w[0] == '-') {
			newv[(*newc)++] = argv[i];   /* let the parser report it */
		} else {
			*positional = w;
			count++;
		}
	}
	newv[*newc] = NULL;
	return count;
}

static const char *const backing_io_names[] = { "direct", "buffered", NULL };
enum { BACKING_DIRECT, BACKING_BUFFERED };

static int setup_backing(struct daemon *d, const char *path, int mode)
{
	struct stat st;

	if (absolute(path, d->backing_path, sizeof(d->backing_path)))
		return runtime_error("--backing %s: path too long", path);
	d->fd = open(d->backing_path, O_RDWR | O_CREAT | O_CLOEXEC |
		     (mode == BACKING_DIRECT ? O_DIRECT : 0), 0644);
	d->direct = d->fd >= 0 && mode == BACKING_DIRECT;
	if (d->fd < 0 && errno == EINVAL && mode == BACKING_DIRECT) {
		d->fd = open(d->backing_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (d->fd >= 0)
			warn("%s does not allow O_DIRECT; using buffered IO (the host page cache "
			     "will hold its data)", d->backing_path);
	}
	if (d->fd < 0)
		return runtime_error("cannot open --backing %s: %s", d->backing_path, strerror(errno));
	if (fstat(d->fd, &st))
		return runtime_error("cannot stat %s: %s", d->backing_path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return runtime_error("--backing %s is not a regular file", d->backing_path);
	if ((uint64_t)st.st_size < d->size && ftruncate(d->fd, (off_t)d->size))
		return runtime_error("cannot extend %s to %llu bytes: %s", d->backing_path,
				     (unsigned long long)d->size, strerror(errno));
	if (!d->direct)
		posix_fadvise(d->fd, 0, 0, POSIX_FADV_RANDOM);   /* no host read-ahead */
	return 0;
}

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
	if (!o->no_realtime) {
		struct sched_param sp = { .sched_priority = REALTIME_PRIORITY };

		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			warn("SCHED_FIFO: %s (deadlines may slip when the CPUs are busy)",
			     strerror(errno));
	}
}

static int run(struct daemon *d, const struct mount_opts *o)
{
	char err[1024];
	struct device_env env = { .read_data = env_read_data, .identity = env_identity, .ctx = d };
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
	if (install_signals(d))
		return runtime_error("cannot install signal handlers: %s", strerror(errno));
	d->se = fuse_session_new(&args, &operations, sizeof(operations), d);
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

int mount_command(int argc, char **argv)
{
	struct mount_opts o = { 0 };
	struct opt table[] = {
		{ .name = "profile", .kind = OPT_STRING, .dest = &o.profile, .metavar = "P",
		  .help = "device profile: a name in --profile-dir or a path", .required = true },
		{ .name = "backing", .kind = OPT_STRING, .dest = &o.backing, .metavar = "FILE",
		  .help = "sparse file holding the data (created if missing)", .required = true },
		{ .name = "size", .kind = OPT_SIZE, .dest = &o.size,
		  .help = "size of MOUNTPOINT/disk: the first SIZE bytes of the device "
			  "(default: the profile's capacity)" },
		{ .name = "profile-dir", .kind = OPT_STRING, .dest = &o.profile_dir, .metavar = "DIR",
		  .help = "where profile names are looked up (default: config/devices of this "
			  "repository)" },
		{ .name = "set", .kind = OPT_STRING, .dest = &o.overrides, .metavar = "K=V,...",
		  .help = "override profile keys" },
		{ .name = "foreground", .kind = OPT_FLAG, .dest = &o.foreground,
		  .help = "stay in the foreground (default: go to the background once mounted)" },
		{ .name = "pidfile", .kind = OPT_STRING, .dest = &o.pidfile, .metavar = "FILE",
		  .help = "write the daemon's pid here (removed at exit)" },
		{ .name = "ready", .kind = OPT_STRING, .dest = &o.ready, .metavar = "FILE",
		  .help = "write {pid, mountpoint, size} here once the mount is live (removed at exit)" },
		{ .name = "trace", .kind = OPT_STRING, .dest = &o.trace, .metavar = "FILE",
		  .help = "write one CSV line per IO here" },
		{ .name = "cache-state", .kind = OPT_STRING, .dest = &o.cache_state, .metavar = "FILE",
		  .help = "tiered: load the cache from FILE if it exists (warm start), save it at exit" },
		{ .name = "require-state", .kind = OPT_FLAG, .dest = &o.require_state,
		  .help = "with --cache-state: a warm start or nothing; FILE must exist and hold cached "
			  "blocks" },
		{ .name = "backing-io", .kind = OPT_ENUM, .dest = &o.backing_io, .choices = backing_io_names,
		  .default_text = "direct",
		  .help = "direct: O_DIRECT, the host page cache never holds the disk's data; "
			  "buffered: through the page cache (faster when the host disk is busy)" },
		{ .name = "spin", .kind = OPT_DURATION, .dest = &o.spin_ns, .default_text = "200us",
		  .help = "busy-wait this long before each deadline instead of sleeping" },
		{ .name = "allow-other", .kind = OPT_FLAG, .dest = &o.allow_other,
		  .help = "let other users open the mount" },
		{ .name = "no-mlock", .kind = OPT_FLAG, .dest = &o.no_mlock,
		  .help = "do not lock the daemon's memory" },
		{ .name = "no-realtime", .kind = OPT_FLAG, .dest = &o.no_realtime,
		  .help = "stay in the normal scheduling class (default: SCHED_FIFO, so deadlines "
			  "are met on a busy machine)" },
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk", .command = "simdisk MOUNTPOINT",
			   .description = description, .opts = table };
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	const char *mountpoint = NULL;
	struct daemon *d = NULL;
	char dir[PATH_MAX], err[2048];
	struct stat st;
	int nargs, status;

	if (!args)
		return runtime_error("out of memory");
	int positionals = take_positional(&cli, argc, argv, &nargs, args, &mountpoint);
	enum opts_result parsed = opts_parse(&cli, nargs, args);

	free(args);
	if (parsed == OPTS_HELP)
		return 0;
	if (parsed == OPTS_ERROR)
		return EXIT_USAGE;
	if (positionals == 0)
		return usage_error(&cli, "missing MOUNTPOINT");
	if (positionals > 1)
		return usage_error(&cli, "more than one MOUNTPOINT");
	if (stat(mountpoint, &st) || !S_ISDIR(st.st_mode))
		return usage_error(&cli, "MOUNTPOINT %s is not a directory", mountpoint);
	if (!o.profile_dir) {
		profile_default_dir(dir, sizeof(dir));
		o.profile_dir = dir;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return runtime_error("out of memory");
	d->fd = -1;
	d->signal_pipe[0] = d->signal_pipe[1] = -1;
	d->profile = profile_load(o.profile, o.profile_dir, o.overrides, err, sizeof(err));
	if (!d->profile) {
		free(d);
		return usage_error(&cli, "%s", err);
	}
	d->model = d->profile->model;
	uint64_t capacity = d->model->capacity(d->profile);

	d->size = opts_find(&cli, "size")->given ? o.size : capacity;
	d->spin_ns = o.spin_ns;
	d->mountpoint = mountpoint;
	status = 0;
	if (d->size == 0 || d->size % ALIGN)
		status = usage_error(&cli, "--size must be a positive multiple of %u", ALIGN);
	else if (d->size > capacity)
		status = usage_error(&cli, "--size %llu is larger than the profile's capacity %llu",
				     (unsigned long long)d->size, (unsigned long long)capacity);
	else if (o.require_state && !o.cache_state)
		status = usage_error(&cli, "--require-state needs --cache-state");
	else if (o.cache_state && !d->model->load_state)
		status = usage_error(&cli, "--cache-state needs a profile with a cache (model tiered), "
				     "not %s", d->model->name);
	else if (absolute(o.pidfile, d->pidfile, sizeof(d->pidfile)) ||
		 absolute(o.ready, d->ready, sizeof(d->ready)) ||
		 absolute(o.trace, d->trace_path, sizeof(d->trace_path)) ||
		 absolute(o.cache_state, d->cache_state, sizeof(d->cache_state)))
		status = usage_error(&cli, "a path is too long");
	if (!status) {
		char mnt[PATH_MAX];

		if (!realpath(mountpoint, mnt))
			status = runtime_error("%s: %s", mountpoint, strerror(errno));
		else {
			d->mountpoint = mnt;
			status = run(d, &o);
		}
	}
	if (d->dev)
		d->model->destroy(d->dev);
	if (d->trace)
		fclose(d->trace);
	free(d->trace_buffer);
	if (d->fd >= 0)
		close(d->fd);
	free(d->iobuf);
	free(d->auxbuf);
	profile_free(d->profile);
	free(d);
	return status;
}
