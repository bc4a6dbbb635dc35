/*
 * test_json.c - the JSON writer: exact compact output, escaping, doubles
 * that read back exactly, and a pretty document that python3 -m json.tool
 * accepts (skipped if python3 is missing).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "json.h"

/* Writes a document covering every call; fixed content, so output is exact. */
static void write_sample(struct json *j, const void *unused)
{
	(void)unused;
	json_object_begin(j);
	json_kv_string(j, "text", "q\"b\\c/\n\t\r\b\f\x01\x1f é");
	json_kv_int(j, "neg", INT64_MIN);
	json_kv_uint(j, "big", UINT64_MAX);
	json_kv_double(j, "tenth", 0.1);
	json_kv_double(j, "whole", 3);
	json_kv_double(j, "tiny", 1e-300);
	json_kv_double(j, "nan", NAN);
	json_kv_array_begin(j, "list");
	json_int(j, 1);
	json_string(j, "two");
	json_object_begin(j);
	json_object_end(j);
	json_array_begin(j);
	json_array_end(j);
	json_bool(j, true);
	json_null(j);
	json_array_end(j);
	json_kv_object_begin(j, "percentile");
	json_kv_uint(j, "99.900000", 7);
	json_object_end(j);
	json_key(j, "last");
	json_bool(j, false);
	json_object_end(j);
}

/* What writer(j, arg) puts out, compact, as a string the caller frees;
 * *finished is json_finish's status. */
static char *compact(void (*writer)(struct json *j, const void *arg), const void *arg,
		     int *finished)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct json j;

	if (!f)
		exit(1);
	json_init(&j, f, false);
	writer(&j, arg);
	*finished = json_finish(&j);
	fclose(f);
	return out;
}

static void write_double(struct json *j, const void *value)
{
	json_double(j, *(const double *)value);
}

static void test_compact(void)
{
	static const char want[] =
		"{\"text\":\"q\\\"b\\\\c/\\n\\t\\r\\b\\f\\u0001\\u001f é\","
		"\"neg\":-9223372036854775808,\"big\":18446744073709551615,"
		"\"tenth\":0.1,\"whole\":3.0,\"tiny\":1e-300,\"nan\":null,"
		"\"list\":[1,\"two\",{},[],true,null],\"percentile\":{\"99.900000\":7},"
		"\"last\":false}\n";
	int finished;
	char *out = compact(write_sample, NULL, &finished);

	CHECK(finished == 0, "json_finish reports success");
	if (strcmp(out, want) != 0)
		printf("# got  %s# want %s", out, want);
	CHECK(strcmp(out, want) == 0, "compact output is exact, escaping included");
	free(out);
}

static void test_doubles_round_trip(void)
{
	static const double values[] = { 0.1, 1.0 / 3, 67196.111055, 1e-7, 123456789012345678.0,
					 2.5e300, -0.0, 5e-324 };
	bool ok = true;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]) && ok; i++) {
		int finished;
		char *out = compact(write_double, &values[i], &finished);

		ok = finished == 0 && strtod(out, NULL) == values[i] && strpbrk(out, ".e");
		if (!ok)
			printf("# %.17g printed as %s", values[i], out);
		free(out);
	}
	CHECK(ok, "doubles read back exactly and always look like floats");
}

/* Exit status of python3 -m json.tool fed text, or -1 if it could not run. */
static int json_tool_status(void (*produce)(FILE *))
{
	FILE *pipe = popen("python3 -m json.tool >/dev/null 2>&1", "w");

	if (!pipe)
		return -1;
	produce(pipe);
	int status = pclose(pipe);

	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void produce_pretty(FILE *f)
{
	struct json j;

	json_init(&j, f, true);
	write_sample(&j, NULL);
	json_finish(&j);
}

static void produce_broken(FILE *f)
{
	fputs("{\"a\": 1,}\n", f);
}

static void test_python_accepts(void)
{
	if (system("python3 -c 1 >/dev/null 2>&1") != 0) {
		printf("ok %d - # SKIP python3 not found\n", ++checks_done);
		return;
	}
	CHECK(json_tool_status(produce_broken) != 0, "json.tool rejects broken JSON (the check works)");
	CHECK(json_tool_status(produce_pretty) == 0, "json.tool accepts the pretty document");
}

int main(void)
{
	test_compact();
	test_doubles_round_trip();
	test_python_accepts();
	return 0;
}
