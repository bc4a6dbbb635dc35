/*
 * agent.h - one run of the agent: its options, its state and what it counts
 * (internal to superfetch: main.c runs it, report.c prints it).
 */
#ifndef SUPERFETCH_AGENT_H
#define SUPERFETCH_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "superfetch.h"

enum mode { MODE_AFTER, MODE_BETWEEN };
extern const char *const mode_names[];   /* "after", "between" */
enum priority { PRIORITY_LOW, PRIORITY_NORMAL };

struct counts {
	uint64_t groups, pages, pswpin, active_ns, windows, stops, idle_waits;
	uint64_t looks, swapping_looks, low_free_looks;   /* pressure checks; found the group
							     swapping out; found its free memory low */
	uint64_t elsewhere;   /* pages pswpin counted that no watched device read (wait_outstanding) */
};

struct window {
	uint64_t start_ns, end_ns, pages, pswpin;
	bool restore;
};

struct agent {
	/* options */
	uint64_t pid;
	const char *cgroup, *devices, *files_dir, *go, *stop, *ready, *done;
	int mode, priority;
	uint64_t poll_ns, group_bytes, max_rate, free_start, free_stop, timeout_ns, done_below, depth;
	/* state */
	struct victim v;
	struct host h;
	struct file_cache fc;
	uint64_t page;
	uint64_t t0, go_ns, swap_done_ns, files_done_ns, stop_ns;
	bool went, swap_done, files_done, reading, victim_gone;
	int64_t last_swap_slots;        /* the group's swap at the last pressure check */
	int64_t read_base, submitted;   /* the devices' read sectors at start; the agent's since */
	uint32_t pass;
	int64_t pass_pswpin0;
	uint64_t pass_pages, passes;
	uint64_t swapped_at_go, asked_rounds_at_go;
	uint64_t next_issue_ns, last_scan_ns;
	struct counts rounds, restore;
	struct window *windows;
	size_t nwindows;
	bool nice_ok, batch_ok, ioprio_ok;
	const char *why_stopped;
};

/* Prints the JSON report of the run to stdout. */
void report(struct agent *a);

#endif
