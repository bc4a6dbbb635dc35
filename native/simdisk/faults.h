/*
 * faults.h - fault injection for the mounted device, after device-mapper's
 * test targets: dm-flakey (up and down intervals, error_reads, error_writes),
 * dm-dust (bad blocks that fail reads until written, enable and disable) and
 * dm-delay (read, write and flush delays), plus a device that stops
 * answering, for a time or for good, with the SCSI layer's answer to that: a
 * command timeout after which the request fails and the device is offline.
 *
 * For: the daemon (serve_io asks faults_plan before every disk request; the
 * control file passes messages; the stats show the counters). The keys are
 * optional keys of every profile (profile.c adds them to each model's own),
 * so `--set` sets them on the command line.
 * Not for: the models' timing (`simdisk model` and `simdisk qualify` describe
 * the device without faults) or data corruption (a request either succeeds
 * with the right data or fails with EIO).
 *
 * Schedule (dm-flakey): from the moment the faults are enabled (the mount,
 * or the `enable` message when faults_enabled is false) the device works for
 * up_interval_s, then misbehaves for down_interval_s, and so on; a
 * down_interval_s of 0 means for good. Every fault acts only while "down".
 * Random draws (error_reads, error_writes, delay_share) come from one
 * generator seeded with fault_seed, one draw per request that a share
 * between 0 and 1 applies to: the same requests give the same faults.
 */
#ifndef SIMDISK_FAULTS_H
#define SIMDISK_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "flatyaml.h"
#include "json.h"
#include "rng.h"

struct fault_params {
	double error_reads, error_writes;        /* shares of reads and writes failed, 0 to 1 */
	char bad_blocks[FLAT_VALUE_MAX];          /* "N N-M ..." in bad_block_bytes units */
	uint64_t bad_block_bytes;
	uint64_t read_delay, write_delay, flush_delay;   /* ns */
	double delay_share;
	bool stall;
	uint64_t command_timeout;                /* ns */
	double up_interval, down_interval;       /* s */
	bool enabled;
	uint64_t seed;
};

/* Checks across the fault keys (the bad block list, a schedule with nothing to schedule). */
int faults_check(const struct fault_params *p, uint64_t capacity, char *err, size_t errlen);

struct block_range {
	uint64_t lo, hi;                          /* blocks [lo, hi) */
};

enum fault_kind {
	FAULT_NONE, FAULT_READ_ERROR, FAULT_WRITE_ERROR, FAULT_BAD_BLOCK, FAULT_DELAY,
	FAULT_STALL, FAULT_TIMEOUT, FAULT_OFFLINE, NFAULT_KINDS,
};
extern const char *const fault_kind_names[NFAULT_KINDS];   /* "-", "read_error", ... */

struct fault_counters {
	uint64_t read_errors, write_errors, bad_block_errors, remapped_blocks;
	uint64_t delayed, delay_ns, stalled, stall_ns, timeouts, offline_errors;
};

struct faults {
	struct fault_params p;
	bool configured;                          /* any fault key asks for something */
	struct block_range *bad;
	size_t nbad;
	struct rng rng;
	bool enabled;
	uint64_t armed_ns;                        /* when the schedule started */
	bool offline;
	struct fault_counters c;
};

/* What serve_io does with one request. */
struct fault_plan {
	enum fault_kind kind;
	bool error;            /* answer EIO at once, without the model */
	uint64_t start_ns;     /* the model starts no earlier than this (a delay or a stall) */
	uint64_t fail_ns;      /* FAULT_TIMEOUT: answer EIO at this instant; the device goes offline */
};

int faults_init(struct faults *f, const struct fault_params *p, uint64_t now,
		char *err, size_t errlen);
void faults_free(struct faults *f);

/*
 * The fate of a request arriving at `arrival` that the device could start at
 * `start` (>= arrival). Counts what it decides, except the timeout's offline
 * errors to come (faults_timed_out does).
 */
void faults_plan(struct faults *f, enum io_op op, uint64_t offset, uint64_t length,
		 uint64_t arrival, uint64_t start, struct fault_plan *out);

/* A request given up on after command_timeout_ms: the device is offline from now on. */
void faults_timed_out(struct faults *f);

/* A control message (`enable`, `disable`); 0, or -1 if unknown. */
int faults_message(struct faults *f, const char *msg, size_t len, uint64_t now);

/* Writes the fault counters as keys into an open JSON object. */
void faults_stats(const struct faults *f, uint64_t now, struct json *j);

#endif
