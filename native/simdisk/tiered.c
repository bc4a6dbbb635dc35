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
 * FUSE side (daemon.c).
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
 * Population policies (research NOTES section 9: how ReadyBoost and
 * Superfetch filled the cache):
 *   none        the cache is only what a loaded state file put there
 *   on-write    every block a write covers completely enters the cache, with an
 *               unbounded queue (copies are free): the first model, kept to
 *               compare with
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

#include "device.h"
#include "history.h"
#include "profile.h"

#define NIL UINT32_MAX
#define LZ4_FLOOR_DIVISOR 4             /* a block never counts for less than 1/4 */
#define STATE_MAGIC "SIMDISK-CACHE-V2"
#define STREAMS 128                     /* recent IOs watched for sequential streams (bcache) */

enum policy { POLICY_NONE, POLICY_ON_WRITE, POLICY_READYBOOST };
static const char *const policy_names[] = { "none", "on-write", "readyboost", NULL };

struct tiered_params {
	struct profile *disk;
	struct profile *cache;
	uint64_t cache_capacity;
	uint64_t cache_block;
	double compression;             /* fixed ratio, or 0 for lz4 */
	int policy;
	uint64_t copy_queue;
	uint64_t seq_cutoff;
	uint64_t prefetch_idle;         /* ns */
	double prefetch_min_score;
	double history_half_life;       /* s */
};

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

struct entry {
	uint32_t block;
	uint32_t charged;               /* flash bytes the copy takes */
	uint32_t hnext, prev, next;
};

struct stream {
	uint64_t end;                   /* where the stream's next read would start */
	uint64_t run;                   /* bytes read in sequence so far */
	uint64_t used;                  /* last use, for replacement */
};

struct tiered {
	struct tiered_params p;
	const struct device_model *disk_model, *cache_model;
	struct device *disk, *cache;
	struct device_env env;
	uint64_t disk_capacity;
	/* index: entries chained in hash buckets and in an LRU list */
	struct entry *entries;
	uint32_t max_entries, free_head;
	uint32_t *buckets;
	uint32_t bucket_mask;
	uint32_t lru_oldest, lru_newest;
	uint64_t used_bytes, nentries;
	/* the copy queue and the flash */
	uint64_t queue_cap;             /* compressed bytes; UINT64_MAX: unbounded */
	uint64_t inflight, waiting;     /* bytes being written (done at inflight_done), queued */
	double inflight_done;
	double flash_free;              /* ns: the flash is busy until then */
	uint64_t log_head;              /* where the next copy is written on the flash */
	/* sequential streams */
	struct stream streams[STREAMS];
	uint64_t stream_clock;
	/* lz4, loaded at run time so only liblz4.so.1 is needed */
	void *lz4;
	int (*lz4_compress)(const char *src, char *dst, int src_size, int dst_capacity);
	char *lz4_out;
	int lz4_out_size;
	char *block_buf;
	/* the pre-population agent */
	struct history hist;
	uint64_t *candidates;           /* blocks, best first */
	size_t ncandidates, next_candidate;
	uint64_t candidates_generation;
	bool nothing_to_prefetch;
	uint64_t nothing_generation;
	/* counters */
	uint64_t hits, partial_hits, misses, hit_bytes, inserts, refreshes, evictions,
		 invalidations, offered, dropped, dropped_bytes, bailed, bailed_bytes,
		 prefetches, prefetch_bytes, prefetch_disk_ns, raw_bytes_in, charged_bytes_in,
		 flash_write_bytes, loaded_blocks, loaded_history;
};

static struct tiered *tiered_of(struct device *d)
{
	return (struct tiered *)d;
}

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

/* --- the index --- */

static uint32_t bucket_of(const struct tiered *t, uint64_t block)
{
	return (uint32_t)((block * 0x9E3779B97F4A7C15ULL) >> 32) & t->bucket_mask;
}

static uint32_t lookup(const struct tiered *t, uint64_t block)
{
	for (uint32_t i = t->buckets[bucket_of(t, block)]; i != NIL; i = t->entries[i].hnext)
		if (t->entries[i].block == block)
			return i;
	return NIL;
}

static void lru_unlink(struct tiered *t, uint32_t i)
{
	struct entry *e = &t->entries[i];

	if (e->prev != NIL)
		t->entries[e->prev].next = e->next;
	else
		t->lru_oldest = e->next;
	if (e->next != NIL)
		t->entries[e->next].prev = e->prev;
	else
		t->lru_newest = e->prev;
}

static void lru_append(struct tiered *t, uint32_t i)
{
	struct entry *e = &t->entries[i];

	e->prev = t->lru_newest;
	e->next = NIL;
	if (t->lru_newest != NIL)
		t->entries[t->lru_newest].next = i;
	else
		t->lru_oldest = i;
	t->lru_newest = i;
}

static void touch(struct tiered *t, uint32_t i)
{
	lru_unlink(t, i);
	lru_append(t, i);
}

static void remove_entry(struct tiered *t, uint32_t i)
{
	struct entry *e = &t->entries[i];
	uint32_t *link = &t->buckets[bucket_of(t, e->block)];

	while (*link != i)
		link = &t->entries[*link].hnext;
	*link = e->hnext;
	lru_unlink(t, i);
	t->used_bytes -= e->charged;
	t->nentries--;
	e->hnext = t->free_head;
	t->free_head = i;
}

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

/* Puts a copy of block in the index (or refreshes it); returns its flash bytes, 0 if no room. */
static uint32_t insert(struct tiered *t, uint64_t block, uint32_t charged)
{
	uint32_t i = lookup(t, block);

	if (i != NIL) {
		t->used_bytes -= t->entries[i].charged;
		t->entries[i].charged = charged;
		t->used_bytes += charged;
		touch(t, i);
		t->refreshes++;
	} else {
		while (t->lru_oldest != NIL &&
		       (t->used_bytes + charged > t->p.cache_capacity || t->free_head == NIL)) {
			remove_entry(t, t->lru_oldest);
			t->evictions++;
		}
		if (t->free_head == NIL || t->used_bytes + charged > t->p.cache_capacity)
			return 0;
		i = t->free_head;
		t->free_head = t->entries[i].hnext;
		t->entries[i] = (struct entry){ .block = (uint32_t)block, .charged = charged };
		uint32_t b = bucket_of(t, block);

		t->entries[i].hnext = t->buckets[b];
		t->buckets[b] = i;
		lru_append(t, i);
		t->used_bytes += charged;
		t->nentries++;
		t->inserts++;
	}
	t->raw_bytes_in += t->p.cache_block;
	t->charged_bytes_in += charged;
	return charged;
}

static void invalidate(struct tiered *t, uint64_t block)
{
	uint32_t i = lookup(t, block);

	if (i != NIL) {
		remove_entry(t, i);
		t->invalidations++;
	}
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

struct state_header {
	char magic[16];
	uint64_t block_bytes;
	uint64_t identity[4];       /* backing file: device, inode, size, mtime ns */
	uint64_t entries;
	uint64_t history;
};

struct state_record {
	uint64_t block;
	uint64_t value;             /* flash bytes (entries) or the score's bits (history) */
};

/* The identity the daemon gives through env (device, inode, size, mtime). */
static int identity(const struct tiered *t, uint64_t out[4])
{
	memset(out, 0, 4 * sizeof(uint64_t));
	return t->env.identity ? t->env.identity(t->env.ctx, out) : 0;
}

static void identity_text(const uint64_t id[4], char *buf, size_t len)
{
	snprintf(buf, len, "device %llu inode %llu size %llu mtime %llu.%09llu",
		 (unsigned long long)id[0], (unsigned long long)id[1], (unsigned long long)id[2],
		 (unsigned long long)(id[3] / 1000000000u), (unsigned long long)(id[3] % 1000000000u));
}

static uint64_t monotonic_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tiered_save_state(const struct device *d, const char *path, char *err, size_t errlen)
{
	const struct tiered *t = (const struct tiered *)d;
	struct state_header h = { .block_bytes = t->p.cache_block, .entries = t->nentries,
				  .history = t->hist.used };
	uint64_t now = monotonic_now();
	char tmp[4096];
	FILE *f;

	memcpy(h.magic, STATE_MAGIC, sizeof(h.magic));
	if (identity(t, h.identity)) {
		snprintf(err, errlen, "cannot stat the backing file: %s", strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	bool ok = fwrite(&h, sizeof(h), 1, f) == 1;

	for (uint32_t i = t->lru_oldest; ok && i != NIL; i = t->entries[i].next) {
		struct state_record rec = { t->entries[i].block, t->entries[i].charged };

		ok = fwrite(&rec, sizeof(rec), 1, f) == 1;
	}
	for (uint32_t i = 0; ok && i < HISTORY_SLOTS; i++) {
		const struct history_slot *s = &t->hist.slots[i];
		double score = history_slot_score(&t->hist, s, now);
		struct state_record rec = { s->key - 1, 0 };

		memcpy(&rec.value, &score, sizeof(score));
		if (s->key)
			ok = fwrite(&rec, sizeof(rec), 1, f) == 1;
	}
	ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
	if (fclose(f) || !ok || rename(tmp, path)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Loads the state; returns the number of cached blocks loaded (0: no file), -1 on error. */
static int tiered_load_state(struct device *d, const char *path, char *err, size_t errlen)
{
	struct tiered *t = tiered_of(d);
	struct state_header h;
	uint64_t ours[4], now = monotonic_now();
	FILE *f = fopen(path, "rb");
	struct state_record rec;

	if (!f) {
		if (errno == ENOENT)
			return 0;   /* no state yet: start cold */
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, STATE_MAGIC, sizeof(h.magic))) {
		fclose(f);
		snprintf(err, errlen, "%s is not a simdisk cache state (%s)", path, STATE_MAGIC);
		return -1;
	}
	if (identity(t, ours) == 0 && memcmp(ours, h.identity, sizeof(ours))) {
		char saved[160], now_text[160];

		fclose(f);
		identity_text(h.identity, saved, sizeof(saved));
		identity_text(ours, now_text, sizeof(now_text));
		snprintf(err, errlen, "%s belongs to another disk image: it was saved for %s, the "
			 "backing file is %s (delete the state to start cold)", path, saved, now_text);
		return -1;
	}
	if (h.block_bytes != t->p.cache_block) {
		fclose(f);
		snprintf(err, errlen, "%s has %llu-byte blocks, the profile's cache_block_bytes is %llu",
			 path, (unsigned long long)h.block_bytes, (unsigned long long)t->p.cache_block);
		return -1;
	}
	for (uint64_t i = 0; i < h.entries; i++) {
		if (fread(&rec, sizeof(rec), 1, f) != 1)
			goto truncated;
		if (rec.block * t->p.cache_block < t->disk_capacity && rec.value &&
		    rec.value <= t->p.cache_block && insert(t, rec.block, (uint32_t)rec.value))
			t->loaded_blocks++;
	}
	for (uint64_t i = 0; i < h.history; i++) {
		double score;

		if (fread(&rec, sizeof(rec), 1, f) != 1)
			goto truncated;
		memcpy(&score, &rec.value, sizeof(score));
		if (rec.block * t->p.cache_block < t->disk_capacity && score > 0) {
			history_add(&t->hist, rec.block, score, now);
			t->loaded_history++;
		}
	}
	fclose(f);
	/* loading is not activity: counters start at zero */
	t->inserts = t->refreshes = t->evictions = t->raw_bytes_in = t->charged_bytes_in = 0;
	return t->loaded_blocks > (uint64_t)INT32_MAX ? INT32_MAX : (int)t->loaded_blocks;
truncated:
	fclose(f);
	snprintf(err, errlen, "%s is truncated", path);
	return -1;
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
	.load_state = tiered_load_state,
	.save_state = tiered_save_state,
};
