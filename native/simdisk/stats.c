/*
 * stats.c - the daemon's counters: per operation, times (queue, seek, rotation,
 * transfer, ... as the model gave them, and measured), cache hits, timing
 * error, injected faults; MOUNTPOINT/stats (a JSON snapshot) and the --trace CSV, one line
 * per IO.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon_int.h"
#include "json.h"
#include "timing.h"

const char *const op_names[NOPS] = { "read", "write", "flush", "prefetch" };
const char *const late_cause_names[NLATE] = { "-", "backing", "wakeup" };

static const char *hit_word(const struct io_cost *c, uint64_t len)
{
	if (!c->cache_lookup)
		return "-";
	return c->hit_bytes == 0 ? "miss" : c->hit_bytes >= len ? "hit" : "partial";
}

static void trace_line(struct daemon *d, const struct io_request *r, const struct io_times *tm,
		       const struct io_cost *c)
{
	if (!d->trace)
		return;
	fprintf(d->trace, "%llu,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s,%llu,"
		"%llu,%s,%llu,%s\n",
		(unsigned long long)(tm->arrival - d->t0), op_names[r->op],
		(unsigned long long)r->offset, (unsigned long long)r->length,
		(unsigned long long)(tm->start - tm->arrival), (unsigned long long)c->queue_ns,
		(unsigned long long)c->overhead_ns, (unsigned long long)c->seek_ns,
		(unsigned long long)c->rotation_ns, (unsigned long long)c->transfer_ns,
		(unsigned long long)c->gc_ns, (unsigned long long)c->total_ns,
		(unsigned long long)(tm->done - tm->start), (unsigned long long)c->hit_bytes,
		hit_word(c, r->length), (unsigned long long)tm->backing_ns,
		(unsigned long long)tm->start_late_ns, late_cause_names[tm->cause],
		(unsigned long long)c->fault_ns, fault_kind_names[tm->fault]);
}

void account(struct daemon *d, const struct io_request *r, const struct io_times *tm,
	     const struct io_cost *c)
{
	struct op_totals *t = &d->ops[r->op];
	uint64_t arrival = tm->arrival, start = tm->start, measured = tm->done - tm->start;

	t->ios++;
	t->bytes += r->length;
	t->seeks += c->seek_ns > 0;
	t->queue += start - arrival;
	t->device_wait += c->queue_ns;
	t->overhead += c->overhead_ns;
	t->seek += c->seek_ns;
	t->rotation += c->rotation_ns;
	t->transfer += c->transfer_ns;
	t->gc += c->gc_ns;
	t->fault += c->fault_ns;
	t->service += c->total_ns;
	t->measured += measured;
	if (r->op != IO_PREFETCH) {
		hist_record(&d->timing_error, measured > c->total_ns ? measured - c->total_ns :
			    c->total_ns - measured);
		d->late_ios += measured > c->total_ns;
		hist_record(&d->start_late, tm->start_late_ns);
		d->late_starts[tm->cause]++;
	}
	if (c->cache_lookup && r->op == IO_READ) {
		if (c->hit_bytes == 0)
			d->cache_misses++;
		else if (c->hit_bytes >= r->length)
			d->cache_hits++;
		else
			d->cache_partial_hits++;
		d->cache_hit_bytes += c->hit_bytes;
	}
	trace_line(d, r, tm, c);
}

void account_failed(struct daemon *d, const struct io_request *r, const struct io_times *tm)
{
	trace_line(d, r, tm, &(struct io_cost){ 0 });
}

const char trace_header[] =
	"t_ns,op,offset,size,queue_ns,device_wait_ns,overhead_ns,seek_ns,rotation_ns,"
	"transfer_ns,gc_ns,service_ns,measured_ns,hit_bytes,hit,backing_ns,start_late_ns,late_cause,"
	"fault_ns,fault\n";

static void write_times(struct json *j, const struct op_totals *t)
{
	json_kv_uint(j, "queue", t->queue);
	json_kv_uint(j, "device_wait", t->device_wait);
	json_kv_uint(j, "overhead", t->overhead);
	json_kv_uint(j, "seek", t->seek);
	json_kv_uint(j, "rotation", t->rotation);
	json_kv_uint(j, "transfer", t->transfer);
	json_kv_uint(j, "gc", t->gc);
	json_kv_uint(j, "fault", t->fault);
	json_kv_uint(j, "service", t->service);
	json_kv_uint(j, "measured", t->measured);
}

/* The stats document, in a malloc'd string. */
char *stats_json(struct daemon *d, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	struct op_totals host = { 0 };
	struct json j;

	if (!f)
		return NULL;
	for (int op = IO_READ; op <= IO_FLUSH; op++) {
		const struct op_totals *t = &d->ops[op];

		host.queue += t->queue;
		host.device_wait += t->device_wait;
		host.overhead += t->overhead;
		host.seek += t->seek;
		host.rotation += t->rotation;
		host.transfer += t->transfer;
		host.gc += t->gc;
		host.fault += t->fault;
		host.service += t->service;
		host.measured += t->measured;
	}
	json_init(&j, f, true);
	json_object_begin(&j);
	json_kv_string(&j, "profile", d->profile->name);
	json_kv_string(&j, "model", d->model->name);
	json_kv_uint(&j, "size", d->size);
	json_kv_string(&j, "backing", d->backing_path);
	json_kv_string(&j, "backing_io", d->direct ? "direct" : "buffered");
	json_kv_uint(&j, "uptime_ns", monotonic_ns() - d->t0);
	json_kv_uint(&j, "reads", d->ops[IO_READ].ios);
	json_kv_uint(&j, "writes", d->ops[IO_WRITE].ios);
	json_kv_uint(&j, "flushes", d->ops[IO_FLUSH].ios);
	json_kv_uint(&j, "read_bytes", d->ops[IO_READ].bytes);
	json_kv_uint(&j, "write_bytes", d->ops[IO_WRITE].bytes);
	json_kv_uint(&j, "read_seeks", d->ops[IO_READ].seeks);
	json_kv_uint(&j, "write_seeks", d->ops[IO_WRITE].seeks);
	json_kv_uint(&j, "cache_hits", d->cache_hits);
	json_kv_uint(&j, "cache_partial_hits", d->cache_partial_hits);
	json_kv_uint(&j, "cache_misses", d->cache_misses);
	json_kv_uint(&j, "cache_hit_bytes", d->cache_hit_bytes);
	json_kv_object_begin(&j, "time_ns");
	write_times(&j, &host);
	json_object_end(&j);
	json_kv_object_begin(&j, "by_op");
	for (int op = 0; op < NOPS; op++) {
		json_kv_object_begin(&j, op_names[op]);
		json_kv_uint(&j, "ios", d->ops[op].ios);
		json_kv_uint(&j, "bytes", d->ops[op].bytes);
		json_kv_uint(&j, "seeks", d->ops[op].seeks);
		json_kv_object_begin(&j, "time_ns");
		write_times(&j, &d->ops[op]);
		json_object_end(&j);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_kv_object_begin(&j, "timing");
	json_kv_uint(&j, "ios", d->timing_error.count);
	json_kv_uint(&j, "late_ios", d->late_ios);
	json_kv_object_begin(&j, "error_ns");
	json_kv_double(&j, "mean", hist_mean(&d->timing_error));
	json_kv_uint(&j, "p50", hist_percentile(&d->timing_error, 50));
	json_kv_uint(&j, "p99", hist_percentile(&d->timing_error, 99));
	json_kv_uint(&j, "max", d->timing_error.max);
	json_object_end(&j);
	json_kv_object_begin(&j, "start_late_ns");
	json_kv_uint(&j, "p50", hist_percentile(&d->start_late, 50));
	json_kv_uint(&j, "p99", hist_percentile(&d->start_late, 99));
	json_kv_uint(&j, "max", d->start_late.max);
	json_object_end(&j);
	json_kv_object_begin(&j, "late_starts");
	for (int cause = LATE_BACKING; cause < NLATE; cause++)
		json_kv_uint(&j, late_cause_names[cause], d->late_starts[cause]);
	json_object_end(&j);
	json_object_end(&j);
	json_kv_object_begin(&j, "setup");
	json_key(&j, "on");
	json_bool(&j, d->setup);
	json_kv_uint(&j, "ios", d->setup_ios);
	json_kv_uint(&j, "bytes", d->setup_bytes);
	json_kv_uint(&j, "skipped_ns", d->clock_offset);
	json_object_end(&j);
	json_kv_object_begin(&j, "faults");
	faults_stats(&d->faults, monotonic_ns(), &j);
	json_object_end(&j);
	json_kv_object_begin(&j, "device");
	if (d->model->stats)
		d->model->stats(d->dev, &j);
	json_object_end(&j);
	json_object_end(&j);
	if (json_finish(&j) || fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
