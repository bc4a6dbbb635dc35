/*
 * device.h - the interface every simdisk device model implements.
 *
 * For: one file per model (hdd.c, flash.c, ssd.c, tiered.c, zero.c), each exporting
 * one `struct device_model`: its profile keys, a constructor, and `service`,
 * which says how long one request takes and advances the model's state
 * (head position, buffers, open erase blocks, cache contents). A new device
 * is one new file plus one line in profile.c's model list.
 * Not for: FUSE, sleeping, the backing file or counters (the daemon does those)
 * and profile parsing (profile.c).
 *
 * Time: every model works in CLOCK_MONOTONIC nanoseconds. `service` gets the
 * instant the device starts on the request and fills an io_cost whose parts
 * add up to total_ns: the request completes at start + total_ns.
 */
#ifndef SIMDISK_DEVICE_H
#define SIMDISK_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct profile;
struct profile_key;

enum io_op { IO_READ, IO_WRITE, IO_FLUSH, IO_PREFETCH };

struct io_request {
	enum io_op op;
	uint64_t offset;
	uint64_t length;
	const void *data;        /* IO_WRITE: the bytes written (models may look, e.g. lz4) */
};

/* Where the time of one request went; the parts add up to total_ns. */
struct io_cost {
	uint64_t queue_ns;       /* waiting inside the device for earlier work */
	uint64_t overhead_ns;    /* command overhead; flash access latency */
	uint64_t seek_ns;
	uint64_t rotation_ns;
	uint64_t transfer_ns;    /* media or interface transfer */
	uint64_t gc_ns;          /* flash: erase-block merges (copies) and erases */
	uint64_t fault_ns;       /* injected by the daemon (faults.h): a delay or a stall */
	uint64_t total_ns;
	uint64_t hit_bytes;      /* bytes served from a cache tier */
	bool cache_lookup;       /* a cache tier was consulted (hit/miss applies) */
};

/* Adds b's parts into a (total included). */
void io_cost_add(struct io_cost *a, const struct io_cost *b);
/* Sets total_ns to the sum of the parts. */
void io_cost_close(struct io_cost *c);
/* Nanoseconds to move bytes at rate (bytes/s), rounded. */
uint64_t rate_time_ns(uint64_t bytes, double rate);

/* What the device may ask of its surroundings. */
struct device_env {
	/* Reads len bytes of the disk's current contents at offset (for lz4). */
	int (*read_data)(void *ctx, uint64_t offset, void *buf, size_t len);
	/* The backing file's device, inode, size and mtime (ns): 0, or -1 with errno. */
	int (*identity)(void *ctx, uint64_t out[4]);
	/* The device's clock (ns, the CLOCK_MONOTONIC of the times service gets); NULL: CLOCK_MONOTONIC. */
	uint64_t (*now)(void *ctx);
	void *ctx;
};

/* A steady workload for analytic predictions (`simdisk model`). */
enum workload_rw { WL_READ, WL_WRITE, WL_RANDREAD, WL_RANDWRITE };

struct workload {
	enum workload_rw rw;
	uint64_t bs;
	uint64_t offset;
	uint64_t span;
	double hit_ratio;        /* cache tiers: share of requests served by the cache */
};

struct device;   /* each model's own state */

struct device_model {
	const char *name;                  /* the profile's `model:` value */
	const char *summary;
	const struct profile_key *keys;    /* this model's profile keys */
	size_t params_size;                /* the struct the keys fill */
	/* Models on the shared base (device_base_*): the size of their state struct, which
	 * begins with a copy of the parameter struct. */
	size_t state_size;
	/* Checks across keys; on failure names the key in err. Optional. */
	int (*check)(const struct profile *p, char *err, size_t errlen);
	uint64_t (*capacity)(const struct profile *p);
	struct device *(*create)(const struct profile *p, const struct device_env *env,
				 char *err, size_t errlen);
	void (*destroy)(struct device *d);
	/* Optional, models on the shared base: completes a new state whose parameters are
	 * already copied in (derived figures such as a disk's geometry). */
	void (*init)(struct device *d);
	/* Serves r starting at start_ns; fills cost and advances the state. */
	void (*service)(struct device *d, const struct io_request *r, uint64_t start_ns,
			struct io_cost *cost);
	/* Expected mean cost per request of a steady workload; note says what is assumed. */
	int (*expect)(const struct profile *p, const struct workload *w, struct io_cost *mean,
		      char *note, size_t notelen);
	/* Optional: background work when idle. Returns 0 if there is none (or it
	 * is not yet time), else the instant the device is busy until; r and cost
	 * describe the work done. idle_delay is how long the device must have
	 * been idle before it starts. */
	uint64_t (*idle)(struct device *d, uint64_t now_ns, struct io_request *r,
			 struct io_cost *cost);
	uint64_t (*idle_delay_ns)(const struct device *d);
	/* Optional: model-specific counters, written as keys into an open object. */
	void (*stats)(const struct device *d, struct json *j);
	/* Optional: persistent state (the cache tier's contents). check_state checks a
	 * state file's form before anything is set up: 0 (also when there is no file), or
	 * -1 with one line naming the file in err. */
	int (*check_state)(const struct profile *p, const char *path, char *err, size_t errlen);
	int (*load_state)(struct device *d, const char *path, char *err, size_t errlen);
	int (*save_state)(const struct device *d, const char *path, char *err, size_t errlen);
};

/*
 * The shared base of the models whose state is their parameters plus what they track
 * (hdd, flash, ssd, zero), to be set as such a model's capacity, create and destroy:
 * the capacity is the profile's capacity_bytes key; create allocates state_size zeroed
 * bytes, copies the parameters to their start and calls init; destroy frees the state.
 */
uint64_t device_base_capacity(const struct profile *p);
struct device *device_base_create(const struct profile *p, const struct device_env *env,
				  char *err, size_t errlen);
void device_base_destroy(struct device *d);

/* Checks at compile time that a base model's state struct begins with its parameters,
 * as its member p: `DEVICE_BASE_STATE(struct hdd);`. */
#define DEVICE_BASE_STATE(type) \
	_Static_assert(offsetof(type, p) == 0, #type ": the base copies the parameters to its start")
/* A base model's state size, capacity, create and destroy, inside its struct device_model:
 * `DEVICE_BASE_OPS(struct hdd),`. */
#define DEVICE_BASE_OPS(type) \
	.state_size = sizeof(type), .capacity = device_base_capacity, \
	.create = device_base_create, .destroy = device_base_destroy

/* How much of r's length lies below capacity (0 when r starts at or beyond it). */
uint64_t io_length_within(const struct io_request *r, uint64_t capacity);

extern const struct device_model hdd_model;
extern const struct device_model flash_model;
extern const struct device_model ssd_model;
extern const struct device_model tiered_model;
extern const struct device_model zero_model;

#endif
