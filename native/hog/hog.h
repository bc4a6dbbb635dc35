/*
 * hog.h - what the hog subcommands share: the common options (declared once,
 * used in every table that needs them), the memory guard, the working-set
 * mapping, fault counts and the JSON preamble.
 *
 * For: code used by two or more subcommands. Not for: anything one
 * subcommand alone needs; that stays in its own file.
 */
#ifndef HOG_HOG_H
#define HOG_HOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fill.h"
#include "json.h"
#include "memlimit.h"
#include "opts.h"
#include "fail.h"


/*
 * How fresh pages get written: TOUCH_FAULT lets every first write take a page
 * fault (what any program does); TOUCH_PREFAULT has the kernel populate each
 * chunk first (MADV_POPULATE_WRITE, one system call per TOUCH_CHUNK_PAGES)
 * and then writes it, which saves the fault entry and exit per page.
 * TOUCH_AUTO (the default) prefaults while the memory cgroup has room for the
 * chunk above TOUCH_ROOM_MARGIN and lets pages fault once it has not: near the
 * limit every new page needs reclaim, and batched population outruns reclaim
 * to a slow swap device (the memcg OOM-kills), where faulting keeps pace.
 */
enum touch_method { TOUCH_AUTO, TOUCH_FAULT, TOUCH_PREFAULT };
extern const char *const touch_method_names[];
#define TOUCH_CHUNK_PAGES 64
#define TOUCH_RECHECK_PAGES 16384          /* auto: look at the room again every 64 MiB */
#define TOUCH_ROOM_MARGIN_MIN (32ULL << 20) /* auto: keep the larger of this and 1/8 */
#define TOUCH_ROOM_MARGIN_DIVISOR 8         /* of the cgroup limit free of prefaulting */

/* The options several subcommands take, and what they resolve to. */
struct hog_common {
	uint64_t size;
	const char *fill_text;
	uint64_t seed;
	uint64_t rounds;         /* --rounds: rounds to run */
	bool force;
	const char *output;      /* --output FILE, or NULL: stdout */
	int touch;               /* enum touch_method */
	int output_format;       /* enum output_format, resolved */
	/* resolved by hog_resolve(): */
	size_t page_size;
	uint64_t pages;
	struct fill fill;
	struct mem_limits limits;
};

/* Option rows, so that every subcommand spells and explains them alike. */
struct opt hog_opt_size(struct hog_common *c, const char *help);
struct opt hog_opt_fill(struct hog_common *c);
struct opt hog_opt_rounds(struct hog_common *c);
struct opt hog_opt_force(struct hog_common *c);
struct opt hog_opt_touch(struct hog_common *c);
/* The last rows of a table whose command allocates and reports: --force,
 * --output-format and --output. */
#define HOG_REPORT_ROWS(c) \
	hog_opt_force(c), opt_output_format(&(c)->output_format), opt_output(&(c)->output)

/* What hog_resolve() checks beyond the size. */
enum {
	HOG_NEEDS_FILL = 1,      /* the table has --fill and --seed */
	HOG_NEEDS_MEMORY = 2,    /* the size will be allocated: apply the guard */
	HOG_HAS_OUTPUT = 4,      /* the table has --output (output_begin once all else is checked) */
	HOG_HAS_ROUNDS = 8,      /* the table has --rounds (1 to HOG_MAX_ROUNDS) */
};
#define HOG_MAX_ROUNDS (1u << 24)

/*
 * After opts_parse: checks --size (> 0, a whole number of pages) and, for
 * HOG_HAS_ROUNDS, --rounds; parses --fill; for HOG_NEEDS_MEMORY, refuses a
 * size beyond the cgroup limit or MemAvailable less the margin unless
 * --force; for HOG_HAS_OUTPUT, sends stdout to --output (output_begin).
 * Returns 0 or the exit status (2 usage/refusal, 1 runtime).
 */
int hog_resolve(struct cli *cli, struct hog_common *c, unsigned needs);

/*
 * The start of every hog command: opts_start (parse, then check(cli, spec),
 * NULL: none), then hog_resolve(cli, c, needs). Returns true to go on
 * (*status is then 0), or false with *status the exit status to return.
 */
bool hog_start(struct cli *cli, int argc, char **argv, opts_check_fn *check, void *spec,
	       struct hog_common *c, unsigned needs, int *status);

/* "hog: <message>" on stderr; returns 1 (runtime failure). */

/*
 * Maps size bytes of private anonymous memory with transparent huge pages
 * off for it (so that every page is one 4 KiB fault, whatever the system
 * THP setting). Returns the address, or NULL with errno set.
 */
void *hog_map(uint64_t size);

/*
 * Writes every page of fresh memory buf with its fill, by --touch method;
 * *prefaulted is how many pages the kernel populated first. Returns 0, or an
 * errno value if MADV_POPULATE_WRITE failed under --touch prefault (auto lets
 * the pages of a chunk it could not populate fault instead).
 */
int hog_touch_pages(const struct hog_common *c, unsigned char *buf, uint64_t *prefaulted);

/* How many of the pages of buf mincore(2) reports resident; -1 on error. */
int64_t hog_resident_pages(void *buf, uint64_t size, size_t page_size);

struct faults {
	uint64_t minor, major;
};
struct faults faults_now(void);
struct faults faults_since(struct faults before);

/* Sleeps for ns, resuming after signals; returns the time actually slept. */
uint64_t sleep_ns(uint64_t ns);

/*
 * A barrier shared by the hogs of one run (barrier.c): each holds a round's
 * memory until all parties have written theirs. path is NULL when unused;
 * broken_round is the round (from 1) whose wait gave up after timeout_ns on a
 * hog that never came, 0 while the hogs stay together (later rounds then do
 * not wait).
 */
#define BARRIER_MAX_PARTIES 64
#define BARRIER_PARTNER_GONE 3   /* exit status: a hog sharing the barrier is gone */
struct barrier_page;
struct barrier {
	const char *path;
	int fd;                      /* holds this hog's slot lock while open */
	struct barrier_page *page;
	uint32_t *count;             /* the page's count of arrivals */
	uint32_t parties, slot;
	uint64_t timeout_ns;
	uint64_t broken_round;
};
/* Maps FILE (made if missing) and takes a slot in it; 0, or 1 with the error printed. */
int barrier_open(struct barrier *b, const char *path, uint64_t parties, uint64_t timeout_ns);
/*
 * Arrives at round's barrier and waits for the rest, *waited_ns the time it
 * took. Returns 0, or BARRIER_PARTNER_GONE with the message printed as soon as
 * a hog that took a slot is gone (killed or exited) before the round is whole.
 */
int barrier_wait(struct barrier *b, uint64_t round, uint64_t *waited_ns);
void barrier_close(struct barrier *b);

/* The system's transparent huge page mode ("madvise", ...), or "unknown". */
const char *thp_mode(void);

/* Opens the top-level JSON object with the version, command and time. */
void hog_json_begin(struct json *j, FILE *out, const char *command);
/* Writes the resolved common options as keys of the current object. */
void hog_json_common(struct json *j, const struct hog_common *c, bool with_fill);

/* Decimal GB/s for bytes in ns (0 if ns is 0). */
double gb_per_s(uint64_t bytes, uint64_t ns);

/* Human-readable byte counts ("1G", "64M", "12345") for text output. */
void format_size(uint64_t bytes, char *buf, size_t len);

#endif
