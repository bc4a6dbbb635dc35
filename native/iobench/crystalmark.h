/*
 * crystalmark.h - the CrystalMark replay's tests, options and results, shared by
 * crystalmark.c (the command and the run) and crystalmark_report.c (its reports).
 */
#ifndef IOBENCH_CRYSTALMARK_H
#define IOBENCH_CRYSTALMARK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "hist.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define MAX_SETS 100
#define FILL_BLOCK MiB   /* the fill's writes */

enum access { SEQUENTIAL, RANDOM };

struct cm_test {
	const char *key;        /* JSON and trace name */
	const char *title;      /* CrystalMark's name */
	enum io_dir dir;
	enum access access;
	uint64_t bs;
};

/* Seed 003's order; changing it changes what is being replayed. */
static const struct cm_test cm_tests[] = {
	{ "seq_read",        "Sequential Read",   IO_READ,  SEQUENTIAL, MiB },
	{ "seq_write",       "Sequential Write",  IO_WRITE, SEQUENTIAL, MiB },
	{ "rand_read_512k",  "Random Read 512K",  IO_READ,  RANDOM,     512 * KiB },
	{ "rand_write_512k", "Random Write 512K", IO_WRITE, RANDOM,     512 * KiB },
	{ "rand_read_64k",   "Random Read 64K",   IO_READ,  RANDOM,     64 * KiB },
	{ "rand_write_64k",  "Random Write 64K",  IO_WRITE, RANDOM,     64 * KiB },
};
#define NTESTS (sizeof(cm_tests) / sizeof(cm_tests[0]))


struct cm_spec {
	const char *file;
	uint64_t size;
	uint64_t sets;
	uint64_t runtime_ns;    /* of each set; 0: no cap */
	bool buffered;
	bool keep_file;
	uint64_t seed;
	const char *tests;      /* comma-separated keys; NULL: all */
	bool run_test[NTESTS];
	const char *trace;
	int output_format;
};

struct set_result {
	uint64_t ios;
	uint64_t bytes;
	uint64_t ns;            /* first IO issued .. last IO done */
};

struct test_result {
	struct set_result set[MAX_SETS];
	struct hist clat;
};

struct cm_run {
	const struct cm_spec *spec;
	FILE *trace;
	void *buf;              /* MiB, aligned for O_DIRECT */
	bool created;           /* this run made the file (and may remove it) */
	bool filled;            /* ... and filled it to --size */
	bool reused;            /* --keep-file found the file and kept its data */
	uint64_t fill_ns, fill_ios;
	struct test_result tests[NTESTS];
};

/* "read" or "write". */
const char *dir_name(enum io_dir dir);

/* The report: one JSON document, or the text summary. */
void report_json(const struct cm_run *run, FILE *out);
void report_normal(const struct cm_run *run, FILE *out);

#endif
