/*
 * history.h - a use history per block: the Superfetch analogue's memory.
 *
 * For: tiered.c's pre-population agent. Every random read of a block adds 1
 * to its score; scores decay exponentially with a half-life (Superfetch kept
 * use counts per hour, day and week and weighed recency: Russinovich 2007,
 * Windows Internals 6th ed.; refs.bib: russinovich07, windowsinternals6), so
 * a block read often and lately scores highest. The table is
 * bounded (HISTORY_SLOTS blocks); when it fills, every score is halved and
 * the ones that fall below 1/4 are forgotten.
 * Not for: what is cached (tiered.c's index) or how a copy is written.
 *
 * Times are CLOCK_MONOTONIC ns, as in every model; a score saved to a state
 * file is its value at the saving instant and counts from the loading one.
 */
#ifndef SIMDISK_HISTORY_H
#define SIMDISK_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTORY_BITS 18
#define HISTORY_SLOTS (1u << HISTORY_BITS)     /* 256 Ki blocks: 1 GiB of 4 KiB blocks */

struct history_slot {
	uint64_t key;          /* block + 1; 0 = empty */
	double score;          /* at `at` */
	uint64_t at;           /* ns */
};

struct history {
	struct history_slot *slots, *spare;
	uint32_t used;
	double half_life_ns;   /* 0: no decay */
	uint64_t generation;   /* bumped by every change (candidate lists go stale) */
};

int history_init(struct history *h, double half_life_ns);
void history_free(struct history *h);
/* Adds weight to block's score at time now. */
void history_add(struct history *h, uint64_t block, double weight, uint64_t now);
/* The block's score decayed to now (0 if unknown). */
double history_score(const struct history *h, uint64_t block, uint64_t now);
/* The slot's score decayed to now. */
double history_slot_score(const struct history *h, const struct history_slot *s, uint64_t now);

#endif
