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
