/*
 * flatyaml.h - a reader for flat YAML files: one `key: value` per line.
 *
 * For: small configuration files (device profiles) that Python's yaml and C
 * must read identically. Accepted: blank lines, `#` comments (whole-line, or
 * after a value following a space), an optional leading `---`, and lines
 * `key: value` with key = [A-Za-z_][A-Za-z0-9_-]* at column 0 and a plain
 * or quoted ('...' or "...", no escapes) scalar value. Everything else is
 * refused with the line number: indentation (nesting), flow or block values
 * ([ { | > & * !), empty values, duplicate keys. Typed readers accept only
 * spellings that YAML reads the same way: numbers -?D+(.D+)? and booleans
 * true/false.
 * Not for: nested documents, lists, anchors, escapes or multi-document files.
 */
#ifndef NATIVE_FLATYAML_H
#define NATIVE_FLATYAML_H

#include <stdbool.h>
#include <stddef.h>

#define FLAT_KEY_MAX 64
#define FLAT_VALUE_MAX 256

struct flat_entry {
	char key[FLAT_KEY_MAX];
	char value[FLAT_VALUE_MAX];
	int line;                /* 1-based line in the source; 0 if set by code */
};

struct flat_doc {
	struct flat_entry *entries;
	size_t count;
	size_t capacity;
};

/*
 * Parses text into doc (which must be zeroed or freed before). Returns 0, or
 * -1 with "line N: what is wrong" in err. doc is left valid on failure.
 */
int flat_yaml_parse(const char *text, struct flat_doc *doc, char *err, size_t errlen);

/* Reads and parses the file at path; errors name the problem (not the path). */
int flat_yaml_load(const char *path, struct flat_doc *doc, char *err, size_t errlen);

/* Sets key to value (replacing an existing entry), e.g. for overrides. */
int flat_yaml_set(struct flat_doc *doc, const char *key, const char *value, int line);

/* The entry for key, or NULL. */
const struct flat_entry *flat_yaml_get(const struct flat_doc *doc, const char *key);

void flat_yaml_free(struct flat_doc *doc);

/* Typed readers of a value: 0, or -1 if the spelling is not of that type. */
int flat_value_number(const char *value, double *out);
int flat_value_bool(const char *value, bool *out);

#endif
