/*
 * report.c - the agent's JSON report (what it did, phase by phase; see main.c).
 */
#include <string.h>
#include <sys/resource.h>

#include "agent.h"
#include "json.h"
#include "timing.h"

static void json_counts(struct json *j, const char *key, const struct counts *c, uint64_t page)
{
	json_kv_object_begin(j, key);
	json_kv_uint(j, "groups", c->groups);
	json_kv_uint(j, "requested_pages", c->pages);
	json_kv_uint(j, "requested_bytes", c->pages * page);
	json_kv_uint(j, "swapins", c->pswpin);
	json_kv_uint(j, "swapins_elsewhere", c->elsewhere);
	json_kv_double(j, "active_s", (double)c->active_ns / 1e9);
	json_kv_uint(j, "windows", c->windows);
	json_kv_uint(j, "pressure_stops", c->stops);
	json_kv_uint(j, "idle_waits", c->idle_waits);
	json_kv_uint(j, "pressure_looks", c->looks);
	json_kv_uint(j, "swapping_looks", c->swapping_looks);
	json_kv_uint(j, "low_free_looks", c->low_free_looks);
	json_object_end(j);
}

static double since(const struct agent *a, uint64_t t)
{
	return t ? (double)(t - a->t0) / 1e9 : -1;
}

void report(struct agent *a)
{
	struct json j;
	struct rusage ru;
	uint64_t swapped_now = 0, asked_now = 0;

	getrusage(RUSAGE_SELF, &ru);
	victim_coverage(&a->v, &swapped_now, &asked_now);
	json_init(&j, stdout, false);
	json_object_begin(&j);
	json_kv_string(&j, "tool", SUPERFETCH_VERSION);
	json_kv_int(&j, "pid", (int64_t)a->pid);
	json_kv_string(&j, "mode", mode_names[a->mode]);
	json_kv_string(&j, "stopped_by", a->why_stopped ? a->why_stopped : "error");
	json_kv_object_begin(&j, "params");
	json_kv_double(&j, "poll_s", (double)a->poll_ns / 1e9);
	json_kv_uint(&j, "group_bytes", a->group_bytes);
	json_kv_uint(&j, "max_rate", a->max_rate);
	json_kv_uint(&j, "free_start", a->free_start);
	json_kv_uint(&j, "free_stop", a->free_stop);
	json_kv_uint(&j, "done_below", a->done_below);
	json_kv_uint(&j, "depth", a->depth);
	json_kv_string(&j, "devices", a->devices ? a->devices : "");
	json_object_end(&j);
	json_kv_object_begin(&j, "priority");
	json_kv_string(&j, "nice", a->nice_ok ? "19" : "unchanged");
	json_kv_string(&j, "sched", a->batch_ok ? "batch" : "unchanged");
	json_kv_string(&j, "ioprio", a->ioprio_ok ? "idle" : "unchanged");
	json_object_end(&j);
	json_kv_uint(&j, "t0_ns", a->t0);
	json_kv_double(&j, "go_s", since(a, a->go_ns));
	json_kv_double(&j, "swap_done_s", since(a, a->swap_done_ns));
	json_kv_double(&j, "files_done_s", since(a, a->files_done_ns));
	json_kv_double(&j, "wall_s", (double)(monotonic_ns() - a->t0) / 1e9);
	json_kv_double(&j, "cpu_s", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	json_counts(&j, "rounds", &a->rounds, a->page);
	json_counts(&j, "restore", &a->restore, a->page);
	json_kv_uint(&j, "swapped_at_go", a->swapped_at_go);
	json_kv_uint(&j, "asked_in_rounds_of_swapped_at_go", a->asked_rounds_at_go);
	json_kv_uint(&j, "swapped_at_end", swapped_now);
	json_kv_uint(&j, "rewritten_pages", a->v.rewritten);
	json_kv_uint(&j, "passes", a->passes);
	json_kv_uint(&j, "scans", a->v.scans);
	json_kv_uint(&j, "madvise_calls", a->v.madvise_calls);
	json_kv_uint(&j, "madvise_errors", a->v.madvise_errors);
	if (a->v.madvise_errors)
		json_kv_string(&j, "madvise_last_error", strerror(a->v.last_errno));
	json_kv_object_begin(&j, "files");
	json_kv_uint(&j, "files", a->fc.nfiles);
	json_kv_uint(&j, "cached_at_start_bytes", a->fc.cached_bytes);
	json_kv_uint(&j, "reread_bytes", a->fc.asked_bytes);
	json_kv_uint(&j, "back_bytes", a->fc.back_bytes);
	json_object_end(&j);
	json_kv_array_begin(&j, "windows");
	for (size_t i = 0; i < a->nwindows; i++) {
		const struct window *w = &a->windows[i];

		json_object_begin(&j);
		json_kv_uint(&j, "start_ns", w->start_ns);
		json_kv_uint(&j, "end_ns", w->end_ns);
		json_kv_uint(&j, "pages", w->pages);
		json_kv_uint(&j, "swapins", w->pswpin);
		json_kv_string(&j, "phase", w->restore ? "restore" : "rounds");
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}
