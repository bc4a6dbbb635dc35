/*
 * fill.c - reproducible page contents with a chosen compressibility (see fill.h).
 *
 * Layout of a random or ratio page of P bytes with n incompressible bytes:
 *
 *   [0, 8)          header: page index XOR tag(seed)
 *   [8, 8 + P - n)  one 8-byte word w, repeated (truncated at the end)
 *   [8 + P - n, P)  n - 8 bytes from the page's stream
 *
 * The page's stream is xoshiro256** seeded with tag ^ index * golden ratio,
 * its first draw is w. random is ratio 1: n = P, no repeated run.
 *
 * Why the run comes first: lz4's greedy search speeds up (skips bytes) the
 * longer it goes without a match, so a run placed after a long random stretch
 * is found late and partly stored as literals; a run at the start is matched
 * at once. lz4 then costs, per 4 KiB page, the n literal bytes plus about 30:
 * the first copy of w, tokens, the 2-byte offset and one length byte per 255
 * of literal and match length. Measured with liblz4 1.9.4 (LZ4_compress_default
 * on single 4 KiB pages, as zram and zswap call it): compressed = n + 30 bytes
 * for every n from 16 to 4050, so n = R * P - (14 + P / 255) gives a ratio
 * within 0.2 % of R. The lz4 command compresses a dump in 4 MiB blocks with a
 * 64 KiB window, which costs up to 45 bytes more per page (its search skips
 * into the next page's run); lzo1x-1 works the same way and should land close
 * (not measured here).
 */
#include "fill.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL
#define TAG_SALT 0x706167656c616221ULL   /* "pagelab!" */

/* lz4's cost above the literal bytes for one page: see the top of this file. */
static size_t lz4_page_overhead(size_t page_size)
{
	return 14 + page_size / 255;
}

static size_t random_bytes_for(double ratio, size_t page_size)
{
	if (ratio >= 1)
		return page_size;

	double want = ratio * (double)page_size - (double)lz4_page_overhead(page_size);

	if (want <= FILL_HEADER_BYTES)
		return FILL_HEADER_BYTES;
	if (want >= (double)page_size)
		return page_size;
	return (size_t)llround(want);
}

int fill_parse(const char *text, enum fill_kind *kind, double *ratio, char *why, size_t why_len)
{
	static const char prefix[] = "ratio:";
	const size_t prefix_len = sizeof(prefix) - 1;

	if (strcmp(text, "zero") == 0) {
		*kind = FILL_ZERO;
		*ratio = 0;
		return 0;
	}
	if (strcmp(text, "random") == 0) {
		*kind = FILL_RANDOM;
		*ratio = 1;
		return 0;
	}
	if (strncmp(text, prefix, prefix_len) != 0) {
		snprintf(why, why_len, "'%s' is not one of zero, random, ratio:R", text);
		return -1;
	}

	const char *number = text + prefix_len;
	char *rest;
	double r;

	if ((*number < '0' || *number > '9') && *number != '.') {
		snprintf(why, why_len, "'%s': R must be a number in (0, 1]", text);
		return -1;
	}
	r = strtod(number, &rest);
	if (*rest || rest == number) {
		snprintf(why, why_len, "'%s': R must be a number in (0, 1]", text);
		return -1;
	}
	if (!(r > 0 && r <= 1)) {
		snprintf(why, why_len, "'%s': R is out of range (0, 1]", text);
		return -1;
	}
	*kind = FILL_RATIO;
	*ratio = r;
	return 0;
}

int fill_init(struct fill *f, enum fill_kind kind, double ratio, uint64_t seed, size_t page_size)
{
	struct rng r;

	if (page_size < FILL_MIN_PAGE || page_size % 8)
		return -1;
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->seed = seed;
	f->page_size = page_size;
	switch (kind) {
	case FILL_ZERO:
		f->ratio = 0;
		f->random_bytes = 0;
		break;
	case FILL_RANDOM:
		f->ratio = 1;
		f->random_bytes = page_size;
		break;
	case FILL_RATIO:
		if (!(ratio > 0 && ratio <= 1))
			return -1;
		f->ratio = ratio;
		f->random_bytes = random_bytes_for(ratio, page_size);
		break;
	default:
		return -1;
	}
	rng_seed(&r, seed ^ TAG_SALT);
	f->tag = rng_next(&r);
	return 0;
}

void fill_describe(const struct fill *f, char *buf, size_t len)
{
	if (f->kind == FILL_ZERO) {
		snprintf(buf, len, "zero");
		return;
	}
	if (f->kind == FILL_RANDOM) {
		snprintf(buf, len, "random");
		return;
	}
	/* The shortest spelling of R that reads back to the same double. */
	for (int digits = 1; digits <= 17; digits++) {
		char number[40];

		snprintf(number, sizeof(number), "%.*g", digits, f->ratio);
		if (digits == 17 || strtod(number, NULL) == f->ratio) {
			snprintf(buf, len, "ratio:%s", number);
			return;
		}
	}
}

void fill_page(const struct fill *f, uint64_t index, void *page)
{
	unsigned char *p = page;
	size_t size = f->page_size;

	if (f->kind == FILL_ZERO) {
		memset(p, 0, size);
		return;
	}

	struct rng r;
	uint64_t header = index ^ f->tag;
	size_t run_end = FILL_HEADER_BYTES + (size - f->random_bytes);
	uint64_t word;

	rng_seed(&r, f->tag ^ (index * GOLDEN));
	word = rng_next(&r);
	memcpy(p, &header, sizeof(header));
	for (size_t at = FILL_HEADER_BYTES; at < run_end; at += 8) {
		size_t left = run_end - at;

		memcpy(p + at, &word, left < 8 ? left : 8);
	}
	rng_fill(&r, p + run_end, size - run_end);
}

static size_t first_nonzero(const unsigned char *p, size_t size)
{
	size_t at = 0;

	for (; at + 8 <= size; at += 8) {
		uint64_t w;

		memcpy(&w, p + at, 8);
		if (w)
			break;
	}
	for (; at < size; at++)
		if (p[at])
			return at;
	return size;
}

bool fill_page_matches(const struct fill *f, uint64_t index, const void *page, void *scratch,
		       size_t *first_bad_byte)
{
	const unsigned char *p = page;
	size_t bad;

	if (f->kind == FILL_ZERO) {
		bad = first_nonzero(p, f->page_size);
	} else {
		const unsigned char *want = scratch;

		fill_page(f, index, scratch);
		if (memcmp(p, want, f->page_size) == 0)
			return true;
		for (bad = 0; p[bad] == want[bad]; bad++)
			;
	}
	if (bad == f->page_size)
		return true;
	if (first_bad_byte)
		*first_bad_byte = bad;
	return false;
}

bool fill_page_claims(const struct fill *f, const void *page, uint64_t *index)
{
	uint64_t header;

	if (f->kind == FILL_ZERO)
		return false;
	memcpy(&header, page, sizeof(header));
	*index = header ^ f->tag;
	return true;
}
