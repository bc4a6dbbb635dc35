/*
 * test_flatyaml.c - the flat YAML reader: accepted layout, comments and
 * quotes, every refused form with its line number, typed values.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "flatyaml.h"

static const char *value_of(const struct flat_doc *doc, const char *key)
{
	const struct flat_entry *e = flat_yaml_get(doc, key);

	return e ? e->value : "(missing)";
}

static void test_accepted(void)
{
	static const char text[] =
		"---\n"
		"# a profile\n"
		"model: hdd   # comment after a value\n"
		"\n"
		"rpm: 5400\r\n"
		"name: 'a # b'\n"
		"quoted: \"x: y\"  # ok\n"
		"url: http://example.com/a#b\n"
		"neg: -3.5\n";
	struct flat_doc doc = { 0 };
	char err[200] = "";

	CHECK(flat_yaml_parse(text, &doc, err, sizeof(err)) == 0, "a flat profile parses (%s)", err);
	CHECK(doc.count == 6, "six keys, comments and blank lines skipped (%zu)", doc.count);
	CHECK(strcmp(value_of(&doc, "model"), "hdd") == 0, "trailing comment removed from a value");
	CHECK(strcmp(value_of(&doc, "rpm"), "5400") == 0, "CRLF line ending accepted");
	CHECK(strcmp(value_of(&doc, "name"), "a # b") == 0, "'#' inside single quotes kept");
	CHECK(strcmp(value_of(&doc, "quoted"), "x: y") == 0, "': ' inside double quotes kept");
	CHECK(strcmp(value_of(&doc, "url"), "http://example.com/a#b") == 0,
	      "'#' not after a space is part of the value");
	CHECK(flat_yaml_get(&doc, "model")->line == 3, "entries remember their line");
	CHECK(flat_yaml_set(&doc, "rpm", "7200", 0) == 0 && strcmp(value_of(&doc, "rpm"), "7200") == 0 &&
	      doc.count == 6, "set replaces an existing key");
	flat_yaml_free(&doc);
}

static void expect_refused(const char *text, const char *want, const char *what)
{
	struct flat_doc doc = { 0 };
	char err[200] = "";
	int rc = flat_yaml_parse(text, &doc, err, sizeof(err));

	CHECK(rc == -1 && strstr(err, want), "refused: %s (%s)", what, err);
	flat_yaml_free(&doc);
}

static void test_refused(void)
{
	expect_refused("a: 1\n  b: 2\n", "line 2: indented", "indented (nested) key");
	expect_refused("a:\n  b: 2\n", "line 1: a: the key has no value", "empty value opening a block");
	expect_refused("a: 1\na: 2\n", "line 2: a: duplicate key", "duplicate key");
	expect_refused("a: [1, 2]\n", "line 1: a: only plain or quoted", "flow list");
	expect_refused("a: {b: 1}\n", "only plain or quoted", "flow mapping");
	expect_refused("a: |\n", "only plain or quoted", "block scalar");
	expect_refused("a: &x 1\n", "only plain or quoted", "anchor");
	expect_refused("- a\n", "line 1: expected 'key: value'", "list item");
	expect_refused("a:1\n", "expected 'key: value'", "no space after colon");
	expect_refused("a: b: c\n", "may not contain ': '", "mapping inside a plain value");
	expect_refused("a: \"unterminated\n", "unterminated", "unterminated quote");
	expect_refused("a: \"x\\ty\"\n", "escapes", "escape in double quotes");
	expect_refused("a: 'x' y\n", "text after a quoted value", "text after a quote");
	expect_refused("9a: 1\n", "expected 'key: value'", "key starting with a digit");
}

static void test_values(void)
{
	double d = 0;
	bool b = false;

	CHECK(flat_value_number("5400", &d) == 0 && d == 5400, "integer");
	CHECK(flat_value_number("-0.25", &d) == 0 && d == -0.25, "negative decimal");
	CHECK(flat_value_number("1e3", &d) == -1, "exponent refused (YAML 1.1 reads it as a string)");
	CHECK(flat_value_number(".5", &d) == -1 && flat_value_number("5.", &d) == -1,
	      "bare leading or trailing dot refused");
	CHECK(flat_value_number("12ms", &d) == -1 && flat_value_number("", &d) == -1,
	      "units and empty text refused");
	CHECK(flat_value_bool("true", &b) == 0 && b, "true");
	CHECK(flat_value_bool("false", &b) == 0 && !b, "false");
	CHECK(flat_value_bool("yes", &b) == -1 && flat_value_bool("on", &b) == -1,
	      "yes/on refused (ambiguous between YAML versions)");
}

static void test_load(void)
{
	char path[] = "/tmp/test_flatyaml.XXXXXX";
	int fd = mkstemp(path);
	struct flat_doc doc = { 0 };
	char err[200] = "";

	CHECK(fd >= 0 && write(fd, "x: 1\n", 5) == 5, "temporary file written");
	close(fd);
	CHECK(flat_yaml_load(path, &doc, err, sizeof(err)) == 0 &&
	      strcmp(value_of(&doc, "x"), "1") == 0, "load reads a file");
	flat_yaml_free(&doc);
	unlink(path);
	CHECK(flat_yaml_load(path, &doc, err, sizeof(err)) == -1 && strstr(err, "cannot open"),
	      "a missing file is reported (%s)", err);
}

int main(void)
{
	test_accepted();
	test_refused();
	test_values();
	test_load();
	return 0;
}
