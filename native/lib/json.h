/*
 * json.h - a tiny streaming JSON writer.
 *
 * For: tools that print one result document (like fio --output-format=json)
 * without building it in memory. Commas, indentation and string escaping
 * are handled here; the caller only says what comes next. Doubles are
 * printed with the fewest digits that read back to the same value, and
 * always with a '.' or exponent so that parsers keep them as floats;
 * NaN and infinities become null.
 * Not for: parsing JSON, or checking that keys are unique. Misuse (a value
 * where a key is due, unbalanced ends, nesting beyond JSON_MAX_DEPTH) is a
 * programming error and aborts.
 */
#ifndef NATIVE_JSON_H
#define NATIVE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *out;
	bool pretty;                    /* newlines and two-space indentation */
	int depth;
	bool expect_key;                /* inside an object, before a key */
	bool has_items[JSON_MAX_DEPTH]; /* a comma is due before the next item */
	bool in_object[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *out, bool pretty);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);

void json_string(struct json *j, const char *s);
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* Shorthands for a key followed by its value. */
void json_kv_string(struct json *j, const char *key, const char *s);
void json_kv_int(struct json *j, const char *key, int64_t v);
void json_kv_uint(struct json *j, const char *key, uint64_t v);
void json_kv_double(struct json *j, const char *key, double v);
void json_kv_object_begin(struct json *j, const char *key);
void json_kv_array_begin(struct json *j, const char *key);

/* Ends the document (newline, flush); returns 0, or -1 if writing failed. */
int json_finish(struct json *j);

#endif
