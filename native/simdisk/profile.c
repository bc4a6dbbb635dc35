/*
 * profile.c - loads and checks device profiles (see profile.h).
 */
#include "profile.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 2   /* a tiered profile names its disk and cache, which name nothing */

const struct device_model *const device_models[] = {
	&hdd_model, &flash_model, &ssd_model, &tiered_model, &zero_model, NULL,
};

static const struct device_model *find_model(const char *name)
{
	for (int i = 0; device_models[i]; i++)
		if (strcmp(device_models[i]->name, name) == 0)
			return device_models[i];
	return NULL;
}

static void model_names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; device_models[i] && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", device_models[i]->name);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

void profile_default_dir(char *buf, size_t len)
{
	char exe[PATH_MAX], guess[PATH_MAX + 32], resolved[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0) {
		snprintf(buf, len, "config/devices");
		return;
	}
	exe[n] = '\0';
	/* native/build/simdisk -> <repo>/config/devices */
	snprintf(guess, sizeof(guess), "%s/../../config/devices", dirname(exe));
	snprintf(buf, len, "%s", realpath(guess, resolved) ? resolved : guess);
}

/* "line 7: " for file entries, "--set " for overrides, "" for defaults. */
static const char *where(const struct flat_entry *e, char *buf, size_t len)
{
	if (e->line > 0)
		snprintf(buf, len, "line %d: ", e->line);
	else
		snprintf(buf, len, "%s", e->line == 0 ? "--set " : "");
	return buf;
}

__attribute__((format(printf, 4, 5)))
static int key_error(const struct flat_entry *e, char *err, size_t errlen, const char *fmt, ...)
{
	char at[32];
	va_list ap;
	int n = snprintf(err, errlen, "%s%s: ", where(e, at, sizeof(at)), e->key);

	if (n < 0 || (size_t)n >= errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int check_bounds(const struct profile_key *k, const struct flat_entry *e, double v,
			char *err, size_t errlen)
{
	if (k->min_exclusive ? !(v > k->min) : !(v >= k->min)) {
		if (k->min == 0 && !k->min_exclusive)
			return key_error(e, err, errlen, "must not be negative (got %s)", e->value);
		return key_error(e, err, errlen, "must be %s %g (got %s)",
				 k->min_exclusive ? ">" : ">=", k->min, e->value);
	}
	if (k->max > 0 && v > k->max)
		return key_error(e, err, errlen, "must be <= %g (got %s)", k->max, e->value);
	return 0;
}

static struct profile *load(const char *name_or_path, const char *dir, const char *overrides,
			    int depth, char *err, size_t errlen);

/* Parses e's value as key k into base (p->params, or p->faults for the fault keys). */
static int set_key(struct profile *p, void *base, const struct profile_key *k,
		   const struct flat_entry *e, int depth, char *err, size_t errlen)
{
	void *dest = (char *)base + k->offset;
	double v = 0;

	switch (k->kind) {
	case KEY_BYTES:
	case KEY_COUNT:
	case KEY_MS:
	case KEY_RATE:
	case KEY_NUMBER:
		if (flat_value_number(e->value, &v))
			return key_error(e, err, errlen, "expected a number, got '%s'", e->value);
		if ((k->kind == KEY_BYTES || k->kind == KEY_COUNT) && (v != floor(v) || v >= 0x1p63))
			return key_error(e, err, errlen, "expected a whole number, got '%s'", e->value);
		if (check_bounds(k, e, v, err, errlen))
			return -1;
		if (k->kind == KEY_BYTES || k->kind == KEY_COUNT)
			*(uint64_t *)dest = (uint64_t)v;
		else if (k->kind == KEY_MS)
			*(uint64_t *)dest = (uint64_t)llround(v * 1e6);
		else if (k->kind == KEY_RATE)
			*(double *)dest = v * 1e6;
		else
			*(double *)dest = v;
		return 0;
	case KEY_BOOL:
		if (flat_value_bool(e->value, dest))
			return key_error(e, err, errlen, "expected true or false, got '%s'", e->value);
		return 0;
	case KEY_CHOICE:
		for (int i = 0; k->choices[i]; i++) {
			if (strcmp(k->choices[i], e->value) == 0) {
				*(int *)dest = i;
				return 0;
			}
		}
		{
			char list[256] = "";

			for (int i = 0; k->choices[i]; i++) {
				strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
				strncat(list, k->choices[i], sizeof(list) - strlen(list) - 1);
			}
			return key_error(e, err, errlen, "'%s' is not one of %s", e->value, list);
		}
	case KEY_COMPRESSION:
		if (strcmp(e->value, "lz4") == 0) {
			*(double *)dest = 0;
			return 0;
		}
		if (flat_value_number(e->value, &v) || !(v >= 1))
			return key_error(e, err, errlen, "expected lz4 or a ratio >= 1, got '%s'", e->value);
		*(double *)dest = v;
		return 0;
	case KEY_TEXT:
		snprintf(dest, FLAT_VALUE_MAX, "%s", e->value);
		return 0;
	case KEY_PROFILE: {
		char sub[1024];
		struct profile *child;

		if (depth + 1 >= MAX_DEPTH)
			return key_error(e, err, errlen, "profiles nest at most %d deep", MAX_DEPTH);
		if (p->nchildren == (int)(sizeof(p->children) / sizeof(p->children[0])))
			return key_error(e, err, errlen, "too many profile references");
		child = load(e->value, p->dir, NULL, depth + 1, sub, sizeof(sub));
		if (!child)
			return key_error(e, err, errlen, "%s", sub);
		p->children[p->nchildren++] = child;
		*(struct profile **)dest = child;
		return 0;
	}
	}
	return key_error(e, err, errlen, "internal error: unknown key kind");
}

static bool is_path(const char *name)
{
	size_t n = strlen(name);

	return strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".yaml") == 0);
}

/* Applies "key=value,key=value" to doc (entries get line 0: "--set"). */
static int apply_overrides(struct flat_doc *doc, const char *overrides, char *err, size_t errlen)
{
	char item[FLAT_KEY_MAX + FLAT_VALUE_MAX];

	for (const char *p = overrides; p && *p;) {
		size_t n = strcspn(p, ",");
		char *eq;

		if (n >= sizeof(item)) {
			snprintf(err, errlen, "--set: item too long");
			return -1;
		}
		memcpy(item, p, n);
		item[n] = '\0';
		eq = strchr(item, '=');
		if (!eq || eq == item || !eq[1]) {
			snprintf(err, errlen, "--set: expected key=value, got '%s'", item);
			return -1;
		}
		*eq = '\0';
		if (flat_yaml_set(doc, item, eq + 1, 0)) {
			snprintf(err, errlen, "--set %s: key or value too long", item);
			return -1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const struct profile_key *find_key(const struct profile_key *keys, const char *name)
{
	for (const struct profile_key *k = keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* Fills base from doc's entries for keys, the optional ones from their fallbacks. */
static int fill_keys(struct profile *p, void *base, const struct profile_key *keys,
		     const struct flat_doc *doc, int depth, char *err, size_t errlen)
{
	for (const struct profile_key *k = keys; k->name; k++) {
		const struct flat_entry *e = flat_yaml_get(doc, k->name);
		struct flat_entry fallback;

		if (!e && !k->optional) {
			snprintf(err, errlen, "missing key '%s' (%s)", k->name, k->help);
			return -1;
		}
		if (!e) {
			fallback = (struct flat_entry){ .line = -1 };
			snprintf(fallback.key, sizeof(fallback.key), "%s", k->name);
			snprintf(fallback.value, sizeof(fallback.value), "%s", k->fallback);
			e = &fallback;
		}
		if (set_key(p, base, k, e, depth, err, errlen))
			return -1;
	}
	return 0;
}

/* Fills p from doc; err is "what is wrong" without the file's name. */
static int fill(struct profile *p, const struct flat_doc *doc, int depth, char *err, size_t errlen)
{
	const struct flat_entry *model = flat_yaml_get(doc, "model");
	const struct flat_entry *description = flat_yaml_get(doc, "description");

	if (!model) {
		snprintf(err, errlen, "missing key 'model'");
		return -1;
	}
	p->model = find_model(model->value);
	if (!p->model) {
		char names[128];

		model_names(names, sizeof(names));
		return key_error(model, err, errlen, "unknown model '%s' (expected one of %s)",
				 model->value, names);
	}
	if (description)
		snprintf(p->description, sizeof(p->description), "%s", description->value);
	for (size_t i = 0; i < doc->count; i++) {
		const struct flat_entry *e = &doc->entries[i];

		if (!strcmp(e->key, "model") || !strcmp(e->key, "description") ||
		    find_key(p->model->keys, e->key))
			continue;
		if (!find_key(fault_keys, e->key))
			return key_error(e, err, errlen, "unknown key for model %s", p->model->name);
		if (depth > 0)
			return key_error(e, err, errlen, "fault keys belong in the mounted profile, not "
					 "in one it refers to");
	}
	p->params = calloc(1, p->model->params_size);
	if (!p->params) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (fill_keys(p, p->params, p->model->keys, doc, depth, err, errlen) ||
	    fill_keys(p, &p->faults, fault_keys, doc, depth, err, errlen))
		return -1;
	if (p->model->check && p->model->check(p, err, errlen))
		return -1;
	return faults_check(&p->faults, p->model->capacity(p), err, errlen);
}

static struct profile *load(const char *name_or_path, const char *dir, const char *overrides,
			    int depth, char *err, size_t errlen)
{
	struct profile *p = calloc(1, sizeof(*p));
	struct flat_doc doc = { 0 };
	char msg[1024], copy[PATH_MAX];
	const char *base;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (is_path(name_or_path))
		snprintf(p->path, sizeof(p->path), "%s", name_or_path);
	else
		snprintf(p->path, sizeof(p->path), "%s/%s.yaml", dir, name_or_path);
	snprintf(copy, sizeof(copy), "%s", p->path);
	snprintf(p->dir, sizeof(p->dir), "%s", dirname(copy));
	snprintf(copy, sizeof(copy), "%s", p->path);
	base = basename(copy);
	snprintf(p->name, sizeof(p->name), "%.*s", (int)(strlen(base) > 5 &&
		 strcmp(base + strlen(base) - 5, ".yaml") == 0 ? strlen(base) - 5 : strlen(base)), base);
	if (flat_yaml_load(p->path, &doc, msg, sizeof(msg)) ||
	    apply_overrides(&doc, overrides, msg, sizeof(msg)) ||
	    fill(p, &doc, depth, msg, sizeof(msg))) {
		snprintf(err, errlen, "profile %s (%s): %s", p->name, p->path, msg);
		flat_yaml_free(&doc);
		profile_free(p);
		return NULL;
	}
	flat_yaml_free(&doc);
	return p;
}

struct profile *profile_load(const char *name_or_path, const char *dir, const char *overrides,
			     char *err, size_t errlen)
{
	return load(name_or_path, dir, overrides, 0, err, errlen);
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nchildren; i++)
		profile_free(p->children[i]);
	free(p->params);
	free(p);
}
