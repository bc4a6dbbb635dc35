/*
 * mount_cmd.c - `simdisk mount MOUNTPOINT --profile P --backing F ...`: the
 * mount daemon's command line (options, checks, the profile) before daemon_run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "daemon_int.h"
#include "fail.h"
#include "operands.h"
#include "opts.h"
#include "profile.h"

static const char description[] =
	"Mounts a FUSE file system at MOUNTPOINT holding MOUNTPOINT/disk, a file of --size bytes\n"
	"stored in the sparse --backing file, which behaves like the device of --profile: every\n"
	"request is served one at a time, in arrival order, and completes when the device model\n"
	"says. MOUNTPOINT/stats is a JSON snapshot of the counters (reads, writes, bytes, cache\n"
	"hits and hit bytes, time in queue, seek, rotation, transfer, overhead, ...), taken when\n"
	"it is opened; writing `enable` or `disable` to MOUNTPOINT/control arms or disarms the\n"
	"profile's fault keys, `setup` answers requests without waiting for the model's time\n"
	"(the model still serves them, on a clock of its own that set-up moves ahead by the time\n"
	"skipped, stats.setup.skipped_ns; no fault, no busy time, counted only in stats.setup and\n"
	"the model's own counters) until `timed`, for filling caches before a measurement.\n"
	"--trace writes one CSV line per IO:\n"
	"  t_ns,op,offset,size,queue_ns,device_wait_ns,overhead_ns,seek_ns,rotation_ns,\n"
	"  transfer_ns,gc_ns,service_ns,measured_ns,hit_bytes,hit,backing_ns,start_late_ns,\n"
	"  late_cause,fault_ns,fault\n"
	"t is the arrival since the mount; queue is the wait for the device (background work);\n"
	"service is the model's time from start to completion (its parts: device_wait ... gc);\n"
	"measured is the daemon's own start-to-reply time; hit is hit, miss, partial or - (no\n"
	"cache); backing is the backing file's IO; start_late is how long after its planned\n"
	"start the reply began, and late_cause says why when that is over 10 us: backing (its IO\n"
	"ended after the planned start) or wakeup (it ended in time; the daemon woke or ran\n"
	"late), - otherwise; fault_ns and fault are what an injected fault added (a delay, a\n"
	"stall) or did (read_error, write_error, bad_block, timeout, offline). The stats count\n"
	"late starts by cause and the faults by kind. A profile is a NAME in --profile-dir or a\n"
	"path to a flat YAML file; --set overrides its keys (key=value,key=value; listed at\n"
	"the end of --help). Stop with SIGTERM, SIGINT or fusermount3 -u; the cache\n"
	"state (--cache-state, tiered profiles) is then saved.\n"
	"Exit status: 0 clean shutdown, 1 runtime failure, 2 usage error (a bad profile, a\n"
	"corrupt or truncated --cache-state).";

int mount_command(int argc, char **argv)
{
	struct mount_opts o = { 0 };
	struct profile_opts po = { 0 };
	struct opt table[] = {
		PROFILE_OPTION_ROWS(&po),
		{ .name = "backing", .kind = OPT_STRING, .dest = &o.backing, .metavar = "FILE",
		  .help = "sparse file holding the data (created if missing)", .required = true },
		{ .name = "size", .kind = OPT_SIZE, .dest = &o.size,
		  .help = "size of MOUNTPOINT/disk: the first SIZE bytes of the device "
			  "(default: the profile's capacity)" },
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
		{ .name = "normal-priority", .kind = OPT_FLAG, .dest = &o.normal_priority,
		  .help = "run at nice 0 (default: nice -20, so deadlines are met on a busy machine)" },
		{ 0 },
	};
	struct cli cli = { .prog = "simdisk mount", .command = "simdisk mount MOUNTPOINT",
			   .description = description, .opts = table };
	struct operands ops;
	const char *mountpoint = NULL;
	struct profile *profile;
	struct daemon *d = NULL;
	char err[2048];
	struct stat st;
	int status;

	status = profile_command_finish(&cli, operands_start(&cli, NULL, argc, argv, &ops), &po,
					&profile);
	int positionals = ops.count;

	if (positionals == 1)
		mountpoint = ops.words[0];
	operands_free(&ops);
	if (status != OPTS_GO_ON)
		return status;
	if (positionals == 0)
		status = usage_error(&cli, "missing MOUNTPOINT");
	else if (positionals > 1)
		status = usage_error(&cli, "more than one MOUNTPOINT");
	else if (stat(mountpoint, &st) || !S_ISDIR(st.st_mode))
		status = usage_error(&cli, "MOUNTPOINT %s is not a directory", mountpoint);
	else if (!(d = calloc(1, sizeof(*d))))
		status = runtime_error("out of memory");
	if (!d) {
		profile_free(profile);
		return status;
	}
	d->fd = -1;
	d->signal_pipe[0] = d->signal_pipe[1] = -1;
	d->profile = profile;
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
	else if (d->cache_state[0] && d->model->check_state &&
		 d->model->check_state(d->profile, d->cache_state, err, sizeof(err))) {
		fprintf(stderr, "simdisk: %s\n", err);   /* bad input: one line, nothing touched */
		status = EXIT_USAGE;
	}
	if (!status) {
		char mnt[PATH_MAX];

		if (!realpath(mountpoint, mnt))
			status = runtime_error("%s: %s", mountpoint, strerror(errno));
		else {
			d->mountpoint = mnt;
			status = daemon_run(d, &o);
		}
	}
	if (d->dev)
		d->model->destroy(d->dev);
	faults_free(&d->faults);
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
