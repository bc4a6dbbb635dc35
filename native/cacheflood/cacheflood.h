/*
 * cacheflood.h - what a flood is asked to do and what it measured.
 *
 * For: passing a run between main.c (options, the set's life cycle),
 * flood.c (the read loop and its before/after counters) and report.c (JSON
 * and human output).
 */
#ifndef CACHEFLOOD_H
#define CACHEFLOOD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "fileset.h"
#include "pagecache.h"
#include "procfs.h"
#include "fail.h"

#define CACHEFLOOD_VERSION "cacheflood-0.1.0"

enum flood_order { ORDER_SEQ, ORDER_RANDOM };
/* --fadvise: the readahead hint given on every file of the set before reading */
enum flood_advice { ADVICE_SEQUENTIAL, ADVICE_NONE, ADVICE_RANDOM };
extern const char *const flood_advice_names[];

extern const char *const flood_order_names[];

struct flood_spec {
	const char *first_file;   /* --files F (the rest are operands) */
	const char *make_set;     /* --make-set DIR */
	uint64_t set_size, file_size;
	uint64_t bytes, bs, seed;
	int order;                /* enum flood_order */
	int advice;               /* enum flood_advice */
	int output_format;        /* enum output_format */
	bool keep_set, cold;
};

/* Counters taken just before the first read and just after the last. */
struct flood_snapshot {
	struct meminfo mem;        /* fields PROCFS_MISSING if unreadable */
	struct proc_io io;         /* likewise (no CONFIG_TASK_IO_ACCOUNTING) */
	struct rusage usage;
	struct residency set;      /* the set's own pages in the page cache */
};

struct flood_result {
	uint64_t bytes;            /* read, == spec.bytes unless interrupted */
	uint64_t reads;            /* pread calls that returned data */
	uint64_t elapsed_ns;       /* first read .. last read */
	struct flood_snapshot before, after;
	bool set_removed;
};

/* Set by SIGINT/SIGTERM: the loop stops at the next read. */
extern volatile sig_atomic_t flood_stop;

/* Reads spec->bytes through the open set; 0, or 1 after printing why not. */
int flood_run(const struct flood_spec *spec, struct fileset *set, struct flood_result *res);

void flood_report_json(const struct flood_spec *spec, const struct fileset *set,
		       const struct flood_result *res, FILE *out);
void flood_report_normal(const struct flood_spec *spec, const struct fileset *set,
			 const struct flood_result *res, FILE *out);

/* "cacheflood: <reason>" on stderr; returns 1. */

#endif
