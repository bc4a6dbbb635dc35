/*
 * report.c - cacheflood's output: one JSON document, or a few lines for people.
 *
 * For: turning a flood_result into text. Every number is printed raw in the
 * JSON (bytes, ns, pages); rates are MB/s = 1e6 bytes/s and bytes/s; deltas
 * are after - before; a counter the kernel did not provide is null.
 * Not for: measuring (flood.c) or deciding the exit status (main.c).
 */
#include <inttypes.h>
#include <string.h>
#include <sys/time.h>

#include "cacheflood.h"
#include "json.h"
#include "opts.h"
#include "timing.h"

static double seconds_of(const struct flood_result *res)
{
	return (double)res->elapsed_ns / (double)NS_PER_SEC;
}

static double bytes_per_second(const struct flood_result *res)
{
	return res->elapsed_ns ? (double)res->bytes / seconds_of(res) : 0.0;
}

static double timeval_seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void kv_counter(struct json *j, const char *key, int64_t value)
{
	json_key(j, key);
	if (value == PROCFS_MISSING)
		json_null(j);
	else
		json_int(j, value);
}

static void kv_delta(struct json *j, const char *key, int64_t before, int64_t after)
{
	json_key(j, key);
	if (before == PROCFS_MISSING || after == PROCFS_MISSING)
		json_null(j);
	else
		json_int(j, after - before);
}

static void report_counters(struct json *j, const char *key, const struct procfs_field *fields,
			    const void *before, const void *after)
{
	json_kv_object_begin(j, key);
	for (const struct procfs_field *f = fields; f->name; f++) {
		json_kv_object_begin(j, f->key);
		kv_counter(j, "before", procfs_get(before, f));
		kv_counter(j, "after", procfs_get(after, f));
		kv_delta(j, "delta", procfs_get(before, f), procfs_get(after, f));
		json_object_end(j);
	}
	json_object_end(j);
}

static void report_residency(struct json *j, const char *key, const struct residency *r)
{
	uint64_t page = pagecache_page_size();

	json_kv_object_begin(j, key);
	if (r->hidden) {   /* the kernel would not tell this user */
		kv_counter(j, "resident_pages", PROCFS_MISSING);
		kv_counter(j, "resident_bytes", PROCFS_MISSING);
		kv_counter(j, "percent", PROCFS_MISSING);
	} else {
		json_kv_uint(j, "resident_pages", r->resident_pages);
		json_kv_uint(j, "resident_bytes", r->resident_pages * page);
		json_kv_double(j, "percent", residency_percent(r));
	}
	json_object_end(j);
}

static void report_options(struct json *j, const struct flood_spec *spec)
{
	json_kv_object_begin(j, "options");
	json_kv_uint(j, "bytes", spec->bytes);
	json_kv_uint(j, "bs", spec->bs);
	json_kv_string(j, "order", flood_order_names[spec->order]);
	json_kv_string(j, "fadvise", flood_advice_names[spec->advice]);
	json_kv_uint(j, "seed", spec->seed);
	json_key(j, "cold");
	json_bool(j, spec->cold);
	json_key(j, "make_set");
	if (spec->make_set) {
		json_string(j, spec->make_set);
		json_kv_uint(j, "set_size", spec->set_size);
		json_kv_uint(j, "file_size", spec->file_size);
		json_key(j, "keep_set");
		json_bool(j, spec->keep_set);
	} else {
		json_null(j);
	}
	json_object_end(j);
}

static void report_set(struct json *j, const struct fileset *set, const struct flood_result *res)
{
	json_kv_object_begin(j, "set");
	json_kv_uint(j, "files", set->count);
	json_kv_uint(j, "bytes", set->bytes);
	json_kv_uint(j, "pages", res->after.set.pages);
	json_key(j, "dir");
	if (set->dir) {
		json_string(j, set->dir);
		json_kv_uint(j, "created_files", set->created);
		json_kv_uint(j, "reused_files", set->reused);
		json_key(j, "removed");
		json_bool(j, res->set_removed);
	} else {
		json_null(j);
	}
	json_kv_array_begin(j, "paths");
	for (size_t i = 0; i < set->count; i++)
		json_string(j, set->files[i].path);
	json_array_end(j);
	report_residency(j, "resident_before", &res->before.set);
	report_residency(j, "resident_after", &res->after.set);
	json_object_end(j);
}

static void report_process(struct json *j, const struct flood_result *res)
{
	const struct rusage *b = &res->before.usage, *a = &res->after.usage;

	json_kv_object_begin(j, "process");
	json_kv_int(j, "majflt", a->ru_majflt - b->ru_majflt);
	json_kv_int(j, "minflt", a->ru_minflt - b->ru_minflt);
	json_kv_int(j, "inblock", a->ru_inblock - b->ru_inblock);
	json_kv_double(j, "usr_s", timeval_seconds(a->ru_utime) - timeval_seconds(b->ru_utime));
	json_kv_double(j, "sys_s", timeval_seconds(a->ru_stime) - timeval_seconds(b->ru_stime));
	for (const struct procfs_field *f = proc_io_fields; f->name; f++)
		kv_delta(j, f->key, procfs_get(&res->before.io, f), procfs_get(&res->after.io, f));
	json_object_end(j);
}

void flood_report_json(const struct flood_spec *spec, const struct fileset *set,
		       const struct flood_result *res, FILE *out)
{
	struct json j;

	json_init(&j, out, true);
	json_object_begin(&j);
	json_kv_string(&j, "version", CACHEFLOOD_VERSION);
	report_options(&j, spec);
	report_set(&j, set, res);

	json_kv_object_begin(&j, "read");
	json_kv_uint(&j, "bytes", res->bytes);
	json_kv_uint(&j, "reads", res->reads);
	json_kv_double(&j, "passes", set->bytes ? (double)res->bytes / (double)set->bytes : 0.0);
	json_kv_uint(&j, "elapsed_ns", res->elapsed_ns);
	json_kv_double(&j, "seconds", seconds_of(res));
	json_kv_double(&j, "bytes_per_s", bytes_per_second(res));
	json_kv_double(&j, "mb_per_s", bytes_per_second(res) / 1e6);
	json_object_end(&j);

	json_kv_object_begin(&j, "page_cache");
	kv_counter(&j, "cached_before", res->before.mem.cached);
	kv_counter(&j, "cached_after", res->after.mem.cached);
	kv_delta(&j, "cached_growth", res->before.mem.cached, res->after.mem.cached);
	if (res->before.set.hidden || res->after.set.hidden)
		kv_counter(&j, "set_resident_growth", PROCFS_MISSING);
	else
		json_kv_int(&j, "set_resident_growth",
			    ((int64_t)res->after.set.resident_pages -
			     (int64_t)res->before.set.resident_pages) *
			    (int64_t)pagecache_page_size());
	json_object_end(&j);

	report_process(&j, res);
	report_counters(&j, "meminfo", meminfo_fields, &res->before.mem, &res->after.mem);
	json_object_end(&j);
	json_finish(&j);
}

/* "1.5 GiB" */
static const char *iec(double bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double magnitude = bytes < 0 ? -bytes : bytes;
	int u = 0;

	while (magnitude >= 1024 && u < 4) {
		magnitude /= 1024;
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
	return buf;
}

static const char *counter_text(int64_t value, char *buf, size_t len)
{
	if (value == PROCFS_MISSING)
		return "n/a";
	return iec((double)value, buf, len);
}

void flood_report_normal(const struct flood_spec *spec, const struct fileset *set,
			 const struct flood_result *res, FILE *out)
{
	const struct rusage *ub = &res->before.usage, *ua = &res->after.usage;
	const struct meminfo *mb = &res->before.mem, *ma = &res->after.mem;
	char a[32], b[32], c[32], d[32];

	fprintf(out, "cacheflood: read %s (%" PRIu64 " bytes) in %.2f passes over %zu files "
		"(%s), %s reads, %s order, fadvise %s\n",
		iec((double)res->bytes, a, sizeof(a)), res->bytes,
		set->bytes ? (double)res->bytes / (double)set->bytes : 0.0, set->count,
		iec((double)set->bytes, b, sizeof(b)), iec((double)spec->bs, c, sizeof(c)),
		flood_order_names[spec->order], flood_advice_names[spec->advice]);
	if (set->dir)
		fprintf(out, "  set in %s: %zu files made, %zu reused, %s\n", set->dir,
			set->created, set->reused, res->set_removed ? "removed" : "kept");
	fprintf(out, "  time %.3f s, %.1f MB/s (%.0f bytes/s)\n", seconds_of(res),
		bytes_per_second(res) / 1e6, bytes_per_second(res));
	fprintf(out, "  page cache (Cached): %s -> %s; SwapCached %s -> %s\n",
		counter_text(mb->cached, a, sizeof(a)), counter_text(ma->cached, b, sizeof(b)),
		counter_text(mb->swap_cached, c, sizeof(c)),
		counter_text(ma->swap_cached, d, sizeof(d)));
	if (res->before.set.hidden || res->after.set.hidden)
		fprintf(out, "  set resident: hidden from this user by the kernel\n");
	else
		fprintf(out, "  set resident: %.1f %% -> %.1f %% (%" PRIu64 " of %" PRIu64 " pages)\n",
			residency_percent(&res->before.set), residency_percent(&res->after.set),
			res->after.set.resident_pages, res->after.set.pages);
	if (res->before.io.read_bytes != PROCFS_MISSING && res->after.io.read_bytes != PROCFS_MISSING)
		fprintf(out, "  from storage (read_bytes): %s of %s read (rchar)\n",
			iec((double)(res->after.io.read_bytes - res->before.io.read_bytes), a, sizeof(a)),
			iec((double)(res->after.io.rchar - res->before.io.rchar), b, sizeof(b)));
	fprintf(out, "  faults: %ld major, %ld minor\n", ua->ru_majflt - ub->ru_majflt,
		ua->ru_minflt - ub->ru_minflt);
}
