/*
 * zero.c - a device that takes no time at all.
 *
 * For: measuring the emulator's own overhead (FUSE, the backing file, the
 * daemon's loop) against the backing file read directly.
 * Not for: anything that should look like real hardware.
 */
#include <stddef.h>
#include <stdio.h>

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
	struct zero_params p;
};

DEVICE_BASE_STATE(struct zero);

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
	DEVICE_BASE_OPS(struct zero),
	.service = zero_service,
	.expect = zero_expect,
};
