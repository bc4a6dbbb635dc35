/*
 * flash.c - a USB flash stick: reads cost a fixed latency plus size / read
 * rate; writes go through a block-mapped FTL with a few open allocation
 * units, so small random writes pay for erase-block merges.
 *
 * For: the `flash` model, the FTL of cheap sticks as flashbench's README and
 * Bergmann's LWN article 428584 describe it (refs.bib: flashbench, lwn428584).
 * Not for: page-mapped FTLs (SSDs), wear levelling, read disturb, or the
 * stick's own write caching (there is none on such sticks).
 *
 * FTL: the disk is cut into allocation units of erase_block_bytes. Up to
 * open_units units are open for writing, each filled from its start in
 * order. A write that continues an open unit at or after its write pointer
 * costs write_latency + size / write rate, plus copying any skipped gap from
 * the old block. A write to a unit that is not open first takes a freshly
 * erased block (erase_ms) and copies the old data in front of the write;
 * when all units are open, the least recently used one is closed by copying
 * its unwritten rest. Rewriting inside an open unit (below its pointer)
 * closes and reopens it. Copies run at copy_rate_mb_s inside the stick.
 * Sequential writes therefore cost one erase per unit and nothing else;
 * random writes cost about one unit of copying each.
 */
#include <stddef.h>
#include <string.h>

#include "device.h"
#include "profile.h"

#define MAX_OPEN_UNITS 64

struct flash_params {
	uint64_t capacity;
	uint64_t read_latency;      /* ns */
	double read_rate;           /* bytes/s */
	uint64_t write_latency;     /* ns */
	double write_rate;
	uint64_t erase_block;
	uint64_t open_units;
	double copy_rate;
	uint64_t erase;             /* ns */
};

#define P(field) offsetof(struct flash_params, field)

static const struct profile_key flash_keys[] = {
	{ .name = "capacity_bytes", .kind = KEY_BYTES, .offset = P(capacity), .min = 1 << 20,
	  .help = "capacity in bytes" },
	{ .name = "read_latency_ms", .kind = KEY_MS, .offset = P(read_latency),
	  .help = "fixed time per read command" },
	{ .name = "read_rate_mb_s", .kind = KEY_RATE, .offset = P(read_rate), .min_exclusive = true,
	  .help = "sequential read rate in MB/s" },
	{ .name = "write_latency_ms", .kind = KEY_MS, .offset = P(write_latency),
	  .help = "fixed time per write command" },
	{ .name = "write_rate_mb_s", .kind = KEY_RATE, .offset = P(write_rate), .min_exclusive = true,
	  .help = "sequential write rate in MB/s" },
	{ .name = "erase_block_bytes", .kind = KEY_BYTES, .offset = P(erase_block), .min = 4096,
	  .help = "allocation unit (erase block) size" },
	{ .name = "open_units", .kind = KEY_COUNT, .offset = P(open_units), .min = 1,
	  .max = MAX_OPEN_UNITS, .help = "allocation units open for writing at once" },
	{ .name = "copy_rate_mb_s", .kind = KEY_RATE, .offset = P(copy_rate), .min_exclusive = true,
	  .help = "internal copy rate of a merge in MB/s" },
	{ .name = "erase_ms", .kind = KEY_MS, .offset = P(erase),
	  .help = "time to erase one block" },
	{ 0 },
};

#undef P

struct open_unit {
	uint64_t unit;
	uint64_t written;           /* bytes from the unit's start already in the new block */
	uint64_t last_use;
};

struct flash {
	struct flash_params p;
	struct open_unit open[MAX_OPEN_UNITS];
	size_t nopen;
	uint64_t use_clock;
	uint64_t merges, copied_bytes, erases;
};

DEVICE_BASE_STATE(struct flash);

static struct flash *flash_of(struct device *d)
{
	return (struct flash *)d;
}

static int flash_check(const struct profile *prof, char *err, size_t errlen)
{
	const struct flash_params *p = PARAMS(prof, struct flash_params);

	if (p->erase_block % 512) {
		snprintf(err, errlen, "erase_block_bytes: must be a multiple of 512");
		return -1;
	}
	if (p->erase_block > p->capacity) {
		snprintf(err, errlen, "erase_block_bytes: larger than capacity_bytes");
		return -1;
	}
	return 0;
}

static uint64_t copy_time(struct flash *f, uint64_t bytes)
{
	f->copied_bytes += bytes;
	return rate_time_ns(bytes, f->p.copy_rate);
}

/* Closing copies the unit's unwritten rest from the old block. */
static uint64_t close_unit(struct flash *f, struct open_unit *u)
{
	if (u->written < f->p.erase_block)
		f->merges++;
	return copy_time(f, f->p.erase_block - u->written);
}

/* A freshly erased block for unit, with the old data before `offset` copied in. */
static uint64_t open_unit(struct flash *f, struct open_unit *u, uint64_t unit, uint64_t offset)
{
	f->erases++;
	u->unit = unit;
	u->written = offset;
	return f->p.erase + copy_time(f, offset);
}

/* FTL housekeeping for writing [offset, offset+len) inside one unit. */
static uint64_t write_in_unit(struct flash *f, uint64_t unit, uint64_t offset, uint64_t len)
{
	struct open_unit *u = NULL;
	uint64_t gc = 0;

	for (size_t i = 0; i < f->nopen; i++)
		if (f->open[i].unit == unit)
			u = &f->open[i];
	if (u && offset >= u->written) {
		gc = copy_time(f, offset - u->written);
	} else if (u) {
		gc = close_unit(f, u) + open_unit(f, u, unit, offset);
	} else {
		if (f->nopen < f->p.open_units) {
			u = &f->open[f->nopen++];
		} else {
			u = &f->open[0];
			for (size_t i = 1; i < f->nopen; i++)
				if (f->open[i].last_use < u->last_use)
					u = &f->open[i];
			gc = close_unit(f, u);
		}
		gc += open_unit(f, u, unit, offset);
	}
	u->written = offset + len;
	u->last_use = ++f->use_clock;
	return gc;
}

static void flash_service(struct device *d, const struct io_request *r, uint64_t start_ns,
			  struct io_cost *c)
{
	struct flash *f = flash_of(d);
	uint64_t len = io_length_within(r, f->p.capacity), e = f->p.erase_block;

	(void)start_ns;
	switch (r->op) {
	case IO_READ:
	case IO_PREFETCH:
		c->overhead_ns = f->p.read_latency;
		c->transfer_ns = rate_time_ns(len, f->p.read_rate);
		break;
	case IO_WRITE:
		c->overhead_ns = f->p.write_latency;
		c->transfer_ns = rate_time_ns(len, f->p.write_rate);
		for (uint64_t at = r->offset; at < r->offset + len;) {
			uint64_t unit = at / e, in = at % e;
			uint64_t piece = e - in < r->offset + len - at ? e - in : r->offset + len - at;

			c->gc_ns += write_in_unit(f, unit, in, piece);
			at += piece;
		}
		break;
	case IO_FLUSH:
		break;
	}
	io_cost_close(c);
}

static int flash_expect(const struct profile *prof, const struct workload *w, struct io_cost *mean,
			char *note, size_t notelen)
{
	const struct flash_params *p = PARAMS(prof, struct flash_params);
	uint64_t e = p->erase_block, bs = w->bs < e ? w->bs : e;

	*mean = (struct io_cost){ 0 };
	switch (w->rw) {
	case WL_READ:
	case WL_RANDREAD:
		mean->overhead_ns = p->read_latency;
		mean->transfer_ns = rate_time_ns(w->bs, p->read_rate);
		snprintf(note, notelen, "reads: latency + size / read rate, wherever they are");
		break;
	case WL_WRITE:
		mean->overhead_ns = p->write_latency;
		mean->transfer_ns = rate_time_ns(w->bs, p->write_rate);
		mean->gc_ns = (uint64_t)((double)p->erase * (double)w->bs / (double)e + 0.5);
		snprintf(note, notelen, "sequential writes fill open units in order: one erase per "
			 "erase block, no copying");
		break;
	case WL_RANDWRITE:
		mean->overhead_ns = p->write_latency;
		mean->transfer_ns = rate_time_ns(w->bs, p->write_rate);
		/* open a unit (erase, copy (E - bs)/2 before the write on average) and
		 * close the least recently used one (copy its rest, (E - bs)/2 on average) */
		mean->gc_ns = p->erase + rate_time_ns(e - bs, p->copy_rate);
		snprintf(note, notelen, "random writes over a span much larger than open_units erase "
			 "blocks: each opens a unit and closes another, copying about one erase "
			 "block less the write");
		break;
	}
	io_cost_close(mean);
	return 0;
}

static void flash_stats(const struct device *d, struct json *j)
{
	const struct flash *f = (const struct flash *)d;

	json_kv_uint(j, "merges", f->merges);
	json_kv_uint(j, "copied_bytes", f->copied_bytes);
	json_kv_uint(j, "erases", f->erases);
	json_kv_uint(j, "open_units", f->nopen);
}

const struct device_model flash_model = {
	.name = "flash",
	.summary = "USB flash stick: read latency + rate, block-mapped FTL with open units",
	.keys = flash_keys,
	.params_size = sizeof(struct flash_params),
	DEVICE_BASE_OPS(struct flash),
	.check = flash_check,
	.service = flash_service,
	.expect = flash_expect,
	.stats = flash_stats,
};
