/*
 * flatyaml.c - flat `key: value` YAML files (see flatyaml.h for what it is for).
 */
#include "flatyaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (1 << 20)

__attribute__((format(printf, 4, 5)))
static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
	va_list ap;
	int n = line ? snprintf(err, errlen, "line %d: ", line) : 0;

	if (n < 0 || (size_t)n >= errlen)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_key_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_key_char(char c)
{
	return is_key_start(c) || (c >= '0' && c <= '9') || c == '-';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

const struct flat_entry *flat_yaml_get(const struct flat_doc *doc, const char *key)
{
	for (size_t i = 0; i < doc->count; i++)
		if (strcmp(doc->entries[i].key, key) == 0)
			return &doc->entries[i];
	return NULL;
}

static struct flat_entry *append(struct flat_doc *doc)
{
	if (doc->count == doc->capacity) {
		size_t cap = doc->capacity ? 2 * doc->capacity : 16;
		struct flat_entry *e = realloc(doc->entries, cap * sizeof(*e));

		if (!e)
			return NULL;
		doc->entries = e;
		doc->capacity = cap;
	}
	return &doc->entries[doc->count++];
}

int flat_yaml_set(struct flat_doc *doc, const char *key, const char *value, int line)
{
	struct flat_entry *e = (struct flat_entry *)flat_yaml_get(doc, key);

	if (strlen(key) >= FLAT_KEY_MAX || strlen(value) >= FLAT_VALUE_MAX)
		return -1;
	if (!e && !(e = append(doc)))
		return -1;
	snprintf(e->key, sizeof(e->key), "%s", key);
	snprintf(e->value, sizeof(e->value), "%s", value);
	e->line = line;
	return 0;
}

/* The value part of one line (after "key:"), into out; -1 with err on misuse. */
static int parse_value(const char *key, const char *p, const char *end, int line, char *out,
		       char *err, size_t errlen)
{
	static const char flow_or_block[] = "[{|>&*!%@`";
	const char *value_end;

	while (p < end && is_blank(*p))
		p++;
	if (p == end || *p == '#')
		return fail(err, errlen, line, "%s: the key has no value (nested blocks are not supported)", key);
	if (*p == '"' || *p == '\'') {
		char quote = *p++;
		const char *close = memchr(p, quote, (size_t)(end - p));

		if (!close)
			return fail(err, errlen, line, "%s: unterminated quoted value", key);
		if (quote == '"' && memchr(p, '\\', (size_t)(close - p)))
			return fail(err, errlen, line, "%s: escapes in quoted values are not supported", key);
		value_end = close;
		for (const char *q = close + 1; q < end; q++) {
			if (*q == '#' && is_blank(q[-1]))
				break;
			if (!is_blank(*q))
				return fail(err, errlen, line, "%s: text after a quoted value", key);
		}
	} else {
		if (strchr(flow_or_block, *p) || ((*p == '-' || *p == '?') && (p + 1 == end || is_blank(p[1]))))
			return fail(err, errlen, line, "%s: only plain or quoted scalar values are supported", key);
		value_end = p;
		for (const char *q = p; q < end; q++) {
			if (*q == '#' && is_blank(q[-1]))
				break;
			if (*q == ':' && (q + 1 == end || is_blank(q[1])))
				return fail(err, errlen, line, "%s: a value may not contain ': ' (quote it)", key);
			value_end = q + 1;
		}
		while (value_end > p && is_blank(value_end[-1]))
			value_end--;
	}
	if (value_end - p >= FLAT_VALUE_MAX)
		return fail(err, errlen, line, "%s: value longer than %d characters", key, FLAT_VALUE_MAX - 1);
	memcpy(out, p, (size_t)(value_end - p));
	out[value_end - p] = '\0';
	return 0;
}

static int parse_line(const char *p, const char *end, int line, struct flat_doc *doc,
		      char *err, size_t errlen)
{
	const char *s = p;
	char key[FLAT_KEY_MAX], value[FLAT_VALUE_MAX];

	while (s < end && is_blank(*s))
		s++;
	if (s == end || *s == '#')
		return 0;
	if (line == 1 && end - p >= 3 && strncmp(p, "---", 3) == 0) {
		for (s = p + 3; s < end && is_blank(*s); s++)
			;
		if (s == end || *s == '#')
			return 0;
	}
	if (s != p)
		return fail(err, errlen, line, "indented line (nested keys are not supported)");
	if (!is_key_start(*p))
		return fail(err, errlen, line, "expected 'key: value'");
	for (s = p; s < end && is_key_char(*s); s++)
		;
	if (s == end || *s != ':' || (s + 1 < end && !is_blank(s[1])))
		return fail(err, errlen, line, "expected 'key: value'");
	if (s - p >= FLAT_KEY_MAX)
		return fail(err, errlen, line, "key longer than %d characters", FLAT_KEY_MAX - 1);
	memcpy(key, p, (size_t)(s - p));
	key[s - p] = '\0';
	if (parse_value(key, s + 1, end, line, value, err, errlen))
		return -1;
	if (flat_yaml_get(doc, key))
		return fail(err, errlen, line, "%s: duplicate key", key);
	if (flat_yaml_set(doc, key, value, line))
		return fail(err, errlen, line, "out of memory");
	return 0;
}

int flat_yaml_parse(const char *text, struct flat_doc *doc, char *err, size_t errlen)
{
	int line = 0;

	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		line++;
		const char *content_end = end > p && end[-1] == '\r' ? end - 1 : end;

		if (parse_line(p, content_end, line, doc, err, errlen))
			return -1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int flat_yaml_load(const char *path, struct flat_doc *doc, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;
	int rc;

	if (!f)
		return fail(err, errlen, 0, "cannot open: %s", strerror(errno));
	text = malloc(MAX_FILE_BYTES + 1);
	if (!text) {
		fclose(f);
		return fail(err, errlen, 0, "out of memory");
	}
	n = fread(text, 1, MAX_FILE_BYTES + 1, f);
	if (ferror(f) || n > MAX_FILE_BYTES) {
		rc = fail(err, errlen, 0, ferror(f) ? "read error" : "larger than %d bytes",
			  MAX_FILE_BYTES);
	} else if (memchr(text, '\0', n)) {
		rc = fail(err, errlen, 0, "not a text file");
	} else {
		text[n] = '\0';
		rc = flat_yaml_parse(text, doc, err, errlen);
	}
	free(text);
	fclose(f);
	return rc;
}

void flat_yaml_free(struct flat_doc *doc)
{
	free(doc->entries);
	doc->entries = NULL;
	doc->count = doc->capacity = 0;
}

int flat_value_number(const char *value, double *out)
{
	const char *p = value;
	char *end;

	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return -1;
	errno = 0;
	*out = strtod(value, &end);
	return errno ? -1 : 0;
}

int flat_value_bool(const char *value, bool *out)
{
	if (strcmp(value, "true") == 0)
		*out = true;
	else if (strcmp(value, "false") == 0)
		*out = false;
	else
		return -1;
	return 0;
}
