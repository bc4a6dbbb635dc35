/*
 * daemon_int.h - the mount daemon's state, shared by its files (internal to simdisk).
 *
 * daemon.c      the request loop, background work, signals, process set-up, mount
 *               and shutdown
 * serve.c       one request: serve_io (faults, model, backing IO, deadline, reply); set-up mode
 * fuse_ops.c    the FUSE operations on MOUNTPOINT/, disk, stats and control
 * backing.c     the backing file (O_DIRECT through aligned buffers) and file helpers
 * stats.c       counters, the stats document and the per-IO trace
 * mount_cmd.c   `simdisk mount MOUNTPOINT ...`: the command line
 */
#ifndef SIMDISK_DAEMON_INT_H
#define SIMDISK_DAEMON_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <fuse_lowlevel.h>

#include "device.h"
#include "hist.h"
#include "profile.h"

#define MAX_IO (1u << 20)           /* max_read and max_write */
#define ALIGN 4096u                 /* O_DIRECT alignment of the backing file */
#define AUX_BYTES (64u << 10)       /* for models reading block data (lz4) */
#define TRACE_BUFFER (1u << 20)
#define ATTR_TIMEOUT 1.0
#define MAX_REPLY_LEAD_NS 2000000    /* never start a reply more than 2 ms early */
#define SIZE_CLASSES 10              /* reply times kept for <= 4K, 8K, ..., >= 1M */
#define DAEMON_NICE (-20)            /* the normal class at its highest weight (daemon.c) */

enum { INO_ROOT = 1, INO_DISK = 2, INO_STATS = 3, INO_CONTROL = 4 };

#define NOPS 4
extern const char *const op_names[NOPS];   /* by enum io_op: read, write, flush, prefetch */

/*
 * When a reply starts more than LATE_START_NS after its planned start (the
 * deadline less the reply's lead), the IO is late for one of two causes: the
 * backing IO ended after the planned start (the host disk was slower than the
 * model), or it ended in time and the daemon woke or ran late (the OS).
 */
#define LATE_START_NS 10000
enum late_cause { LATE_NONE, LATE_BACKING, LATE_WAKEUP, NLATE };
extern const char *const late_cause_names[NLATE];

struct io_times {
	uint64_t arrival, start, done;   /* monotonic ns; measured = done - start */
	uint64_t backing_ns;             /* the backing file's IO */
	uint64_t start_late_ns;          /* the reply's start after its planned start */
	enum late_cause cause;
	enum fault_kind fault;           /* what faults.c did to the request */
};

struct op_totals {
	uint64_t ios, bytes;
	uint64_t seeks;                 /* requests whose model charged seek time (needs_seek) */
	uint64_t queue, device_wait, overhead, seek, rotation, transfer, gc, fault, service, measured;
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
	struct faults faults;           /* injected faults (faults.h) */
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
	bool setup;                     /* 'setup' on MOUNTPOINT/control: requests skip the model's time */
	uint64_t clock_offset;          /* the model's clock is CLOCK_MONOTONIC + this (see serve.c) */
	/* counters */
	struct op_totals ops[NOPS];
	uint64_t cache_hits, cache_partial_hits, cache_misses, cache_hit_bytes;
	uint64_t late_ios;
	uint64_t setup_ios, setup_bytes; /* served while in set-up mode, outside every other counter */
	uint64_t late_starts[NLATE];     /* by cause ([LATE_NONE]: on time, not reported) */
	struct hist timing_error;
	struct hist start_late;          /* how late replies started, every request */
	FILE *trace;
	char *trace_buffer;
	struct fuse_session *se;
	int signal_pipe[2];
};

struct mount_opts {
	const char *backing;
	const char *pidfile, *ready, *trace, *cache_state;
	uint64_t size, spin_ns;
	int backing_io;
	bool foreground, allow_other, no_mlock, normal_priority, require_state;
};

enum { BACKING_DIRECT, BACKING_BUFFERED };
extern const char *const backing_io_names[];

/* backing.c */
void *aligned_buffer(size_t bytes);
int absolute(const char *path, char *out, size_t len);
int write_file_atomic(const char *path, const char *text);
int setup_backing(struct daemon *d, const char *path, int mode);
int backing_read(struct daemon *d, char *buf, uint64_t off, size_t len, char **out);
int backing_write(struct daemon *d, uint64_t off, size_t len, const char *data);
int env_read_data(void *ctx, uint64_t offset, void *buf, size_t len);
int env_identity(void *ctx, uint64_t out[4]);

/* stats.c */
extern const char trace_header[];
void account(struct daemon *d, const struct io_request *r, const struct io_times *tm,
	     const struct io_cost *c);
/* The trace line of a request answered with EIO by an injected fault (no other counters). */
void account_failed(struct daemon *d, const struct io_request *r, const struct io_times *tm);
char *stats_json(struct daemon *d, size_t *len);

/* serve.c */
void serve_io(struct daemon *d, fuse_req_t req, enum io_op op, uint64_t off, size_t len,
	      const char *data);
int setup_message(struct daemon *d, const char *msg, size_t len);
/* The model's clock (device_env.now): CLOCK_MONOTONIC + d->clock_offset. */
uint64_t model_clock(void *ctx);

/* daemon.c */
int daemon_run(struct daemon *d, const struct mount_opts *o);

/* fuse_ops.c */
extern const struct fuse_lowlevel_ops simdisk_operations;

#endif
