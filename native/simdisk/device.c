/*
 * device.c - small helpers shared by the device models (see device.h).
 */
#include "device.h"

void io_cost_add(struct io_cost *a, const struct io_cost *b)
{
	a->queue_ns += b->queue_ns;
	a->overhead_ns += b->overhead_ns;
	a->seek_ns += b->seek_ns;
	a->rotation_ns += b->rotation_ns;
	a->transfer_ns += b->transfer_ns;
	a->gc_ns += b->gc_ns;
	a->fault_ns += b->fault_ns;
	a->total_ns += b->total_ns;
	a->hit_bytes += b->hit_bytes;
	a->cache_lookup = a->cache_lookup || b->cache_lookup;
}

void io_cost_close(struct io_cost *c)
{
	c->total_ns = c->queue_ns + c->overhead_ns + c->seek_ns + c->rotation_ns + c->transfer_ns +
		      c->gc_ns + c->fault_ns;
}

uint64_t rate_time_ns(uint64_t bytes, double rate)
{
	return (uint64_t)((double)bytes / rate * 1e9 + 0.5);
}
