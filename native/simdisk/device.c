/*
 * device.c - what the device models share (see device.h): the cost arithmetic, and the
 * base that creates, destroys and sizes the models whose state begins with their
 * parameters.
 */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

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

uint64_t io_length_within(const struct io_request *r, uint64_t capacity)
{
	if (r->offset >= capacity)
		return 0;
	return r->length < capacity - r->offset ? r->length : capacity - r->offset;
}

uint64_t device_base_capacity(const struct profile *p)
{
	for (const struct profile_key *k = p->model->keys; k->name; k++)
		if (!strcmp(k->name, "capacity_bytes"))
			return *(const uint64_t *)((const char *)p->params + k->offset);
	/* Only models with a capacity_bytes key use the base (device.h); reaching here is a
	 * model wired wrongly, not bad input. */
	fprintf(stderr, "simdisk: model %s has no capacity_bytes key\n", p->model->name);
	abort();
}

struct device *device_base_create(const struct profile *p, const struct device_env *env,
				  char *err, size_t errlen)
{
	const struct device_model *m = p->model;
	struct device *d = calloc(1, m->state_size);

	(void)env;
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(d, p->params, m->params_size);
	if (m->init)
		m->init(d);
	return d;
}

void device_base_destroy(struct device *d)
{
	free(d);
}
