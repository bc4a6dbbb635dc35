/*
 * tiered_index.c - the tiered cache's index: which disk blocks the flash
 * holds, each with the flash bytes its copy takes; entries chained in hash
 * buckets and kept in LRU order (the oldest is evicted to make room).
 */
#include "tiered_int.h"

static uint32_t bucket_of(const struct tiered *t, uint64_t block)
{
	return (uint32_t)((block * 0x9E3779B97F4A7C15ULL) >> 32) & t->bucket_mask;
}

uint32_t lookup(const struct tiered *t, uint64_t block)
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

void touch(struct tiered *t, uint32_t i)
{
	lru_unlink(t, i);
	lru_append(t, i);
}

void remove_entry(struct tiered *t, uint32_t i)
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

/* Puts a copy of block in the index (or refreshes it); returns its flash bytes, 0 if no room. */
uint32_t insert(struct tiered *t, uint64_t block, uint32_t charged)
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

void invalidate(struct tiered *t, uint64_t block)
{
	uint32_t i = lookup(t, block);

	if (i != NIL) {
		remove_entry(t, i);
		t->invalidations++;
	}
}
