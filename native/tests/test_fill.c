/*
 * test_fill.c - page fills: parsing, determinism, distinct pages, the ratio
 * layout (header, one repeated word, incompressible tail), verification
 * catching a flipped byte and naming a misplaced page.
 * The real compressibility is checked with the lz4 command in tests/test_hog.py.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fill.h"

#define PAGE 4096

static unsigned char page_a[PAGE], page_b[PAGE], scratch[PAGE];

static void test_parse(void)
{
	enum fill_kind kind;
	double ratio;
	char why[200];

	CHECK(fill_parse("zero", &kind, &ratio, why, sizeof(why)) == 0 && kind == FILL_ZERO,
	      "'zero' parses");
	CHECK(fill_parse("random", &kind, &ratio, why, sizeof(why)) == 0 && kind == FILL_RANDOM &&
	      ratio == 1, "'random' parses as ratio 1");
	CHECK(fill_parse("ratio:0.25", &kind, &ratio, why, sizeof(why)) == 0 &&
	      kind == FILL_RATIO && ratio == 0.25, "'ratio:0.25' parses");
	CHECK(fill_parse("ratio:1", &kind, &ratio, why, sizeof(why)) == 0 && ratio == 1,
	      "'ratio:1' is allowed");
	CHECK(fill_parse("ratio:0", &kind, &ratio, why, sizeof(why)) == -1 &&
	      strstr(why, "out of range"), "'ratio:0' is out of range: %s", why);
	CHECK(fill_parse("ratio:1.5", &kind, &ratio, why, sizeof(why)) == -1 &&
	      strstr(why, "out of range"), "'ratio:1.5' is out of range: %s", why);
	CHECK(fill_parse("ratio:-0.5", &kind, &ratio, why, sizeof(why)) == -1,
	      "'ratio:-0.5' is refused: %s", why);
	CHECK(fill_parse("ratio:nan", &kind, &ratio, why, sizeof(why)) == -1,
	      "'ratio:nan' is refused: %s", why);
	CHECK(fill_parse("ratio:0.5x", &kind, &ratio, why, sizeof(why)) == -1,
	      "'ratio:0.5x' is refused: %s", why);
	CHECK(fill_parse("ratio:", &kind, &ratio, why, sizeof(why)) == -1,
	      "'ratio:' is refused: %s", why);
	CHECK(fill_parse("ones", &kind, &ratio, why, sizeof(why)) == -1 && strstr(why, "'ones'"),
	      "'ones' is refused by name: %s", why);
}

static void test_init_and_describe(void)
{
	struct fill f;
	char text[64];

	CHECK(fill_init(&f, FILL_RATIO, 0.5, 1, 100) == -1, "page size 100 (not a multiple of 8) refused");
	CHECK(fill_init(&f, FILL_RATIO, 0.5, 1, 32) == -1, "page size 32 refused");
	CHECK(fill_init(&f, FILL_RATIO, 0, 1, PAGE) == -1, "ratio 0 refused by fill_init");
	CHECK(fill_init(&f, FILL_RATIO, 0.1, 1, PAGE) == 0, "ratio 0.1 accepted");
	fill_describe(&f, text, sizeof(text));
	CHECK(strcmp(text, "ratio:0.1") == 0, "described as %s", text);
	fill_init(&f, FILL_RANDOM, 0, 1, PAGE);
	fill_describe(&f, text, sizeof(text));
	CHECK(strcmp(text, "random") == 0 && f.random_bytes == PAGE, "random: all %zu bytes random",
	      f.random_bytes);
	fill_init(&f, FILL_RATIO, 0.5, 1, PAGE);
	CHECK(f.random_bytes > 2000 && f.random_bytes < 2048,
	      "ratio 0.5: %zu random bytes (2048 less lz4's ~30 bytes of overhead)", f.random_bytes);
	fill_init(&f, FILL_RATIO, 0.001, 1, PAGE);
	CHECK(f.random_bytes == FILL_HEADER_BYTES, "tiny ratio keeps just the header random");
}

static void test_zero(void)
{
	struct fill f;
	size_t bad = 0;

	fill_init(&f, FILL_ZERO, 0, 7, PAGE);
	memset(page_a, 0xaa, PAGE);
	fill_page(&f, 3, page_a);
	CHECK(page_a[0] == 0 && page_a[PAGE - 1] == 0 && memchr(page_a, 0xaa, PAGE) == NULL,
	      "zero fill writes every byte 0");
	CHECK(fill_page_matches(&f, 3, page_a, scratch, &bad), "zero page verifies");
	page_a[1234] = 1;
	bool matches = fill_page_matches(&f, 3, page_a, scratch, &bad);
	CHECK(!matches && bad == 1234, "a non-zero byte is found at offset %zu", bad);
	uint64_t claimed;
	CHECK(!fill_page_claims(&f, page_a, &claimed), "zero pages claim no index");
}

static void test_pages_are_distinct_and_reproducible(enum fill_kind kind, double ratio)
{
	struct fill f, g, other_seed;
	char name[64];

	fill_init(&f, kind, ratio, 42, PAGE);
	fill_init(&g, kind, ratio, 42, PAGE);
	fill_init(&other_seed, kind, ratio, 43, PAGE);
	fill_describe(&f, name, sizeof(name));

	fill_page(&f, 10, page_a);
	fill_page(&g, 10, page_b);
	CHECK(memcmp(page_a, page_b, PAGE) == 0, "%s: same seed and index, same page", name);
	fill_page(&f, 11, page_b);
	CHECK(memcmp(page_a, page_b, PAGE) != 0, "%s: pages 10 and 11 differ", name);
	CHECK(memcmp(page_a + 8, page_b + 8, PAGE - 8) != 0,
	      "%s: they differ beyond the header too", name);
	fill_page(&other_seed, 10, page_b);
	CHECK(memcmp(page_a, page_b, PAGE) != 0, "%s: seeds 42 and 43 give different pages", name);

	uint64_t claimed = 0;
	CHECK(fill_page_claims(&f, page_a, &claimed) && claimed == 10,
	      "%s: header names page 10", name);

	size_t bad = PAGE;
	bool matches;

	fill_page(&f, 10, page_a);
	CHECK(fill_page_matches(&f, 10, page_a, scratch, &bad), "%s: page verifies", name);
	matches = fill_page_matches(&f, 9, page_a, scratch, &bad);
	CHECK(!matches && bad < 8,
	      "%s: page 10 does not pass as page 9 (first bad byte %zu, in the header)", name, bad);
	page_a[PAGE - 1] ^= 0x01;
	matches = fill_page_matches(&f, 10, page_a, scratch, &bad);
	CHECK(!matches && bad == PAGE - 1, "%s: a flipped last bit is found at offset %zu", name,
	      bad);
}

static void test_ratio_layout(void)
{
	struct fill f;

	fill_init(&f, FILL_RATIO, 0.25, 5, PAGE);
	fill_page(&f, 77, page_a);

	size_t run_end = FILL_HEADER_BYTES + PAGE - f.random_bytes;
	bool periodic = true;

	for (size_t i = FILL_HEADER_BYTES + 8; i < run_end; i++)
		periodic = periodic && page_a[i] == page_a[i - 8];
	CHECK(periodic, "ratio 0.25: bytes 8..%zu repeat one 8-byte word", run_end);

	/* The tail must look random: no byte value dominates, no 8-periodicity. */
	unsigned counts[256] = { 0 };
	size_t repeats = 0;

	for (size_t i = run_end; i < PAGE; i++) {
		counts[page_a[i]]++;
		if (i >= run_end + 8 && page_a[i] == page_a[i - 8])
			repeats++;
	}
	unsigned most = 0;
	for (int v = 0; v < 256; v++)
		most = counts[v] > most ? counts[v] : most;
	CHECK(most < 20, "ratio 0.25: tail of %zu bytes has no dominant byte (max count %u)",
	      PAGE - run_end, most);
	CHECK(repeats < 20, "ratio 0.25: tail is not periodic (%zu 8-apart repeats)", repeats);

	struct fill r;
	fill_init(&r, FILL_RATIO, 1, 5, PAGE);
	fill_page(&r, 77, page_a);
	fill_init(&f, FILL_RANDOM, 0, 5, PAGE);
	fill_page(&f, 77, page_b);
	CHECK(memcmp(page_a, page_b, PAGE) == 0, "ratio:1 is exactly random");
}

int main(void)
{
	test_parse();
	test_init_and_describe();
	test_zero();
	test_pages_are_distinct_and_reproducible(FILL_RANDOM, 1);
	test_pages_are_distinct_and_reproducible(FILL_RATIO, 0.5);
	test_pages_are_distinct_and_reproducible(FILL_RATIO, 0.01);
	test_ratio_layout();
	return 0;
}
