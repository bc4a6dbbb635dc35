/*
 * hdd.c - a rotating disk: three-point seek curve, rotational position from
 * the clock, zoned media rate, command overhead, a track buffer with
 * read-ahead, and a write cache that acknowledges from the buffer and writes
 * to the platter in the background.
 *
 * For: the `hdd` model: command overhead, seek, rotation and transfer, with a
 * track buffer, as Ruemmler & Wilkes model a disk (Ruemmler & Wilkes 1994;
 * refs.bib: ruemmler94); the formulas are in diskmath.h.
 * Not for: command queueing or reordering (requests are served one at a
 * time, in order, like NCQ off), head and track switch times, spare sectors.
 *
 * The platter turns at a constant rate from time 0 of CLOCK_MONOTONIC: the
 * head is over angle frac(t / T_rev). Byte p lies at angle frac(track(p)),
 * track(p) being the continuous track index (revolutions needed to read from
 * LBA 0 to p), so reading on from where the last transfer ended never waits
 * for the platter, and any other access waits until its sector comes round.
 *
 * Track buffer: after a read, the drive keeps reading ahead from where it
 * ended, up to readahead_bytes, and keeps up to buffer_bytes of what it read.
 * A read starting inside that window is a buffer hit: the part already read
 * goes at the interface rate, and if the read-ahead is still running the rest
 * streams in without a seek or a rotational wait; if it already stopped, the
 * rest waits for the platter to come round. Any write stops the read-ahead.
 *
 * Write cache (write_cache: true): a write is acknowledged once it is in the
 * buffer (overhead + size / interface rate); the platter write (seek,
 * rotation, transfer) follows in arrival order behind earlier platter work,
 * delaying later reads that need the mechanism (queue time). A write that
 * finds the buffer full of not-yet-written data waits for room. A flush waits
 * for every buffered write. With the cache off a write costs what a read miss
 * costs.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "device.h"
#include "diskmath.h"
#include "profile.h"

#define PENDING_MAX 16384          /* buffered writes awaiting the platter */
#define ROTATION_SLACK_NS 100.0    /* a sector this close counts as on time (rounding) */
#define SEEK_GRID 2048             /* for the expected seek over a span */

struct hdd_params {
	uint64_t capacity;
	double rpm;
	double outer_rate;          /* bytes/s */
	double rho;
	uint64_t track_to_track;    /* ns */
	uint64_t avg_seek;
	uint64_t full_stroke;
	uint64_t overhead;
	uint64_t buffer_bytes;
	uint64_t readahead_bytes;
	bool write_cache;
	double interface_rate;      /* bytes/s */
};

#define P(field) offsetof(struct hdd_params, field)

static const struct profile_key hdd_keys[] = {
	{ .name = "capacity_bytes", .kind = KEY_BYTES, .offset = P(capacity), .min = 1 << 20,
	  .help = "formatted capacity in bytes" },
	{ .name = "rpm", .kind = KEY_NUMBER, .offset = P(rpm), .min_exclusive = true,
	  .help = "spindle speed in revolutions per minute" },
	{ .name = "outer_rate_mb_s", .kind = KEY_RATE, .offset = P(outer_rate), .min_exclusive = true,
	  .help = "media rate at the outer edge (LBA 0) in MB/s" },
	{ .name = "inner_outer_ratio", .kind = KEY_NUMBER, .offset = P(rho), .min_exclusive = true,
	  .max = 1, .help = "inner/outer radius, the ratio of the inner to the outer media rate" },
	{ .name = "track_to_track_ms", .kind = KEY_MS, .offset = P(track_to_track),
	  .help = "seek time to the next cylinder" },
	{ .name = "avg_seek_ms", .kind = KEY_MS, .offset = P(avg_seek),
	  .help = "average seek time (read) of the datasheet" },
	{ .name = "full_stroke_ms", .kind = KEY_MS, .offset = P(full_stroke),
	  .help = "seek time across the whole disk" },
	{ .name = "command_overhead_ms", .kind = KEY_MS, .offset = P(overhead),
	  .help = "controller time per command" },
	{ .name = "buffer_bytes", .kind = KEY_BYTES, .offset = P(buffer_bytes),
	  .help = "track buffer (disk cache) size" },
	{ .name = "readahead_bytes", .kind = KEY_BYTES, .offset = P(readahead_bytes),
	  .help = "how far the drive reads ahead after a read" },
	{ .name = "write_cache", .kind = KEY_BOOL, .offset = P(write_cache),
	  .help = "acknowledge writes from the buffer (true) or after the platter write" },
	{ .name = "interface_rate_mb_s", .kind = KEY_RATE, .offset = P(interface_rate),
	  .min_exclusive = true, .help = "buffer-to-host rate in MB/s (SATA 1.5 Gb/s: 150)" },
	{ 0 },
};

#undef P

struct pending_write {
	double done;                /* ns: when the platter write ends */
	uint64_t bytes;
};

struct hdd {
	struct hdd_params p;
	struct seek_curve seek;     /* seconds */
	struct zoned_disk zones;
	double rev_ns;
	double tracks;
	double head_track;          /* where the head is once the mechanism is free */
	double media_free;          /* ns: the mechanism is busy until then */
	/* read-ahead: the media stream reached stream_pos at stream_time and
	 * goes on reading up to stream_limit; the buffer holds [buf_lo, ...) */
	bool streaming;
	double stream_time;
	uint64_t stream_pos, stream_limit, buf_lo;
	/* write cache */
	struct pending_write pending[PENDING_MAX];
	size_t pending_head, pending_count;
	uint64_t dirty_bytes;
	/* counters */
	uint64_t buffer_hits, buffer_hit_bytes, destages, destage_ns, write_waits;
};

DEVICE_BASE_STATE(struct hdd);

static struct hdd *hdd_of(struct device *d)
{
	return (struct hdd *)d;
}

static void geometry(const struct hdd_params *p, struct seek_curve *seek, struct zoned_disk *z)
{
	seek_curve_fit(seek, p->track_to_track / 1e9, p->avg_seek / 1e9, p->full_stroke / 1e9);
	*z = (struct zoned_disk){
		.capacity = (double)p->capacity, .outer_rate = p->outer_rate, .rho = p->rho,
		.revolution = 60.0 / p->rpm,
	};
}

static int hdd_check(const struct profile *prof, char *err, size_t errlen)
{
	const struct hdd_params *p = PARAMS(prof, struct hdd_params);
	struct seek_curve seek;

	if (seek_curve_fit(&seek, p->track_to_track / 1e9, p->avg_seek / 1e9, p->full_stroke / 1e9)) {
		snprintf(err, errlen, "avg_seek_ms: the seek curve through track_to_track_ms, "
			 "avg_seek_ms and full_stroke_ms must rise with distance (needs "
			 "track-to-track <= average <= full stroke, the average not too close to either)");
		return -1;
	}
	if (p->readahead_bytes > p->buffer_bytes) {
		snprintf(err, errlen, "readahead_bytes: must not exceed buffer_bytes");
		return -1;
	}
	return 0;
}

/* The geometry the parameters imply (the base has copied them in). */
static void hdd_init(struct device *d)
{
	struct hdd *h = hdd_of(d);

	geometry(&h->p, &h->seek, &h->zones);
	h->rev_ns = h->zones.revolution * 1e9;
	h->tracks = zoned_track_count(&h->zones);
}

static double track_of(const struct hdd *h, double offset)
{
	return zoned_track_of(&h->zones, offset);
}

static uint64_t ns(double t)
{
	return t > 0 ? (uint64_t)llround(t) : 0;
}

/* Seek to pos at time t, wait for it to come round, transfer len bytes: the end time. */
static double media_access(struct hdd *h, uint64_t pos, uint64_t len, double t, struct io_cost *c)
{
	double target = track_of(h, (double)pos);
	double distance = fabs(target - h->head_track);
	double seek = !needs_seek(h->head_track, target) ? 0 :
		1e9 * seek_time_for_distance(&h->seek, distance / h->tracks);
	double arrive = t + seek;
	double wait = (target - floor(target)) - fmod(arrive, h->rev_ns) / h->rev_ns;
	double end_track = track_of(h, (double)(pos + len));

	if (wait < 0)
		wait += 1;
	double rotation = wait * h->rev_ns;

	if (rotation > h->rev_ns - ROTATION_SLACK_NS)
		rotation = 0;
	double transfer = (end_track - target) * h->rev_ns;

	h->head_track = end_track;
	c->seek_ns += ns(seek);
	c->rotation_ns += ns(rotation);
	c->transfer_ns += ns(transfer);
	return arrive + rotation + transfer;
}

/* Where the read-ahead stream is at time t (bytes). */
static double stream_pos_at(const struct hdd *h, double t)
{
	if (t <= h->stream_time)
		return (double)h->stream_pos;
	double track = track_of(h, (double)h->stream_pos) + (t - h->stream_time) / h->rev_ns;

	if (track >= track_of(h, (double)h->stream_limit))
		return (double)h->stream_limit;
	return zoned_offset_of_track(&h->zones, track);
}

/* When the stream reaches byte b (b >= stream_pos). */
static double stream_time_of(const struct hdd *h, uint64_t b)
{
	return h->stream_time + (track_of(h, (double)b) - track_of(h, (double)h->stream_pos)) * h->rev_ns;
}

/* The head follows the read-ahead; pin it down at time t. */
static void settle_head(struct hdd *h, double t)
{
	if (h->streaming)
		h->head_track = track_of(h, stream_pos_at(h, t));
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

static void start_stream(struct hdd *h, uint64_t end, double at)
{
	uint64_t limit = end + h->p.readahead_bytes;

	h->streaming = true;
	h->stream_pos = end;
	h->stream_time = at;
	h->stream_limit = limit < h->p.capacity ? limit : h->p.capacity;
	if (h->stream_limit - h->buf_lo > h->p.buffer_bytes)
		h->buf_lo = h->stream_limit > h->p.buffer_bytes ? h->stream_limit - h->p.buffer_bytes : 0;
}

static void hdd_read(struct hdd *h, uint64_t a, uint64_t len, double s, struct io_cost *c)
{
	double t = s + (double)h->p.overhead;
	double iface = (double)len / h->p.interface_rate * 1e9;
	uint64_t end = a + len;
	double done, media_end, pos;

	c->overhead_ns = h->p.overhead;
	if (h->streaming && a >= h->buf_lo && a <= (pos = stream_pos_at(h, t))) {
		h->buffer_hits++;
		h->buffer_hit_bytes += (uint64_t)(end <= pos ? (double)len : pos - (double)a);
		if (end <= pos) {                      /* all of it is in the buffer */
			c->transfer_ns = ns(iface);
			io_cost_close(c);
			return;
		}
		if (pos < (double)h->stream_limit) {   /* read-ahead running: stream on */
			media_end = stream_time_of(h, end);
			h->head_track = track_of(h, (double)end);
			done = max2(t + iface, media_end);
			c->transfer_ns = ns(done - t);
		} else {                               /* stopped: the rest waits for the platter */
			double stop = stream_time_of(h, h->stream_limit);
			double ms = max2(max2(t, stop), h->media_free);

			h->head_track = track_of(h, (double)h->stream_limit);
			c->queue_ns = ns(ms - t);
			media_end = media_access(h, h->stream_limit, end - h->stream_limit, ms, c);
			done = max2(t + iface, media_end);
			c->transfer_ns += ns(done - media_end);
		}
	} else {
		double ms = max2(t, h->media_free);

		settle_head(h, ms);
		c->queue_ns = ns(ms - t);
		media_end = media_access(h, a, len, ms, c);
		h->buf_lo = a;
	}
	h->media_free = media_end;
	start_stream(h, end, media_end);
	io_cost_close(c);
}

static void retire_writes(struct hdd *h, double t)
{
	while (h->pending_count && h->pending[h->pending_head].done <= t) {
		h->dirty_bytes -= h->pending[h->pending_head].bytes;
		h->pending_head = (h->pending_head + 1) % PENDING_MAX;
		h->pending_count--;
	}
}

static void hdd_write(struct hdd *h, uint64_t a, uint64_t len, double s, struct io_cost *c)
{
	double t = s + (double)h->p.overhead;

	c->overhead_ns = h->p.overhead;
	settle_head(h, t);
	h->streaming = false;
	if (!h->p.write_cache) {
		double ms = max2(t, h->media_free);

		c->queue_ns = ns(ms - t);
		h->media_free = media_access(h, a, len, ms, c);
		io_cost_close(c);
		return;
	}
	double ack_start = t;

	retire_writes(h, t);
	while (h->pending_count && (h->dirty_bytes + len > h->p.buffer_bytes ||
				    h->pending_count == PENDING_MAX)) {
		ack_start = max2(ack_start, h->pending[h->pending_head].done);
		retire_writes(h, ack_start);
		h->write_waits++;
	}
	double ack = ack_start + (double)len / h->p.interface_rate * 1e9;
	struct io_cost background = { 0 };
	double destage_start = max2(ack, h->media_free);
	double destage_end = media_access(h, a, len, destage_start, &background);
	size_t tail = (h->pending_head + h->pending_count) % PENDING_MAX;

	h->pending[tail] = (struct pending_write){ .done = destage_end, .bytes = len };
	h->pending_count++;
	h->dirty_bytes += len;
	h->media_free = destage_end;
	h->destages++;
	h->destage_ns += ns(destage_end - destage_start);
	c->queue_ns = ns(ack_start - t);
	c->transfer_ns = ns(ack - ack_start);
	io_cost_close(c);
}

static void hdd_flush(struct hdd *h, double s, struct io_cost *c)
{
	double t = s + (double)h->p.overhead;
	double done = max2(t, h->media_free);

	c->overhead_ns = h->p.overhead;
	c->queue_ns = ns(done - t);
	retire_writes(h, done);
	io_cost_close(c);
}

static void hdd_service(struct device *d, const struct io_request *r, uint64_t start_ns,
			struct io_cost *cost)
{
	struct hdd *h = hdd_of(d);
	uint64_t len = io_length_within(r, h->p.capacity);

	switch (r->op) {
	case IO_READ:
	case IO_PREFETCH:
		hdd_read(h, r->offset, len, (double)start_ns, cost);
		break;
	case IO_WRITE:
		hdd_write(h, r->offset, len, (double)start_ns, cost);
		break;
	case IO_FLUSH:
		hdd_flush(h, (double)start_ns, cost);
		break;
	}
}

static int hdd_expect(const struct profile *prof, const struct workload *w, struct io_cost *mean,
		      char *note, size_t notelen)
{
	const struct hdd_params *p = PARAMS(prof, struct hdd_params);
	struct seek_curve seek;
	struct zoned_disk z;
	double f0 = (double)w->offset / (double)p->capacity;
	double f1 = (double)(w->offset + w->span) / (double)p->capacity;
	double rev = 60e9 / p->rpm;

	geometry(p, &seek, &z);
	double random_transfer = 1e9 * zoned_mean_transfer_time(&z, (double)w->bs, f0, f1);
	double random_seek = 1e9 * zoned_mean_seek_time(&seek, &z, f0, f1, SEEK_GRID);
	double stream = (double)w->bs / zoned_rate_at(&z, f0) * 1e9;

	*mean = (struct io_cost){ 0 };
	switch (w->rw) {
	case WL_RANDREAD:
		mean->overhead_ns = p->overhead;
		mean->seek_ns = ns(random_seek);
		mean->rotation_ns = ns(rev / 2);
		mean->transfer_ns = ns(random_transfer);
		snprintf(note, notelen, "uniform random offsets in the span; track-buffer hits "
			 "(about bs/span of requests) neglected");
		break;
	case WL_READ:
		mean->transfer_ns = ns(stream);
		snprintf(note, notelen, "steady state of back-to-back reads: the read-ahead streams "
			 "at the media rate at the offset, hiding the command overhead");
		break;
	case WL_RANDWRITE:
		if (p->write_cache) {
			mean->seek_ns = ns(random_seek);
			mean->rotation_ns = ns(rev / 2);
			mean->transfer_ns = ns(random_transfer);
			snprintf(note, notelen, "steady state with the write buffer full: each write "
				 "waits for one platter write; the first buffer_bytes/bs writes are "
				 "acknowledged in overhead + bs/interface rate");
		} else {
			mean->overhead_ns = p->overhead;
			mean->seek_ns = ns(random_seek);
			mean->rotation_ns = ns(rev / 2);
			mean->transfer_ns = ns(random_transfer);
			snprintf(note, notelen, "write cache off: a platter write per request");
		}
		break;
	case WL_WRITE:
		if (p->write_cache) {
			mean->transfer_ns = ns(stream);
			snprintf(note, notelen, "steady state with the write buffer full: back-to-back "
				 "platter writes at the media rate");
		} else {
			double overhead = (double)p->overhead;

			mean->overhead_ns = p->overhead;
			mean->rotation_ns = ns(rev - fmod(overhead, rev));
			mean->transfer_ns = ns(stream);
			snprintf(note, notelen, "write cache off: each write finds its sector just "
				 "passed (by the command overhead) and waits almost a revolution; "
				 "host think time neglected");
		}
		break;
	}
	io_cost_close(mean);
	return 0;
}

static void hdd_stats(const struct device *d, struct json *j)
{
	const struct hdd *h = (const struct hdd *)d;

	json_kv_uint(j, "buffer_hits", h->buffer_hits);
	json_kv_uint(j, "buffer_hit_bytes", h->buffer_hit_bytes);
	json_kv_uint(j, "destages", h->destages);
	json_kv_uint(j, "destage_ns", h->destage_ns);
	json_kv_uint(j, "write_buffer_waits", h->write_waits);
	json_kv_uint(j, "dirty_bytes", h->dirty_bytes);
	json_kv_double(j, "head_track", h->head_track);
	json_kv_double(j, "tracks", h->tracks);
}

const struct device_model hdd_model = {
	.name = "hdd",
	.summary = "rotating disk: seek curve, rotation, zoned rate, track buffer, write cache",
	.keys = hdd_keys,
	.params_size = sizeof(struct hdd_params),
	DEVICE_BASE_OPS(struct hdd),
	.check = hdd_check,
	.init = hdd_init,
	.service = hdd_service,
	.expect = hdd_expect,
	.stats = hdd_stats,
};
