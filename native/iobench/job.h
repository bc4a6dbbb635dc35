/*
 * job.h - what an iobench job is asked to do and what it measured.
 *
 * For: passing a job between its parts: job.c (options, the command),
 * job_setup.c (the file and --data-file), job_run.c (the IO loop),
 * job_report.c (JSON and human output) and job_names.c (the settings' names).
 */
#ifndef IOBENCH_JOB_H
#define IOBENCH_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "hist.h"

#define DIRECT_ALIGN 4096                      /* O_DIRECT: buffers, --bs and --offset */
#define FILL_SEED_SALT 0x66696c6c64617461ULL   /* "filldata": the fill data's stream of --seed */

enum rw_pattern { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE };
extern const char *const rw_pattern_names[];   /* job_names.c, as are iomem_names */

/* Where the IO buffers live, named after fio's iomem: malloc (small pages, wherever the
 * allocator puts them) or mmaphuge (anonymous huge pages, MAP_HUGETLB). */
enum iomem { IOMEM_MALLOC, IOMEM_MMAPHUGE };
extern const char *const iomem_names[];

struct job_spec {
	const char *name;
	const char *file;
	int rw;                 /* enum rw_pattern */
	uint64_t bs;
	bool direct;
	uint64_t size;          /* --size, or 0 */
	uint64_t runtime_ns;    /* 0 when --count limits the job */
	uint64_t count;         /* 0 when --runtime limits the job */
	uint64_t ramp_ns;
	uint64_t seed;
	uint64_t offset;
	uint64_t span;          /* resolved: never 0 once the job runs */
	uint64_t file_size;     /* as found (or made) before the run */
	const char *lat_log;
	int output_format;      /* enum output_format */
	int engine_index;       /* into io_engines[] */
	const struct io_engine *engine;
	uint64_t qd;            /* queue depth (fio's iodepth) */
	bool keep_cache;        /* do not drop the file's cached pages first */
	int iomem;              /* enum iomem: where the IO buffers live */
	const char *data_file;  /* --data-file: what write jobs write, or NULL */
	uint64_t data_bytes;    /* bytes of it used (a multiple of bs), once loaded */
};

struct dir_stats {
	uint64_t ios;
	uint64_t bytes;
	struct hist clat;       /* issue to completion */
	struct hist lat;        /* from choosing the IO to completion */
};

struct job_result {
	struct dir_stats dir[2];        /* indexed by enum io_dir */
	uint64_t measured_ns;           /* first measured IO start .. last end */
	uint64_t elapsed_ns;            /* whole job, ramp included */
	double usr_cpu, sys_cpu;        /* percent of measured_ns */
	uint64_t ctx, majf, minf;       /* during the measurement */
};

static inline enum io_dir job_dir(const struct job_spec *spec)
{
	return (spec->rw == RW_READ || spec->rw == RW_RANDREAD) ? IO_READ : IO_WRITE;
}

struct cli;

/* job_setup.c: the job's file, opened with its region resolved (-1 and *status when
 * it cannot be), and --data-file read into aligned memory (0, or the exit status). */
int open_job_file(struct cli *cli, struct job_spec *spec, int *status);
int load_data_file(struct cli *cli, struct job_spec *spec, char **data);

/* job_run.c: runs the job on fd, logging measured IOs to lat_log (or NULL), into res
 * (its histograms already initialised); returns the exit status. */
int run_job(const struct job_spec *spec, const char *data, int fd, FILE *lat_log,
	    struct job_result *res);

void job_report_json(const struct job_spec *spec, const struct job_result *res, FILE *out);
void job_report_normal(const struct job_spec *spec, const struct job_result *res, FILE *out);

#endif
