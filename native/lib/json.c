/*
 * json.c - streaming JSON writer (see json.h for what it is for).
 */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j, FILE *out, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->pretty = pretty;
}

static void misuse(const char *what)
{
	fprintf(stderr, "json writer misuse: %s\n", what);
	abort();
}

static void newline_and_indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Everything a value needs written before it: a comma and indentation. */
static void before_value(struct json *j)
{
	if (j->depth == 0) {
		if (j->has_items[0])
			misuse("second top-level value");
		j->has_items[0] = true;
		return;
	}
	if (j->in_object[j->depth]) {
		if (j->expect_key)
			misuse("value where a key is due");
		j->expect_key = true;   /* the key wrote the comma already */
		return;
	}
	if (j->has_items[j->depth])
		fputc(',', j->out);
	j->has_items[j->depth] = true;
	newline_and_indent(j);
}

static void open_container(struct json *j, bool object)
{
	before_value(j);
	if (j->depth + 1 >= JSON_MAX_DEPTH)
		misuse("nesting too deep");
	fputc(object ? '{' : '[', j->out);
	j->depth++;
	j->has_items[j->depth] = false;
	j->in_object[j->depth] = object;
	j->expect_key = object;
}

static void close_container(struct json *j, bool object)
{
	if (j->depth == 0 || j->in_object[j->depth] != object)
		misuse(object ? "unbalanced object end" : "unbalanced array end");
	if (object && !j->expect_key)
		misuse("object ends after a key");
	bool had_items = j->has_items[j->depth];

	j->depth--;
	if (had_items)
		newline_and_indent(j);
	fputc(object ? '}' : ']', j->out);
	j->expect_key = j->depth > 0 && j->in_object[j->depth];
}

void json_object_begin(struct json *j) { open_container(j, true); }
void json_object_end(struct json *j) { close_container(j, true); }
void json_array_begin(struct json *j) { open_container(j, false); }
void json_array_end(struct json *j) { close_container(j, false); }

static void write_escaped(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);  /* UTF-8 passes through unchanged */
		}
	}
	fputc('"', out);
}

void json_key(struct json *j, const char *key)
{
	if (j->depth == 0 || !j->in_object[j->depth] || !j->expect_key)
		misuse("key outside an object or where a value is due");
	if (j->has_items[j->depth])
		fputc(',', j->out);
	j->has_items[j->depth] = true;
	newline_and_indent(j);
	write_escaped(j->out, key);
	fputs(j->pretty ? ": " : ":", j->out);
	j->expect_key = false;
}

void json_string(struct json *j, const char *s)
{
	before_value(j);
	write_escaped(j->out, s);
}

void json_int(struct json *j, int64_t v)
{
	before_value(j);
	fprintf(j->out, "%lld", (long long)v);
}

void json_uint(struct json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void json_double(struct json *j, double v)
{
	char buf[32];

	before_value(j);
	if (!isfinite(v)) {
		fputs("null", j->out);
		return;
	}
	/* Shortest of %.15g .. %.17g that reads back exactly. */
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	fputs(buf, j->out);
}

void json_bool(struct json *j, bool v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j)
{
	before_value(j);
	fputs("null", j->out);
}

void json_kv_string(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void json_kv_int(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_kv_uint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void json_kv_double(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_double(j, v);
}

void json_kv_object_begin(struct json *j, const char *key)
{
	json_key(j, key);
	json_object_begin(j);
}

void json_kv_array_begin(struct json *j, const char *key)
{
	json_key(j, key);
	json_array_begin(j);
}

int json_finish(struct json *j)
{
	if (j->depth != 0)
		misuse("document ends inside a container");
	fputc('\n', j->out);
	return (fflush(j->out) == 0 && !ferror(j->out)) ? 0 : -1;
}
