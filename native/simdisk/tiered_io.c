/*
 * tiered_io.c - the tiered model's request path: what a copy costs on the flash, the copy
 * queue and its writer, sequential streams, reads, writes and the pre-population agent.
 * What they do and why is tiered.c's header; the index they consult is tiered_index.c.
 */
#include <stdlib.h>

#include "tiered_int.h"

static double max2(double a, double b)
{
	return a > b ? a : b;
}

/* --- copies --- */

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

void tiered_service(struct device *d, const struct io_request *r, uint64_t start_ns,
		    struct io_cost *cost)
{
	struct tiered *t = tiered_of(d);
	struct io_request clipped = *r;

	clipped.length = io_length_within(r, t->disk_capacity);
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

uint64_t tiered_idle(struct device *d, uint64_t now_ns, struct io_request *r, struct io_cost *cost)
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

uint64_t tiered_idle_delay(const struct device *d)
{
	return ((const struct tiered *)d)->p.prefetch_idle;
}
