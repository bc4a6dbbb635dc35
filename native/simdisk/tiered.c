/*
 * tiered.c - a disk behind a flash cache: the ReadyBoost analogue.
 *
 * For: the `tiered` model. A disk profile (the truth) and a cache profile
 * (the flash stick) are composed: reads of cached blocks are served by the
 * flash, the rest by the disk; writes always go to the disk first
 * (write-through). The cache holds copies of disk blocks (cache_block_bytes
 * each), compressed by a fixed ratio or by what lz4 makes of the block's
 * current data, within cache_capacity_bytes of flash, evicting the least
 * recently used.
 * Not for: write-back caching (a write is complete when the disk has it, so
 * no cache state can lose data), the use history's table (history.c), or the
 * FUSE side (the daemon).
 *
 * The cache is a timing model: it records which blocks have a copy on the
 * flash and how big the copy is; the bytes always come from the backing file,
 * which is the disk's truth, so a read can never see a stale copy.
 *
 * Copies cost flash writes. A copy is offered to a bounded copy queue when
 * the request that caused it completes; the queue is drained by one writer
 * that writes everything waiting as one sequential piece of the flash's log,
 * at the flash model's own write speed (erase blocks included). A copy that
 * does not fit in the queue (copy_queue_bytes) is dropped and counted, and a
 * dropped copy of a write also drops the block's old copy. The request that
 * caused a copy never waits for it; a later flash read waits for the copy
 * being written.
 *
 * Population policies (how ReadyBoost and Superfetch filled the cache:
 * Russinovich 2007, Windows Internals 6th ed.; refs.bib: russinovich07,
 * windowsinternals6):
 *   none        the cache is only what a loaded state file put there
 *   on-write    every block a write covers completely enters the cache, with an
 *               unbounded queue (copies are free), an upper bound to compare
 *               the bounded policy with
 *   readyboost  writes (whatever their pattern) and random-read misses are
 *               offered as copies through the bounded queue; a read that
 *               continues a sequential stream beyond seq_cutoff_bytes is served
 *               by the disk even when cached and copies nothing ("Sequential IOs
 *               bailed"); and the pre-population agent (Superfetch): after
 *               prefetch_idle_ms without requests it reads the uncached blocks
 *               with the highest use score (history.c) from the disk, one block
 *               per disk IO so that a request waits at most one IO for it, and
 *               copies them through the same queue, waiting when it is full.
 *
 * State (--cache-state FILE): the cached blocks in LRU order and the use
 * history, saved at shutdown and loaded at start, with the backing file's
 * identity (device, inode, size, mtime). A state saved for another disk image,
 * or with another block size, is an error that names both; no file is a cold
 * start.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tiered_int.h"

static const char *const policy_names[] = { "none", "on-write", "readyboost", NULL };

#define P(field) offsetof(struct tiered_params, field)

static const struct profile_key tiered_keys[] = {
	{ .name = "disk_profile", .kind = KEY_PROFILE, .offset = P(disk),
	  .help = "profile of the disk behind the cache (the truth)" },
	{ .name = "cache_profile", .kind = KEY_PROFILE, .offset = P(cache),
	  .help = "profile of the flash device holding the cache" },
	{ .name = "cache_capacity_bytes", .kind = KEY_BYTES, .offset = P(cache_capacity),
	  .min = 4096, .help = "flash space for the cache, in compressed bytes" },
	{ .name = "cache_block_bytes", .kind = KEY_BYTES, .offset = P(cache_block), .min = 512,
	  .max = 65536, .help = "unit of caching: a power of two from 512 to 65536" },
	{ .name = "compression", .kind = KEY_COMPRESSION, .offset = P(compression),
	  .help = "fixed ratio (>= 1) or lz4 (measured per block)" },
	{ .name = "policy", .kind = KEY_CHOICE, .offset = P(policy), .choices = policy_names,
	  .help = "what enters the cache: none, on-write or readyboost" },
	{ .name = "copy_queue_bytes", .kind = KEY_BYTES, .offset = P(copy_queue), .min = 512,
	  .optional = true, .fallback = "1048576",
	  .help = "readyboost: copies waiting for the flash (compressed bytes); more are dropped" },
	{ .name = "seq_cutoff_bytes", .kind = KEY_BYTES, .offset = P(seq_cutoff),
	  .optional = true, .fallback = "4194304",
	  .help = "readyboost: reads continuing a sequential stream beyond this go to the disk" },
	{ .name = "prefetch_idle_ms", .kind = KEY_MS, .offset = P(prefetch_idle),
	  .help = "readyboost: idle time before the pre-population agent starts" },
	{ .name = "prefetch_min_score", .kind = KEY_NUMBER, .offset = P(prefetch_min_score),
	  .min = 0, .min_exclusive = true, .optional = true, .fallback = "2",
	  .help = "readyboost: use score (decayed reads) a block needs to be pre-populated" },
	{ .name = "history_half_life_s", .kind = KEY_NUMBER, .offset = P(history_half_life),
	  .min = 0, .optional = true, .fallback = "3600",
	  .help = "readyboost: half-life of a read in the use history (0: never decays)" },
	{ 0 },
};

#undef P


static bool is_power_of_two(uint64_t x)
{
	return x && !(x & (x - 1));
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

/* Smallest flash charge of one block: what sizes the preallocated index. */
static uint64_t min_charge(const struct tiered_params *p)
{
	if (p->compression == 0)
		return p->cache_block / LZ4_FLOOR_DIVISOR;
	uint64_t c = (uint64_t)((double)p->cache_block / p->compression);

	return c ? c : 1;
}

static int tiered_check(const struct profile *prof, char *err, size_t errlen)
{
	const struct tiered_params *p = PARAMS(prof, struct tiered_params);
	const struct device_model *dm = p->disk->model, *cm = p->cache->model;

	if (dm == &tiered_model) {
		snprintf(err, errlen, "disk_profile: a tiered disk cannot be the disk of another");
		return -1;
	}
	if (cm == &tiered_model) {
		snprintf(err, errlen, "cache_profile: a tiered disk cannot hold a cache");
		return -1;
	}
	if (!is_power_of_two(p->cache_block)) {
		snprintf(err, errlen, "cache_block_bytes: must be a power of two");
		return -1;
	}
	if (p->cache_capacity < p->cache_block) {
		snprintf(err, errlen, "cache_capacity_bytes: smaller than one cache block");
		return -1;
	}
	if (p->cache_capacity > cm->capacity(p->cache)) {
		snprintf(err, errlen, "cache_capacity_bytes: larger than the cache device (%s: %llu bytes)",
			 p->cache->name, (unsigned long long)cm->capacity(p->cache));
		return -1;
	}
	if (p->copy_queue < p->cache_block) {
		snprintf(err, errlen, "copy_queue_bytes: smaller than one cache block");
		return -1;
	}
	if (dm->capacity(p->disk) / p->cache_block >= NIL) {
		snprintf(err, errlen, "cache_block_bytes: too small for a disk this large");
		return -1;
	}
	if (p->cache_capacity / min_charge(p) >= NIL / 2) {
		snprintf(err, errlen, "cache_capacity_bytes: too many blocks to index");
		return -1;
	}
	return 0;
}

static uint64_t tiered_capacity(const struct profile *prof)
{
	const struct tiered_params *p = PARAMS(prof, struct tiered_params);

	return p->disk->model->capacity(p->disk);
}

/* --- copies (the index is tiered_index.c) --- */

/* Flash bytes for a copy of data (NULL: unknown, stored raw). */
static uint32_t charge_for(struct tiered *t, const void *data)
{
	uint64_t block = t->p.cache_block;

	if (t->p.compression > 0) {
		uint64_t c = (uint64_t)((double)block / t->p.compression + 0.999999);

		return (uint32_t)(c ? c : 1);
	}
	if (!data)
		return (uint32_t)block;
	int n = t->lz4_compress(data, t->lz4_out, (int)block, t->lz4_out_size);
	uint64_t c = n > 0 ? (uint64_t)n : block;

	if (c < block / LZ4_FLOOR_DIVISOR)
		c = block / LZ4_FLOOR_DIVISOR;
	return (uint32_t)(c < block ? c : block);
}

/* --- the copy queue --- */

/* Writes `bytes` of copies to the flash log as one piece starting at `start`; returns the end. */
static double flash_write(struct tiered *t, uint64_t bytes, double start)
{
	double now = start;

	while (bytes) {
		uint64_t room = t->p.cache_capacity - t->log_head;
		uint64_t piece = bytes < room ? bytes : room;
		struct io_request w = { .op = IO_WRITE, .offset = t->log_head, .length = piece };
		struct io_cost c = { 0 };

		t->cache_model->service(t->cache, &w, (uint64_t)now, &c);
		now += (double)c.total_ns;
		t->flash_write_bytes += piece;
		t->log_head = (t->log_head + piece) % t->p.cache_capacity;
		bytes -= piece;
	}
	t->flash_free = now;
	return now;
}

/* Brings the writer up to time `at`: finished copies leave, waiting ones start. */
static void queue_advance(struct tiered *t, double at)
{
	for (;;) {
		if (t->inflight && t->inflight_done <= at)
			t->inflight = 0;
		if (t->inflight || !t->waiting || t->flash_free > at)
			return;
		/* the flash went free at flash_free with copies waiting: they start then */
		t->inflight = t->waiting;
		t->waiting = 0;
		t->inflight_done = flash_write(t, t->inflight, t->flash_free);
	}
}

static uint64_t queue_room(const struct tiered *t)
{
	uint64_t queued = t->inflight + t->waiting;

	return queued >= t->queue_cap ? 0 : t->queue_cap - queued;
}

/* Hands accepted copies (bytes, already within the room) to the writer at time `at`. */
static void queue_push(struct tiered *t, uint64_t bytes, double at)
{
	if (!bytes)
		return;
	if (!t->inflight && !t->waiting && t->flash_free <= at) {
		t->inflight = bytes;
		t->inflight_done = flash_write(t, bytes, at);
	} else {
		t->waiting += bytes;
	}
}

/* Charge of block's copy; data is the block's bytes when known. */
static uint32_t charge_block(struct tiered *t, uint64_t block, const void *data)
{
	uint64_t b = t->p.cache_block;

	if (t->p.compression == 0 && !data && t->env.read_data &&
	    t->env.read_data(t->env.ctx, block * b, t->block_buf, b) == 0)
		data = t->block_buf;
	return charge_for(t, data);
}

/*
 * Offers copies of blocks first..last (data: their bytes, or NULL) at time `at`:
 * each one that fits the queue enters the index and is queued; the rest are
 * dropped, and `stale` drops the old copy of a dropped block too (a write).
 */
static void offer(struct tiered *t, uint64_t first, uint64_t last, const char *data, double at,
		  bool stale)
{
	uint64_t accepted = 0, room;

	queue_advance(t, at);
	room = queue_room(t);
	for (uint64_t blk = first; blk <= last; blk++) {
		uint32_t charged = charge_block(t, blk, data ? data + (blk - first) * t->p.cache_block : NULL);

		t->offered++;
		if (accepted + charged > room) {
			t->dropped++;
			t->dropped_bytes += t->p.cache_block;
			if (stale)
				invalidate(t, blk);
			continue;
		}
		uint32_t got = insert(t, blk, charged);

		if (!got && stale)
			invalidate(t, blk);
		accepted += got;
	}
	queue_push(t, accepted, at);
}

/* --- sequential streams (bcache's sequential_cutoff over its recent IOs) --- */

/* Length of the sequential run this read continues, itself included. */
static uint64_t stream_run(struct tiered *t, uint64_t offset, uint64_t length)
{
	struct stream *s = NULL, *oldest = &t->streams[0];

	for (int i = 0; i < STREAMS; i++) {
		if (t->streams[i].used && t->streams[i].end == offset) {
			s = &t->streams[i];
			break;
		}
		if (t->streams[i].used < oldest->used)
			oldest = &t->streams[i];
	}
	if (!s) {
		s = oldest;
		s->run = 0;
	}
	s->run += length;
	s->end = offset + length;
	s->used = ++t->stream_clock;
	return s->run;
}

/* --- life cycle --- */

static void tiered_destroy(struct device *d)
{
	struct tiered *t = tiered_of(d);

	if (!t)
		return;
	if (t->disk)
		t->disk_model->destroy(t->disk);
	if (t->cache)
		t->cache_model->destroy(t->cache);
	if (t->lz4)
		dlclose(t->lz4);
	free(t->entries);
	free(t->buckets);
	free(t->lz4_out);
	free(t->block_buf);
	free(t->candidates);
	history_free(&t->hist);
	free(t);
}

static int load_lz4(struct tiered *t, char *err, size_t errlen)
{
	int (*bound)(int);

	t->lz4 = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!t->lz4) {
		snprintf(err, errlen, "compression: lz4 needs liblz4.so.1 (%s)", dlerror());
		return -1;
	}
	*(void **)&t->lz4_compress = dlsym(t->lz4, "LZ4_compress_default");
	*(void **)&bound = dlsym(t->lz4, "LZ4_compressBound");
	if (!t->lz4_compress || !bound) {
		snprintf(err, errlen, "compression: liblz4.so.1 lacks LZ4_compress_default");
		return -1;
	}
	t->lz4_out_size = bound((int)t->p.cache_block);
	t->lz4_out = malloc((size_t)t->lz4_out_size);
	if (!t->lz4_out) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static struct device *tiered_create(const struct profile *prof, const struct device_env *env,
				    char *err, size_t errlen)
{
	struct tiered *t = calloc(1, sizeof(*t));
	uint32_t buckets = 1;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->p = *PARAMS(prof, struct tiered_params);
	t->env = *env;
	t->disk_model = t->p.disk->model;
	t->cache_model = t->p.cache->model;
	t->disk_capacity = t->disk_model->capacity(t->p.disk);
	t->queue_cap = t->p.policy == POLICY_READYBOOST ? t->p.copy_queue : UINT64_MAX;
	t->max_entries = (uint32_t)(t->p.cache_capacity / min_charge(&t->p) + 1);
	while (buckets < t->max_entries)
		buckets <<= 1;
	t->bucket_mask = buckets - 1;
	t->entries = malloc((size_t)t->max_entries * sizeof(*t->entries));
	t->buckets = malloc((size_t)buckets * sizeof(*t->buckets));
	t->block_buf = aligned_alloc(4096, t->p.cache_block < 4096 ? 4096 : t->p.cache_block);
	t->candidates = malloc(HISTORY_SLOTS * sizeof(*t->candidates));
	if (!t->entries || !t->buckets || !t->block_buf || !t->candidates ||
	    history_init(&t->hist, t->p.history_half_life * 1e9)) {
		snprintf(err, errlen, "out of memory for a cache index of %u blocks", t->max_entries);
		goto fail;
	}
	memset(t->buckets, 0xff, (size_t)buckets * sizeof(*t->buckets));
	for (uint32_t i = 0; i < t->max_entries; i++)
		t->entries[i].hnext = i + 1 < t->max_entries ? i + 1 : NIL;
	t->free_head = 0;
	t->lru_oldest = t->lru_newest = NIL;
	if (t->p.compression == 0 && load_lz4(t, err, errlen))
		goto fail;
	t->disk = t->disk_model->create(t->p.disk, env, err, errlen);
	if (!t->disk)
		goto fail;
	t->cache = t->cache_model->create(t->p.cache, env, err, errlen);
	if (!t->cache)
		goto fail;
	return (struct device *)t;
fail:
	tiered_destroy((struct device *)t);
	return NULL;
}

/* --- requests --- */

static void tiered_read(struct tiered *t, const struct io_request *r, double s, struct io_cost *c)
{
	uint64_t b = t->p.cache_block, end = r->offset + r->length;
	bool readyboost = t->p.policy == POLICY_READYBOOST, counted = r->op == IO_READ;
	double now = s;

	c->cache_lookup = true;
	if (readyboost && counted && stream_run(t, r->offset, r->length) > t->p.seq_cutoff) {
		/* part of a sequential stream: the disk serves it, cached or not */
		t->disk_model->service(t->disk, r, (uint64_t)s, c);
		t->bailed++;
		t->bailed_bytes += r->length;
		t->misses++;
		return;
	}
	for (uint64_t blk = r->offset / b; blk * b < end;) {
		bool hit = lookup(t, blk) != NIL;
		uint64_t last = blk;

		while ((last + 1) * b < end && (lookup(t, last + 1) != NIL) == hit)
			last++;
		uint64_t from = blk * b > r->offset ? blk * b : r->offset;
		uint64_t to = (last + 1) * b < end ? (last + 1) * b : end;
		struct io_cost sub = { 0 };

		if (hit) {
			double charged = 0;

			for (uint64_t k = blk; k <= last; k++) {
				uint32_t i = lookup(t, k);
				uint64_t lo = k * b > from ? k * b : from, hi = (k + 1) * b < to ? (k + 1) * b : to;

				charged += (double)t->entries[i].charged * (double)(hi - lo) / (double)b;
				touch(t, i);
			}
			queue_advance(t, now);
			double start = max2(now, t->flash_free);
			struct io_request fr = { .op = IO_READ, .offset = 0,
						 .length = (uint64_t)(charged + 0.5) };

			t->cache_model->service(t->cache, &fr, (uint64_t)start, &sub);
			sub.queue_ns += (uint64_t)(start - now);
			sub.total_ns += (uint64_t)(start - now);
			sub.hit_bytes = to - from;
			t->flash_free = start + (double)sub.total_ns - (double)(start - now);
		} else {
			struct io_request dr = { .op = IO_READ, .offset = from, .length = to - from };

			t->disk_model->service(t->disk, &dr, (uint64_t)now, &sub);
		}
		now += (double)sub.total_ns;
		if (!hit && readyboost && counted) {
			/* the whole blocks of the miss are offered as copies when it completes */
			uint64_t first = (from + b - 1) / b, stop = to / b;

			if (stop > first)
				offer(t, first, stop - 1, NULL, now, false);
		}
		if (counted)
			for (uint64_t k = blk; k <= last; k++)
				history_add(&t->hist, k, 1, (uint64_t)s);
		io_cost_add(c, &sub);
		blk = last + 1;
	}
	if (c->hit_bytes == r->length)
		t->hits++;
	else if (c->hit_bytes)
		t->partial_hits++;
	else
		t->misses++;
	t->hit_bytes += c->hit_bytes;
}

static void tiered_write(struct tiered *t, const struct io_request *r, double s, struct io_cost *c)
{
	uint64_t b = t->p.cache_block, end = r->offset + r->length;
	uint64_t first = (r->offset + b - 1) / b, stop = end / b;   /* whole blocks: [first, stop) */
	bool copies = t->p.policy != POLICY_NONE && r->data && stop > first;

	t->disk_model->service(t->disk, r, (uint64_t)s, c);
	for (uint64_t blk = r->offset / b; blk * b < end; blk++)
		if (!copies || blk < first || blk >= stop)
			invalidate(t, blk);
	if (copies)
		offer(t, first, stop - 1, (const char *)r->data + (first * b - r->offset),
		      s + (double)c->total_ns, true);
}

static void tiered_service(struct device *d, const struct io_request *r, uint64_t start_ns,
			   struct io_cost *cost)
{
	struct tiered *t = tiered_of(d);
	struct io_request clipped = *r;

	if (clipped.offset >= t->disk_capacity)
		clipped.length = 0;
	else if (clipped.length > t->disk_capacity - clipped.offset)
		clipped.length = t->disk_capacity - clipped.offset;
	switch (r->op) {
	case IO_READ:
	case IO_PREFETCH:
		if (clipped.length)
			tiered_read(t, &clipped, (double)start_ns, cost);
		break;
	case IO_WRITE:
		tiered_write(t, &clipped, (double)start_ns, cost);
		break;
	case IO_FLUSH:
		t->disk_model->service(t->disk, r, start_ns, cost);
		break;
	}
}

/* --- the pre-population agent --- */

static const struct history *sort_hist;
static uint64_t sort_now;

static int by_score_desc(const void *a, const void *b)
{
	double sa = history_score(sort_hist, *(const uint64_t *)a, sort_now);
	double sb = history_score(sort_hist, *(const uint64_t *)b, sort_now);

	return sa < sb ? 1 : sa > sb ? -1 : 0;
}

/* The uncached blocks scoring at least prefetch_min_score, best first. */
static void find_candidates(struct tiered *t, uint64_t now)
{
	t->ncandidates = t->next_candidate = 0;
	for (uint32_t i = 0; i < HISTORY_SLOTS; i++) {
		const struct history_slot *s = &t->hist.slots[i];

		if (s->key && lookup(t, s->key - 1) == NIL &&
		    history_slot_score(&t->hist, s, now) >= t->p.prefetch_min_score)
			t->candidates[t->ncandidates++] = s->key - 1;
	}
	sort_hist = &t->hist;
	sort_now = now;
	qsort(t->candidates, t->ncandidates, sizeof(*t->candidates), by_score_desc);
	t->candidates_generation = t->hist.generation;
}

static uint64_t tiered_idle(struct device *d, uint64_t now_ns, struct io_request *r,
			    struct io_cost *cost)
{
	struct tiered *t = tiered_of(d);
	uint64_t b = t->p.cache_block;

	if (t->p.policy != POLICY_READYBOOST)
		return 0;
	if (t->nothing_to_prefetch && t->nothing_generation == t->hist.generation)
		return 0;
	t->nothing_to_prefetch = false;
	queue_advance(t, (double)now_ns);
	if (queue_room(t) < b) {
		/* the copy queue is full: wait for the writer, reading nothing meanwhile */
		*r = (struct io_request){ .op = IO_PREFETCH, .length = 0 };
		*cost = (struct io_cost){ 0 };
		return (uint64_t)max2(t->inflight_done, t->flash_free);
	}
	for (;;) {
		if (t->next_candidate >= t->ncandidates || t->candidates_generation != t->hist.generation) {
			find_candidates(t, now_ns);
			if (!t->ncandidates) {
				t->nothing_to_prefetch = true;
				t->nothing_generation = t->hist.generation;
				return 0;
			}
		}
		uint64_t block = t->candidates[t->next_candidate++];
		double score = history_score(&t->hist, block, now_ns);

		if (lookup(t, block) != NIL || score < t->p.prefetch_min_score ||
		    (block + 1) * b > t->disk_capacity)
			continue;
		/* Never evict a block that scores as high as this one: that would only churn. */
		if (t->used_bytes + b > t->p.cache_capacity && t->lru_oldest != NIL &&
		    history_score(&t->hist, t->entries[t->lru_oldest].block, now_ns) >= score) {
			t->nothing_to_prefetch = true;
			t->nothing_generation = t->hist.generation;
			t->ncandidates = 0;
			return 0;
		}
		*r = (struct io_request){ .op = IO_PREFETCH, .offset = block * b, .length = b };
		*cost = (struct io_cost){ 0 };
		t->disk_model->service(t->disk, r, now_ns, cost);
		uint64_t done = now_ns + cost->total_ns;

		offer(t, block, block, NULL, (double)done, false);
		t->prefetches++;
		t->prefetch_bytes += b;
		t->prefetch_disk_ns += cost->total_ns;
		return done;
	}
}

static uint64_t tiered_idle_delay(const struct device *d)
{
	return ((const struct tiered *)d)->p.prefetch_idle;
}

/* --- the analytic prediction --- */

static int tiered_expect(const struct profile *prof, const struct workload *w, struct io_cost *mean,
			 char *note, size_t notelen)
{
	const struct tiered_params *p = PARAMS(prof, struct tiered_params);
	struct io_cost disk, flash;
	struct workload fw = *w;
	double ratio = p->compression > 0 ? p->compression : 1;
	double h = w->hit_ratio;
	char sub[256];

	if (p->disk->model->expect(p->disk, w, &disk, sub, sizeof(sub)))
		return -1;
	fw.bs = (uint64_t)((double)w->bs / ratio + 0.5);
	fw.rw = WL_RANDREAD;
	if (p->cache->model->expect(p->cache, &fw, &flash, note, notelen))
		return -1;
	*mean = (struct io_cost){ 0 };
	if (w->rw == WL_WRITE || w->rw == WL_RANDWRITE) {
		*mean = disk;
		snprintf(note, notelen, "writes go to the disk (copies to the flash in the background); "
			 "disk: %s", sub);
		return 0;
	}
#define MIX(field) \
	mean->field = (uint64_t)(h * (double)flash.field + (1 - h) * (double)disk.field + 0.5)
	MIX(queue_ns);
	MIX(overhead_ns);
	MIX(seek_ns);
	MIX(rotation_ns);
	MIX(transfer_ns);
	MIX(gc_ns);
#undef MIX
	io_cost_close(mean);
	snprintf(note, notelen, "a share hit_ratio of reads served by the flash (%s compressed); "
		 "the rest by the disk: %s", p->compression > 0 ? "fixed ratio" :
		 "lz4, taken as ratio 1 here", sub);
	return 0;
}

/* --- counters and state --- */

static void tiered_stats(const struct device *d, struct json *j)
{
	const struct tiered *t = (const struct tiered *)d;

	json_kv_string(j, "policy", policy_names[t->p.policy]);
	json_kv_uint(j, "cache_capacity_bytes", t->p.cache_capacity);
	json_kv_uint(j, "cache_used_bytes", t->used_bytes);
	json_kv_uint(j, "cache_blocks", t->nentries);
	json_kv_uint(j, "cache_block_bytes", t->p.cache_block);
	json_kv_uint(j, "loaded_blocks", t->loaded_blocks);
	json_kv_uint(j, "loaded_history", t->loaded_history);
	json_kv_uint(j, "history_blocks", t->hist.used);
	json_kv_uint(j, "hits", t->hits);
	json_kv_uint(j, "partial_hits", t->partial_hits);
	json_kv_uint(j, "misses", t->misses);
	json_kv_uint(j, "hit_bytes", t->hit_bytes);
	json_kv_uint(j, "inserts", t->inserts);
	json_kv_uint(j, "refreshes", t->refreshes);
	json_kv_uint(j, "evictions", t->evictions);
	json_kv_uint(j, "invalidations", t->invalidations);
	json_kv_uint(j, "copies_offered", t->offered);
	json_kv_uint(j, "copies_dropped", t->dropped);
	json_kv_uint(j, "dropped_bytes", t->dropped_bytes);
	json_kv_uint(j, "copy_queue_bytes", t->queue_cap == UINT64_MAX ? 0 : t->queue_cap);
	json_kv_uint(j, "copies_queued_bytes", t->inflight + t->waiting);
	json_kv_uint(j, "bailed", t->bailed);
	json_kv_uint(j, "bailed_bytes", t->bailed_bytes);
	json_kv_uint(j, "prefetches", t->prefetches);
	json_kv_uint(j, "prefetch_bytes", t->prefetch_bytes);
	json_kv_uint(j, "prefetch_disk_ns", t->prefetch_disk_ns);
	json_kv_uint(j, "flash_write_bytes", t->flash_write_bytes);
	json_kv_double(j, "compression_ratio", t->charged_bytes_in ?
		       (double)t->raw_bytes_in / (double)t->charged_bytes_in :
		       (t->p.compression > 0 ? t->p.compression : 1));
	if (t->disk_model->stats) {
		json_kv_object_begin(j, "disk");
		t->disk_model->stats(t->disk, j);
		json_object_end(j);
	}
	if (t->cache_model->stats) {
		json_kv_object_begin(j, "cache");
		t->cache_model->stats(t->cache, j);
		json_object_end(j);
	}
}

const struct device_model tiered_model = {
	.name = "tiered",
	.summary = "a disk behind a flash cache (ReadyBoost): capacity, compression, copy queue, "
		   "sequential bypass, pre-population",
	.keys = tiered_keys,
	.params_size = sizeof(struct tiered_params),
	.check = tiered_check,
	.capacity = tiered_capacity,
	.create = tiered_create,
	.destroy = tiered_destroy,
	.service = tiered_service,
	.expect = tiered_expect,
	.idle = tiered_idle,
	.idle_delay_ns = tiered_idle_delay,
	.stats = tiered_stats,
	.check_state = tiered_check_state,
	.load_state = tiered_load_state,
	.save_state = tiered_save_state,
};
