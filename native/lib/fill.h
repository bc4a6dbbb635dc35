/*
 * fill.h - reproducible page contents with a chosen compressibility.
 *
 * For: filling anonymous memory (or a dump of it) page by page so that a
 * page compressor such as lz4 or lzo (zswap, zram) sees a known ratio, and
 * checking later that every page still holds exactly what was written.
 * Every page is a pure function of (kind, ratio, seed, page size, index):
 *
 *   zero       every byte 0 (the kernel's same-filled and zero-page paths
 *              see them as such); pages are identical, so a misplaced page
 *              cannot be told apart, only a non-zero byte.
 *   random     incompressible bytes from a stream seeded by (seed, index).
 *   ratio:R    0 < R <= 1: an 8-byte header, then a run of one repeated
 *              8-byte word, then incompressible bytes, sized so that lz4
 *              compresses the page to about R of its size (see fill.c for
 *              the calibration). lz4 and lzo have no entropy coder: only
 *              repeats shrink, so "fewer distinct byte values" would not
 *              work; a fraction of pure repeats does.
 *
 * random and ratio pages start with a header word (page index XOR a tag of
 * the seed), so fill_page_claims() can say which page a misplaced one was,
 * and every other byte also depends on the index and the seed: no two pages
 * are alike and no page matches another seed's.
 * Not for: page sizes that are not a multiple of 8 or below 64 bytes, or
 * data meant to look like any particular real workload.
 */
#ifndef NATIVE_FILL_H
#define NATIVE_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fill_kind { FILL_ZERO, FILL_RANDOM, FILL_RATIO };

struct fill {
	enum fill_kind kind;
	double ratio;             /* FILL_RATIO: the target R; 0 for zero, 1 for random */
	uint64_t seed;
	size_t page_size;
	size_t random_bytes;      /* incompressible bytes per page, header included */
	uint64_t tag;             /* derived from seed; XORed into each header */
};

#define FILL_MIN_PAGE 64
#define FILL_HEADER_BYTES 8

/*
 * Parses "zero", "random" or "ratio:R". Returns 0, or -1 with a one-line
 * reason (no trailing newline) in why.
 */
int fill_parse(const char *text, enum fill_kind *kind, double *ratio, char *why, size_t why_len);

/* Sets up f; returns 0, or -1 if page_size is unusable or ratio is out of (0, 1]. */
int fill_init(struct fill *f, enum fill_kind kind, double ratio, uint64_t seed, size_t page_size);

/* "zero", "random" or "ratio:0.5" (shortest form that reads back). */
void fill_describe(const struct fill *f, char *buf, size_t len);

/* Writes page number index (page_size bytes) to page. */
void fill_page(const struct fill *f, uint64_t index, void *page);

/*
 * True if page holds exactly page number index. Otherwise false, with the
 * offset of the first differing byte in *first_bad_byte (if not NULL).
 * scratch must hold page_size bytes (unused for zero fill).
 */
bool fill_page_matches(const struct fill *f, uint64_t index, const void *page, void *scratch,
		       size_t *first_bad_byte);

/*
 * The page index a random or ratio page's header names (for "page 7 holds
 * page 9" diagnostics); false for zero fill. The header alone proves
 * nothing: check the claimed index with fill_page_matches().
 */
bool fill_page_claims(const struct fill *f, const void *page, uint64_t *index);

#endif
