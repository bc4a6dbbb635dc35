/*
 * main.c - superfetch: Superfetch's working-set restore on Linux.
 *
 * Watches one process (the victim) and its memory cgroup; reads the victim's
 * swapped-out pages back into the swap cache (scan.c: process_madvise
 * MADV_WILLNEED, most recently evicted first, in --group groups) and then the
 * file pages the group had cached (files.c), at low priority. Prints one JSON
 * report of what it did when it stops (--stop file, SIGTERM or SIGINT).
 * --poll, --group, --depth, --priority and --mode have no default here: the
 * harness passes them from the schema (config/schema/readyboost.yaml:
 * agent_poll_ms, agent_group, agent_depth, agent_priority; payoff's
 * agent_modes) or its arms (each readyboost arm's mode), which hold each
 * value and its reason, so the tool refuses a command line without them.
 *
 * When it reads (the design, with its sources):
 *  - Pressure has ended when the group's free memory (limit less usage) is at
 *    least --free-start and no page of the group was swapped out since the
 *    last look; it holds until free memory falls below --free-stop or a page
 *    of the group is swapped out. These are swap-prefetch's conditions
 *    (Kolivas, LKML 2006: prefetch only on "lack of swapping out" with "at
 *    least 3* pages_high free", from 4x down to 3x): the defaults are 4x and
 *    3x the zones' high watermark share (/proc/zoneinfo) of the group's
 *    limit. Both are the group's, as the group plays the machine's RAM: a
 *    swap-out is the swap its pages hold growing between two looks (v1
 *    memory.stat total_swap + total_swapcached, v2 memory.swap.current:
 *    host.c), which a page read back or a clean one dropped again leaves as
 *    it is, and a process outside the group swapping out is no pressure on
 *    it. Checked before every group, so a hog that allocates stops the agent
 *    within one group, and while idle every --poll. The report counts, per
 *    phase, the looks and those that found the group swapping out or its
 *    free memory low.
 *  - --mode after: nothing is read until the --go file appears (the hogs were
 *    closed: seed 000's recovery); --mode between: it reads while the hogs run
 *    too, under pressure as well ("Superfetch will randomly meet situations
 *    that pages cannot be prefetched into RAM, when memory hogs dominate the
 *    space": the pages it reads are clean and the next reclaim drops them
 *    without a write, yet every read passed through the disk's cache).
 *  - Low priority: nice 19, SCHED_BATCH and IOPRIO_CLASS_IDLE, what
 *    swap-prefetch's kprefetchd set. The idle IO class means "get I/O time only
 *    when no one else needs the disk" (ioprio(2)); the requests reach the
 *    emulated disk through a loop device and FUSE, which keep no priority, so
 *    the agent enforces it itself once pressure has ended: a group is issued
 *    only when the --devices have no request in flight. Under pressure (mode
 *    between) the hogs' page-outs keep the disk busy without a gap, so an idle
 *    class would read nothing there: the agent then issues its groups without
 *    waiting, still one group in flight at a time (the least it can take from
 *    the hogs and still read), and the hogs' time with and without it is
 *    measured.
 *  - Rate: groups of --group bytes (the schema's choice: swap-prefetch's
 *    "128kb groups") back to back under the rule above; --max-rate adds a
 *    cap (0: none). Russinovich's "a few
 *    pages per second with Very Low priority I/Os" describes Vista's idle
 *    trickle; at that rate 376 MB would take hours, while seed 000 saw its
 *    disk busy restoring for 155 s, so the bound here is the disk's idle time.
 *
 * Kernel facts the design rests on (verified on the running kernel by
 * tests/test_superfetch.py): a page read into the swap cache keeps its swap
 * slot unless swap is at least half full (mm/memory.c should_try_to_free_swap:
 * mem_cgroup_swap_full / vm_swap_full, an mlocked page, or a write fault on an
 * exclusive page), and a clean swap-cache page is reclaimed without a write
 * (mm/vmscan.c shrink_folio_list: add_to_swap only for a folio not yet in the
 * swap cache, pageout only for a dirty one). So pages the agent reads and the
 * next hog pushes out are dropped, not rewritten; the report counts asked-for
 * pages later seen on another slot (rewritten).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fail.h"
#include "agent.h"
#include "opts.h"
#include "timing.h"

#define MAX_WINDOWS 4000
#define COMPLETION_LIMIT_NS (10 * NS_PER_SEC)
#define FILE_CHUNK (1ULL << 20)
/* How often the victim's pagemap is read again (its mappings, new evictions, their order):
 * each read walks every page table entry of the victim (1.4 GB: 358,000 entries). */
#define RESCAN_NS (500 * NS_PER_MS)
#define GO_POLL_NS (2 * NS_PER_MS)

const char *const mode_names[] = { "after", "between", NULL };
static const char *const priority_names[] = { "low", "normal", NULL };

static const char description[] =
	"Watches --pid (the victim) and its memory --cgroup and reads the victim's\n"
	"swapped-out pages back into the swap cache with process_madvise(MADV_WILLNEED),\n"
	"most recently evicted first, in groups of --group bytes, then the pages of the\n"
	"--files that were cached when it started (posix_fadvise WILLNEED), at nice 19,\n"
	"SCHED_BATCH and the idle IO class, issuing a group only when the --devices have\n"
	"no request in flight. It reads when pressure has ended (the group's free memory\n"
	">= --free-start and no swap-out from the group since the last look; it stops\n"
	"below --free-stop or at the group's swap-out); --mode after waits for the --go\n"
	"file first, --mode between also reads while pressure lasts. After --go, once\n"
	"every swapped page is back and the files are re-read, it writes the --done file.\n"
	"It stops at the --stop file, SIGTERM or SIGINT, or when the victim exits, and\n"
	"prints a JSON report.\n"
	"Needs CAP_SYS_NICE and ptrace read access to the victim (root).\n"
	"Exit status: 0 done, 1 runtime failure, 2 usage error.";

static volatile sig_atomic_t signalled;

static void on_signal(int sig)
{
	signalled = sig;
}

static bool exists(const char *path)
{
	return path && access(path, F_OK) == 0;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC) };

	nanosleep(&ts, NULL);
}

static int touch_file(const char *path, const char *text)
{
	char tmp[4200];
	FILE *f;

	if (!path)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return runtime_error("%s: %s", tmp, strerror(errno));
	fputs(text, f);
	if (fclose(f) || rename(tmp, path))
		return runtime_error("%s: %s", path, strerror(errno));
	return 0;
}

/* Has pressure ended (see the header)? Reads the group's limit, usage and swap; remembers the
 * swap for the next look and counts what this look found. */
static bool pressure_ended(struct agent *a)
{
	struct counts *c = a->went ? &a->restore : &a->rounds;
	uint64_t limit, usage;
	int64_t slots = host_memcg_swap_slots(&a->h);
	bool swapping = slots > a->last_swap_slots;

	if (slots >= 0)
		a->last_swap_slots = slots;
	c->looks++;
	if (host_memcg(&a->h, &limit, &usage) || slots < 0)
		return false;
	uint64_t free_bytes = limit > usage ? limit - usage : 0;
	bool low = free_bytes < (a->reading ? a->free_stop : a->free_start);

	c->swapping_looks += swapping;
	c->low_free_looks += low;
	return !swapping && !low;
}

/* Waits up to one poll interval for the devices to have nothing in flight. */
static bool wait_idle(const struct agent *a)
{
	uint64_t until = monotonic_ns() + a->poll_ns;

	for (;;) {
		long n = host_inflight(&a->h);

		if (n <= 0)
			return true;
		if (monotonic_ns() >= until)
			return false;
		nap(NS_PER_MS);
	}
}

static struct counts *phase(struct agent *a)
{
	return a->went ? &a->restore : &a->rounds;
}

/* The agent's reads not yet completed, in 512-byte sectors: what it submitted (pswpin counts a
 * page when its read is submitted) less what the devices completed since it started (the
 * hogs write, they do not read). pswpin is the machine's: a read from another swap area (a
 * process outside the group swapping in from its own swap file) counts there too, and no
 * watched device ever completes it; wait_outstanding takes such reads back out. */
static int64_t outstanding(const struct agent *a)
{
	int64_t done = host_read_sectors(&a->h) - a->read_base;

	return a->submitted > done ? a->submitted - done : 0;
}

/* Waits until at most `sectors` of the agent's reads are outstanding, at most
 * COMPLETION_LIMIT_NS. Without watched devices (zram, zswap: synchronous) nothing waits.
 * When the devices have had nothing in flight at two looks a nap apart, every read the agent
 * submitted to them is complete whatever the count says: what is left was read elsewhere, and
 * is taken out of `submitted` and counted (the phase's `elsewhere`), or the count would never
 * come back down and every later group would wait on it. */
static void wait_outstanding(struct agent *a, int64_t sectors)
{
	uint64_t until = monotonic_ns() + COMPLETION_LIMIT_NS;
	int idle = 0;

	if (a->read_base < 0)
		return;
	for (int64_t left; (left = outstanding(a)) > sectors && monotonic_ns() < until; nap(NS_PER_MS)) {
		idle = host_inflight(&a->h) == 0 ? idle + 1 : 0;
		if (idle == 2) {
			a->submitted -= left;
			phase(a)->elsewhere += (uint64_t)left / (a->page / 512);
			return;
		}
	}
}

static void window_open(struct agent *a, uint64_t now)
{
	if (a->reading)
		return;
	a->reading = true;
	phase(a)->windows++;
	if (a->nwindows < MAX_WINDOWS)
		a->windows[a->nwindows++] = (struct window){ .start_ns = now, .end_ns = now, .restore = a->went };
}

static void window_close(struct agent *a, bool stopped_by_pressure)
{
	if (!a->reading)
		return;
	a->reading = false;
	if (stopped_by_pressure)
		phase(a)->stops++;
}

static int rescan(struct agent *a)
{
	int err = victim_scan(&a->v);

	a->last_scan_ns = monotonic_ns();
	if (err == -ENOENT || err == -ESRCH) {
		a->victim_gone = true;
		return err;
	}
	if (err)
		return runtime_error("scanning pid %d: %s", a->v.pid, strerror(-err));
	err = victim_candidates(&a->v, a->pass);
	return err ? runtime_error("out of memory ordering the candidates") : 0;
}

/* The --go file appeared: the hogs are gone; a fresh pass of the restore starts. */
static int go(struct agent *a)
{
	int err;

	window_close(a, false);
	a->went = true;
	a->go_ns = monotonic_ns();
	a->pass++;
	a->pass_pswpin0 = host_swapins();
	a->pass_pages = 0;
	if ((err = rescan(a)))
		return err;
	victim_coverage(&a->v, &a->swapped_at_go, &a->asked_rounds_at_go);
	return 0;
}

/* The list of this pass is used up: the restore of swap may be done; a new pass starts. */
static int next_pass(struct agent *a)
{
	int64_t in = host_swapins();
	int err;

	if ((err = rescan(a)))
		return err;
	if (a->v.ncand)
		return 0;          /* new evictions joined this pass */
	a->passes++;
	if (a->went && !a->swap_done) {
		/* After --go every swapped page was asked for: the restore of swap is done when at
		 * most --done-below bytes of the group are left only in swap (a page whose read is
		 * still in flight is in the swap cache already). More means a read the group could
		 * not take memory for (the hogs' last pages were still being written): ask again
		 * after a poll. */
		int64_t out = host_memcg_swapped(&a->h);

		if (out >= 0 && (uint64_t)out <= a->done_below) {
			a->swap_done = true;
			a->swap_done_ns = monotonic_ns();
		} else {
			nap(a->poll_ns);
		}
	} else if (in - a->pass_pswpin0 <= 0) {
		nap(a->poll_ns);   /* the pass read nothing: wait for new evictions */
	}
	a->pass++;
	a->pass_pswpin0 = in;
	a->pass_pages = 0;
	return victim_candidates(&a->v, a->pass) ? runtime_error("out of memory ordering the candidates") : 0;
}

/* Reads one group (with `gate`, only if the devices are idle); returns 1 if it did, 0 if not,
 * <0 on error. */
static int read_group(struct agent *a, bool gate)
{
	struct counts *c = phase(a);
	uint64_t now = monotonic_ns();

	if (a->max_rate && now < a->next_issue_ns) {
		nap(a->next_issue_ns - now);
		return 0;
	}
	if (gate && !wait_idle(a)) {
		c->idle_waits++;
		return 0;
	}
	/* One group in flight once pressure has ended; up to --depth while it lasts. */
	int64_t group_sectors = (int64_t)(a->group_bytes / 512);
	uint64_t depth = gate ? 1 : a->depth;
	uint64_t t = monotonic_ns();

	wait_outstanding(a, (int64_t)(depth - 1) * group_sectors);
	int64_t in0 = host_swapins(), p0 = host_vmstat("pswpin");
	long n = victim_ask_group(&a->v, a->group_bytes / a->page, a->pass, !a->went);

	if (n == -ESRCH) {
		a->victim_gone = true;
		return -1;
	}
	if (n == 0)
		return next_pass(a) < 0 ? -1 : 0;
	window_open(a, t);
	a->submitted += (host_vmstat("pswpin") - p0) * (int64_t)(a->page / 512);
	if (depth == 1)
		wait_outstanding(a, 0);
	uint64_t t1 = monotonic_ns();
	int64_t in1 = host_swapins();

	c->groups++;
	c->pages += (uint64_t)n;
	c->pswpin += in1 > in0 ? (uint64_t)(in1 - in0) : 0;
	c->active_ns += t1 - t;
	a->pass_pages += (uint64_t)n;
	if (a->nwindows && a->windows[a->nwindows - 1].start_ns <= t) {
		struct window *w = &a->windows[a->nwindows - 1];

		w->end_ns = t1;
		w->pages += (uint64_t)n;
		w->pswpin += in1 > in0 ? (uint64_t)(in1 - in0) : 0;
	}
	if (a->max_rate)
		a->next_issue_ns = t + (uint64_t)n * a->page * NS_PER_SEC / a->max_rate;
	return 1;
}

static int restore_files(struct agent *a)
{
	if (a->files_dir) {
		int err = host_join_memcg(&a->h);

		if (err)
			return runtime_error("%s/cgroup.procs: %s", a->cgroup, strerror(-err));
		files_restore(&a->fc, FILE_CHUNK);
	}
	a->files_done = true;
	a->files_done_ns = monotonic_ns();
	return touch_file(a->done, "done\n");
}

static bool should_stop(struct agent *a)
{
	if (signalled)
		a->why_stopped = "signal";
	else if (exists(a->stop))
		a->why_stopped = "stop file";
	else if (a->victim_gone)
		a->why_stopped = "victim exited";
	else if (a->timeout_ns && monotonic_ns() - a->t0 >= a->timeout_ns)
		a->why_stopped = "timeout";
	return a->why_stopped != NULL;
}

static int loop(struct agent *a)
{
	int err;

	while (!should_stop(a)) {
		uint64_t now = monotonic_ns();

		if (!a->went && exists(a->go)) {
			if ((err = go(a)))
				return a->victim_gone ? 0 : err;
			continue;
		}
		bool active = a->went || a->mode == MODE_BETWEEN;

		if (!active || a->files_done) {
			if (now - a->last_scan_ns >= RESCAN_NS && (err = rescan(a)))
				return a->victim_gone ? 0 : err;
			/* before --go, look for it often: the restore starts within GO_POLL_NS */
			nap(a->went ? a->poll_ns : GO_POLL_NS);
			continue;
		}
		bool ended = pressure_ended(a);

		if (!ended && !(a->mode == MODE_BETWEEN && !a->went)) {
			window_close(a, true);
			if (now - a->last_scan_ns >= RESCAN_NS && (err = rescan(a)))
				return a->victim_gone ? 0 : err;
			nap(a->poll_ns);
			continue;
		}
		if (a->swap_done) {
			window_close(a, false);
			if ((err = restore_files(a)))
				return err;
			continue;
		}
		if (now - a->last_scan_ns >= RESCAN_NS && (err = rescan(a)))
			return a->victim_gone ? 0 : err;
		if (read_group(a, ended) < 0)
			return a->victim_gone ? 0 : 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct agent a;
	char err[512] = "";
	struct opt opts[] = {
		{ .name = "pid", .kind = OPT_UINT, .dest = &a.pid, .required = true,
		  .help = "the victim: the process whose swapped-out pages are read back" },
		{ .name = "cgroup", .kind = OPT_STRING, .dest = &a.cgroup, .metavar = "DIR", .required = true,
		  .help = "the victim's memory cgroup directory (free memory = limit - usage)" },
		{ .name = "mode", .kind = OPT_ENUM, .dest = &a.mode, .choices = mode_names,
		  .required = true, .help = "after: read only once the --go file exists; between: also "
		  "while the hogs run" },
		{ .name = "go", .kind = OPT_STRING, .dest = &a.go, .metavar = "FILE", .required = true,
		  .help = "appears when the hogs are gone: the restore starts (after) or its phase begins (between)" },
		{ .name = "devices", .kind = OPT_STRING, .dest = &a.devices, .metavar = "DEV[,DEV]",
		  .help = "block devices (names under /sys/class/block) that must have no request in flight "
		  "before a group is issued: the swap devices" },
		{ .name = "files", .kind = OPT_STRING, .dest = &a.files_dir, .metavar = "DIR",
		  .help = "files whose cached pages (at start) are read back after the swapped pages" },
		{ .name = "ready", .kind = OPT_STRING, .dest = &a.ready, .metavar = "FILE",
		  .help = "written once the agent watches (files remembered, first scan made)" },
		{ .name = "done", .kind = OPT_STRING, .dest = &a.done, .metavar = "FILE",
		  .help = "written when, after --go, every swapped page is back and the files are re-read" },
		{ .name = "stop", .kind = OPT_STRING, .dest = &a.stop, .metavar = "FILE",
		  .help = "the agent stops and reports when this file exists" },
		{ .name = "poll", .kind = OPT_DURATION, .dest = &a.poll_ns, .required = true,
		  .help = "how often an idle agent looks; also the longest wait for idle devices" },
		{ .name = "group", .kind = OPT_SIZE, .dest = &a.group_bytes, .required = true,
		  .help = "bytes asked for at once (one process_madvise call)" },
		{ .name = "priority", .kind = OPT_ENUM, .dest = &a.priority, .choices = priority_names,
		  .required = true, .help = "low: nice 19, SCHED_BATCH, the idle IO class (kprefetchd's); "
		  "normal: as started" },
		{ .name = "depth", .kind = OPT_UINT, .dest = &a.depth, .required = true,
		  .help = "groups in flight at once while pressure lasts (mode between); always 1 once it "
		  "has ended" },
		{ .name = "max-rate", .kind = OPT_SIZE, .dest = &a.max_rate, .default_text = "0",
		  .help = "bytes per second at most (0: no cap beyond the devices' idle time)" },
		{ .name = "free-start", .kind = OPT_SIZE, .dest = &a.free_start,
		  .help = "free memory in the group at which reading may start (default: 4 x the zones' high "
		  "watermark share of the group's limit)" },
		{ .name = "free-stop", .kind = OPT_SIZE, .dest = &a.free_stop,
		  .help = "free memory below which reading stops (default: 3 x that share)" },
		{ .name = "done-below", .kind = OPT_SIZE, .dest = &a.done_below, .default_text = "128K",
		  .help = "the restore of swap is done when at most this much of the group is only in swap "
		  "(v1 memory.memsw.usage_in_bytes less memory.usage_in_bytes) after a pass that read nothing" },
		{ .name = "timeout", .kind = OPT_DURATION, .dest = &a.timeout_ns, .default_text = "0",
		  .help = "stop after this long (0: never)" },
		{ 0 },
	};
	struct cli cli = { .prog = "superfetch", .command = "superfetch", .description = description,
			   .opts = opts, .version = SUPERFETCH_VERSION };
	int status = opts_parse_status(&cli, argc, argv);

	if (status != OPTS_GO_ON)
		return status;
	if (a.group_bytes < 4096)
		return usage_error(&cli, "--group: at least one page (4096 bytes)");
	if (!a.poll_ns)
		return usage_error(&cli, "--poll: must be more than 0");
	if (!a.depth || a.depth > 1024)
		return usage_error(&cli, "--depth: from 1 to 1024");
	if (host_init(&a.h, a.cgroup, a.devices, err, sizeof(err)))
		return usage_error(&cli, "%s", err);
	if (victim_open(&a.v, (int)a.pid, err, sizeof(err)))
		return runtime_error("%s", err);
	a.page = a.v.page_size;
	uint64_t limit = 0, usage = 0;

	if (host_memcg(&a.h, &limit, &usage))
		return runtime_error("--cgroup %s: cannot read its limit and usage", a.cgroup);
	if (host_memcg_swap_slots(&a.h) < 0)
		return usage_error(&cli, "--cgroup %s: the group accounts no swap (memory.stat has no "
				   "total_swap, or no memory.swap.current): its swap-outs cannot be seen", a.cgroup);
	double share = host_high_watermark_share();

	if (!opts_find(&cli, "free-start")->given)
		a.free_start = (uint64_t)(4 * share * (double)limit);
	if (!opts_find(&cli, "free-stop")->given)
		a.free_stop = (uint64_t)(3 * share * (double)limit);
	if (a.free_stop > a.free_start)
		return usage_error(&cli, "--free-stop is above --free-start");
	if (a.files_dir && files_remember(&a.fc, a.files_dir, err, sizeof(err)))
		return usage_error(&cli, "%s", err);
	a.windows = calloc(MAX_WINDOWS, sizeof(*a.windows));
	if (!a.windows)
		return runtime_error("out of memory");
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (a.priority == PRIORITY_LOW)
		host_lower_priority(&a.nice_ok, &a.batch_ok, &a.ioprio_ok);
	a.t0 = monotonic_ns();
	a.last_swap_slots = host_memcg_swap_slots(&a.h);
	a.read_base = host_read_sectors(&a.h);
	a.pass = 1;
	if (rescan(&a))
		return runtime_error("pid %d: cannot read its pagemap", (int)a.pid);
	if (touch_file(a.ready, "ready\n"))
		return 1;
	status = loop(&a);
	a.stop_ns = monotonic_ns();
	report(&a);
	victim_close(&a.v);
	files_free(&a.fc);
	free(a.windows);
	return status;
}
