/*
 * faults.c - fault injection for the mounted device (see faults.h).
 */
#include "faults.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define NS 1e9
#define FOREVER UINT64_MAX

const char *const fault_kind_names[NFAULT_KINDS] = {
	"-", "read_error", "write_error", "bad_block", "delay", "stall", "timeout", "offline",
};

#define P(field) offsetof(struct fault_params, field)

const struct profile_key fault_keys[] = {
	{ .name = "error_reads", .kind = KEY_NUMBER, .offset = P(error_reads), .max = 1,
	  .optional = true, .fallback = "0",
	  .help = "faults: share of reads failed with EIO while down (dm-flakey's error_reads: 1)" },
	{ .name = "error_writes", .kind = KEY_NUMBER, .offset = P(error_writes), .max = 1,
	  .optional = true, .fallback = "0",
	  .help = "faults: share of writes failed with EIO while down (dm-flakey's error_writes: 1)" },
	{ .name = "bad_blocks", .kind = KEY_TEXT, .offset = P(bad_blocks), .optional = true,
	  .fallback = "",
	  .help = "faults: blocks whose reads fail with EIO while down, 'N N-M ...' (inclusive); a "
		  "write while down remaps them (dm-dust)" },
	{ .name = "bad_block_bytes", .kind = KEY_BYTES, .offset = P(bad_block_bytes), .min = 512,
	  .max = 1073741824, .optional = true, .fallback = "4096",
	  .help = "faults: the unit of bad_blocks, a power of two (dm-dust's blksz)" },
	{ .name = "read_delay_ms", .kind = KEY_MS, .offset = P(read_delay), .optional = true,
	  .fallback = "0", .help = "faults: added before a read while down (dm-delay)" },
	{ .name = "write_delay_ms", .kind = KEY_MS, .offset = P(write_delay), .optional = true,
	  .fallback = "0", .help = "faults: added before a write while down (dm-delay)" },
	{ .name = "flush_delay_ms", .kind = KEY_MS, .offset = P(flush_delay), .optional = true,
	  .fallback = "0", .help = "faults: added before a flush while down (dm-delay)" },
	{ .name = "delay_share", .kind = KEY_NUMBER, .offset = P(delay_share), .max = 1,
	  .optional = true, .fallback = "1",
	  .help = "faults: share of requests the delays apply to (below 1: latency spikes)" },
	{ .name = "stall", .kind = KEY_BOOL, .offset = P(stall), .optional = true,
	  .fallback = "false",
	  .help = "faults: while down the device answers nothing; requests wait for the next up "
		  "interval, at most command_timeout_ms" },
	{ .name = "command_timeout_ms", .kind = KEY_MS, .offset = P(command_timeout),
	  .min_exclusive = true, .optional = true, .fallback = "30000",
	  .help = "faults: a request unanswered this long fails with EIO and the device goes "
		  "offline (every later request fails); the SCSI disk driver's default is 30 s" },
	{ .name = "up_interval_s", .kind = KEY_NUMBER, .offset = P(up_interval), .optional = true,
	  .fallback = "0", .help = "faults: seconds the device works after the faults are enabled "
				  "and after each down interval (dm-flakey)" },
	{ .name = "down_interval_s", .kind = KEY_NUMBER, .offset = P(down_interval),
	  .optional = true, .fallback = "0",
	  .help = "faults: seconds the faults act after each up interval; 0: for good (dm-flakey)" },
	{ .name = "faults_enabled", .kind = KEY_BOOL, .offset = P(enabled), .optional = true,
	  .fallback = "true",
	  .help = "faults: armed at the mount (true) or by writing 'enable' to MOUNTPOINT/control "
		  "(dm-dust's enable and disable messages)" },
	{ .name = "fault_seed", .kind = KEY_COUNT, .offset = P(seed), .optional = true,
	  .fallback = "1", .help = "faults: seed of the random draws" },
	{ 0 },
};

#undef P

static int cmp_range(const void *a, const void *b)
{
	const struct block_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Parses "N N-M ..." into sorted, merged ranges; *out is malloc'd (NULL when empty). */
static int parse_blocks(const char *text, struct block_range **out, size_t *n,
			char *err, size_t errlen)
{
	size_t cap = strlen(text) / 2 + 1, used = 0;
	struct block_range *r = calloc(cap, sizeof(*r));
	const char *p = text;

	*out = NULL;
	*n = 0;
	if (!r) {
		snprintf(err, errlen, "bad_blocks: out of memory");
		return -1;
	}
	while (*p) {
		char *end;
		unsigned long long lo, hi;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (*p < '0' || *p > '9')
			goto bad;
		lo = hi = strtoull(p, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			hi = strtoull(end + 1, &end, 10);
		}
		if ((*end && *end != ' ') || hi < lo || hi == UINT64_MAX)
			goto bad;
		r[used++] = (struct block_range){ lo, hi + 1 };
		p = end;
	}
	qsort(r, used, sizeof(*r), cmp_range);
	size_t merged = 0;

	for (size_t i = 0; i < used; i++) {
		if (merged && r[i].lo <= r[merged - 1].hi) {
			if (r[i].hi > r[merged - 1].hi)
				r[merged - 1].hi = r[i].hi;
		} else {
			r[merged++] = r[i];
		}
	}
	if (!merged) {
		free(r);
		return 0;
	}
	*out = r;
	*n = merged;
	return 0;
bad:
	free(r);
	snprintf(err, errlen, "bad_blocks: expected block numbers or ranges N-M separated by "
		 "spaces, got '%s'", text);
	return -1;
}

static bool configured(const struct fault_params *p)
{
	return p->error_reads > 0 || p->error_writes > 0 || p->bad_blocks[0] ||
	       p->read_delay || p->write_delay || p->flush_delay || p->stall;
}

int faults_check(const struct fault_params *p, uint64_t capacity, char *err, size_t errlen)
{
	struct block_range *r;
	size_t n;

	if (p->bad_block_bytes & (p->bad_block_bytes - 1)) {
		snprintf(err, errlen, "bad_block_bytes: must be a power of two (got %llu)",
			 (unsigned long long)p->bad_block_bytes);
		return -1;
	}
	if (parse_blocks(p->bad_blocks, &r, &n, err, errlen))
		return -1;
	bool beyond = n && r[n - 1].hi > capacity / p->bad_block_bytes;

	free(r);
	if (beyond) {
		snprintf(err, errlen, "bad_blocks: a block lies beyond the capacity (%llu blocks of %llu "
			 "bytes)", (unsigned long long)(capacity / p->bad_block_bytes),
			 (unsigned long long)p->bad_block_bytes);
		return -1;
	}
	if ((p->up_interval > 0 || p->down_interval > 0) && !configured(p)) {
		snprintf(err, errlen, "%s: no fault to schedule (set error_reads, error_writes, "
			 "bad_blocks, a delay or stall)", p->up_interval > 0 ? "up_interval_s" :
			 "down_interval_s");
		return -1;
	}
	return 0;
}

int faults_init(struct faults *f, const struct fault_params *p, uint64_t now,
		char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->p = *p;
	f->configured = configured(p);
	if (parse_blocks(p->bad_blocks, &f->bad, &f->nbad, err, errlen))
		return -1;
	rng_seed(&f->rng, p->seed);
	f->enabled = p->enabled;
	f->armed_ns = now;
	return 0;
}

void faults_free(struct faults *f)
{
	free(f->bad);
	f->bad = NULL;
	f->nbad = 0;
}

/* Whether the faults act at `now`; *until is when this down interval ends (FOREVER: never). */
static bool down(const struct faults *f, uint64_t now, uint64_t *until)
{
	uint64_t up = (uint64_t)llround(f->p.up_interval * NS);
	uint64_t dn = (uint64_t)llround(f->p.down_interval * NS);
	uint64_t t = now > f->armed_ns ? now - f->armed_ns : 0;

	*until = FOREVER;
	if (!f->configured || !f->enabled)
		return false;
	if (!dn)
		return t >= up;
	uint64_t cycle = up + dn, phase = t % cycle;

	if (phase < up)
		return false;
	*until = now - phase + cycle;
	return true;
}

static bool draw(struct faults *f, double share)
{
	if (share <= 0)
		return false;
	if (share >= 1)
		return true;
	return rng_unit(&f->rng) < share;
}

/* The first bad range that overlaps blocks [lo, hi), or NULL. */
static struct block_range *find_bad(struct faults *f, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = f->nbad;

	while (a < b) {                       /* the first range ending after lo */
		size_t m = (a + b) / 2;

		if (f->bad[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a < f->nbad && f->bad[a].lo < hi ? &f->bad[a] : NULL;
}

/* dm-dust: a write remaps the bad blocks it covers, which then read fine. */
static void remap(struct faults *f, uint64_t lo, uint64_t hi)
{
	struct block_range *r;

	while ((r = find_bad(f, lo, hi))) {
		uint64_t from = r->lo > lo ? r->lo : lo, to = r->hi < hi ? r->hi : hi;

		f->c.remapped_blocks += to - from;
		if (from > r->lo && to < r->hi) {          /* a hole in the middle: split */
			struct block_range *grown = realloc(f->bad, (f->nbad + 1) * sizeof(*grown));

			if (!grown) {
				r->hi = from;                      /* out of memory: lose the tail */
				continue;
			}
			f->bad = grown;
			r = find_bad(f, lo, hi);
			size_t i = (size_t)(r - f->bad);

			memmove(&f->bad[i + 1], &f->bad[i], (f->nbad - i) * sizeof(*r));
			f->nbad++;
			f->bad[i].hi = from;
			f->bad[i + 1].lo = to;
			continue;
		}
		if (from > r->lo)
			r->hi = from;
		else if (to < r->hi)
			r->lo = to;
		else {                                     /* the whole range */
			size_t i = (size_t)(r - f->bad);

			memmove(&f->bad[i], &f->bad[i + 1], (f->nbad - i - 1) * sizeof(*r));
			f->nbad--;
		}
	}
}

void faults_plan(struct faults *f, enum io_op op, uint64_t offset, uint64_t length,
		 uint64_t arrival, uint64_t start, struct fault_plan *out)
{
	uint64_t until, bs = f->p.bad_block_bytes;
	uint64_t lo = offset / bs, hi = (offset + length + bs - 1) / bs;

	*out = (struct fault_plan){ .kind = FAULT_NONE, .start_ns = start };
	if (f->offline) {
		f->c.offline_errors++;
		*out = (struct fault_plan){ .kind = FAULT_OFFLINE, .error = true, .start_ns = start };
		return;
	}
	if (!down(f, arrival, &until))
		return;
	if (f->p.stall) {
		if (until == FOREVER || until - arrival > f->p.command_timeout) {
			out->kind = FAULT_TIMEOUT;
			out->fail_ns = arrival + f->p.command_timeout;
			return;
		}
		if (until > start) {
			f->c.stalled++;
			f->c.stall_ns += until - start;
			out->kind = FAULT_STALL;
			out->start_ns = until;
		}
		return;
	}
	if (op == IO_READ && length && find_bad(f, lo, hi)) {
		f->c.bad_block_errors++;
		out->kind = FAULT_BAD_BLOCK;
		out->error = true;
		return;
	}
	if (op == IO_READ && draw(f, f->p.error_reads)) {
		f->c.read_errors++;
		out->kind = FAULT_READ_ERROR;
		out->error = true;
		return;
	}
	if (op == IO_WRITE && draw(f, f->p.error_writes)) {
		f->c.write_errors++;
		out->kind = FAULT_WRITE_ERROR;
		out->error = true;
		return;
	}
	if (op == IO_WRITE && length)
		remap(f, lo, hi);
	uint64_t delay = op == IO_READ ? f->p.read_delay : op == IO_WRITE ? f->p.write_delay :
			 op == IO_FLUSH ? f->p.flush_delay : 0;

	if (delay && draw(f, f->p.delay_share)) {
		f->c.delayed++;
		f->c.delay_ns += delay;
		out->kind = FAULT_DELAY;
		out->start_ns = start + delay;
	}
}

void faults_timed_out(struct faults *f)
{
	f->c.timeouts++;
	f->offline = true;
}

int faults_message(struct faults *f, const char *msg, size_t len, uint64_t now)
{
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	if (len == 6 && memcmp(msg, "enable", 6) == 0) {
		if (!f->enabled) {
			f->enabled = true;
			f->armed_ns = now;   /* the schedule starts now */
		}
		return 0;
	}
	if (len == 7 && memcmp(msg, "disable", 7) == 0) {
		f->enabled = false;
		return 0;
	}
	return -1;
}

void faults_stats(const struct faults *f, uint64_t now, struct json *j)
{
	const struct fault_counters *c = &f->c;
	uint64_t until;

	json_key(j, "configured");
	json_bool(j, f->configured);
	json_key(j, "enabled");
	json_bool(j, f->enabled);
	json_key(j, "down");
	json_bool(j, down(f, now, &until));
	json_key(j, "offline");
	json_bool(j, f->offline);
	json_kv_uint(j, "errors", c->read_errors + c->write_errors + c->bad_block_errors +
		     c->timeouts + c->offline_errors);
	json_kv_uint(j, "read_errors", c->read_errors);
	json_kv_uint(j, "write_errors", c->write_errors);
	json_kv_uint(j, "bad_block_errors", c->bad_block_errors);
	json_kv_uint(j, "remapped_blocks", c->remapped_blocks);
	uint64_t left = 0;

	for (size_t i = 0; i < f->nbad; i++)
		left += f->bad[i].hi - f->bad[i].lo;
	json_kv_uint(j, "bad_blocks_left", left);
	json_kv_uint(j, "delayed", c->delayed);
	json_kv_uint(j, "delay_ns", c->delay_ns);
	json_kv_uint(j, "stalled", c->stalled);
	json_kv_uint(j, "stall_ns", c->stall_ns);
	json_kv_uint(j, "timeouts", c->timeouts);
	json_kv_uint(j, "offline_errors", c->offline_errors);
}
