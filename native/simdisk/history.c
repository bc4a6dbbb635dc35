/*
 * history.c - the use history per block (see history.h).
 */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORGET_BELOW 0.25

static uint32_t home(uint64_t block)
{
	return (uint32_t)((block * 0x9E3779B97F4A7C15ULL) >> (64 - HISTORY_BITS));
}

static struct history_slot *find(struct history_slot *table, uint64_t block, bool *found)
{
	for (uint32_t i = home(block);; i = (i + 1) & (HISTORY_SLOTS - 1)) {
		if (table[i].key == block + 1 || table[i].key == 0) {
			*found = table[i].key == block + 1;
			return &table[i];
		}
	}
}

int history_init(struct history *h, double half_life_ns)
{
	memset(h, 0, sizeof(*h));
	h->half_life_ns = half_life_ns;
	h->slots = calloc(HISTORY_SLOTS, sizeof(*h->slots));
	h->spare = calloc(HISTORY_SLOTS, sizeof(*h->spare));
	return h->slots && h->spare ? 0 : -1;
}

void history_free(struct history *h)
{
	free(h->slots);
	free(h->spare);
	h->slots = h->spare = NULL;
}

double history_slot_score(const struct history *h, const struct history_slot *s, uint64_t now)
{
	if (!s->key)
		return 0;
	if (h->half_life_ns <= 0 || now <= s->at)
		return s->score;
	return s->score * exp2(-(double)(now - s->at) / h->half_life_ns);
}

double history_score(const struct history *h, uint64_t block, uint64_t now)
{
	bool found;
	const struct history_slot *s = find(h->slots, block, &found);

	return found ? history_slot_score(h, s, now) : 0;
}

/* Halves every score and forgets the small ones, until the table is at most half full. */
static void age(struct history *h, uint64_t now)
{
	do {
		memset(h->spare, 0, HISTORY_SLOTS * sizeof(*h->spare));
		h->used = 0;
		for (uint32_t i = 0; i < HISTORY_SLOTS; i++) {
			double score = history_slot_score(h, &h->slots[i], now) / 2;
			bool found;

			if (!h->slots[i].key || score < FORGET_BELOW)
				continue;
			struct history_slot *s = find(h->spare, h->slots[i].key - 1, &found);

			*s = (struct history_slot){ .key = h->slots[i].key, .score = score, .at = now };
			h->used++;
		}
		struct history_slot *swap = h->slots;

		h->slots = h->spare;
		h->spare = swap;
	} while (h->used > HISTORY_SLOTS / 2);
}

void history_add(struct history *h, uint64_t block, double weight, uint64_t now)
{
	bool found;
	struct history_slot *s = find(h->slots, block, &found);

	if (!found && h->used + 1 > HISTORY_SLOTS / 4 * 3) {
		age(h, now);
		s = find(h->slots, block, &found);
	}
	if (!found) {
		*s = (struct history_slot){ .key = block + 1, .at = now };
		h->used++;
	}
	s->score = history_slot_score(h, s, now) + weight;
	if (now > s->at)
		s->at = now;
	h->generation++;
}
