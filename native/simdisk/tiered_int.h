/*
 * tiered_int.h - the tiered model's state, shared by its files (internal to simdisk).
 *
 * tiered.c        the model: its keys and checks, set-up and tear-down (lz4 included),
 *                 the analytic prediction, counters
 * tiered_io.c     the request path: copy charges, the copy queue, sequential streams,
 *                 reads, writes, the pre-population agent
 * tiered_index.c  the block cache's index: hash buckets and an LRU list
 * tiered_state.c  the cache state file (--cache-state)
 */
#ifndef SIMDISK_TIERED_INT_H
#define SIMDISK_TIERED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "history.h"
#include "profile.h"

#define NIL UINT32_MAX
#define LZ4_FLOOR_DIVISOR 4             /* a block never counts for less than 1/4 */
#define STREAMS 128                     /* recent IOs watched for sequential streams (bcache; refs.bib: bcachedoc) */

enum policy { POLICY_NONE, POLICY_ON_WRITE, POLICY_READYBOOST };

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

static inline struct tiered *tiered_of(struct device *d)
{
	return (struct tiered *)d;
}

/* tiered_io.c */
void tiered_service(struct device *d, const struct io_request *r, uint64_t start_ns,
		    struct io_cost *cost);
uint64_t tiered_idle(struct device *d, uint64_t now_ns, struct io_request *r, struct io_cost *cost);
uint64_t tiered_idle_delay(const struct device *d);

/* tiered_index.c */
uint32_t lookup(const struct tiered *t, uint64_t block);
void touch(struct tiered *t, uint32_t i);
void remove_entry(struct tiered *t, uint32_t i);
uint32_t insert(struct tiered *t, uint64_t block, uint32_t charged);
void invalidate(struct tiered *t, uint64_t block);

/* tiered_state.c */
int tiered_save_state(const struct device *d, const char *path, char *err, size_t errlen);
int tiered_load_state(struct device *d, const char *path, char *err, size_t errlen);
int tiered_check_state(const struct profile *p, const char *path, char *err, size_t errlen);

#endif
