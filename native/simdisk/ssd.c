/*
 * ssd.c - a SATA solid-state drive with a page-mapped FTL: every read costs
 * the read latency plus size / read rate, every write the write latency plus
 * size / write rate, wherever they fall.
 *
 * For: the `ssd` model, the first SATA SSDs (Intel X25-M, 2008) whose
 * datasheets give sequential rates and access latencies. Unlike a USB stick
 * (flash.c), such a drive maps pages, not erase blocks, so a small random
 * write costs no merge.
 * Not for: garbage collection of a full drive (the figures are a fresh
 * drive's), native command queueing (requests are served one at a time, so
 * the datasheets' random IOPS at queue depth 32 are out of reach), or a write
 * cache.
 */
#include <stddef.h>
#include <stdio.h>

#include "device.h"
#include "profile.h"

struct ssd_params {
	uint64_t capacity;
	uint64_t read_latency;      /* ns */
	double read_rate;           /* bytes/s */
	uint64_t write_latency;     /* ns */
	double write_rate;
};

#define P(field) offsetof(struct ssd_params, field)

static const struct profile_key ssd_keys[] = {
	{ .name = "capacity_bytes", .kind = KEY_BYTES, .offset = P(capacity), .min = 1 << 20,
	  .help = "capacity in bytes" },
	{ .name = "read_latency_ms", .kind = KEY_MS, .offset = P(read_latency),
	  .help = "time to the first byte of a read" },
	{ .name = "read_rate_mb_s", .kind = KEY_RATE, .offset = P(read_rate), .min_exclusive = true,
	  .help = "sequential read rate in MB/s" },
	{ .name = "write_latency_ms", .kind = KEY_MS, .offset = P(write_latency),
	  .help = "time to accept a write" },
	{ .name = "write_rate_mb_s", .kind = KEY_RATE, .offset = P(write_rate), .min_exclusive = true,
	  .help = "sequential write rate in MB/s" },
	{ 0 },
};

#undef P

struct ssd {
	struct ssd_params p;
};

DEVICE_BASE_STATE(struct ssd);

/* Latency and transfer of one request of len bytes (flush: nothing). */
static void cost_of(const struct ssd_params *p, enum io_op op, uint64_t len, struct io_cost *c)
{
	if (op == IO_READ || op == IO_PREFETCH) {
		c->overhead_ns = p->read_latency;
		c->transfer_ns = rate_time_ns(len, p->read_rate);
	} else if (op == IO_WRITE) {
		c->overhead_ns = p->write_latency;
		c->transfer_ns = rate_time_ns(len, p->write_rate);
	}
	io_cost_close(c);
}

static void ssd_service(struct device *d, const struct io_request *r, uint64_t start_ns,
			struct io_cost *c)
{
	const struct ssd *s = (const struct ssd *)d;

	(void)start_ns;
	cost_of(&s->p, r->op, io_length_within(r, s->p.capacity), c);
}

static int ssd_expect(const struct profile *prof, const struct workload *w, struct io_cost *mean,
		      char *note, size_t notelen)
{
	bool reads = w->rw == WL_READ || w->rw == WL_RANDREAD;

	*mean = (struct io_cost){ 0 };
	cost_of(PARAMS(prof, struct ssd_params), reads ? IO_READ : IO_WRITE, w->bs, mean);
	snprintf(note, notelen, "page-mapped FTL of a fresh drive: latency + size / rate, sequential "
		 "or random alike; no garbage collection, no queueing");
	return 0;
}

const struct device_model ssd_model = {
	.name = "ssd",
	.summary = "SATA SSD, page-mapped FTL: latency + size / rate for reads and writes alike",
	.keys = ssd_keys,
	.params_size = sizeof(struct ssd_params),
	DEVICE_BASE_OPS(struct ssd),
	.service = ssd_service,
	.expect = ssd_expect,
};
