/*
 * zero.c - a device that takes no time at all.
 *
 * For: measuring the emulator's own overhead (FUSE, the backing file, the
 * daemon's loop) against the backing file read directly.
 * Not for: anything that should look like real hardware.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "profile.h"

struct zero_params {
	uint64_t capacity;
};

static const struct profile_key zero_keys[] = {
	{ .name = "capacity_bytes", .kind = KEY_BYTES, .offset = offsetof(struct zero_params, capacity),
	  .min = 1 << 20, .help = "capacity in bytes" },
	{ 0 },
};

struct zero {
	uint64_t capacity;
};

static uint64_t zero_capacity(const struct profile *prof)
{
	return PARAMS(prof, struct zero_params)->capacity;
}

static struct device *zero_create(const struct profile *prof, const struct device_env *env,
				  char *err, size_t errlen)
{
	struct zero *z = calloc(1, sizeof(*z));

	(void)env;
	if (!z) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	z->capacity = zero_capacity(prof);
	return (struct device *)z;
}

static void zero_destroy(struct device *d)
{
	free(d);
}

static void zero_service(struct device *d, const struct io_request *r, uint64_t start_ns,
			 struct io_cost *cost)
{
	(void)d;
	(void)r;
	(void)start_ns;
	io_cost_close(cost);
}

static int zero_expect(const struct profile *prof, const struct workload *w, struct io_cost *mean,
		       char *note, size_t notelen)
{
	(void)prof;
	(void)w;
	*mean = (struct io_cost){ 0 };
	snprintf(note, notelen, "no device time: what remains is the emulator's overhead");
	return 0;
}

const struct device_model zero_model = {
	.name = "zero",
	.summary = "no latency at all (for measuring the emulator's overhead)",
	.keys = zero_keys,
	.params_size = sizeof(struct zero_params),
	.capacity = zero_capacity,
	.create = zero_create,
	.destroy = zero_destroy,
	.service = zero_service,
	.expect = zero_expect,
};
