/*
 * tiered_state.c - the tiered cache's state file (--cache-state): the cached
 * blocks in LRU order and the use history, with the backing file's identity
 * (device, inode, size, mtime) and the block size; a state of another image
 * or block size is an error that names both, no file is a cold start. A file
 * that is not a state, or whose length does not hold exactly the records its
 * header counts (truncated, or bytes after them), is refused before anything
 * is touched (check_state: the mount exits 2).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tiered_int.h"

#define STATE_MAGIC "SIMDISK-CACHE-V2"

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

/* The device's clock: the daemon's when it gives one (set-up mode moves it on), else CLOCK_MONOTONIC. */
static uint64_t device_now(const struct tiered *t)
{
	struct timespec ts;

	if (t->env.now)
		return t->env.now(t->env.ctx);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tiered_save_state(const struct device *d, const char *path, char *err, size_t errlen)
{
	const struct tiered *t = (const struct tiered *)d;
	struct state_header h = { .block_bytes = t->p.cache_block, .entries = t->nentries,
				  .history = t->hist.used };
	uint64_t now = device_now(t);
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

/*
 * Opens a state file and checks its form: the magic, the block size against the profile's,
 * and a length that holds exactly the records its header counts. 1: no file (a cold start),
 * 0: *out is open after the header, -1: err says what is wrong, naming the file.
 */
static int open_state(const char *path, uint64_t block_bytes, struct state_header *h, FILE **out,
		      char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;

	*out = NULL;
	if (!f) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "--cache-state %s: cannot read it: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st)) {
		snprintf(err, errlen, "--cache-state %s: cannot stat it: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	uint64_t size = (uint64_t)st.st_size, records;
	size_t got = fread(h, 1, sizeof(*h), f);

	if (got < sizeof(h->magic) || memcmp(h->magic, STATE_MAGIC, sizeof(h->magic))) {
		snprintf(err, errlen, "--cache-state %s: not a simdisk cache state (no %s header)", path,
			 STATE_MAGIC);
		goto fail;
	}
	if (got < sizeof(*h)) {
		snprintf(err, errlen, "--cache-state %s: truncated: %llu bytes, less than its %zu-byte "
			 "header", path, (unsigned long long)size, sizeof(*h));
		goto fail;
	}
	uint64_t room = (size - sizeof(*h)) / sizeof(struct state_record);

	if (h->entries > room || h->history > room - h->entries) {
		snprintf(err, errlen, "--cache-state %s: truncated: its header counts %llu cached blocks "
			 "and %llu history records, its %llu bytes hold %llu", path,
			 (unsigned long long)h->entries, (unsigned long long)h->history,
			 (unsigned long long)size, (unsigned long long)room);
		goto fail;
	}
	records = h->entries + h->history;
	if (size != sizeof(*h) + records * sizeof(struct state_record)) {
		snprintf(err, errlen, "--cache-state %s: corrupt: %llu bytes follow the %llu records its "
			 "header counts", path,
			 (unsigned long long)(size - sizeof(*h) - records * sizeof(struct state_record)),
			 (unsigned long long)records);
		goto fail;
	}
	if (h->block_bytes != block_bytes) {
		snprintf(err, errlen, "--cache-state %s: has %llu-byte blocks, the profile's "
			 "cache_block_bytes is %llu", path, (unsigned long long)h->block_bytes,
			 (unsigned long long)block_bytes);
		goto fail;
	}
	*out = f;
	return 0;
fail:
	fclose(f);
	return -1;
}

int tiered_check_state(const struct profile *p, const char *path, char *err, size_t errlen)
{
	struct state_header h;
	FILE *f;
	int form = open_state(path, PARAMS(p, struct tiered_params)->cache_block, &h, &f, err, errlen);

	if (f)
		fclose(f);
	return form < 0 ? -1 : 0;
}

/* Loads the state; returns the number of cached blocks loaded (0: no file), -1 on error. */
int tiered_load_state(struct device *d, const char *path, char *err, size_t errlen)
{
	struct tiered *t = tiered_of(d);
	struct state_header h;
	uint64_t ours[4], now = device_now(t);
	struct state_record rec;
	FILE *f;
	int form = open_state(path, t->p.cache_block, &h, &f, err, errlen);

	if (form)
		return form > 0 ? 0 : -1;   /* no state yet: start cold */
	if (identity(t, ours) == 0 && memcmp(ours, h.identity, sizeof(ours))) {
		char saved[160], now_text[160];

		fclose(f);
		identity_text(h.identity, saved, sizeof(saved));
		identity_text(ours, now_text, sizeof(now_text));
		snprintf(err, errlen, "%s belongs to another disk image: it was saved for %s, the "
			 "backing file is %s (delete the state to start cold)", path, saved, now_text);
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
	snprintf(err, errlen, "--cache-state %s: truncated while it was read", path);
	return -1;
}
